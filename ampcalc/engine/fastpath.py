"""Scalar fast path of ``engine.bound``/``engine.invert`` for closed-form designs.

One ε (or one target) on an ``srswor`` or ``poisson`` design is a handful of floating
point operations. Here they run on Python floats instead of 0-d arrays: the same
kernels in the same order (``numeric.amplification``,
``numeric.amplification_inverse``), the same outward rounding (``OUTWARD_ULPS`` steps
of ``math.nextafter``), the same one-sided certificate checks
(``numeric.certify_down``/``certify_up``), so the results are the array path's bit for
bit (``tests/test_fastpath.py`` checks it as a property).

The path is taken only where every non-numeric field of the result does not depend on
ε (the analysis is built once per design and cached) and every evaluation stays in the
``log1p``/``expm1`` branch of the kernels (ε <= ``numeric.LOG_SPACE_FROM``); anything
else (other schemes, group sizes, releases, an add-remove ``srswor`` mechanism, a
replace-one ``poisson`` guarantee, a log-space argument, a certificate needing more
than 64 steps) returns ``None`` and the caller takes the array path.

The elementary functions (``expm1``, ``log1p``, ``exp``, ``log``) are numpy's own loops
called on the one float: the array path's implementation, whichever loops numpy
dispatched to on this CPU (SVML's on AVX-512, the C library's elsewhere), so the two
paths give the same bits by construction. ``math``'s versions differ from numpy's in
the last ulp on a few percent of arguments on some CPUs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc import schemes
from ampcalc.engine.analysis import _EPSILON_WHERE, analyse
from ampcalc.math import numeric
from ampcalc.model.design import MAX_EPSILON, Design, Mechanism, Neighbours, check_epsilon
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import Citation
from ampcalc.model.results import BoundResult, InvertResult, Verdict

_INF = math.inf
_ULPS = numeric.OUTWARD_ULPS
_BIG = numeric.LOG_SPACE_FROM
_SLACK = 1e-12  # engine.VERDICT_SLACK (not imported: engine imports this module)
_DEGRADES = Verdict.DEGRADES.value
_NO_AMPLIFICATION = Verdict.NO_AMPLIFICATION.value
_AMPLIFIES = Verdict.AMPLIFIES.value
_INCONCLUSIVE = Verdict.INCONCLUSIVE.value


class _Fallback(Exception):
    """An evaluation left the closed-form branch: the array path answers."""


def _numpy_scalar(ufunc: Any) -> Callable[[float], float]:
    """``ufunc`` on one float through numpy's array loop (the array path's bits)."""

    def call(x: float) -> float:
        return float(ufunc(x))

    return call


_KERNELS: dict[str, Callable[[float], float]] = {
    "expm1": _numpy_scalar(np.expm1),
    "log1p": _numpy_scalar(np.log1p),
    "log": _numpy_scalar(np.log),
    "exp": _numpy_scalar(np.exp),
}


def _kernels() -> dict[str, Callable[[float], float]]:
    return _KERNELS


_nextafter = math.nextafter


def round_up(x: float) -> float:
    """``numeric.round_up`` of one float (``OUTWARD_ULPS`` = 8 steps, unrolled)."""
    n, i = _nextafter, _INF
    return n(n(n(n(n(n(n(n(x, i), i), i), i), i), i), i), i)


def round_down(x: float) -> float:
    """``numeric.round_down`` of one float (values >= 0 stay >= 0; NaN stays NaN)."""
    if not x >= 0:
        return x
    n, i = _nextafter, -_INF
    return max(n(n(n(n(n(n(n(n(x, i), i), i), i), i), i), i), i), 0.0)


assert _ULPS == 8, "round_up/round_down above are unrolled for 8 ulps"


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one design's results share whatever ε: the analysis without its closures,
    the fields of its results that do not depend on ε, and the kernels."""

    design: Design
    q: float
    ratio: float  # ε_R / ε inside the bound (srswor: 1; poisson, add-remove: 1)
    twice: bool  # the guess is rounded again after the division by ε_R/ε ≠ 1
    delta: float
    guarantee: str
    basis: tuple[Citation, ...]
    conditions: tuple[str, ...]
    notes: tuple[str, ...]  # the fast-path schemes' notes do not depend on ε
    details: dict[str, Any]
    expm1: Callable[[float], float]
    log1p: Callable[[float], float]
    log: Callable[[float], float]
    exp: Callable[[float], float]
    # --- derived once per design (same bits as evaluating them per call) ---
    epsilon: float  # float(M's ε): the ε when the call gives none
    replace_one_ratio: float  # Mechanism.replace_one_ratio()
    delta_prime: float  # δ′ = q·δ rounded up, clipped to [0, 1] (does not depend on ε)
    log_q: float
    minus_one_minus_q: float  # −(1 − q)
    #: the result's fields in the result class's order, ε-free ones filled in: the
    #: per-call values replace their placeholders (``None`` when a result class has a
    #: hook the template cannot reproduce: the constructor is called then)
    bound_fields: dict[str, Any] | None
    invert_fields: dict[str, Any] | None

    # --- the kernels (numeric.amplification, its inverse), ε <= LOG_SPACE_FROM ---

    def amplification(self, eps: float) -> float:
        if not eps <= _BIG:  # the log-space branch (or NaN)
            raise _Fallback
        return self.log1p(self.q * self.expm1(eps))

    def upper(self, eps: float) -> float:
        return round_up(self.amplification(eps * self.ratio))

    def lower(self, eps: float) -> float:
        return round_down(self.amplification(eps * self.ratio))


