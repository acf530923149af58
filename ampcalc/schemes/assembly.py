"""One place that turns a theorem's formulas into a design's ``Analysis``.

A family module states each theorem once, as a ``Theorem`` record: plain keyword
functions of the ε of the relation the theorem is stated under (its *natural*
relation), the closed-form inverse where one exists, the δ′ map, the conditions and
the references. ``assemble`` does everything else, the same way for every family:

* relation conversion: the declared mechanism's ε (and δ) under the theorem's
  relation: ε_R = ``epsilon_replace_one`` or 2ε for an add-remove mechanism under a
  replace-one theorem, δ_R = (1 + e^ε)δ; a replace-one-only mechanism refused by an
  add-remove theorem (its add-remove ε is unknown);
* the standard notes (and the one warning) about those conversions (stated once, here);
* per-unit rows of a result that holds unit by unit as A(q_h, ε) (``UnitAmplification``:
  each unit's bounds, and its inverses certified as the result's are);
* a named mechanism's privacy profile under the theorem's relation, and the (ε, δ)
  mechanism of one of its points (``profile_under``, ``profile_point``);
* outward rounding and certification of every closed-form inverse (the certified ε
  is checked against the upper bound, the impossible-above ε against the lower);
* the inverse δ map (the mechanism δ that meets a target δ′);
* details computed at each evaluated ε (``details_at``), never at the declared one;
* results that use M's ε under both relations at once (``OfPair`` bounds
  take ε_D and ε_R), lower bounds proved by witness mechanisms (each run at the largest
  ε every declared relation allows: min(ε_D, ε_R/c) for a witness whose replace-one ε is
  c times its add-remove ε), lower-only results, a δ′ formula δ′(ε, δ), and the
  theorem's refusals (another guarantee, δ > 0, an unknown add-remove ε) in its order;
* closed-form inverses stated in a ``Scale`` of M's ε (the declared ε, ε_R or
  min(ε_D, ε_R)): inv(T)/ratio rounded outward once and certified against the bound as
  evaluated, the lower bound's own inverse beside the upper's (+∞: never reached);
* a guarantee derived from another relation's result (``doubled``: replace-one
  ε′ <= 2·ε′ of add-remove, the inverse evaluated at T/2);
* a family's own wording of the condition on M's relation, and ``invert`` details
  that see the built analysis;
* the analysis on one float (``ScalarForm``) where the theorem's formulas are one
  ``ClosedForm`` and M's ε under every relation is a fixed multiple of the declared
  ε with no remark to state: the same relation ratio, rounding, certification and δ′,
  so a single ε is answered without arrays and with the same bits.

ε reaches the formulas only as the array argument: nothing here reads
``mechanism.epsilon`` except to state a warning's numbers (and ``epsilons``, which
gives a family (ε_D, ε_R) at the declared ε for its remarks about the declared design).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.math.types import FloatArray
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BUN_2022
from ampcalc.schemes._theorem import (
    BothFormula,
    Bound,
    ClosedForm,
    DeltaFormula,
    DeltaSpec,
    Formula,
    InScale,
    Inverse,
    OfPair,
    PairFormula,
    ParamFormula,
    Proportional,
    Refusal,
    Refuses,
    Scale,
    Theorem,
    Witness,
)
from ampcalc.schemes.base import Analysis, Bounds, ScalarForm

#: the assembly's interface, with the theorem record and its parts (``_theorem``)
#: re-exported: families keep importing them from here
__all__ = [
    "BothFormula",
    "Bound",
    "ClosedForm",
    "DeltaFormula",
    "DeltaSpec",
    "Formula",
    "InScale",
    "Inverse",
    "OfPair",
    "PairFormula",
    "ParamFormula",
    "Proportional",
    "Refusal",
    "Refuses",
    "Relation",
    "Scale",
    "Theorem",
    "UnitAmplification",
    "Witness",
    "assemble",
    "certify_above",
    "certify_below",
    "certify_inverse",
    "certify_lower_inverse",
    "check_refusals",
    "doubled",
    "epsilons",
    "profile_point",
    "profile_under",
    "relation_of",
    "replace_one_remarks",
    "witness_reduced",
]


@dataclass(frozen=True)
class Relation:
    """The declared mechanism seen under a theorem's relation (fixed data).

    For a ``BOTH``/None theorem ``epsilon``, ``ratio`` and ``delta`` are those of
    replace-one (no formula takes them; ``add_remove``/``replace_one`` do).
    """

    epsilon: Formula  # declared ε -> ε of the relation
    ratio: float  # ε of the relation / declared ε (inversions divide by it)
    delta: Formula  # declared ε -> δ of the relation
    warnings: tuple[str, ...]
    add_remove: Formula  # declared ε -> ε_D (+∞ where unknown)
    replace_one: Formula  # declared ε -> ε_R
    notes: tuple[str, ...] = ()


def _declared_epsilon(eps: FloatArray) -> FloatArray:
    """M's ε under the relation it is declared under: the declared ε itself."""
    return np.asarray(eps, dtype=float)


