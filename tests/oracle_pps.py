"""Independent oracles for element PPS: exact sample distributions by enumerating every
ordered draw (rational arithmetic), a replace-one LP over fixed-size samples, and the
hockey-stick divergence of an (ε, δ) witness (mpmath, 50 digits).

Written apart from ampcalc (no import of ampcalc.verify or ampcalc.schemes).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath as mp
import numpy as np

mp.mp.dps = 50

Sample = frozenset[int]


def successive(sizes: list[float], m: int) -> dict[Sample, Fraction]:
    """Every ordered sequence of m draws, each ∝ size among the records not yet drawn."""
    r = [Fraction(x) for x in sizes]
    out: dict[Sample, Fraction] = {}
    for seq in itertools.permutations(range(len(r)), m):
        p, left = Fraction(1), sum(r)
        for i in seq:
            if r[i] == 0:
                p = Fraction(0)
                break
            p *= r[i] / left
            left -= r[i]
        if p:
            s = frozenset(seq)
            out[s] = out.get(s, Fraction(0)) + p
    return out


def sampford_rejective(pi: list[float], m: int) -> dict[Sample, Fraction]:
    """Sampford's procedure (Sampford 1967), units with 0 < π_i < 1 only: draw 1 with
    probability π_i/m, then m − 1 with replacement with probability ∝ π_i/(1 − π_i);
    accept when all m are distinct. Enumerated over every ordered sequence."""
    p = [Fraction(x) for x in pi]
    lam = [x / (1 - x) for x in p]
    first = [x / m for x in p]
    rest = [x / sum(lam) for x in lam]
    acc: dict[Sample, Fraction] = {}
    for seq in itertools.product(range(len(p)), repeat=m):
        if len(set(seq)) < m:
            continue
        w = first[seq[0]] * math.prod(rest[i] for i in seq[1:])
        s = frozenset(seq)
        acc[s] = acc.get(s, Fraction(0)) + w
    total = sum(acc.values())
    return {s: w / total for s, w in acc.items()}


def systematic_pips(pi: list[float], grid: int = 20_000) -> dict[Sample, Fraction]:
    """Systematic πps over the listed order, start u on a fine rational grid (midpoints):
    record i is taken when some u + t lies in [c_{i−1}, c_i). Exact when every cut point
    lies on the grid (choose π_i with denominators dividing ``grid``)."""
    c = [Fraction(0)]
    for x in pi:
        c.append(c[-1] + Fraction(x))
    out: dict[Sample, Fraction] = {}
    for j in range(grid):
        u = Fraction(2 * j + 1, 2 * grid)
        s = frozenset(
            i for i in range(len(pi)) for t in range(int(c[-1]) + 2) if c[i] <= u + t < c[i + 1]
        )
        out[s] = out.get(s, Fraction(0)) + Fraction(1, grid)
    return out


def inclusion(dist: dict[Sample, Fraction], n: int) -> list[Fraction]:
    return [sum((v for s, v in dist.items() if i in s), Fraction(0)) for i in range(n)]


def replace_one_lp(n: int, dist: dict[Sample, Fraction], x: int, eps: float) -> float:
    """Exact worst case of P (record x) vs P′ (x replaced by x′, same sample distribution)
    over every ε-DP mechanism with binary output on the samples of the distribution's
    size(s) drawn from the n + 1 symbols (x′ is symbol n), replace-one neighbours."""
    from scipy.optimize import linprog

    sizes = sorted({len(s) for s in dist})
    domain = [frozenset(c) for k in sizes for c in itertools.combinations(range(n + 1), k)]
    idx = {s: i for i, s in enumerate(domain)}
    d = len(domain)
    e = math.exp(eps)
    rows = []
    for s in domain:
        for a in s:
            for b in range(n + 1):
                if b in s:
                    continue
                t = (s - {a}) | {b}
                for i, j in ((idx[s], idx[t]), (idx[t], idx[s])):
                    row = np.zeros(d + 1)
                    row[i], row[j] = 1.0, -e
                    rows.append(row)
                    row = np.zeros(d + 1)
                    row[i], row[j], row[d] = -1.0, e, 1.0 - e
                    rows.append(row)
    for i in range(d):
        row = np.zeros(d + 1)
        row[i], row[d] = 1.0, -1.0
        rows.append(row)
    p = np.zeros(d + 1)
    pp = np.zeros(d + 1)
    for s, v in dist.items():
        p[idx[s]] += float(v)
        moved = (s - {x}) | {n} if x in s else s
        pp[idx[moved]] += float(v)
    best = -math.inf
    for a, b in ((p, pp), (pp, p)):
        res = linprog(
            -a, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=b[None, :], b_eq=[1.0]
        )
        assert res.status == 0, res.message
        best = max(best, math.log(-res.fun))
    return best


def poisson_reveal_hockey_stick(a: float, eps: float, delta: float, eps_prime: float) -> mp.mpf:
    """Largest hockey-stick divergence at e^{ε′}, both orders, between M(P) and M(P ∪ {x})
    under Poisson sampling of x with probability a, for the (ε, δ)-DP witness: with
    probability δ publish whether x is in the sample, else randomised response on it
    (report [x ∈ S] truthfully with probability e^ε/(1 + e^ε))."""
    a, e, d, ep = (mp.mpf(v) for v in (a, eps, delta, eps_prime))
    t = mp.exp(e) / (1 + mp.exp(e))
    # outputs: reveal-in, reveal-out, 1, 0
    m_in = [d, 0, (1 - d) * t, (1 - d) * (1 - t)]
    m_out = [0, d, (1 - d) * (1 - t), (1 - d) * t]
    p = m_out
    q = [a * i + (1 - a) * o for i, o in zip(m_in, m_out, strict=True)]
    k = mp.exp(ep)
    return max(
        sum(max(mp.mpf(0), x - k * y) for x, y in zip(q, p, strict=True)),
        sum(max(mp.mpf(0), x - k * y) for x, y in zip(p, q, strict=True)),
    )


def amplification(q: float | Fraction, eps: float) -> mp.mpf:
    """A(q, ε) = log(1 + q(e^ε − 1)), 50 digits."""
    qq = mp.mpf(q.numerator) / q.denominator if isinstance(q, Fraction) else mp.mpf(q)
    return mp.log(1 + qq * mp.expm1(mp.mpf(eps)))
