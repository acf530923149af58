"""Neyman allocation (Bun et al., §7.2, Appendix E.1): deterministic and
data-dependent, so only lower bounds Δ∞·ε and Δ₁·ε; no upper bound."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.references import (
    BUN_2022,
    cite,
)
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.assembly import (
    OfPair,
    Theorem,
    assemble,
    check_refusals,
    epsilons,
)
from ampcalc.schemes.base import Analysis
from ampcalc.schemes.stratified.common import (
    linear_lower_theorem,
    lower_bound_invert_rows,
    scalar_eps,
)
from ampcalc.schemes.stratified.params import Params

BASIS_NEYMAN = (cite(BUN_2022, "§7.2"), cite(BUN_2022, "Appendix E.1"), cite(BUN_2022, "§4.1"))


def neyman_allocations(p: Params) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The Neyman allocation on P and on its worst neighbour P′ (Bun et al. Appendix E.1).

    P′ moves the lowest stratum's smallest record (``min_value``) to the top-code U,
    which puts it in the top stratum: the lowest stratum loses it, the top stratum
    gains a record of value U, sizes, means and SDs updated exactly
    (``_allocation.remove_record`` / ``add_record``). Given ``allocations``, those
    vectors are used as they are.
    """
    if p.allocations is not None:
        return p.allocations[0], p.allocations[1], {"source": "allocations given"}
    s = p.strata
    k = len(s)
    assert p.total_sample is not None and p.value_bound is not None
    m0 = alloc.neyman(s.size, s.sd, p.total_sample)
    size1 = s.size.copy()
    sd1 = s.sd.astype(float).copy()
    low = alloc.remove_record(
        alloc.StratumStats(int(s.size[0]), float(s.mean[0]), float(s.sd[0])),
        float(s.min_value[0]),
    )
    if k == 1:
        top = alloc.add_record(low, p.value_bound)
        size1[0], sd1[0] = top.size, top.sd
    else:
        high = alloc.add_record(
            alloc.StratumStats(int(s.size[-1]), float(s.mean[-1]), float(s.sd[-1])),
            p.value_bound,
        )
        size1[0], sd1[0] = low.size, low.sd
        size1[-1], sd1[-1] = high.size, high.sd
    m1 = alloc.neyman(size1, sd1, p.total_sample)
    info = {
        "source": "computed: Neyman m_h ∝ N_h·S_h, capped at N_h, largest remainder",
        "neighbour": (
            f"the lowest stratum's record at min_value = {float(s.min_value[0]):g} moved "
            f"to value_bound = {p.value_bound:g} (into the top stratum)"
        ),
    }
    return m0, m1, info


# --- formulas: M's two ε as arrays, the allocation change as keywords --------------------


def replace_one_lower(ed: np.ndarray, er: np.ndarray, *, linf: int, l1: int) -> np.ndarray:
    """Lower bound under replace-one: the sample counts released with Laplace noise.

    One stratum's count + Lap(1/e) is e-DP under both relations: Δ∞·min(ε_D, ε_R);
    every count + Lap(1/e) is e-DP under add-remove and 2e under replace-one:
    Δ₁·min(ε_D, ε_R/2) (Bun et al. §4.1, §7.2). Rounded down."""
    one = linf * np.minimum(ed, er)
    every = l1 * np.minimum(ed, er / 2.0)
    return numeric.round_down(np.maximum(one, every))


def add_remove_lower(ed: np.ndarray, er: np.ndarray, *, linf: int, l1: int) -> np.ndarray:
    """Lower bound under add-remove: an ε′ add-remove guarantee implies 2ε′ under
    replace-one, so ε′ >= half the replace-one lower bound. Rounded down."""
    return numeric.round_down(replace_one_lower(ed, er, linf=linf, l1=l1) / 2.0)


# --- results, one theorem record per guarantee (lower bounds only) -----------------------


ADD_REMOVE_NOTE = (
    "the worst neighbour is a replacement (a record moved across strata); under an "
    "add-remove guarantee ε′ the loss for it is at most 2ε′, so ε′ >= half the "
    "replace-one lower bound"
)


