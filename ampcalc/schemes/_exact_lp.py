"""The exact verifier's linear programmes: the domain of samples and its neighbour pairs,
the Charnes–Cooper programme and the (ε, δ) hockey-stick programme, and the certified
solve of the pure programme (see ``ampcalc.schemes.exact`` for the formulation)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.model.design import Neighbours
from ampcalc.schemes._exact_data import (
    Counts,
    Instance,
    _compositions,
)

# --- domain, neighbours and the programme ---------------------------------------------


def domain(caps: tuple[int, ...], sizes: Iterable[int]) -> list[Counts]:
    """Every count vector within the caps whose total is one of ``sizes``."""
    return [k for s in sizes for k in _compositions(tuple(min(c, s) for c in caps), s)]


def domain_size(caps: tuple[int, ...], sizes: Iterable[int], limit: int) -> int:
    """Size of ``domain`` (stops counting past ``limit``)."""
    total = 0
    for s in sizes:
        for _ in _compositions(tuple(min(c, s) for c in caps), s):
            total += 1
            if total > limit:
                return total
    return total


def _related(
    samples: list[Counts], caps: tuple[int, ...], relations: Mapping[Neighbours, float]
) -> list[tuple[int, int, Neighbours]]:
    """Unordered neighbouring pairs (i, j, relation) of the domain."""
    index = {s: i for i, s in enumerate(samples)}
    out: list[tuple[int, int, Neighbours]] = []
    d = len(caps)
    for i, s in enumerate(samples):
        if Neighbours.ADD_REMOVE in relations:
            for b in range(d):
                if s[b] < caps[b]:
                    t = (*s[:b], s[b] + 1, *s[b + 1 :])
                    j = index.get(t)
                    if j is not None:
                        out.append((i, j, Neighbours.ADD_REMOVE))
        if Neighbours.REPLACE_ONE in relations:
            for a in range(d):
                if s[a] == 0:
                    continue
                for b in range(a + 1, d):
                    if s[b] < caps[b]:
                        moved = list(s)
                        moved[a] -= 1
                        moved[b] += 1
                        j = index.get(tuple(moved))
                        if j is not None:
                            out.append((i, j, Neighbours.REPLACE_ONE))
    # replace-one moves a -> b for a < b only; b -> a is the same pair seen from t
    return out


Pairs = list[tuple[int, int, float, float]]  # (i, j, ε, δ) of an unordered neighbour pair


def _linprog(
    c: np.ndarray, a_ub: Any, b_ub: np.ndarray, a_eq: Any, b_eq: Any, bounds: Any
) -> tuple[float | None, int, str | None]:
    """min c·x by HiGHS: (value, status, failure reason)."""
    val, status, why, _ = _linprog_x(c, a_ub, b_ub, a_eq, b_eq, bounds)
    return val, status, why


def _linprog_x(
    c: np.ndarray, a_ub: Any, b_ub: np.ndarray, a_eq: Any, b_eq: Any, bounds: Any
) -> tuple[float | None, int, str | None, np.ndarray | None]:
    """min c·x by HiGHS: (value, status, failure reason, the point)."""
    from scipy.optimize import linprog  # lazy: scipy, > 20 ms

    # HiGHS interior point (with crossover to a basic solution) is about 5x faster than
    # its dual simplex here; the simplex ("highs") is the fallback when it fails
    for method in ("highs-ipm", "highs"):
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method=method)
        if res.status in (0, 3):
            break
    if res.status == 3:
        return (
            None,
            3,
            "the solver reports an unbounded programme (dynamic range e^ε too wide)",
            None,
        )
    if res.status != 0:
        return None, int(res.status), f"the solver failed: {res.message}", None
    return float(res.fun), 0, None, res.x


def _dp_rows(pairs: Pairs, n: int, homogeneous: bool) -> tuple[Any, np.ndarray]:
    """The (ε, δ)-DP constraints of a binary mechanism, both orders of every pair.

    f-space (``homogeneous=False``, variables f): f_a − e^ε f_b <= δ and
    −f_a + e^ε f_b <= e^ε − 1 + δ (the latter is 1 − f_a <= e^ε(1 − f_b) + δ).
    Charnes–Cooper (variables y = t·f and t in column n): the same times t.
    """
    from scipy.sparse import coo_matrix  # lazy: scipy, > 20 ms

    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    rhs: list[float] = []
    r = 0
    for i, j, eps, delta in pairs:
        e = math.exp(eps)
        for a, b in ((i, j), (j, i)):
            rows += [r, r]
            cols += [a, b]
            vals += [1.0, -e]
            if homogeneous:
                if delta > 0.0:
                    rows.append(r)
                    cols.append(n)
                    vals.append(-delta)
                rhs.append(0.0)
            else:
                rhs.append(delta)
            r += 1
            rows += [r, r]
            cols += [a, b]
            vals += [-1.0, e]
            if homogeneous:
                rows.append(r)
                cols.append(n)
                vals.append(1.0 - e - delta)
                rhs.append(0.0)
            else:
                rhs.append(e - 1.0 + delta)
            r += 1
    if homogeneous:
        for i in range(n):
            rows += [r, r]
            cols += [i, n]
            vals += [1.0, -1.0]
            rhs.append(0.0)
            r += 1
    width = n + 1 if homogeneous else n
    return coo_matrix((vals, (rows, cols)), shape=(r, width)).tocsr(), np.asarray(rhs)


def _solve(
    p: np.ndarray, p_prime: np.ndarray, pairs: Pairs, delta_prime: float = 0.0
) -> tuple[float | None, str | None]:
    """OPT of the Charnes–Cooper programme (None and a reason on solver failure).

    max Σ p y − δ′t over y = t·f, Σ p′ y = 1: sup_f (Σ p f − δ′)/Σ p′ f, the e^{ε″} at
    which the worst divergence is δ′ (δ′ = 0 and pure pairs: the pure-ε programme).
    """
    n = p.size
    a_ub, b_ub = _dp_rows(pairs, n, homogeneous=True)
    a_eq = np.concatenate((p_prime, [0.0]))[None, :]
    c = -np.concatenate((p, [-delta_prime]))
    val, _, why = _linprog(c, a_ub, b_ub, a_eq, [1.0], (0, None))
    return (None, why) if val is None else (-val, None)


# --- the pure programme, solved and certified -----------------------------------------
#
# With δ = δ′ = 0 the Charnes–Cooper rows carrying t never bind: y is feasible with
# t = max_S y_S·e^ε/(e^ε − 1), and the ratio Σ p y / Σ p′ y does not depend on t. So
# ε′_exact = log max Σ p y / Σ p′ y over the cone y >= 0, y_S <= e^ε y_S″ (every ordered
# neighbouring pair, ε of its relation): half the rows, no (1 − e^ε) coefficients.
#
# A solver's optimum is a floating-point point within its tolerances, not a proof: on
# wide dynamic ranges (tiny p′, e^ε large) HiGHS returns points that break Σ p′ y = 1 by
# a percent, or rows by more than e^ε·10⁻⁷, and its objective overstates the optimum.
# So every solve is turned into two certificates, computed from the returned point
# alone with rounding accounted for:
#
# * low: the returned y made exactly ε-DP (``_envelope``: the smallest function above
#   log y that is ε-Lipschitz along every neighbouring pair, with a margin that absorbs
#   rounding) and re-evaluated, log Σ p y / Σ p′ y. A mechanism on the domain attains it,
#   so ε′_exact >= low.
# * high: the solver's row multipliers μ >= 0 (``_dual_bound``): if p − Gᵀμ <= λ p′
#   entrywise (on samples with p′ = 0 the residual is pushed along a neighbour towards
#   P′'s support first), then Σ p y <= λ Σ p′ y for every feasible y, so
#   ε′_exact <= log λ = high.
#
# A FAIL needs a certificate (low above an upper bound, high below a lower bound); a
# solve whose certificates do not meet is tried again on a row-scaled programme.

#: certificates closer than this (in ε′) settle the value (the solver's ratio Σ p y / Σ p′ y,
#: kept between them, is reported)
CERTIFIED_GAP = 1e-9
_ULP = 2.0**-52


@dataclass(frozen=True)
class Solved:
    """One programme's answer: the optimum read off the solver (``value``, log OPT,
    normalised by Σ p′ y), the certified ``low`` <= ε′_exact <= ``high`` (None: no
    certificate), or a failure ``reason`` (then ``value`` is None)."""

    value: float | None
    low: float | None
    high: float | None
    reason: str | None


def _cone_rows(pairs: Pairs, n: int, scaled: bool) -> tuple[Any, np.ndarray, np.ndarray]:
    """y_a − e^ε y_b <= 0 for both orders of every pair (``scaled``: divided by e^ε).

    Returns the matrix and, per row, its ε and weight w (the row is w·(y_a − e^ε y_b)).
    """
    from scipy.sparse import coo_matrix  # lazy: scipy, > 20 ms

    m = len(pairs)
    ij = np.array([(i, j) for i, j, _, _ in pairs], dtype=np.int64).reshape(m, 2)
    eps = np.array([e for _, _, e, _ in pairs], dtype=float)
    a = np.concatenate((ij[:, 0], ij[:, 1]))
    b = np.concatenate((ij[:, 1], ij[:, 0]))
    e2 = np.concatenate((eps, eps))
    w = np.exp(-e2) if scaled else np.ones(2 * m)
    big = np.ones(2 * m) if scaled else np.exp(e2)
    rows = np.arange(2 * m)
    mat = coo_matrix(
        (np.concatenate((w, -big)), (np.concatenate((rows, rows)), np.concatenate((a, b)))),
        shape=(2 * m, n),
    ).tocsr()
    return mat, e2, w


def _envelope(y: np.ndarray, pairs: Pairs) -> np.ndarray | None:
    """log of an exactly ε-DP point near y: u_S = max_T (log y_T − d(S, T)), d the
    shortest-path distance with edge lengths ε − margin; checked edge by edge with half
    the margin (which covers rounding). None when no point can be made (y <= 0, ε = 0)."""
    from scipy.sparse import coo_matrix  # lazy: scipy, > 20 ms
    from scipy.sparse.csgraph import dijkstra  # lazy: scipy, > 20 ms

    n = y.size
    pos = np.flatnonzero(y > 0.0)
    if pos.size == 0 or not pairs:
        return None
    ij = np.array([(i, j) for i, j, _, _ in pairs], dtype=np.int64)
    eps = np.array([e for _, _, e, _ in pairs], dtype=float)
    if eps.min() <= 0.0:
        return None
    margin = np.minimum(eps / 2.0, np.maximum(eps * 1e-10, 1e-12))
    logs = np.log(y[pos])
    lift = 1.0 - (logs - logs.max())  # >= 1: Dijkstra needs positive lengths
    length = eps - margin
    graph = coo_matrix(
        (
            np.concatenate((length, length, lift)),
            (
                np.concatenate((ij[:, 0], ij[:, 1], np.full(pos.size, n))),
                np.concatenate((ij[:, 1], ij[:, 0], pos)),
            ),
        ),
        shape=(n + 1, n + 1),
    ).tocsr()
    u: np.ndarray = 1.0 - dijkstra(graph, directed=True, indices=n)[:n]
    if not np.all(np.isfinite(u)):
        return None  # a sample no neighbour path reaches
    if np.any(np.abs(u[ij[:, 0]] - u[ij[:, 1]]) > eps - margin / 2.0):
        return None
    return u


def _log_ratio(a: np.ndarray, b: np.ndarray, u: np.ndarray) -> float:
    """log Σ a e^u − log Σ b e^u, in log space (u may span hundreds of nats)."""

    def log_sum(w: np.ndarray) -> float:
        on = w > 0.0
        if not on.any():
            return -math.inf
        top = float(u[on].max())
        return top + math.log(math.fsum((w[on] * np.exp(u[on] - top)).tolist()))

    den = log_sum(b)
    return math.inf if den == -math.inf else log_sum(a) - den


def _dual_bound(
    a: np.ndarray, b: np.ndarray, pairs: Pairs, eps: np.ndarray, w: np.ndarray, mu: np.ndarray
) -> float | None:
    """log λ for the solver's multipliers (module comment above), or None.

    Floating-point sums are bounded by their rounding: each residual is raised by
    (terms + 4)·2⁻⁵²·Σ|terms| before it is compared, so λ is an upper end.
    """
    n, m = a.size, len(pairs)
    ij = np.array([(i, j) for i, j, _, _ in pairs], dtype=np.int64).reshape(m, 2)
    rows_a = np.concatenate((ij[:, 0], ij[:, 1]))
    rows_b = np.concatenate((ij[:, 1], ij[:, 0]))
    mu = np.maximum(mu, 0.0)
    plus = mu * w
    minus = plus * np.exp(eps)
    g = np.zeros(n)
    size = np.zeros(n)
    count = np.full(n, 4.0)
    np.add.at(g, rows_a, plus)
    np.add.at(g, rows_b, -minus)
    np.add.at(size, rows_a, plus)
    np.add.at(size, rows_b, minus)
    np.add.at(count, rows_a, 1.0)
    np.add.at(count, rows_b, 1.0)
    if not np.all(np.isfinite(g)):
        return None
    r = a - g
    r = r + count * _ULP * (np.abs(a) + size) + 1e-300
    off = b <= 0.0
    if np.any(off & (r > 0.0)):
        # push the residual of a sample P′ never produces to a neighbour nearer P′'s
        # support (a multiplier on its row y_S − e^ε y_T <= 0)
        nbrs: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        for (i, j), e in zip(ij.tolist(), eps[:m].tolist(), strict=True):
            nbrs[i].append((j, e))
            nbrs[j].append((i, e))
        dist = np.full(n, -1, dtype=np.int64)
        queue = deque(int(s) for s in np.flatnonzero(~off))
        dist[~off] = 0
        while queue:
            s = queue.popleft()
            for t, _ in nbrs[s]:
                if dist[t] < 0:
                    dist[t] = dist[s] + 1
                    queue.append(t)
        if np.any(off & (r > 0.0) & (dist < 0)):
            return None
        for s in sorted(np.flatnonzero(off & (dist > 0)).tolist(), key=lambda k: -dist[k]):
            if r[s] <= 0.0:
                continue
            t, e = next((t, e) for t, e in nbrs[s] if dist[t] == dist[s] - 1)
            r[t] += r[s] * math.exp(e) * (1.0 + 8.0 * _ULP) + abs(r[t]) * 4.0 * _ULP
            r[s] = 0.0
    lam = float(np.max(r[~off] / b[~off])) * (1.0 + 8.0 * _ULP)
    return math.log(lam) if lam > 0.0 else None


def _solve_pure(a: np.ndarray, b: np.ndarray, pairs: Pairs) -> Solved:
    """ε′ of one direction: max Σ a y / Σ b y over the cone, with its certificates.

    HiGHS interior point, then its simplex, on the rows as written and then divided by
    e^ε (coefficients in [e^−ε, 1]); the first solve whose certificates meet within
    ``CERTIFIED_GAP`` settles it. Otherwise the best certificates found are returned with
    the first solve's value (Σ p y / Σ p′ y of its point: its objective alone overstates
    the optimum when the point breaks Σ p′ y = 1).
    """
    from scipy.optimize import linprog  # lazy: scipy, > 20 ms

    n = a.size
    value: float | None = None
    low: float | None = None
    high: float | None = None
    reason: str | None = None
    for scaled in (False, True):
        mat, eps, w = _cone_rows(pairs, n, scaled)
        zeros = np.zeros(mat.shape[0])
        for method in ("highs-ipm", "highs"):
            res = linprog(
                -a,
                A_ub=mat,
                b_ub=zeros,
                A_eq=b[None, :],
                b_eq=[1.0],
                bounds=(0, None),
                method=method,
            )
            if res.status == 3:
                reason = "the solver reports an unbounded programme (dynamic range e^ε too wide)"
                continue
            if res.status != 0 or res.x is None:
                reason = f"the solver failed: {res.message}"
                continue
            y = np.maximum(res.x, 0.0)
            den = float(b @ y)
            if not den > 0.0:
                reason = "the solver returned a point with Σ p′ y = 0"
                continue
            num = float(a @ y)
            this = math.log(num / den) if num > 0.0 else -math.inf
            value = this if value is None else value
            u = _envelope(y, pairs)
            if u is not None:
                got = _log_ratio(a, b, u)
                low = got if low is None else max(low, got)
            marg = getattr(getattr(res, "ineqlin", None), "marginals", None)
            if marg is not None:
                dual = _dual_bound(a, b, pairs, eps, w, -np.asarray(marg, dtype=float))
                if dual is not None:
                    high = dual if high is None else min(high, dual)
            if low is not None and high is not None and high - low <= CERTIFIED_GAP:
                # settled: the solver's ratio, kept inside the certified ends
                return Solved(min(max(this, low), high), low, high, None)
    if value is None:
        return Solved(None, None, None, reason)
    return Solved(value, low, high, None)


def _hockey_stick(
    p: np.ndarray, p_prime: np.ndarray, pairs: Pairs, epsilon_prime: float
) -> tuple[float | None, str | None, float | None]:
    """max over (ε, δ)-DP binary f of Σ p f − e^{ε′} Σ p′ f (f ∈ [0, 1]^domain).

    Also a certified lower end of it (None: none): the solver's f clipped to [0, 1] and
    mixed with the constant 1/2 (strictly feasible: slack δ + (e^ε − 1)/2 in every row)
    until every row holds with rounding to spare, re-evaluated.
    """
    a_ub, b_ub = _dp_rows(pairs, p.size, homogeneous=False)
    weight = p - math.exp(epsilon_prime) * p_prime
    val, _, why, x = _linprog_x(-weight, a_ub, b_ub, None, None, (0.0, 1.0))
    if val is None:
        return None, why, None
    low = None
    if x is not None:
        f = np.clip(x, 0.0, 1.0)
        size = np.abs(a_ub) @ np.maximum(f, 0.5) + np.abs(b_ub)
        over = float(np.max(a_ub @ f - b_ub + 8.0 * _ULP * size, initial=0.0))
        slack = float(np.min(b_ub - a_ub @ np.full(f.size, 0.5) - 8.0 * _ULP * size, initial=1.0))
        if over <= 0.0 or slack > 0.0:
            lam = 0.0 if over <= 0.0 else over / (over + slack)
            g = (1.0 - lam) * f + lam * 0.5
            terms = weight * g
            err = 8.0 * _ULP * (float(np.sum(np.abs(terms))) + float(np.sum(np.abs(weight))))
            low = max(0.0, math.fsum(terms.tolist()) - err)
    return max(0.0, -val), None, low


def _off_support(
    p: np.ndarray, p_prime: np.ndarray, pairs: Pairs
) -> tuple[float | None, str | None]:
    """max Σ p f over (ε, δ)-DP binary f with f = 0 wherever p′ > 0.

    Above δ′ no finite ε″ bounds the divergence by δ′ (an event of P′-probability 0).
    """
    a_ub, b_ub = _dp_rows(pairs, p.size, homogeneous=False)
    bounds = [(0.0, 0.0) if q > 0.0 else (0.0, 1.0) for q in p_prime]
    val, _, why = _linprog(-p, a_ub, b_ub, None, None, bounds)
    return (None, why) if val is None else (max(0.0, -val), None)


def _vectors(
    inst: Instance, sizes: tuple[int, ...]
) -> tuple[list[Counts], np.ndarray, np.ndarray]:
    samples = domain(inst.caps, sizes)
    index = {s: i for i, s in enumerate(samples)}
    p = np.zeros(len(samples))
    pp = np.zeros(len(samples))
    for k, v in inst.p.items():
        p[index[k]] += v
    for k, v in inst.p_prime.items():
        pp[index[k]] += v
    return samples, p, pp


def _pairs(
    samples: list[Counts],
    caps: tuple[int, ...],
    relations: Mapping[Neighbours, float],
    deltas: Mapping[Neighbours, float],
) -> Pairs:
    return [
        (i, j, relations[r], float(deltas.get(r, 0.0)))
        for i, j, r in _related(samples, caps, relations)
    ]


def solve_instance(
    inst: Instance, sizes: tuple[int, ...], relations: Mapping[Neighbours, float]
) -> tuple[float | None, str | None, int]:
    """ε′_exact of one instance (both directions), a failure reason, the domain size."""
    solved, n = _solve_instance_pure(inst, sizes, relations)
    return solved.value, solved.reason, n


def _solve_instance_pure(
    inst: Instance, sizes: tuple[int, ...], relations: Mapping[Neighbours, float]
) -> tuple[Solved, int]:
    """The pure programme of one instance over both directions, with its certificates.

    ε′_exact is the larger direction's: the value and the certified ``low`` are the
    maxima over the directions, ``high`` the maximum of the directions' certified upper
    ends (None when a direction has none).
    """
    samples, p, pp = _vectors(inst, sizes)
    pairs = _pairs(samples, inst.caps, relations, {})
    directions = ((p, pp),) if inst.symmetric else ((p, pp), (pp, p))
    value, low, high, have_high = -math.inf, None, -math.inf, True
    for a, b in directions:
        s = _solve_pure(a, b, pairs)
        if s.value is None:
            return s, len(samples)
        value = max(value, s.value)
        if s.low is not None:
            low = s.low if low is None else max(low, s.low)
        if s.high is None:
            have_high = False
        else:
            high = max(high, s.high)
    return Solved(value, low, high if have_high else None, None), len(samples)