#: id(design) -> (design, plan or None); the design is kept alive with its entry, so its
#: id cannot be reused while the entry stands.
_CACHE: dict[int, tuple[Design, _Plan | None]] = {}
_CACHE_SIZE = 256


def _plan(design: Design) -> _Plan | None:
    hit = _CACHE.get(id(design))
    if hit is not None and hit[0] is design:
        return hit[1]
    plan = _build(design)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    _CACHE[id(design)] = (design, plan)
    return plan


def _build(design: Design) -> _Plan | None:
    mech = design.mechanism
    if design.scheme not in ("srswor", "poisson") or type(mech) is not Mechanism:
        return None
    if mech.releases is not None or mech.group_size != 1 or mech.epsilon_replace_one is not None:
        return None
    if getattr(mech, "profile", None) is not None:  # a named mechanism: engine.profiles
        return None
    scheme = schemes.get(design.scheme)
    if scheme.bind_target is not None:
        return None
    guarantee = design.guarantee or scheme.guarantees[0]
    if design.scheme == "srswor":
        if guarantee is not Neighbours.REPLACE_ONE or mech.neighbours is Neighbours.ADD_REMOVE:
            return None
        q = design.params.sample / design.params.population
    else:
        if guarantee is not Neighbours.ADD_REMOVE or mech.neighbours is Neighbours.REPLACE_ONE:
            return None
        q = float(design.params.rate)
    ratio = mech.replace_one_ratio()
    if ratio not in (1.0, 2.0):
        return None

    try:
        analysis = analyse(design, mech)
    except ConditionError:
        return None
    if analysis.warnings or analysis.calibrated or analysis.invert_details is not None:
        return None
    kernels = _kernels()
    delta = float(mech.delta)
    if delta == 0.0:
        delta_prime = 0.0
    else:
        delta_prime = min(max(min(round_up(q * delta), 1.0), 0.0), 1.0)
    basis = tuple(analysis.basis)
    notes = tuple(analysis.notes)
    return _Plan(
        design=design,
        q=q,
        ratio=ratio if design.scheme == "srswor" else 1.0,
        # the assembly rounds the guess again only when it divides by ε_R/ε ≠ 1
        twice=design.scheme == "srswor" and ratio != 1.0,
        delta=delta,
        guarantee=str(analysis.guarantee_neighbours),
        basis=basis,
        conditions=tuple(analysis.conditions),
        notes=notes,
        details=dict(analysis.details),
        **kernels,
        epsilon=float(mech.epsilon),
        replace_one_ratio=ratio,
        delta_prime=delta_prime,
        log_q=kernels["log"](q),
        minus_one_minus_q=-(1.0 - q),
        bound_fields=_template(
            BoundResult,
            name=design.name,
            scheme=design.scheme,
            epsilon=None,
            delta=mech.delta,
            lower=None,
            upper=None,
            delta_prime=None,
            verdict=None,
            epsilon_replace_one=None,
            guarantee_neighbours=str(analysis.guarantee_neighbours),
            basis=basis,
            conditions=tuple(analysis.conditions),
            warnings=(),
            notes=notes,
            details={},
        ),
        invert_fields=_template(
            InvertResult,
            name=design.name,
            scheme=design.scheme,
            target_epsilon_prime=None,
            target_delta_prime=None,
            certified=None,
            impossible_above=None,
            delta=None,
            basis=basis,
            warnings=(),
            notes=(),
            details={},
            knob=None,
        ),
    )


