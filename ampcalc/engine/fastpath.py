"""Scalar fast path of ``engine.bound``/``engine.invert`` for closed-form designs.

One ε (or one target) on an ``srswor`` or ``poisson`` design is a handful of floating
point operations; through the array path it costs ~100 µs of numpy overhead (0-d
arrays, 16 ``np.nextafter`` calls, object-array verdicts). Here the same formulas run
on Python floats with ``math``: the same kernels in the same order
(``numeric.amplification``, ``numeric.amplification_inverse``), the same outward
rounding (``OUTWARD_ULPS`` steps of ``math.nextafter``), the same one-sided
certificate checks (``numeric.certify_down``/``certify_up``), so the results are the
array path's bit for bit (``tests/test_fastpath.py`` checks it as a property).

The path is taken only where every non-numeric field of the result does not depend on
ε (the analysis is built once per design and cached) and every evaluation stays in the
``log1p``/``expm1`` branch of the kernels (ε <= ``numeric.LOG_SPACE_FROM``); anything
else (other schemes, group sizes, releases, an add-remove ``srswor`` mechanism, a
replace-one ``poisson`` guarantee, a log-space argument, a certificate needing more
than 64 steps) returns ``None`` and the caller takes the array path.

The scalar ``math`` functions are used only when they agree with numpy's array loops
on a probe set (they do with glibc and numpy's own loops); where a build's numpy uses
other implementations (e.g. SVML on AVX-512), numpy's loops are called on the scalar
instead, so the results stay the array path's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc import schemes
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
    def call(x: float) -> float:
        return float(ufunc(np.float64(x)))

    return call


def _pick(ufunc: Any, fn: Callable[[float], float], probe: np.ndarray) -> Callable[[float], float]:
    """``fn`` where it reproduces ``ufunc``'s array loop on ``probe``, else the ufunc."""
    with np.errstate(all="ignore"):
        want = ufunc(probe)
    try:
        got = np.array([fn(v) for v in probe.tolist()])
    except (ValueError, OverflowError):
        return _numpy_scalar(ufunc)
    same = (want == got) | (np.isnan(want) & np.isnan(got))
    return fn if bool(np.all(same)) else _numpy_scalar(ufunc)


_KERNELS: dict[str, Callable[[float], float]] = {}


def _kernels() -> dict[str, Callable[[float], float]]:
    if not _KERNELS:
        # a few hundred arguments over the ranges used (no RNG: numpy.random is slow to
        # import, and this runs on the first call of a CLI process)
        pos = np.concatenate(
            [np.geomspace(1e-300, 700.0, 300), np.linspace(0.0, 50.0, 301)[1:] * np.pi / 3]
        )
        unit = np.concatenate([-np.geomspace(1e-300, 0.999999, 100), pos])
        _KERNELS["expm1"] = _pick(np.expm1, math.expm1, pos)
        _KERNELS["log1p"] = _pick(np.log1p, math.log1p, np.concatenate([unit, pos * 1e6]))
        _KERNELS["log"] = _pick(np.log, math.log, np.geomspace(1e-300, 1.0, 300))
        _KERNELS["exp"] = _pick(np.exp, math.exp, -pos)
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
    """What one design's results share whatever ε: the analysis without its closures."""

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

    # --- the kernels (numeric.amplification, its inverse), ε <= LOG_SPACE_FROM ---

    def amplification(self, eps: float) -> float:
        if not eps <= _BIG:  # the log-space branch (or NaN)
            raise _Fallback
        return self.log1p(self.q * self.expm1(eps))

    def upper(self, eps: float) -> float:
        return round_up(self.amplification(eps * self.ratio))

    def lower(self, eps: float) -> float:
        return round_down(self.amplification(eps * self.ratio))

    def inverse(self, t: float) -> float:
        log_q = self.log(self.q)
        if t - log_q <= _BIG:
            return self.log1p(self.expm1(t) / self.q)
        return t - log_q + self.log1p(-(1.0 - self.q) * self.exp(-t))

    # --- numeric.certify_down / certify_up with 64 steps; more: the array path ---

    def certify_down(self, x: float, t: float) -> tuple[float, bool]:
        """The certificate, and whether ``upper(x) <= t`` was its last check."""
        for _ in range(64):
            over = self.upper(x) > t
            if not (over and x > 0):
                return x, not over
            x = math.nextafter(x, 0.0)
        raise _Fallback

    def certify_up(self, x: float, t: float) -> float:
        for _ in range(64):
            if not (self.lower(x) < t and math.isfinite(x)):
                return x
            x = math.nextafter(x, _INF)
        raise _Fallback


#: id(design) -> (design, plan or None); the design is kept alive with its entry, so its
#: id cannot be reused while the entry stands.
_CACHE: dict[int, tuple[Design, _Plan | None]] = {}
_CACHE_SIZE = 256


#: False: every call takes the array path (the tests compare the two).
ENABLED = True


