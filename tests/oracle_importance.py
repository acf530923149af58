"""Independent mpmath oracle for importance sampling (003, spec Part A), 50 digits.

Written from the formulas, not from ampcalc's code: Theorem 6 by its definition,
w* by bisection in high precision, domain maxima by a dense mpmath grid.
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def amplify(eps_w, w):
    """ε̂ = log(1 + (e^{ε} − 1)/w) (003 Theorem 6, q = 1/w)."""
    return mp.log(1 + mp.expm1(mp.mpf(eps_w)) / mp.mpf(w))


def eps_hat_q(q, a, linear=True):
    """ε̂ = log(1 + q(e^{ε(1/q, x)} − 1)) for ε(w, x) = a·w (linear) or a (constant)."""
    q = mp.mpf(q)
    e = mp.mpf(a) / q if linear else mp.mpf(a)
    return mp.log(1 + q * mp.expm1(e))


def w_star(a, eps_star):
    """Largest w >= 1 with e^{a w} − 1 <= w(e^{ε*} − 1) (Theorem 10), by bisection."""
    a, c = mp.mpf(a), mp.expm1(mp.mpf(eps_star))
    g = lambda w: mp.expm1(a * w) - w * c  # noqa: E731
    lo, hi = mp.mpf(1), mp.mpf(2)
    while g(hi) <= 0:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if g(mid) <= 0:
            lo = mid
        else:
            hi = mid
    return lo


def coreset_lloyd_max(alpha, slope, b, s, r, points=4000):
    """max over a dense grid of z in [0, r] of log(1 + Q(e^{(alpha + slope z)/Q} − 1)),
    Q = min(1, b + s z²) (spec A10 Eq. 5, capped at 1), refined by golden section
    around the best point."""
    alpha, slope, b, s, r = map(mp.mpf, (alpha, slope, b, s, r))
    f = lambda z: eps_hat_q(min(mp.mpf(1), b + s * z * z), alpha + slope * z)  # noqa: E731
    best_i = max(range(points + 1), key=lambda i: f(r * i / points))
    lo = r * max(best_i - 1, 0) / points
    hi = r * min(best_i + 1, points) / points
    phi = (mp.sqrt(5) - 1) / 2
    for _ in range(120):
        m1, m2 = hi - phi * (hi - lo), lo + phi * (hi - lo)
        if f(m1) < f(m2):
            lo = m1
        else:
            hi = m2
    z = (lo + hi) / 2
    return max(f(z), f(mp.mpf(0)), f(r)), z


def lloyd_strong_convexity(s, iterations):
    """μ(x) = (T s)² e^{T s}: the correct 003 Eq. 4 constant (spec A9; not T²·s·e^{Ts}).

    ampcalc's bounds do not use it; kept here as the corrected reference value.
    """
    ts = iterations * mp.mpf(s)
    return ts**2 * mp.exp(ts)


def laplace_sum_variance(q, x, scale):
    """Per-coordinate variance Σ_i (1/q_i − 1)x_ij² + 2β² of the HT Laplace sum (spec A8).

    ``q``: n inclusion probabilities; ``x``: n records of dimension d (rows). Returns
    d mpmath values.
    """
    d = len(x[0])
    return [
        mp.fsum((1 / mp.mpf(qi) - 1) * mp.mpf(row[j]) ** 2 for qi, row in zip(q, x, strict=True))
        + 2 * mp.mpf(scale) ** 2
        for j in range(d)
    ]
