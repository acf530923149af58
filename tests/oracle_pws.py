"""Independent mpmath oracle for PWS (Cohen et al. 2021 Alg. 3, Eq. 3; the SbH
baseline of Sec. 8.1, Alg. 6)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import mpmath as mp
import numpy as np

from ampcalc.math import pws as pws_kernels


def pi_alg3(q: Sequence[float | mp.mpf], eps: float, delta: float, dps: int = 50) -> list[mp.mpf]:
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


def sbh_threshold(eps: float, delta: float) -> mp.mpf:
    """T = 1 + ln(1/δ)/ε (004 Sec. 8.1, Alg. 6; spec B9)."""
    return 1 + mp.log(1 / mp.mpf(delta)) / mp.mpf(eps)


def phi_sbh_closed(
    i: float, eps: float, delta: float, method: str, tau: float, dps: int = 60
) -> mp.mpf:
    """Sampled-SbH φ_i = ∫_T^∞ (ε/2)e^{−ε|y−i|} q(y) dy for f(i) = i, from plain
    antiderivatives (differences of large terms; the working precision absorbs the
    cancellation): ppswor Pr[Y >= T] − ∫_T^∞ (ε/2)e^{−ε|y−i|}e^{−τy} dy; priority
    ∫_T^c (ε/2)e^{−ε|y−i|}τy dy + Pr[Y >= c], c = 1/τ."""
    with mp.workdps(dps):
        e, t, i_ = mp.mpf(eps), mp.mpf(tau), mp.mpf(i)
        T = sbh_threshold(eps, delta)

        def surv(v: mp.mpf) -> mp.mpf:
            return mp.exp(-e * (v - i_)) / 2 if v >= i_ else 1 - mp.exp(-e * (i_ - v)) / 2

        if method == "ppswor":
            if T >= i_:
                g = e / (2 * (e + t)) * mp.exp(-e * (T - i_)) * mp.exp(-t * T)
            else:
                g = e * mp.exp(-t * i_) / (2 * (e + t))
                if e != t:
                    g += (
                        e
                        / 2
                        * mp.exp(-e * i_)
                        * (mp.exp((e - t) * i_) - mp.exp((e - t) * T))
                        / (e - t)
                    )
                else:
                    g += e / 2 * mp.exp(-e * i_) * (i_ - T)
            return surv(T) - g
        c = 1 / t
        if c <= T:
            return surv(T)

        def seg(a: mp.mpf, b: mp.mpf, k: mp.mpf) -> mp.mpf:
            # ∫_a^b (ε/2) τ y e^{k(y − i)} dy
            def anti(y: mp.mpf) -> mp.mpf:
                return e / 2 * t * mp.exp(k * (y - i_)) * (y / k - 1 / k**2)

            return anti(b) - anti(a)

        total = mp.mpf(0)
        if i_ > T:
            total += seg(T, min(i_, c), e)
        if c > max(T, i_):
            total += seg(max(T, i_), c, -e)
        return total + surv(c)


def phi_sbh_quad(
    i: float, eps: float, delta: float, method: str, tau: float, power: float = 1.0
) -> mp.mpf:
    """Sampled-SbH φ_i by mpmath (tanh-sinh) quadrature of the defining integral, for
    any f(i) = i^p: the interval is split at T, i, the priority kink τ^{−1/p}, offsets
    k/ε from i (k up to 256), the levels τy^p = 2^k and a ratio-2 grid from T."""
    with mp.workdps(30):
        e, t, i_, p = mp.mpf(eps), mp.mpf(tau), mp.mpf(i), mp.mpf(power)
        T = sbh_threshold(eps, delta)
        if method == "ppswor":

            def q(y: mp.mpf) -> mp.mpf:
                return -mp.expm1(-t * y**p)
        else:

            def q(y: mp.mpf) -> mp.mpf:
                return min(mp.mpf(1), t * y**p)

        def f(y: mp.mpf) -> mp.mpf:
            return e / 2 * mp.exp(-e * abs(y - i_)) * q(y)

        base = max(T, i_)
        end = base + 256 / e
        pts = {T, base}
        if method == "priority" and t ** (-1 / p) > T:
            pts.add(t ** (-1 / p))
        for k in (0.25, 0.5, 1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192):
            if i_ - k / e > T:
                pts.add(i_ - k / e)
            pts.add(base + k / e)
        for k in range(-60, 10):
            y = (mp.mpf(2) ** k / t) ** (1 / p)
            if T < y < end:
                pts.add(y)
        y = T
        while y < end:
            y *= 2
            pts.add(y)
        grid = [*sorted(x for x in pts if x < end), end]
        return mp.quad(f, grid) + mp.quad(f, [end, mp.inf])


def hypoexponential_cdf(a: float, b: float, x: float) -> mp.mpf:
    """Pr[Exp(a) + Exp(b) <= x] = 1 − (b e^{−ax} − a e^{−bx})/(b − a), at 60 digits."""
    with mp.workdps(60):
        a_, b_, x_ = mp.mpf(a), mp.mpf(b), mp.mpf(x)
        if a_ == b_:
            return 1 - mp.exp(-a_ * x_) * (1 + a_ * x_)
        return 1 - (b_ * mp.exp(-a_ * x_) - a_ * mp.exp(-b_ * x_)) / (b_ - a_)


def lemma44_ppswor(eps: float, delta: float, q: np.ndarray) -> np.ndarray:
    """ppswor shortcut (004 Lemma 4.4; spec B5): π_i = π*_i for i < ℓ, q_i for i >= ℓ,
    ℓ = min{i : π*_i > q_i}. Holds for ppswor with f(i) = i only (not for PPS).

    A closed-form cross-check of Algorithm 3 (``pws_kernels.reporting_probabilities``),
    in floats, on ``pi_star_closed``."""
    q = np.asarray(q, dtype=float)
    star = pi_star_closed(eps, delta, q.size)
    over = np.flatnonzero(star > q)
    if over.size == 0:
        return star
    ell = int(over[0])
    out: np.ndarray = star.copy()
    out[ell:] = q[ell:]
    return out


def pi_star_closed(eps: float, delta: float, n: int) -> np.ndarray:
    """π*_1..π*_n for q ≡ 1 in closed form, any L (spec B5, the corrected Eq. 4).

    Basis: 004 Lemma 4.2 as corrected: the printed form is off by one (2L+2−i; use
        2L+1−i); the general-L form: K = ⌊L⌋ + 1, κ = δ/(e^ε − 1);
        π*_i = δ(e^{εi} − 1)/(e^ε − 1) for i <= K; for i > K,
        y_i = (1 − π*_K + κ)e^{−ε(i−K)} − κ and π*_i = 1 − y_i while y_i > 0, else 1.
    A float cross-check of Algorithm 3 (``pws_kernels.reporting_probabilities``).
    """
    L = pws_kernels.L_eps_delta(eps, delta)
    K = math.floor(L) + 1
    i = np.arange(1, n + 1, dtype=float)
    em1 = math.expm1(eps)
    first = delta * np.expm1(eps * np.minimum(i, K)) / em1
    first = np.minimum(first, 1.0)
    pk = min(1.0, delta * math.expm1(eps * K) / em1)
    kappa = delta / em1
    y = (1.0 - pk + kappa) * np.exp(-eps * np.maximum(i - K, 0.0)) - kappa
    second = np.where(y > 0, 1.0 - y, 1.0)
    return np.where(i <= K, first, second)


def duplicate_scan(chunks: Sequence[Sequence[str]]) -> str | None:
    """The duplicate-key error the plain dict scan gives for ``chunks`` of keys read in
    order from ``s.csv`` (data from line 2), or None: the reference for the sorted-hash
    checks (``KeyLog``, the byte path)."""
    from ampcalc.model.errors import DesignError
    from ampcalc.records.pws_files import check_duplicates

    seen: dict[str, int] = {}
    line = 2
    for keys in chunks:
        lines = range(line, line + len(keys))
        try:
            check_duplicates(keys, lines, seen, "s.csv")
        except DesignError as err:
            return str(err)
        seen.update(zip(keys, lines, strict=True))
        line += len(keys)
    return None
