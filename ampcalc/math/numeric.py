"""Stable kernels, outward rounding and monotone inversion shared by every scheme.

Every function here is vectorised (numpy arrays in, arrays out) and pure. Nothing
here imports scipy; schemes that need it import it inside the function that does.

Rounding has a named direction: ``round_up`` for guarantees (upper bounds,
``impossible_above``), ``round_down`` for lower bounds and certified inverses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ampcalc.math.types import ArrayLike, FloatArray

#: ulps added/subtracted by ``round_up``/``round_down``. The kernels below are
#: accurate to < 4 ulps (expm1, one product, log1p, condition number <= 1 and the
#: rounding of q = m/N); 8 leaves a margin and costs ~2e-15 relative.
OUTWARD_ULPS = 8

#: Above this ε, e^ε overflows float64; the kernels switch to log-space forms.
LOG_SPACE_FROM = 700.0


def _nextafter_n(x: FloatArray, toward: float, n: int) -> FloatArray:
    # the largest float steps to ±inf: the right outward value, not an overflow to report
    with np.errstate(over="ignore"):
        for _ in range(n):
            x = np.nextafter(x, toward)
    return x


#: bit pattern of +inf; a float64 with its sign bit clear and bits <= this is in [+0, inf].
_INF_BITS = int(np.array(np.inf).view(np.int64))


def _sign_clear_bits(x: FloatArray, top: int) -> np.ndarray | None:
    """``x``'s bit patterns if every element is in [+0, inf] with bits <= ``top``, else None.

    On such floats ``n`` steps of ``nextafter`` are ``n`` steps of the integer bit
    pattern (IEEE 754 orders non-negative floats as their patterns): the fast path of
    ``round_up``/``round_down``, one pass instead of ``n``. -0.0, negatives and NaN
    (sign bit set, or a pattern above inf's) take the elementwise ``nextafter`` loop.
    """
    if x.ndim == 0 or x.size == 0 or x.dtype != np.float64:
        return None
    bits = np.ascontiguousarray(x).view(np.int64)
    if int(bits.min()) < 0 or int(bits.max()) > top:
        return None
    return bits


def round_up(x: ArrayLike, ulps: int = OUTWARD_ULPS) -> FloatArray:
    """Move every value ``ulps`` floats toward +inf (a guarantee never goes low)."""
    x = np.asarray(x, dtype=float)
    bits = _sign_clear_bits(x, _INF_BITS - ulps)  # the top ulps floats step to inf
    if bits is not None:
        return (bits + ulps).view(np.float64)
    return _nextafter_n(x, np.inf, ulps)


def round_down(x: ArrayLike, ulps: int = OUTWARD_ULPS) -> FloatArray:
    """Move every value ``ulps`` floats toward -inf, never below 0 for values >= 0."""
    x = np.asarray(x, dtype=float)
    bits = _sign_clear_bits(x, _INF_BITS)
    if bits is not None:  # all in [+0, inf]: ulps patterns down, floored at +0
        down: np.ndarray = bits - ulps
        np.maximum(down, 0, out=down)  # in place: one array of x's size, not two
        return down.view(np.float64)
    return np.where(x >= 0, np.maximum(_nextafter_n(x, -np.inf, ulps), 0.0), x)


def amplification(q: ArrayLike, eps: ArrayLike) -> FloatArray:
    """A(q, ε) = log(1 + q(e^ε − 1)), the amplification kernel (no outward rounding).

    Basis: Bun et al., Theorem 2.2 eq. (3) and spec §0.
    Numerics: ``log1p(q*expm1(ε))`` for ε <= 700 (relative error a few ulps, also
        at ε = 1e-12); ``logaddexp(log q + ε, log1p(−q))`` above, which is
        overflow-free (absolute error a few ulps of max(ε, |log q|)).

    Args:
        q: rate in (0, 1], any shape. eps: ε >= 0, broadcast against q.
    Returns:
        A(q, ε), broadcast shape.
    """
    q = np.asarray(q, dtype=float)
    eps = np.asarray(eps, dtype=float)
    q, eps = np.broadcast_arrays(q, eps)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if eps.ndim and eps.size and float(eps.max()) <= LOG_SPACE_FROM:
            # every ε in the first branch (NaN fails the test): no masks, same values
            return _log1p_q_expm1(q, eps)
        # the first branch everywhere (elementwise, so the same values where it is
        # used: no gathers of the many small ε), then the few large ε replaced
        out = _log1p_q_expm1(q, eps)
        big = ~(eps <= LOG_SPACE_FROM)
        if np.any(big):
            out[big] = np.logaddexp(np.log(q[big]) + eps[big], np.log1p(-q[big]))
    return out


def _direct(q: ArrayLike, eps: ArrayLike) -> FloatArray:
    """A(q, ε) = ``log1p(q * expm1(ε))``, the kernel's direct branch (ε <= 700), on
    0-d arrays or on Python floats (``Amplification.at``): numpy's loops either way."""
    out: FloatArray = np.log1p(q * np.expm1(eps))
    return out


def _log1p_q_expm1(q: np.ndarray, eps: np.ndarray) -> FloatArray:
    """``log1p(q * expm1(ε))`` elementwise (q and ε broadcast to one shape), computed in
    one array of the result's size: the same operations, so the same values."""
    if eps.ndim == 0:
        return np.asarray(_direct(q, eps), dtype=float)
    out: FloatArray = np.expm1(eps, dtype=float)
    np.multiply(q, out, out=out)
    np.log1p(out, out=out)
    return out


def _log_space_slack(q: FloatArray, eps: FloatArray) -> FloatArray:
    """Absolute error allowance of the log-space branch (0 where it is not used)."""
    q, eps = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(eps, dtype=float))
    out = np.zeros(eps.shape, dtype=float)
    big = eps > LOG_SPACE_FROM
    if np.any(big):  # only there: log q of the few large ε, not of every point
        with np.errstate(divide="ignore"):
            scale = np.maximum(np.abs(eps[big]), np.abs(np.log(q[big])))
        out[big] = 4.0 * np.spacing(scale)
    return out


