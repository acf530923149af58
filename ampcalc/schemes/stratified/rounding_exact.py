"""The exact loss of one stratum under randomised rounding, M pure ε-DP (derived).

A stratum of n records, P, against P ∪ {x} (n + 1 records): each side draws ⌊r·size⌋ or
⌈r·size⌉ records (the latter with probability equal to the fractional part), then a
simple random sample of that size. The other strata are drawn independently and alike
on both sides, so a mechanism's loss for the pair is at most the worst loss of the
stratum alone, and a mechanism reading the stratum alone attains it.

Reduction (docs/derivations.md §10.1): both sample distributions are invariant under
permutations of P's records, so the best event can be averaged over them: it depends
only on (b, j), b = [x ∈ S] and j = |S ∖ {x}|. For pure ε the worst-case loss is the
largest log E_{P∪{x}}[e^{g}] − log E_P[e^{g}] (and the same with the two sides
swapped) over functions g of (b, j) with |g(S) − g(S′)| <= ε_D for S′ = S ± one record
and <= ε_R for a replacement, i.e. g Lipschitz for the path metric d on the grid of
(b, j) (edges: j ± 1 and b ± 1 cost ε_D; (1, j) to (0, j + 1) costs ε_R <= 2ε_D).
P's sample sits on (0, k) and (0, k + 1) (k = ⌊r·n⌋); fixing g(0, k) = 0 and
u = g(0, k + 1) ∈ [−ε_D, ε_D], the nodes of the other side are best set as high (or
low) as the metric lets them, min(d(A0, ·), u + d(A1, ·)) (McShane's extension), and the
objective is then a ratio of linear functions of e^u on each piece between the
breakpoints: its maximum is at a breakpoint or an end. The value is exact, and the
maximising g, scaled by a small constant, is an ε-DP mechanism attaining it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ampcalc.math import numeric

_EPS64 = float(np.finfo(float).eps)
_SPLIT = 134217729.0  # 2^27 + 1, Veltkamp's splitting constant


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x = fl(a·b) and its exact error e (a·b = x + e), Dekker's algorithm."""
    x = a * b

    def split(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = _SPLIT * v
        hi = c - (c - v)
        return hi, v - hi

    ah, al = split(a)
    bh, bl = split(b)
    err = al * bl - (((x - ah * bh) - al * bh) - ah * bl)
    return x, err


def _rounding(rate: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """⌊r·size⌋, the fractional part f of r·size and 1 − f, each from the exact product
    (a rate stated as a float is a binary fraction; its product with an integer is rounded
    once by floating point, and the rounding's outcome depends on the exact value): 1 − f
    is formed from the product itself, so it keeps its relative accuracy when f is
    within rounding of 1."""
    x, err = _two_product(rate, size)
    k = np.floor(x)
    frac = (x - k) + err
    k = np.where(frac < 0.0, k - 1.0, np.where(frac >= 1.0, k + 1.0, k))
    f = np.clip((x - k) + err, 0.0, 1.0)
    g = np.clip(((k + 1.0) - x) - err, 0.0, 1.0)
    return k, f, g


def _cross(j0: np.ndarray, j1: np.ndarray, ed: np.ndarray, er: np.ndarray) -> np.ndarray:
    """d((0, j0), (1, j1)): x joins directly (ε_D per step), or one replacement (ε_R)
    takes (0, j1 + 1) to (1, j1)."""
    gap = j0 - j1
    out: np.ndarray = np.minimum(ed * (1.0 + np.abs(gap)), er + ed * np.abs(gap - 1.0))
    return out


def _nodes(
    rate: np.ndarray, n: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, np.ndarray, np.ndarray]]]:
    """P's two sizes (k, frac, 1 − frac) and the other side's nodes [(b, j, weight)]."""
    k, f, g = _rounding(rate, n)
    k1, f1, g1 = _rounding(rate, n + 1.0)
    nodes: list[tuple[int, np.ndarray, np.ndarray]] = []
    for m, w in ((k1, g1), (k1 + 1.0, f1)):
        # whole numbers below 2^53: the complement of the share is formed exactly
        nodes.append((0, m, w * ((n + 1.0 - m) / (n + 1.0))))
        nodes.append((1, m - 1.0, w * (m / (n + 1.0))))
    return k, f, g, nodes