_new = object.__new__
_set = object.__setattr__


def _template(cls: type, **fields: Any) -> dict[str, Any] | None:
    """The instance dict of ``cls(**fields)``, or ``None`` where a result built by
    filling in a copy of it would not be what the constructor builds (a
    ``__post_init__``, slots): the caller then calls the constructor."""
    obj = cls(**fields)
    if hasattr(cls, "__post_init__") or not hasattr(obj, "__dict__"):
        return None
    return dict(vars(obj))


def _make(cls: type, template: dict[str, Any] | None, fields: dict[str, Any]) -> Any:
    """``cls(**fields)``: the template's copy with ``fields`` filled in (the same
    instance dict, in the same order, as the dataclass constructor makes)."""
    if template is None:
        return cls(**fields)
    obj: Any = _new(cls)
    _set(obj, "__dict__", {**template, **fields})
    return obj


def bound(design: Design, epsilon: Any) -> BoundResult | None:
    """``engine.bound`` of one ε on a closed-form design, or ``None`` (use the array path)."""
    hit = _CACHE.get(id(design))
    plan = hit[1] if hit is not None and hit[0] is design else _plan(design)
    if plan is None:
        return None
    if type(epsilon) is float and 0.0 < epsilon <= MAX_EPSILON:  # check_epsilon's rule
        eps = epsilon
    elif epsilon is None:
        eps = plan.epsilon
    elif np.ndim(epsilon) != 0:
        return None
    else:
        eps = check_epsilon(epsilon, where=_where())
    ref = eps * plan.ratio  # reference_epsilon: ε_R (srswor) or ε (poisson, add-remove)
    if not ref <= _BIG:  # the log-space branch of the kernel (or NaN): the array path
        return None
    a = plan.log1p(plan.q * plan.expm1(ref))  # numeric.amplification
    n, i = _nextafter, _INF
    upper = n(n(n(n(n(n(n(n(a, i), i), i), i), i), i), i), i)  # round_up
    if a >= 0:  # round_down, then max(·, 0)
        i = -_INF
        lower = max(max(n(n(n(n(n(n(n(n(a, i), i), i), i), i), i), i), i), 0.0), 0.0)
    else:
        lower = max(a, 0.0)
    if lower > ref * (1 + _SLACK):
        verdict = _DEGRADES
    elif lower >= ref * (1 - _SLACK):
        verdict = _NO_AMPLIFICATION
    elif upper < ref:
        verdict = _AMPLIFIES
    else:
        verdict = _INCONCLUSIVE
    result: BoundResult = _make(
        BoundResult,
        plan.bound_fields,
        {
            "epsilon": eps,
            "lower": lower,
            "upper": upper,
            "delta_prime": plan.delta_prime,
            "verdict": verdict,
            # Mechanism.epsilon_replace_one_of (ratio 1 or 2: no stated ε_R)
            "epsilon_replace_one": eps if plan.replace_one_ratio == 1.0 else 2.0 * eps,
            "details": {**plan.details, "reference_epsilon": ref},
        },
    )
    return result


def _where() -> Any:
    return _EPSILON_WHERE


