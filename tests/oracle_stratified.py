"""Independent mpmath formulas for the stratified family (50 digits).

Theorem 4.3/7.2 of Bun et al., its size-aware proof form, the Poisson
kernel of Bun et al. 2020, Lemma 3.3, and the exact true loss of the count
mechanism |S| + Lap(b) under a two-point sample-size distribution (spec §5.1).
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def amp(q, eps):
    """log(1 + q(e^ε − 1)) (any q > 0)."""
    q, eps = mp.mpf(q), mp.mpf(eps)
    return mp.log(1 + q * mp.expm1(eps))


def thm43(r, eps, n=None):
    """Theorem 4.3 (n None) or the size-aware proof form with a = r + 1/n."""
    r = mp.mpf(r)
    a = 2 * r if n is None else r + mp.mpf(1) / n
    return amp(a, 2 * mp.mpf(eps)) + amp(r, 2 * mp.mpf(eps))


def thm43_inverse(r, target):
    """The ε with thm43(r, ε) = target: the naive root u = (√(1 + 8e^T) − 3)/(4r) of
    2r²u² + 3ru + 1 − e^T = 0 (spec §5.1), evaluated with enough digits to cancel."""
    r, t = mp.mpf(r), mp.mpf(target)
    with mp.workdps(max(60, int(t / 2) + 60)):
        u = (mp.sqrt(1 + 8 * mp.e**t) - 3) / (4 * r)
        return mp.log1p(u) / 2


def size_pmf(r, n):
    """Randomised rounding of r·n: {size: probability}."""
    x = mp.mpf(r) * n
    lo = int(mp.floor(x))
    p = x - lo
    return {lo: 1 - p, lo + 1: p} if p > 0 else {lo: mp.mpf(1)}


def laplace_mixture_loss(pmf_p, pmf_q, scale=1):
    """max_x |log f_P(x)/f_Q(x)| for mixtures of Lap(m, scale) with weights pmf.

    Between component locations the ratio is a Möbius function of e^{x/scale}, so
    it is monotone there; in the tails it is constant: the supremum is attained at a
    component location.
    """
    b = mp.mpf(scale)

    def dens(pmf, x):
        return sum(w * mp.exp(-abs(x - m) / b) / (2 * b) for m, w in pmf.items())

    points = sorted(set(pmf_p) | set(pmf_q))
    return max(abs(mp.log(dens(pmf_p, x) / dens(pmf_q, x))) for x in points)


def _rr_sizes(rate, n):
    """⌊r·n⌋ and frac(r·n), exactly for the binary rate."""
    from fractions import Fraction

    x = Fraction(rate) * n
    k = x.numerator // x.denominator
    return k, mp.mpf(x - k)


def rr_exact(rate, n, eps, eps_r):
    """The exact loss of one stratum under randomised rounding (docs/derivations.md §10.1),
    pure ε_D add-remove / ε_R replace-one: {"add", "remove"} over the pairs (n − 1, n) and
    (n, n + 1): max over u at the breakpoints and ±ε_D of the McShane-extended ratio."""
    e, er = mp.mpf(eps), min(mp.mpf(eps_r), 2 * mp.mpf(eps))

    def dist(b, j, k):  # d((0, k), (b, j))
        if b == 0:
            return e * abs(j - k)
        return min(e * (1 + abs(k - j)), er + e * abs(k - j - 1))

    out = {"add": mp.mpf(0), "remove": mp.mpf(0)}
    for size in (n - 1, n):
        if size < 0:
            continue
        k, f = _rr_sizes(rate, size)
        k1, f1 = _rr_sizes(rate, size + 1)
        nodes = []
        for m, w in ((k1, 1 - f1), (k1 + 1, f1)):
            share = mp.mpf(m) / (size + 1)
            nodes += [(0, m, w * (1 - share)), (1, m - 1, w * share)]
        d0 = [dist(b, j, k) for b, j, _ in nodes]
        d1 = [dist(b, j, k + 1) for b, j, _ in nodes]
        for sign, key in ((1, "add"), (-1, "remove")):
            cands = [-e, e] + [
                max(-e, min(e, sign * (a - c))) for a, c in zip(d0, d1, strict=True)
            ]
            for u in cands:
                if sign > 0:
                    hs = [min(a, u + c) for a, c in zip(d0, d1, strict=True)]
                else:
                    hs = [max(-a, u - c) for a, c in zip(d0, d1, strict=True)]
                num = sum(w * mp.exp(h) for (_, _, w), h in zip(nodes, hs, strict=True))
                den = (1 - f) + f * mp.exp(u)
                out[key] = max(out[key], sign * (mp.log(num) - mp.log(den)))
    return out
