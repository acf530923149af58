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

The hook interface (how a scheme family takes part)
---------------------------------------------------
A scheme registers ``hooks["verify"]``: ``(params, mechanism, pairs, limit) -> Plan`` where
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
* the plan's ``sizes`` (the sample sizes in the domain) and ``relations`` with their
  ε (``{"replace-one": ε_R, "add-remove": ε_D}``: the relations M's ε holds under).

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

from .errors import ConditionError
from .model import Mechanism, Neighbours

DEFAULT_LIMIT = 5000
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


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a scheme's verify hook returns."""

    instances: tuple[Instance, ...]
    sizes: tuple[int, ...]
    relations: Mapping[Neighbours, float]
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The exact worst case over a plan's instances."""

    epsilon_prime: float | None
    worst_pair: str | None
    samples: int
    status: str | None  # None: solved; "INCONCLUSIVE" with a reason in ``reason``
    reason: str | None = None


# --- relations ------------------------------------------------------------------------


def relations_of(mechanism: Mechanism) -> dict[Neighbours, float]:
    """The relations M's declared ε holds under, with their ε (ε_D, ε_R)."""
    rel: dict[Neighbours, float] = {
        Neighbours.REPLACE_ONE: float(mechanism.effective_epsilon_replace_one())
    }
    if mechanism.epsilon_add_remove_known():
        rel[Neighbours.ADD_REMOVE] = float(mechanism.epsilon)
    return rel


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


def neighbour_pairs(
    samples: list[Counts], caps: tuple[int, ...], relations: Mapping[Neighbours, float]
) -> list[tuple[int, int, float]]:
    """Unordered neighbouring pairs (i, j, ε) of the domain, per relation."""
    index = {s: i for i, s in enumerate(samples)}
    out: list[tuple[int, int, float]] = []
    d = len(caps)
    for i, s in enumerate(samples):
        if Neighbours.ADD_REMOVE in relations:
            for b in range(d):
                if s[b] < caps[b]:
                    t = (*s[:b], s[b] + 1, *s[b + 1 :])
                    j = index.get(t)
                    if j is not None:
                        out.append((i, j, relations[Neighbours.ADD_REMOVE]))
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
                            out.append((i, j, relations[Neighbours.REPLACE_ONE]))
    # replace-one moves a -> b for a < b only; b -> a is the same pair seen from t
    return out


def _solve(
    p: np.ndarray, p_prime: np.ndarray, pairs: list[tuple[int, int, float]]
) -> tuple[float | None, str | None]:
    """OPT of the Charnes–Cooper programme (None and a reason on solver failure)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n = p.size
    t_col = n
    rows, cols, vals = [], [], []
    r = 0
    for i, j, eps in pairs:
        e = math.exp(eps)
        for a, b in ((i, j), (j, i)):
            rows += [r, r]
            cols += [a, b]
            vals += [1.0, -e]
            r += 1
            rows += [r, r, r]
            cols += [a, b, t_col]
            vals += [-1.0, e, 1.0 - e]
            r += 1
    for i in range(n):
        rows += [r, r]
        cols += [i, t_col]
        vals += [1.0, -1.0]
        r += 1
    a_ub = coo_matrix((vals, (rows, cols)), shape=(r, n + 1)).tocsr()
    b_ub = np.zeros(r)
    a_eq = np.concatenate((p_prime, [0.0]))[None, :]
    c = -np.concatenate((p, [0.0]))
    # HiGHS interior point (with crossover to a basic solution) is about 5x faster than
    # its dual simplex here; the simplex ("highs") is the fallback when it fails
    for method in ("highs-ipm", "highs"):
        res = linprog(
            c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=(0, None), method=method
        )
        if res.status in (0, 3):
            break
    if res.status == 3:
        return None, "the solver reports an unbounded programme (dynamic range e^ε too wide)"
    if res.status != 0:
        return None, f"the solver failed: {res.message}"
    return float(-res.fun), None


def solve_instance(
    inst: Instance, sizes: tuple[int, ...], relations: Mapping[Neighbours, float]
) -> tuple[float | None, str | None, int]:
    """ε′_exact of one instance (both directions), a failure reason, the domain size."""
    samples = domain(inst.caps, sizes)
    index = {s: i for i, s in enumerate(samples)}
    p = np.zeros(len(samples))
    pp = np.zeros(len(samples))
    for k, v in inst.p.items():
        p[index[k]] += v
    for k, v in inst.p_prime.items():
        pp[index[k]] += v
    pairs = neighbour_pairs(samples, inst.caps, relations)
    best = -math.inf
    directions = ((p, pp),) if inst.symmetric else ((p, pp), (pp, p))
    for a, b in directions:
        opt, why = _solve(a, b, pairs)
        if opt is None:
            return None, why, len(samples)
        best = max(best, math.log(opt) if opt > 0 else -math.inf)
    return best, None, len(samples)


def run(plan: Plan, *, limit: int = DEFAULT_LIMIT) -> Outcome:
    """Solve every instance of a plan; the worst pair wins."""
    largest = 0
    for inst in plan.instances:
        largest = max(largest, domain_size(inst.caps, plan.sizes, limit))
    if largest > limit:
        raise ConditionError(
            f"too large to verify: the domain closed under M's relation has more than "
            f"{limit} distinct samples (at least {largest}); use a smaller population, "
            "sample or group"
        )
    worst, label, reason = -math.inf, None, None
    for inst in plan.instances:
        val, why, _ = solve_instance(inst, plan.sizes, plan.relations)
        if val is None:
            reason = f"{inst.label}: {why}"
            continue
        if val > worst:
            worst, label = val, inst.label
    if reason is not None:
        return Outcome(
            epsilon_prime=None if label is None else worst,
            worst_pair=label,
            samples=largest,
            status="INCONCLUSIVE",
            reason=reason,
        )
    return Outcome(epsilon_prime=worst, worst_pair=label, samples=largest, status=None)


def judge(
    exact: float | None, lower: float | None, upper: float | None
) -> tuple[str, float, str | None]:
    """PASS / FAIL / INCONCLUSIVE for lower <= exact <= upper, with the tolerance used.

    The tolerance comes from the solver's absolute tolerance on OPT (≈ e^{ε′}): a
    relative 1e-7 on OPT, i.e. about 1e-7 on ε′, doubled for the two directions.
    """
    if exact is None:
        return "INCONCLUSIVE", 0.0, "no exact value"
    tol = 2.0 * SOLVER_TOL * max(1.0, math.exp(-exact) if exact < 0 else 1.0)
    if exact < RESOLVE_FLOOR:
        return "INCONCLUSIVE", tol, f"ε′_exact {exact:.3g} is below what the programme resolves"
    if upper is not None and exact > upper + tol:
        return "FAIL", tol, f"exact {exact:.10g} is above the upper bound {upper:.10g}"
    if lower is not None and exact < lower - tol:
        return "FAIL", tol, f"exact {exact:.10g} is below the lower bound {lower:.10g}"
    return "PASS", tol, None


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
        raise ConditionError(
            f"too large to verify: the domain closed under M's relation has {shown} "
            f"distinct samples, more than {limit} distinct samples allowed; use a smaller "
            "population, sample or group"
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
        raise ConditionError(
            f"too large to verify: the domain closed under M's relation has about "
            f"10^{int(max(logs) / math.log(10))} distinct samples, more than {limit} distinct "
            "samples allowed; use a smaller population, sample or group"
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
    """Verify hook of ``poisson``: P = O ∪ {x1..xg}, P′ = O (add/remove a group)."""
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
                        )
                    )
    sizes = tuple(range(0, max(sum(i.caps) for i in insts) + 1))
    return Plan(instances=tuple(insts), sizes=sizes, relations=rel)


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
            "use fewer or smaller groups, or --pairs default"
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
