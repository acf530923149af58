"""dp_accounting's Poisson-subsampled Gaussian PLD, built with vectorised numpy.

``dp_accounting.pld.privacy_loss_distribution.from_gaussian_mechanism(σ, sampling_prob=q)``
spends almost all of its time in a Python loop that inverts the privacy loss one grid
point at a time (about 56,000 points per direction at the default interval 1e-4: 1.5 s
per direction on this machine). The same two PMFs are built here with whole-array
numpy, then handed to the library's own PMF constructors:

- pessimistic (the upper total): the connect-the-dots PMF (Doroshenko, Ghazi, Kamath,
  Kumar and Manurangsi 2022, Algorithm 1; the library's
  ``create_pmf_pessimistic_connect_dots_fixed_gap``) on the library's own ε range, fed
  with ampcalc's outward-rounded hockey-stick values of the two directions instead of
  the library's float ones. Each value is an upper bound on the exact divergence, and
  the connect-the-dots pair's curve is the chord interpolation of those values in e^ε,
  so it lies above the exact (convex in e^ε) curve: the pair dominates the mechanism
  (Zhu, Dong and Wang 2022, dominating pairs), as the library's own construction does;
- optimistic (the lower total): the library's privacy-buckets algorithm (losses rounded
  down to the grid, ``use_connect_dots=False``) with the inverse privacy loss evaluated on
  the whole grid at once; the result is the library's PMF up to float rounding (an
  estimate, as the library's).

``self_compose`` and ``epsilon_for_delta`` are the library's ``self_compose`` and
``get_epsilon_for_delta`` of a dense PMF with their Python loops replaced by array
operations (the same Chernoff truncation bounds, FFT self-convolution and scan), and
``connect_dots_pmf`` is its ``create_pmf_pessimistic_connect_dots_fixed_gap`` without the
detour through a dictionary; the tests compare each with the library.

The two directions (dp_accounting's naming): REMOVE is the pair
((1 − q)N(0, σ²) + qN(−Δ, σ²), N(0, σ²)), ADD the pair (N(0, σ²), (1 − q)N(0, σ²) +
qN(Δ, σ²)). With the Gaussian profile δ_G(x) = H_{e^x}(N(μ, 1) ‖ N(0, 1)), μ = Δ/σ, valid
for every real x:

- REMOVE: H_{e^ε} = q·δ_G(log((e^ε − (1 − q))/q)) for e^ε > 1 − q, else 1 − e^ε
  (Balle, Barthe and Gaboardi 2018, Theorem 8's tightness);
- ADD: H_{e^ε} = (1 − (1 − q)e^ε)·δ_G(ε + log q − log(1 − (1 − q)e^ε)) for
  e^ε < 1/(1 − q), else 0 (factor out 1 − (1 − q)e^ε from Q(S) − e^ε((1 − q)Q(S) + qP(S)));
- δ_G(x) for x < 0 from the symmetric pair: δ_G(x) = 1 − e^x + e^x·δ_G(−x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.accounting.profiles import gaussian_delta
from ampcalc.math.types import FloatArray
from ampcalc.model.limits import LIMITS

_U = 2.0**-53
#: slack for one libm call (exp, log, log1p, expm1), as in ``profiles._LIBM``
_LIBM = 1e-13
#: the library's default tail mass truncation of ``self_compose``
TAIL_MASS_TRUNCATION = 1e-15


def gaussian_delta_signed(mu: float, x: FloatArray) -> FloatArray:
    """An upper bound on δ_G(x) = H_{e^x}(N(μ, 1) ‖ N(0, 1)) for every real x."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    pos = x >= 0.0
    if np.any(pos):
        out[pos] = gaussian_delta(mu, x[pos], upper=True)
    neg = ~pos
    if np.any(neg):
        xn = x[neg]
        with np.errstate(under="ignore", over="ignore"):
            ex = np.exp(xn) * (1.0 + _LIBM)
            one_minus = -np.expm1(xn) * (1.0 + _LIBM) + 4.0 * _U
            out[neg] = one_minus + ex * gaussian_delta(mu, -xn, upper=True) + 4.0 * _U
    res: FloatArray = np.clip(out, 0.0, 1.0)
    return res


