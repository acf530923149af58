"""The PPS methods' sample designs: successive sampling's inclusion probabilities
(exact for few states, else certified lower bounds) and the exact sample distributions
of successive, Sampford and systematic πps samples (the exact verifier's instances).
Only the pps and pps_cluster families use them (through ``ampcalc.schemes.pps``)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from ampcalc.math import numeric

#: how many of the largest inclusion probabilities ``details`` lists
TOP = 5

#: largest number of steps (states × distinct sizes) of the exact successive-sampling
#: recursion (above it, the closed-form lower bound ``successive_product_bound`` is used)
SUCCESSIVE_EXACT_STATES = 400_000


# --- successive sampling (draw by draw, without replacement) ------------------------


def _successive_largest(r: np.ndarray, m: int) -> dict[str, Any]:
    """``largest`` and ``inclusion_exact`` for Params: the TOP largest records' a_i."""
    order = np.argsort(-r, kind="stable")[:TOP]
    ordered = np.sort(r[r > 0])  # once: each record's "others" are this minus one copy
    found: dict[float, tuple[float, bool]] = {}
    for i in order:
        key = float(r[i])
        if key not in found:  # equal sizes have equal inclusion probabilities
            # the sharper race bound for the largest record only (the one that counts)
            found[key] = _successive_sorted(ordered, key, m, race=not found)
    vals = [found[float(r[i])] for i in order]
    largest = [v for v, _ in vals]
    # any design of m draws has Σ a_i = m over N records: the largest a_i is >= m/N
    largest[0] = max(largest[0], float(numeric.round_down(m / r.size)))
    return {"largest": tuple(largest), "inclusion_exact": all(e for _, e in vals)}


def successive_inclusion(sizes: np.ndarray, m: int, target: int) -> tuple[float, bool]:
    """Pr(record ``target`` is among m successive draws proportional to size), rounded down.

    Basis: the definition of successive (draw-by-draw) PPS sampling without replacement:
        each draw picks a record not yet drawn with probability r_j / (sum of the sizes
        not yet drawn). Bun et al., §6.1 gives no formula.
    Exact: records of equal size are exchangeable, so the state after d draws is how
        many of each distinct size were drawn (and whether ``target`` was); the recursion
        runs while states × distinct sizes is at most ``SUCCESSIVE_EXACT_STATES``.
    Otherwise: the larger of ``successive_product_bound`` and ``successive_race_bound``
        (sound lower bounds).
    Returns: (a_target rounded down, whether it is exact up to rounding).
    """
    r = np.asarray(sizes, dtype=float)
    rt = float(r[target])
    if rt <= 0.0:
        return 0.0, True
    return _successive_sorted(np.sort(r[r > 0]), rt, m)


def _successive_sorted(
    ordered: np.ndarray, rt: float, m: int, *, race: bool = True
) -> tuple[float, bool]:
    """``successive_inclusion`` from the sorted positive sizes (the target's among them);
    ``race``: also try ``successive_race_bound`` when the exact recursion is too large."""
    at = int(np.searchsorted(ordered, rt))
    others = np.delete(ordered, at)  # one copy of the target's size removed (still sorted)
    if m > others.size:  # every record of positive size is drawn
        return 1.0, True
    cut = np.flatnonzero(np.diff(others)) + 1 if others.size else np.array([], dtype=int)
    starts = np.concatenate(([0], cut))
    vals = others[starts] if others.size else others
    counts = np.diff(np.concatenate((starts, [others.size])))
    exact = _successive_exact(vals, counts, rt, m)
    if exact is not None:
        return exact, True
    bound = successive_product_bound(others, rt, m)
    riemann = successive_race_bound(others, rt, m) if race else None
    return (bound if riemann is None else max(bound, riemann)), False


def _log_states(m: int, v: int) -> float:
    """log C(m − 1 + v, v): at most this many states after 0..m−1 draws over v sizes."""
    return math.lgamma(m + v) - math.lgamma(v + 1) - math.lgamma(m)


