"""The exact worst case on tiny instances: a linear programme over all ε-DP binary mechanisms.

For neighbouring populations P, P′ a sampling scheme gives exact distributions p, p′
over samples. The worst mechanism ratio max_f Σ p f / Σ p′ f over f(S) = Pr[M(S) = 1]
with f ε-DP on a domain of samples closed under M's neighbour relation is a
linear-fractional programme; the Charnes–Cooper substitution y = t·f, t = 1/Σ p′ f
makes it linear (shared/spec/exact-lp-checks.md, "LP formulation"):

    max Σ p(S) y_S  s.t.  Σ p′(S) y_S = 1,  0 <= y_S <= t,  and for every neighbouring
    (S, S″), both orders:  y_S − e^ε y_S″ <= 0,  −y_S + e^ε y_S″ + (1 − e^ε) t <= 0.

ε′_exact = max(log OPT(p, p′), log OPT(p′, p)) (pure ε: binary mechanisms attain the
worst case). Solved with ``scipy.optimize.linprog`` (HiGHS: interior point with
crossover, the ``"highs"`` simplex as fallback).

The (ε, δ) case
---------------
For M (ε_r, δ_r)-DP under each relation r it is declared under (``relations_of``,
``deltas_of``: δ under add-remove; δ_R under replace-one, (1 + e^ε)δ by default for an
add-remove M), the reported (ε′, δ′) holds on an instance iff the hockey-stick
divergence sup_E Pr[M(C(P)) ∈ E] − e^{ε′} Pr[M(C(P′)) ∈ E] is <= δ′ in both directions
(P, P′) and (P′, P). Binary output suffices: for any M and event E, f_E(S) =
Pr[M(S) ∈ E] is the acceptance probability of the binary mechanism 1[M(S) ∈ E], a
post-processing of M, hence (ε_r, δ_r)-DP; and the divergence at E is
Σ_S p(S) f_E(S) − e^{ε′} Σ_S p′(S) f_E(S). Conversely a binary mechanism with
Pr[output 1] = f(S) is (ε_r, δ_r)-DP iff, for every ordered neighbouring (S, S″),
f(S) <= e^{ε_r} f(S″) + δ_r (event {1}) and 1 − f(S) <= e^{ε_r}(1 − f(S″)) + δ_r
(event {0}; ∅ and {0, 1} hold trivially). So the worst divergence over all
(ε, δ)-DP M on the domain is the linear programme (``_hockey_stick``)

    max Σ_S (p(S) − e^{ε′} p′(S)) f_S  over f ∈ [0, 1]^domain,  s.t. for every
    neighbouring (S, S″) under r, both orders: f_S − e^{ε_r} f_S″ <= δ_r,
    −f_S + e^{ε_r} f_S″ <= e^{ε_r} − 1 + δ_r,

and δ′_exact(ε′) is its maximum over both directions. The exact ε′ at a given δ′ is
the smallest ε″ >= 0 with δ′_exact(ε″) <= δ′: max(0, log sup_f (Σ p f − δ′)/Σ p′ f),
the Charnes–Cooper programme above with δ_r·t added to the DP rows and objective
Σ p y − δ′t; it is +∞ when an f with Σ p′ f = 0 has Σ p f > δ′ (``_off_support``),
e.g. for δ′ = 0 and any δ > 0 (M may publish its input with probability δ).

Verdicts for δ > 0 (or a reported δ′ > 0), ``judge_approx``: FAIL when an upper ε′
comes with δ′ null ("no δ′ for δ > 0": a pure ε′ is no guarantee), when δ′_exact at
the upper ε′ exceeds δ′ + tol, or when the exact ε′ at δ′ (δ′ = 0 if none is
reported) is below the lower bound − tol: a lower bound L paired with δ′ claims that no
(ε″, δ′) guarantee with ε″ < L holds for every (ε, δ)-DP M, i.e. that the worst
divergence just below L is above δ′. PASS otherwise (INCONCLUSIVE when the solver fails
or when, without an upper bound, the exact ε′ is below what the programme resolves).

Like the pure programme, the LP is over mechanisms on the domain: every mechanism
defined on all datasets restricts to a feasible point, so the exact values are at least
every real mechanism's on these populations, and a PASS is a proof for them; a FAIL
exhibits a mechanism on the domain.

The hook interface (how a scheme family takes part)
---------------------------------------------------
A scheme sets ``Scheme.verify_plan``: ``(params, mechanism, pairs, limit) -> Plan`` where
``pairs`` is ``"default"`` (the neighbouring populations the theorems use) or
``"all"`` (also every pair of populations over a two-value universe that differ in
one record or one group), and ``limit`` the largest domain it may build (raise
``ConditionError("too large to verify: ...")`` before enumerating more). A ``Plan``
lists ``Instance`` objects; each instance states

* ``symbols``: the universe of record symbols, each with a ``cap`` (1 for a distinct
  record drawn at most once, the sample size for with-replacement draws or for value
  symbols);
* ``p``, ``p_prime``: exact sample distributions, as dicts from count vectors (a
  tuple of per-symbol counts, in ``symbols`` order) to probabilities;
* optionally its ``relation`` (how P and P′ differ: add-remove or replace-one). The
  driver keeps the instances of the guarantee the bounds are reported for; an instance
  without one is taken to be of the scheme's natural guarantee (``for_guarantee``);
* the plan's ``sizes`` (the sample sizes in the domain) and ``relations`` with their
  ε (``{"replace-one": ε_R, "add-remove": ε_D}``: the relations M's ε holds under).

The hook is given M's pure part (``pure_part``: δ = 0), since a plan never depends on
δ; the driver (``ampcalc.analyses.verify.verify_row``) adds M's δ per relation as
``Plan.deltas``. Hooks that refuse δ > 0 are therefore never asked to handle it.

The verifier builds the domain (every count vector within the caps whose total is in
``sizes``; callers pass 0..max when add-remove is among the relations, so the domain is
closed under it), the neighbour pairs (move one unit between symbols: replace-one;
add one unit: add-remove), and solves. ``population_distribution`` helpers below give
the exact distributions of srswor, srswr and Poisson samples of a population given as
symbol counts; other families compose them (e.g. a cluster sample is a srswor sample of
clusters) and return a Plan.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError

#: ``progress(done, total)``: instances solved so far
Progress = Callable[[int, int], None]

DEFAULT_LIMIT = 5000

#: every refusal of a too large instance starts with this
TOO_LARGE = "too large to verify"
#: seconds of one exact solve per (distinct samples)², plus a fixed second: measured on a
#: shared 2-core machine (srswr N = 10, m = 5: 3003 samples in 7 s; N = 12, m = 5: 6188
#: samples in 40 s). An order of magnitude, for refusing before hours of work.
SECONDS_PER_SAMPLE_SQUARED = 1.0e-6


def estimated_log10_seconds(log10_samples: float) -> float:
    """log10 of the estimated time to solve an instance of 10^log10_samples samples."""
    squared = math.log10(SECONDS_PER_SAMPLE_SQUARED) + 2.0 * log10_samples
    return math.log10(1.0 + 10.0 ** min(squared, 300.0)) if squared < 300.0 else squared


def duration(log10_seconds: float) -> str:
    """A rough duration for a message: ``about 40 s``, ``about 3 h``, ``about 10^12 years``."""
    if log10_seconds < 2.0:
        return f"about {max(1, round(10.0**log10_seconds))} s"
    seconds = 10.0 ** min(log10_seconds, 300.0)
    for unit, size in (("min", 60.0), ("h", 3600.0), ("days", 86400.0)):
        if seconds < size * (60.0 if unit == "min" else 24.0 if unit == "h" else 365.0):
            return f"about {seconds / size:.2g} {unit}"
    years = log10_seconds - math.log10(365.25 * 86400.0)
    if years < 6.0:
        return f"about {10.0**years:,.0f} years"
    return f"about 10^{int(years)} years"


def _estimate(log10_samples: float) -> str:
    return f"an exact solve would take {duration(estimated_log10_seconds(log10_samples))}"


SOLVER_TOL = 1e-7  # absolute tolerance on OPT (≈ 1 + ε′); HiGHS' feasibility tolerances
RESOLVE_FLOOR = 1e-6  # ε′ below this cannot be told apart from 0 by the programme

Counts = tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class Instance:
    """One neighbouring pair of populations with its exact sample distributions."""

    label: str
    symbols: tuple[str, ...]
    caps: tuple[int, ...]
    p: Mapping[Counts, float]
    p_prime: Mapping[Counts, float]
    symmetric: bool = False  # a relabelling swaps P and P′: one direction suffices
    # the relation between P and P′ (None: not stated, checked against any guarantee);
    # the driver keeps only the instances of the guarantee the bounds are reported for
    relation: Neighbours | None = None


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a scheme's verify hook returns."""

    instances: tuple[Instance, ...]
    sizes: tuple[int, ...]
    relations: Mapping[Neighbours, float]
    notes: tuple[str, ...] = field(default_factory=tuple)
    # M's δ per relation (missing: 0). Hooks leave it empty: the driver fills it from M
    # (``deltas_of``) after calling the hook with M's pure part.
    deltas: Mapping[Neighbours, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The exact worst case over a plan's instances."""

    epsilon_prime: float | None
    worst_pair: str | None
    samples: int
    status: str | None  # None: solved; "INCONCLUSIVE" with a reason in ``reason``
    reason: str | None = None
    # certified ends of ε′_exact (``run``, ``judge``): a mechanism made exactly ε-DP
    # attains ``epsilon_low``; the solver's multipliers prove ``epsilon_high``
    epsilon_low: float | None = None
    epsilon_high: float | None = None


# --- relations ------------------------------------------------------------------------


def relations_of(mechanism: Mechanism) -> dict[Neighbours, float]:
    """The relations M's declared ε holds under, with their ε (ε_D, ε_R)."""
    rel: dict[Neighbours, float] = {
        Neighbours.REPLACE_ONE: float(mechanism.effective_epsilon_replace_one())
    }
    if mechanism.epsilon_add_remove_known():
        rel[Neighbours.ADD_REMOVE] = float(mechanism.epsilon)
    return rel


def deltas_of(mechanism: Mechanism) -> dict[Neighbours, float]:
    """M's δ per relation of ``relations_of``: δ under add-remove, δ_R under replace-one.

    δ_R is ``delta_replace_one`` when stated, else δ for ``replace-one``/``both`` and
    (1 + e^ε)δ for add-remove (group privacy over the remove-then-add path,
    ``Mechanism.delta_replace_one_of``), capped at 1.
    """
    rel: dict[Neighbours, float] = {
        Neighbours.REPLACE_ONE: float(mechanism.delta_replace_one_of(mechanism.epsilon))
    }
    if mechanism.epsilon_add_remove_known():
        rel[Neighbours.ADD_REMOVE] = float(mechanism.delta)
    return rel


def pure_part(mechanism: Mechanism) -> Mechanism:
    """M with δ = 0: what a verify hook is given.

    A plan (sample distributions, relations and their ε) never depends on δ; the driver
    adds each relation's δ (``deltas_of``) to the plan the hook returns, so hooks written
    for pure ε serve the (ε, δ) programme unchanged.
    """
    import dataclasses

    return dataclasses.replace(mechanism, delta=0.0, delta_replace_one=None, releases=None)


def sizes_for(relations: Mapping[Neighbours, float], used: Iterable[int]) -> tuple[int, ...]:
    """Sample sizes of a domain closed under the relations (0..max with add-remove)."""
    used = sorted(set(used))
    if Neighbours.ADD_REMOVE in relations:
        return tuple(range(0, max(used) + 1))
    return tuple(used)


# --- exact sample distributions of a population given as symbol counts ---------------


def _compositions(caps: tuple[int, ...], total: int) -> Iterable[Counts]:
    if not caps:
        if total == 0:
            yield ()
        return
    head, rest = caps[0], caps[1:]
    room = sum(rest)
    for k in range(max(0, total - room), min(head, total) + 1):
        for tail in _compositions(rest, total - k):
            yield (k, *tail)


def srswor_distribution(counts: tuple[int, ...], m: int) -> dict[Counts, float]:
    """m drawn without replacement from a population with ``counts`` of each symbol."""
    n = sum(counts)
    denom = math.comb(n, m)
    return {
        k: math.prod(math.comb(c, j) for c, j in zip(counts, k, strict=True)) / denom
        for k in _compositions(tuple(counts), m)
    }


def srswr_distribution(counts: tuple[int, ...], m: int) -> dict[Counts, float]:
    """m i.i.d. uniform draws (with replacement) from a population."""
    n = sum(counts)
    caps = tuple(m if c > 0 else 0 for c in counts)
    out = {}
    for k in _compositions(caps, m):
        coef = math.factorial(m)
        for j in k:
            coef //= math.factorial(j)
        out[k] = coef * math.prod((c / n) ** j for c, j in zip(counts, k, strict=True))
    return out


def poisson_distribution(counts: tuple[int, ...], q: float) -> dict[Counts, float]:
    """Each record kept independently with probability q."""
    out = {}
    for k in itertools.product(*(range(c + 1) for c in counts)):
        out[k] = math.prod(
            math.comb(c, j) * q**j * (1.0 - q) ** (c - j) for c, j in zip(counts, k, strict=True)
        )
    return out


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
    from scipy.optimize import linprog

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
    from scipy.sparse import coo_matrix

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
    from scipy.sparse import coo_matrix

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
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

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
        from collections import deque

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
    from scipy.optimize import linprog

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


class EpsilonRangeError(ConditionError):
    """M's ε is beyond what the exact programme can represent (``check_epsilon``)."""


def check_epsilon(relations: Mapping[Neighbours, float]) -> None:
    """Refuse an ε the programme cannot hold (``LIMITS["verify_epsilon"]``).

    Its rows carry e^ε: above e^34.5 HiGHS refuses the coefficient, the rows divided by
    e^ε lose e^−ε below its 10⁻⁹ floor, and past ε = 709 e^ε is not a float. Below the
    limit a programme the solver cannot settle is INCONCLUSIVE, never a verdict.
    """
    from ampcalc.model.limits import LIMITS

    cap = LIMITS["verify_epsilon"]
    for rel, eps in sorted(relations.items(), key=lambda r: r[0] != Neighbours.ADD_REMOVE):
        if not eps <= cap.value:
            how = " (2ε for M declared under add-remove)" if rel == Neighbours.REPLACE_ONE else ""
            raise EpsilonRangeError(
                f"too large an ε to verify: verify's exact programme takes M's ε up to "
                f"{cap.value} under each relation it holds under, and here it is "
                f"{float(eps):.6g} under {rel}{how}; {cap.alternative}"
            )


def _check_limit(plan: Plan, limit: int) -> int:
    check_epsilon(plan.relations)
    largest = 0
    for inst in plan.instances:
        largest = max(largest, domain_size(inst.caps, plan.sizes, limit))
    if largest > limit:
        raise ConditionError(
            f"{TOO_LARGE}: the domain closed under M's relation has more than "
            f"{limit} distinct samples (at least {largest}; {_estimate(math.log10(largest))} "
            "or more); use a smaller population, sample or group"
        )
    return largest


def run(plan: Plan, *, limit: int = DEFAULT_LIMIT, progress: Progress | None = None) -> Outcome:
    """Solve every instance of a plan; the worst pair wins (pure ε: δ ignored).
    ``progress(done, total)`` is called after each instance.

    ``epsilon_low``/``epsilon_high`` are the certified ends over the instances (the
    largest ``low``; the largest ``high``, None when an instance has none).
    """
    largest = _check_limit(plan, limit)
    worst, label, reason = -math.inf, None, None
    low: float | None = None
    high: float | None = -math.inf
    for i, inst in enumerate(plan.instances):
        solved, _ = _solve_instance_pure(inst, plan.sizes, plan.relations)
        if progress is not None:
            progress(i + 1, len(plan.instances))
        if solved.value is None:
            reason = f"{inst.label}: {solved.reason}"
            continue
        if solved.value > worst:
            worst, label = solved.value, inst.label
        if solved.low is not None:
            low = solved.low if low is None else max(low, solved.low)
        high = None if high is None or solved.high is None else max(high, solved.high)
    if reason is not None:
        return Outcome(
            epsilon_prime=None if label is None else worst,
            worst_pair=label,
            samples=largest,
            status="INCONCLUSIVE",
            reason=reason,
        )
    return Outcome(
        epsilon_prime=worst,
        worst_pair=label,
        samples=largest,
        status=None,
        epsilon_low=low,
        epsilon_high=high,
    )


_SAME = object()  # ``judge``'s default: the caller vouches for ``exact``


def judge(
    exact: float | None,
    lower: float | None,
    upper: float | None,
    low: Any = _SAME,
    high: Any = _SAME,
) -> tuple[str, float, str | None]:
    """PASS / FAIL / INCONCLUSIVE for lower <= exact <= upper, with the tolerance used.

    The tolerance comes from the solver's absolute tolerance on OPT (≈ e^{ε′}): a
    relative 1e-7 on OPT, i.e. about 1e-7 on ε′, doubled for the two directions.

    ``low``/``high`` are the certified ends of ε′_exact (``run``: a mechanism made
    exactly ε-DP and re-evaluated attains ``low``; the solver's multipliers prove
    ``high``); None is no certificate, and left out they are ``exact`` itself. A FAIL
    needs a certificate: ``low`` above upper + tol, or ``high`` below lower − tol. A
    solver's optimum outside the bounds without one is INCONCLUSIVE, never FAIL.
    """
    if exact is None:
        return "INCONCLUSIVE", 0.0, "no exact value"
    low = exact if low is _SAME else low
    high = exact if high is _SAME else high
    tol = 2.0 * SOLVER_TOL * max(1.0, math.exp(-exact) if exact < 0 else 1.0)
    if exact < RESOLVE_FLOOR:
        return "INCONCLUSIVE", tol, f"ε′_exact {exact:.3g} is below what the programme resolves"
    if upper is not None and exact > upper + tol:
        if low is not None and low > upper + tol:
            return "FAIL", tol, f"exact {low:.10g} is above the upper bound {upper:.10g}"
        return (
            "INCONCLUSIVE",
            tol,
            (
                f"the solver's optimum {exact:.10g} is above the upper bound {upper:.10g}, but "
                + _uncertified(low, "the upper bound")
            ),
        )
    if lower is not None and exact < lower - tol:
        if high is not None and high < lower - tol:
            return "FAIL", tol, f"exact {high:.10g} is below the lower bound {lower:.10g}"
        return (
            "INCONCLUSIVE",
            tol,
            (
                f"the solver's optimum {exact:.10g} is below the lower bound {lower:.10g}, but "
                + (
                    "its multipliers give no certificate that the optimum is below it "
                    "(a solver artefact is not a violation)"
                    if high is None
                    else f"its multipliers prove only ε′_exact <= {high:.10g} (a solver "
                    "artefact is not a violation)"
                )
            ),
        )
    return "PASS", tol, None


def _uncertified(low: float | None, bound: str) -> str:
    if low is None:
        return (
            "the point it returns cannot be made exactly ε-DP to re-evaluate it (a solver "
            "artefact is not a violation)"
        )
    return (
        f"the mechanism it returns, made exactly ε-DP and re-evaluated, reaches {low:.10g}, "
        f"not beyond {bound} and its tolerance (a solver artefact, not a violation)"
    )


# --- the (ε, δ) programme -------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ApproxOutcome:
    """The exact worst case of a plan for an (ε, δ)-DP mechanism.

    ``delta_at_upper``: the worst hockey-stick divergence at the reported upper ε′
    (None without one); ``epsilon_at_delta``: the smallest ε″ >= 0 at which the worst
    divergence is at most ``delta_prime`` (``math.inf``: none is).
    """

    delta_at_upper: float | None
    delta_pair: str | None
    epsilon_at_delta: float | None
    epsilon_pair: str | None
    delta_prime: float
    samples: int
    status: str | None  # None: solved; "INCONCLUSIVE" with a reason in ``reason``
    reason: str | None = None
    pure_epsilon: float | None = None  # the exact ε′ over pure ε-DP mechanisms (δ = 0)
    # certified ends (``run_approx``, ``judge_approx``): a mechanism made exactly
    # (ε, δ)-DP has divergence ``delta_low`` at the upper ε′, and the pure programme's
    # multipliers prove ε′_exact <= ``pure_high``. ``certified`` False (the default for a
    # hand-made outcome): the caller vouches for ``delta_at_upper`` and ``pure_epsilon``
    delta_low: float | None = None
    pure_high: float | None = None
    certified: bool = False


def run_approx(
    plan: Plan,
    *,
    epsilon_upper: float | None,
    delta_prime: float | None,
    limit: int = DEFAULT_LIMIT,
    progress: Progress | None = None,
) -> ApproxOutcome:
    """Solve every instance of a plan with M's δ per relation (``plan.deltas``).

    Per instance and direction (p, p′) and (p′, p): the divergence at ``epsilon_upper``
    (``_hockey_stick``), and ε″(δ′) = max(0, log sup_f (Σ p f − δ′)/Σ p′ f) by the
    Charnes–Cooper programme (``_solve`` with δ′; an unbounded programme is confirmed
    by ``_off_support`` before it is read as ε″ = ∞). ``delta_prime`` None reads δ′ = 0
    (not solved when an upper ε′ is given: that row FAILs whatever ε″(0) is).
    """
    largest = _check_limit(plan, limit)
    dp = 0.0 if delta_prime is None else float(delta_prime)
    worst_d, d_label = -math.inf, None
    worst_e, e_label = -math.inf, None
    d_low: float | None = None
    reason = None
    for i, inst in enumerate(plan.instances):
        if progress is not None and i:
            progress(i, len(plan.instances))
        samples, p, pp = _vectors(inst, plan.sizes)
        pairs = _pairs(samples, inst.caps, plan.relations, plan.deltas)
        directions = ((p, pp),) if inst.symmetric else ((p, pp), (pp, p))
        for a, b in directions:
            if epsilon_upper is not None:
                d, why, low = _hockey_stick(a, b, pairs, epsilon_upper)
                if d is None:
                    reason = f"{inst.label}: {why}"
                elif d > worst_d:
                    worst_d, d_label = d, inst.label
                if low is not None:
                    d_low = low if d_low is None else max(d_low, low)
            if epsilon_upper is not None and delta_prime is None:
                continue  # FAIL whatever ε″(0) is ("no δ′ for δ > 0")
            opt, why = _solve(a, b, pairs, dp)
            if opt is not None:
                e = math.log(opt) if opt > 1.0 else 0.0
            else:
                off, why_off = _off_support(a, b, pairs)
                if off is None or off <= dp + SOLVER_TOL:
                    reason = f"{inst.label}: {why if off is not None else why_off}"
                    continue
                e = math.inf  # an event P′ never produces has probability above δ′
            if e > worst_e:
                worst_e, e_label = e, inst.label
    if progress is not None:
        progress(len(plan.instances), len(plan.instances))
    return ApproxOutcome(
        delta_at_upper=None if d_label is None else worst_d,
        delta_pair=d_label,
        epsilon_at_delta=None if e_label is None else worst_e,
        epsilon_pair=e_label,
        delta_prime=dp,
        samples=largest,
        status=None if reason is None else "INCONCLUSIVE",
        reason=reason,
        delta_low=d_low,
        certified=True,
    )


def judge_approx(
    out: ApproxOutcome,
    lower: float | None,
    upper: float | None,
    delta_prime: float | None,
) -> tuple[str, float, str | None]:
    """PASS / FAIL / INCONCLUSIVE for an (ε, δ)-DP mechanism, with the δ tolerance used.

    FAIL when an upper ε′ comes without δ′ (no pure ε′ holds for δ > 0), when the worst
    divergence at the upper ε′ exceeds δ′ + tol, or when the exact ε′ over the pure ε-DP
    mechanisms (``pure_epsilon``) is below lower − tol: a lower bound is witnessed by a
    pure ε-DP mechanism, which is (ε, δ)-DP too (ε″(δ′), the exact ε′ at the printed δ′,
    is reported beside it; the poisson schemes' lower bounds also hold there).
    tol_δ = 2·10⁻⁷·(1 + e^{ε′}): HiGHS' feasibility tolerance on f, weighted by the
    objective's coefficients.
    """
    tol_d = 2.0 * SOLVER_TOL * (1.0 + math.exp(min(upper, 700.0))) if upper is not None else 0.0
    tol_e = 2.0 * SOLVER_TOL
    if upper is not None:
        d = out.delta_at_upper
        shown = "not solved" if d is None else f"{d:.6g}"
        if delta_prime is None:
            return (
                "FAIL",
                tol_d,
                f"no δ′ for δ > 0: the upper bound {upper:.10g} is printed without δ′, and "
                f"the exact divergence at it is {shown} (a pure ε′ is no guarantee when M "
                "has δ > 0)",
            )
        if d is not None and d > delta_prime + tol_d:
            low = out.delta_low if out.certified else d
            if low is not None and low > delta_prime + tol_d:
                return (
                    "FAIL",
                    tol_d,
                    f"exact δ {low:.10g} at the upper bound ε′ = {upper:.10g} is above the "
                    f"reported δ′ {delta_prime:.10g}",
                )
            return (
                "INCONCLUSIVE",
                tol_d,
                f"the solver's divergence {d:.10g} at the upper bound ε′ = {upper:.10g} is "
                f"above the reported δ′ {delta_prime:.10g}, but the mechanism it returns, "
                "made exactly (ε, δ)-DP and re-evaluated, "
                + ("cannot be formed" if low is None else f"reaches {low:.10g}")
                + " (a solver artefact, not a violation)",
            )
    e = out.epsilon_at_delta
    pure = out.pure_epsilon
    if lower is not None and pure is not None and pure < lower - tol_e:
        high = out.pure_high if out.certified else pure
        if high is not None and high < lower - tol_e:
            return (
                "FAIL",
                tol_d,
                f"exact ε′ {high:.10g} over the pure ε-DP mechanisms is below the lower "
                f"bound {lower:.10g}",
            )
        return (
            "INCONCLUSIVE",
            tol_d,
            f"the solver's ε′ {pure:.10g} over the pure ε-DP mechanisms is below the lower "
            f"bound {lower:.10g}, but its multipliers give no certificate that the optimum "
            "is (a solver artefact is not a violation)",
        )
    if out.status is not None:
        return "INCONCLUSIVE", tol_d, out.reason
    if upper is None and (e is None or e < RESOLVE_FLOOR):
        return "INCONCLUSIVE", tol_d, "ε′_exact at δ′ is below what the programme resolves"
    return "PASS", tol_d, None


# --- the hooks of the three reference families ------------------------------------------


def _distinct(n_other: int, g: int) -> tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]:
    """Symbols o1..o_{n−g}, x1..xg, x′1..x′g; P's counts and P′'s counts."""
    syms = (
        tuple(f"o{i + 1}" for i in range(n_other))
        + tuple(f"x{i + 1}" for i in range(g))
        + tuple(f"x'{i + 1}" for i in range(g))
    )
    cp = (1,) * n_other + (1,) * g + (0,) * g
    cpp = (1,) * n_other + (0,) * g + (1,) * g
    return syms, cp, cpp