def _all_small(eps: ArrayLike) -> bool:
    """Every ε <= LOG_SPACE_FROM (an array): the log-space slack is 0 everywhere."""
    e = np.asarray(eps)
    return bool(e.ndim and e.size and e.dtype.kind == "f" and float(e.max()) <= LOG_SPACE_FROM)


def amplification_upper(q: ArrayLike, eps: ArrayLike) -> FloatArray:
    """A(q, ε) rounded outward (up): never below the exact value."""
    if _all_small(eps):  # slack 0: x + 0.0 is x (A >= 0 is never -0.0)
        return round_up(amplification(q, eps))
    slack = _log_space_slack(q, eps)
    return round_up(amplification(q, eps) + slack)


def amplification_lower(q: ArrayLike, eps: ArrayLike) -> FloatArray:
    """A(q, ε) rounded down: never above the exact value."""
    if _all_small(eps):
        return round_down(amplification(q, eps))
    slack = _log_space_slack(q, eps)
    return round_down(amplification(q, eps) - slack)


def amplification_bounds(q: ArrayLike, eps: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """(``amplification_lower``, ``amplification_upper``) of (q, ε) from one evaluation
    of A(q, ε): the same values as the two calls, for half the work (a tight result
    rounds one formula both ways)."""
    a = amplification(q, eps)
    if _all_small(eps):
        return round_down(a), round_up(a)
    slack = _log_space_slack(q, eps)
    return round_down(a - slack), round_up(a + slack)


def amplification_inverse(q: ArrayLike, eps_prime: ArrayLike) -> FloatArray:
    """A⁻¹(q, ε′) = log(1 + (e^{ε′} − 1)/q): the ε with A(q, ε) = ε′ (not rounded).

    Basis: Hu et al., §3 (the inverse of Theorem 1); spec §0.
    Numerics: ``log1p(expm1(ε′)/q)`` while ε′ − log q <= 700, else the overflow-free
        ``ε′ − log q + log1p(−(1 − q)e^{−ε′})`` (switching on ε′ − log q, not on ε′:
        with q = 1e-9 the first form overflows from ε′ ≈ 689).
    """
    q = np.asarray(q, dtype=float)
    t = np.asarray(eps_prime, dtype=float)
    q, t = np.broadcast_arrays(q, t)
    with np.errstate(divide="ignore"):
        log_q = np.log(q)
    small = (t - log_q) <= LOG_SPACE_FROM
    out = np.empty(q.shape, dtype=float)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out[small] = _inverse_direct(q[small], t[small])
        big = ~small
        if np.any(big):
            out[big] = _inverse_log_space(q[big], log_q[big], t[big])
    return out


def _inverse_direct(q: ArrayLike, t: ArrayLike) -> FloatArray:
    """A⁻¹(q, T) = ``log1p(expm1(T)/q)`` (T − log q <= 700), arrays or Python floats."""
    out: FloatArray = np.log1p(np.expm1(t) / q)
    return out


def _inverse_log_space(q: ArrayLike, log_q: ArrayLike, t: ArrayLike) -> FloatArray:
    """A⁻¹(q, T) = ``T − log q + log1p(−(1 − q)e^{−T})``, overflow-free (T − log q > 700)."""
    out: FloatArray = t - log_q + np.log1p(-(1.0 - q) * np.exp(-t))
    return out


def neg_log1m(p: ArrayLike, eps: ArrayLike) -> FloatArray:
    """−log(1 − p(1 − e^{−ε})), the removal-direction kernel (no rounding).

    Stable: ``−log1p(p·expm1(−ε))`` while p(1 − e^{−ε}) <= 1/2, else
    ``−logaddexp(log1p(−p), log p − ε)`` (exact at p = 1, where it equals ε).
    """
    p = np.asarray(p, dtype=float)
    eps = np.asarray(eps, dtype=float)
    p, eps = np.broadcast_arrays(p, eps)
    out = np.empty(p.shape, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        u = -p * np.expm1(-eps)
        near = u <= 0.5
        out[near] = -np.log1p(-u[near])
        far = ~near
        out[far] = -np.logaddexp(np.log1p(-p[far]), np.log(p[far]) - eps[far])
    return out


# --------------------------------------------------------------------------------------
# Monotone inversion by bisection on the bit patterns of floats (exact to one float).
# --------------------------------------------------------------------------------------

_TINY = 1e-300
_HUGE = 1e300


def _as_bits(x: FloatArray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).view(np.int64)


def _from_bits(b: np.ndarray) -> FloatArray:
    return np.asarray(b, dtype=np.int64).view(np.float64)


def first_true(
    predicate: Callable[[FloatArray], np.ndarray],
    lo: ArrayLike,
    hi: ArrayLike,
) -> FloatArray:
    """Smallest float x in [lo, hi] with ``predicate(x)`` true, elementwise.

    ``predicate`` must be monotone (false, then true) on positive floats and
    vectorised. ``lo``/``hi`` are positive; where ``predicate(hi)`` is false the
    result is ``inf``; where ``predicate(lo)`` is true it is ``lo``. Bisection runs on
    the integer bit patterns of the floats, so it ends on adjacent floats after at
    most 64 vectorised calls: the answer is exact to the last bit for the predicate
    as evaluated (no tolerance, no midpoint returned).
    """
    lo = np.asarray(lo, dtype=float).copy()
    hi = np.asarray(hi, dtype=float).copy()
    lo, hi = np.broadcast_arrays(lo, hi)
    lo = lo.copy()
    hi = hi.copy()
    at_lo = np.asarray(predicate(lo), dtype=bool)
    at_hi = np.asarray(predicate(hi), dtype=bool)
    lo_b = _as_bits(lo).copy()
    hi_b = _as_bits(hi).copy()
    active = ~at_lo & at_hi
    for _ in range(80):
        if not np.any(active & (hi_b - lo_b > 1)):
            break
        mid_b = lo_b + (hi_b - lo_b) // 2
        mid = _from_bits(mid_b)
        ok = np.asarray(predicate(mid), dtype=bool)
        move = active & (hi_b - lo_b > 1)
        hi_b = np.where(move & ok, mid_b, hi_b)
        lo_b = np.where(move & ~ok, mid_b, lo_b)
    out = _from_bits(hi_b).copy()
    out = np.where(at_lo, lo, out)
    out = np.where(~at_lo & ~at_hi, np.inf, out)
    return out


def largest_feasible(
    func: Callable[[FloatArray], FloatArray],
    target: ArrayLike,
    lo: ArrayLike,
    hi: ArrayLike,
) -> FloatArray:
    """Largest float x with ``func(x) <= target``, for ``func`` increasing.

    The returned x satisfies ``func(x) <= target`` as evaluated (the feasible end of
    the bisection, never a midpoint). The bracket is widened (lo down to 1e-300, hi up
    to 1e300) until it holds; ``nan`` where even ``func(1e-300) > target`` (nothing is
    feasible), ``inf`` where ``func(1e300) <= target`` (everything is).
    """
    t = np.asarray(target, dtype=float)
    lo, hi, t = np.broadcast_arrays(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float), t)
    lo, hi = _widen(lambda x: func(x) > t, lo.copy(), hi.copy())
    x = first_true(lambda x: func(x) > t, lo, hi)
    below = np.where(np.isfinite(x), np.nextafter(x, 0.0), x)
    # first_true returned lo where lo is already infeasible
    nothing = np.asarray(func(lo) > t) & (x == lo)
    below = np.where(nothing, np.nan, below)
    return below


def smallest_reaching(
    func: Callable[[FloatArray], FloatArray],
    target: ArrayLike,
    lo: ArrayLike,
    hi: ArrayLike,
) -> FloatArray:
    """Smallest float x with ``func(x) >= target``, for ``func`` increasing (or inf)."""
    t = np.asarray(target, dtype=float)
    lo, hi, t = np.broadcast_arrays(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float), t)
    lo, hi = _widen(lambda x: func(x) >= t, lo.copy(), hi.copy())
    return first_true(lambda x: func(x) >= t, lo, hi)


