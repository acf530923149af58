"""mpmath reference values for random and data-dependent sample sizes (50 digits).

Independent of ampcalc: exact enumeration of the size pmf on {0..N} (N small) and of
explicit mechanisms on explicit neighbouring datasets.
Basis: Bun et al., Theorem 3.1, §4.1, Lemma B.1; spec §3, §4.
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def size_pmf(kind: str, n: int, **kw: float) -> list[mp.mpf]:
    """Unnormalised weights t(0..n) of a size distribution, as the spec defines them."""
    out = []
    for m in range(n + 1):
        if kind == "point":
            w = mp.mpf(1 if m == kw["value"] else 0)
        elif kind == "binomial":
            p = mp.mpf(kw["p"])
            w = mp.binomial(n, m) * p**m * (1 - p) ** (n - m)
        elif kind == "poisson":
            lam = mp.mpf(kw["mean"])
            w = lam**m / mp.factorial(m)  # e^{-λ} cancels after truncation
        elif kind == "uniform":
            w = mp.mpf(1 if kw["low"] <= m <= kw["high"] else 0)
        elif kind == "normal":
            w = mp.exp(-((m - mp.mpf(kw["mean"])) ** 2) / (2 * mp.mpf(kw["sd"]) ** 2))
        elif kind == "pmf":
            probs = kw["probabilities"]
            w = mp.mpf(probs[m]) if m < len(probs) else mp.mpf(0)
        else:
            raise ValueError(kind)
        out.append(w)
    return out


def tilted_mean(weights: list[mp.mpf], eps: float) -> mp.mpf:
    """E_t̃[m], t̃(m) ∝ e^{εm} t(m), by exact enumeration."""
    e = mp.mpf(eps)
    num = mp.fsum(m * w * mp.exp(e * m) for m, w in enumerate(weights))
    den = mp.fsum(w * mp.exp(e * m) for m, w in enumerate(weights))
    return num / den


def random_size_upper(weights: list[mp.mpf], n: int, eps_d: float, eps_r: float) -> mp.mpf:
    """Corrected Theorem 3.1 upper bound: log(1 + (E_t̃[m]/N)(e^{ε_R} − 1)), tilt at ε_D."""
    q = tilted_mean(weights, eps_d) / n
    return mp.log(1 + q * mp.expm1(mp.mpf(eps_r)))


def random_size_witness(weights: list[mp.mpf], n: int, eps_d: float, eps_r: float) -> mp.mpf:
    """Loss of M(S) = Σx + Lap(1/ε_D), x ∈ {1, −(ε_R/ε_D − 1)}, on P = all ones vs P′ with
    one record swapped, at outputs above every sum: the ratio of Laplace mixtures."""
    ed, er = mp.mpf(eps_d), mp.mpf(eps_r)
    a = er / ed - 1
    y = mp.mpf(10 * n + 10)  # above every possible sum

    def lap(y: mp.mpf, s: mp.mpf) -> mp.mpf:
        return ed / 2 * mp.exp(-ed * abs(y - s))

    p_num = mp.fsum(w * lap(y, mp.mpf(m)) for m, w in enumerate(weights))
    p_den = mp.fsum(
        w * ((1 - mp.mpf(m) / n) * lap(y, mp.mpf(m)) + mp.mpf(m) / n * lap(y, m - 1 - a))
        for m, w in enumerate(weights)
    )
    return mp.log(p_num / p_den)


def sum_laplace_pair_loss(
    size_p: int, sample_p: int, size_q: int, sample_q: int, eps: float
) -> mp.mpf:
    """Largest log-ratio of M(S) = Σx + Lap(1/ε), x ∈ {−1, +1}, between
    P = size_p records +1 (sample_p drawn WOR) and Q = P ∪ {x = −1} (size_q = size_p + 1,
    sample_q drawn), evaluated at outputs below every sum (both directions)."""
    e = mp.mpf(eps)
    y = mp.mpf(-10 * (size_q + 10))

    def lap(s: mp.mpf) -> mp.mpf:
        return e / 2 * mp.exp(-e * abs(y - s))

    dens_p = lap(mp.mpf(sample_p))
    pick = mp.mpf(sample_q) / size_q  # the −1 record is in Q's sample
    dens_q = (1 - pick) * lap(mp.mpf(sample_q)) + pick * lap(mp.mpf(sample_q - 2))
    return abs(mp.log(dens_q / dens_p))


def random_size_witness_below(weights: list[mp.mpf], n: int, eps_d: float, eps_r: float) -> mp.mpf:
    """Loss of M(S) = Σx + Lap(1/ε_D) with x ∈ {c − 1, −1}, c = ε_R/ε_D (add-remove
    sensitivity 1, replace-one sensitivity c), P = N records c − 1 vs P′ with one −1, at
    outputs below every sum: the ratio P′/P of the Laplace mixtures."""
    ed, er = mp.mpf(eps_d), mp.mpf(eps_r)
    a = er / ed - 1
    y = mp.mpf(-10 * n - 10)  # below every possible sum

    def lap(s: mp.mpf) -> mp.mpf:
        return ed / 2 * mp.exp(-ed * abs(y - s))

    p = mp.fsum(w * lap(a * m) for m, w in enumerate(weights))
    pp = mp.fsum(
        w * ((1 - mp.mpf(m) / n) * lap(a * m) + mp.mpf(m) / n * lap(a * (m - 1) - 1))
        for m, w in enumerate(weights)
    )
    return mp.log(pp / p)


def count_pair_loss_below(
    others: int, with_x: bool, drawn: int, others2: int, drawn2: int, c: float, eps: float
) -> mp.mpf:
    """Loss P/P′ below every sum of M(S) = Σx + Lap(1/ε), values 1 for the others and 1 − c
    for x: P = ``others`` ones (plus x if ``with_x``), ``drawn`` records WOR; P′ = ``others2``
    ones plus x if not ``with_x``, ``drawn2`` drawn. Enumerates the hypergeometric count of x."""
    e, cc = mp.mpf(eps), mp.mpf(c)
    y = mp.mpf(-10 * (others + others2 + 10))

    def mix(k: int, has_x: bool, m: int) -> mp.mpf:
        size = k + (1 if has_x else 0)
        pick = mp.mpf(m) / size if has_x else mp.mpf(0)
        s_no, s_x = mp.mpf(m), m - cc  # x drawn: m − 1 ones and 1 − c
        return (1 - pick) * mp.exp(e * (y - s_no)) + pick * mp.exp(e * (y - s_x))

    return mp.log(mix(others, with_x, drawn) / mix(others2, not with_x, drawn2))
