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
from ampcalc.model.references import BBG18, BUN_2020_WP, BUN_2022, DERIVATIONS, cite, derivation
from ampcalc.schemes.assembly import Theorem, assemble
from ampcalc.schemes.base import Analysis, Field, Scheme

if TYPE_CHECKING:
    from ampcalc.schemes.exact import Plan

BASIS = (cite(BUN_2020_WP, "Lemma 3.3"), cite(BBG18))


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
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, rate: float, coupled: bool = True
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
    ``coupled=False`` (the two records are kept with different probabilities, e.g. in
    different strata, the larger being ``rate``): the coins cannot be coupled, so the
    ε_R candidate is left out; the other two hold with q the larger probability (write
    the record kept less often as a mixture of being kept with the larger probability
    and of M(T), which is within max(ε_D, ε_R) of either side).
    """
    return replace_one_candidates(eps_add_remove, eps_replace_one, rate=rate, coupled=coupled)[0]


def replace_one_candidates(
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, rate: float, coupled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The smallest of the three replace-one upper bounds, and which one it is (0, 1, 2).

    0: two steps 2·A(q, ε_D) (δ′ = qδ_D(1 + e^{A(q, ε_D)})); 1: the coupling ε_R
    (δ′ = qδ_R); 2: joint convexity A(q, max(ε_D, ε_R)) (δ′ = q·max(δ_D, δ_R)).
    """
    e_d = np.asarray(eps_add_remove, dtype=float)
    e_r = np.asarray(eps_replace_one, dtype=float)
    two_steps = numeric.round_up(2.0 * numeric.amplification_upper(rate, e_d))
    convex = numeric.amplification_upper(rate, np.maximum(e_d, e_r))
    coupling = e_r if coupled else np.full(np.shape(e_r), np.inf)
    stacked = np.stack(np.broadcast_arrays(two_steps, coupling, convex))
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


REFUSES_REPLACE_ONE_ONLY = (
    f"Poisson amplification ({BUN_2020_WP}, Lemma 3.3; {BBG18}) needs M's add-remove ε, and "
    "`neighbours: replace-one` leaves "
    "it unknown: a Poisson sample's size changes with the population. Declare "
    "`neighbours: add-remove` or `both`."
)


def theorem(rate: float, conditions: tuple[str, ...] = ()) -> Theorem:
    """Lemma 3.3 of 001 (add-remove) at inclusion probability ``rate``, as data."""
    q = rate
    return Theorem(
        name="Lemma 3.3",
        basis=BASIS,
        relation=Neighbours.ADD_REMOVE,
        guarantee=Neighbours.ADD_REMOVE,
        upper=lambda eps: upper_epsilon(eps, rate=q),
        lower=lambda eps: lower_epsilon(eps, rate=q),
        inverse=lambda target: numeric.amplification_inverse(q, target),
        delta_factor=q,
        conditions=conditions,
        tight=True,
        refuses_replace_one_only=REFUSES_REPLACE_ONE_ONLY,
    )


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one Poisson design (see the bound functions for the theorems)."""
    q = params.rate
    if not mechanism.epsilon_add_remove_known():
        raise ConditionError(REFUSES_REPLACE_ONE_ONLY)
    if mechanism.group_size > 1:
        return poisson_group_analysis(params, mechanism, guarantee)
    conditions = (
        f"0 < rate <= 1: rate = {q:g}",
        "each record's inclusion is an independent coin with the same q, not depending "
        "on the data; the sample is secret",
    )
    if guarantee is Neighbours.ADD_REMOVE:
        return assemble(theorem(q, conditions), mechanism, details={"rate": q})
    return replace_one_analysis(q, mechanism, conditions=conditions)


def replace_one_analysis(
    rate: float,
    mechanism: Mechanism,
    *,
    conditions: tuple[str, ...] = (),
    coupled: bool = True,
) -> Analysis:
    """The derived replace-one guarantee (spec §2) at inclusion probability ``rate``.

    ``coupled=False``: the replaced and the replacing record may be kept with
    different probabilities (at most ``rate``), so the coupling candidate is left out
    (``upper_epsilon_replace_one``).
    """
    q = rate
    if not mechanism.epsilon_add_remove_known():
        raise ConditionError(REFUSES_REPLACE_ONE_ONLY)
    eps_r = mechanism.epsilon_replace_one_of
    notes = [
        "replace-one guarantee for Poisson sampling: derived — min(2·A(q, ε_D), ε_R, "
        f"A(q, max(ε_D, ε_R))): a replacement is a removal plus an addition ({DERIVATIONS}, "
        "§1.2); "
        "coupling the inclusion coins gives at most ε_R; advanced joint convexity "
        f"({BBG18}, Theorem 2) on the coupled mixtures gives A(q, max(ε_D, "
        "ε_R)). Tight when ε_R <= ε_D (`neighbours: both`); otherwise not tight in general."
    ]
    if not coupled:
        notes[0] = (
            "replace-one guarantee for Poisson sampling with different inclusion "
            "probabilities: derived — min(2·A(q, ε_D), A(q, max(ε_D, ε_R))) with q the "
            f"largest probability: a replacement is a removal plus an addition ({DERIVATIONS}, "
            "§1.2); "
            f"advanced joint convexity ({BBG18}, Theorem 2) on the "
            "mixtures written at the larger probability gives A(q, max(ε_D, ε_R)). Tight "
            "when ε_R <= ε_D (`neighbours: both`); otherwise not tight in general."
        )
    if mechanism.neighbours is Neighbours.ADD_REMOVE and mechanism.epsilon_replace_one is None:
        notes.append(
            f"M's replace-one ε taken as ε_R = 2ε = {2 * mechanism.epsilon:g} "
            f"({BUN_2022}, §2.2); the verdict compares against it."
        )

    def upper_r(eps: np.ndarray) -> np.ndarray:
        return upper_epsilon_replace_one(eps, eps_r(eps), rate=q, coupled=coupled)

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
        _, which = replace_one_candidates(eps, eps_r(eps), rate=q, coupled=coupled)
        a = numeric.amplification_upper(q, eps)
        d_d = mechanism.delta
        d_r = mechanism.delta_replace_one_of(eps)
        with np.errstate(over="ignore"):
            two_steps = q * d_d * (1.0 + np.exp(a))
        coupled_delta = q * d_r
        convex = q * np.maximum(d_d, d_r)
        chosen = np.choose(which, np.broadcast_arrays(two_steps, coupled_delta, convex))
        # cap after rounding: a probability stays <= 1 (round_up of 1 would pass it)
        out: np.ndarray = np.minimum(numeric.round_up(chosen), 1.0)
        return out

    def details_at(eps: np.ndarray) -> dict[str, Any]:
        return {"tight": bool(np.all(eps_r(eps) <= np.asarray(eps)))}

    return Analysis(
        guarantee_neighbours=Neighbours.REPLACE_ONE,
        reference_epsilon=eps_r,
        upper=upper_r,
        lower=lower_r,
        delta_prime=delta_prime_r,
        basis=(
            *BASIS,
            derivation("§1.2"),
        ),
        conditions=(
            *conditions,
            f"M is ε-DP under add-remove (declared: {mechanism.neighbours})",
        ),
        notes=tuple(notes),
        details={"rate": q},
        details_at=details_at,
    )


def _verify_hook(*args: Any, **kwargs: Any) -> Plan:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.schemes.exact)."""
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
    verify_plan=_verify_hook,
)