def _widen(
    predicate: Callable[[FloatArray], np.ndarray], lo: FloatArray, hi: FloatArray
) -> tuple[FloatArray, FloatArray]:
    lo = np.where(lo > 0, lo, _TINY)
    hi = np.maximum(hi, lo)
    for _ in range(1100):
        bad = np.asarray(predicate(lo), dtype=bool) & (lo > _TINY)
        if not np.any(bad):
            break
        lo = np.where(bad, np.maximum(lo / 16.0, _TINY), lo)
    for _ in range(1100):
        bad = ~np.asarray(predicate(hi), dtype=bool) & (hi < _HUGE)
        if not np.any(bad):
            break
        hi = np.where(bad, np.minimum(hi * 16.0, _HUGE), hi)
    return lo, hi


def certify_down(
    func: Callable[[FloatArray], FloatArray], candidate: ArrayLike, target: ArrayLike
) -> FloatArray:
    """Step a closed-form inverse down until ``func(x) <= target`` holds as evaluated.

    Used after a closed-form inverse (rounded down) so that a certificate is feasible
    by construction, not by the accuracy of the closed form. Falls back to bisection
    if a few steps do not suffice.
    """
    x: FloatArray = np.asarray(candidate, dtype=float).copy()
    t = np.broadcast_to(np.asarray(target, dtype=float), x.shape)
    for _ in range(64):
        bad = np.asarray(func(x) > t) & (x > 0)
        if not np.any(bad):
            return x
        x = np.where(bad, np.nextafter(x, 0.0), x)
    bad = np.asarray(func(x) > t)
    if np.any(bad):
        x = np.where(bad, largest_feasible(func, t, _TINY, x), x)
    return x