def _unbounded(eps: FloatArray) -> FloatArray:
    """M's add-remove ε where it is unknown (declared under replace-one only): +∞."""
    return np.full(np.shape(eps), np.inf)


def _refuse_replace_one_only(theorem: Theorem) -> ConditionError:
    return ConditionError(
        theorem.refusal(Refuses.ADD_REMOVE_UNKNOWN)
        or (
            f"{theorem.name} needs M's add-remove ε, and `neighbours: replace-one` "
            "leaves it unknown. Declare `neighbours: add-remove` or `both`."
        )
    )


def relation_of(mechanism: Mechanism, theorem: Theorem) -> Relation:
    """How the declared mechanism's ε and δ read under ``theorem.relation``.

    Raises:
        ConditionError: the theorem needs M's add-remove ε and M is declared under
            replace-one only.
    """
    known = mechanism.epsilon_add_remove_known()
    if theorem.relation is Neighbours.ADD_REMOVE:
        if not known:
            raise _refuse_replace_one_only(theorem)
        delta = mechanism.delta

        def delta_ar(eps: FloatArray) -> FloatArray:
            return np.full(np.shape(eps), delta)

        return Relation(
            epsilon=_declared_epsilon,
            ratio=1.0,
            delta=delta_ar,
            warnings=(),
            add_remove=_declared_epsilon,
            replace_one=mechanism.epsilon_replace_one_of,
        )
    if not known and theorem.refusal(Refuses.ADD_REMOVE_UNKNOWN) is not None:
        raise _refuse_replace_one_only(theorem)
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    if theorem.relation is Neighbours.REPLACE_ONE:
        warnings, notes = replace_one_remarks(mechanism, theorem.name)
    return Relation(
        epsilon=mechanism.epsilon_replace_one_of,
        ratio=mechanism.replace_one_ratio(),
        delta=mechanism.delta_replace_one_of,
        warnings=warnings,
        notes=notes,
        add_remove=_declared_epsilon if known else _unbounded,
        replace_one=mechanism.epsilon_replace_one_of,
    )


def profile_under(profile: Any, declared: Neighbours, relation: Neighbours) -> Any:
    """A named mechanism's privacy profile under ``relation``, from the one stated under
    ``declared``: the same profile under ``both`` or the same relation, the profile's
    own replace-one form for an add-remove M under replace-one.

    Raises:
        ConditionError: M is stated under replace-one only and ``relation`` is
            add-remove (its add-remove profile is unknown).
    """
    if declared is Neighbours.BOTH or declared is relation:
        return profile
    if declared is Neighbours.ADD_REMOVE and relation is Neighbours.REPLACE_ONE:
        return profile.replace_one()
    raise ConditionError(
        f"M's sensitivity is stated under {declared}; its {relation} profile does not "
        "follow from it (state it under `neighbours: add-remove` or `both`)"
    )


