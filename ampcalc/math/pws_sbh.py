"""The stability-based histogram baseline of private weighted sampling (pure numpy).

``sbh_phi`` gives each frequency's reporting probability under the stability-based
histogram (spec B9; Cohen et al. 2021, Sec. 8.1, Alg. 6), with or without sampling:
closed forms for f(i) = i, else a composite quadrature split at the scales of both
factors.
"""

from __future__ import annotations

import math

import numpy as np


def sbh_threshold(eps: float, delta: float) -> float:
    """T = 1 + ln(1/δ)/ε (spec B9)."""
    return 1.0 + math.log(1.0 / delta) / eps


def _laplace_survival(v: np.ndarray | float, i: np.ndarray, eps: float) -> np.ndarray:
    """F(v) = Pr[Y >= v] for Y ~ Laplace(i, 1/ε), without cancellation on either side."""
    d = np.asarray(v, dtype=float) - i
    e = np.exp(-eps * np.abs(d))
    out: np.ndarray = np.where(d >= 0, 0.5 * e, 1.0 - 0.5 * e)
    return out


def hypoexponential_cdf(a: float, b: float, x: np.ndarray) -> np.ndarray:
    """Pr[W + V <= x] for independent W ~ Exp(a), V ~ Exp(b) (rates a, b > 0), x >= 0.

    With M = max(a, b), m = min(a, b): where Mx >= 1,
    1 − e^{−mx} − mx·e^{−mx}·(1 − e^{−(M−m)x})/((M−m)x) (expm1 forms; the subtracted
    term is at most 1 − (1 − e^{−1}) of the first, so a few ulps); where Mx < 1, the
    series ab·x²·Σ_k (−1)^k h_k(ax, bx)/(k + 2)! (h_k the complete homogeneous symmetric
    polynomial: the second divided difference of e^{−z} at 0, ax, bx), 24 terms. No
    cancellation for a ≈ b or small x.
    """
    x = np.asarray(x, dtype=float)
    big, small = max(a, b), min(a, b)
    out = np.empty(x.shape)
    far = big * x >= 1.0
    if np.any(far):
        xf = x[far]
        d = (big - small) * xf
        safe = np.where(d > 0, d, 1.0)
        rel = np.where(d > 0, -np.expm1(-d) / safe, 1.0)
        out[far] = -np.expm1(-small * xf) - small * xf * np.exp(-small * xf) * rel
    near = ~far
    if np.any(near):
        al, be = a * x[near], b * x[near]
        h = np.ones(al.shape)
        power = np.ones(al.shape)
        total = 0.5 * h
        fact = 2.0
        for k in range(1, 24):
            power = power * al
            h = be * h + power  # h_k(α, β) = β h_{k−1} + α^k
            fact *= k + 2
            total = total + (h / fact if k % 2 == 0 else -h / fact)
        out[near] = al * be * total
    res: np.ndarray = np.maximum(out, 0.0)
    return res


def _sbh_ppswor_linear(i: np.ndarray, eps: float, T: float, tau: float) -> np.ndarray:
    """Sampled SbH for ppswor with f(i) = i in closed form (sum of non-negative terms).

    φ_i = Pr[Y >= T, Y >= V], Y ~ Laplace(i, 1/ε), V ~ Exp(τ) (q(y) = Pr[V <= y]):
    for i <= T, ½e^{−ε(T−i)}·(τ + ε(1 − e^{−τT}))/(ε + τ); for i > T (x = i − T),
    ½(τ + ε(1 − e^{−τi}))/(ε + τ)  [Y >= i]
    + ½(1 − e^{−τT})(1 − e^{−εx})  [T <= Y < i, V < T]
    + ½e^{−τT}·Pr[Exp(ε) + Exp(τ) <= x]  [T <= Y < i, T <= V < Y].
    """
    out = np.empty(i.shape)
    low = i <= T
    il = i[low]
    out[low] = 0.5 * np.exp(-eps * (T - il)) * ((tau - eps * math.expm1(-tau * T)) / (eps + tau))
    ih = i[~low]
    x = ih - T
    out[~low] = (
        0.5 * (tau - eps * np.expm1(-tau * ih)) / (eps + tau)
        + 0.5 * (-math.expm1(-tau * T)) * (-np.expm1(-eps * x))
        + 0.5 * math.exp(-tau * T) * hypoexponential_cdf(eps, tau, x)
    )
    return out


