"""Tiny-instance enumeration of stratified designs for ``ampcalc verify``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.stratified.fixed_total import apportion
from ampcalc.schemes.stratified.params import Params

#: a sample distribution: count vector (records in symbol order) -> probability
Distribution = dict[tuple[int, ...], float]


def _randomized_size_probs(rate: float, n: int) -> dict[int, float]:
    """Randomised rounding of rN: ⌊rN⌋ + 1 records with probability frac(rN), else ⌊rN⌋
    (rN itself when it is whole, up to 1e-9)."""
    x = rate * n
    if abs(x - round(x)) < 1e-9:
        return {min(n, round(x)): 1.0}
    lo = math.floor(x)
    return {lo: 1.0 - (x - lo), lo + 1: x - lo}


@dataclass(frozen=True, kw_only=True)
class _Allocation:
    """How each stratum's sample is drawn (``Params.allocation`` in the hook's terms).

    ``kind``: proportional (rates, or a fixed ``total`` apportioned by ``rule`` over the
    dataset's own stratum sizes), poisson (rates) or fixed (``fixed`` m_h records);
    ``randomized``: proportional with randomised rounding and no fixed total.
    """

    kind: str
    names: tuple[str, ...]
    rates: tuple[float, ...]
    fixed: tuple[int, ...]
    total: int | None
    rule: str
    randomized: bool

    def sample_size(self, h: int, n: int, dataset_sizes: list[int]) -> int:
        """Stratum h's sample size when it holds n of a dataset of ``dataset_sizes``."""
        if self.kind == "fixed":
            return self.fixed[h]
        if self.total is not None:
            return min(apportion(dataset_sizes, self.total, self.rule)[h], n)
        rounded = alloc.round_proportional(np.array([self.rates[h]]), np.array([n]), self.rule)
        return int(rounded[0])

    def stratum(self, h: int, counts: tuple[int, ...], dataset_sizes: list[int]) -> Distribution:
        """Stratum h's exact sample when its records are present as ``counts``."""
        from ampcalc.schemes import exact as V  # lazy: start-up (bound)

        n = sum(counts)
        if self.kind == "poisson":
            return V.poisson_distribution(counts, self.rates[h])
        if self.randomized:
            return V.srswor_size_mixture(counts, _randomized_size_probs(self.rates[h], n))
        m = self.sample_size(h, n, dataset_sizes)
        if m > n:
            raise ConditionError(
                f"stratum {self.names[h]!r}: a sample of {m} from {n} records is impossible"
            )
        return V.srswor_distribution(counts, m)

    def largest(self, h: int, n: int) -> int:
        """The largest sample stratum h of n records can give."""
        if self.kind == "poisson" or self.total is not None:
            return n
        if self.randomized:
            return math.ceil(self.rates[h] * n - 1e-9)
        return self.sample_size(h, n, [])

    def population(self, strata: Sequence[tuple[int, ...]]) -> Distribution:
        """The exact sample of a dataset whose strata hold the records present as
        ``strata`` (the strata are sampled independently)."""
        from ampcalc.schemes import exact as V  # lazy: start-up (bound)

        dataset_sizes = [sum(c) for c in strata]
        return V.product_distribution(
            [self.stratum(h, c, dataset_sizes) for h, c in enumerate(strata)]
        )


def _allocation_of(params: Params) -> _Allocation:
    """The design's allocation as the hook draws it."""
    kind = params.allocation
    total = params.total_sample if kind == "proportional" else None
    rule = params.rounding or "nearest"
    return _Allocation(
        kind=kind,
        names=tuple(params.strata.names),
        rates=tuple(float(x) for x in params.rates()) if total is None else (),
        fixed=tuple(int(x) if math.isfinite(x) else 0 for x in params.strata.sample),
        total=total,
        rule=rule,
        randomized=kind == "proportional" and rule == "randomized" and total is None,
    )


def _checked_guarantee(
    params: Params, mechanism: Mechanism, guarantee: Neighbours | None
) -> Neighbours:
    """The guarantee whose pairs are listed (fixed allocation's is replace-one, the
    others' add-remove), or ``ConditionError`` for what the hook cannot enumerate."""
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    kind = params.allocation
    if kind == "neyman":
        raise ConditionError(
            "no exact tiny-instance enumeration for neyman allocation (it depends on the "
            "records' values): the verify hook covers proportional, poisson and fixed "
            "allocation"
        )
    V.require_pure(mechanism)
    if not params.strata.sizes_known:
        raise ConditionError("the stratum sizes are needed to enumerate samples")
    if guarantee is None:
        guarantee = Neighbours.REPLACE_ONE if kind == "fixed" else Neighbours.ADD_REMOVE
    if kind == "fixed" and guarantee is not Neighbours.REPLACE_ONE:
        raise ConditionError("fixed allocation gives a replace-one guarantee only")
    return guarantee


def _added_record_pairs(
    allocation: _Allocation, sizes: list[int], pairs: str, top: int, limit: int
) -> list[Any]:
    """For every stratum h: x added to h's N_h records, and x one of them (N_h − 1 vs
    N_h records); ``all`` adds each pair over a two-value universe."""
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    insts: list[Any] = []
    for h, n_h in enumerate(sizes):
        for base in (n_h, n_h - 1):  # x added to the N_h records, or x one of them
            if base < 0:
                continue
            pair = V.record_added_to_group(
                [base if j == h else n for j, n in enumerate(sizes)], h, "s"
            )
            label = f"stratum {allocation.names[h]!r}: {base} vs {base + 1} records (x added)"
            p = allocation.population(pair.without)
            pp = allocation.population(pair.with_x)
            insts.append(V.distinct_instance(label, pair.symbols, p, pp))
            if pairs == "all":
                insts += V.value_instances(label, pair.group_of, pair.x, p, pp, top, limit)
    return insts


def _replacement_pairs(allocation: _Allocation, sizes: list[int]) -> list[Any]:
    """x replaced by x′ in each stratum and, but for fixed allocation (whose guarantee is
    for replacements within a stratum), x moved from stratum s to t for every s != t."""
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    moves = [(h, h) for h in range(len(sizes))]
    if allocation.kind != "fixed":
        moves += [(s, t) for s in range(len(sizes)) for t in range(len(sizes)) if s != t]
    names = allocation.names
    insts = []
    for s, t in moves:
        syms = [[f"s{j + 1}.{i + 1}" for i in range(n - (j == s))] for j, n in enumerate(sizes)]
        syms[s].append("x")
        syms[t].append("x'")
        where = (
            f"x replaced by x′ in stratum {names[s]!r}"
            if s == t
            else f"x moved from stratum {names[s]!r} to {names[t]!r}"
        )
        insts.append(
            V.distinct_instance(
                where,
                tuple(y for ys in syms for y in ys),
                allocation.population([tuple(0 if y == "x'" else 1 for y in ys) for ys in syms]),
                allocation.population([tuple(0 if y == "x" else 1 for y in ys) for ys in syms]),
            )
        )
    return insts


def _verify_hook(
    params: Params,
    mechanism: Mechanism,
    pairs: str = "default",
    limit: int = 5000,
    guarantee: Neighbours | None = None,
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.verify).

    Records are distinct symbols, strata independent (a product of per-stratum samples):
    proportional allocation with randomised rounding (⌊rN_h⌋ or ⌈rN_h⌉ records, the
    latter with probability frac(rN_h)) or deterministic rounding (⌊rN_h⌉ or ⌊rN_h⌋,
    recomputed from each dataset's own stratum sizes), Poisson (each record kept with
    probability r_h), fixed (m_h records). Every pair has the stated sizes on one side.

    ``guarantee`` add-remove (the default except for fixed allocation; stratified DP,
    Definition 7.1): for every stratum h, a record x added to h (N_h vs N_h + 1) and x
    one of h's N_h records (N_h − 1 vs N_h; randomised rounding too, whose bound is now
    the exact value at these pairs, not Theorem 7.2). ``all`` adds the same pairs over a
    two-value universe. Replace-one (the default for fixed allocation): x replaced by x′
    in the same stratum, and — not for fixed allocation, whose guarantee is for
    replacements within a stratum — x moved from stratum s to t for every s != t.
    ``ampcalc verify`` passes the guarantee the design asks for.
    """
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    guarantee = _checked_guarantee(params, mechanism, guarantee)
    V.check_distinct_domain(int(params.strata.size.sum()) + 1, 1, limit)  # before listing
    allocation = _allocation_of(params)
    sizes = [int(x) for x in params.strata.size]
    rel = V.relations_of(mechanism)
    top = sum(allocation.largest(h, n + 1) for h, n in enumerate(sizes))
    V.check_distinct_domain(sum(sizes) + 1, top, limit)
    if guarantee is Neighbours.ADD_REMOVE:
        insts = _added_record_pairs(allocation, sizes, pairs, top, limit)
    else:
        insts = _replacement_pairs(allocation, sizes)
    if not insts:
        raise ConditionError("no stratum admits a neighbouring pair")
    return V.plan_of(insts, rel, [top, *V.sample_sizes(insts)])
