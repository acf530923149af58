"""The engine: designs in, results out. Pure: no printing, no YAML, no exits.

``bound`` evaluates a design's upper and lower bounds on ε′ (vectorised in ε) and
the verdict; ``invert`` finds the largest mechanism ε the upper bound certifies for
a target ε′ and the ε past which the lower bound surely breaks it. Closed-form
inverses are used where a scheme has them, otherwise the generic monotone inversion
in ``numeric``; either way the certificate is checked as evaluated, and the path
taken is recorded in ``details.inverse``.

One ε (or one target) on a design whose analysis has a ``ScalarForm`` (the theorem's
formulas are one closed form, e.g. srswor's and poisson's A(q, ε)) is answered on
Python floats by ``_scalar_bound``/``_scalar_invert``: the analysis is built once per
design, and the form evaluates, rounds and certifies with the array functions' own
operations, so the result is the array path's bit for bit; the verdict rule and the
messages below serve both. Where the form declines (a log-space argument, an array, a
certificate needing more steps) the array path answers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Literal, overload

import numpy as np

from ampcalc import schemes
from ampcalc.engine.analysis import (
    _EPSILON_WHERE,
    _TARGET_WHERE,
    analyse,
    with_epsilon,
)
from ampcalc.math import numeric
from ampcalc.model.design import (
    MAX_EPSILON,
    Design,
    Mechanism,
    Neighbours,
    Target,
    check_epsilon,
)
from ampcalc.model.errors import ConditionError, DesignError
from ampcalc.model.results import BoundResult, InvertResult, Verdict
from ampcalc.schemes.base import Analysis, ScalarForm

VERDICT_SLACK = 1e-12

#: what ``invert`` says about a certificate or a δ′ target (both paths)
NO_EPSILON_MEETS = "no mechanism ε meets the target: the upper bound exceeds it even as ε → 0"
EVERY_EPSILON_MEETS = "every mechanism ε meets the target: the upper bound stays below it"
LOWER_NEVER_REACHES = "the lower bound never reaches the target: no ε is known to break it"


def delta_unconstrained(target_delta: float) -> str:
    """The note for a target δ′ that any mechanism δ < 1 meets."""
    return f"target δ′ = {target_delta:g} does not constrain M's δ (any δ < 1 meets it)"


def _mechanism_notes(mechanism: Mechanism | None) -> list[str]:
    if mechanism is None or mechanism.releases is None:
        return []
    k = len(mechanism.releases)
    return [
        f"ε′ covers all {k} releases together: basic composition gives M's ε = "
        f"{mechanism.epsilon:g} (the sum) and δ = {mechanism.delta:g}, amplified once because "
        "they run on the same sample. Amplifying each release and adding the results is "
        "not valid for one sample."
    ]


#: verdict values by code (``verdicts`` picks codes, then takes the strings in one pass).
_VERDICT_VALUES = np.array(
    [
        Verdict.INCONCLUSIVE.value,
        Verdict.DEGRADES.value,
        Verdict.NO_AMPLIFICATION.value,
        Verdict.AMPLIFIES.value,
        Verdict.NO_GUARANTEE.value,
    ],
    dtype=object,
)


def _degrades(lower: Any, reference: Any) -> Any:
    """The verdict's first rule (floats or arrays): the lower bound exceeds ε."""
    return lower > reference * (1 + VERDICT_SLACK)


def _no_amplification(lower: Any, reference: Any) -> Any:
    """The second rule: the lower bound reaches ε."""
    return lower >= reference * (1 - VERDICT_SLACK)


def _amplifies(upper: Any, reference: Any) -> Any:
    """The third rule: the upper bound is below ε."""
    return upper < reference


def verdicts(
    lower: np.ndarray | None, upper: np.ndarray | None, reference: np.ndarray
) -> np.ndarray:
    """Verdict per element (order: degrades, no-amplification, amplifies, no-guarantee)."""
    ref = np.asarray(reference, dtype=float)
    # codes of _VERDICT_VALUES, later rules overwritten by earlier ones
    if upper is None:
        code: np.ndarray = np.full(ref.shape, 4, dtype=np.int8)
    else:
        code = np.where(_amplifies(np.asarray(upper, dtype=float), ref), 3, 0).astype(np.int8)
    if lower is not None:
        lo = np.asarray(lower, dtype=float)
        code[np.broadcast_to(_no_amplification(lo, ref), ref.shape)] = 2
        code[np.broadcast_to(_degrades(lo, ref), ref.shape)] = 1
    out = _VERDICT_VALUES[code]
    return np.asarray(out, dtype=object) if code.ndim == 0 else out


