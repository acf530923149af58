"""Tiny-instance enumeration of stratified designs for ``ampcalc verify``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.stratified.fixed_total import apportion
from ampcalc.schemes.stratified.params import Params


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
    from ampcalc.schemes import exact as V

    kind = params.allocation
    if kind == "neyman":
        raise ConditionError(
            "no exact tiny-instance enumeration for neyman allocation (it depends on the "
            "records' values): the verify hook covers proportional, poisson and fixed "
            "allocation"
        )
    total = params.total_sample if kind == "proportional" else None
    if mechanism.delta > 0:
        raise ConditionError("the exact programme is for pure ε-DP (delta = 0)")
    if not params.strata.sizes_known:
        raise ConditionError("the stratum sizes are needed to enumerate samples")
    if guarantee is None:
        guarantee = Neighbours.REPLACE_ONE if kind == "fixed" else Neighbours.ADD_REMOVE
    if kind == "fixed" and guarantee is not Neighbours.REPLACE_ONE:
        raise ConditionError("fixed allocation gives a replace-one guarantee only")
    V.check_distinct_domain(int(params.strata.size.sum()) + 1, 1, limit)  # before listing
    rates = [float(x) for x in params.rates()] if total is None else []
    sizes = [int(x) for x in params.strata.size]
    fixed_m = [int(x) if math.isfinite(x) else 0 for x in params.strata.sample]
    rule = params.rounding or "nearest"
    randomized = kind == "proportional" and rule == "randomized" and total is None
    rel = V.relations_of(mechanism)
    # a fixed total: every stratum's sample size depends on all the sizes of its dataset
    # (set by ``instance`` before the strata are enumerated); drawn = min(m_h, N_h)
    dataset_sizes: list[int] = []
    names = params.strata.names

    def size_probs(rate: float, n: int) -> dict[int, float]:
        x = rate * n
        if abs(x - round(x)) < 1e-9:
            return {min(n, round(x)): 1.0}
        lo = math.floor(x)
        return {lo: 1.0 - (x - lo), lo + 1: x - lo}

    def allocation(h: int, n: int) -> int:
        if kind == "fixed":
            return fixed_m[h]
        if total is not None:
            return min(apportion(dataset_sizes, total, rule)[h], n)
        rounded = alloc.round_proportional(np.array([rates[h]]), np.array([n]), rule)
        return int(rounded[0])

    def stratum(h: int, counts: tuple[int, ...]) -> dict[Any, float]:
        n = sum(counts)
        if kind == "poisson":
            return V.poisson_distribution(counts, rates[h])
        if randomized:
            return V.srswor_size_mixture(counts, size_probs(rates[h], n))
        m = allocation(h, n)
        if m > n:
            raise ConditionError(
                f"stratum {names[h]!r}: a sample of {m} from {n} records is impossible"
            )
        return V.srswor_distribution(counts, m)

    def largest(h: int, n: int) -> int:
        if kind == "poisson" or total is not None:
            return n
        return math.ceil(rates[h] * n - 1e-9) if randomized else allocation(h, n)

    top = sum(largest(h, n + 1) for h, n in enumerate(sizes))
    V.check_distinct_domain(sum(sizes) + 1, top, limit)

    def instance(label: str, strata_syms: list[list[str]], p_counts: Any, pp_counts: Any) -> Any:
        symbols = tuple(s for syms in strata_syms for s in syms)
        dataset_sizes[:] = [sum(c) for c in p_counts]
        p = V.product_distribution([stratum(h, c) for h, c in enumerate(p_counts)])
        dataset_sizes[:] = [sum(c) for c in pp_counts]
        pp = V.product_distribution([stratum(h, c) for h, c in enumerate(pp_counts)])
        return V.Instance(label=label, symbols=symbols, caps=(1,) * len(symbols), p=p, p_prime=pp)

    def records(h: int, n: int) -> list[str]:
        return [f"s{h + 1}.{i + 1}" for i in range(n)]

    insts: list[Any] = []
    if guarantee is Neighbours.ADD_REMOVE:
        for h, n_h in enumerate(sizes):
            for extra in (1, 0):  # x added to the N_h records, or x one of them
                base = n_h - 1 + extra
                if extra == 0 and base < 0:
                    continue
                syms = [
                    records(j, n) if j != h else [*records(j, base), "x"]
                    for j, n in enumerate(sizes)
                ]
                with_x = [tuple(1 for _ in s) for s in syms]
                without = [(*c[:-1], 0) if j == h else c for j, c in enumerate(with_x)]
                label = f"stratum {names[h]!r}: {base} vs {base + 1} records (x added)"
                inst = instance(label, syms, without, with_x)
                insts.append(inst)
                if pairs == "all":
                    group_of = tuple(j for j, s in enumerate(syms) for _ in s)
                    x = inst.symbols.index("x")
                    insts += V.value_instances(
                        label, group_of, x, inst.p, inst.p_prime, top, limit
                    )
    else:
        moves = [(h, h) for h in range(len(sizes))]
        if kind != "fixed":
            moves += [(s, t) for s in range(len(sizes)) for t in range(len(sizes)) if s != t]
        for s, t in moves:
            syms = [records(j, n - (j == s)) for j, n in enumerate(sizes)]
            syms[s].append("x")
            syms[t].append("x'")
            p_counts = [tuple(0 if y == "x'" else 1 for y in ss) for ss in syms]
            pp_counts = [tuple(0 if y == "x" else 1 for y in ss) for ss in syms]
            where = (
                f"x replaced by x′ in stratum {names[s]!r}"
                if s == t
                else f"x moved from stratum {names[s]!r} to {names[t]!r}"
            )
            insts.append(instance(where, syms, p_counts, pp_counts))
    if not insts:
        raise ConditionError("no stratum admits a neighbouring pair")
    used = {sum(k) for inst in insts for d in (inst.p, inst.p_prime) for k in d}
    return V.Plan(instances=tuple(insts), sizes=V.sizes_for(rel, [top, *used]), relations=rel)
