"""The tilted mean E_t̃[m] of a size distribution, with an enclosure of the exact value
(Bun et al., Theorem 3.1: the tilted distribution t̃(m) ∝ e^{εm} t(m))."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.errors import DesignError, Where
from ampcalc.model.limits import LIMITS
from ampcalc.schemes._size_distribution import ULP, SizeDistribution

#: tails of the tilted pmf left out of a window carry at most e^{-TAIL_LOG} of its mass
TAIL_LOG = 60.0
#: the normal closed form is used when the tilted centre is this many sd inside [0, N]
INTERIOR_SD = 12.0
CHUNK = 1 << 20
WINDOW_MAX = LIMITS["size_window"].value


# --------------------------------------------------------------------------------------
# The tilted mean E_t̃[m], with an enclosure [lo, hi] of the exact value
# --------------------------------------------------------------------------------------


def _phi(u: np.ndarray) -> np.ndarray:
    """φ(u) = 1/expm1(u) − 1/u + 1/2 (smooth; series for small u)."""
    u = np.asarray(u, dtype=float)
    out = np.empty_like(u)
    small = u < 0.05
    us = u[small]
    out[small] = us / 12 - us**3 / 720 + us**5 / 30240 - us**7 / 1209600
    ub = u[~small]
    with np.errstate(over="ignore"):
        out[~small] = 1.0 / np.expm1(ub) - 1.0 / ub + 0.5
    return out


class _LogWeights(Protocol):
    """A log-concave pmf on {0..N}, known up to a factor: its mode, its log-weights
    w(m) − w(mode) and a bound on their rounding error (what ``_window_mean`` sums)."""

    @property
    def mode(self) -> int:
        """The pmf's mode."""
        ...

    def log_weights(self, a: int, b: int) -> np.ndarray:
        """w(m) − w(mode) for m = a..b."""
        ...

    def weight_error(self, w: np.ndarray) -> float:
        """An error bound of the window sums, relative, from the log-weights ``w``."""
        ...


def _window_mean(weights: _LogWeights, n: int, h: int) -> tuple[float, float, float, float, float]:
    """Mean of a log-concave pmf on {0..n} from a window around its mode.

    The window grows until the tails (geometric bound from the end slopes, valid by
    log-concavity) carry at most e^{-TAIL_LOG} of the window's mass. Returns (mean in the
    window, N − that mean computed directly, its log (log-space, no underflow), log of the
    relative tail mass bound τ, relative error bound of the window sums).
    """
    mode = weights.mode
    h = max(int(h), 2)
    while True:
        a, b = max(0, mode - h), min(n, mode + h)
        if b - a + 1 > WINDOW_MAX:
            raise DesignError(
                LIMITS["size_window"].message(b - a + 1),
                where=Where(field="sampling.size"),
            )
        lo_x, hi_x = max(0, a - 1), min(n, b + 1)
        w_ext = weights.log_weights(lo_x, hi_x)
        w = w_ext[a - lo_x : a - lo_x + (b - a + 1)]
        log_tail = -np.inf
        ok = True
        if b < n:
            s = w_ext[-1] - w[-1]
            if s >= 0:
                ok = False
            else:
                log_tail = np.logaddexp(log_tail, w[-1] + s - np.log(-np.expm1(s)))
        if a > 0:
            s = w_ext[0] - w[0]
            if s >= 0:
                ok = False
            else:
                log_tail = np.logaddexp(log_tail, w[0] + s - np.log(-np.expm1(s)))
        if (ok and log_tail <= -TAIL_LOG) or (a == 0 and b == n):
            break
        h *= 2
    m = np.arange(a, b + 1, dtype=float)
    p = np.exp(w)
    total = float(np.sum(p))
    mean = float(np.sum(m * p)) / total
    gap = float(np.sum((n - m) * p)) / total  # N − mean, accurate when the mean is near N
    inside = m < n
    if np.any(inside):
        lw = w[inside] + np.log(n - m[inside])
        top = float(np.max(lw))
        log_gap = top + math.log(float(np.sum(np.exp(lw - top)))) - math.log(total)
    else:
        log_gap = -math.inf
    log_tau = float(log_tail) - math.log(total)
    k = b - a + 1
    rel = (
        2.0 * float(weights.weight_error(w))
        + (64.0 + 4.0 * math.log2(k + 2)) * ULP
        + 2 * k * math.exp(-50)
    )
    return mean, gap, log_gap, log_tau, rel