def _sbh_priority_linear(i: np.ndarray, eps: float, T: float, tau: float) -> np.ndarray:
    """Sampled SbH for priority sampling with f(i) = i, τT < 1, in closed form.

    q(y) = min(1, τy) = Pr[cU <= y] with c = 1/τ, U ~ U[0, 1], so
    φ_i = Pr[Y >= max(T, cU)] = τ(T·F(T) + ∫_T^c F(v) dv), F the Laplace survival
    function; the integral split at i, each piece a sum of non-negative terms.
    """
    c = 1.0 / tau
    hi = np.minimum(i, c)  # ∫_T^{min(i,c)} (1 − ½e^{−ε(i−v)}) dv = ½L + ½(L − …) >= ½L
    span = np.maximum(hi - T, 0.0)
    rest = span - np.exp(-eps * (i - hi)) * (-np.expm1(-eps * span)) / eps
    below = 0.5 * span + 0.5 * np.maximum(rest, 0.0)
    lo = np.maximum(T, i)  # ∫_{max(T,i)}^c ½e^{−ε(v−i)} dv
    top = np.maximum(c - lo, 0.0)
    above = np.exp(-eps * (lo - i)) * (-np.expm1(-eps * top)) / (2.0 * eps)
    out: np.ndarray = tau * (T * _laplace_survival(T, i, eps) + below + above)
    return out


_SBH_NODES = 20
"""Gauss–Legendre nodes per piece of the sampled-SbH quadrature (f(i) = i^p, p ≠ 1)."""

_SBH_TAIL = 40.0
"""Laplace tails beyond 40/ε of the window are dropped: relative error <= 2e^{−40}/(1 − e^{−1})."""


def _sbh_quadrature(
    i: np.ndarray, eps: float, T: float, method: str, tau: float, p: float
) -> np.ndarray:
    """∫_T^∞ (ε/2)e^{−ε|y−i|} q(y) dy for q(y) = 1 − e^{−τy^p} or min(1, τy^p).

    Composite Gauss–Legendre (20 nodes a piece) in the offset u = y − i (so the density
    is exact at large i), on the window [max(T, i − 40/ε), max(T, i) + W] split at: T,
    i, the kink y = τ^{−1/p} (priority: above it q = 1 and the rest is the Laplace
    survival function in closed form), offsets ±{4, 10, 20, 40}/ε then every 20/ε (the
    density's scale), the levels τy^p = 1, 2, 4, …, 64 (q's scale) and a geometric grid
    of ratio 2 from the window's start (y^p's scale). Dropped: below i − 40/ε (q is
    non-decreasing, so at most e^{−40}q(i)/2), above max(T, i) + W with
    εW − p·ln(1 + W/max(T, i)) >= 40 and W >= 2p/ε (q(y) <= (y/y₀)^p q(y₀), so at
    most 2e^{−40}F·q). Checked against mpmath quadrature: worst relative error 3e-15.
    """
    x, w = np.polynomial.legendre.leggauss(_SBH_NODES)
    n = i.size
    out = np.zeros(n)
    kink = math.inf
    if method == "priority":
        try:
            kink = tau ** (-1.0 / p)
        except OverflowError:
            kink = math.inf
    levels = []
    if method == "ppswor":
        for t in (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0):
            try:
                levels.append((t / tau) ** (1.0 / p))
            except OverflowError:
                pass
    ylev = np.asarray(levels)
    tail = _SBH_TAIL
    step = 20_000  # bounded memory
    for s0 in range(0, n, step):
        ii = i[s0 : s0 + step]
        base = np.maximum(T, ii)
        W = _window(base, eps, p, tail)
        lo = np.maximum(T - ii, -tail / eps)  # offsets from i
        hi = np.minimum(base - ii + W, kink - ii)
        if math.isfinite(kink):
            out[s0 : s0 + step] += _laplace_survival(max(T, kink), ii, eps)
        pts = _breakpoints(ii, lo, hi, float(np.max(W)), eps, ylev)
        m = ii.size
        keep = pts[:, 1:] > pts[:, :-1]
        rows = np.broadcast_to(np.arange(m)[:, None], keep.shape)[keep]
        a_, b_ = pts[:, :-1][keep], pts[:, 1:][keep]
        acc = np.empty(a_.size)
        chunk = 20_000
        for k0 in range(0, a_.size, chunk):
            a = a_[k0 : k0 + chunk]
            half = (b_[k0 : k0 + chunk] - a) / 2.0
            u = a[:, None] + half[:, None] * (x[None, :] + 1.0)
            y = ii[rows[k0 : k0 + chunk]][:, None] + u
            with np.errstate(over="ignore"):  # f = inf gives q = 1, as it should
                t = tau * y**p
            qy = -np.expm1(-t) if method == "ppswor" else np.minimum(1.0, t)
            acc[k0 : k0 + chunk] = half * ((np.exp(-eps * np.abs(u)) * qy) @ w)
        out[s0 : s0 + step] += 0.5 * eps * np.bincount(rows, weights=acc, minlength=m)
    return out