def _too_large(count: int, limit: int) -> None:
    if count > limit:
        # a count beyond the float range is shown by its order of magnitude
        digits = int((count.bit_length() - 1) * math.log10(2))
        shown = f"{count:,}" if count < 10**12 else f"about 10^{digits}"
        log10 = math.log10(count) if count < 10**300 else float(digits)
        raise ConditionError(
            f"{TOO_LARGE}: the domain closed under M's relation has {shown} "
            f"distinct samples, more than {limit} distinct samples allowed "
            f"({_estimate(log10)}); use a smaller population, sample or group"
        )


def _log_comb(a: int, b: int) -> float:
    """log C(a, b) (−inf where C(a, b) = 0)."""
    if b < 0 or b > a:
        return -math.inf
    return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)


def _fixed_size_plan(
    params: Any,
    mechanism: Mechanism,
    pairs: str,
    dist: Callable[[tuple[int, ...], int], dict[Counts, float]],
    cap_of_record: Callable[[int], int],
    limit: int,
) -> Plan:
    n, m, g = params.population, params.sample, mechanism.group_size
    if g > n:
        raise ConditionError(f"group_size {g} is larger than population {n}")
    rel = relations_of(mechanism)
    sizes = sizes_for(rel, [m])
    u = n + g  # distinct record symbols
    with_repl = cap_of_record(m) > 1
    # the exact count of huge domains is a slow big-integer product: bound its log first
    logs = [_log_comb(u + s - 1, s) if with_repl else _log_comb(u, s) for s in sizes]
    if max(logs) > math.log(limit) + 1.0:  # lgamma's error is far below 1 nat
        log10 = max(logs) / math.log(10)
        raise ConditionError(
            f"{TOO_LARGE}: the domain closed under M's relation has about "
            f"10^{int(log10)} distinct samples, more than {limit} distinct "
            f"samples allowed ({_estimate(log10)}); use a smaller population, sample or group"
        )
    count = sum(math.comb(u + s - 1, s) if with_repl else math.comb(u, s) for s in sizes)
    _too_large(count, limit)
    syms, cp, cpp = _distinct(n - g, g)
    caps = tuple(cap_of_record(m) for _ in syms)
    insts = [
        Instance(
            label=f"P = {{{n - g} others, x1..x{g}}} vs P′ = {{{n - g} others, x′1..x′{g}}}",
            symbols=syms,
            caps=caps,
            p=dist(cp, m),
            p_prime=dist(cpp, m),
            symmetric=True,  # x ↔ x′ swaps P and P′ (exact-lp-checks.md: equal to 9e-16)
            relation=Neighbours.REPLACE_ONE,
        )
    ]
    if pairs == "all":
        # populations over a two-value universe {a, b}: k records b, and g of the
        # a-records turned into b (one group); samples as value multisets
        for k in range(0, n - g + 1):
            insts.append(
                Instance(
                    label=f"{{a×{n - k}, b×{k}}} vs {{a×{n - k - g}, b×{k + g}}}",
                    symbols=("a", "b"),
                    caps=(m, m),
                    p=dist((n - k, k), m),
                    p_prime=dist((n - k - g, k + g), m),
                    relation=Neighbours.REPLACE_ONE,
                )
            )
    return Plan(instances=tuple(insts), sizes=sizes, relations=rel)