def profile_point(mechanism: Mechanism, eps: float, *, replace_one: bool = True) -> Mechanism:
    """The (ε, δ_M(ε)) mechanism of one point of a named mechanism's profile, with M's
    replace-one point (2ε, δ_R(2ε)) from its replace-one profile when M is stated under
    add-remove.

    ``replace_one=False`` leaves M's replace-one parameters to the model's defaults
    (2ε and group privacy's (1 + e^ε)δ, both valid): for add-remove guarantees, which
    do not use them, it saves evaluating the replace-one profile.
    """
    profile = mechanism.profile
    changes: dict[str, Any] = {
        "epsilon": eps,
        "delta": float(profile.delta(eps)),
        "profile": None,
        "profile_releases": None,
    }
    if mechanism.neighbours is Neighbours.ADD_REMOVE and replace_one:
        changes["epsilon_replace_one"] = 2.0 * eps
        changes["delta_replace_one"] = float(profile.replace_one().delta(2.0 * eps))
    return dataclasses.replace(mechanism, **changes)


def epsilons(mechanism: Mechanism, eps: Any = None) -> tuple[FloatArray, FloatArray]:
    """M's (ε_D, ε_R) at declared ε ``eps`` (default: the declared ε itself), ε_D = +∞
    where M's add-remove ε is unknown: for a family's remarks about the declared design."""
    e = np.asarray(mechanism.epsilon if eps is None else eps, dtype=float)
    ar = e if mechanism.epsilon_add_remove_known() else np.full(e.shape, np.inf)
    return ar, mechanism.epsilon_replace_one_of(e)


def witness_reduced(mechanism: Mechanism, replace_one_ratio: float) -> bool:
    """A witness of this ``replace_one_ratio`` (``Witness``) runs below M's add-remove ε:
    the declared ε_R is below ratio·ε (e.g. ratio 2 and M declared ``both``)."""
    return mechanism.replace_one_ratio() < replace_one_ratio