def _value(
    w: np.ndarray, h: np.ndarray, f: np.ndarray, g: np.ndarray, u: np.ndarray, sign: float
) -> tuple[np.ndarray, np.ndarray]:
    """sign·(log Σ_i w_i e^{h_i} − log(g + f·e^u)) and an absolute error bound; nodes
    along axis 1 of ``h`` (candidates u along axis 0), weights ``w`` along axis 0.

    Two evaluations, the one with the smaller error bound kept: log1p(d/den) with d =
    Σ w·expm1(h) − f·expm1(u) (the difference of the two sides, as Σ w = f + g = 1; no
    cancellation when the value is small) and den = g + f·e^u, error (8 ulps of d's
    terms + 8 ulps of d)/Σ w e^h + 8 ulps of the value; and log Σ w e^h − log(g + f e^u)
    in log space (both sums of positive terms), error 16 ulps of the largest log term."""
    with np.errstate(all="ignore"):
        log_w = np.where(w > 0.0, np.log(np.where(w > 0.0, w, 1.0)), -np.inf)
        log_f = np.where(f > 0.0, np.log(np.where(f > 0.0, f, 1.0)), -np.inf)
        log_g = np.where(g > 0.0, np.log(np.where(g > 0.0, g, 1.0)), -np.inf)
        lw_h = log_w + h
        num = np.logaddexp.reduce(lw_h, axis=1)
        log_den = np.logaddexp(log_g, log_f + u)
        big = num - log_den
        finite = np.where(np.isfinite(lw_h), np.abs(lw_h), 0.0).max(axis=1)
        den_terms = np.maximum(
            np.where(np.isfinite(log_g), np.abs(log_g), 0.0),
            np.where(np.isfinite(log_f + u), np.abs(log_f + u), 0.0),
        )
        err_big = 16.0 * _EPS64 * (finite + den_terms + 4.0)
        # the difference form, where no exponential overflows
        terms = w * np.expm1(h)
        p_term = f * np.expm1(u)
        diff = terms.sum(axis=1) - p_term
        den = g + f * np.exp(u)
        num_pos = np.exp(num)
        small = np.log1p(np.maximum(diff / den, -1.0))
        size = np.abs(terms).sum(axis=1) + np.abs(p_term)
        err_small = 8.0 * _EPS64 * (size + np.abs(diff)) / num_pos + 8.0 * _EPS64 * np.abs(small)
        err_small = np.where(
            np.isfinite(err_small) & np.isfinite(small) & (num_pos > 0.0), err_small, np.inf
        )
        take_small = err_small < err_big
        value = np.where(take_small, small, big)
        err = np.where(take_small, err_small, err_big)
    return sign * value, err


def _directions(
    rate: np.ndarray, n: np.ndarray, ed: np.ndarray, er: np.ndarray
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(value, error) of adding x to n records and of removing it from n + 1."""
    k, f, g, nodes = _nodes(rate, n)
    d0 = []  # d(A0, node), A0 = (0, k)
    d1 = []  # d(A1, node), A1 = (0, k + 1)
    for b, j, _ in nodes:
        if b == 0:
            d0.append(ed * np.abs(j - k))
            d1.append(ed * np.abs(j - k - 1.0))
        else:
            d0.append(_cross(k, j, ed, er))
            d1.append(_cross(k + 1.0, j, ed, er))
    w = np.stack([wt for _, _, wt in nodes])
    a0, a1 = np.stack(d0), np.stack(d1)
    out = []
    for sign in (1.0, -1.0):
        # breakpoints of min(d0, u + d1) (adding) or max(−d0, u − d1) (removing), and ±ε
        u = np.concatenate([np.stack([-ed, ed]), np.clip(sign * (a0 - a1), -ed, ed)])
        uu = u[:, None]
        h = np.minimum(a0, uu + a1) if sign > 0 else np.maximum(-a0, uu - a1)
        v, e = _value(w, h, f, g, u, sign)
        i = np.argmax(v, axis=0)[None]
        out.append((np.take_along_axis(v, i, 0)[0], np.take_along_axis(e, i, 0)[0]))
    return out[0], out[1]


def _better(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    take = b[0] > a[0]
    return np.where(take, b[0], a[0]), np.where(take, b[1], a[1])


def stratum_exact(
    rate: Any, size: Any, eps_add_remove: Any, eps_replace_one: Any
) -> dict[str, np.ndarray]:
    """Exact losses of one stratum of ``size`` records at rate r under randomised
    rounding, for M pure ε_D-DP under add-remove and ε_R-DP under replace-one (ε_R
    capped at 2ε_D): ``add`` (a record added to the stated stratum, or to one with a
    record fewer) and ``remove`` (a record of it removed, or of the stratum one larger),
    each as ``(lower, upper)`` of the one value, rounded outward; ``lower``/``upper`` the
    worse of the two. Arrays broadcast (strata along the first axis, as given)."""
    r = np.asarray(rate, dtype=float)
    n = np.asarray(size, dtype=float)
    ed = np.asarray(eps_add_remove, dtype=float)
    er = np.minimum(np.asarray(eps_replace_one, dtype=float), 2.0 * ed)
    r, n, ed, er = np.broadcast_arrays(r, n, ed, er)
    out: dict[str, Any] = {}
    adds, rems = [], []
    for base in (n - 1.0, n):
        (va, ea), (vr, e_r) = _directions(r, np.maximum(base, 0.0), ed, er)
        valid = base >= 0.0
        adds.append((np.where(valid, va, 0.0), np.where(valid, ea, 0.0)))
        rems.append((np.where(valid, vr, 0.0), np.where(valid, e_r, 0.0)))
    for name, parts in (("add", adds), ("remove", rems)):
        v, e = _better(parts[0], parts[1])
        lo = np.maximum(numeric.round_down(v - e), 0.0)
        hi = np.maximum(numeric.round_up(v + e), 0.0)
        out[name] = (lo, hi)
    out["lower"] = np.maximum(out["add"][0], out["remove"][0])
    out["upper"] = np.maximum(out["add"][1], out["remove"][1])
    return out