def verdict(lower: float, upper: float, reference: float) -> str:
    """``verdicts`` of one (lower, upper, reference) of floats."""
    if _degrades(lower, reference):
        return Verdict.DEGRADES.value
    if _no_amplification(lower, reference):
        return Verdict.NO_AMPLIFICATION.value
    if _amplifies(upper, reference):
        return Verdict.AMPLIFIES.value
    return Verdict.INCONCLUSIVE.value


def in_range(lower: Any, delta_prime: Any) -> tuple[Any, Any]:
    """A lower bound on ε′ raised to 0 and a δ′ clipped to [0, 1] (NaN stays NaN).

    Both are sound whatever the scheme computed: every ε′ is >= 0, so 0 is a valid lower
    bound, and every δ′ is <= 1, so 1 is a valid upper bound on it. Outward rounding
    can otherwise print a δ′ of 1.0000000000000018 or a lower bound of -4.5e-13.
    """
    if lower is not None:
        lower = np.maximum(np.asarray(lower, dtype=float), 0.0)
    if delta_prime is not None:
        delta_prime = np.clip(np.asarray(delta_prime, dtype=float), 0.0, 1.0)
    return lower, delta_prime


def _scalar(x: Any, was_scalar: bool) -> Any:
    if x is None:
        return None
    arr = np.asarray(x)
    if was_scalar and arr.ndim == 0:
        return arr.item()
    if was_scalar and arr.size == 1:
        return arr.reshape(()).item()
    return arr


