"""Tilted log-sum-exp kernels for count-of-copies bounds (with-replacement and group).

The differing unit's record(s) appear J times in the sample: J ~ Binomial(m, g/N)
for ``srswr`` (m i.i.d. uniform draws), J ~ Hypergeometric(N, g, m) for ``srswor``
with a group of g records. Two quantities are computed here, vectorised in ε:

* the moment generating value V = log E[e^{Jε}], the ε′ of the count witness
  f(S) = c·e^{ε·#x(S)} (a proven lower bound; exact LPs in
  ``shared/spec/exact-lp-checks.md`` equal it on every tiny instance tested);
* the optimum of the group-privacy relaxation (a proven upper bound): with h_k, g_k
  the acceptance probabilities averaged over the other draws given k copies,
  ratio = Σ p_k h_k / Σ p_k g_k subject to h_k <= e^{kε} g_k, h_k <= e^{kε} g_0 and
  g_0 e^{−kε} <= g_k <= g_0. Writing g_k = w_k g_0 the optimum puts h_k = e^{kε} w_k g_0
  and is a linear-fractional programme in w ∈ [e^{−kε}, 1] (w_0 = 1); by the
  Dinkelbach argument w_k = 1 where e^{kε} >= ratio and w_k = e^{−kε} below, so the
  optimum is the largest ratio over the thresholds k* (computed here by prefix and
  suffix log-sum-exps). When V <= ε every k >= 1 has e^{kε} >= e^ε >= e^V, the full
  weight threshold is optimal and the relaxation equals V (tight).

Numerics: log pmfs by the exact ratio recurrence from log p_0 (no lgamma, so N up to
10^12 keeps full precision), ratios of sums (normalisation errors cancel), expm1 form
for small tilts, windows of the support with a log-concave geometric tail bound added
outward, and explicit relative/absolute slack before outward rounding.
"""

from __future__ import annotations

import numpy as np

from ampcalc.math import numeric

REL_SLACK = 1e-10  # relative slack covering the kernels' accumulated rounding
MAX_SUPPORT = 5_000_000
_CHUNK = 4_000_000


def _logcumsumexp(a: np.ndarray) -> np.ndarray:
    return np.logaddexp.accumulate(a, axis=-1)


def binomial_logpmf(m: int, p: float, hi: int) -> np.ndarray:
    """log Pr[J = k] for J ~ Binomial(m, p), k = 0..hi (hi <= m), by recurrence."""
    k = np.arange(hi, dtype=float)
    log_p0 = m * np.log1p(-p) if p < 1.0 else (0.0 if m == 0 else -np.inf)
    if p >= 1.0:
        out = np.full(hi + 1, -np.inf)
        if hi == m:
            out[m] = 0.0
        return out
    steps = np.log(m - k) - np.log(k + 1.0) + (np.log(p) - np.log1p(-p))
    return np.concatenate(([log_p0], log_p0 + np.cumsum(steps)))


def hypergeom_logpmf(population: int, group: int, draws: int) -> tuple[int, np.ndarray]:
    """(k_min, log Pr[J = k] for k = k_min..k_max), J ~ Hypergeometric(N, g, m).

    Symmetric in g and m. When g + m <= N the support starts at 0 and log p_0 =
    Σ_{i<min(g,m)} log1p(−max(g,m)/(N − i)); otherwise J = g + m − N + J̃ with J̃ the
    count for the complement sample, handled by the same recurrence.
    """
    n, g, m = int(population), int(group), int(draws)
    if g > m:
        g, m = m, g
    k_min = max(0, g + m - n)
    if k_min > 0:
        # records of the group NOT in the sample: Hyp(N, g, N − m), support from 0
        _, lp = hypergeom_logpmf(n, g, n - m)  # k̃ = g − k, k̃ = 0..g − k_min
        return k_min, lp[::-1][: g - k_min + 1]
    i = np.arange(g, dtype=float)
    log_p0 = float(np.sum(np.log1p(-m / (n - i)))) if g > 0 else 0.0
    k = np.arange(g, dtype=float)
    steps = np.log(g - k) + np.log(m - k) - np.log(k + 1.0) - np.log(n - g - m + k + 1.0)
    return 0, np.concatenate(([log_p0], log_p0 + np.cumsum(steps)))


