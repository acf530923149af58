"""High-precision reference formulas (mpmath, 50 digits), written from the papers.

Independent of ``ampcalc.numeric``: nothing here imports ampcalc. Each function
returns an ``mpmath.mpf`` so tests can compare a float bound one-sidedly against
the exact value (``mpf(upper) >= oracle``).
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def amplification(q: float, eps: float) -> mp.mpf:
    """log(1 + q(e^ε − 1)) — 000 Theorem 2.2 eq. (3)."""
    q, eps = mp.mpf(q), mp.mpf(eps)
    return mp.log1p(q * mp.expm1(eps))  # log1p: 1 + 1e-312 is 1 at 50 digits


def amplification_inverse(q: float, target: float) -> mp.mpf:
    """log(1 + (e^T − 1)/q) — 002 §3."""
    q, t = mp.mpf(q), mp.mpf(target)
    return mp.log1p(mp.expm1(t) / q)


def removal_kernel(q: float, eps: float) -> mp.mpf:
    """−log(1 − q(1 − e^{−ε}))."""
    q, eps = mp.mpf(q), mp.mpf(eps)
    return -mp.log((1 - q) + q * mp.exp(-eps))
