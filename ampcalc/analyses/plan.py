"""Plan a planner design: does SRSWOR sampling buy accuracy at a fixed privacy target?

``ampcalc.designs.plan`` reads and validates the planner file (target, SRSWOR frame,
statistic) into a ``PlannerDesign``; ``plan_design`` hands its numbers to
``ampcalc.math.accuracy`` (Hu et al., §4, spec §9). The ``plan`` command
and ``ampcalc.plan`` both come through here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# the planner file is read in the designs layer; its names stay importable from here
from ampcalc.designs.plan import KINDS as KINDS
from ampcalc.designs.plan import (
    CustomStatistic,
    MeanStatistic,
    PlannerDesign,
    parse_planner_design,
)
from ampcalc.designs.sources import source_document
from ampcalc.math import accuracy as planner
from ampcalc.model.errors import AmpcalcError

if TYPE_CHECKING:
    from ampcalc.math.accuracy import Plan


def plan_design(design: PlannerDesign, variance_share: float | None) -> Plan:
    """The plan (an ``ampcalc.math.accuracy.Plan``) of a validated planner design; with a
    ``variance_share`` of V_N (Hu et al. §4.1's q), also the largest rate allowing a gain.

    Sample sizes: the fixed ``sample`` when given, else n = ⌊ρN + 1/2⌋ per rate for the
    mean and custom statistics (the median's odd n is chosen by ``plan_median``).
    """

    q = variance_share
    d, st = design, design.statistic
    big_n, rates = d.population, list(d.rates)
    eps, delta = d.epsilon_prime, d.delta_prime
    if isinstance(st, MeanStatistic):
        sizes = [(r, d.sample or planner.mean_sample_size(r, big_n)) for r in rates]
        return planner.plan_mean(d.title, eps, delta, big_n, sizes, st.value_range, st.variance, q)
    if isinstance(st, CustomStatistic):
        sizes = [(r, d.sample or planner.mean_sample_size(r, big_n)) for r in rates]
        return planner.plan_custom(
            d.title,
            eps,
            delta,
            big_n,
            sizes,
            list(st.variances),
            list(st.sensitivity_sample),
            st.sensitivity_population,
            q,
        )
    return planner.plan_median(
        d.title,
        eps,
        delta,
        list(st.values),
        rates,
        st.lower,
        st.upper,
        st.simulations,
        st.seed,
        q,
    )


def plan_document(doc: Any, name: str, variance_share: float | None) -> Plan:
    """Validate a parsed planner design (``name``: its file, for messages and relative
    ``data:`` paths) and compute its plan."""
    return plan_design(parse_planner_design(doc, name), variance_share)


def plan_source(source: Any, q: float | None = None) -> Plan:
    """``plan_document`` of any design source (path, YAML text, dict; ``ampcalc.plan``),
    with ``q`` (the variance share) checked to lie in [0, 1)."""

    if q is not None and not 0 <= q < 1:
        raise AmpcalcError(f"q: expected a number in [0, 1), got {q!r}")
    document, filename = source_document(source)
    return plan_document(document, filename, q)