def log_mgf(k0: int, logpmf: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """log E[e^{Jε}] from a full log pmf (support k0..), vectorised in ε (unrounded).

    Numerics: V = log1p(R), R = Σ w_k·expm1(kε) / Σ w_k, with every term nonnegative and
    taken in log space, log(w_k·expm1(kε)) = log w_k + kε + log(1 − e^{−kε}), so that
    nothing overflows and V = logaddexp(0, log R) keeps a relative error of a few ulps
    also when it is tiny. (A difference of two logsumexps, used where k·ε > 1, has an
    absolute error of ~1e-16 per term: V = 9.2e-11 came out 4e-4 high, V = 1e-4 over a
    support of 10⁵ points 2e-6 high.)
    """
    eps = np.asarray(eps, dtype=float)
    flat = eps.reshape(-1)
    k = k0 + np.arange(logpmf.size, dtype=float)
    lw = logpmf - np.max(logpmf)
    log_total = float(np.log(np.sum(np.exp(lw))))
    out = np.empty(flat.shape)
    step = max(1, _CHUNK // max(1, k.size))
    for s in range(0, flat.size, step):
        e = flat[s : s + step][:, None]
        t = k[None, :] * e
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lterm = lw[None, :] + t + np.log(-np.expm1(-t))  # −inf where k·ε = 0
            top = np.max(lterm, axis=1)
            finite = np.isfinite(top)
            ref = np.where(finite, top, 0.0)
            log_r = ref + np.log(np.sum(np.exp(lterm - ref[:, None]), axis=1)) - log_total
        out[s : s + e.shape[0]] = np.logaddexp(0.0, np.where(finite, log_r, -np.inf))
    return out.reshape(eps.shape)


def relaxation(
    k0: int, logpmf: np.ndarray, eps: np.ndarray, log_tail: np.ndarray | None = None
) -> np.ndarray:
    """Optimum of the group-privacy relaxation (log ratio), unrounded, vectorised in ε.

    ``logpmf`` holds log p_k for k = k0..k0 + len − 1 (a window starting at the
    support's lower end); ``log_tail`` (per ε) bounds log Σ_{dropped k} p_k e^{kε},
    added to the numerator of every threshold (dropping from the denominator only
    raises the ratio, so the result stays an upper bound).
    """
    eps = np.asarray(eps, dtype=float)
    flat = eps.reshape(-1)
    tails = (
        np.full(flat.shape, -np.inf)
        if log_tail is None
        else np.broadcast_to(np.asarray(log_tail, dtype=float), eps.shape).reshape(-1)
    )
    k = k0 + np.arange(logpmf.size, dtype=float)
    out = np.empty(flat.shape)
    step = max(1, _CHUNK // max(1, k.size))
    for s in range(0, flat.size, step):
        e = flat[s : s + step][:, None]
        tail = tails[s : s + step][:, None]
        t = k[None, :] * e
        lp = np.broadcast_to(logpmf, t.shape)
        num_lo = _logcumsumexp(lp)  # Σ_{j<=i} p_j           (w = e^{−jε}: h = p)
        den_lo = _logcumsumexp(lp - t)  # Σ_{j<=i} p_j e^{−jε}
        num_hi = _logcumsumexp((lp + t)[:, ::-1])[:, ::-1]  # Σ_{j>=i} p_j e^{jε}
        den_hi = _logcumsumexp(lp[:, ::-1])[:, ::-1]  # Σ_{j>=i} p_j
        ninf = np.full((t.shape[0], 1), -np.inf)
        # threshold between i−1 and i, i = 0..K (i = 0: full weight everywhere)
        nl = np.concatenate((ninf, num_lo), axis=1)
        dl = np.concatenate((ninf, den_lo), axis=1)
        nh = np.logaddexp(np.concatenate((num_hi, ninf), axis=1), tail)
        dh = np.concatenate((den_hi, ninf), axis=1)
        ratio = np.logaddexp(nl, nh) - np.logaddexp(dl, dh)
        out[s : s + e.shape[0]] = np.max(ratio, axis=1)
    return out.reshape(eps.shape)


def slack_up(x: np.ndarray, terms: int) -> np.ndarray:
    """Outward (up) rounding covering a log-sum-exp over ``terms`` terms."""
    x = np.asarray(x, dtype=float)
    return numeric.round_up(x + np.abs(x) * REL_SLACK + 8.0 * (terms + 8) * np.finfo(float).eps)


def slack_down(x: np.ndarray, terms: int) -> np.ndarray:
    """Outward (down) rounding of a nonnegative log-MGF value; never below 0."""
    x = np.asarray(x, dtype=float)
    return np.maximum(numeric.round_down(x - np.abs(x) * REL_SLACK), 0.0)


# --- the two distributions used by the schemes ------------------------------------------


def binomial_window(m: int, p: float, eps_max: float) -> int:
    """Last k kept for Binomial(m, p) tilted up to e^{k·eps_max}: mode + 40 sd + 40."""
    with np.errstate(over="ignore"):
        pt = 1.0 / (1.0 + np.exp(-(np.log(p) - np.log1p(-p) + eps_max))) if p < 1 else 1.0
    mean = m * pt
    sd = np.sqrt(m * pt * (1 - pt))
    return int(min(m, np.ceil(mean + 40.0 * sd + 40.0)))


def binomial_relaxation_upper(m: int, p: float, eps: np.ndarray) -> np.ndarray:
    """Upper bound (rounded up) on the relaxation optimum for J ~ Binomial(m, p).

    Each ε is summed over a window that depends on that ε alone (its own window,
    widened to a power of two), so a value does not depend on which other ε share
    the call: a sweep gives the bits a single call gives. ε values with the same
    window are processed together, in blocks of 64.
    """
    eps = np.asarray(eps, dtype=float)
    flat = eps.reshape(-1)
    windows = _canonical_windows(m, p, flat)
    out = np.empty(flat.shape)
    for hi in np.unique(windows).tolist():
        idx = np.flatnonzero(windows == hi)
        for s in range(0, idx.size, 64):
            part = idx[s : s + 64]
            out[part] = _binomial_relaxation_block(m, p, flat[part], int(hi))
    return out.reshape(eps.shape)


def _canonical_windows(m: int, p: float, eps: np.ndarray) -> np.ndarray:
    """``binomial_window`` at each ε, widened to the next power of two (at most m, and
    at most ``MAX_SUPPORT`` unless the window itself is wider)."""
    out = np.empty(eps.shape, dtype=np.int64)
    for value in np.unique(eps).tolist():  # a sweep has few repeated values; exact per ε
        hi = binomial_window(m, p, value)
        wide = 1 << max(0, (hi - 1).bit_length())
        out[eps == value] = hi if hi > MAX_SUPPORT else min(m, MAX_SUPPORT, max(hi, wide))
    return out


def _binomial_relaxation_block(m: int, p: float, eps: np.ndarray, hi: int) -> np.ndarray:
    eps = np.asarray(eps, dtype=float)
    if hi > MAX_SUPPORT:
        # too wide to sum: E[e^{Jε}] / E[e^{−Jε}] bounds every threshold's ratio
        fallback = m * (numeric.amplification_upper(p, eps) + numeric.neg_log1m(p, eps))
        return numeric.round_up(fallback * (1 + REL_SLACK))
    keep = min(m, hi + 2)
    lp = binomial_logpmf(m, p, keep)
    log_tail = None
    if keep < m:
        # log-concave terms a_k = p_k e^{kε}, past the tilted mode: geometric tail
        a1 = lp[hi + 1] + (hi + 1) * eps
        a2 = lp[hi + 2] + (hi + 2) * eps
        rho = np.exp(np.minimum(a2 - a1, 0.0))
        log_tail = np.where(rho < 1.0, a1 - np.log1p(-rho), np.inf)
        lp = lp[: hi + 1]
    val = relaxation(0, lp, eps, log_tail)
    return slack_up(val, lp.size)


def hypergeom_support(population: int, group: int, draws: int) -> int:
    """Number of support points of Hyp(N, g, m)."""
    return min(group, draws) - max(0, group + draws - population) + 1
