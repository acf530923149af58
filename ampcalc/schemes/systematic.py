"""Systematic sampling: a random start in 1..k, then every k-th record of an ordering.

Basis: Bun et al., §6.3 (qualitative); spec §7.4. With a random, secret
ordering the sample is a simple random sample (Theorem 2.2 applies); with a fixed,
known ordering no theorem applies and only a lower bound is reported.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BBG18, BUN_2022, CLUSTER_DOCS, DERIVATIONS, cite
from ampcalc.schemes._cluster_kernels import ratio_bound
from ampcalc.schemes.assembly import (
    OfPair,
    Proportional,
    Theorem,
    assemble,
    epsilons,
    relation_of,
    replace_one_remarks,
)
from ampcalc.schemes.base import Analysis, Field, Problem, Scheme

BASIS = (cite(BUN_2022, "§6.3"), cite(BUN_2022, "Theorem 2.2"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """Every k-th record of an ordered population of N, from a random start in 1..k.

    Attributes:
        population: N >= 2 (fixed and public).
        interval: k, 2 <= k <= N (from ``interval``, or N // sample when ``sample`` given).
        order: ``random`` (a secret uniformly random ordering) or ``fixed`` (known).
        sample: the ``sample`` m as given, or None.
    """

    population: int
    interval: int
    order: str
    sample: int | None = None


FIELDS = (
    Field(name="population", kind="int", doc="N, the population size", required=True, low=2),
    Field(name="interval", kind="int", doc="k, the sampling interval", low=2),
    Field(name="sample", kind="int", doc="m, the intended sample size (k = N // m)", low=1),
    Field(
        name="order",
        kind="choice",
        doc="random (secret shuffled order) or fixed (known order)",
        required=True,
        choices=("random", "fixed"),
    ),
)


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """``interval`` or ``sample`` (exactly one)."""
    n, k, m = values["population"], values["interval"], values["sample"]
    if (k is None) == (m is None):
        raise reader.error(
            "sampling.interval" if k is not None else "sampling",
            "give exactly one of `interval` (k) or `sample` (m, with k = N // m)",
        )
    if k is None:
        if m > n // 2:
            raise reader.error(
                "sampling.sample", f"sample = {m} gives an interval N // m < 2 (N = {n})"
            )
        k = n // m
    return Params(population=n, interval=k, order=values["order"], sample=m)


def check(params: Params) -> list[Problem]:
    """2 <= k <= N."""
    if params.interval > params.population:
        return [
            Problem(
                field="interval",
                message=f"interval {params.interval} exceeds population {params.population}",
            )
        ]
    return []


def upper_epsilon(eps_replace_one: np.ndarray, *, population: int, interval: int) -> np.ndarray:
    """Upper bound on ε′ for systematic sampling over a random, secret ordering.

    Basis: Bun et al., §6.3 (random ordering ≡ SRSWOR) and Theorem 2.2.
    Neighbours: M is ε_R-DP under replace-one; ε′ under replace-one (N fixed).
    Conditions: the ordering is uniformly random and secret; 2 <= k <= N.
    Formula: ε′ = A(⌈N/k⌉/N, ε_R). When k divides N the sample is an SRSWOR of N/k;
        otherwise it has ⌊N/k⌋ or ⌈N/k⌉ records (a mixture of SRSWORs, each amplifying
        by at most the larger fraction).
    Tightness: tight (the larger-size SRSWOR witness).
    Numerics: numeric.amplification_upper (log1p/expm1; logaddexp above 700); rounded up.
    """
    m = -(-population // interval)
    return numeric.amplification_upper(m / population, eps_replace_one)


def lower_epsilon(eps_replace_one: np.ndarray, *, population: int, interval: int) -> np.ndarray:
    """Lower bound: ``upper_epsilon``'s formula A(⌈N/k⌉/N, ε_R), rounded down (the
    larger-size simple random sample is a witness when k divides N)."""
    m = -(-population // interval)
    return numeric.amplification_lower(m / population, eps_replace_one)


def inverse_epsilon(target: np.ndarray, *, population: int, interval: int) -> np.ndarray:
    """The ε_R at which ``upper_epsilon`` reaches ``target``, unrounded (the assembly
    rounds and certifies)."""
    m = -(-population // interval)
    return numeric.amplification_inverse(m / population, target)


def delta_prime_of(delta_replace_one: np.ndarray, *, interval: int) -> np.ndarray:
    """δ′ of systematic sampling over a random, secret ordering, paired with
    ``upper_epsilon``'s ε′ = A(⌈N/k⌉/N, ε_R).

    Basis: given the start, the sample size m is fixed and (the ordering being uniformly
        random) the sample is a simple random sample of m of N: by Theorem 2.2 with δ
        (Bun et al.; Balle, Barthe, Gaboardi 2018, sampling without
        replacement under replace-one) it is (A(m/N, ε_R), (m/N)δ_R). A(m/N, ε_R) <= ε′,
        and the hockey-stick divergence is jointly convex and falls as ε′ grows, so the
        size mixture (data-independent) is (ε′, E[m]/N·δ_R), and E[m] = N/k exactly (each
        position is in exactly one of the k start classes).
    Formula: δ′ = δ_R/k (= (m/N)δ_R only when k divides N). Tight: M that also publishes
        its input with probability δ_R.
    Numerics: one division, rounded up; capped at 1.
    """
    out: np.ndarray = np.minimum(numeric.round_up(np.asarray(delta_replace_one) / interval), 1.0)
    return out


def _lower_size_hidden(eps_d: np.ndarray, eps_r: np.ndarray, n: int, k: int) -> np.ndarray:
    """Lower bound over a random ordering when k ∤ N and M is ε_D-DP under add-remove.

    The design is a random-size SRSWOR: ⌈N/k⌉ records with probability (N mod k)/k, else
    ⌊N/k⌋, independent of the data. Two witnesses, the larger is reported:
      - the single-inclusion witness A(1/k, min(ε_D, ε_R)): each record is sampled with
        probability exactly 1/k (Bun et al., Proposition 6.1);
      - the random-size witness of Theorem 3.1 (random_size.lower_epsilon), tilt at
        min(ε_D, ε_R).
    """
    from ampcalc.schemes.random_size import Params as SizeParams  # lazy: start-up (bound)
    from ampcalc.schemes.random_size import SizeDistribution  # lazy: start-up (bound)
    from ampcalc.schemes.random_size import lower_epsilon as size_lower  # lazy: start-up (bound)

    m_lo, m_hi = n // k, -(-n // k)
    f = (n % k) / k
    dist = SizeDistribution(
        kind="pmf",
        sizes=np.array([m_lo, m_hi]),
        log_probs=np.log(np.array([1.0 - f, f])),
        source="systematic",
    )
    single = numeric.amplification_lower(1.0 / k, np.minimum(eps_d, eps_r))
    tilted = size_lower(eps_d, eps_r, params=SizeParams(population=n, size=dist))
    out: np.ndarray = np.maximum(single, tilted)
    return out


RELATION = Neighbours.REPLACE_ONE
"""The relation Theorem 2.2 takes M's ε under (an add-remove M is read under it by the
assembly); the fixed ordering's witness puts no condition on it."""


