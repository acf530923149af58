"""Independent mpmath formulas for the cluster-type schemes (50 digits)."""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def ratio(frac: float, k: float, eps: float) -> mp.mpf:
    """B(A, K, ε) = log[(A e^ε + (1 − A)e^{−Kε}) / (A + (1 − A)e^{−Kε})] (spec §0)."""
    a, k, e = mp.mpf(frac), mp.mpf(k), mp.mpf(eps)
    t = (1 - a) * mp.exp(-k * e)
    return mp.log((a * mp.exp(e) + t) / (a + t))


def amplification(q: float, eps: float) -> mp.mpf:
    """A(q, ε) = log(1 + q(e^ε − 1))."""
    return mp.log(1 + mp.mpf(q) * mp.expm1(mp.mpf(eps)))


def two_cluster_count(b: int, eps: float) -> mp.mpf:
    """001 §4 eq. (2): log[(1 + e^{−εb})/(e^{−ε} + e^{−εb})]."""
    e = mp.mpf(eps)
    return mp.log((1 + mp.exp(-e * b)) / (mp.exp(-e) + mp.exp(-e * b)))
