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
* outward rounding and certification of every closed-form inverse (the certified ε
  is checked against the upper bound, the impossible-above ε against the lower);
* the inverse δ map (the mechanism δ that meets a target δ′);
* details computed at each evaluated ε (``details_at``), never at the declared one.

ε reaches the formulas only as the array argument: nothing here reads
``mechanism.epsilon`` except to state a warning's numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.math.types import FloatArray
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BUN_2022, Citation
from ampcalc.schemes.base import Analysis

Formula = Callable[[FloatArray], FloatArray]
"""ε of the theorem's relation (array) -> ε′ (array of the same shape)."""


@dataclass(frozen=True, kw_only=True)
class Theorem:
    """A result's formulas under its natural relation, as data.

    Attributes:
        name: how the result is cited in messages, e.g. ``"Theorem 2.2"``.
        basis: the references (``references.cite`` items).
        relation: the relation M's ε must hold under for the theorem.
        guarantee: the relation ε′ holds under.
        upper: ε -> ε′ upper bound, already rounded up (a guarantee).
        lower: ε -> ε′ lower bound, rounded down, or None.
        inverse: target ε′ -> ε, the unrounded closed-form inverse of ``upper`` (and of
            ``lower`` when they share a formula), or None.
        delta_factor: δ′ = delta_factor·δ (δ of ``relation``), or None when the
            theorem gives no δ′ (pure ε only).
        conditions: the theorem's conditions, in words, with the design's values.
        tight: the bounds meet (up to rounding); None: ``details`` states nothing
            about tightness.
        pure: the theorem is for pure ε only (the family refuses δ > 0): δ′ = 0, and
            no mechanism δ follows from a target δ′.
        group_size: ε′ protects a group of this many records (the unsampled loss the
            verdict compares with is group_size·ε of the relation).
        refuses_replace_one_only: message for a mechanism declared only under
            replace-one when ``relation`` is add-remove (its add-remove ε is unknown).
        relation_words: what follows the relation in the stated condition "M is ε-DP
            under <relation><relation_words>", e.g. " on samples of size m".
    """

    name: str
    basis: tuple[Citation, ...]
    relation: Neighbours
    guarantee: Neighbours
    upper: Formula
    lower: Formula | None = None
    inverse: Formula | None = None
    delta_factor: float | None = None
    conditions: tuple[str, ...] = ()
    tight: bool | None = False
    pure: bool = False
    group_size: int = 1
    refuses_replace_one_only: str = ""
    relation_words: str = ""


@dataclass(frozen=True)
class Relation:
    """The declared mechanism seen under a theorem's relation (fixed data)."""

    epsilon: Formula  # declared ε -> ε of the relation
    ratio: float  # ε of the relation / declared ε (inversions divide by it)
    delta: Formula  # declared ε -> δ of the relation
    warnings: tuple[str, ...]
    notes: tuple[str, ...] = ()