def certify_up(
    func: Callable[[FloatArray], FloatArray], candidate: ArrayLike, target: ArrayLike
) -> FloatArray:
    """Step an inverse of a lower bound up until ``func(x) >= target`` as evaluated."""
    x: FloatArray = np.asarray(candidate, dtype=float).copy()
    t = np.broadcast_to(np.asarray(target, dtype=float), x.shape)
    for _ in range(64):
        bad = np.asarray(func(x) < t) & np.isfinite(x)
        if not np.any(bad):
            return x
        x = np.where(bad, np.nextafter(x, np.inf), x)
    bad = np.asarray(func(x) < t) & np.isfinite(x)
    if np.any(bad):
        x = np.where(bad, smallest_reaching(func, t, x, _HUGE), x)
    return x


# --------------------------------------------------------------------------------------
# One float at a time: the operations above on Python floats, for a single evaluation
# (``engine.bound``/``engine.invert`` of one ε). Elementary functions are numpy's loops
# called on the float, so the bits are those of the array forms (tests/test_fastpath.py).
# --------------------------------------------------------------------------------------

_nextafter = math.nextafter
_INF = math.inf


def round_up_float(x: float, ulps: int = OUTWARD_ULPS) -> float:
    """``round_up`` of one float."""
    for _ in range(ulps):
        x = _nextafter(x, _INF)
    return x