def theorem(params: Params, *, size_hidden: bool) -> Theorem:
    """Theorem 2.2 of Bun et al. over a random, secret ordering, at the larger fraction ⌈N/k⌉/N.

    ``size_hidden`` (k ∤ N and M's add-remove ε known): the lower bound is the
    two-relation witness ``_lower_size_hidden``, not a formula of ε_R alone, so the
    theorem states none and ``analyse`` adds it.
    """
    n, k = params.population, params.interval
    return Theorem(
        name="Theorem 2.2",
        basis=BASIS,
        relation=RELATION,
        guarantee=Neighbours.REPLACE_ONE,
        upper=upper_epsilon,
        lower=None if size_hidden else lower_epsilon,
        inverse=inverse_epsilon,
        params={"population": n, "interval": k},
        delta_prime=Proportional(1.0 / k),
        conditions=(
            f"2 <= interval <= population: 2 <= {k} <= {n}",
            "the ordering is uniformly random and secret",
        ),
        tight=not size_hidden,
    )


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one systematic design."""
    if params.order == "random":
        return _analyse_random(params, mechanism)
    return _analyse_fixed(params, mechanism)


def interval_note(n: int, k: int) -> str:
    """The erratum of Bun et al. §6.3: its "k = |P|/m²" carries footnote marker 2 (k = |P|/m)."""
    m = n / k
    return (
        f'{cite(BUN_2022, "§6.3")} prints the interval as "k = |P|/m²"; the ² is its '
        f"footnote marker 2, and k = |P|/m: here k = {k} for N = {n}, m = N/k = {m:.6g} "
        f"(read with the square, N/m² = {n / (m * m):.6g} would be no interval)."
    )


def _analyse_random(params: Params, mechanism: Mechanism) -> Analysis:
    n, k = params.population, params.interval
    m_hi = -(-n // k)
    m_lo = n // k
    divides = n % k == 0
    warnings: list[str] = []
    notes: list[str] = [interval_note(n, k)]
    if divides:
        notes.append(
            f"k = {k} divides N = {n}: over a random secret ordering this is exactly a "
            f"simple random sample of m = {m_lo} (scheme srswor, Theorem 2.2)."
        )
    else:
        notes.append(
            f"k = {k} does not divide N = {n}: the sample has {m_lo} or {m_hi} records; "
            f"the bound uses the larger fraction {m_hi}/{n}."
            + (
                " M's add-remove ε protects which size was drawn, so the lower bound is "
                f"the single-inclusion witness A(1/{k}, ε) or the random-size witness "
                "(Theorem 3.1), not the larger-size SRSWOR."
                if mechanism.epsilon_add_remove_known()
                else ""
            )
        )
    # k ∤ N with M's add-remove ε known: the secret size is protected, so the
    # larger-size SRSWOR witness is not available (Theorem 3.1 bounds this design by
    # A(E_t̃[m]/N, ε_R) < A(⌈N/k⌉/N, ε_R); N = 3, k = 2, ε = 1, both: 0.6889 < 0.7634)
    size_hidden = not divides and mechanism.epsilon_add_remove_known()
    thm = theorem(params, size_hidden=size_hidden)
    if mechanism.delta > 0:
        thm = replace(
            thm,
            conditions=(
                *thm.conditions,
                f"M is (ε_R, δ_R)-DP under replace-one, δ = {mechanism.delta:g}: δ′ = δ_R/k "
                "(each record is sampled with probability exactly 1/k)",
            ),
        )
        notes.append(
            f"M's δ > 0: δ′ = δ_R/k = δ_R/{k}, paired with the ε′ shown. Given its size m "
            "the sample is a simple random sample, (A(m/N, ε_R), (m/N)δ_R) by Theorem 2.2 "
            f"with δ ({BBG18}); A(m/N, ε_R) <= ε′ and the sizes "
            "average N/k, so the mixture is (ε′, δ_R/k)"
            + ("" if divides else f" (not (⌈N/k⌉/N)δ_R: {k} does not divide {n})")
            + "."
        )
    details: dict[str, Any] = {
        "population": n,
        "interval": k,
        "order": params.order,
        "sample_sizes": [m_lo, m_hi],
        "rate": m_hi / n,
    }
    analysis = assemble(
        thm, mechanism, details=details, warnings=tuple(warnings), notes=tuple(notes)
    )
    if not size_hidden:
        return analysis
    eps_r = relation_of(mechanism, thm).epsilon

    def lower(eps: np.ndarray) -> np.ndarray:
        return _lower_size_hidden(np.asarray(eps, dtype=float), eps_r(eps), n, k)

    return replace(analysis, lower=lower)


def fixed_theorem(params: Params) -> Theorem:
    """Fixed, known ordering as data: no theorem gives an upper bound; the lower bound is
    the start-class witness (``fixed_order_lower``) in M's (ε_D, ε_R), ε_D = +∞ where
    M's add-remove ε is unknown. No condition on M's relation: the witness is built
    within whatever M declares."""
    n, k = params.population, params.interval
    sizes = _class_sizes(n, k)
    return Theorem(
        name="the start-class witness",
        basis=(cite(BUN_2022, "§6.3"), cite(CLUSTER_DOCS, "systematic: the start-class witness")),
        relation=None,
        guarantee=Neighbours.REPLACE_ONE,
        lower=OfPair(lambda e_d, e_r: fixed_order_lower(e_r, e_d, sizes)),
        conditions=(
            f"2 <= interval <= population: 2 <= {k} <= {n}",
            "the ordering is fixed and known: no amplification theorem applies",
        ),
        tight=None,
    )


def _analyse_fixed(params: Params, mechanism: Mechanism) -> Analysis:
    """Fixed, known ordering (``fixed_theorem``): exact over positions kept by a
    replacement. It needs both of M's relations, so it is no single-relation theorem,
    and says itself how an add-remove M reads under replace-one."""
    n, k = params.population, params.interval
    m_lo = n // k
    thm = fixed_theorem(params)
    sizes = _class_sizes(n, k)

    def per_size(e_d: np.ndarray, e_r: np.ndarray) -> dict[int, np.ndarray]:
        return {s: fixed_order_lower(e_r, e_d, {s: sizes[s]}) for s in sizes}

    def details_both(e_d: np.ndarray, e_r: np.ndarray) -> Mapping[str, Any]:
        rows = per_size(e_d, e_r)
        keys = list(rows)
        best = np.argmax(np.stack([rows[s] for s in keys]), axis=0)
        return {
            "witness_class_size": np.asarray(keys)[best],
            "heuristic_cluster_analogy": ratio_bound(1.0 / k, 2 * m_lo, e_r),
        }

    at_declared = per_size(*epsilons(mechanism))
    worst = max(at_declared, key=lambda s: float(at_declared[s]))
    alone = sizes[worst] == 1 and len(sizes) > 1 and not mechanism.epsilon_add_remove_known()
    relation_warnings, relation_notes = replace_one_remarks(mechanism, thm.name)
    warnings = (
        "fixed, known ordering: no theorem gives an upper bound (a record that moves in the "
        f"order shifts every later one; {BUN_2022}, §6.3; {DERIVATIONS}, §4.6). The lower "
        "bound is exact for neighbours that keep every position: the "
        f"start is the only randomness, so the sample is one of {k} fixed sets, and a "
        "mechanism that scores a sample by its distance from the replaced record's start "
        "class tells that class apart from the others"
        + (
            f" (here by its size alone: the only class of {worst} records, under "
            "replace-one only, so the loss is M's ε_R)"
            if alone
            else ""
        )
        + ".",
        *relation_warnings,
    )
    return assemble(
        thm,
        mechanism,
        warnings=warnings,
        notes=(interval_note(n, k), *relation_notes),
        details={
            "population": n,
            "interval": k,
            "order": params.order,
            "heuristic_note": (
                f"B(1/k, 2m, ε_R) with m = {m_lo}: a heuristic indicator (the design is "
                "'almost' cluster sampling with ℓ = 1), NOT a bound"
            ),
        },
        details_both=details_both,
    )


def _class_sizes(n: int, k: int) -> dict[int, int]:
    """Start classes by size: {size: number of the k classes of that size}."""
    hi, lo = -(-n // k), n // k
    out = {lo: k - n % k}
    if n % k:
        out[hi] = n % k
    return out


def fixed_order_lower(
    eps_r: np.ndarray, eps_d: np.ndarray | None, sizes: dict[int, int]
) -> np.ndarray:
    """Lower bound on ε′ for systematic sampling in a fixed, known order (replace-one).

    Witness: N distinct records; P and P′ differ in the record at one position j
        (x vs x′, every position kept). The start r is the only randomness, so the sample
        is S_r, one of k fixed sets (the start classes, of ⌊N/k⌋ or ⌈N/k⌉ records);
        x is in S_c only. With f(S) = Pr[M(S) = 1] and d the distance of M's relations
        (replacing a record costs ε_R, adding or removing one ε_D; d(S_r, S_c) =
        ε_R·min(|S_r|, |S_c|) + ε_D·||S_r| − |S_c||, infinite between sizes when only
        replace-one is known), M(S) = Bernoulli(c·e^{−d(S, S_c)}) is DP under those
        relations and gives
            Pr_P[1]/Pr_P′[1] = (1 + Σ_{r≠c} e^{−d_r}) / (e^{−ε_R} + Σ_{r≠c} e^{−d_r})
                             = exp A(1/(1 + Σ_{r≠c} e^{ε_R − d_r}), ε_R).
        Every ε-DP M has f(S′_c) >= e^{−ε_R} f(S_c) and f(S_r) >= e^{−d_r} f(S_c), and the
        ratio falls in each, so this is the exact worst case over such neighbours (the
        exact LP of ``ampcalc verify`` agrees); distinct records maximise every d_r.
    Neighbours: replace-one keeping positions; M is ε_R-DP under replace-one (and
        ε_D-DP under add-remove when ``eps_d`` is given; None or +∞: M's add-remove ε
        is unknown). The maximum is over the class size of the position j.
    Formula: max over class sizes s of A(q_s, ε_R), q_s = 1/(1 + Σ_{r≠c} e^{ε_R − d_r});
        q_s >= 1/k, so it is never below the single-inclusion witness A(1/k, ε_R).
    Numerics: every exponent is <= 0 (no overflow); each term is rounded up by its
        exp's relative error (|x| + 4 ulps), q rounded down, A(q, ε_R) rounded down.
    """
    e_r = np.asarray(eps_r, dtype=float)
    if eps_d is not None and np.all(np.isposinf(eps_d)):
        eps_d = None  # M declared under replace-one only
    best = np.zeros(e_r.shape)
    for s, count in sizes.items():
        total = np.zeros(e_r.shape)
        for s2, count2 in sizes.items():
            others = count - 1 if s2 == s else count2
            if others == 0:
                continue
            if s2 == s:
                x = -e_r * (s - 1)
            elif eps_d is None:
                continue  # replace-one only: M may read the sample size
            else:
                x = e_r * (1 - min(s, s2)) - np.asarray(eps_d, dtype=float) * abs(s - s2)
            with np.errstate(under="ignore"):
                term = others * np.exp(x) * (1.0 + (np.abs(x) + 4.0) * 2.0**-52)
            total = total + term
        q = numeric.round_down(1.0 / numeric.round_up(1.0 + total))
        best = np.maximum(best, numeric.amplification_lower(np.minimum(q, 1.0), e_r))
    out: np.ndarray = np.maximum(best, 0.0)
    return out


def _random_order_size_probs(n: int, k: int) -> dict[int, float]:
    """A random start over a random order: ⌊N/k⌋ records with probability
    1 − (N mod k)/k, else ⌈N/k⌉."""
    f = (n % k) / k
    probs = {n // k: 1.0 - f}
    if f > 0:
        probs[-(-n // k)] = f
    return probs


def _position_pairs(n: int, starts: list[list[int]]) -> list[Any]:
    """x at position j vs x′ there, the other records distinct: one position j per size
    of the sample that holds it (the rest are the same up to relabelling)."""
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    k = len(starts)
    # the sample over a uniform start: one flag per position (1: kept)
    by_position: dict[tuple[int, ...], float] = {}
    for s in starts:
        key = tuple(1 if pos in s else 0 for pos in range(n))
        by_position[key] = by_position.get(key, 0.0) + 1.0 / k
    # symbols: the other records in position order, then x, x′
    syms = (*(f"o{i + 1}" for i in range(n - 1)), "x", "x'")
    insts = []
    seen_sizes: set[int] = set()
    for j in range(n):
        own = len(starts[j % k])  # the size of the sample that can hold position j
        if own in seen_sizes:
            continue  # same distributions up to relabelling of the other records
        seen_sizes.add(own)
        insts.append(
            V.distinct_instance(
                f"x at position {j + 1} (in a sample of {own}) vs x′ there",
                syms,
                V.record_as(by_position, j, prime=False),
                V.record_as(by_position, j, prime=True),
                symmetric=True,
            )
        )
    return insts


def _ordering_value_pairs(n: int, starts: list[list[int]], top: int, limit: int) -> list[Any]:
    """Every a/b ordering of the N records with one a turned into b, samples as value
    multisets (orderings whose sample distributions repeat are listed once)."""
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    if 2**n > limit:
        raise ConditionError(
            f"too large to verify: all pairs means every a/b ordering of the N = {n} "
            f"records (2^{n} = {2**n:,}), more than {limit}; use the default pairs or a "
            "smaller population"
        )

    def values(seq: tuple[int, ...]) -> dict[tuple[int, ...], float]:
        out: dict[tuple[int, ...], float] = {}
        for s in starts:
            b = sum(seq[pos] for pos in s)
            key = (len(s) - b, b)
            out[key] = out.get(key, 0.0) + 1.0 / len(starts)
        return out

    insts = []
    seen: set[tuple[Any, Any]] = set()
    for seq in itertools.product((0, 1), repeat=n):
        for j in range(n):
            if seq[j] == 1:
                continue
            p, pp = values(seq), values((*seq[:j], 1, *seq[j + 1 :]))
            sig = (tuple(sorted(p.items())), tuple(sorted(pp.items())))
            if sig in seen:
                continue
            seen.add(sig)
            word = "".join("ab"[v] for v in seq)
            label = f"order {word} vs position {j + 1} turned into b"
            insts.append(V.two_value_instance(label, p, pp, top))
    return insts


def _verify_hook(
    params: Params, mechanism: Mechanism, pairs: str = "default", limit: int = 5000
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify``.

    Random order: a srswor of ⌊N/k⌋ records with probability 1 − (N mod k)/k, else of
    ⌈N/k⌉ (random_size.size_mixture_plan). Fixed order: the record at position j is
    replaced (replace-one keeps positions); start r uniform on 1..k takes positions
    r, r + k, ... . ``default``: distinct records, one position per class of start;
    ``all``: every a/b sequence of length N with one a turned into b.
    """
    from ampcalc.schemes.exact import (  # lazy: start-up (bound)
        Plan,
        check_distinct_sizes,
        relations_of,
        sizes_for,
    )

    n, k = params.population, params.interval
    check_distinct_sizes(n + 1, [n // k], limit)  # before listing positions
    if params.order == "random":
        from ampcalc.schemes.random_size import size_mixture_plan  # lazy: start-up (bound)

        return size_mixture_plan(n, _random_order_size_probs(n, k), mechanism, pairs, limit)

    rel = relations_of(mechanism)
    starts = [list(range(r, n, k)) for r in range(k)]  # 0-based positions per start
    sizes = sizes_for(rel, [len(s) for s in starts])
    check_distinct_sizes(n + 1, sizes, limit)
    insts = _position_pairs(n, starts)
    if pairs == "all":
        insts += _ordering_value_pairs(n, starts, max(sizes), limit)
    return Plan(instances=tuple(insts), sizes=sizes, relations=rel)


SCHEME = Scheme(
    name="systematic",
    summary="every k-th record from a random start (random secret or fixed known order)",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.REPLACE_ONE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={"population": 10000, "interval": 100, "order": "random"},
    parse_params=parse_params,
    verify_plan=_verify_hook,
)
