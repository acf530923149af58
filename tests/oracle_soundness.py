"""mpmath references for the formulas that have no oracle elsewhere (soundness audit).

Independent of ampcalc: nothing here imports it. Each function works at the caller's
precision (the audit runs them under ``mp.workdps(60)``) and takes the float inputs as
exact numbers. Formulas are written from the papers and the spec, not from the code.
"""

from __future__ import annotations

import mpmath as mp


def amp(q, eps) -> mp.mpf:
    """A(q, ε) = log(1 + q(e^ε − 1)), any q >= 0 (000 Theorem 2.2 eq. (3))."""
    return mp.log1p(mp.mpf(q) * mp.expm1(mp.mpf(eps)))


def removal(q, eps) -> mp.mpf:
    """−log(1 − q(1 − e^{−ε})), the removal direction, as −log((1 − q) + q e^{−ε}) (two
    nonnegative terms: no cancellation when q(1 − e^{−ε}) is near 1)."""
    q, e = mp.mpf(q), mp.mpf(eps)
    return -mp.log((1 - q) + q * mp.exp(-e))


def ratio(frac, k, eps) -> mp.mpf:
    """B(A, K, ε) = log[(A e^ε + (1 − A)e^{−Kε}) / (A + (1 − A)e^{−Kε})] (spec §0), with
    K·ε taken exactly (K an integer or a ratio of exact inputs)."""
    a, e = mp.mpf(frac), mp.mpf(eps)
    t = (1 - a) * mp.exp(-mp.mpf(k) * e)
    return mp.log1p(a * mp.expm1(e) / (a + t))


def poisson_replace_exact(q, eps_d, eps_r) -> mp.mpf:
    """log((1 + q(e^ε − 1))/(1 + q(e^{ε − ε_R} − 1))), ε = ε_D, ε_R capped at 2ε_D: the
    exact replace-one value of Poisson sampling for pure ε (derivations §1.2)."""
    q, e = mp.mpf(q), mp.mpf(eps_d)
    r = min(mp.mpf(eps_r), 2 * e)
    # (1 − q) + q·e^x: a sum of two non-negative terms, no cancellation at any ε
    return mp.log((1 - q) + q * mp.exp(e)) - mp.log((1 - q) + q * mp.exp(e - r))


def poisson_replace_upper(q, eps_d, eps_r) -> mp.mpf:
    """The exact replace-one value (``poisson_replace_exact``)."""
    return poisson_replace_exact(q, eps_d, eps_r)


def poisson_replace_lower(q, eps_d, eps_r) -> mp.mpf:
    """The exact replace-one value (``poisson_replace_exact``): the witness attains it."""
    return poisson_replace_exact(q, eps_d, eps_r)


def data_dependent_upper(n, m, sens, eps) -> mp.mpf:
    """000 Lemma B.1 over both directions: A(min(1, (m + Δ)/N), 2ε) + Δε (spec §4.2)."""
    q = min(mp.mpf(1), mp.mpf(m + sens) / n)
    return amp(q, 2 * mp.mpf(eps)) + sens * mp.mpf(eps)


def theorem_5_3(frac, test_eps, eps2) -> mp.mpf:
    """000 Theorem 5.3: log(1 + (e^{ε″} − 1)A/(A + e^{−ε′}(1 − A)))."""
    a, e2, t = mp.mpf(frac), mp.mpf(eps2), mp.mpf(test_eps)
    return mp.log1p(mp.expm1(e2) * a / (a + mp.exp(-t) * (1 - a)))


def proposition_6_1(a, a_p, p, p_p, q, q_p) -> tuple[mp.mpf, mp.mpf]:
    """000 Proposition 6.1: (4) ln[pa / den], (5) ln[(pa + q(1 − a)) / den],
    den = p′a′ + q′(1 − a′)."""
    a, a_p, p, p_p, q, q_p = map(mp.mpf, (a, a_p, p, p_p, q, q_p))
    den = p_p * a_p + q_p * (1 - a_p)
    b4 = mp.log(p * a / den) if p * a > 0 else mp.mpf("-inf")
    num5 = p * a + q * (1 - a)
    b5 = mp.log(num5 / den) if num5 > 0 else mp.mpf("-inf")
    return b4, b5


def thm43_general(a, b, eps) -> mp.mpf:
    """log(1 + a(e^{2ε} − 1)) + log(1 + b(e^{2ε} − 1)) for given a, b (000 Theorem 4.3)."""
    x = 2 * mp.mpf(eps)
    return amp(a, x) + amp(b, x)