def remove_delta(mu: float, q: float, eps: FloatArray) -> FloatArray:
    """Upper bound on the REMOVE direction's hockey-stick divergence at each ε."""
    e = np.asarray(eps, dtype=float)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        ee = np.exp(e)
        u = ee - (1.0 - q)
        u_lo = u - 8.0 * _U * (ee + 1.0) - _LIBM * ee  # e^ε − (1 − q), rounded down
        x_lo = np.log(np.maximum(u_lo, 0.0) / q) - 1e-12 * (
            1.0 + np.abs(np.log(np.maximum(u_lo, 1e-300) / q))
        )
        x_lo = np.where(u_lo > 0.0, x_lo, -np.inf)
        dg = np.where(np.isfinite(x_lo), gaussian_delta_signed(mu, np.nan_to_num(x_lo)), 1.0)
        val = q * dg * (1.0 + 4.0 * _U)
        edge = -np.expm1(e) * (1.0 + _LIBM) + 4.0 * _U  # 1 − e^ε where e^ε <= 1 − q
    res: FloatArray = np.clip(np.where(u > 0.0, val, np.maximum(edge, val)), 0.0, 1.0)
    return res


def add_delta(mu: float, q: float, eps: FloatArray) -> FloatArray:
    """Upper bound on the ADD direction's hockey-stick divergence at each ε."""
    e = np.asarray(eps, dtype=float)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        ee = np.exp(e)
        v = 1.0 - (1.0 - q) * ee
        v_hi = v + 8.0 * _U * (ee + 1.0) + _LIBM * ee  # 1 − (1 − q)e^ε, rounded up
        x = e + math.log(q) - np.log(np.maximum(v_hi, 1e-300))
        x_lo = x - 1e-12 * (1.0 + np.abs(e) + abs(math.log(q)) + np.abs(x))
        dg = gaussian_delta_signed(mu, np.where(v_hi > 0.0, x_lo, 0.0))
        val = np.where(v_hi > 0.0, v_hi * dg * (1.0 + 4.0 * _U), 0.0)
    res: FloatArray = np.clip(val, 0.0, 1.0)
    return res


# --------------------------------------------------------------------------------------
# the accountant's cost, checked before each array is allocated
# --------------------------------------------------------------------------------------


class CostLimitError(ValueError):
    """An accountant step above one of the documented limits (the message names it)."""


def _count(points: float) -> int | float:
    return int(points) if math.isfinite(points) else math.inf


@dataclass(slots=True)
class Meter:
    """The grid points the accountant handles for one total.

    Every distribution built, self-composed or composed is charged *before* its arrays
    are allocated: one array above the ``pld_points`` limit, or a running total above
    the ``accountant_work`` limit, raises ``CostLimitError`` (both in
    ``ampcalc/model/limits.py``), so a run stops before the memory or the time is spent.
    """

    used: int = 0

    def charge(self, points: float, what: str) -> None:
        cap = LIMITS["pld_points"]
        if not points <= cap.value:  # NaN and inf too
            raise CostLimitError(f"{what}: {cap.message(_count(points))}")
        self.used += int(points)
        work = LIMITS["accountant_work"]
        if self.used > work.value:
            raise CostLimitError(f"{what}: {work.message(self.used)}")


def grid_points(lower: float, upper: float, h: float) -> float:
    """Points of the grid h·⌊lower/h⌋, ..., h·⌈upper/h⌉ (``inf`` when not finite)."""
    with np.errstate(over="ignore", invalid="ignore"):
        a, b = float(lower) / h, float(upper) / h
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return float(math.ceil(b) - math.floor(a) + 1)


def loss_points(pls: Any, h: float) -> float:
    """Grid points of the connect-the-dots PMFs of dp_accounting privacy-loss objects
    (one per direction), from their loss bounds alone: nothing is allocated."""
    total = 0.0
    for pl in pls:
        b = pl.connect_dots_bounds()
        total += grid_points(b.epsilon_lower, b.epsilon_upper, h)
    return total


def dense_points(pmf: Any) -> int:
    """Length of the dense array a dp_accounting PMF is (or becomes when composed)."""
    probs = getattr(pmf, "_probs", None)
    if probs is not None:
        return len(probs)
    keys = list(getattr(pmf, "_loss_probs", {}))
    return max(keys) - min(keys) + 1 if keys else 1


