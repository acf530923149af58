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
add one unit: add-remove), and solves. ``population_distribution`` helpers (``_exact_data``) give
the exact distributions of srswor, srswr and Poisson samples of a population given as
symbol counts; other families compose them (e.g. a cluster sample is a srswor sample of
clusters) and return a Plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ampcalc.model.design import Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.limits import LIMITS
from ampcalc.schemes._exact_data import (
    DEFAULT_LIMIT,
    RESOLVE_FLOOR,
    SECONDS_PER_SAMPLE_SQUARED,
    SOLVER_TOL,
    TOO_LARGE,
    Counts,
    Instance,
    Outcome,
    Plan,
    Progress,
    _estimate,
    deltas_of,
    duration,
    estimated_log10_seconds,
    poisson_distribution,
    pure_part,
    relations_of,
    sizes_for,
    srswor_distribution,
    srswr_distribution,
)
from ampcalc.schemes._exact_lp import (
    CERTIFIED_GAP,
    Pairs,
    Solved,
    _hockey_stick,
    _off_support,
    _pairs,
    _solve,
    _solve_instance_pure,
    _vectors,
    domain,
    domain_size,
    solve_instance,
)
from ampcalc.schemes._exact_plans import (
    POISSON_OTHERS,
    GroupAddition,
    bernoulli_distribution,
    check_distinct_domain,
    check_distinct_sizes,
    check_value_populations,
    distinct_domain_size,
    distinct_instance,
    for_guarantee,
    mixture_distribution,
    plan_of,
    poisson_instance,
    product_distribution,
    project_distribution,
    record_added_to_group,
    record_as,
    require_pure,
    sample_sizes,
    srswor_instance,
    srswor_size_mixture,
    srswr_instance,
    two_value_instance,
    value_instances,
)

#: the verifier's interface: the driver and verdicts here, the data, programmes and plans
#: of the ``_exact_*`` modules re-exported (importers keep importing from this module)
__all__ = [
    "CERTIFIED_GAP",
    "DEFAULT_LIMIT",
    "POISSON_OTHERS",
    "RESOLVE_FLOOR",
    "SECONDS_PER_SAMPLE_SQUARED",
    "SOLVER_TOL",
    "TOO_LARGE",
    "ApproxOutcome",
    "Counts",
    "EpsilonRangeError",
    "GroupAddition",
    "Instance",
    "Outcome",
    "Pairs",
    "Plan",
    "Progress",
    "Solved",
    "bernoulli_distribution",
    "check_distinct_domain",
    "check_distinct_sizes",
    "check_epsilon",
    "check_value_populations",
    "deltas_of",
    "distinct_domain_size",
    "distinct_instance",
    "domain",
    "domain_size",
    "duration",
    "estimated_log10_seconds",
    "for_guarantee",
    "judge",
    "judge_approx",
    "mixture_distribution",
    "plan_of",
    "poisson_distribution",
    "poisson_instance",
    "product_distribution",
    "project_distribution",
    "pure_part",
    "record_added_to_group",
    "record_as",
    "relations_of",
    "require_pure",
    "run",
    "run_approx",
    "sample_sizes",
    "sizes_for",
    "solve_instance",
    "srswor_distribution",
    "srswor_instance",
    "srswor_size_mixture",
    "srswr_distribution",
    "srswr_instance",
    "two_value_instance",
    "value_instances",
]


class EpsilonRangeError(ConditionError):
    """M's ε is beyond what the exact programme can represent (``check_epsilon``)."""


def check_epsilon(relations: Mapping[Neighbours, float]) -> None:
    """Refuse an ε the programme cannot hold (``LIMITS["verify_epsilon"]``).

    Its rows carry e^ε: above e^34.5 HiGHS refuses the coefficient, the rows divided by
    e^ε lose e^−ε below its 10⁻⁹ floor, and past ε = 709 e^ε is not a float. Below the
    limit a programme the solver cannot settle is INCONCLUSIVE, never a verdict.
    """
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