def replace_one_remarks(
    mechanism: Mechanism, theorem: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What reading an add-remove mechanism under replace-one means: ``(warnings,
    notes)``. A stated ``epsilon_replace_one`` above 2ε is an input to fix (a warning);
    the conversions ε_R = 2ε and δ_R = (1 + e^ε)δ are notes."""
    if mechanism.neighbours is not Neighbours.ADD_REMOVE:
        return (), ()
    out: list[str] = []
    warnings: list[str] = []
    eps = mechanism.epsilon
    if mechanism.epsilon_replace_one is None:
        out.append(
            f"M's ε = {eps:g} holds under add-remove, but {theorem} needs its replace-one "
            f"ε; using ε_R = 2ε = {2 * eps:g} ({BUN_2022}, §2.2). If M is also "
            "ε-DP under replace-one (e.g. a count query), declare `neighbours: both`; if "
            "its own analysis gives a smaller replace-one ε, set `epsilon_replace_one`."
        )
    elif mechanism.epsilon_replace_one > 2 * eps:
        warnings.append(
            f"epsilon_replace_one = {mechanism.epsilon_replace_one:g} exceeds 2ε; an "
            f"add-remove ε-DP mechanism is 2ε-DP under replace-one, so ε_R = {2 * eps:g} "
            "is used."
        )
    if mechanism.delta > 0 and mechanism.epsilon_replace_one is None:
        out.append(
            "δ under replace-one is taken as (1 + e^ε)δ (group privacy for the removal "
            "and the addition that make a replacement)."
        )
    return tuple(warnings), tuple(out)


def assemble(
    theorem: Theorem,
    mechanism: Mechanism,
    *,
    guarantee: Neighbours | None = None,
    details: Mapping[str, Any] | None = None,
    details_at: Callable[[FloatArray], Mapping[str, Any]] | None = None,
    details_both: Callable[[FloatArray, FloatArray], Mapping[str, Any]] | None = None,
    warnings: tuple[str, ...] = (),
    invert_details: Callable[[FloatArray], Mapping[str, Any]] | None = None,
    notes: tuple[str, ...] = (),
    conditions: tuple[str, ...] = (),
    invert_details_from: Callable[[Analysis, FloatArray], Mapping[str, Any]] | None = None,
) -> Analysis:
    """The analysis of one design under ``theorem`` for the declared ``mechanism``.

    Args:
        theorem: the result's formulas under its natural relation.
        mechanism: the design's mechanism (its relation, ε_R rule and δ).
        guarantee: the requested guarantee (checked against a ``GUARANTEE`` refusal).
        details: entries that do not depend on ε (``tight`` is added).
        details_at: evaluated ε (array) -> entries that do.
        details_both: (ε_D, ε_R) at each evaluated ε -> entries that depend on M's ε
            under both relations (ε_D = +∞ where unknown).
        warnings: the family's own warnings (the relation's warning is added here).
        invert_details: target ε′ (array) -> extra entries for ``invert``.
        notes: the family's own notes (the relation notes are added here).
        conditions: the family's further conditions, stated after M's relation (e.g.
            M's δ, what a second sampling stage makes of M).
        invert_details_from: (the built analysis, target ε′) -> extra entries for
            ``invert`` that use the analysis's own bounds and inverses (in place of
            ``invert_details``).

    Raises:
        ConditionError: one of the theorem's refusals applies (in its order), or the
            theorem needs M's add-remove ε and M is declared under replace-one only.
    """
    theorem = theorem.bind()
    check_refusals(theorem, mechanism, guarantee)
    rel = relation_of(mechanism, theorem)
    upper = _upper(theorem, rel)
    lower, bounds = _lower(theorem, rel, upper)
    if bounds is not None:  # the analysis's bounds are its two halves (``Analysis.bounds``)
        lower, upper = bounds.lower, bounds.upper
    delta_prime, mechanism_delta = _delta(theorem, mechanism, rel)
    certified, impossible_above = _inverses(theorem, mechanism, rel, upper, lower)
    reference = rel.add_remove if theorem.guarantee is Neighbours.ADD_REMOVE else rel.replace_one
    if theorem.group_size != 1:
        reference = _times(theorem.group_size, reference)

    analysis = Analysis(
        guarantee_neighbours=theorem.guarantee,
        reference_epsilon=reference,
        upper=upper,
        lower=lower,
        delta_prime=delta_prime,
        certified=certified,
        impossible_above=impossible_above,
        mechanism_delta=mechanism_delta,
        basis=theorem.basis,
        conditions=(*theorem.conditions, *_relation_condition(theorem, mechanism), *conditions),
        warnings=(*warnings, *rel.warnings),
        notes=(*notes, *rel.notes),
        details={
            **(details or {}),
            **({} if theorem.tight is None else {"tight": theorem.tight}),
        },
        details_at=_details(details_at, details_both, rel.add_remove, rel.replace_one),
        invert_details=invert_details,
    )
    scalar = _scalar_form(theorem, mechanism, rel, analysis)
    if scalar is not None:
        analysis = dataclasses.replace(analysis, scalar=scalar)
    if invert_details_from is None:
        return analysis
    return dataclasses.replace(
        analysis, invert_details=functools.partial(invert_details_from, analysis)
    )


def _scalar_form(
    theorem: Theorem, mechanism: Mechanism, rel: Relation, analysis: Analysis
) -> ScalarForm | None:
    """The analysis on one float, where its formulas are the theorem's ``ClosedForm``
    of the relation's ε = ratio·(declared ε) exactly (no stated ε_R: ratio 1 or 2) and
    no remark about the relation depends on ε; else None."""
    form = theorem.closed_form
    if form is None or not theorem.formulas_are_closed_form():
        return None
    if theorem.witnesses or theorem.lower_inverse is not None or theorem.group_size != 1:
        return None
    if rel.warnings or rel.notes or mechanism.epsilon_replace_one is not None:
        return None
    if theorem.guarantee is Neighbours.ADD_REMOVE:
        reference_ratio = 1.0 if mechanism.epsilon_add_remove_known() else np.inf
    else:
        reference_ratio = mechanism.replace_one_ratio()
    spec = theorem.delta_prime
    zero = theorem.pure or theorem.refusal(Refuses.DELTA) is not None
    if spec is not None and not zero and not isinstance(spec, Proportional):
        return None  # a δ′ formula of ε
    delta_prime = None
    if analysis.delta_prime is not None:  # 0, or factor·δ of the relation: constant here
        delta_prime = float(analysis.delta_prime(np.asarray(mechanism.epsilon, dtype=float)))
    factor = None
    if isinstance(spec, Proportional) and analysis.mechanism_delta is not None:
        factor = float(spec.factor)
    return ScalarForm(
        form=form,
        ratio=rel.ratio,
        reference_ratio=reference_ratio,
        replace_one_ratio=mechanism.replace_one_ratio(),
        delta_prime=delta_prime,
        delta_factor=factor,
        made_for=analysis.scalar_functions(),
    )


def _bound(spec: Bound, rel: Relation) -> Formula:
    """A bound of the theorem, as a function of the declared ε."""
    if isinstance(spec, OfPair):
        return _at_both(spec.formula, rel.add_remove, rel.replace_one)
    return _at_relation_epsilon(spec, rel.epsilon)


def _upper(theorem: Theorem, rel: Relation) -> Formula | None:
    """The upper bound as a function of the declared ε (None: a lower-only result)."""
    return None if theorem.upper is None else _bound(theorem.upper, rel)


def _lower(
    theorem: Theorem, rel: Relation, upper: Formula | None
) -> tuple[Formula | None, Bounds | None]:
    """The lower bound as a function of the declared ε, the largest of the theorem's
    lower parts (``lower`` and the witnesses), and both bounds from one evaluation where
    one formula gives both."""
    parts: list[Formula] = []
    if theorem.lower is not None:
        parts.append(_bound(theorem.lower, rel))
    parts += [_at_witness(w, rel.add_remove, rel.replace_one) for w in theorem.witnesses]
    lower = parts[0] if len(parts) == 1 else _largest(tuple(parts)) if parts else None
    if theorem.bounds is None or len(parts) != 1 or theorem.lower is None:
        return lower, None
    assert upper is not None and lower is not None
    return lower, Bounds(
        lower_alone=lower, upper_alone=upper, both=_at_both_bounds(theorem.bounds, rel.epsilon)
    )


def _delta(
    theorem: Theorem, mechanism: Mechanism, rel: Relation
) -> tuple[Formula | None, Callable[[float, FloatArray], FloatArray] | None]:
    """δ′ as a function of the declared ε, and the inverse δ map (target δ′ -> M's δ)
    where δ′ is a multiple of M's δ."""
    spec = theorem.delta_prime
    if theorem.pure or theorem.refusal(Refuses.DELTA) is not None:
        return _zeros, None
    if spec is None:
        return None, None
    if isinstance(spec, Proportional):
        factor = float(spec.factor)
        return (
            _scaled_delta(factor, rel, mechanism.delta == 0.0),
            _mechanism_delta(mechanism, theorem.relation, spec.factor),
        )
    if mechanism.delta == 0.0:
        return _zeros, None
    if isinstance(spec, OfPair):
        return _at_both(spec.formula, rel.add_remove, rel.replace_one), None
    return _delta_at(spec, rel), None


def _inverses(
    theorem: Theorem,
    mechanism: Mechanism,
    rel: Relation,
    upper: Formula | None,
    lower: Formula | None,
) -> tuple[Formula | None, Formula | None]:
    """The certified ε (from ``inverse``) and the impossible-above ε (from
    ``lower_inverse``, else from a plain ``inverse`` the two bounds share), each rounded
    outward and certified against the bound as evaluated."""
    certified: Formula | None = None
    impossible_above: Formula | None = None
    inverse, lower_inverse = theorem.inverse, theorem.lower_inverse
    if inverse is not None and upper is not None:
        if isinstance(inverse, InScale):
            scaled = inverse.scale.ratio(mechanism)
            certified = functools.partial(certify_inverse, inverse.formula, upper, scaled)
        else:
            certified = _certified(inverse, upper, rel.ratio)
            if lower is not None:
                impossible_above = _impossible_above(inverse, lower, rel.ratio)
    if lower_inverse is not None and lower is not None:
        if isinstance(lower_inverse, InScale):
            scaled = lower_inverse.scale.ratio(mechanism)
            impossible_above = functools.partial(
                certify_lower_inverse, lower_inverse.formula, lower, scaled
            )
        else:
            impossible_above = _impossible_above(lower_inverse, lower, rel.ratio, start_below=True)
    return certified, impossible_above


def check_refusals(
    theorem: Theorem, mechanism: Mechanism, guarantee: Neighbours | None = None
) -> None:
    """Raise the first of the theorem's refusals that applies, in the theorem's order
    (``assemble`` does; a family calls it first when its remarks need a valid design)."""
    for r in theorem.refusals:
        if r.refuses is Refuses.GUARANTEE:
            refused = guarantee is not None and guarantee is not theorem.guarantee
        elif r.refuses is Refuses.DELTA:
            refused = mechanism.delta > 0
        else:
            refused = not mechanism.epsilon_add_remove_known()
        if refused:
            raise ConditionError(r.message)


def _relation_condition(theorem: Theorem, mechanism: Mechanism) -> tuple[str, ...]:
    """The stated condition on M's relation (none for a theorem that puts none)."""
    if theorem.relation_condition is not None:
        words = theorem.relation_condition.replace("{declared}", str(mechanism.neighbours))
        return (words,) if words else ()
    pure = " (δ = 0)" if theorem.pure else ""
    declared = f"(declared: {mechanism.neighbours})"
    if theorem.relation is None:
        return ()
    if theorem.relation is Neighbours.BOTH:
        return (
            f"M is ε_D-DP{pure} under add-remove and ε_R-DP under replace-one"
            f"{theorem.relation_words} {declared}",
        )
    return (f"M is ε-DP{pure} under {theorem.relation}{theorem.relation_words} {declared}",)


def _zeros(eps: FloatArray) -> FloatArray:
    return np.zeros(np.shape(eps))


def _at_relation_epsilon(formula: Formula, eps_of: Formula) -> Formula:
    """A formula of the relation's ε, as a function of the declared ε."""

    def bound(eps: FloatArray) -> FloatArray:
        return formula(eps_of(eps))

    return bound


def _at_both_bounds(
    formula: BothFormula, eps_of: Formula
) -> Callable[[FloatArray], tuple[FloatArray, FloatArray]]:
    """``bounds`` of the relation's ε, as a function of the declared ε."""

    def bounds(eps: FloatArray) -> tuple[FloatArray, FloatArray]:
        return formula(eps_of(eps))

    return bounds


def _at_both(formula: PairFormula, add_remove: Formula, replace_one: Formula) -> Formula:
    """A formula of (ε_D, ε_R), as a function of the declared ε."""

    def bound(eps: FloatArray) -> FloatArray:
        return formula(add_remove(eps), replace_one(eps))

    return bound


def _at_witness(witness: Witness, add_remove: Formula, replace_one: Formula) -> Formula:
    """A witness run at min(ε_D, ε_R/c), as a function of the declared ε."""
    f, c = witness.bound, witness.replace_one_ratio

    def bound(eps: FloatArray) -> FloatArray:
        return f(np.minimum(add_remove(eps), replace_one(eps) / c))

    return bound


def _largest(parts: tuple[Formula, ...]) -> Formula:
    """The largest of several lower bounds."""

    def bound(eps: FloatArray) -> FloatArray:
        out = parts[0](eps)
        for part in parts[1:]:
            out = np.maximum(out, part(eps))
        return out

    return bound


def _times(g: int, reference: Formula) -> Formula:
    def scaled(eps: FloatArray) -> FloatArray:
        return g * reference(eps)

    return scaled


def _scaled_delta(factor: float, rel: Relation, pure: bool) -> Formula:
    """δ′ = factor·δ of the relation, rounded up and capped at 1."""

    def delta_prime(eps: FloatArray) -> FloatArray:
        if pure:
            return np.zeros(np.shape(eps))
        out: FloatArray = np.minimum(numeric.round_up(factor * rel.delta(eps)), 1.0)
        return out

    return delta_prime


def _delta_at(formula: DeltaFormula, rel: Relation) -> Formula:
    """δ′(ε, δ) of the relation, as a function of the declared ε."""

    def delta_prime(eps: FloatArray) -> FloatArray:
        return formula(rel.epsilon(eps), rel.delta(eps))

    return delta_prime


def _certified(inverse: Formula, upper: Formula, ratio: float) -> Formula:
    """Largest declared ε with upper <= target: the closed form rounded down, certified."""

    def certified(target: FloatArray) -> FloatArray:
        guess = numeric.round_down(inverse(target))
        if ratio != 1.0:
            guess = numeric.round_down(guess / ratio)
        return numeric.certify_down(upper, guess, target)

    return certified


def _impossible_above(
    inverse: Formula, lower: Formula, ratio: float, *, start_below: bool = False
) -> Formula:
    """Smallest declared ε with lower >= target: the closed form rounded up (or, with
    ``start_below``, down, so that stepping up finds the first such float), certified.
    An infinite closed form (the lower bound never reaches the target) stays infinite."""

    def impossible_above(target: FloatArray) -> FloatArray:
        if not start_below:
            guess = numeric.round_up(inverse(target))
            if ratio != 1.0:
                guess = numeric.round_up(guess / ratio)
            return numeric.certify_up(lower, guess, target)
        t = np.asarray(target, dtype=float)
        raw = np.asarray(inverse(t), dtype=float)
        finite = np.isfinite(raw)
        if not np.any(finite):
            return raw
        guess = numeric.round_down(np.where(finite, raw, 0.0))
        if ratio != 1.0:
            guess = numeric.round_down(guess / ratio)
        out: FloatArray = np.where(finite, numeric.certify_up(lower, guess, t), raw)
        return out

    return impossible_above


def _details(
    at: Callable[[FloatArray], Mapping[str, Any]] | None,
    both: Callable[[FloatArray, FloatArray], Mapping[str, Any]] | None,
    add_remove: Formula,
    replace_one: Formula,
) -> Callable[[FloatArray], Mapping[str, Any]] | None:
    """The ε-dependent details: of the declared ε and of (ε_D, ε_R), merged."""
    if both is None:
        return at
    pair = both

    def details_at(eps: FloatArray) -> Mapping[str, Any]:
        return {**(at(eps) if at is not None else {}), **pair(add_remove(eps), replace_one(eps))}

    return details_at


def _mechanism_delta(
    mechanism: Mechanism, relation: Neighbours | None, factor: float
) -> Callable[[float, FloatArray], FloatArray]:
    """Target δ′ -> the declared mechanism's δ that meets it (rounded down)."""

    def mechanism_delta(target_delta: float, eps: FloatArray) -> FloatArray:
        e = np.asarray(eps, dtype=float)
        if relation is Neighbours.ADD_REMOVE or mechanism.neighbours is not Neighbours.ADD_REMOVE:
            return numeric.round_down(np.full_like(e, target_delta / factor))
        if mechanism.epsilon_replace_one is not None:
            return np.full_like(e, np.nan)  # δ_R was stated directly; no add-remove δ follows
        with np.errstate(over="ignore"):
            return numeric.round_down(target_delta / (factor * (1.0 + np.exp(e))))

    return mechanism_delta


def certify_below(upper: Formula, guess: Any, target: Any) -> FloatArray:
    """Largest declared ε with upper <= target, from an unrounded closed-form guess of
    it: the guess rounded down once, then stepped down until it holds as evaluated."""
    return numeric.certify_down(upper, numeric.round_down(guess), target)


def certify_above(lower: Formula, guess: Any, target: Any) -> FloatArray:
    """Smallest declared ε with lower >= target, from an unrounded closed-form guess of
    it: the guess rounded up once, then stepped up until it holds as evaluated."""
    return numeric.certify_up(lower, numeric.round_up(guess), target)


def certify_inverse(
    inverse: Formula, upper: Formula, ratio: float, target: FloatArray | float
) -> FloatArray:
    """Largest declared ε with upper <= target: inv(T)/ratio (an inverse in a ``Scale``)
    rounded down once, then stepped down until it holds as evaluated."""
    t = np.asarray(target, dtype=float)
    guess = inverse(t) if ratio == 1.0 else inverse(t) / ratio
    return certify_below(upper, guess, t)


def certify_lower_inverse(
    inverse: Formula, lower: Formula, ratio: float, target: FloatArray | float
) -> FloatArray:
    """Smallest declared ε with lower >= target: inv(T)/ratio (the lower bound's own
    inverse in a ``Scale``) rounded up once, then stepped up until it holds as
    evaluated; +∞ (never reached) is kept, without evaluating the lower bound when it
    is +∞ at every target."""
    t = np.asarray(target, dtype=float)
    guess = inverse(t) if ratio == 1.0 else inverse(t) / ratio
    if np.all(np.isposinf(guess)):
        return np.asarray(guess, dtype=float)
    return certify_above(lower, guess, t)


@dataclass(frozen=True)
class UnitAmplification:
    """Per-unit rows of a result that holds unit by unit as A(q_h, ε) of M's ε under the
    theorem's relation (a stratum's Poisson coins, a stratum's simple random sample):
    each unit's bounds at the evaluated declared ε, and each unit's certified and
    impossible-above ε at one target, with M's ε converted by the ``Relation`` and the
    inverses certified as ``assemble`` does for the result's own.

    Attributes:
        rates: q_h, one per unit.
        relation: the declared mechanism under the theorem's relation (``relation_of``).
    """

    rates: FloatArray
    relation: Relation

    def bounds(self, eps: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(lower, upper)`` of each unit at each evaluated ε: A(q_h, ε of the relation)
        rounded down and up, shape (units, *eps.shape)."""
        q = np.asarray(self.rates, dtype=float).reshape((-1,) + (1,) * np.ndim(eps))
        e = self.relation.epsilon(eps)
        return numeric.amplification_lower(q, e), numeric.amplification_upper(q, e)

    def inverses(
        self, target: float, *, upper_share: float = 1.0
    ) -> tuple[FloatArray, FloatArray]:
        """Each unit's certified ε (the largest declared ε with A(q_h, ε of the relation)
        <= target/``upper_share``, the unit's share of the target) and its
        impossible-above ε (the smallest with the lower bound >= target)."""
        inverse = functools.partial(numeric.amplification_inverse, self.rates)
        ratio = self.relation.ratio
        certified = certify_inverse(inverse, self._upper, ratio, target / upper_share)
        return certified, certify_lower_inverse(inverse, self._lower, ratio, target)

    def _upper(self, eps: FloatArray) -> FloatArray:
        return numeric.amplification_upper(self.rates, self.relation.epsilon(eps))

    def _lower(self, eps: FloatArray) -> FloatArray:
        return numeric.amplification_lower(self.rates, self.relation.epsilon(eps))


def doubled(theorem: Theorem) -> Theorem:
    """The replace-one guarantee derived from an add-remove result (derivation §1.3): a
    replacement is a removal and an addition, so ε′ <= 2·ε′ of the result. Its upper
    bound doubled (rounded up), its inverse evaluated at T/2; its lower parts are
    dropped (state the replace-one lower bound on the returned record), and a derived
    bound is not claimed tight.
    """
    if theorem.guarantee is not Neighbours.ADD_REMOVE:
        raise ValueError(f"{theorem.name}: only an add-remove result is doubled")
    theorem = theorem.bind()
    upper, inverse = theorem.upper, theorem.inverse
    if isinstance(upper, OfPair):
        upper = OfPair(functools.partial(_twice_both, upper.formula))
    elif upper is not None:
        upper = functools.partial(_twice, upper)
    if isinstance(inverse, InScale):
        inverse = InScale(inverse.scale, functools.partial(_at_half, inverse.formula))
    elif inverse is not None:
        inverse = functools.partial(_at_half, inverse)
    return dataclasses.replace(
        theorem,
        guarantee=Neighbours.REPLACE_ONE,
        upper=upper,
        inverse=inverse,
        lower=None,
        witnesses=(),
        lower_inverse=None,
        tight=None if theorem.tight is None else False,
        closed_form=None,  # the doubled bound is not the form's; its lower parts are gone
    )


def _twice(upper: Formula, eps: FloatArray) -> FloatArray:
    return numeric.round_up(2.0 * upper(eps))


def _twice_both(upper: PairFormula, e_d: FloatArray, e_r: FloatArray) -> FloatArray:
    return numeric.round_up(2.0 * upper(e_d, e_r))


def _at_half(inverse: Formula, target: FloatArray) -> FloatArray:
    return inverse(np.asarray(target, dtype=float) / 2.0)