def round_down_float(x: float, ulps: int = OUTWARD_ULPS) -> float:
    """``round_down`` of one float (values >= 0 stay >= 0; negatives and NaN as they are)."""
    if not x >= 0:
        return x
    for _ in range(ulps):
        x = _nextafter(x, -_INF)
    return max(x, 0.0)


#: steps ``certify_down_float``/``certify_up_float`` take before giving up (the array
#: forms then bisect): the same count as ``certify_down``/``certify_up``.
CERTIFY_STEPS = 64


def certify_down_float(
    func: Callable[[float], float | None], candidate: float, target: float
) -> float | None:
    """``certify_down`` of one float: ``candidate`` stepped down until ``func(x) <=
    target`` as evaluated (or x = 0). None where ``func`` gives None (a value it does
    not evaluate one float at a time) or ``CERTIFY_STEPS`` steps do not suffice."""
    x = candidate
    for _ in range(CERTIFY_STEPS):
        value = func(x)
        if value is None:
            return None
        if not (value > target and x > 0):
            return x
        x = _nextafter(x, 0.0)
    return None


def certify_up_float(
    func: Callable[[float], float | None], candidate: float, target: float
) -> float | None:
    """``certify_up`` of one float: ``candidate`` stepped up until ``func(x) >= target``
    as evaluated (or x is infinite); None as in ``certify_down_float``."""
    x = candidate
    for _ in range(CERTIFY_STEPS):
        value = func(x)
        if value is None:
            return None
        if not (value < target and math.isfinite(x)):
            return x
        x = _nextafter(x, _INF)
    return None


@dataclass(frozen=True)
class Amplification:
    """A(q, ε) = log(1 + q(e^ε − 1)) at a fixed rate q: the bounds it gives (rounded
    outward), its closed-form inverse, and the same on one float.

    Basis: Bun et al., Theorem 2.2 eq. (3); Hu et al., §3 (the inverse).
    Numerics: as ``amplification``/``amplification_inverse``; ``at`` evaluates only
        the direct branch (ε <= ``LOG_SPACE_FROM``) and gives None elsewhere.

    Attributes:
        rate: q in (0, 1].
    """

    rate: float

    def upper(self, eps: FloatArray) -> FloatArray:
        """A(q, ε) rounded up (``amplification_upper``)."""
        return amplification_upper(self.rate, eps)

    def lower(self, eps: FloatArray) -> FloatArray:
        """A(q, ε) rounded down (``amplification_lower``)."""
        return amplification_lower(self.rate, eps)

    def bounds(self, eps: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(``lower``, ``upper``) from one evaluation (``amplification_bounds``)."""
        return amplification_bounds(self.rate, eps)

    def inverse(self, target: FloatArray) -> FloatArray:
        """The ε with A(q, ε) = target, unrounded (``amplification_inverse``)."""
        return amplification_inverse(self.rate, target)

    def at(self, eps: float) -> float | None:
        """A(q, ε) of one float, unrounded; None outside the direct branch (or NaN)."""
        if not eps <= LOG_SPACE_FROM:
            return None
        return float(_direct(self.rate, eps))

    def inverse_at(self, target: float) -> float:
        """``inverse`` of one float."""
        q = self.rate
        log_q = float(np.log(q))
        if target - log_q <= LOG_SPACE_FROM:
            return float(_inverse_direct(q, target))
        return float(_inverse_log_space(q, log_q, target))
