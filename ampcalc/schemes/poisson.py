"""Poisson sampling: each record kept independently with probability q.

Basis: Balle, Barthe, Gaboardi (2018), as used by 001_4ef689e3bef19c3a.txt
Lemma 3.3 (stratified Poisson sampling, one stratum). Tight under add-remove.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BBG18, BUN_2020_WP, cite
from ampcalc.schemes.base import Analysis, Field, Scheme

if TYPE_CHECKING:
    from ampcalc.schemes.exact import Plan

BASIS = (cite(BUN_2020_WP, "Lemma 3.3"), BBG18)


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """Each record of the population is included independently with probability q.

    The inclusion coin of a record does not depend on the data; the sample is
    secret. The population size need not be known.

    Attributes:
        rate: q in (0, 1].
    """

    rate: float


FIELDS = (
    Field(
        name="rate",
        kind="float",
        doc="inclusion probability q of every record",
        required=True,
        low=0.0,
        high=1.0,
        low_open=True,
    ),
)


def upper_epsilon(eps_add_remove: np.ndarray, *, rate: float) -> np.ndarray:
    """Upper bound (a guarantee) on ε′ for Poisson sampling, add-remove neighbours.

    Basis: 001_4ef689e3bef19c3a.txt Lemma 3.3 (one stratum); Balle, Barthe,
        Gaboardi (2018).
    Neighbours: M is ε-DP under add-remove; ε′ holds under add-remove.
    Conditions: 0 < q <= 1; ε > 0 (checked at load time).
    Formula: ε′ = log(1 + q(e^ε − 1)).
    Tightness: tight (randomised response on the count of one value attains it).
    Numerics: log1p/expm1 up to ε = 700, logaddexp above; rounded up.
    """
    return numeric.amplification_upper(rate, eps_add_remove)


def lower_epsilon(eps_add_remove: np.ndarray, *, rate: float) -> np.ndarray:
    """Lower bound on ε′ for Poisson sampling, add-remove: same formula, rounded down."""
    return numeric.amplification_lower(rate, eps_add_remove)


def upper_epsilon_replace_one(
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, rate: float
) -> np.ndarray:
    """Upper bound on ε′ for Poisson sampling under replace-one neighbours.

    Basis: three derived, safe bounds (docs/verify.md checks them on the exact
        programme), the smallest taken point by point (``replace_one_candidates``):
        a replacement is a removal plus an addition, so ε′ <= 2·A(q, ε_D); coupling
        the two inclusion coins, the samples agree or are replace-one neighbours, so
        ε′ <= ε_R; and the advanced joint convexity of Balle, Barthe and Gaboardi
        (2018, Theorem 2) on the coupled mixture (1 − q)M(T) + qM(T ∪ {x}) against
        (1 − q)M(T) + qM(T ∪ {x′}) gives ε′ <= A(q, max(ε_D, ε_R)).
    Neighbours: M is ε_D-DP under add-remove and ε_R-DP under replace-one.
    Formula: ε′ = min(2·A(q, ε_D), ε_R, A(q, max(ε_D, ε_R))). Tight when ε_R <= ε_D
        (``neighbours: both``): it is A(q, ε), which the lower bound attains.
    """
    return replace_one_candidates(eps_add_remove, eps_replace_one, rate=rate)[0]


def replace_one_candidates(
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, rate: float
) -> tuple[np.ndarray, np.ndarray]:
    """The smallest of the three replace-one upper bounds, and which one it is (0, 1, 2).

    0: two steps 2·A(q, ε_D) (δ′ = qδ_D(1 + e^{A(q, ε_D)})); 1: the coupling ε_R
    (δ′ = qδ_R); 2: joint convexity A(q, max(ε_D, ε_R)) (δ′ = q·max(δ_D, δ_R)).
    """
    e_d = np.asarray(eps_add_remove, dtype=float)
    e_r = np.asarray(eps_replace_one, dtype=float)
    two_steps = numeric.round_up(2.0 * numeric.amplification_upper(rate, e_d))
    convex = numeric.amplification_upper(rate, np.maximum(e_d, e_r))
    stacked = np.stack(np.broadcast_arrays(two_steps, e_r, convex))
    which = np.argmin(stacked, axis=0)  # ties go to the first: the smallest δ′ among them
    best: np.ndarray = np.take_along_axis(stacked, which[np.newaxis], axis=0)[0]
    return best, which


def lower_epsilon_replace_one(
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, rate: float
) -> np.ndarray:
    """Lower bound on ε′ for Poisson sampling under replace-one neighbours.

    Witnesses (binary output, geometric noise):
      - when ε_R >= 2ε_D: noise on #x − #y (sensitivity 1 under add-remove, 2 under
        replace-one): ε′ = log(1 + q(e^ε − 1)) − log(1 − q(1 − e^{−ε})) at ε = ε_D;
      - otherwise noise on #x at ε = min(ε_D, ε_R): ε′ = log(1 + q(e^ε − 1)).
    """
    e_d = np.asarray(eps_add_remove, dtype=float)
    e_r = np.asarray(eps_replace_one, dtype=float)
    both_sides = numeric.amplification_lower(rate, e_d) + numeric.round_down(
        numeric.neg_log1m(rate, e_d)
    )
    one_side = numeric.amplification_lower(rate, np.minimum(e_d, e_r))
    return numeric.round_down(np.where(e_r >= 2.0 * e_d, both_sides, one_side))


def lower_epsilon_at_delta(
    eps_add_remove: np.ndarray,
    eps_replace_one: np.ndarray,
    delta_prime: np.ndarray,
    *,
    rate: float,
) -> np.ndarray:
    """Lower bound on ε′ at a given δ′ > 0, replace-one neighbours.

    Witness: randomised response on "x is in the sample" at e = min(ε_D, ε_R) (ε-DP
    under both relations, so (ε, δ)-DP too). With P = O ∪ {x}, P′ = O ∪ {x′} and the
    event "output 1", Pr_P = (1 + q(e^e − 1))/(1 + e^e) and Pr_P′ = 1/(1 + e^e), so the
    divergence at ε″ exceeds δ′ for every ε″ < log(1 + q(e^e − 1) − δ′(1 + e^e)): no
    (ε″, δ′) guarantee holds below it. 0 where the argument is <= 1.
    """
    e = np.minimum(np.asarray(eps_add_remove, dtype=float), np.asarray(eps_replace_one))
    d = np.asarray(delta_prime, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        # log(e^A − δ′(1 + e^e)) with A the amplified ε, in a form that stays finite
        a = numeric.amplification_lower(rate, e)
        inner = -np.expm1(np.log(d) + np.logaddexp(0.0, e) - a)  # 1 − δ′(1 + e^e)/e^A
        out = np.where(inner > 0.0, a + np.log(np.where(inner > 0.0, inner, 1.0)), 0.0)
    res: np.ndarray = np.maximum(numeric.round_down(out, 4), 0.0)
    return res


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one Poisson design (see the bound functions for the theorems)."""
    q = params.rate
    if not mechanism.epsilon_add_remove_known():
        raise ConditionError(
            "Poisson amplification (001_4ef689e3bef19c3a.txt Lemma 3.3; Balle, Barthe, "
            "Gaboardi 2018) needs M's add-remove ε, and `neighbours: replace-one` leaves "
            "it unknown: a Poisson sample's size changes with the population. Declare "
            "`neighbours: add-remove` or `both`."
        )
    if mechanism.group_size > 1:
        from ampcalc.math.groups import poisson_group_analysis

        return poisson_group_analysis(params, mechanism, guarantee)
    conditions = [
        f"0 < rate <= 1: rate = {q:g}",
        "each record's inclusion is an independent coin with the same q, not depending "
        "on the data; the sample is secret",
        f"M is ε-DP under add-remove (declared: {mechanism.neighbours})",
    ]
    warnings: list[str] = []

    if guarantee is Neighbours.ADD_REMOVE:

        def ref(eps: np.ndarray) -> np.ndarray:
            return np.asarray(eps, dtype=float)

        def upper(eps: np.ndarray) -> np.ndarray:
            return upper_epsilon(eps, rate=q)

        def lower(eps: np.ndarray) -> np.ndarray:
            return lower_epsilon(eps, rate=q)

        def delta_prime(eps: np.ndarray) -> np.ndarray:
            if mechanism.delta == 0.0:
                return np.zeros(np.shape(eps))
            return np.minimum(numeric.round_up(np.full(np.shape(eps), q * mechanism.delta)), 1.0)

        def certified(target: np.ndarray) -> np.ndarray:
            guess = numeric.round_down(numeric.amplification_inverse(q, target))
            return numeric.certify_down(upper, guess, target)

        def impossible_above(target: np.ndarray) -> np.ndarray:
            guess = numeric.round_up(numeric.amplification_inverse(q, target))
            return numeric.certify_up(lower, guess, target)

        def mechanism_delta(target_delta: float, eps: np.ndarray) -> np.ndarray:
            return numeric.round_down(np.full(np.shape(eps), target_delta / q))

        return Analysis(
            guarantee_neighbours=Neighbours.ADD_REMOVE,
            reference_epsilon=ref,
            upper=upper,
            lower=lower,
            delta_prime=delta_prime,
            certified=certified,
            impossible_above=impossible_above,
            mechanism_delta=mechanism_delta,
            basis=BASIS,
            conditions=tuple(conditions),
            warnings=tuple(warnings),
            details={"rate": q, "tight": True},
        )

    # replace-one guarantee: the derived, labelled composition of spec §2
    eps_r = mechanism.epsilon_replace_one_of
    warnings.append(
        "replace-one guarantee for Poisson sampling: derived — min(2·A(q, ε_D), ε_R, "
        "A(q, max(ε_D, ε_R))): a replacement is a removal plus an addition (spec §2); "
        "coupling the inclusion coins gives at most ε_R; advanced joint convexity (Balle, "
        "Barthe, Gaboardi 2018, Theorem 2) on the coupled mixtures gives A(q, max(ε_D, "
        "ε_R)). Tight when ε_R <= ε_D (`neighbours: both`); otherwise not tight in general."
    )
    if mechanism.neighbours is Neighbours.ADD_REMOVE and mechanism.epsilon_replace_one is None:
        warnings.append(
            f"M's replace-one ε taken as ε_R = 2ε = {2 * mechanism.epsilon:g} "
            "(000_97a39a4c524f603f.txt §2.2); the verdict compares against it."
        )

    def upper_r(eps: np.ndarray) -> np.ndarray:
        return upper_epsilon_replace_one(eps, eps_r(eps), rate=q)

    def lower_r(eps: np.ndarray) -> np.ndarray:
        if mechanism.delta == 0.0:
            return lower_epsilon_replace_one(eps, eps_r(eps), rate=q)
        # δ′ > 0: the bound must hold at the reported δ′ (no (ε″, δ′) guarantee below it)
        return lower_epsilon_at_delta(eps, eps_r(eps), delta_prime_r(eps), rate=q)

    def delta_prime_r(eps: np.ndarray) -> np.ndarray:
        # the δ′ of the bound the upper ε′ is (each of the three holds with its own δ′)
        eps = np.asarray(eps, dtype=float)
        if mechanism.delta == 0.0:
            return np.zeros(eps.shape)
        _, which = replace_one_candidates(eps, eps_r(eps), rate=q)
        a = numeric.amplification_upper(q, eps)
        d_d = mechanism.delta
        d_r = mechanism.delta_replace_one_of(eps)
        with np.errstate(over="ignore"):
            two_steps = q * d_d * (1.0 + np.exp(a))
        coupled = q * d_r
        convex = q * np.maximum(d_d, d_r)
        chosen = np.choose(which, np.broadcast_arrays(two_steps, coupled, convex))
        # cap after rounding: a probability stays <= 1 (round_up of 1 would pass it)
        out: np.ndarray = np.minimum(numeric.round_up(chosen), 1.0)
        return out

    return Analysis(
        guarantee_neighbours=Neighbours.REPLACE_ONE,
        reference_epsilon=eps_r,
        upper=upper_r,
        lower=lower_r,
        delta_prime=delta_prime_r,
        basis=(
            *BASIS,
            "spec §2 (derived: removal + addition; coupling; joint convexity on the coupling)",
        ),
        conditions=tuple(conditions),
        warnings=tuple(warnings),
        details={
            "rate": q,
            "tight": bool(np.all(eps_r(np.asarray(mechanism.epsilon)) <= mechanism.epsilon)),
        },
    )


def _verify_hook(*args: Any, **kwargs: Any) -> Plan:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.verify)."""
    from ampcalc.schemes.exact import poisson_instance

    return poisson_instance(*args, **kwargs)


SCHEME = Scheme(
    name="poisson",
    summary="Poisson sample: each record kept independently with probability q",
    params=Params,
    fields=FIELDS,
    mechanism_relation="add-remove (or both)",
    guarantees=(Neighbours.ADD_REMOVE, Neighbours.REPLACE_ONE),
    basis=BASIS,
    analyse=analyse,
    example={"rate": 0.01},
    supports_group_size=True,
    hooks={"verify": _verify_hook},
)
