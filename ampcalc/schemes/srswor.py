"""Simple random sampling without replacement: m of N records, a secret sample.

Basis: 000_97a39a4c524f603f.txt Theorem 2.2, eq. (3); the same result is
002_2b0afa8716090992.txt Theorem 1. Tight (Balle, Barthe, Gaboardi 2018).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BUN_2022, HU_2023, cite
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

    Basis: 000_97a39a4c524f603f.txt Theorem 2.2, eq. (3); 002_2b0afa8716090992.txt
        Theorem 1.
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


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one SRSWOR design (see ``upper_epsilon`` for the theorem)."""
    if guarantee is not Neighbours.REPLACE_ONE:
        raise ConditionError(
            "Theorem 2.2 (000_97a39a4c524f603f.txt) holds for replace-one neighbours of a "
            "population of fixed, public size N; an add-remove guarantee changes N and no "
            "theorem covers it. Use `guarantee: replace-one`, or the `poisson` scheme for "
            "an add-remove guarantee."
        )
    if mechanism.group_size > 1:
        from ampcalc.math.groups import srswor_group_analysis

        return srswor_group_analysis(params, mechanism)
    n, m = params.population, params.sample
    q = m / n
    ratio = mechanism.replace_one_ratio()
    eps_r = mechanism.epsilon_replace_one_of

    def upper(eps: np.ndarray) -> np.ndarray:
        return upper_epsilon(eps_r(eps), population=n, sample=m)

    def lower(eps: np.ndarray) -> np.ndarray:
        return lower_epsilon(eps_r(eps), population=n, sample=m)

    def delta_prime(eps: np.ndarray) -> np.ndarray:
        if mechanism.delta == 0.0:
            return np.zeros(np.shape(eps))
        return np.minimum(numeric.round_up(q * mechanism.delta_replace_one_of(eps)), 1.0)

    def certified(target: np.ndarray) -> np.ndarray:
        guess = numeric.round_down(numeric.amplification_inverse(q, target)) / ratio
        return numeric.certify_down(upper, numeric.round_down(guess), target)

    def impossible_above(target: np.ndarray) -> np.ndarray:
        guess = numeric.round_up(numeric.amplification_inverse(q, target)) / ratio
        return numeric.certify_up(lower, numeric.round_up(guess), target)

    def mechanism_delta(target_delta: float, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        if mechanism.neighbours is not Neighbours.ADD_REMOVE:
            return numeric.round_down(np.full_like(eps, target_delta / q))
        if mechanism.epsilon_replace_one is not None:
            return np.full_like(eps, np.nan)  # δ_R was stated directly; no add-remove δ follows
        with np.errstate(over="ignore"):
            return numeric.round_down(target_delta / (q * (1.0 + np.exp(eps))))

    conditions = [
        f"1 <= sample <= population: 1 <= {m} <= {n}",
        "the population size N is fixed and public; which records were sampled is secret",
        f"M is ε-DP under replace-one on samples of size m (declared: {mechanism.neighbours})",
    ]
    warnings: list[str] = []
    if mechanism.neighbours is Neighbours.ADD_REMOVE:
        if mechanism.epsilon_replace_one is None:
            warnings.append(
                f"M's ε = {mechanism.epsilon:g} holds under add-remove, but Theorem 2.2 needs "
                f"its replace-one ε; using ε_R = 2ε = {2 * mechanism.epsilon:g} "
                "(000_97a39a4c524f603f.txt §2.2). If M is also ε-DP under replace-one "
                "(e.g. a count query), declare `neighbours: both`; if its own analysis gives "
                "a smaller replace-one ε, set `epsilon_replace_one`."
            )
        elif mechanism.epsilon_replace_one > 2 * mechanism.epsilon:
            warnings.append(
                f"epsilon_replace_one = {mechanism.epsilon_replace_one:g} exceeds 2ε; an "
                f"add-remove ε-DP mechanism is 2ε-DP under replace-one, so "
                f"ε_R = {2 * mechanism.epsilon:g} is used."
            )
        if mechanism.delta > 0 and mechanism.epsilon_replace_one is None:
            warnings.append(
                "δ under replace-one is taken as (1 + e^ε)δ (group privacy for the removal "
                "and the addition that make a replacement)."
            )
    return Analysis(
        guarantee_neighbours=Neighbours.REPLACE_ONE,
        reference_epsilon=eps_r,
        upper=upper,
        lower=lower,
        delta_prime=delta_prime,
        certified=certified,
        impossible_above=impossible_above,
        mechanism_delta=mechanism_delta,
        basis=BASIS,
        conditions=tuple(conditions),
        warnings=tuple(warnings),
        details={"rate": q, "population": n, "sample": m, "tight": True},
    )


def _verify_hook(*args: Any, **kwargs: Any) -> Plan:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.verify)."""
    from ampcalc.schemes.exact import srswor_instance

    return srswor_instance(*args, **kwargs)


SCHEME = Scheme(
    name="srswor",
    summary="simple random sample of m of N records without replacement (secret sample)",
    params=Params,
    fields=FIELDS,
    mechanism_relation="replace-one (add-remove M: ε_R = epsilon_replace_one or 2ε)",
    guarantees=(Neighbours.REPLACE_ONE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={"population": 10000, "sample": 100},
    supports_group_size=True,
    hooks={"verify": _verify_hook},
)