@dataclass(frozen=True, slots=True)
class _NormalWeights:
    """The tilted normal on the integers: w(m) = −(m − c)²/(2σ²), centre c = μ + εσ²."""

    c: float
    mode: int
    two_var: float

    def log_weights(self, a: int, b: int) -> np.ndarray:
        m = np.arange(a, b + 1, dtype=float)
        out: np.ndarray = -((m - self.c) ** 2 - (self.mode - self.c) ** 2) / self.two_var
        return out

    def weight_error(self, w: np.ndarray) -> float:
        # each exponent is a difference of squares, ((mode − c)² − (m − c)²)/(2σ²): a few
        # ulps of (m − c)² + (mode − c)² = 2(mode − c)² + |w|·2σ², not of w. When the mass
        # sits at N (or 0) N − E (or E) is carried by terms with |w| far above 50, so
        # their error counts (N = 16, σ = 1.84, c = 883: 3.7e-13 over the old allowance)
        far = 2.0 * (self.mode - self.c) ** 2 / self.two_var + float(np.max(np.abs(w)))
        return 8 * ULP * (50.0 + 1.0) + 4 * ULP * far


def _normal_window(mean: float, sd: float, n: int, eps: float) -> tuple[float, ...]:
    c = mean + eps * sd * sd
    if not abs(c) < 1e150:  # (m − c)² would overflow
        raise OverflowError(c)
    mode = int(min(n, max(0, round(c))))
    d = c - n if c > n else 0.0
    h = math.sqrt(2 * TAIL_LOG) * sd
    if d > 0:
        h = min(h, TAIL_LOG * sd * sd / d)
    weights = _NormalWeights(c=c, mode=mode, two_var=2.0 * sd * sd)
    return _window_mean(weights, n, math.ceil(h) + 2)


@dataclass(frozen=True, slots=True)
class _PoissonWeights:
    """The tilted Poisson on {0..N}: rate λ′ = λe^ε, w(m) = m·log λ′ − log m!."""

    log_lam: float
    mode: int
    n: int

    def log_weights(self, a: int, b: int) -> np.ndarray:
        log_lam, mode = self.log_lam, self.mode
        out = np.zeros(b - a + 1)
        if b > mode:
            i = np.arange(mode + 1, b + 1, dtype=float)
            out[mode - a + 1 :] = np.cumsum(log_lam - np.log(i))
        if a < mode:
            i = np.arange(mode, a, -1, dtype=float)  # mode, mode-1, ..., a+1
            out[: mode - a][::-1] = np.cumsum(np.log(i) - log_lam)
        return out

    def weight_error(self, w: np.ndarray) -> float:
        # each term: a difference of two logs (a few ulps of max(|log m|, |log λ'|)); the
        # partial sums run monotonically from 0 at the mode, so for the terms that carry
        # mass (|w| <= 50; lighter ones are covered by e^{-50}) each of the <= k additions
        # errs by at most 50 ulps
        scale = max(abs(self.log_lam), math.log(self.n + 1.0))
        return ULP * (4 * scale + 50.0) * (w.size + 2)


def _poisson_window(mean: float, n: int, eps: float) -> tuple[float, ...]:
    log_lam = math.log(mean) + eps
    mode = n if log_lam >= math.log(n + 1) else int(min(n, math.floor(math.exp(log_lam))))
    sd = math.exp(0.5 * min(log_lam, math.log(n + 1.0)))
    h = math.sqrt(2 * TAIL_LOG) * sd + 2 * TAIL_LOG
    return _window_mean(_PoissonWeights(log_lam=log_lam, mode=mode, n=n), n, math.ceil(h))