def srswor_instance(
    params: Any, mechanism: Mechanism, pairs: str = "default", limit: int = DEFAULT_LIMIT
) -> Plan:
    """Verify hook of ``srswor`` (group g: the x1..xg of P become x′1..x′g)."""
    return _fixed_size_plan(params, mechanism, pairs, srswor_distribution, lambda m: 1, limit)


def srswr_instance(
    params: Any, mechanism: Mechanism, pairs: str = "default", limit: int = DEFAULT_LIMIT
) -> Plan:
    """Verify hook of ``srswr`` (samples are multisets: a record may repeat)."""
    return _fixed_size_plan(params, mechanism, pairs, srswr_distribution, lambda m: m, limit)


POISSON_OTHERS = 2  # records besides the group in the default Poisson instance


def poisson_instance(
    params: Any, mechanism: Mechanism, pairs: str = "default", limit: int = DEFAULT_LIMIT
) -> Plan:
    """Verify hook of ``poisson``: P = O ∪ {x1..xg} vs P′ = O (add/remove a group) and
    vs O ∪ {x′1..x′g} (replace the group); each instance states its relation."""
    q, g = params.rate, mechanism.group_size
    rel = relations_of(mechanism)
    others = [POISSON_OTHERS] if pairs == "default" else [0, 1, 2, 3]
    _too_large(2 ** (max(others) + g), limit)
    insts = []
    for n_o in others:
        syms, cp, _ = _distinct(n_o, g)
        syms = syms[: n_o + g]
        cp = cp[: n_o + g]
        cpp = (1,) * n_o + (0,) * g
        insts.append(
            Instance(
                label=f"P = O ∪ {{x1..x{g}}} vs P′ = O, |O| = {n_o}",
                symbols=syms,
                caps=(1,) * len(syms),
                p=poisson_distribution(cp, q),
                p_prime=poisson_distribution(cpp, q),
                relation=Neighbours.ADD_REMOVE,
            )
        )
    if pairs == "all":
        for n_a in range(0, 3):
            for n_b in range(0, 3):
                for j in range(0, g + 1):
                    big = (n_a + g - j, n_b + j)
                    insts.append(
                        Instance(
                            label=f"{{a×{big[0]}, b×{big[1]}}} vs {{a×{n_a}, b×{n_b}}}",
                            symbols=("a", "b"),
                            caps=big,
                            p=poisson_distribution(big, q),
                            p_prime=poisson_distribution((n_a, n_b), q),
                            relation=Neighbours.ADD_REMOVE,
                        )
                    )
    # replace-one of the group (the `guarantee: replace-one` bounds): O ∪ {x1..xg} vs
    # O ∪ {x′1..x′g}, where the domain of O ∪ X ∪ X′ fits the limit
    for n_o in (n for n in others if 2 ** (n + 2 * g) <= limit):
        syms, cp, cpp = _distinct(n_o, g)
        insts.append(
            Instance(
                label=f"P = O ∪ {{x1..x{g}}} vs P′ = O ∪ {{x′1..x′{g}}}, |O| = {n_o}",
                symbols=syms,
                caps=(1,) * len(syms),
                p=poisson_distribution(cp, q),
                p_prime=poisson_distribution(cpp, q),
                symmetric=True,
                relation=Neighbours.REPLACE_ONE,
            )
        )
    if pairs == "all":
        for n_a in range(0, 3):
            for n_b in range(0, 3):
                insts.append(
                    Instance(
                        label=f"{{a×{n_a + g}, b×{n_b}}} vs {{a×{n_a}, b×{n_b + g}}}",
                        symbols=("a", "b"),
                        caps=(n_a + g, n_b + g),
                        p=poisson_distribution((n_a + g, n_b), q),
                        p_prime=poisson_distribution((n_a, n_b + g), q),
                        relation=Neighbours.REPLACE_ONE,
                    )
                )
    sizes = tuple(range(0, max(sum(i.caps) for i in insts) + 1))
    return Plan(instances=tuple(insts), sizes=sizes, relations=rel)


