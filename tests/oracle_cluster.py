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


def hockey_stick(plan, eps_prime: float, deltas) -> tuple[float, str]:
    """The exact (ε, δ) worst case of a verify plan: the largest hockey-stick divergence
    H_{e^{ε′}}(law on P ‖ law on P′) (both orders) over every binary-output mechanism M
    that is (ε_rel, δ_rel)-DP under each relation of ``plan.relations`` on the plan's
    domain of samples. Binary outputs suffice: H is attained on one event E, and the
    indicator of E is a post-processing of M. The domain restriction drops constraints
    only, so the value is never below the true worst case.

    LP: max Σ_S (p(S) − e^{ε′}p′(S)) f_S, 0 <= f <= 1, and for neighbours (S, T) both
    orders: f_S − e^ε f_T <= δ, (1 − f_S) − e^ε (1 − f_T) <= δ.

    Args:
        plan: an ``ampcalc.verify.Plan`` (exact sample distributions of each pair).
        eps_prime: the ε′ at which δ is measured.
        deltas: relation -> M's δ under it (the keys of ``plan.relations``).
    Returns:
        (the largest H over the instances, the label of that instance).
    """
    import math

    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    from ampcalc.schemes import exact as V

    best, label = -1.0, ""
    for inst in plan.instances:
        samples = V.domain(inst.caps, plan.sizes)
        index = {s: i for i, s in enumerate(samples)}
        n = len(samples)
        p, pp = np.zeros(n), np.zeros(n)
        for k, v in inst.p.items():
            p[index[k]] += v
        for k, v in inst.p_prime.items():
            pp[index[k]] += v
        rows, cols, vals, rhs = [], [], [], []
        r = 0
        for rel, eps in plan.relations.items():
            e, d = math.exp(eps), float(deltas[rel])
            for i, j in neighbour_pairs(samples, inst.caps, rel):
                for a, b in ((i, j), (j, i)):
                    rows += [r, r]
                    cols += [a, b]
                    vals += [1.0, -e]
                    rhs.append(d)
                    r += 1
                    rows += [r, r]
                    cols += [a, b]
                    vals += [-1.0, e]
                    rhs.append(d + e - 1.0)
                    r += 1
        a_ub = coo_matrix((vals, (rows, cols)), shape=(r, n)).tocsr()
        g = math.exp(eps_prime)
        directions = ((p, pp),) if inst.symmetric else ((p, pp), (pp, p))
        for x, y in directions:
            res = linprog(
                -(x - g * y), A_ub=a_ub, b_ub=np.array(rhs), bounds=(0, 1), method="highs"
            )
            assert res.status == 0, res.message
            if -res.fun > best:
                best, label = float(-res.fun), inst.label
    return best, label


def systematic_fixed(n: int, k: int, eps_r: float, eps_d: float | None) -> mp.mpf:
    """Exact worst case of systematic sampling in a fixed, known order over neighbours that
    keep every position (replace-one), by the start-class argument: for the replaced record
    in class c, log[(1 + Σ_{r≠c} e^{−d_r})/(e^{−ε_R} + Σ_{r≠c} e^{−d_r})], d_r =
    ε_R·min(|S_r|, |S_c|) + ε_D·||S_r| − |S_c|| (no term across sizes without ε_D); the
    largest over c (50 digits). The k classes are counted by size (N mod k of ⌈N/k⌉
    records, the rest of ⌊N/k⌋), so k may be huge; ``small_classes`` lists them one by one.
    """
    er = mp.mpf(eps_r)
    ed = None if eps_d is None else mp.mpf(eps_d)
    counts = {n // k: k - n % k}
    if n % k:
        counts[-(-n // k)] = n % k
    best = mp.mpf(0)
    for sc, cc in counts.items():
        tot = (cc - 1) * mp.exp(-er * sc)
        for sr, cr in counts.items():
            if sr != sc and ed is not None:
                tot += cr * mp.exp(-er * min(sr, sc) - ed * abs(sr - sc))
        best = max(best, mp.log((1 + tot) / (mp.exp(-er) + tot)))
    return best


def small_classes(n: int, k: int) -> list[int]:
    """The start classes' sizes one by one (positions r, r + k, ... of 0..N − 1)."""
    return [len(range(r, n, k)) for r in range(k)]


def neighbour_pairs(samples, caps, relation) -> list[tuple[int, int]]:
    """Unordered neighbouring pairs (i, j) of the domain under one relation.

    Written from the definitions, not from ampcalc.verify: add-remove adds one record to
    some cluster (within its cap); replace-one moves one record between two clusters.
    Each pair is listed once.
    """
    from ampcalc.model.design import Neighbours

    index = {tuple(s): i for i, s in enumerate(samples)}
    pairs: set[tuple[int, int]] = set()
    for i, s in enumerate(samples):
        for b in range(len(caps)):
            if relation is Neighbours.ADD_REMOVE and s[b] < caps[b]:
                moved = [*s[:b], s[b] + 1, *s[b + 1 :]]
                j = index.get(tuple(moved))
                if j is not None:
                    pairs.add((min(i, j), max(i, j)))
            if relation is Neighbours.REPLACE_ONE and s[b] < caps[b]:
                for a in range(len(caps)):
                    if a != b and s[a] > 0:
                        moved = list(s)
                        moved[a] -= 1
                        moved[b] += 1
                        j = index.get(tuple(moved))
                        if j is not None:
                            pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)
