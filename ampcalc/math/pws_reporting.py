"""Threshold sampling and Algorithm 3 of private weighted sampling (pure numpy).

Cohen et al. 2021 (Cohen et al. 2021): ``inclusion_probabilities`` gives the
sampling probabilities q_i of threshold sampling (Alg. 1, Eq. 1), ``L_eps_delta`` the
length L(ε, δ) of a binding stretch (Eq. 3), and ``reporting_probabilities`` the optimal
key-reporting probabilities π_i (Alg. 3): an exact recursion in O(N), vectorised where
π_i = q_i, with scalar steps only where privacy binds (at most 2⌈L⌉ per binding
stretch, spec B4/B5).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

METHODS = ("ppswor", "priority", "none")


def inclusion_probabilities(
    n: int, *, method: str, threshold: float = 1.0, weight_power: float = 1.0
) -> np.ndarray:
    """q_1..q_n of threshold sampling (Cohen et al. 2021 Alg. 1, Eq. 1; spec B2).

    ppswor (Exp[1] scores): q_i = 1 − e^{−τ f(i)}; priority (U[0,1]): min(1, τ f(i));
    none: q_i ≡ 1; f(i) = i^p. Returned as float64 array of length n (index 0 is i = 1).
    """
    i = np.arange(1, n + 1, dtype=float)
    if method == "none":
        return np.ones(n)
    with np.errstate(over="ignore"):  # f = inf gives q = 1, as it should
        f = i if weight_power == 1 else i**weight_power
    if method == "ppswor":
        x = np.multiply(f, -threshold, out=f if f is i else None)
        np.expm1(x, out=x)
        return np.negative(x, out=x)
    if method == "priority":
        return np.minimum(1.0, threshold * f)
    raise ValueError(f"unknown method {method!r}")


def L_eps_delta(eps: float, delta: float) -> float:
    """L(ε, δ) = (1/ε) ln((e^ε − 1 + 2δ)/(δ(e^ε + 1))) (Cohen et al. 2021 Eq. 3), stable form."""
    if eps > 30.0:  # e^ε − 1 + 2δ = e^ε(1 + (2δ − 1)e^{−ε}); no overflow for large ε
        num = eps + math.log1p((2.0 * delta - 1.0) * math.exp(-eps))
    else:
        num = math.log(math.expm1(eps) + 2.0 * delta)
    den = math.log(delta) + eps + math.log1p(math.exp(-eps))
    return max(0.0, (num - den) / eps)


def step_constants(eps: float) -> tuple[float, float]:
    # above ε = 700 the factor e^ε is taken as e^700 (every constraint π_i <= e^ε π_{i−1} + δ
    # at the smaller factor implies the one at ε: the table stays private, never overflows)
    eps = min(eps, 700.0)
    return math.exp(eps), math.exp(-eps)


_U = 2.0**-53  # unit roundoff
_BLOCK = 1 << 16  # q values converted to Python floats at a time by the scalar steps


def _alg3_step(p: float, qi: float, e_dn: float, en_up: float, delta: float) -> float:
    """One step of Algorithm 3 with both privacy terms rounded down (never above the
    exact e^ε p + δ and 1 − e^{−ε}(1 − p − δ))."""
    a = delta if p == 0.0 else (e_dn * p + delta) * (1.0 - 4.0 * _U)
    m = math.fsum((1.0, -p, -delta))  # correctly rounded: its sign is exact
    if m <= 0.0:
        b = 1.0
    else:
        c = en_up * math.nextafter(m, math.inf) * (1.0 + 4.0 * _U)
        b = math.nextafter(1.0 - c, 0.0)
    return qi if qi <= a and qi <= b else (a if a < b else b)


def _keeps_exact(
    exact: Callable[[int], Fraction | None], i: int, e_dn: float, en_up: float, delta: float
) -> bool:
    """Does π_i = q_i hold exactly when π_{i−1} = q_{i−1} (1-based i), by rational
    arithmetic on the exact q (e^ε rounded down, e^{−ε} up: a sufficient test)?"""
    qi = exact(i)
    prev = Fraction(0) if i == 1 else exact(i - 1)
    if qi is None or prev is None:
        return False
    d = Fraction(delta)
    if qi > Fraction(e_dn) * prev + d:
        return False
    slack = 1 - prev - d
    return slack <= 0 or qi <= 1 - Fraction(en_up) * slack


def reporting_probabilities(
    q: np.ndarray,
    eps: float,
    delta: float,
    *,
    exact: Callable[[int], Fraction | None] | None = None,
) -> np.ndarray:
    """Algorithm 3 of Cohen et al. 2021:
    π_i = min{q_i, e^ε π_{i−1} + δ, 1 + e^{−ε}(π_{i−1} + δ − 1)}.

    Basis: Cohen et al. 2021 Alg. 3, Lemma 4.1 (pointwise maximal p_i = π_i/q_i).
    Conditions: ε > 0, 0 < δ <= 1, q non-decreasing (checked by the caller).
    Numerics: the two privacy terms are rounded down (a few ulps), so the float π
        satisfies the DP constraints exactly, not only up to rounding. Where
        π_{i−1} = q_{i−1} and q_i is clearly below both terms (checked vectorised with
        a deflated margin) the step gives π_i = q_i; scalar steps run only where
        privacy binds or might bind (at most 2⌈L⌉ per binding stretch).
    Exact q: ``exact(i)`` gives the exact q_i (1-based) as a rational when the float
        q_i rounds it (priority sampling: q_i = min(1, τ·i), τ the float given), or
        None. Where a binding stretch starts (π_{i−1} = q_{i−1}, so the key at i − 1 is
        reported with its exact sampling probability) and the float step says π_i < q_i,
        the step is decided exactly: if q_i meets both privacy terms in rational
        arithmetic, π_i = q_i. Without it a q that is exactly 1 − δ (τ = δ, i = 1/τ)
        rounds below and gives π_i = 1 − 2^-53 at q_i = 1, a spurious privacy cost.
    """
    q = np.asarray(q, dtype=float)
    n = q.size
    e_pos, e_neg = step_constants(eps)
    e_dn = math.nextafter(e_pos, 0.0)
    en_up = math.nextafter(e_neg, math.inf)
    qprev = np.concatenate(([0.0], q[:-1]))
    with np.errstate(over="ignore", invalid="ignore"):
        # g = min(e^ε q_{i−1} + δ, 1 + e^{−ε}(q_{i−1} + δ − 1)), in place (two arrays of n)
        g = np.multiply(qprev, e_pos)
        g += delta
        qprev += delta
        qprev -= 1.0
        qprev *= e_neg
        qprev += 1.0
        np.minimum(g, qprev, out=g)
        del qprev
        g *= 1.0 - 64.0 * _U
        g -= 2.0**-50  # below the scalar step's terms
    binds = q > g  # π_i < q_i may happen when π_{i−1} = q_{i−1}
    del g
    pi: np.ndarray = q.copy()
    idx = np.flatnonzero(binds)
    k = 0
    base = 0
    ql: list[float] = []  # q[base : base + len(ql)] as Python floats, a block at a time
    while k < idx.size:
        i = int(idx[k])
        p = 0.0 if i == 0 else float(q[i - 1])
        start = True  # π_{i−1} = q_{i−1} (or i = 1)
        while i < n:
            if not base <= i < base + len(ql):
                base, ql = i, q[i : i + _BLOCK].tolist()
            qi = ql[i - base]
            p = _alg3_step(p, qi, e_dn, en_up, delta)
            if start and p < qi and exact is not None:
                if _keeps_exact(exact, i + 1, e_dn, en_up, delta):
                    p = qi
            start = False
            pi[i] = p
            i += 1
            if p == qi:
                break
        # continue from the next flagged index at or after i (π_{i−1} = q_{i−1} again)
        k = int(np.searchsorted(idx, i))
    return pi


def settled_index(q: np.ndarray, pi: np.ndarray) -> int | None:
    """Smallest m with π_i = q_i for every i >= m within the arrays (1-based), or None
    when the last row already differs."""
    diff = np.flatnonzero(pi != q)
    if diff.size == 0:
        return 1
    last = int(diff[-1]) + 1  # 1-based index of the last row with π < q
    return last + 1 if last < q.size else None