def _pmf_mean(
    sizes: np.ndarray, logp: np.ndarray, eps: float, n: int
) -> tuple[float, float, float]:
    """Streaming logsumexp of the tilted pmf: (mean, N − mean, relative error bound)."""
    ref = float(sizes[-1])
    run_max = -np.inf
    s_tot = 0.0
    m_tot = 0.0
    g_tot = 0.0
    for start in range(0, sizes.size, CHUNK):
        sz = sizes[start : start + CHUNK]
        w = eps * (sz - ref) + logp[start : start + CHUNK]
        cmax = float(np.max(w))
        if cmax > run_max:
            scale = math.exp(run_max - cmax) if np.isfinite(run_max) else 0.0
            s_tot *= scale
            m_tot *= scale
            g_tot *= scale
            run_max = cmax
        e = np.exp(w - run_max)
        s_tot += float(np.sum(e))
        m_tot += float(np.sum(sz * e))
        g_tot += float(np.sum((n - sz) * e))
    span = float(sizes[-1] - sizes[0])
    werr = 4 * ULP * (eps * span + float(np.max(np.abs(logp))) + 1.0)
    k = sizes.size
    rel = 2.0 * werr + (64.0 + 4.0 * math.log2(k + 2)) * ULP + (k / CHUNK + 1) * 4 * ULP
    return m_tot / s_tot, g_tot / s_tot, rel


def _enclose(
    mean: float,
    gap: float,
    log_gap: float,
    log_tau: float,
    rel: float,
    shift: float,
    gap_rel: float,
    n: int,
) -> tuple[float, float, float]:
    """[lo, hi] for E and log of an upper bound on N − E, from window sums.

    Left-out tails of relative mass <= τ: E ∈ [(1 − τ)E_in, E_in + τN], and
    N − E <= (N − E_in) + τN. ``shift`` bounds E's error from a rounded parameter,
    ``gap_rel`` the same for N − E, relatively.
    """
    tau = math.exp(log_tau)
    lo1 = (mean * (1 - rel) - shift) * (1 - tau)
    hi1 = mean * (1 + rel) + shift + tau * n
    lo2 = n - (gap * (1 + rel + gap_rel) + tau * n)
    hi2 = n - (gap * (1 - rel - gap_rel)) * (1 - tau)
    log_gap_hi = float(np.logaddexp(log_gap + math.log1p(rel + gap_rel), log_tau + math.log(n)))
    return max(lo1, lo2), min(hi1, hi2), log_gap_hi + 4 * ULP * abs(log_gap_hi)


#: (estimate, lo, hi, log_gap_hi) per evaluated ε; log_gap_hi is NaN where not computed
_Enclosure = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _unset(shape: tuple[int, ...]) -> _Enclosure:
    """Arrays to fill; no log(N − E) bound yet (NaN)."""
    return np.empty(shape), np.empty(shape), np.empty(shape), np.full(shape, np.nan)


def _tilted_point(dist: SizeDistribution, n: int, eps: np.ndarray) -> _Enclosure:
    """A point mass m: E = m exactly at every ε."""
    assert dist.value is not None
    est, lo, hi, lg = _unset(eps.shape)
    est[:] = lo[:] = hi[:] = float(dist.value)
    gap0 = n - int(dist.value)  # exact: N − m of the point mass
    lg[:] = math.log(gap0) + 4 * ULP * abs(math.log(gap0)) if gap0 > 0 else -np.inf
    return est, lo, hi, lg


def _tilted_binomial(dist: SizeDistribution, n: int, eps: np.ndarray) -> _Enclosure:
    """Binomial(N, p) tilts to Binomial(N, p′), p′ = p/(p + (1 − p)e^{−ε}): E = N·p′."""
    assert dist.p is not None
    p = float(dist.p)
    est, lo, hi, lg = _unset(eps.shape)
    if p in (0.0, 1.0):
        est[:] = lo[:] = hi[:] = p * n
        if p == 1.0:
            lg[:] = -np.inf  # m = N surely: N − E = 0 exactly
        return est, lo, hi, lg
    den = p + (1.0 - p) * np.exp(-eps)
    est[:] = n * (p / den)
    gap = n * ((1.0 - p) * np.exp(-eps) / den)  # N(1 − p′), accurate near N
    lo[:] = np.maximum(est * (1 - 64 * ULP), n - gap * (1 + 64 * ULP))
    hi[:] = np.minimum(est * (1 + 64 * ULP), n - gap * (1 - 64 * ULP))
    with np.errstate(divide="ignore"):
        lg[:] = math.log(n) + math.log1p(-p) - eps - np.log(den)
    lg[:] += 8 * ULP * np.abs(lg) + 8 * ULP
    return est, lo, hi, lg


