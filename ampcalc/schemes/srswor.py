"""Simple random sampling without replacement: m of N records, a secret sample.

Basis: Bun et al., Theorem 2.2, eq. (3); the same result is
Hu et al., Theorem 1. Tight (Balle, Barthe, Gaboardi 2018).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ampcalc.math import groups, numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BUN_2022, DERIVATIONS, HU_2023, cite, derivation
from ampcalc.schemes.assembly import (
    Proportional,
    Refusal,
    Refuses,
    Theorem,
    assemble,
    check_refusals,
    epsilons,
)
from ampcalc.schemes.base import Analysis, Field, Problem, Scheme

if TYPE_CHECKING:
    from ampcalc.schemes.exact import Plan

MAX_EXACT_INT = 2**53
BASIS = (cite(BUN_2022, "Theorem 2.2"), cite(HU_2023, "Theorem 1"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """m records drawn uniformly without replacement from a population of N.

    The population size N is fixed and public; the sample (which records were
    drawn) is secret: only M's output on it is released.

    Attributes:
        population: N >= 1.
        sample: m, 1 <= m <= N.
    """

    population: int
    sample: int

    @property
    def rate(self) -> float:
        return self.sample / self.population


FIELDS = (
    Field(
        name="population",
        kind="int",
        doc="population size N (public)",
        required=True,
        low=1,
        high=MAX_EXACT_INT,
    ),
    Field(
        name="sample",
        kind="int",
        doc="sample size m, 1 <= m <= N",
        required=True,
        low=1,
        high=MAX_EXACT_INT,
    ),
)


def check(params: Params) -> list[Problem]:
    """Cross-field rule: the sample cannot be larger than the population."""
    if params.sample > params.population:
        return [
            Problem(
                field="sample",
                message=(
                    f"sample {params.sample} is larger than population {params.population}; "
                    "expected 1 <= sample <= population"
                ),
            )
        ]
    return []


def upper_epsilon(eps_replace_one: np.ndarray, *, population: int, sample: int) -> np.ndarray:
    """Upper bound (a guarantee) on ε′ for SRSWOR.

    Basis: Bun et al., Theorem 2.2, eq. (3); Hu et al., Theorem 1.
    Neighbours: M is ε-DP under replace-one on samples of size m; the bound holds
        under replace-one on populations of fixed, public size N.
    Conditions: 1 <= m <= N; ε > 0 (checked at load time).
    Formula: ε′ = log(1 + (m/N)(e^ε − 1)) = numeric.amplification(m/N, ε).
    Tightness: tight; equals ``lower_epsilon`` up to outward rounding.
    Numerics: log1p/expm1 up to ε = 700, logaddexp above; rounded up.

    Args:
        eps_replace_one: M's replace-one ε, any shape.
        population: N. sample: m.
    Returns:
        ε′ of eps's shape, never below the exact value.
    """
    return numeric.amplification_upper(sample / population, eps_replace_one)


def lower_epsilon(eps_replace_one: np.ndarray, *, population: int, sample: int) -> np.ndarray:
    """Lower bound on ε′ for SRSWOR: the same formula, rounded down (tight).

    Basis: as ``upper_epsilon``; attained by a mechanism that is ε_D-DP under
    add-remove and ε_R-DP under replace-one for any ε_R <= 2ε_D
    (f(S) ∝ exp(ε_D(m − |S|) + ε_R·#x(S)) on a binary output).
    """
    return numeric.amplification_lower(sample / population, eps_replace_one)


def bounds_epsilon(
    eps_replace_one: np.ndarray, *, population: int, sample: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(lower_epsilon, upper_epsilon)`` from one evaluation of their formula."""
    return numeric.amplification_bounds(sample / population, eps_replace_one)


def inverse_epsilon(target: np.ndarray, *, population: int, sample: int) -> np.ndarray:
    """The ε_R at which ``upper_epsilon`` (and ``lower_epsilon``) reach ``target``,
    unrounded: ε_R = log(1 + (e^T − 1)/q), q = m/N (the assembly rounds and certifies)."""
    return numeric.amplification_inverse(sample / population, target)


REFUSES_ADD_REMOVE = (
    f"Theorem 2.2 ({BUN_2022}) holds for replace-one neighbours of a "
    "population of fixed, public size N; an add-remove guarantee changes N and no "
    "theorem covers it. Use `guarantee: replace-one`, or the `poisson` scheme for "
    "an add-remove guarantee."
)
REFUSALS = (Refusal(Refuses.GUARANTEE, REFUSES_ADD_REMOVE),)


RELATION = Neighbours.REPLACE_ONE
"""The relation the family's theorems take M's ε under (an add-remove M is
read under it by the assembly)."""


def theorem(params: Params) -> Theorem:
    """Theorem 2.2 of Bun et al. for this design, as data: ε′ = A(m/N, ε_R), the closed form
    ``numeric.Amplification`` that ``upper_epsilon``, ``lower_epsilon`` and
    ``inverse_epsilon`` evaluate (formulas in replace-one ε_R)."""
    n, m = params.population, params.sample
    return Theorem(
        name="Theorem 2.2",
        basis=BASIS,
        relation=RELATION,
        guarantee=Neighbours.REPLACE_ONE,
        closed_form=numeric.Amplification(m / n),
        delta_prime=Proportional(m / n),
        conditions=(
            f"1 <= sample <= population: 1 <= {m} <= {n}",
            "the population size N is fixed and public; which records were sampled is secret",
        ),
        tight=True,
        relation_words=" on samples of size m",
        refusals=REFUSALS,
    )


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one SRSWOR design (see ``upper_epsilon`` for the theorem)."""
    thm = theorem(params)
    check_refusals(thm, mechanism, guarantee)  # before the group case, which refuses it too
    if mechanism.group_size > 1:
        return srswor_group_analysis(params, mechanism)
    n, m = params.population, params.sample
    return assemble(
        thm,
        mechanism,
        details={"rate": m / n, "population": n, "sample": m},
        notes=(one_in_100_note(),) if 100 * m == n else (),
    )


def one_in_100_note() -> str:
    """The erratum of Bun et al. §2.4 (a secret 1/100 sample), on designs at that rate.

    The paper prints ε′ = 0.01 for ε = 1 and ε = 100 for ε′ = 1 (noise scale 1/(100n));
    Theorem 2.2 gives A(0.01, 1) = 0.017037 and A⁻¹(0.01, 1) = 5.1523 (spec §1, §11).
    One short line: the full account (ε = 100 would give ε′ = 95.395) is in
    docs/corrections.md.
    """
    q = 0.01
    one = float(numeric.amplification(q, np.asarray(1.0)))
    inverse = float(numeric.amplification_inverse(q, np.asarray(1.0)))
    return (
        f"{cite(BUN_2022, '§2.4')} prints the linear approximations ε′ = 0.01 and ε = 100 "
        f"for ε′ = 1; Theorem 2.2 gives {one:.5g} and {inverse:.5g} (docs/corrections.md)."
    )


def _verify_hook(*args: Any, **kwargs: Any) -> Plan:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.schemes.exact)."""
    from ampcalc.schemes.exact import srswor_instance  # lazy: start-up (bound)

    return srswor_instance(*args, **kwargs)


SCHEME = Scheme(
    name="srswor",
    summary="simple random sample of m of N records without replacement (secret sample)",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.REPLACE_ONE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={"population": 10000, "sample": 100},
    supports_group_size=True,
    verify_plan=_verify_hook,
)


# --- group privacy (group_size > 1) --------------------------------------------------


def srswor_group_analysis(params: Params, mechanism: Mechanism) -> Analysis:
    """srswor with ``group_size`` g > 1: ε′ = log E[e^{Jε_R}], J ~ Hyp(N, g, m).

    Basis: count witness (lower bound, proven); the relaxation of ampcalc.math.groups
        (upper bound: tight where V <= ε_R, proven but possibly loose above); exact LPs
        equal V to 9e-16 on 196 tiny instances (exact-lp-checks.md Conjecture 2).
    Neighbours: M ε_R-DP under replace-one; ε′ under replace-one of g records.
    Conditions: 1 <= g <= N, δ = 0.
    Formula: V = log Σ_k p_k e^{kε}; conservative rule log(1 + (m/N)(e^{gε} − 1)) in details.
    Numerics: log pmf by recurrence, expm1/logsumexp forms, slack 1e-10; outward.
    """
    return _srswor_group(params, mechanism)


REFUSES_GROUP_DELTA = (
    "group privacy under srswor: the formula log E[e^{Jε}] is for pure ε (δ = 0); "
    "no verified (ε, δ) group bound is implemented."
)


def group_lower_epsilon(
    eps_replace_one: np.ndarray, *, k0: int, log_pmf: np.ndarray
) -> np.ndarray:
    """Lower bound on ε′ for a group under srswor: V = log E[e^{Jε_R}], J hypergeometric
    (support from ``k0``, log pmf ``log_pmf``), by the count witness; rounded down."""
    return groups.slack_down(groups.log_mgf(k0, log_pmf, eps_replace_one), log_pmf.size)


def group_upper_epsilon(
    eps_replace_one: np.ndarray, *, k0: int, log_pmf: np.ndarray
) -> np.ndarray:
    """Upper bound: V where V <= ε_R (the relaxation is tight there), else the larger of
    V and the relaxation's optimum; k_max·ε_R when no sample avoids the group."""
    e = np.asarray(eps_replace_one, dtype=float)
    raw = groups.log_mgf(k0, log_pmf, e)
    # groups.log_mgf's error is relative (every term nonnegative, in log space)
    v = numeric.round_up(raw * (1 + groups.REL_SLACK))
    if k0 > 0:
        # no sample avoids the group: group privacy over the J <= k_max differing
        # records (J is constant when k_max = 1 ... then V = ε exactly)
        k_max = k0 + log_pmf.size - 1
        out: np.ndarray = np.maximum(v, numeric.round_up(k_max * e))
        return out
    relax = groups.slack_up(groups.relaxation(k0, log_pmf, e), log_pmf.size)
    return np.where(v <= e, v, np.maximum(v, relax))


def group_theorem(params: Params, group: int, k0: int, log_pmf: np.ndarray) -> Theorem:
    """Group privacy under srswor for ``group`` records (J ~ Hyp(N, g, m) from ``k0``
    with log pmf ``log_pmf``), as data: formulas in ε_R, pure ε, reference g·ε_R."""
    n, m, g = params.population, params.sample, group
    return Theorem(
        name="group privacy under srswor",
        basis=(derivation("§3.3"), derivation("§3.5")),
        relation=RELATION,
        guarantee=Neighbours.REPLACE_ONE,
        upper=group_upper_epsilon,
        lower=group_lower_epsilon,
        params={"k0": k0, "log_pmf": log_pmf},
        conditions=(
            f"1 <= group_size <= population: 1 <= {g} <= {n}",
            f"1 <= sample <= population: 1 <= {m} <= {n}",
        ),
        tight=None,
        pure=True,
        group_size=g,
        relation_words=" on samples of size m",
        refusals=REFUSALS,
    )


def _srswor_group(params: Params, mechanism: Mechanism) -> Analysis:
    n, m, g = params.population, params.sample, mechanism.group_size
    if g > n:
        raise ConditionError(
            f"group_size {g} is larger than population {n}; expected 1 <= group_size <= population"
        )
    if mechanism.delta > 0:
        raise ConditionError(REFUSES_GROUP_DELTA)
    size = groups.hypergeom_support(n, g, m)
    if size > groups.MAX_SUPPORT:
        raise ConditionError(
            f"group privacy under srswor: the hypergeometric support has {size} points, "
            f"more than {groups.MAX_SUPPORT} (min(g, m) is too large)"
        )
    k0, lp = groups.hypergeom_logpmf(n, g, m)
    thm = group_theorem(params, g, k0, lp)
    e0 = float(mechanism.effective_epsilon_replace_one())
    conservative = float(numeric.amplification_upper(m / n, g * e0))
    v0 = float(group_lower_epsilon(epsilons(mechanism)[1], k0=k0, log_pmf=lp))
    notes = [
        f"group of {g} records under srswor: ε′ = log E[e^{{Jε}}], J ~ Hypergeometric(N, g, m) "
        "— proven as a lower bound (count witness), proven as the upper bound where it is "
        f"<= ε (relaxation), LP-verified on 196 tiny instances ({DERIVATIONS}, §3). "
        f"The conservative rule log(1 + (m/N)(e^{{gε}} − 1)) = {conservative:.6g} is valid "
        "but loose.",
    ]
    if v0 > e0:
        notes.append(
            "log E[e^{Jε}] exceeds ε here: the upper bound is the relaxation's optimum "
            "(proven, may be loose); conjectured tight at the lower bound."
        )
    return assemble(
        thm,
        mechanism,
        notes=tuple(notes),
        details={
            "population": n,
            "sample": m,
            "group_size": g,
            "conservative_rule": conservative,
        },
    )
