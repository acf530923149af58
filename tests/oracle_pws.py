"""Independent mpmath oracle for PWS (004_219872908bad6779.txt Alg. 3, Eq. 3)."""

from __future__ import annotations

import mpmath as mp


def pi_alg3(q: list[float], eps: float, delta: float, dps: int = 50) -> list[mp.mpf]:
    """Algorithm 3 at high precision: π_i = min(q_i, e^ε π + δ, 1 + e^{−ε}(π + δ − 1))."""
    with mp.workdps(dps):
        e = mp.e ** mp.mpf(eps)
        d = mp.mpf(delta)
        p = mp.mpf(0)
        out = []
        for qi in q:
            p = min(mp.mpf(qi), e * p + d, 1 + (p + d - 1) / e)
            out.append(p)
        return out


def L(eps: float, delta: float) -> mp.mpf:
    """Eq. 3 at high precision."""
    with mp.workdps(50):
        e = mp.e ** mp.mpf(eps)
        return mp.log((e - 1 + 2 * mp.mpf(delta)) / (mp.mpf(delta) * (e + 1))) / eps
