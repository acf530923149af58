"""Stratified Poisson and fixed allocations: the ``poisson`` and ``srswor`` families'
results at the stratum of largest rate (Bun et al. 2020, Lemma 3.3; Bun et al.
Theorem 2.2 within each stratum)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import (
    BBG18,
    BUN_2020_WP,
    BUN_2022,
    cite,
)
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.assembly import UnitAmplification, assemble, epsilons, relation_of
from ampcalc.schemes.base import Analysis
from ampcalc.schemes.stratified.common import need_add_remove, per_stratum
from ampcalc.schemes.stratified.params import Params

BASIS_POISSON = (cite(BUN_2020_WP, "Lemma 3.3"), cite(BBG18))


BASIS_FIXED = (cite(BUN_2022, "Theorem 2.2 (per stratum)"),)


def _poisson_result(
    r: np.ndarray, mechanism: Mechanism, guarantee: Neighbours
) -> tuple[Analysis, float]:
    """The ``poisson`` family's result at the largest rate for ``guarantee`` (the one
    place it is read), and the share of a target each stratum's own inverse gets: the
    whole target under add-remove (Lemma 3.3, tight), half under replace-one (a
    replacement is a removal in one stratum and an addition in another)."""
    from ampcalc.schemes import poisson  # lazy: start-up (bound)

    r_max = float(r.max())
    conditions = (
        "each record of stratum h is kept independently with probability r_h, "
        "not depending on the data; the sample is secret",
    )
    if guarantee is Neighbours.REPLACE_ONE:
        equal = bool(np.all(r == r_max))
        return (
            poisson.replace_one_analysis(r_max, mechanism, conditions=conditions, coupled=equal),
            2.0,
        )
    return assemble(poisson.theorem(r_max, conditions), mechanism), 1.0


def analyse_poisson(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Stratified Poisson sampling: the ``poisson`` family's results at the largest rate.

    A record of stratum h is kept with probability r_h independently of everything
    else, so an addition or removal is the Poisson case at r_h <= r_max (Lemma 3.3,
    tight at the stratum of largest rate). A replacement may move a record between
    strata of different rates, where the inclusion coins cannot be coupled:
    ``poisson.replace_one_analysis`` without the coupling candidate (with it when all
    rates are equal, which makes the design one Poisson sample).
    """
    from ampcalc.schemes import poisson  # lazy: start-up (bound)

    need_add_remove(mechanism, f"Stratified Poisson sampling ({BUN_2020_WP}, Lemma 3.3)")
    r = p.rates()
    r_max = float(r.max())
    base, share = _poisson_result(r, mechanism, guarantee)
    # each stratum's rows: Lemma 3.3 at its rate, M's ε read as the poisson family's is
    units = UnitAmplification(r, relation_of(mechanism, poisson.theorem(r_max)))
    return dataclasses.replace(
        base,
        basis=(*BASIS_POISSON, *base.basis[len(poisson.BASIS) :]),
        details={
            "allocation": "poisson",
            "rate_max": r_max,
            "tight": share == 1.0,
            "strata_count": len(p.strata),
        },
        # per-stratum rows: Lemma 3.3 under add-remove; under replace-one the exact loss
        # of a replacement inside the stratum (the poisson family's coupled value)
        details_at=functools.partial(
            _poisson_rows,
            p,
            base,
            units,
            mechanism if guarantee is Neighbours.REPLACE_ONE else None,
        ),
        invert_details=functools.partial(_poisson_invert_rows, p, units, share),
    )