def _plan(design: Design) -> _Plan | None:
    if not ENABLED:
        return None
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
    from ampcalc.engine.analysis import analyse

    try:
        analysis = analyse(design, mech)
    except ConditionError:
        return None
    if analysis.warnings or analysis.calibrated or analysis.invert_details is not None:
        return None
    return _Plan(
        design=design,
        q=q,
        ratio=ratio if design.scheme == "srswor" else 1.0,
        # the assembly rounds the guess again only when it divides by ε_R/ε ≠ 1
        twice=design.scheme == "srswor" and ratio != 1.0,
        delta=float(mech.delta),
        guarantee=str(analysis.guarantee_neighbours),
        basis=tuple(analysis.basis),
        conditions=tuple(analysis.conditions),
        notes=tuple(analysis.notes),
        details=dict(analysis.details),
        **_kernels(),
    )


def _eps_replace_one(plan: _Plan, eps: float, mech: Mechanism) -> float:
    """``Mechanism.epsilon_replace_one_of`` (ratio 1 or 2: no stated ε_R)."""
    r = mech.replace_one_ratio()
    return eps if r == 1.0 else 2.0 * eps


def bound(design: Design, epsilon: Any) -> BoundResult | None:
    """``engine.bound`` of one ε on a closed-form design, or ``None`` (use the array path)."""
    if epsilon is not None and type(epsilon) is not float and np.ndim(epsilon) != 0:
        return None
    plan = _plan(design)
    if plan is None:
        return None
    mech = design.mechanism
    assert mech is not None
    if epsilon is None:
        eps = float(mech.epsilon)
    elif type(epsilon) is float and 0.0 < epsilon <= MAX_EPSILON:  # check_epsilon's rule
        eps = epsilon
    else:
        eps = check_epsilon(epsilon, where=_where())
    try:
        a = plan.amplification(eps * plan.ratio)
    except _Fallback:
        return None
    upper = round_up(a)
    lower = max(round_down(a), 0.0)
    ref = eps * plan.ratio  # reference_epsilon: ε_R (srswor) or ε (poisson, add-remove)
    if plan.delta == 0.0:
        delta_prime = 0.0
    else:
        delta_prime = min(max(min(round_up(plan.q * plan.delta), 1.0), 0.0), 1.0)
    if lower > ref * (1 + _SLACK):
        verdict = _DEGRADES
    elif lower >= ref * (1 - _SLACK):
        verdict = _NO_AMPLIFICATION
    elif upper < ref:
        verdict = _AMPLIFIES
    else:
        verdict = _INCONCLUSIVE
    details = dict(plan.details)
    details["reference_epsilon"] = ref
    return BoundResult(
        name=design.name,
        scheme=design.scheme,
        epsilon=eps,
        delta=mech.delta,
        lower=lower,
        upper=upper,
        delta_prime=delta_prime,
        verdict=verdict,
        epsilon_replace_one=_eps_replace_one(plan, eps, mech),
        guarantee_neighbours=plan.guarantee,
        basis=plan.basis,
        conditions=plan.conditions,
        warnings=(),
        notes=plan.notes,
        details=details,
    )


def _where() -> Any:
    from ampcalc.engine.analysis import _EPSILON_WHERE

    return _EPSILON_WHERE


def invert(design: Design, target: Any, target_delta: float | None) -> InvertResult | None:
    """``engine.invert`` of one target on a closed-form design, or ``None``.

    The caller has checked the target (finite, > 0) and ``target_delta`` (in [0, 1]).
    """
    plan = _plan(design)
    if plan is None:
        return None
    t = float(target)
    try:
        guess = round_down(plan.inverse(t)) / plan.ratio
        cert, ok = plan.certify_down(round_down(guess) if plan.twice else guess, t)
        if math.isfinite(cert) and not ok and not plan.upper(cert) <= t:
            cert, _ = plan.certify_down(cert, t)  # engine.certified_epsilon's re-check
        guess = round_up(plan.inverse(t)) / plan.ratio
        imp = plan.certify_up(round_up(guess) if plan.twice else guess, t)
    except _Fallback:
        return None
    warnings: list[str] = []
    notes = list(plan.notes)
    details: dict[str, Any] = {"inverse": "closed-form"}
    if math.isnan(cert):
        warnings.append(
            "no mechanism ε meets the target: the upper bound exceeds it even as ε → 0"
        )
    if cert == _INF:
        notes.append("every mechanism ε meets the target: the upper bound stays below it")
        details["certified_unbounded"] = True
    certified = cert if math.isfinite(cert) else math.nan
    details["inverse_lower"] = "closed-form"
    if imp == _INF:
        notes.append("the lower bound never reaches the target: no ε is known to break it")
    impossible = imp if math.isfinite(imp) else math.nan
    delta: Any = None
    if target_delta is not None:
        d = round_down(float(target_delta) / plan.q)
        if d >= 1:
            notes.append(
                f"target δ′ = {target_delta:g} does not constrain M's δ (any δ < 1 meets it)"
            )
        delta = max(d, 0.0) if d < 1 else math.nan
    return InvertResult(
        name=design.name,
        scheme=design.scheme,
        target_epsilon_prime=t,
        target_delta_prime=target_delta,
        certified=certified,
        impossible_above=impossible,
        delta=delta,
        basis=plan.basis,
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
        knob=None,
    )