def thm43_general_inverse(a, b, target) -> mp.mpf:
    """ε with (1 + a u)(1 + b u) = e^T, u = e^{2ε} − 1: the positive root, stable form."""
    a, b, t = mp.mpf(a), mp.mpf(b), mp.mpf(target)
    em = mp.expm1(t)
    u = 2 * em / ((a + b) + mp.sqrt((a + b) ** 2 + 4 * a * b * em))
    return mp.log1p(u) / 2


def tilted_binomial(p, eps) -> tuple[mp.mpf, mp.mpf]:
    """(E_t̃[m]/N, 1 − E_t̃[m]/N) for m ~ Binomial(N, p) tilted by e^{εm}: the tilted
    law is Binomial(N, p′), p′ = p/(p + (1 − p)e^{−ε}); both ends without cancellation."""
    p, e = mp.mpf(p), mp.mpf(eps)
    den = p + (1 - p) * mp.exp(-e)
    return p / den, (1 - p) * mp.exp(-e) / den


def tilted_uniform(low: int, high: int, n: int, eps) -> tuple[mp.mpf, mp.mpf]:
    """(E_t̃[m], N − E_t̃[m]) for m uniform on {low..high} tilted by e^{εm}.

    Counted from the top, i = high − m, s = e^{−ε}: high − E = Σ i s^i / Σ s^i over
    i = 0..k, with Σ i s^i = s(1 − (k+1)s^k + k s^{k+1})/(1 − s)² (cancellation only in
    that bracket, absorbed by 40 extra digits)."""
    k = high - low
    e = mp.mpf(eps)
    if k == 0:
        return mp.mpf(low), mp.mpf(n - low)
    with mp.workdps(mp.mp.dps + 40):
        s = mp.exp(-e)
        em1 = -mp.expm1(-e)  # 1 − s
        total = -mp.expm1(-e * (k + 1)) / em1
        first = s * (1 - (k + 1) * mp.exp(-e * k) + k * mp.exp(-e * (k + 1))) / em1**2
        below_top = first / total
        return high - below_top, (n - high) + below_top


def _weighted(ms, expo, n: int) -> tuple[mp.mpf, mp.mpf]:
    """(Σ m w / Σ w, Σ (N − m) w / Σ w) for weights w = e^{expo}: both directly."""
    top = max(expo)
    w = [mp.exp(x - top) for x in expo]
    tot = mp.fsum(w)
    mean = mp.fsum(m * wi for m, wi in zip(ms, w, strict=True)) / tot
    gap = mp.fsum((n - m) * wi for m, wi in zip(ms, w, strict=True)) / tot
    return mean, gap


def tilted_poisson(lam, n: int, eps) -> tuple[mp.mpf, mp.mpf]:
    """(E[X | X <= N], N − E) for X ~ Poisson(λe^ε).

    λ′ <= 2N: E = λ′ P(X <= N − 1) / P(X <= N) (incomplete gamma) and N − E by
    subtraction (not small against N). λ′ > 2N: the mass sits at the top; sum the terms
    m = N, N − 1, ... (ratio <= N/λ′ < 1/2 per step) until they are below 2^-300."""
    lp = mp.mpf(lam) * mp.exp(mp.mpf(eps))
    if lp <= 2 * n:
        up = mp.gammainc(n + 1, lp, mp.inf, regularized=True)
        below = mp.gammainc(n, lp, mp.inf, regularized=True) if n >= 1 else mp.mpf(0)
        mean = lp * below / up
        return mean, n - mean
    ms, expo, x = [], [], mp.mpf(0)
    for j in range(0, min(n, 400) + 1):
        m = n - j
        ms.append(m)
        expo.append(x)
        x += mp.log(m) - mp.log(lp) if m > 0 else 0  # log w_{m−1} − log w_m = log(m/λ′)
    return _weighted(ms, expo, n)


def tilted_normal(mu, sd, n: int, eps) -> tuple[mp.mpf, mp.mpf]:
    """(E_t̃[m], N − E) for t(m) ∝ exp(−(m − μ)²/(2σ²)) on {0..N} tilted by e^{εm}: a
    discrete normal centred at c = μ + εσ², summed over every m whose log-weight is within
    800 of the largest, at m* = c clipped to [0, N]: |m − c| <= √((m* − c)² + 1600σ²)."""
    mu, sd, e = mp.mpf(mu), mp.mpf(sd), mp.mpf(eps)
    c = mu + e * sd * sd
    best = min(max(c, mp.mpf(0)), mp.mpf(n))
    reach = mp.sqrt((best - c) ** 2 + 1600 * sd * sd)
    lo = max(0, int(mp.floor(c - reach)) - 1)
    hi = min(n, int(mp.ceil(c + reach)) + 1)
    ms = list(range(lo, hi + 1))
    return _weighted(ms, [-((m - c) ** 2) / (2 * sd * sd) for m in ms], n)