def relation_of(mechanism: Mechanism, theorem: Theorem) -> Relation:
    """How the declared mechanism's ε and δ read under ``theorem.relation``.

    Raises:
        ConditionError: the theorem needs M's add-remove ε and M is declared under
            replace-one only.
    """
    if theorem.relation is Neighbours.ADD_REMOVE:
        if not mechanism.epsilon_add_remove_known():
            raise ConditionError(
                theorem.refuses_replace_one_only
                or (
                    f"{theorem.name} needs M's add-remove ε, and `neighbours: replace-one` "
                    "leaves it unknown. Declare `neighbours: add-remove` or `both`."
                )
            )
        delta = mechanism.delta

        def same(eps: FloatArray) -> FloatArray:
            return np.asarray(eps, dtype=float)

        def delta_ar(eps: FloatArray) -> FloatArray:
            return np.full(np.shape(eps), delta)

        return Relation(epsilon=same, ratio=1.0, delta=delta_ar, warnings=())
    warnings, notes = replace_one_remarks(mechanism, theorem.name)
    return Relation(
        epsilon=mechanism.epsilon_replace_one_of,
        ratio=mechanism.replace_one_ratio(),
        delta=mechanism.delta_replace_one_of,
        warnings=warnings,
        notes=notes,
    )


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
    details: Mapping[str, Any] | None = None,
    details_at: Callable[[FloatArray], Mapping[str, Any]] | None = None,
    warnings: tuple[str, ...] = (),
    invert_details: Callable[[FloatArray], Mapping[str, Any]] | None = None,
    notes: tuple[str, ...] = (),
) -> Analysis:
    """The analysis of one design under ``theorem`` for the declared ``mechanism``.

    Args:
        theorem: the result's formulas under its natural relation.
        mechanism: the design's mechanism (its relation, ε_R rule and δ).
        details: entries that do not depend on ε (``tight`` is added).
        details_at: evaluated ε (array) -> entries that do.
        warnings: the family's own warnings (the relation's warning is added here).
        invert_details: target ε′ (array) -> extra entries for ``invert``.
        notes: the family's own notes (the relation notes are added here).
    """
    rel = relation_of(mechanism, theorem)
    eps_of, ratio = rel.epsilon, rel.ratio
    formula_upper, formula_lower, inverse = theorem.upper, theorem.lower, theorem.inverse

    def upper(eps: FloatArray) -> FloatArray:
        return formula_upper(eps_of(eps))

    lower: Formula | None = None
    if formula_lower is not None:
        fl = formula_lower

        def lower(eps: FloatArray) -> FloatArray:
            return fl(eps_of(eps))

    delta_prime: Formula | None = None
    mechanism_delta: Callable[[float, FloatArray], FloatArray] | None = None
    if theorem.pure:

        def delta_prime(eps: FloatArray) -> FloatArray:
            return np.zeros(np.shape(eps))

    elif theorem.delta_factor is not None:
        factor = float(theorem.delta_factor)
        pure = mechanism.delta == 0.0

        def delta_prime(eps: FloatArray) -> FloatArray:
            if pure:
                return np.zeros(np.shape(eps))
            out: FloatArray = np.minimum(numeric.round_up(factor * rel.delta(eps)), 1.0)
            return out

        mechanism_delta = _mechanism_delta(mechanism, theorem.relation, factor)

    certified: Formula | None = None
    impossible_above: Formula | None = None
    if inverse is not None:
        inv = inverse

        def certified(target: FloatArray) -> FloatArray:
            guess = numeric.round_down(inv(target))
            if ratio != 1.0:
                guess = numeric.round_down(guess / ratio)
            return numeric.certify_down(upper, guess, target)

        if lower is not None:
            low = lower

            def impossible_above(target: FloatArray) -> FloatArray:
                guess = numeric.round_up(inv(target))
                if ratio != 1.0:
                    guess = numeric.round_up(guess / ratio)
                return numeric.certify_up(low, guess, target)

    reference: Formula = eps_of
    if theorem.group_size != 1:
        g = theorem.group_size

        def reference(eps: FloatArray) -> FloatArray:
            return g * eps_of(eps)

    return Analysis(
        guarantee_neighbours=theorem.guarantee,
        reference_epsilon=reference,
        upper=upper,
        lower=lower,
        delta_prime=delta_prime,
        certified=certified,
        impossible_above=impossible_above,
        mechanism_delta=mechanism_delta,
        basis=theorem.basis,
        conditions=(
            *theorem.conditions,
            f"M is ε-DP{' (δ = 0)' if theorem.pure else ''} under "
            f"{theorem.relation}{theorem.relation_words} "
            f"(declared: {mechanism.neighbours})",
        ),
        warnings=(*warnings, *rel.warnings),
        notes=(*notes, *rel.notes),
        details={
            **(details or {}),
            **({} if theorem.tight is None else {"tight": theorem.tight}),
        },
        details_at=details_at,
        invert_details=invert_details,
    )


def _mechanism_delta(
    mechanism: Mechanism, relation: Neighbours, factor: float
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