def _successive_exact(vals: np.ndarray, counts: np.ndarray, rt: float, m: int) -> float | None:
    """The recursion of ``successive_inclusion`` (None when it has too many states)."""
    v = int(vals.size)
    if _log_states(m, v) + math.log(v + 1) > math.log(SUCCESSIVE_EXACT_STATES):
        return None
    wv = [float(x) for x in vals]
    cv = [int(x) for x in counts]
    layer: dict[tuple[int, ...], float] = {(0,) * v: 1.0}
    terms: list[float] = []
    steps = 0
    for _ in range(m):
        nxt: dict[tuple[int, ...], float] = {}
        for k, p in layer.items():
            # the weight not yet drawn: a sum of positive terms (no cancellation)
            rem = math.fsum([rt, *((c - j) * w for c, j, w in zip(cv, k, wv, strict=True))])
            terms.append(p * (rt / rem))
            for g in range(v):
                if k[g] < cv[g]:
                    kk = (*k[:g], k[g] + 1, *k[g + 1 :])
                    nxt[kk] = nxt.get(kk, 0.0) + p * ((cv[g] - k[g]) * wv[g] / rem)
            steps += 1
        layer = nxt
    # every value is a sum of products of at most 3m + 2 rounded factors (relative error
    # <= (3m + 2)u each) and the sums add positive terms (<= steps·u): a relative slack
    total = math.fsum(terms)
    slack = (3 * m + 2 + steps + v + 16) * 2.0**-53
    return float(numeric.round_down(min(1.0, total * (1.0 - slack))))


#: element operations allowed for ``successive_race_bound`` (others × m × grid points)
SUCCESSIVE_RACE_WORK = 40_000_000
#: grid points of ``successive_race_bound`` (at most; its gap to the exact value is <= 1/K)
SUCCESSIVE_RACE_GRID = 1024
#: most records ``successive_race_bound`` handles (one vector step per record)
SUCCESSIVE_RACE_RECORDS = 5000