def for_guarantee(
    plan: Plan, guarantee: Neighbours | str, untagged: Neighbours | str | None = None
) -> Plan:
    """The plan's instances of one relation.

    An instance that states no relation is taken to be of ``untagged`` (the guarantee
    the scheme reports when the design asks for none: the neighbours its theorems, and
    so its hook, use); with ``untagged`` None it is kept for any guarantee. Raises
    ``ConditionError`` when no instance is left: the hook enumerates no pair of that
    relation, so bounds for that guarantee cannot be checked.
    """
    import dataclasses

    name = str(guarantee)
    default = None if untagged is None else str(untagged)
    kept = tuple(
        i
        for i in plan.instances
        if (str(i.relation) if i.relation is not None else default) in (None, name)
    )
    if not kept:
        raise ConditionError(
            f"the verify hook enumerates no {name} pair: the {name} guarantee is not checked"
        )
    return dataclasses.replace(plan, instances=kept)


# --- mixtures over sample sizes (random-size, systematic, data-dependent-size) ----------


def mixture_distribution(
    parts: Iterable[tuple[float, Mapping[Counts, float]]],
) -> dict[Counts, float]:
    """Σ_i w_i·dist_i: a sample drawn from dist_i with probability w_i (weights sum to 1)."""
    out: dict[Counts, float] = {}
    for w, dist in parts:
        if w <= 0.0:
            continue
        for k, v in dist.items():
            out[k] = out.get(k, 0.0) + w * v
    return out