def pld_points(pl: Any) -> int:
    """Dense grid points of a ``PrivacyLossDistribution`` (both directions)."""
    n = dense_points(pl._pmf_remove)
    return n if pl._symmetric else n + dense_points(pl._pmf_add)


def self_compose_points(pl: Any, k: int, tail: float = TAIL_MASS_TRUNCATION) -> int:
    """Grid points of ``pl`` self-composed ``k`` times (both directions), from the
    library's Chernoff truncation bounds (``common.compute_self_convolve_bounds``),
    before any FFT."""
    if k <= 1:
        return pld_points(pl)
    total = 0
    pmfs = (pl._pmf_remove,) if pl._symmetric else (pl._pmf_remove, pl._pmf_add)
    for pmf in pmfs:
        probs = np.asarray(pmf.to_dense_pmf()._probs, dtype=float)
        lo, hi = _self_convolve_bounds(probs, k, tail)
        total += max(hi - lo + 1, len(probs))
    return total


def _privacy_loss_objects(sigma: float, sens: float, q: float, pessimistic: bool) -> Any:
    from dp_accounting.pld import privacy_loss_mechanism as plm

    return {
        kind: plm.GaussianPrivacyLoss(
            sigma,
            sensitivity=sens,
            pessimistic_estimate=pessimistic,
            sampling_prob=q,
            adjacency_type=kind,
        )
        for kind in (plm.AdjacencyType.REMOVE, plm.AdjacencyType.ADD)
    }


def connect_dots_pmf(h: float, lo: int, hi: int, deltas: FloatArray) -> Any:
    """The library's pessimistic connect-the-dots PMF for ε = lo·h, ..., hi·h (dense)."""
    from dp_accounting.pld import pld_pmf

    deltas = np.minimum.accumulate(np.clip(np.asarray(deltas, dtype=float), 0.0, 1.0))
    if hi == lo or len(deltas) < 2:
        return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(h, lo, hi, deltas)
    diffs = np.diff(deltas)
    probs = np.zeros_like(deltas)
    probs[0] = 1.0 - deltas[0] + diffs[0] / math.expm1(h)
    probs[1:-1] = (diffs[1:] - diffs[:-1] * math.exp(h)) / math.expm1(h)
    probs[-1] = diffs[-1] / math.expm1(-h)
    probs = np.maximum(0.0, probs)
    # in exact arithmetic the masses sum to 1 − δ_n (the sum telescopes); the float second
    # differences lose up to ~1e-7 of it over 10⁵ points (the library's own PMF too), and
    # a PLD short of mass has H_{e^ε} below 1 − e^ε·(...) for very negative ε: no longer a
    # dominating pair. The shortfall goes to the lowest loss, which raises H only for ε
    # below it (where every pair has H >= 1 − e^ε)
    short = 1.0 - float(deltas[-1]) - math.fsum(probs.tolist())
    if short > 0.0:
        probs[0] += short
    return pld_pmf.DensePLDPmf(h, lo, probs, float(deltas[-1]), True)


def _connect_dots(pl: Any, mu: float, q: float, h: float, remove: bool) -> Any:
    b = pl.connect_dots_bounds()
    hi = math.ceil(b.epsilon_upper / h)
    lo = math.floor(b.epsilon_lower / h)
    grid = np.arange(lo, hi + 1) * h
    deltas = remove_delta(mu, q, grid) if remove else add_delta(mu, q, grid)
    # the hockey-stick divergence falls with ε; the upper bounds are made to fall too
    # (a running maximum from the right keeps each one an upper bound)
    deltas = np.maximum.accumulate(deltas[::-1])[::-1]
    return connect_dots_pmf(h, lo, hi, deltas)


