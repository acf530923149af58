"""The exact verifier's plans: the default instances of the three reference families
(srswor, srswr, Poisson), mixtures over sample sizes, and products over strata or
clusters (see ``ampcalc.schemes.exact`` for the hook interface)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.schemes._exact_data import (
    DEFAULT_LIMIT,
    TOO_LARGE,
    Counts,
    Instance,
    Plan,
    _estimate,
    poisson_distribution,
    relations_of,
    sizes_for,
    srswor_distribution,
    srswr_distribution,
)

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
    check_value_populations(count, limit, "use fewer or smaller groups, or the default pairs")
    out = []
    for bs in itertools.product(*choices):
        values = [0] * len(group_of)
        for g, b in zip(groups, bs, strict=True):
            for i in members[g][:b]:
                values[i] = 1
        vals = tuple(values)
        out.append(
            two_value_instance(
                f"{label}, b per group {list(bs)}, x = a",
                project_distribution(p, vals, 2),
                project_distribution(p_prime, vals, 2),
                cap,
            )
        )
    return out


# --- the pieces the families' hooks share (cluster, stratified, pps, systematic, ...) ---

PURE_ONLY = "the exact programme is for pure ε-DP (delta = 0)"


def require_pure(mechanism: Mechanism) -> None:
    """Refuse an (ε, δ) M in a hook that enumerates for pure ε-DP only.

    The driver hands every hook M's pure part (``pure_part``), so this guards direct
    callers of the hook.
    """
    if mechanism.delta > 0:
        raise ConditionError(PURE_ONLY)


def distinct_instance(
    label: str,
    symbols: tuple[str, ...],
    p: Mapping[Counts, float],
    p_prime: Mapping[Counts, float],
    *,
    symmetric: bool = False,
) -> Instance:
    """A pair of populations of distinct records: every symbol is drawn at most once."""
    return Instance(
        label=label,
        symbols=symbols,
        caps=(1,) * len(symbols),
        p=p,
        p_prime=p_prime,
        symmetric=symmetric,
    )


def two_value_instance(
    label: str, p: Mapping[Counts, float], p_prime: Mapping[Counts, float], cap: int
) -> Instance:
    """A pair over the two-value universe {a, b}: samples are value multisets, each value
    drawn at most ``cap`` times (the largest sample)."""
    return Instance(label=label, symbols=("a", "b"), caps=(cap, cap), p=p, p_prime=p_prime)


def check_value_populations(count: int, limit: int, advice: str) -> None:
    """Refuse ``pairs: all`` before listing more than ``limit`` two-value populations."""
    if count > limit:
        raise ConditionError(
            f"too large to verify: {count} two-value populations, more than {limit} allowed; "
            f"{advice}"
        )


def sample_sizes(instances: Iterable[Instance]) -> set[int]:
    """Every sample size the instances' distributions (P's and P′'s) give mass to."""
    return {sum(k) for inst in instances for dist in (inst.p, inst.p_prime) for k in dist}


def plan_of(
    instances: Iterable[Instance],
    relations: Mapping[Neighbours, float],
    used: Iterable[int],
    notes: tuple[str, ...] = (),
) -> Plan:
    """The plan of these instances; its domain holds the sample sizes ``used`` (every size
    up to the largest when add-remove is among M's relations, ``sizes_for``)."""
    return Plan(
        instances=tuple(instances),
        sizes=sizes_for(relations, used),
        relations=relations,
        notes=notes,
    )


@dataclass(frozen=True, kw_only=True)
class GroupAddition:
    """P vs P′ = P + x, x added to one group (a stratum, a cluster) of distinct records.

    ``without`` and ``with_x`` give each group's records as presence flags (1: the
    record is in the population), x the last record of its group: P's and P′'s. The
    symbols are ``{prefix}{group}.{record}`` (1-based) and x; ``group_of`` names each
    symbol's group and ``x`` is x's index among the symbols.
    """

    symbols: tuple[str, ...]
    without: tuple[Counts, ...]
    with_x: tuple[Counts, ...]
    group_of: Counts
    x: int


def record_added_to_group(sizes: Sequence[int], group: int, prefix: str) -> GroupAddition:
    """Groups of ``sizes`` distinct records (P) and P′ = P with x added to ``group``."""
    with_x = tuple((1,) * n + ((1,) if j == group else ()) for j, n in enumerate(sizes))
    return GroupAddition(
        symbols=tuple(
            f"{prefix}{j + 1}.{t + 1}" if j != group or t < sizes[group] else "x"
            for j, flags in enumerate(with_x)
            for t in range(len(flags))
        ),
        without=tuple((*f[:-1], 0) if j == group else f for j, f in enumerate(with_x)),
        with_x=with_x,
        group_of=tuple(j for j, flags in enumerate(with_x) for _ in flags),
        x=sum(len(flags) for flags in with_x[: group + 1]) - 1,
    )


def record_as(dist: Mapping[Counts, float], i: int, *, prime: bool) -> dict[Counts, float]:
    """A sample distribution over distinct records with record ``i`` renamed x (or x′).

    Count vectors become (the other records in their order, x, x′): record i's count
    moves to x's place (``prime``: to x′'s), the other one is 0.
    """
    out: dict[Counts, float] = {}
    for k, v in dist.items():
        rest = k[:i] + k[i + 1 :]
        key = (*rest, 0, k[i]) if prime else (*rest, k[i], 0)
        out[key] = out.get(key, 0.0) + v
    return out