def neyman_theorem(
    guarantee: Neighbours, mechanism: Mechanism, *, linf: int, l1: int
) -> tuple[Theorem, tuple[str, ...]]:
    """Neyman allocation's lower bound under ``guarantee`` (no upper bound exists), and
    its notes; the bound is linear in M's ε, so its inverse is T over its value at ε = 1."""
    add_remove = guarantee is Neighbours.ADD_REMOVE
    formula = add_remove_lower if add_remove else replace_one_lower
    lower = functools.partial(formula, linf=linf, l1=l1)
    theorem = linear_lower_theorem(
        "Neyman allocation", BASIS_NEYMAN, guarantee, mechanism, lower,
        subject="Neyman allocation",
    )  # fmt: skip
    return theorem, (ADD_REMOVE_NOTE,) if add_remove else ()


def analyse_neyman(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Neyman allocation: lower bounds Δ∞·ε and Δ₁·ε, no upper bound."""
    m0, m1, info = neyman_allocations(p)
    diff = (m1 - m0).astype(np.int64)
    linf = int(np.max(np.abs(diff)))
    l1 = int(np.sum(np.abs(diff)))
    k = len(p.strata)
    n = p.strata.size
    eps0 = scalar_eps(mechanism)
    rows = alloc.strata_rows(p, m0 / np.maximum(n, 1), m0, np.full(k, np.nan), None)
    for row in rows:
        row["epsilon_prime"]["lower"] = None
    theorem, notes_of = neyman_theorem(guarantee, mechanism, linf=linf, l1=l1)
    check_refusals(theorem, mechanism)
    assert isinstance(theorem.lower, OfPair)
    lo0 = float(theorem.lower.formula(*epsilons(mechanism)))
    warnings = [
        "degradation: no amplification guarantee exists. The Neyman allocation is a "
        "deterministic function of the data (stratum sizes and SDs); moving one record "
        f"changes it by Δ∞ = {linf} (one stratum) and Δ₁ = {l1} (all strata), so a "
        f"mechanism releasing the sample counts with Lap(1/ε) loses at least Δ·ε "
        f"({BUN_2022}, §4.1, §7.2).",
    ]
    notes = list(notes_of)
    if p.allocations is None:
        notes.append(
            "allocation rounding (not specified in the paper): largest remainder, capped at "
            "N_h; sd taken with divisor N_h − 1"
        )
    notes.append(neyman_sums_note(int(m0.sum()), int(m1.sum()), given=p.allocations is not None))
    at = functools.partial(_lower_bounds_at, linf=linf, l1=l1)
    # ``lower_bounds`` at the declared ε (for readers of the analysis that evaluate no ε);
    # the engine replaces it by its value at each evaluated ε
    details: dict[str, Any] = {
        "allocation": "neyman",
        "allocation_sensitivity": {"linf": linf, "l1": l1},
        "allocations": [m0.tolist(), m1.tolist()],
        "allocation_sums": [int(m0.sum()), int(m1.sum())],
        **at(eps0),
        "allocation_source": info["source"],
        "strata_count": k,
        "strata": rows,
    }
    if "neighbour" in info:
        details["neighbour"] = info["neighbour"]
    return assemble(
        dataclasses.replace(
            theorem,
            conditions=(
                "Neyman allocation m_h ∝ N_h·S_h with a fixed total: deterministic and "
                "data-dependent",
                f"lower bound at ε = {eps0:g}: {lo0:.6g}",
            ),
        ),
        mechanism,
        details=details,
        details_at=at,
        warnings=tuple(warnings),
        notes=tuple(notes),
        invert_details_from=functools.partial(lower_bound_invert_rows, p, m0),
    )


def _lower_bounds_at(eps: Any, *, linf: int, l1: int) -> dict[str, Any]:
    """The paper's two lower bounds Δ∞·ε and Δ₁·ε at each evaluated ε."""
    return {"lower_bounds": {"linf": linf * eps, "l1": l1 * eps}}


def neyman_sums_note(total_p: int, total_neighbour: int, *, given: bool) -> str:
    """The erratum of Bun et al. §7.2 / Appendix E.1: its Neyman vectors for m = 10,000 sum to
    10,004 and 10,005 (spec §8.3, §11 item 10), with this design's own sums."""
    whose = "the allocations given here" if given else "ampcalc's allocations here"
    return (
        f"{cite(BUN_2022, '§7.2')} and {cite(BUN_2022, 'Appendix E.1')} print Neyman "
        "allocations for a total of m = 10,000 whose entries sum to 10,004 (P) and 10,005 "
        "(its neighbour P′): the paper's rounding is not stated, and only the vectors' "
        f"differences (Δ∞ = 19, Δ₁ = 37 there) enter the bound; {whose} sum to "
        f"{total_p} and {total_neighbour} (details.allocation_sums)."
    )