def tilted_pmf(sizes, probs, n: int, eps) -> tuple[mp.mpf, mp.mpf]:
    """(E_t̃[m], N − E) for an explicit pmf (sizes, probabilities)."""
    e = mp.mpf(eps)
    return _weighted(
        sizes, [mp.log(mp.mpf(p)) + e * s for s, p in zip(sizes, probs, strict=True)], n
    )


def capped_inclusion_max(sizes, m) -> mp.mpf:
    """max_i a_i of a_i = min(1, m r_i / Σr) with iterative capping (spec §7.2)."""
    r = [mp.mpf(x) for x in sizes]
    m = mp.mpf(m)
    capped = [False] * len(r)
    while True:
        c = sum(capped)
        rest = mp.fsum(x for x, k in zip(r, capped, strict=True) if not k)
        if rest == 0:
            return mp.mpf(1) if c else mp.mpf(0)
        a = [mp.mpf(1) if k else (m - c) * x / rest for x, k in zip(r, capped, strict=True)]
        over = [not k and ai >= 1 for ai, k in zip(a, capped, strict=True)]
        if not any(over):
            return min(mp.mpf(1), max(a))
        capped = [k or o for k, o in zip(capped, over, strict=True)]


def allocation_point_masses(distance: int, eps) -> mp.mpf:
    """log(1 + adv*) of Proposition 4.1 for point masses at sizes m and m + d.

    The LP maximises h(m) − h(m + d) over h: {m..m+d} -> [0, 1] with h and 1 − h
    e^ε-Lipschitz between neighbouring sizes. It is invariant under h -> 1 − reverse(h),
    which keeps the objective, so a symmetric optimum exists: for d = 2j the middle is
    1/2 and each step outward moves 1 − h down by at most e^ε, adv* = 1 − e^{−jε}; for
    d = 2j + 1 the middle pair is (r/(1 + r), 1/(1 + r)), r = e^ε, and
    adv* = 1 − 2/((1 + r)r^j). (d = 1: tanh(ε/2).)
    """
    e = mp.mpf(eps)
    j, odd = divmod(distance, 2)
    if odd:
        adv = 1 - 2 / ((1 + mp.exp(e)) * mp.exp(j * e))
    else:
        adv = -mp.expm1(-j * e)
    return mp.log1p(adv)


def w_constraint(a, w) -> mp.mpf:
    """ε̂ of a record with ε(1, x) = a at weight w, q = 1/w: log(1 + (e^{a w} − 1)/w)."""
    a, w = mp.mpf(a), mp.mpf(w)
    return mp.log1p(mp.expm1(a * w) / w)


def pws_step_limits(p_prev, eps, delta) -> tuple[mp.mpf, mp.mpf]:
    """The two privacy terms of 004 Algorithm 3 at the previous π: e^ε π + δ and
    1 + e^{−ε}(π + δ − 1)."""
    p, e, d = mp.mpf(p_prev), mp.mpf(eps), mp.mpf(delta)
    return mp.exp(e) * p + d, 1 + mp.exp(-e) * (p + d - 1)


def laplace_witness(sizes, eps) -> mp.mpf:
    """Loss of M = Σx + Lap(1/ε) for one cluster drawn with probability |C_j|/n (spec
    §7.3): cluster i all +1, the others all −1; P′ adds a +1 record to C_i. The largest
    |log f_P(z)/f_P′(z)| over z at every component centre and in both tails (between
    centres the ratio is monotone), for i the largest and the smallest non-empty
    cluster."""
    e = mp.mpf(eps)
    sizes = [int(s) for s in sizes if s > 0]
    n = mp.mpf(sum(sizes))
    best = mp.mpf(0)
    for i in {sizes.index(max(sizes)), sizes.index(min(sizes))}:
        ci = sizes[i]
        others = [s for j, s in enumerate(sizes) if j != i]
        comp_p = [(mp.mpf(ci) / n, mp.mpf(ci))] + [(mp.mpf(s) / n, mp.mpf(-s)) for s in others]
        comp_q = [(mp.mpf(ci + 1) / (n + 1), mp.mpf(ci + 1))] + [
            (mp.mpf(s) / (n + 1), mp.mpf(-s)) for s in others
        ]

        def dens(comp, z):
            return mp.fsum(w * mp.exp(-e * abs(z - c)) for w, c in comp)

        zs = sorted({c for _, c in comp_p} | {c for _, c in comp_q})
        vals = [abs(mp.log(dens(comp_p, z) / dens(comp_q, z))) for z in zs]
        for sign in (1, -1):
            num = mp.fsum(w * mp.exp(sign * e * c) for w, c in comp_p)
            den = mp.fsum(w * mp.exp(sign * e * c) for w, c in comp_q)
            vals.append(abs(mp.log(num / den)))
        best = max(best, max(vals))
    return best