def successive_race_bound(others: np.ndarray, rt: float, m: int) -> float | None:
    """A sound lower bound on a record's successive-sampling inclusion probability, within
    1/K of the exact value (None when the work would exceed ``SUCCESSIVE_RACE_WORK``).

    Successive sampling proportional to size orders the records by independent arrival
    times T_j ~ Exp(r_j) (the first arrival is j with probability r_j/Σr; memorylessness
    gives the later draws). The record (size r_t) is drawn iff fewer than m others
    arrive before T_t: a_t = ∫ r_t e^{−r_t t} G(t) dt, G(t) = Pr(at most m − 1 others
    arrived by t), a Poisson-binomial CDF with p_j = 1 − e^{−r_j t}, decreasing in t. On
    any grid 0 = t_0 < … < t_K = ∞, a_t >= Σ_k (e^{−r_t t_k} − e^{−r_t t_{k+1}}) G(t_{k+1}).
    The grid is the (k/K)-quantiles of T_t, so the gap is <= 1/K. G by the exact
    recursion over the others (K × m values); every rounding is covered by a slack.
    """
    o = np.asarray(others, dtype=float)
    n = int(o.size)
    k_grid = min(SUCCESSIVE_RACE_GRID, SUCCESSIVE_RACE_WORK // max(1, n * m))
    if k_grid < 64 or n > SUCCESSIVE_RACE_RECORDS:
        return None
    t = -np.log1p(-np.arange(1, k_grid) / k_grid) / rt  # t_1 … t_{K−1}; t_K = ∞: G = 0
    dp = np.zeros((t.size, m))
    dp[:, 0] = 1.0
    with np.errstate(under="ignore"):
        for r in o:
            p = -np.expm1(-r * t)[:, None]
            dp[:, 1:] = dp[:, 1:] * (1.0 - p) + dp[:, :-1] * p
            dp[:, :1] *= 1.0 - p
        g = dp.sum(axis=1)
        surv = np.exp(-rt * t)  # Pr(T_t > t_k)
    weights = np.concatenate(([1.0], surv))[:-1] - surv  # Pr(t_k < T_t <= t_{k+1}), k < K−1
    u = 2.0**-53
    # G: each step is a convex combination (<= 4u absolute per value and step, m values)
    # and p_j errs by <= 2u relative; the weights by <= 4u each
    slack = 4.0 * (n + 8) * (m + 2) * u + 8.0 * k_grid * u
    total = float(np.sum(np.maximum(weights, 0.0) * g)) - slack
    return float(numeric.round_down(max(0.0, min(1.0, total))))


def successive_product_bound(others: np.ndarray, rt: float, m: int) -> float:
    """A sound lower bound on a record's inclusion probability under successive sampling.

    Given that the record (size r_t) was not drawn in the first k draws, the k records
    drawn weigh at least s_k, the sum of the k smallest other sizes, so the (k+1)-th draw
    picks it with probability >= r_t/(R − s_k), R = Σr. Hence
    Pr(not drawn in m draws) <= Π_{k<m} (1 − r_t/(R − s_k)), and a_t >= 1 minus that
    (>= 1 − (1 − r_t/R)^m, the bound with s_k = 0). Rounded outward at every step.
    """
    o = np.asarray(others, dtype=float)
    o = np.sort(o[o > 0]) if o.size and (o[0] <= 0 or np.any(np.diff(o) < 0)) else o
    total = rt + float(np.sum(o))  # numpy's pairwise sum: error <= (log2 N + 1)u·R
    s = np.concatenate(([0.0], np.cumsum(o[: m - 1])))
    u = 2.0**-53
    # R − s_k, rounded up: the sums and the difference err by <= (k + log2 N + 4)u·R
    rem = (total - s) + (np.arange(s.size) + math.log2(o.size + 2) + 8.0) * 2.0 * u * total
    rem = np.maximum(rem, rt)
    x = (rt / rem) * (1.0 - 4.0 * u)  # the division's rounding, downward
    with np.errstate(divide="ignore"):
        log_not = float(np.sum(np.log1p(-x)))
    # log1p and the sum err by <= (m + 4)u relative: move toward 0 (a larger Pr(not))
    log_not *= 1.0 - (m + 8) * 2.0 * u
    return float(numeric.round_down(-math.expm1(log_not)))


Counts = tuple[int, ...]


def successive_distribution(sizes: np.ndarray, m: int) -> dict[Counts, float]:
    """Exact sample distribution of m successive PPS draws without replacement.

    Records are distinct (caps 1); each draw picks a record not yet drawn with
    probability r_i/(sum of the sizes not yet drawn). A recursion over the drawn subsets
    (at most 2^N states: tiny designs only).
    """
    r = [float(x) for x in sizes]
    n = len(r)
    layer: dict[int, float] = {0: 1.0}
    for _ in range(m):
        nxt: dict[int, float] = {}
        for mask, p in layer.items():
            free = [i for i in range(n) if not mask >> i & 1 and r[i] > 0.0]
            rem = math.fsum(r[i] for i in free)
            for i in free:
                key = mask | 1 << i
                nxt[key] = nxt.get(key, 0.0) + p * (r[i] / rem)
        layer = nxt
    return {tuple(mask >> i & 1 for i in range(n)): p for mask, p in layer.items()}


def sampford_distribution(inclusion: np.ndarray, m: int) -> dict[Counts, float]:
    """Exact sample distribution of Sampford's πps design (Sampford 1967).

    Certainty units (a_i = 1) are always in the sample; the others (0 < a_i < 1, n′ =
    m − #certain of them drawn) form the sample s with probability proportional to
    Π_{i∈s} a_i/(1 − a_i) · Σ_{j∈s} (1 − a_j); its inclusion probabilities are exactly a_i.
    """
    a = [float(x) for x in inclusion]
    n = len(a)
    certain = [i for i in range(n) if a[i] >= 1.0]
    rest = [i for i in range(n) if 0.0 < a[i] < 1.0]
    k = m - len(certain)
    weights: dict[Counts, float] = {}
    for s in itertools.combinations(rest, k):
        w = math.prod(a[i] / (1.0 - a[i]) for i in s) * math.fsum(1.0 - a[j] for j in s)
        chosen = {*certain, *s}
        weights[tuple(1 if i in chosen else 0 for i in range(n))] = w if k else 1.0
    total = math.fsum(weights.values())
    return {key: w / total for key, w in weights.items()}


def systematic_pips_distribution(inclusion: np.ndarray) -> dict[Counts, float]:
    """Exact sample distribution of systematic πps sampling over the listed order.

    Cumulated a_i cut [0, Σa) into intervals I_i = [c_{i−1}, c_i); a uniform start
    u ∈ [0, 1) takes record i when some u + t, t = 0, 1, …, falls in I_i (a_i <= 1: at
    most once). Computed in exact rational arithmetic from the float a_i.
    """
    a = [Fraction(float(x)) for x in inclusion]
    c = [Fraction(0)]
    for x in a:
        c.append(c[-1] + x)
    cuts = sorted({Fraction(0), Fraction(1), *(x - math.floor(x) for x in c)})
    out: dict[Counts, float] = {}
    for lo, hi in itertools.pairwise(cuts):
        u = (lo + hi) / 2
        key = tuple(int(math.ceil(c[i + 1] - u) - math.ceil(c[i] - u)) for i in range(len(a)))
        out[key] = out.get(key, 0.0) + float(hi - lo)
    return out