# --- group privacy (group_size > 1) --------------------------------------------------


def poisson_group_analysis(
    params: Params, mechanism: Mechanism, guarantee: Neighbours
) -> Analysis:
    """Poisson sampling, adding or removing g records: ε′ = g·log(1 + q(e^ε − 1)).

    Basis: g applications of the single-record bound (001_4ef689e3bef19c3a.txt
        Lemma 3.3; triangle inequality) give the upper bound; the count witness attains
        it (exact LPs agree to 4e-15 on 228 instances, exact-lp-checks.md Conjecture 3).
    Neighbours: M ε-DP under add-remove; ε′ under add-remove of g records.
    Conditions: g >= 1; δ = 0.
    Formula: g·log(1 + q(e^ε − 1)) (add direction; removal alone gives
        −g·log(1 − q(1 − e^{−ε})), smaller; both in details).
    Tightness: tight.
    """

    q, g = params.rate, mechanism.group_size
    if guarantee is not Neighbours.ADD_REMOVE:
        raise ConditionError(
            "group privacy under Poisson sampling is for adding or removing g records "
            "(add-remove); no replace-one group formula is verified."
        )
    if not mechanism.epsilon_add_remove_known():
        raise ConditionError(
            "Poisson group privacy needs M's add-remove ε; declare `neighbours: add-remove` "
            "or `both`."
        )
    if mechanism.delta > 0:
        raise ConditionError(
            "Poisson group privacy: g·log(1 + q(e^ε − 1)) is for pure ε (δ = 0); no "
            "verified (ε, δ) group bound is implemented."
        )

    def upper(eps: np.ndarray) -> np.ndarray:
        return numeric.round_up(g * numeric.amplification_upper(q, eps))

    def lower(eps: np.ndarray) -> np.ndarray:
        return numeric.round_down(g * numeric.amplification_lower(q, eps))

    def certified(target: np.ndarray) -> np.ndarray:
        guess = numeric.round_down(numeric.amplification_inverse(q, np.asarray(target) / g))
        return numeric.certify_down(upper, guess, target)

    def impossible_above(target: np.ndarray) -> np.ndarray:
        guess = numeric.round_up(numeric.amplification_inverse(q, np.asarray(target) / g))
        return numeric.certify_up(lower, guess, target)

    e0 = float(mechanism.epsilon)
    return Analysis(
        guarantee_neighbours=Neighbours.ADD_REMOVE,
        reference_epsilon=lambda eps: g * np.asarray(eps, dtype=float),
        upper=upper,
        lower=lower,
        delta_prime=lambda eps: np.zeros(np.shape(eps)),
        certified=certified,
        impossible_above=impossible_above,
        basis=(
            cite(BUN_2020_WP, "Lemma 3.3, applied g times"),
            derivation("§3.4"),
        ),
        conditions=(
            f"0 < rate <= 1: rate = {q:g}",
            f"a unit of g = {g} records is added or removed",
            "M is pure ε-DP (δ = 0) under add-remove",
        ),
        notes=(
            f"group of {g} records under Poisson sampling: g·log(1 + q(e^ε − 1)) is tight "
            "(g single-record steps; the count witness attains it). The remove direction "
            "alone is smaller (details.remove_direction).",
        ),
        details={
            "rate": q,
            "group_size": g,
            "tight": True,
            "remove_direction": float(g * numeric.neg_log1m(q, e0)),
            "conservative_rule": None,
        },
    )