def srswor_size_mixture(
    counts: tuple[int, ...], size_probs: Mapping[int, float]
) -> dict[Counts, float]:
    """A srswor sample whose size m is drawn first with probability ``size_probs[m]``."""
    return mixture_distribution(
        (w, srswor_distribution(counts, m)) for m, w in sorted(size_probs.items())
    )


def distinct_domain_size(records: int, sizes: Iterable[int]) -> int:
    """Samples of ``sizes`` records out of ``records`` distinct ones (caps 1)."""
    return sum(math.comb(records, s) for s in sizes if 0 <= s <= records)


def check_distinct_sizes(records: int, sizes: Iterable[int], limit: int) -> int:
    """Samples of ``sizes`` records out of ``records`` distinct ones (caps 1).

    Raises ``ConditionError("too large to verify: ...")`` past ``limit``, from the log
    of the size first (an exact big-integer count of a huge domain is slow).
    """
    sizes = [s for s in sizes if 0 <= s <= records]
    logs = [_log_comb(records, s) for s in sizes]
    if logs and max(logs) > math.log(limit) + 1.0:  # lgamma's error is far below 1 nat
        raise ConditionError(
            f"too large to verify: the domain closed under M's relation has about "
            f"10^{int(max(logs) / math.log(10))} distinct samples, more than {limit} distinct "
            "samples allowed; use a smaller population or sample"
        )
    count = sum(math.comb(records, s) for s in sizes)
    _too_large(count, limit)
    return count