def _vector_inverse(pl: Any, loss: FloatArray, q: float, remove: bool) -> FloatArray:
    """``pl.inverse_privacy_loss`` on a whole array of losses (the library's formula)."""
    loss = np.asarray(loss, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if remove:
            # log(1 + (e^L − 1)/q) = d + log1p(−exp(log(1/q − 1) − d)), d = L − log q
            d = loss - math.log(q)
            l0 = d + np.log1p(-np.exp(math.log(1.0 / q - 1.0) - d))
            edge = np.isclose(loss, math.log(1.0 - q), rtol=1e-9, atol=0.0)
            l0 = np.where(edge, -np.inf, l0)
            x = pl._inverse_privacy_loss_without_subsampling_remove(l0)
        else:
            d = -loss - math.log(q)
            l0 = -(d + np.log1p(-np.exp(math.log(1.0 / q - 1.0) - d)))
            edge = np.isclose(loss, -math.log(1.0 - q), rtol=1e-9, atol=0.0)
            l0 = np.where(edge, np.inf, l0)
            x = pl._inverse_privacy_loss_without_subsampling_add(l0)
    res: FloatArray = np.asarray(x, dtype=float)
    return res


def _privacy_buckets_optimistic(pl: Any, q: float, h: float, remove: bool) -> Any:
    """The library's privacy-buckets PMF (losses rounded down), vectorised."""
    from dp_accounting.pld import pld_pmf

    tail = pl.privacy_loss_tail()
    lower_x, upper_x = tail.lower_x_truncation, tail.upper_x_truncation
    probs: dict[int, float] = {}
    infinity_mass = tail.tail_probability_mass_function.get(math.inf, 0)
    for loss, mass in tail.tail_probability_mass_function.items():
        if loss != math.inf:
            k = math.floor(loss / h)
            probs[k] = probs.get(k, 0.0) + mass
    r0 = math.floor(pl.privacy_loss(lower_x) / h)
    top = pl.privacy_loss(upper_x)
    # the loop's rounded values: r0, r0 − 1, ..., down to the first r with h·r <= L(upper_x)
    r_last = math.floor(top / h)
    while h * r_last > top:
        r_last -= 1
    while h * (r_last + 1) <= top:
        r_last += 1
    r_last = min(r_last, r0)
    rs = np.arange(r0, r_last - 1, -1)
    inner = _vector_inverse(pl, h * rs[:-1].astype(float), q, remove)
    xs = np.concatenate([[lower_x], inner, [upper_x]])
    cdf = np.asarray(pl.mu_upper_cdf(xs), dtype=float)
    masses = cdf[1:] - cdf[:-1]
    # rs runs down by one from r0 to r_last: a dense array from r_last upward
    lo_k = min([r_last, *probs])
    hi_k = max([r0, *probs])
    dense = np.zeros(hi_k - lo_k + 1)
    dense[rs - lo_k] += masses
    for k, m in probs.items():
        dense[k - lo_k] += m
    return pld_pmf.DensePLDPmf(h, lo_k, dense, float(infinity_mass), False)


def sampled_gaussian_pld(
    sigma: float,
    sensitivity: float,
    q: float,
    interval: float,
    *,
    pessimistic: bool,
    meter: Meter | None = None,
) -> Any:
    """The Poisson-subsampled Gaussian's ``PrivacyLossDistribution`` (both directions).

    ``pessimistic``: the connect-the-dots PMFs from ampcalc's upper profile values (as
    ``from_gaussian_mechanism(..., use_connect_dots=True)``); otherwise the optimistic
    privacy-buckets PMFs (as ``pessimistic_estimate=False, use_connect_dots=False``).
    ``meter``: charged with the grid's size (from the loss bounds) before it is built.
    """
    from dp_accounting.pld import privacy_loss_distribution as pld
    from dp_accounting.pld import privacy_loss_mechanism as plm

    pls = _privacy_loss_objects(sigma, sensitivity, q, pessimistic)
    if meter is not None:
        meter.charge(
            loss_points(pls.values(), interval), "the sampled Gaussian's privacy-loss grid"
        )
    rem, add = pls[plm.AdjacencyType.REMOVE], pls[plm.AdjacencyType.ADD]
    if q >= 1.0:
        return pld.from_gaussian_mechanism(
            sigma,
            sensitivity=sensitivity,
            pessimistic_estimate=pessimistic,
            value_discretization_interval=interval,
            use_connect_dots=pessimistic,
        )
    if pessimistic:
        mu = math.nextafter(sensitivity / sigma, math.inf)  # the profile grows with μ
        return pld.PrivacyLossDistribution(
            _connect_dots(rem, mu, q, interval, True),
            _connect_dots(add, mu, q, interval, False),
        )
    return pld.PrivacyLossDistribution(
        _privacy_buckets_optimistic(rem, q, interval, True),
        _privacy_buckets_optimistic(add, q, interval, False),
    )


# --------------------------------------------------------------------------------------
# the library's dense-PMF self-composition and ε-for-δ scan, vectorised
# --------------------------------------------------------------------------------------


def _self_convolve_bounds(probs: FloatArray, k: int, tail: float) -> tuple[int, int]:
    """``common.compute_self_convolve_bounds`` with the 40 orders at once."""
    n = len(probs)
    upper, lower = (n - 1) * k, 0
    if tail == 0:
        return lower, upper
    orders = np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / n
    # the moment generating function at the orders ±j/n, j = 1..20, as Σ probs·b^{±j·i}
    # with b = e^{i/n}: |order·i| <= 20, so nothing overflows or underflows
    base = np.exp(np.arange(n, dtype=float) / n)
    mgf = np.empty(40)
    up, down = probs.copy(), probs.copy()
    for j in range(20):
        up = up * base
        down = down / base
        mgf[20 + j] = up.sum()
        mgf[19 - j] = down.sum()
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_mgf = np.log(mgf)
        bound = (k * log_mgf + math.log(2.0 / tail)) / orders
    for order, b in zip(orders.tolist(), bound.tolist(), strict=True):
        if not math.isfinite(b):
            continue
        if order > 0:
            upper = min(upper, math.ceil(b))
        else:
            lower = max(lower, math.floor(b))
    return lower, upper


def _self_compose_pmf(pmf: Any, k: int, tail: float, meter: Meter | None = None) -> Any:
    from dp_accounting.pld import pld_pmf
    from scipy import fft

    pmf = pmf.to_dense_pmf()
    probs = np.asarray(pmf._probs, dtype=float)
    lo, hi = _self_convolve_bounds(probs, k, tail)
    out_len = hi - lo + 1
    if meter is not None:
        meter.charge(max(out_len, len(probs)), f"{k} releases self-composed")
    n = fft.next_fast_len(max(out_len, len(probs)))
    conv = fft.irfft(fft.rfft(probs, n) ** k, n)
    out = np.roll(conv, -lo)[:out_len]
    inf = tail - math.expm1(k * math.log1p(-pmf._infinity_mass))
    return pld_pmf.DensePLDPmf(
        pmf._discretization, pmf._lower_loss * k + lo, out, inf, pmf._pessimistic_estimate
    )


def self_compose(
    pl: Any, k: int, tail: float = TAIL_MASS_TRUNCATION, meter: Meter | None = None
) -> Any:
    """``pl.self_compose(k)`` (a ``PrivacyLossDistribution``), vectorised; ``meter`` is
    charged with each output's length before its FFT."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    if k == 1:
        return pl
    rem = _self_compose_pmf(pl._pmf_remove, k, tail, meter)
    if pl._symmetric:
        return pld.PrivacyLossDistribution(rem)
    return pld.PrivacyLossDistribution(rem, _self_compose_pmf(pl._pmf_add, k, tail, meter))


def _prefix_to_truncate(arr: FloatArray, threshold: float) -> int:
    """The library's ``_find_prefix_to_truncate`` (its running sum, element by element, is
    ``np.cumsum``'s: the same float additions in the same order)."""
    over = np.cumsum(arr) > threshold
    return int(np.argmax(over)) if over.any() else len(arr)


def _truncate_tails(probs: FloatArray, tail: float, pessimistic: bool) -> tuple[int, Any, float]:
    """``pld_pmf._truncate_tails`` with its two Python loops as array operations."""
    if tail == 0:
        return 0, probs, 0.0
    left = _prefix_to_truncate(probs, tail / 2)
    right = len(probs) - _prefix_to_truncate(np.flip(probs), tail / 2)
    right = max(right, left + 1)
    left_mass = np.sum(probs[:left])
    right_mass = np.sum(probs[right:])
    out = probs[left:right]
    if pessimistic:
        out[0] += left_mass
        return left, out, right_mass
    out[-1] += right_mass
    return left, out, 0.0


def _compose_pmfs(a: Any, b: Any, tail: float) -> Any:
    """``pld_pmf.compose_pmfs(a, b, tail)``: the library's dense composition (the same
    ``fftconvolve``) with its tail truncation vectorised; small sparse pairs go to the
    library."""
    from dp_accounting.pld import pld_pmf
    from scipy import signal

    if isinstance(a, pld_pmf.SparsePLDPmf) and isinstance(b, pld_pmf.SparsePLDPmf):
        return pld_pmf.compose_pmfs(a, b, tail)
    a, b = a.to_dense_pmf(), b.to_dense_pmf()
    a.validate_composable(b)
    lower = a._lower_loss + b._lower_loss
    probs = signal.fftconvolve(a._probs, b._probs)
    inf = a._infinity_mass + b._infinity_mass - a._infinity_mass * b._infinity_mass
    offset, probs, right = _truncate_tails(probs, tail, a._pessimistic_estimate)
    return pld_pmf.DensePLDPmf(
        a._discretization, lower + offset, probs, inf + right, a._pessimistic_estimate
    )


def compose(
    total: Any, one: Any, meter: Meter | None = None, tail: float = TAIL_MASS_TRUNCATION
) -> Any:
    """``total.compose(one)`` (``PrivacyLossDistribution``s; ``total`` may be ``None``),
    the library's algorithm with array operations; ``meter`` is charged with the
    convolution's length (the two dense lengths, per direction) before it is computed."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    if total is None:
        return one
    if meter is not None:
        meter.charge(pld_points(total) + pld_points(one), "the running total composed")
    rem = _compose_pmfs(total._pmf_remove, one._pmf_remove, tail)
    if total._symmetric and one._symmetric:
        return pld.PrivacyLossDistribution(rem)
    return pld.PrivacyLossDistribution(rem, _compose_pmfs(total._pmf_add, one._pmf_add, tail))


def _epsilon_for_delta_pmf(pmf: Any, delta: float) -> float:
    """``DensePLDPmf.get_epsilon_for_delta``: the same scan as cumulative sums."""
    pmf = pmf.to_dense_pmf()
    inf = float(pmf._infinity_mass)
    if inf > delta:
        return math.inf
    h = pmf._discretization
    probs = np.flip(np.asarray(pmf._probs, dtype=float))
    n = len(probs)
    losses = (pmf._lower_loss + n - 1 - np.arange(n)) * h
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        mu_after = inf + np.cumsum(probs)
        ml_after = np.cumsum(np.exp(-losses) * probs)
        mu_before = np.concatenate([[inf], mu_after[:-1]])
        ml_before = np.concatenate([[0.0], ml_after[:-1]])
        stop = (
            (mu_before > delta)
            & (ml_before > 0)
            & (np.log((mu_before - delta) / np.where(ml_before > 0, ml_before, 1.0)) >= losses)
        )
        early = (mu_after >= delta) & (ml_after == 0)
    j_stop = int(np.argmax(stop)) if stop.any() else n
    j_early = int(np.argmax(early)) if early.any() else n
    if j_early < j_stop:
        return max(0.0, float(losses[j_early]))
    if j_stop < n:
        mu, ml = float(mu_before[j_stop]), float(ml_before[j_stop])
    else:
        mu, ml = float(mu_after[-1]), float(ml_after[-1])
    if mu <= ml + delta:
        return 0.0
    return math.log((mu - delta) / ml)


def epsilon_for_delta(pl: Any, delta: float) -> float:
    """``pl.get_epsilon_for_delta(delta)`` (both directions), vectorised."""
    e = _epsilon_for_delta_pmf(pl._pmf_remove, delta)
    if pl._symmetric:
        return e
    return max(e, _epsilon_for_delta_pmf(pl._pmf_add, delta))


def fft_noise(pl: Any) -> float:
    """An allowance for the FFT's rounding in δ computed from a composed PLD.

    The float error of an FFT self-composition shows as tiny negative masses where the
    true mass is 0; their size times √(bins) is a noise level per sum of masses. Composed
    δ moved by about 1e-13 (at δ = 1e-6, 1000 releases, interval 1e-4) when the inputs
    moved by 1e-11 relative, about 50 times that level: the allowance is 1000 times it
    (an engineering margin, not a proof)."""
    worst = 0.0
    for pmf in (pl._pmf_remove, pl._pmf_add):
        pr = np.asarray(pmf.to_dense_pmf()._probs, dtype=float)
        if len(pr):
            worst = max(worst, max(0.0, -float(pr.min())) * math.sqrt(len(pr)))
    return 1000.0 * worst
