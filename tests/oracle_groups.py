"""Independent mpmath oracles for the with-replacement and group formulas (50 digits).

Each function sums the exact pmf (binomial coefficients in mpmath), not the recurrence
used by ampcalc._groups.
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def binomial_log_mgf(m: int, p, eps) -> mp.mpf:
    """log E[e^{Jε}], J ~ Binomial(m, p): m·log(1 + p(e^ε − 1))."""
    p, eps = mp.mpf(p), mp.mpf(eps)
    return m * mp.log1p(p * mp.expm1(eps))


def hypergeom_pmf(n: int, g: int, m: int) -> dict[int, mp.mpf]:
    """Pr[J = k], J ~ Hypergeometric(N = n, K = g, draws = m), by binomial coefficients."""
    total = mp.binomial(n, m)
    return {
        k: mp.binomial(g, k) * mp.binomial(n - g, m - k) / total
        for k in range(max(0, g + m - n), min(g, m) + 1)
    }


def hypergeom_log_mgf(n: int, g: int, m: int, eps) -> mp.mpf:
    """log E[e^{Jε}] for J ~ Hypergeometric(n, g, m)."""
    eps = mp.mpf(eps)
    pmf = hypergeom_pmf(n, g, m)
    return mp.log(mp.fsum(pk * mp.exp(k * eps) for k, pk in pmf.items()))


def relaxation(pmf: dict[int, mp.mpf], eps) -> mp.mpf:
    """Optimum of the group-privacy relaxation by brute force over thresholds."""
    eps = mp.mpf(eps)
    ks = sorted(pmf)
    best = mp.mpf("-inf")
    for cut in range(len(ks) + 1):
        num = den = mp.mpf(0)
        for i, k in enumerate(ks):
            if i < cut:
                num += pmf[k]
                den += pmf[k] * mp.exp(-k * eps)
            else:
                num += pmf[k] * mp.exp(k * eps)
                den += pmf[k]
        best = max(best, mp.log(num / den))
    return best


def binomial_pmf(m: int, p) -> dict[int, mp.mpf]:
    p = mp.mpf(p)
    return {k: mp.binomial(m, k) * p**k * (1 - p) ** (m - k) for k in range(m + 1)}
