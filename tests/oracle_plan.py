"""Independent mpmath / brute-force references for the accuracy planner (spec §9)."""

from __future__ import annotations

import mpmath

mpmath.mp.dps = 60


def noise_ratio(eps: float, rho: float) -> mpmath.mpf:
    """r(ε, ρ) = (ρ log(1 + (e^ε − 1)/ρ) / ε)² (002 eq. 8) in 60-digit arithmetic."""
    e, r = mpmath.mpf(eps), mpmath.mpf(rho)
    return (r * mpmath.log(1 + (mpmath.exp(e) - 1) / r) / e) ** 2


def one_minus_noise_ratio(eps: float, rho: float) -> mpmath.mpf:
    return 1 - noise_ratio(eps, rho)


def max_rate_for_gain(q: float, eps: float) -> mpmath.mpf:
    """ρ = expm1(ε)/expm1(ε/√(1 − q)) (spec §9.2)."""
    e = mpmath.mpf(eps)
    return mpmath.expm1(e) / mpmath.expm1(e / mpmath.sqrt(1 - mpmath.mpf(q)))


def smooth_sensitivity_brute(y: list[float], b: float, lower: float, upper: float) -> float:
    """002 eq. 4 by brute force over every k and t (O(n²)), boundary y_i = L / U."""
    ys = sorted(y)
    n = len(ys)
    m = (n + 1) // 2

    def at(i: int) -> float:
        if i < 1:
            return lower
        if i > n:
            return upper
        return ys[i - 1]

    best = 0.0
    for k in range(n + 1):
        a = max(at(m + t) - at(m + t - k - 1) for t in range(k + 2))
        best = max(best, float(mpmath.exp(-k * mpmath.mpf(b)) * a))
    return best