# --- products over strata or clusters, independent inclusions, value projections ------


def product_distribution(parts: Iterable[Mapping[Counts, float]]) -> dict[Counts, float]:
    """Independent parts (strata, clusters) side by side: count vectors concatenated."""
    out: dict[Counts, float] = {(): 1.0}
    for dist in parts:
        out = {a + b: va * vb for a, va in out.items() for b, vb in dist.items() if vb > 0.0}
    return out


def bernoulli_distribution(probs: Iterable[float]) -> dict[Counts, float]:
    """Distinct records (caps 1), record i kept independently with probability probs[i]."""
    return product_distribution(
        {(0,): 1.0 - q, (1,): q} if q < 1.0 else {(1,): 1.0} for q in probs
    )


def project_distribution(
    dist: Mapping[Counts, float], values: Counts, width: int
) -> dict[Counts, float]:
    """The sample as a multiset of values: symbol i counts towards value ``values[i]``."""
    out: dict[Counts, float] = {}
    for k, v in dist.items():
        c = [0] * width
        for j, n in zip(values, k, strict=True):
            c[j] += n
        key = tuple(c)
        out[key] = out.get(key, 0.0) + v
    return out


def check_distinct_domain(records: int, largest_sample: int, limit: int) -> None:
    """Refuse before enumerating: subsets of up to ``largest_sample`` distinct records.

    The domain holds at least C(records, s) samples for s = min(largest_sample,
    records // 2): its log decides huge designs before the exact (big-integer) count.
    """
    s = min(largest_sample, records // 2)
    log_size = _log_comb(records, s)
    if log_size > math.log(limit) + 1.0:  # lgamma's error is far below 1 nat
        raise ConditionError(
            f"too large to verify: the domain closed under M's relation has at least "
            f"10^{int(log_size / math.log(10))} distinct samples, more than {limit} distinct "
            "samples allowed; use a smaller population, sample or group"
        )
    _too_large(distinct_domain_size(records, range(largest_sample + 1)), limit)


def value_instances(
    label: str,
    group_of: Counts,
    x: int,
    p: Mapping[Counts, float],
    p_prime: Mapping[Counts, float],
    cap: int,
    limit: int,
) -> list[Instance]:
    """A distinct-record pair seen over the two-value universe {a, b}.

    Records of one group (cluster, stratum, …) are exchangeable under the design, so a
    value assignment is fixed by how many records of each group are b (the first ones);
    the differing record ``x`` is a (b is the same programme with a ↔ b). Samples become
    value multisets: the mechanisms that see values only.
    """
    groups = sorted({g for i, g in enumerate(group_of) if i != x})
    members = {g: [i for i, h in enumerate(group_of) if h == g and i != x] for g in groups}
    choices = [range(len(members[g]) + 1) for g in groups]
    count = math.prod(len(c) for c in choices)
    if count > limit:
        raise ConditionError(
            f"too large to verify: {count} two-value populations, more than {limit} allowed; "
            "use fewer or smaller groups, or the default pairs"
        )
    out = []
    for bs in itertools.product(*choices):
        values = [0] * len(group_of)
        for g, b in zip(groups, bs, strict=True):
            for i in members[g][:b]:
                values[i] = 1
        vals = tuple(values)
        out.append(
            Instance(
                label=f"{label}, b per group {list(bs)}, x = a",
                symbols=("a", "b"),
                caps=(cap, cap),
                p=project_distribution(p, vals, 2),
                p_prime=project_distribution(p_prime, vals, 2),
            )
        )
    return out