def _tilted_uniform(dist: SizeDistribution, n: int, eps: np.ndarray) -> _Enclosure:
    """Uniform on {low..high} tilts to a truncated geometric: E = low + k/2 − φ(ε) +
    (k + 1)φ((k + 1)ε), k = high − low."""
    assert dist.low is not None and dist.high is not None
    low, high = float(dist.low), float(dist.high)
    est, lo, hi, lg = _unset(eps.shape)
    kk = high - low
    e = low + kk / 2 - _phi(eps) + (kk + 1) * _phi((kk + 1) * eps)
    slack = 1e-12 * (kk + 1) + 8 * ULP * high
    est[:] = np.clip(e, low, high)
    lo[:] = np.clip(e - slack, low, high)
    hi[:] = np.clip(e + slack, low, high)
    big = eps >= 1.0
    if high == n and np.any(big):
        # high − E directly: 1/expm1(ε) − (k+1)/expm1((k+1)ε), the second term at most
        # 0.74 of the first for ε >= 1 (a few ulps after the cancellation)
        with np.errstate(over="ignore"):
            g = 1.0 / np.expm1(eps[big]) - (kk + 1) / np.expm1((kk + 1) * eps[big])
        with np.errstate(divide="ignore", invalid="ignore"):
            lg_g = np.log(g * (1 + 64 * ULP))
            # k = 0 (a point mass at N): g = 0 exactly, log 0 = −inf (not −inf + inf)
            lg[big] = np.where(g > 0, lg_g + 4 * ULP * np.abs(lg_g), -np.inf)
    return est, lo, hi, lg


def _tilted_normal(dist: SizeDistribution, n: int, eps: np.ndarray) -> _Enclosure:
    """A discretised normal tilts to centre c = μ + εσ²: c itself well inside [0, N] (a
    Poisson-summation bound on the lattice offset and a Gaussian tail bound), else a
    window around the mode."""
    assert dist.mean is not None and dist.sd is not None
    mu, sd = float(dist.mean), float(dist.sd)
    est, lo, hi, lg = _unset(eps.shape)
    c = mu + eps * sd * sd
    d = INTERIOR_SD * sd
    interior = (sd >= 3.0) & (c >= d) & (c <= n - d)
    if np.any(interior):
        ci = c[interior]
        lattice = 32.0 * sd**3 * math.exp(-2 * math.pi**2 * sd * sd)
        tails = 2.0 * (d + sd * sd) * math.exp(-(INTERIOR_SD**2) / 2)
        err = (lattice + tails) / 0.88 + 8 * ULP * np.abs(ci) + 4 * ULP * np.abs(ci)
        est[interior] = ci
        lo[interior] = ci - err
        hi[interior] = ci + err
    for i in np.flatnonzero(~interior):
        try:
            mean, gap, log_gap, log_tau, rel = _normal_window(mu, sd, n, float(eps[i]))
        except OverflowError:
            raise DesignError(
                f"sd = {sd:g} is too large at ε = {float(eps[i]):g}: the tilted centre "
                "μ + εσ² overflows; a normal this wide is flat on [0, N]: use "
                "`distribution: uniform`",
                where=Where(field="sampling.size.sd"),
            ) from None
        # rounding of the centre c: dE/dc = Var/σ² <= 1, and Var <= N(N − E)
        shift = 8 * ULP * abs(c[i])
        gap_rel = min(1.0, n * shift / (sd * sd))
        est[i] = mean
        lo[i], hi[i], lg[i] = _enclose(mean, gap, log_gap, log_tau, rel, shift, gap_rel, n)
    return est, lo, hi, lg


def _tilted_poisson(dist: SizeDistribution, n: int, eps: np.ndarray) -> _Enclosure:
    """A Poisson(λ) size tilts to Poisson(λe^ε) truncated to {0..N}: a window around its
    mode at each ε."""
    assert dist.mean is not None
    est, lo, hi, lg = _unset(eps.shape)
    for j, e_j in enumerate(eps):
        mean, gap, log_gap, log_tau, rel = _poisson_window(float(dist.mean), n, float(e_j))
        est[j] = mean
        lo[j], hi[j], lg[j] = _enclose(mean, gap, log_gap, log_tau, rel, 0.0, 0.0, n)
    return est, lo, hi, lg