def _poisson_rows(
    p: Params,
    base: Analysis,
    units: UnitAmplification,
    replace: Mechanism | None,
    eps: np.ndarray,
) -> dict[str, Any]:
    """Each stratum's bounds at each evaluated ε, and the result's own entries: Lemma 3.3
    at M's add-remove ε, or (``replace``: the mechanism, under a replace-one guarantee)
    the exact loss of a replacement inside the stratum, log((1 + r_h(e^{ε_D} − 1))/(1 +
    r_h(e^{ε_D − ε_R} − 1))) (the inclusion coins of the two records share r_h), never
    above the total's bound."""
    from ampcalc.schemes import poisson  # lazy: start-up (bound)

    r = p.rates()
    if replace is None:
        lower, upper = units.bounds(eps)
    else:
        e_d, e_r = epsilons(replace, np.asarray(eps, dtype=float))
        lower, upper = poisson.replace_one_exact(e_d, e_r, rate=per_stratum(r, eps))
    rows = alloc.strata_rows(p, r, r * p.strata.size.astype(float), lower, upper)
    out: dict[str, Any] = {"strata": rows}
    if base.details_at is not None:
        out.update(base.details_at(eps))
    return out


def _poisson_invert_rows(
    p: Params, units: UnitAmplification, share: float, target: np.ndarray
) -> dict[str, Any]:
    """Per-stratum certified ε at the stratum's share of the target, and the ε past which
    its witness reaches the target."""
    t = np.asarray(target, dtype=float)
    if t.ndim:
        return {}
    r = p.rates()
    cert, imp = units.inverses(float(t), upper_share=share)
    return {"strata": alloc.invert_rows(p, r, r * p.strata.size.astype(float), cert, imp)}


def analyse_fixed(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Fixed allocation: the ``srswor`` family's Theorem 2.2 in the stratum of largest
    sampling fraction (a replacement inside a stratum is a simple random sample's)."""
    from ampcalc.schemes import srswor  # lazy: start-up (bound)

    if guarantee is not Neighbours.REPLACE_ONE:
        raise ConditionError(
            f"fixed allocation: Theorem 2.2 ({BUN_2022}) holds per stratum for "
            "replace-one neighbours of a stratum of fixed, public size; adding or removing a "
            "record changes N_h and no theorem covers it. Set `guarantee: replace-one`."
        )
    m = p.strata.sample
    n = p.strata.size.astype(float)
    q = m / n
    top = int(np.argmax(q))
    worst = srswor.theorem(srswor.Params(population=int(p.strata.size[top]), sample=int(m[top])))
    theorem = dataclasses.replace(
        worst,
        basis=BASIS_FIXED,
        conditions=(
            "per-stratum sample sizes m_h fixed in advance (data-independent), strata sizes "
            "public; simple random sampling without replacement in each stratum",
        ),
        relation_words="",
    )
    # each stratum's rows: Theorem 2.2 at its fraction, M's ε read as the theorem's is
    units = UnitAmplification(q, relation_of(mechanism, theorem))
    return assemble(
        theorem,
        mechanism,
        details={
            "allocation": "fixed",
            "rate_max": float(q[top]),
            "strata_count": len(p.strata),
        },
        details_at=functools.partial(_fixed_rows, p, units),
        warnings=(
            "fixed allocation: the guarantee covers replacing a record by another of the "
            "same stratum; moving a record across strata changes the public stratum sizes "
            "and is not covered by any theorem here.",
        ),
        invert_details=functools.partial(_fixed_invert_rows, p, units),
    )


def _fixed_rows(p: Params, units: UnitAmplification, eps: np.ndarray) -> dict[str, Any]:
    """Each stratum's Theorem 2.2 bounds A(m_h/N_h, ε_R) at each evaluated ε."""
    m = p.strata.sample
    q = m / p.strata.size.astype(float)
    lower, upper = units.bounds(eps)
    return {"strata": alloc.strata_rows(p, q, m.astype(np.int64), lower, upper)}


def _fixed_invert_rows(p: Params, units: UnitAmplification, target: np.ndarray) -> dict[str, Any]:
    """Per-stratum certified ε and the ε past which the stratum's witness reaches the
    target (A(q_h, ε_R) = T), certified as the assembly certifies an inverse in M's
    replace-one ε."""
    t = np.asarray(target, dtype=float)
    if t.ndim:
        return {}
    m = p.strata.sample
    q = m / p.strata.size.astype(float)
    cert, imp = units.inverses(float(t))
    return {"strata": alloc.invert_rows(p, q, m.astype(np.int64), cert, imp)}