def _details_at(values: Mapping[str, Any], was_scalar: bool) -> dict[str, Any]:
    """ε-dependent details: arrays of the evaluated ε's shape, or plain numbers."""

    def one(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return _scalar(v, was_scalar)
        if isinstance(v, Mapping):
            return {k: one(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [one(x) for x in v]
        return v

    return {k: one(v) for k, v in values.items()}


@overload
def failed(
    design: Design, err: ConditionError, kind: Literal["bound"], **fields: Any
) -> BoundResult: ...


@overload
def failed(
    design: Design, err: ConditionError, kind: Literal["invert"], **fields: Any
) -> InvertResult: ...


def failed(
    design: Design, err: ConditionError, kind: str, **fields: Any
) -> BoundResult | InvertResult:
    scheme = schemes.get(design.scheme)
    if kind == "bound":
        mech = design.mechanism
        return BoundResult(
            name=design.name,
            scheme=design.scheme,
            epsilon=fields.get("epsilon", mech.epsilon if mech else None),
            delta=mech.delta if mech else None,
            lower=None,
            upper=None,
            delta_prime=None,
            verdict=None,
            epsilon_replace_one=None,
            guarantee_neighbours=str(design.guarantee or scheme.guarantees[0]),
            basis=scheme.basis,
            error=err.message,
        )
    return InvertResult(
        name=design.name,
        scheme=design.scheme,
        target_epsilon_prime=fields.get("target"),
        target_delta_prime=fields.get("target_delta"),
        certified=None,
        impossible_above=None,
        delta=None,
        basis=scheme.basis,
        error=err.message,
    )


#: float exceptions while evaluating bounds: an overflow to inf, a division by zero or an
#: underflow gives the value the formulas are written for (an upper bound of inf is no
#: guarantee, a lower bound is raised to 0 by ``in_range``); they are not reported as
#: numpy warnings on the user's terminal.
_QUIET = {"over": "ignore", "divide": "ignore", "under": "ignore", "invalid": "ignore"}


def bound(design: Design, epsilon: Any = None) -> BoundResult:
    """Upper and lower bounds on ε′ (and δ′, the verdict) for one design with an
    (ε, δ) mechanism (``ampcalc.engine.bound`` also takes named mechanisms).

    Args:
        design: a validated design.
        epsilon: override M's declared ε: a number, or an array for a vectorised
            sweep (result fields are then arrays of its shape).
    Returns:
        A ``BoundResult``; a design outside its theorem's conditions gives a result
        with ``error`` set and null bounds.
    """
    fast = _scalar_bound(design, epsilon)  # one ε on a closed-form design: same bits
    if fast is not None:
        return fast
    with np.errstate(**_QUIET):  # type: ignore[arg-type]
        return _bound(design, epsilon)


def _bound(design: Design, epsilon: Any) -> BoundResult:
    mech = design.mechanism
    notes: list[str] = []
    was_scalar = epsilon is None or np.ndim(epsilon) == 0
    if epsilon is not None and mech is not None:
        eps_arr = check_epsilon(epsilon, where=_EPSILON_WHERE, array=True)
        if was_scalar:
            mech, notes = with_epsilon(mech, float(eps_arr))
    try:
        analysis = analyse(design, mech)
    except ConditionError as err:
        extra = {} if epsilon is None else {"epsilon": epsilon}
        return failed(design, err, "bound", **extra)
    if analysis.pointwise and not was_scalar:
        return _bound_pointwise(design, np.asarray(epsilon, dtype=float))
    if mech is not None:
        eps = np.asarray(epsilon if epsilon is not None else mech.epsilon, dtype=float)
    else:
        eps = np.asarray(np.nan)
    lower, upper = analysis.bounds_at(eps)
    delta_prime = analysis.delta_prime(eps) if analysis.delta_prime is not None else None
    lower, delta_prime = in_range(lower, delta_prime)
    reference = analysis.reference_epsilon(eps)
    if analysis.calibrated:
        verdict: Any = np.full(np.shape(eps), Verdict.CALIBRATED.value, dtype=object)
    else:
        verdict = verdicts(lower, upper, reference)
    details = dict(analysis.details)
    if analysis.details_at is not None:  # the entries that depend on ε, at the evaluated ε
        details.update(_details_at(analysis.details_at(eps), was_scalar))
    elif not was_scalar and details:
        details["details_epsilon"] = mech.epsilon if mech is not None else None
    details["reference_epsilon"] = _scalar(reference, was_scalar)
    eps_r = mech.epsilon_replace_one_of(eps) if mech is not None else None
    return BoundResult(
        name=design.name,
        scheme=design.scheme,
        epsilon=_scalar(eps, was_scalar) if mech is not None else None,
        delta=mech.delta if mech is not None else None,
        lower=_scalar(lower, was_scalar),
        upper=_scalar(upper, was_scalar),
        delta_prime=_scalar(delta_prime, was_scalar),
        verdict=_scalar(verdict, was_scalar),
        epsilon_replace_one=_scalar(eps_r, was_scalar),
        guarantee_neighbours=str(analysis.guarantee_neighbours),
        basis=analysis.basis,
        conditions=analysis.conditions,
        warnings=analysis.warnings,
        notes=(*analysis.notes, *_mechanism_notes(mech), *notes),
        details=details,
    )


def _bound_pointwise(design: Design, eps: np.ndarray) -> BoundResult:
    """An array of ε for an analysis whose conditions depend on M's ε: one point at a
    time, each checked at its own ε; a point outside the conditions fails the call."""
    points = [_bound(design, float(e)) for e in eps.reshape(-1)]
    for e, res in zip(eps.reshape(-1).tolist(), points, strict=True):
        if res.error is not None:
            return dataclasses.replace(res, epsilon=eps, error=f"at ε = {e:g}: {res.error}")
    first = points[0]

    def stack(values: list[Any], dtype: Any = float) -> Any:
        if all(v is None for v in values):
            return None
        return np.asarray(values, dtype=dtype).reshape(eps.shape)

    details = dict(first.details)
    details["reference_epsilon"] = stack([p.details.get("reference_epsilon") for p in points])
    details["details_epsilon"] = float(eps.reshape(-1)[0])  # the other entries: first point
    return dataclasses.replace(
        first,
        epsilon=eps,
        lower=stack([p.lower for p in points]),
        upper=stack([p.upper for p in points]),
        delta_prime=stack([p.delta_prime for p in points]),
        verdict=stack([p.verdict for p in points], dtype=object),
        epsilon_replace_one=stack([p.epsilon_replace_one for p in points]),
        details=details,
    )


def certified_epsilon(analysis: Analysis, target: np.ndarray) -> tuple[np.ndarray, str]:
    """Largest declared ε with upper(ε) <= target, as evaluated; and the path taken."""
    assert analysis.upper is not None
    upper = analysis.upper
    if analysis.certified is not None:
        cert = np.asarray(analysis.certified(target), dtype=float)
        path = "closed-form"
    else:
        cert = numeric.largest_feasible(upper, target, target / 4.0, np.maximum(target, 1.0) * 4)
        path = "root-finder"
    # feasible by construction: re-check as evaluated (one-sided)
    finite = np.isfinite(cert)
    if np.any(finite):
        ok = np.asarray(upper(np.where(finite, cert, 1.0)) <= target) | ~finite
        if not np.all(ok):
            cert = numeric.certify_down(upper, cert, target)
    return cert, path


def impossible_epsilon(analysis: Analysis, target: np.ndarray) -> tuple[np.ndarray, str]:
    """Smallest declared ε with lower(ε) >= target, as evaluated (inf if never)."""
    assert analysis.lower is not None
    if analysis.impossible_above is not None:
        return np.asarray(analysis.impossible_above(target), dtype=float), "closed-form"
    found = numeric.smallest_reaching(
        analysis.lower, target, target / 4.0, np.maximum(target, 1.0) * 4
    )
    return found, "root-finder"


def invert(design: Design, target: Any = None, target_delta: float | None = None) -> InvertResult:
    """Largest certified mechanism ε for a target ε′, and the ε past which it surely fails.

    Args:
        design: a validated design.
        target: the population-level target ε′ (number or array); defaults to the
            design's ``target.epsilon_prime``.
        target_delta: the target δ′; defaults to ``target.delta_prime``. When given,
            the result's ``delta`` is the largest δ M may use at the certified ε.
    Returns:
        An ``InvertResult`` (``error`` set, nulls, when conditions fail).
    Raises:
        DesignError: no target given, or a target that is not a number > 0.
    """
    asked, asked_delta = target, target_delta
    if target is None and design.target is not None:
        target = design.target.epsilon_prime
    if target_delta is None and design.target is not None:
        target_delta = design.target.delta_prime
    if (
        type(target) is float
        and 0.0 < target <= MAX_EPSILON
        and (target_delta is None or 0 <= target_delta <= 1)
    ):
        fast = _scalar_invert(design, target, target_delta)  # closed form: same bits
        if fast is not None:
            return fast
    with np.errstate(**_QUIET):  # type: ignore[arg-type]
        return _invert(design, target, target_delta, (asked, asked_delta))


def retarget(design: Design, target: Any, target_delta: float | None) -> Design:
    """``design`` rebuilt for the target asked, when its scheme is calibrated to its
    ``target:`` (pws, privacy-constrained importance): the target is what such a design
    is built for, so inverting it at another target rebuilds it, never ignores it. Other
    designs, array targets and an unchanged target return ``design`` itself.

    Raises:
        DesignError: the scheme needs a δ′ in (0, 1] and ``target_delta`` is not one.
    """
    if (target is None and target_delta is None) or np.ndim(target) != 0:
        return design
    if not _calibrated(design):
        return design
    old = design.target or Target()
    new = Target(
        epsilon_prime=old.epsilon_prime if target is None else float(target),
        delta_prime=old.delta_prime if target_delta is None else float(target_delta),
    )
    if new == old:
        return design
    if schemes.get(design.scheme).needs_target and not (new.delta_prime or 0.0) > 0.0:
        raise DesignError(
            f"design {design.name!r} ({design.scheme}) is calibrated to its target and needs "
            "a target δ′ in (0, 1] (`target_delta`, or `target: {delta_prime: ...}`)"
            + ("" if new.delta_prime is None else f"; got {new.delta_prime:g}")
        )
    return dataclasses.replace(design, target=new)


def _calibrated(design: Design) -> bool:
    """The design's scheme builds its mechanism (or q) for the design's target."""
    if schemes.get(design.scheme).bind_target is None:
        return False
    try:
        return bool(analyse(design).calibrated)  # e.g. importance with a fixed q: False
    except ConditionError:
        return False  # invert reports it


def _invert_pointwise(
    design: Design, t: np.ndarray, target_delta: float | None, asked_delta: float | None
) -> InvertResult:
    """An array of targets for a design calibrated to its target: each target rebuilds
    the design (as one call with that target does); a target it cannot be built for
    fails the call."""
    flat = t.reshape(-1).tolist()
    points = [_invert(design, x, target_delta, (x, asked_delta)) for x in flat]
    for x, res in zip(flat, points, strict=True):
        if res.error is not None:
            return dataclasses.replace(
                res, target_epsilon_prime=t, error=f"at target ε′ = {x:g}: {res.error}"
            )
    first = points[0]

    def stack(values: list[Any]) -> Any:
        if all(v is None for v in values):
            return None
        return np.asarray([np.nan if v is None else v for v in values], dtype=float).reshape(
            t.shape
        )

    details = {**first.details, "details_target": flat[0]}  # the other entries: first target
    return dataclasses.replace(
        first,
        target_epsilon_prime=t,
        certified=stack([p.certified for p in points]),
        impossible_above=stack([p.impossible_above for p in points]),
        delta=stack([p.delta for p in points]),
        details=details,
    )


def _invert(
    design: Design, target: Any, target_delta: float | None, asked: tuple[Any, float | None]
) -> InvertResult:
    t = _checked_target(design, target, target_delta)
    if t.ndim != 0 and asked[0] is not None and _calibrated(design):
        return _invert_pointwise(design, t, target_delta, asked[1])
    # a valid target (closed forms took the fast path: they are never calibrated to one)
    design = retarget(design, *asked)
    was_scalar = t.ndim == 0
    try:
        analysis = analyse(design)
    except ConditionError as err:
        return failed(design, err, "invert", target=target, target_delta=target_delta)
    said = _Remarks(
        warnings=list(analysis.warnings),
        notes=list(analysis.notes) + _mechanism_notes(design.mechanism),
    )
    calibrated_only = analysis.calibrated and design.mechanism is None
    certified = _certified_side(design, analysis, t, calibrated_only, said)
    impossible = None if calibrated_only else _impossible_side(analysis, t, said)
    delta = _mechanism_delta(analysis, target_delta, certified, calibrated_only, said)
    knob = _scheme_remarks(design, analysis, t, said)
    return InvertResult(
        name=design.name,
        scheme=design.scheme,
        target_epsilon_prime=_scalar(t, was_scalar),
        target_delta_prime=target_delta,
        certified=_scalar(certified, was_scalar),
        impossible_above=_scalar(impossible, was_scalar),
        delta=_scalar(delta, was_scalar),
        basis=analysis.basis,
        warnings=tuple(said.warnings),
        notes=tuple(said.notes),
        details=said.details,
        knob=knob,
    )


def _checked_target(design: Design, target: Any, target_delta: float | None) -> np.ndarray:
    """The target ε′ as an array, checked as an ε is (finite, in (0, 10⁶]).

    Raises:
        DesignError: no target ε′, a target outside that range, or a target δ′ outside
            [0, 1].
    """
    if target is None:
        raise DesignError(
            f"design {design.name!r}: no target ε′: give a `target` or a `target: "
            "{epsilon_prime: T}` block in the design"
        )
    t = np.asarray(check_epsilon(target, where=_TARGET_WHERE, array=True), dtype=float)
    if target_delta is not None and not 0 <= target_delta <= 1:
        raise DesignError("target δ′ must be in [0, 1]")
    return t


@dataclasses.dataclass
class _Remarks:
    """What an inversion says besides its numbers, gathered in the order it is said."""

    warnings: list[str]
    notes: list[str]
    details: dict[str, Any] = dataclasses.field(default_factory=dict)


def _certified_side(
    design: Design, analysis: Analysis, t: np.ndarray, calibrated_only: bool, said: _Remarks
) -> Any:
    """The largest mechanism ε the upper bound certifies for the targets ``t`` (NaN where
    none does, or ∞ said in the notes), or None: no mechanism ε to choose, or no upper
    bound."""
    if calibrated_only:
        # nothing to invert: the scheme builds its own mechanism for the design's target
        said.warnings.append(
            f"the {design.scheme} scheme has no mechanism ε to choose: it is calibrated to the "
            "design's target (ε′, δ′), which it meets exactly; inverting it for another "
            "target ε′ (and δ′) rebuilds it for that target"
        )
        said.details["inverse"] = None
        return None
    if analysis.upper is None:
        said.warnings.append("the theory gives no upper bound for this design: no ε is certified")
        said.details["inverse"] = None
        return None
    cert, path = certified_epsilon(analysis, t)
    said.details["inverse"] = path
    if np.any(np.isnan(cert)):
        said.warnings.append(NO_EPSILON_MEETS)
    if np.any(np.isposinf(cert)):
        said.notes.append(EVERY_EPSILON_MEETS)
        said.details["certified_unbounded"] = True
    return np.where(np.isfinite(cert), cert, np.nan)


def _impossible_side(analysis: Analysis, t: np.ndarray, said: _Remarks) -> Any:
    """The mechanism ε above which the lower bound surely breaks the targets ``t`` (NaN
    where it never does), or None without a lower bound."""
    if analysis.lower is None:
        return None
    imp, ipath = impossible_epsilon(analysis, t)
    said.details["inverse_lower"] = ipath
    if np.any(np.isposinf(imp)):
        said.notes.append(LOWER_NEVER_REACHES)
    return np.where(np.isfinite(imp), imp, np.nan)


def _mechanism_delta(
    analysis: Analysis,
    target_delta: float | None,
    certified: Any,
    calibrated_only: bool,
    said: _Remarks,
) -> Any:
    """M's δ for the target δ′ at the certified ε (NaN where any δ < 1 meets it, or it
    cannot be derived), or None: no target δ′, or no δ inversion for the design."""
    if target_delta is None:
        return None
    if certified is None or not analysis.mechanism_delta:
        if not calibrated_only:
            said.warnings.append("no δ inversion is available for this design")
        return None
    d = np.asarray(analysis.mechanism_delta(float(target_delta), certified), dtype=float)
    if np.any(d >= 1):
        said.notes.append(delta_unconstrained(target_delta))
    if np.any(np.isnan(d)):
        said.warnings.append(
            "M's δ for the target cannot be derived from the stated replace-one δ; "
            "give M's δ directly"
        )
    return np.where(d < 1, np.maximum(d, 0.0), np.nan)


def _scheme_remarks(design: Design, analysis: Analysis, t: np.ndarray, said: _Remarks) -> Any:
    """The scheme's own details of the inversion (and its knob, returned), the note on
    releases sharing the certified ε, and the replace-one ratio."""
    knob: Any = None
    if analysis.invert_details is not None:
        said.details.update(analysis.invert_details(t))
        knob = said.details.pop("knob", None)
        said.notes.extend(said.details.pop("notes", ()))
    if design.mechanism is not None and design.mechanism.releases is not None:
        said.notes.append(
            f"the certified ε is the total over all {len(design.mechanism.releases)} releases "
            "(split it among them as you like: their sum must not exceed it)"
        )
    said.details.update(_ratio_details(design.mechanism, analysis))
    return knob


def _ratio_details(mechanism: Mechanism | None, analysis: Analysis) -> dict[str, float]:
    """``epsilon_replace_one_ratio`` for an inversion of an add-remove M under a
    replace-one guarantee at a ratio ε_R/ε other than 1 (the certified ε is M's ε)."""
    if (
        mechanism is not None
        and mechanism.neighbours is Neighbours.ADD_REMOVE
        and mechanism.replace_one_ratio() != 1.0
        and analysis.guarantee_neighbours is Neighbours.REPLACE_ONE
    ):
        return {"epsilon_replace_one_ratio": mechanism.replace_one_ratio()}
    return {}


# --- one ε or one target on a design with a ScalarForm ---------------------------------

#: id(design) -> (design, its analysis and scalar form, or None); the design is kept
#: alive with its entry, so its id cannot be reused while the entry stands.
_SCALAR: dict[int, tuple[Design, tuple[Analysis, ScalarForm] | None]] = {}
_SCALAR_SIZE = 256


def _scalar_analysis(design: Design) -> tuple[Analysis, ScalarForm] | None:
    """The design's analysis at its declared ε and its ``ScalarForm`` (built once per
    design), or None where a single call takes the array path: no form, M with
    releases (their notes follow the call's ε), a scheme calibrated to a target, or
    failed conditions (the array path reports them)."""
    hit = _SCALAR.get(id(design))
    if hit is not None and hit[0] is design:
        return hit[1]
    entry = None
    mech = design.mechanism
    if (
        type(mech) is Mechanism
        and mech.releases is None
        and schemes.get(design.scheme).bind_target is None
    ):
        try:
            analysis = analyse(design, mech)
        except ConditionError:
            analysis = None
        form = analysis.scalar_form() if analysis is not None else None
        if analysis is not None and form is not None:
            entry = (analysis, form)
    if len(_SCALAR) >= _SCALAR_SIZE:
        _SCALAR.clear()
    _SCALAR[id(design)] = (design, entry)
    return entry


def _scalar_bound(design: Design, epsilon: Any) -> BoundResult | None:
    """``bound`` of one ε through the design's ``ScalarForm``, or None (the array path)."""
    entry = _scalar_analysis(design)
    if entry is None:
        return None
    analysis, form = entry
    mech = design.mechanism
    assert mech is not None
    if type(epsilon) is float and 0.0 < epsilon <= MAX_EPSILON:  # check_epsilon's rule
        eps = epsilon
    elif epsilon is None:
        eps = float(mech.epsilon)
    elif np.ndim(epsilon) != 0:
        return None
    else:
        eps = check_epsilon(epsilon, where=_EPSILON_WHERE)
    both = form.bounds(eps)
    if both is None:
        return None
    lower, upper = max(both[0], 0.0), both[1]  # in_range: ε′ >= 0
    delta_prime = form.delta_prime
    if delta_prime is not None:
        delta_prime = min(max(delta_prime, 0.0), 1.0)  # in_range: δ′ in [0, 1]
    reference = eps * form.reference_ratio
    return BoundResult(
        name=design.name,
        scheme=design.scheme,
        epsilon=eps,
        delta=mech.delta,
        lower=lower,
        upper=upper,
        delta_prime=delta_prime,
        verdict=verdict(lower, upper, reference),
        epsilon_replace_one=eps * form.replace_one_ratio,
        guarantee_neighbours=str(analysis.guarantee_neighbours),
        basis=analysis.basis,
        conditions=analysis.conditions,
        warnings=analysis.warnings,
        notes=analysis.notes,
        details={**analysis.details, "reference_epsilon": reference},
    )


def _scalar_invert(
    design: Design, target: float, target_delta: float | None
) -> InvertResult | None:
    """``invert`` of one checked target through the design's ``ScalarForm``, or None."""
    entry = _scalar_analysis(design)
    if entry is None:
        return None
    analysis, form = entry
    if target_delta is not None and form.delta_factor is None:
        return None
    t = float(target)
    cert = form.certified(t)
    imp = form.impossible_above(t)
    if cert is None or imp is None:
        return None
    warnings: tuple[str, ...] = ()
    notes = analysis.notes
    details: dict[str, Any] = {"inverse": "closed-form"}
    if cert != cert:
        warnings += (NO_EPSILON_MEETS,)
    if cert == math.inf:
        notes += (EVERY_EPSILON_MEETS,)
        details["certified_unbounded"] = True
    details["inverse_lower"] = "closed-form"
    if imp == math.inf:
        notes += (LOWER_NEVER_REACHES,)
    delta: Any = None
    if target_delta is not None:
        d = form.mechanism_delta(float(target_delta))
        if d is None or d != d:
            return None
        if d >= 1:
            notes += (delta_unconstrained(target_delta),)
        delta = max(d, 0.0) if d < 1 else math.nan
    details.update(_ratio_details(design.mechanism, analysis))
    return InvertResult(
        name=design.name,
        scheme=design.scheme,
        target_epsilon_prime=t,
        target_delta_prime=target_delta,
        certified=cert if math.isfinite(cert) else math.nan,
        impossible_above=imp if math.isfinite(imp) else math.nan,
        delta=delta,
        basis=analysis.basis,
        warnings=warnings,
        notes=notes,
        details=details,
    )