def _tilted_pmf(dist: SizeDistribution, n: int, eps: np.ndarray) -> _Enclosure:
    """An explicit pmf: a streaming logsumexp over its sizes at each ε."""
    assert dist.sizes is not None and dist.log_probs is not None
    est, lo, hi, lg = _unset(eps.shape)
    for j, e_j in enumerate(eps):
        mean, gap, rel = _pmf_mean(dist.sizes, dist.log_probs, float(e_j), n)
        est[j] = mean
        # a gap that underflows is below N·k·e^{-745}
        floor = math.log(n * (dist.sizes.size + 1.0)) - 745.0
        log_gap = math.log(gap) if gap > 0 else floor
        lo[j], hi[j], lg[j] = _enclose(mean, gap, log_gap, -math.inf, rel, 0.0, 0.0, n)
    return est, lo, hi, lg


#: the tilted mean of each kind of size distribution, on a flat array of ε
_TILTED_MEAN: dict[str, Callable[[SizeDistribution, int, np.ndarray], _Enclosure]] = {
    "point": _tilted_point,
    "binomial": _tilted_binomial,
    "uniform": _tilted_uniform,
    "normal": _tilted_normal,
    "poisson": _tilted_poisson,
    "pmf": _tilted_pmf,
}


def _round_outward(found: _Enclosure, n: int, exact: bool) -> _Enclosure:
    """The enclosure widened by the rounding of its last operation (e.g. N − gap rounds
    to nearest; nothing to widen where ``exact``), clipped to [0, N], with the estimate
    inside it and log(N − E) bounded by log(N − lo) where that is smaller or was not
    computed."""
    est, lo, hi, lg = found
    if not exact:
        lo = numeric.round_down(lo, 2)
        hi = numeric.round_up(hi, 2)
    lo = np.clip(lo, 0.0, n)
    hi = np.clip(hi, 0.0, n)
    est = np.clip(est, lo, hi)
    with np.errstate(divide="ignore"):
        lg_plain = np.log(numeric.round_up(n - lo, 2)) + 4 * ULP
    lg = np.where(np.isnan(lg), lg_plain, np.minimum(lg, lg_plain))
    return est, lo, hi, lg


def tilted_mean_bounds(
    dist: SizeDistribution, population: int, eps: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """E_t̃[m] for t̃(m) ∝ e^{εm} t(m), an enclosure [lo, hi] of it, and a bound on N − E.

    Basis: Bun et al., Theorem 3.1 (the tilted distribution).
    Numerics: closed forms where the tilted family is known (binomial: Binomial(N, p′),
        p′ = p/(p + (1 − p)e^{−ε}); normal well inside [0, N]: centre μ + εσ², with a
        Poisson-summation bound on the lattice offset and a Gaussian tail bound;
        uniform: truncated geometric mean via φ(u) = 1/expm1(u) − 1/u + 1/2); otherwise a
        window around the mode of the log-concave tilted pmf, whose left-out tails are
        bounded geometrically and added to the enclosure (τ·N up, τ·E down); explicit
        pmfs by a streaming logsumexp. Rounding and weight errors widen it outward.

    Args:
        dist: the size distribution. population: N. eps: tilt ε >= 0, any shape.
    Returns:
        (estimate, lo, hi, log_gap_hi), arrays of eps's shape, 0 <= lo <= estimate <= hi
        <= N and log(N − E) <= log_gap_hi (computed directly in log space, not as N − lo,
        where E is near N).
    """
    eps = np.asarray(eps, dtype=float)
    tilted_mean = _TILTED_MEAN.get(dist.kind)
    if tilted_mean is None:  # pragma: no cover
        raise ValueError(dist.kind)
    found = tilted_mean(dist, population, eps.ravel())
    est, lo, hi, lg = _round_outward(found, population, exact=dist.kind == "point")
    shape = eps.shape
    return est.reshape(shape), lo.reshape(shape), hi.reshape(shape), lg.reshape(shape)