def _certify_down(plan: _Plan, x: float, t: float) -> tuple[float, bool]:
    """``numeric.certify_down`` with 64 steps (more: the array path): the certificate,
    and whether ``upper(x) <= t`` was its last check."""
    ratio, q, log1p, expm1 = plan.ratio, plan.q, plan.log1p, plan.expm1
    n, i = _nextafter, _INF
    for _ in range(64):
        e = x * ratio
        if not e <= _BIG:
            raise _Fallback
        a = log1p(q * expm1(e))
        over = n(n(n(n(n(n(n(n(a, i), i), i), i), i), i), i), i) > t  # upper(x) > t
        if not (over and x > 0):
            return x, not over
        x = n(x, 0.0)
    raise _Fallback


def _certify_up(plan: _Plan, x: float, t: float) -> float:
    """``numeric.certify_up`` with 64 steps (more: the array path)."""
    ratio, q, log1p, expm1 = plan.ratio, plan.q, plan.log1p, plan.expm1
    n, i = _nextafter, -_INF
    isfinite = math.isfinite
    for _ in range(64):
        e = x * ratio
        if not e <= _BIG:
            raise _Fallback
        a = log1p(q * expm1(e))
        if a >= 0:  # round_down(a) < t
            low = max(n(n(n(n(n(n(n(n(a, i), i), i), i), i), i), i), i), 0.0) < t
        else:
            low = a < t
        if not (low and isfinite(x)):
            return x
        x = n(x, _INF)
    raise _Fallback


def invert(design: Design, target: Any, target_delta: float | None) -> InvertResult | None:
    """``engine.invert`` of one target on a closed-form design, or ``None``.

    The caller has checked the target (finite, > 0) and ``target_delta`` (in [0, 1]).
    """
    hit = _CACHE.get(id(design))
    plan = hit[1] if hit is not None and hit[0] is design else _plan(design)
    if plan is None:
        return None
    t = float(target)
    q = plan.q
    # plan.inverse(t) (the same value for both ends)
    if t - plan.log_q <= _BIG:
        inv = plan.log1p(plan.expm1(t) / q)
    else:
        inv = t - plan.log_q + plan.log1p(plan.minus_one_minus_q * plan.exp(-t))
    n = _nextafter
    if inv >= 0:  # round_down(inv)
        i = -_INF
        down = max(n(n(n(n(n(n(n(n(inv, i), i), i), i), i), i), i), i), 0.0)
    else:
        down = inv
    i = _INF
    up = n(n(n(n(n(n(n(n(inv, i), i), i), i), i), i), i), i)  # round_up(inv)
    try:
        guess = down / plan.ratio
        cert, ok = _certify_down(plan, round_down(guess) if plan.twice else guess, t)
        if math.isfinite(cert) and not ok and not plan.upper(cert) <= t:
            cert, _ = _certify_down(plan, cert, t)  # engine.certified_epsilon's re-check
        guess = up / plan.ratio
        imp = _certify_up(plan, round_up(guess) if plan.twice else guess, t)
    except _Fallback:
        return None
    warnings: tuple[str, ...] = ()
    notes = plan.notes
    if math.isfinite(cert):
        details: dict[str, Any] = {"inverse": "closed-form", "inverse_lower": "closed-form"}
        certified = cert
    else:
        details = {"inverse": "closed-form"}
        if cert != cert:
            warnings = (
                "no mechanism ε meets the target: the upper bound exceeds it even as ε → 0",
            )
        if cert == _INF:
            notes += ("every mechanism ε meets the target: the upper bound stays below it",)
            details["certified_unbounded"] = True
        certified = math.nan
        details["inverse_lower"] = "closed-form"
    if imp == _INF:
        notes += ("the lower bound never reaches the target: no ε is known to break it",)
    impossible = imp if math.isfinite(imp) else math.nan
    delta: Any = None
    if target_delta is not None:
        d = round_down(float(target_delta) / q)
        if d >= 1:
            notes += (
                f"target δ′ = {target_delta:g} does not constrain M's δ (any δ < 1 meets it)",
            )
        delta = max(d, 0.0) if d < 1 else math.nan
    result: InvertResult = _make(
        InvertResult,
        plan.invert_fields,
        {
            "target_epsilon_prime": t,
            "target_delta_prime": target_delta,
            "certified": certified,
            "impossible_above": impossible,
            "delta": delta,
            "warnings": warnings,
            "notes": notes,
            "details": details,
        },
    )
    return result
