"""Per-record kernels for Poisson importance sampling with personalised privacy.

Basis: Personalized Privacy Amplification via Importance Sampling (Fay, Mair, Sjölund) Theorem 6,
Problem 7, Theorem 10,
Algorithm 1, Proposition 13, Definition 14; formulas as rebuilt in
spec importance-and-weighted-sampling.md Part A (A4-A10), whose corrections are
applied: the feasible end of a bisection is returned (never a midpoint), grid maxima
are bounded rigorously.

Every function is vectorised over records (numpy arrays in, arrays out); there is no
per-record Python loop. scipy is imported lazily (Lambert W only).

Profiles handled here are *weight-linear*, ε(w, x) = a(x)·w (Laplace weighted sum,
DP-Lloyd), or *constant*, ε(w, x) = ε0 (a mechanism that ignores weights).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.math.types import ArrayLike, FloatArray

#: ρ of Su et al. (2016) used for DP-Lloyd noise scales (spec A9, ``kmeans.rho``).
LLOYD_RHO = 0.225


# --------------------------------------------------------------------------------------
# Theorem 6
# --------------------------------------------------------------------------------------


def personalised_epsilon(
    q: ArrayLike, a: ArrayLike, *, linear: bool = True, rounding: str = "up"
) -> np.ndarray:
    """Per-record ε̂(x) = log(1 + q(e^{ε(1/q, x)} − 1)) (Theorem 6), rounded outward.

    Basis: Personalized Privacy Amplification via Importance Sampling, Theorem 6; spec A4.
    Neighbours: add-remove (the paper's PDP, Def. 4).
    Conditions: q in (0, 1]; q = 0 gives ε̂ = 0 (the record is never sampled).
    Formula: linear profiles ε(w, x) = a·w give ε̂ = A(q, a/q); constant profiles
        ε(w, x) = a give ε̂ = A(q, a) (Prop. 3).
    Tightness: attained by randomised response on the presence of that record.
    Numerics: a/q rounded in the direction asked, then numeric.amplification_upper
        (or _lower); overflow-free for a/q > 700.
    """
    q = np.asarray(q, dtype=float)
    a = np.asarray(a, dtype=float)
    q, a = np.broadcast_arrays(q, a)
    zero = q <= 0.0
    qs = np.where(zero, 1.0, q)
    with np.errstate(over="ignore", divide="ignore"):
        eps_w = a / qs if linear else a
    if rounding == "up":
        out = numeric.amplification_upper(qs, numeric.round_up(eps_w, 1))
    else:
        out = numeric.amplification_lower(qs, numeric.round_down(eps_w, 1))
    return np.where(zero, 0.0, out)


# --------------------------------------------------------------------------------------
# Profiles
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinearCoefficients:
    """ε(1, x) = alpha + slope·‖x‖ (a weight-linear profile; ε(w, x) = w·ε(1, x))."""

    alpha: float
    slope: float

    def at(self, z: ArrayLike) -> FloatArray:
        """ε(1, x) at profile norm z (a float or an array)."""
        return self.alpha + self.slope * np.asarray(z, dtype=float)


def lloyd_noise_scales(
    noise_constant: float, d: int, r: float, iterations: int
) -> tuple[float, float]:
    """(β_sum, β_count) of DP-Lloyd from the noise constant B (Su et al. 2016; spec A9).

    β_sum = sqrt(T r / B)·(d/(2ρ))^{1/3}, β_count = β_sum·(4dρ²)^{1/3}, ρ = 0.225.
    """
    beta_sum = np.sqrt(iterations * r / noise_constant) * (d / (2 * LLOYD_RHO)) ** (1 / 3)
    beta_count = beta_sum * (4 * d * LLOYD_RHO**2) ** (1 / 3)
    return float(beta_sum), float(beta_count)


def lloyd_noise_constant(beta_sum: float, d: int, r: float, iterations: int) -> float:
    """The B whose Su et al. sum scale is β_sum (inverse of ``lloyd_noise_scales``)."""
    return float(iterations * r * (d / (2 * LLOYD_RHO)) ** (2 / 3) / beta_sum**2)


#: The privacy profiles ε(w, x) an importance design's ``mechanism:`` may name, each with
#: its parameters (besides ``profile:``) in the order they are documented: the one list
#: the design loader (``schemes.importance``) and ``ampcalc.kernels`` both read.
PROFILE_PARAMETERS: dict[str, tuple[str, ...]] = {
    "laplace-sum": ("scale",),
    "dp-lloyd": ("iterations", "count_scale", "sum_scale", "noise_constant", "norm"),
    "constant": ("epsilon",),
}


def profile_coefficients(
    kind: str, values: Mapping[str, Any], dimension: int, radius: float | None
) -> tuple[LinearCoefficients, str, tuple[float, float] | None]:
    """ε(1, x) of a checked profile as coefficients, its norm, and DP-Lloyd's scales.

    Basis: Personalized Privacy Amplification via Importance Sampling, Prop. 3 (constant), Prop.
    13 (DP-Lloyd); the
        Laplace weighted sum ε(w, x) = w‖x‖₁/β.
    Formula: laplace-sum: ε(1, x) = ‖x‖₁/β (ℓ1); constant: ε(1, x) = ε0 (weight-free;
        ℓ2, unused); dp-lloyd: ε(1, x) = T/β_count + T‖x‖/β_sum in the given ``norm``
        (default ℓ2), the scales given or set from the noise constant B by
        ``lloyd_noise_scales`` (needs ``dimension`` and ``radius``).

    Args:
        kind: a key of ``PROFILE_PARAMETERS``.
        values: its parameters, already checked (absent or ``None``: not given).
        dimension: the records' dimension d; radius: the public bound r on ‖x‖.
    Returns:
        (coefficients, norm, (β_count, β_sum) for dp-lloyd, else ``None``).
    """
    if kind == "laplace-sum":
        return LinearCoefficients(0.0, 1.0 / values["scale"]), "l1", None
    if kind == "constant":
        return LinearCoefficients(values["epsilon"], 0.0), "l2", None
    t = values["iterations"]
    b = values.get("noise_constant")
    if b is not None:
        assert radius is not None, "B sets the scales from the public radius r"
        bs, bc = lloyd_noise_scales(b, dimension, radius, t)
    else:
        bs, bc = values["sum_scale"], values["count_scale"]
    norm = values.get("norm") or "l2"
    return LinearCoefficients(t / bc, t / bs), norm, (bc, bs)


# --------------------------------------------------------------------------------------
# Privacy-constrained probabilities (Theorem 10, Algorithm 1, spec A6/A7)
# --------------------------------------------------------------------------------------


def eps_hat_upper_w(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Conservative ε̂ of a record with ε(1, x) = a sampled with q = 1/w, weight w.

    Evaluated exactly as ``personalised_epsilon`` evaluates the q that is written out
    (ε(1/q, x) = a/q, with q = fl(1/w)), so the figures certified against ε* are the
    ones ``ampcalc.kernels.personalised_epsilon`` gives for the same q, bit for bit.
    """
    with np.errstate(divide="ignore"):
        q = 1.0 / w
    return personalised_epsilon(q, a, linear=True)


def _lambert_w_star(a: np.ndarray, c: float) -> np.ndarray:
    """w* = (u − 1)/c, u = −W_{−1}(−r e^{−r})/r, r = a/c (spec A7), not yet certified."""
    from scipy.special import lambertw  # lazy: scipy, > 20 ms

    r = a / c
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        arg = -r * np.exp(-r)
        wm1 = lambertw(arg, k=-1).real
        u = -wm1 / r
        w: FloatArray = (u - 1.0) / c
        return w


#: records evaluated at a time by ``privacy_constrained`` (each record's figures depend
#: on that record alone; blocks keep the temporaries of Lambert W and the certification
#: in cache and bound the memory)
BLOCK = 1 << 16


def privacy_constrained_weights(a: np.ndarray, eps_star: float) -> np.ndarray:
    """Largest certified importance weight w*(x) >= 1 with ε̂(x) <= ε* (Theorem 10).

    Basis: Personalized Privacy Amplification via Importance Sampling, Theorem 10 and Algorithm 1;
    spec A5-A7.
    Neighbours: add-remove.
    Conditions: weight-linear profile ε(w, x) = a(x)·w with 0 <= a <= ε* (Ass. 8);
        records with a > ε* are infeasible and get ``nan`` (the caller reports them).
    Formula: w* solves e^{a w} − 1 = w(e^{ε*} − 1); closed form by Lambert W (A7),
        bisection on float bit patterns where 1 − a/c < 1e-6 (ill-conditioned) or the
        closed form fails. a = 0 gives w* = inf (q* = 0: never sampled, ε̂ = 0).
    Tightness: w* is optimal up to the last few ulps.
    Numerics: after the closed form, w is stepped down toward 1 (64 ulps, then
        doubling steps for the few records still over) until the conservative
        evaluation ε̂ = A↑(1/w, (a·w)↑) <= ε* holds; never a midpoint. The cost is
        below 1e-13 relative in q.
    """
    return privacy_constrained(a, eps_star)[0]


def privacy_constrained(
    a: np.ndarray, eps_star: float, *, threads: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """``(w*, ε̂)``: ``privacy_constrained_weights(a, ε*)`` and, on the records with
    0 < a <= ε*, the certified ε̂ = ``eps_hat_upper_w(a, w*)`` its certification
    evaluated last (the same bits; ``nan`` on the other records), so a caller need not
    evaluate it again. ``threads`` > 1 evaluates the blocks on that many threads
    (Lambert W and numpy release the GIL; the same bits)."""
    a = np.asarray(a, dtype=float)
    if eps_star > 700.0:
        raise ValueError("ε* above 700 is outside the supported range of the weights")
    c = float(np.expm1(eps_star))
    out = np.full(a.shape, np.nan)
    eps_hat = np.full(a.shape, np.nan)
    feasible = (a <= eps_star) & (a >= 0)
    zero = feasible & (a == 0.0)
    out[zero] = np.inf
    pos = feasible & ~zero
    if not np.any(pos):
        return out, eps_hat
    ap = a[pos]
    w = np.empty(ap.shape)
    e = np.empty(ap.shape)
    starts = range(0, ap.size, BLOCK)

    def block(s: int) -> np.ndarray:
        part = slice(s, s + BLOCK)
        w[part], e[part], redo = _certified_closed_form(ap[part], c, eps_star)
        return np.flatnonzero(redo) + s

    if threads > 1 and len(starts) > 1:
        from concurrent.futures import ThreadPoolExecutor  # lazy: `ampcalc schemes` doesn't use it

        with ThreadPoolExecutor(max_workers=threads) as pool:
            redo_parts = list(pool.map(block, starts))
    else:
        redo_parts = [block(s) for s in starts]
    redo_idx = np.concatenate(redo_parts)
    if redo_idx.size:
        w[redo_idx] = _bisect_weights(ap[redo_idx], eps_star)
        e[redo_idx] = eps_hat_upper_w(ap[redo_idx], w[redo_idx])
    out[pos] = w
    eps_hat[pos] = e
    return out, eps_hat


def _certified_closed_form(
    ap: np.ndarray, c: float, eps_star: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The closed-form w* of records with 0 < a <= ε*, stepped down until certified;
    its ε̂; and the records left to the bisection (closed form failed or
    ill-conditioned, or still over ε* after the steps)."""
    w = _lambert_w_star(ap, c)
    r = ap / c
    bad = ~np.isfinite(w) | (1.0 - r < 1e-6) | (w < 1.0)
    w = np.where(np.isfinite(w), np.maximum(w, 1.0), 1.0)
    # certify: step down toward 1 until the conservative evaluation meets ε*
    # (re-evaluating only the records still over the target)
    # The conservative evaluation carries ~10 ulps of outward rounding, so the exact
    # root is almost always just over; a first step of 64 ulps (1.4e-14 relative)
    # clears nearly all records, then single-record steps double (1, 2, 4, ... ulps).
    w = np.maximum(w * (1.0 - 64 * 2.0**-53), 1.0)
    e = eps_hat_upper_w(ap, w)
    idx = np.flatnonzero((e > eps_star) & (w > 1.0))
    for j in range(16):
        if idx.size == 0:
            break
        w[idx] = np.maximum(w[idx] * (1.0 - (2.0**j) * 2.0**-53), 1.0)
        e_idx = eps_hat_upper_w(ap[idx], w[idx])
        e[idx] = e_idx
        still = (e_idx > eps_star) & (w[idx] > 1.0)
        idx = idx[still]
    over = np.zeros(w.shape, dtype=bool)
    over[idx] = True
    return w, e, bad | over


def _bisect_weights(a: np.ndarray, eps_star: float) -> np.ndarray:
    """Feasible end of a bit-pattern bisection for w* (Algorithm 1 done soundly)."""
    hi = np.full(a.shape, 2.0)
    for _ in range(1100):
        grow = eps_hat_upper_w(a, hi) <= eps_star
        if not np.any(grow) or np.all(hi[grow] >= 1e300):
            break
        hi = np.where(grow, np.minimum(hi * 2.0, 1e300), hi)

    def infeasible(w: np.ndarray) -> np.ndarray:
        return eps_hat_upper_w(a, w) > eps_star

    first_bad = numeric.first_true(infeasible, np.ones_like(a), hi)
    w = np.where(np.isfinite(first_bad), np.nextafter(first_bad, 1.0), hi)
    return np.maximum(w, 1.0)


def largest_feasible_radius(coef: LinearCoefficients, eps_star: float) -> float:
    """Largest profile norm r with ε(1, x) <= ε* (Ass. 8), rounded down; -1 if none."""
    if coef.alpha > eps_star:
        return -1.0
    if coef.slope <= 0:
        return float("inf")
    return float(numeric.round_down((eps_star - coef.alpha) / coef.slope))


# --------------------------------------------------------------------------------------
# Domain supremum (spec A10): rigorous branch-and-bound over the norm interval
# --------------------------------------------------------------------------------------


def _nan_up(ub: np.ndarray) -> np.ndarray:
    """A cell bound that came out NaN (overflow far out in the domain) bounds nothing: +inf."""
    ub = np.asarray(ub, dtype=float)
    return np.where(np.isnan(ub), np.inf, ub)


def domain_supremum(
    cell_upper: Callable[[np.ndarray, np.ndarray], np.ndarray],
    point_lower: Callable[[np.ndarray], np.ndarray],
    radius: float,
    *,
    grid: int = 4096,
    rel_tol: float = 1e-12,
    max_rounds: int = 60,
    max_cells: int = 200_000,
) -> tuple[float, float, float]:
    """Sound bracket [lower, upper] on sup_{z∈[0, r]} ε̂(z), and the maximiser found.

    ``cell_upper(zl, zh)`` bounds ε̂ on each cell from above (by monotonicity of ε̂ in
    the profile value and in q, spec A4); ``point_lower(z)`` is ε̂ at a point, rounded
    down. A dense grid of ``grid`` cells is refined by splitting every cell whose bound
    can still beat the best point, until the gap is below ``rel_tol`` (relative).
    This replaces the 100-point grid of the authors' code (spec A12-4), which
    under-reports the maximum.
    Returns:
        (upper, lower, argmax z).
    """
    edges = np.linspace(0.0, radius, grid + 1)
    zl, zh = edges[:-1], edges[1:]
    pts = np.concatenate([edges, 0.5 * (zl + zh)])
    vals = point_lower(pts)
    best_i = int(np.argmax(vals))
    best, best_z = float(vals[best_i]), float(pts[best_i])
    ub = _nan_up(cell_upper(zl, zh))
    dropped = 0.0  # the largest bound of the cells no longer refined (kept in the answer)
    for _ in range(max_rounds):
        top = float(np.max(ub))
        if top <= best * (1 + rel_tol) + 1e-300:
            break
        keep = ub > best * (1 + rel_tol)
        if not keep.all():
            dropped = max(dropped, float(np.max(ub[~keep])))
        zl, zh = zl[keep], zh[keep]
        if zl.size == 0:  # nothing left to refine (e.g. a bound that is +inf everywhere)
            ub = ub[keep]
            break
        if zl.size * 8 > max_cells:
            # too many candidate cells: keep the sound bound as it stands
            return float(max(top, best, dropped)), best, best_z
        parts = np.linspace(0.0, 1.0, 9)
        nl = (zl[:, None] + (zh - zl)[:, None] * parts[None, :-1]).ravel()
        nh = (zl[:, None] + (zh - zl)[:, None] * parts[None, 1:]).ravel()
        nh = np.maximum(nh, nl)
        mids = 0.5 * (nl + nh)
        v = point_lower(mids)
        i = int(np.argmax(v))
        if v[i] > best:
            best, best_z = float(v[i]), float(mids[i])
        zl, zh = nl, nh
        ub = _nan_up(cell_upper(zl, zh))
    top = float(np.max(ub)) if ub.size else best
    return float(max(top, best, dropped)), best, best_z


# --------------------------------------------------------------------------------------
# Accuracy (spec A8)
# --------------------------------------------------------------------------------------


def laplace_sum_mse(q: np.ndarray, sq_norm2: np.ndarray, scale: float, d: int) -> float:
    """Total MSE Σ(1/q − 1)‖x‖₂² + 2dβ² of the Horvitz-Thompson Laplace sum (spec A8)."""
    q = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, (1.0 / q - 1.0) * sq_norm2, np.where(sq_norm2 > 0, np.inf, 0.0))
    return float(np.sum(terms) + 2.0 * d * scale**2)


def var_opt_probabilities(norm2: np.ndarray, m: float) -> np.ndarray:
    """Variance-optimal q_i = min(1, ‖x_i‖₂/λ) with Σq = m (water-filling, spec A8).

    The oracle benchmark of the importance-sampling paper, §3.3: it minimises Σ‖x‖²/q at
    expected size m but depends on the data, so it is **not** a DP sampling map. λ is
    found by bisection on the monotone Σ min(1, ‖x‖/λ).
    """
    z = np.asarray(norm2, dtype=float)
    if m >= np.count_nonzero(z):
        return np.where(z > 0, 1.0, 0.0)
    lo, hi = 0.0, float(np.sum(z)) / m  # Σ min(1, z/hi) <= m at hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if np.sum(np.minimum(1.0, z / mid)) > m:
            lo = mid
        else:
            hi = mid
    return np.minimum(1.0, z / hi)


# --------------------------------------------------------------------------------------
# Reproducible Poisson draws (Philox keyed by seed and global row index)
# --------------------------------------------------------------------------------------


def uniforms(seed: int, start: int, count: int) -> np.ndarray:
    """U(0,1) draws for rows start..start+count−1, identical however rows are chunked.

    Row i's draw comes from a Philox counter-based generator with key = seed and
    counter = i (one 64-bit block per row), so chunked, streamed and distributed runs
    draw the same value for the same row.
    """
    bits = np.empty(count, dtype=np.uint64)
    # Philox4x64 gives 4 words per counter; advance so that word 4i is row i's
    bg = np.random.Philox(key=np.uint64(seed & 0xFFFFFFFFFFFFFFFF))
    bg = bg.advance(start) if start else bg
    raw = np.random.Generator(bg).bit_generator.random_raw(count * 4)
    bits[:] = np.asarray(raw, dtype=np.uint64).reshape(count, 4)[:, 0]
    u: FloatArray = ((bits >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)
    return u