def _window(base: np.ndarray, eps: float, p: float, tail: float) -> np.ndarray:
    """The width W above ``base`` = max(T, i) past which ``_sbh_quadrature`` drops the
    integrand: the smallest found with εW − p·ln(1 + W/base) >= ``tail`` and W >= 2p/ε
    (a fixed-point iteration, then doubling where it falls short)."""
    W = np.full(base.shape, tail / eps)
    for _ in range(8):
        W = np.maximum((tail + p * np.log1p(W / base)) / eps, 2.0 * p / eps)
    while True:
        short = eps * W - p * np.log1p(W / base) < tail
        if not np.any(short):
            break
        W = np.where(short, 2.0 * W, W)
    return W


def _breakpoints(
    i: np.ndarray, lo: np.ndarray, hi: np.ndarray, widest: float, eps: float, ylev: np.ndarray
) -> np.ndarray:
    """Per frequency (a row each), the sorted offsets u = y − i that split
    ``_sbh_quadrature``'s window [lo, hi] into pieces: its ends, ±{4, 10, 20, 40}/ε then
    every 20/ε up to the ``widest`` window, the levels ``ylev`` of q, and a geometric
    grid of ratio 2 from the window's start; each clipped to [lo, hi]."""
    offs = [-40.0, -20.0, -10.0, -4.0, 0.0, 4.0, 10.0, 20.0, 40.0]
    top = 40.0
    while top < widest * eps:
        # every 20/ε (the density's scale), then doubling: a huge weight power makes
        # the window astronomically wide (W >= 2p/ε), where the density is e^{−4000}
        top += 20.0 if top < 4000.0 else top
        offs.append(top)
    m = i.size
    cands = [
        lo[:, None],
        hi[:, None],
        np.broadcast_to(np.asarray(offs) / eps, (m, len(offs))),
    ]
    if ylev.size:
        cands.append(ylev[None, :] - i[:, None])
    start = i + lo
    ratio = float(np.max((i + np.maximum(hi, lo)) / start))
    kg = math.ceil(math.log2(max(ratio, 1.0)))
    if kg >= 1:
        cands.append(start[:, None] * 2.0 ** np.arange(1, kg + 1)[None, :] - i[:, None])
    pts = np.concatenate([np.broadcast_to(a, (m, a.shape[1])) for a in cands], axis=1)
    clipped: np.ndarray = np.minimum(np.maximum(pts, lo[:, None]), hi[:, None])
    clipped.sort(axis=1)
    return clipped


def sbh_phi(
    n: int,
    eps: float,
    delta: float,
    *,
    method: str = "none",
    threshold: float = 1.0,
    weight_power: float = 1.0,
    frequencies: np.ndarray | None = None,
) -> np.ndarray:
    """Reporting probability of the stability-based histogram (spec B9; Cohen et al. 2021 Sec. 8.1,
    Alg. 6), i = 1..n (or at the given ``frequencies``, n ignored), each in [0, 1].

    q ≡ 1: φ_i = ½ e^{−ε(T−i)} for i <= T, 1 − ½ e^{−ε(i−T)} above. Sampled SbH (some
    q < 1): ∫_T^∞ Lap_{i,1/ε}(y) q(y) dy, in closed form for f(i) = i (ppswor:
    ``_sbh_ppswor_linear``, priority: ``_sbh_priority_linear``; relative error < 1e-14
    against mpmath, any ε, δ, τ, i), else by composite quadrature split at the scales
    of both factors (``_sbh_quadrature``).
    """
    T = sbh_threshold(eps, delta)
    if frequencies is None:
        i = np.arange(1, n + 1, dtype=float)
    else:
        i = np.asarray(frequencies, dtype=float).ravel()
    p = weight_power
    flat = method == "none"  # q = 1 on [T, ∞)
    if method == "priority":
        try:
            flat = threshold * T**p >= 1.0
        except OverflowError:  # T^p > 1.8e308: compare in logs
            flat = math.log(threshold) + p * math.log(T) >= 0.0
    if flat:
        out = _laplace_survival(T, i, eps)
    elif p == 1.0 and method == "ppswor":
        out = _sbh_ppswor_linear(i, eps, T, threshold)
    elif p == 1.0 and method == "priority":
        out = _sbh_priority_linear(i, eps, T, threshold)
    else:
        out = _sbh_quadrature(i, eps, T, method, threshold, p)
    res: np.ndarray = np.clip(out, 0.0, 1.0)
    return res
