"""Poisson sampling: each record kept independently with probability q.

Basis: Balle, Barthe, Gaboardi (2018), as used by Bun et al. 2020, Lemma 3.3 (stratified Poisson
sampling, one stratum). Tight under add-remove.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BBG18, BUN_2020_WP, BUN_2022, DERIVATIONS, cite, derivation
from ampcalc.schemes.assembly import OfPair, Proportional, Refusal, Refuses, Theorem, assemble
from ampcalc.schemes.base import Analysis, ExactRemoval, Field, Scheme

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

    Basis: Bun et al. 2020, Lemma 3.3 (one stratum); Balle, Barthe,
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


def bounds_epsilon(eps_add_remove: np.ndarray, *, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """``(lower_epsilon, upper_epsilon)`` from one evaluation of their formula."""
    return numeric.amplification_bounds(rate, eps_add_remove)


def inverse_epsilon(target: np.ndarray, *, rate: float) -> np.ndarray:
    """The ε at which ``upper_epsilon`` (and ``lower_epsilon``) reach ``target``,
    unrounded: ε = log(1 + (e^T − 1)/q) (the assembly rounds and certifies)."""
    return numeric.amplification_inverse(rate, target)


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x − 1) for x > 0, overflow-free: log(expm1(x)) up to x = 1, then
    x + log1p(−e^{−x})."""
    small = x <= 1.0
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out: np.ndarray = np.where(
            small, np.log(np.expm1(np.where(small, x, 1.0))), x + np.log1p(-np.exp(-x))
        )
    return out


def replace_one_exact(
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, rate: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The exact ε′ of Poisson sampling under replace-one neighbours, M pure ε_D-DP under
    add-remove and ε_R-DP under replace-one: ``(lower, upper)``, the one value rounded
    down and up.

    Basis: derived (docs/derivations.md §1.2): couple the two samples as T ∪ {x} / T ∪ {x′}
        (probability q) and T (1 − q); for every T and event E, with a = Pr[M(T) ∈ E],
        b = Pr[M(T ∪ {x}) ∈ E] <= e^{ε_D}a and c = Pr[M(T ∪ {x′}) ∈ E] >=
        max(e^{−ε_D}a, e^{−ε_R}b), the ratio ((1 − q)a + qb)/((1 − q)a + qc) is at most
        the formula, and sums over T keep it. A binary output on the count of x-type
        records (the others weighted e^{ε_D − ε_R}) attains it.
    Neighbours: ε′ under replace-one.
    Conditions: δ = 0; the rest of the sample is independent of whether x's place is
        drawn (Poisson; equal rates or one stratum for stratified Poisson).
    Formula: ε′ = log((1 + q(e^ε − 1))/(1 + q(e^{ε − ε_R} − 1))) with ε = ε_D and ε_R
        capped at 2ε_D (which M's add-remove ε implies); ε_R = ε_D gives A(q, ε),
        ε_R = 2ε_D gives A(q, ε) − log(1 − q(1 − e^{−ε})).
    Numerics: ε′ = log1p(e^L), L = log(e^{ε_R} − 1) − log(1 + e^z), z = log(1 − q) −
        log q − (ε − ε_R): no difference of close numbers at small ε or ε_R, nor at
        large ε, no overflow at any ε; L's absolute error (a few ulps of its terms)
        moves ε′ by at most min(1, 1/ε′) of it in relative terms, covered by a relative
        slack before the outward rounding.
    """
    e_d = np.asarray(eps_add_remove, dtype=float)
    e_r = np.minimum(np.asarray(eps_replace_one, dtype=float), 2.0 * e_d)
    q, e_d, e_r = np.broadcast_arrays(np.asarray(rate, dtype=float), e_d, e_r)
    d = e_d - e_r
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # 1 + q(e^d − 1) = q·e^d·(1 + e^z), z = log(1 − q) − log q − d (−∞ at q = 1)
        log_q, log_1mq = np.log(q), np.log1p(-q)
        z = log_1mq - log_q - d
        big_l = _log_expm1(e_r) - np.logaddexp(0.0, z)
        value = np.logaddexp(0.0, big_l)
        # absolute error of L: a few ulps of log(e^{ε_R} − 1), and of z's terms scaled by
        # σ(z) (the slope of log(1 + e^z)); ε′ = log1p(e^L) moves by σ(L) times that,
        # at most min(1, 1/ε′) of ε′ in relative terms
        sig_z = np.where(np.isfinite(z), 1.0 / (1.0 + np.exp(-z)), 0.0)
        z_terms = np.where(sig_z > 0.0, np.abs(log_1mq) + np.abs(log_q) + np.abs(d), 0.0)
        log_em1 = np.where(e_r > 0.0, np.abs(_log_expm1(e_r)), 0.0)  # ε_R = 0: ε′ = 0
        terms = log_em1 + 1.0 + sig_z * z_terms
        positive = np.where(value > 0.0, value, 1.0)
        slack = 8.0 * np.finfo(float).eps * terms * np.minimum(1.0, 1.0 / positive)
    zero = e_r <= 0.0  # ε_R = 0: the samples' outputs agree; ε′ = 0
    lo = np.where(zero, 0.0, numeric.round_down(value * (1.0 - slack)))
    hi = np.where(zero, 0.0, numeric.round_up(value * (1.0 + slack)))
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


def upper_epsilon_replace_one(
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, rate: float, coupled: bool = True
) -> np.ndarray:
    """Upper bound on ε′ for Poisson sampling under replace-one neighbours, M pure ε.

    Basis: ``coupled`` (the two records are kept with the same probability q,
        independently of the rest): the exact value ``replace_one_exact``,
        log((1 + q(e^{ε_D} − 1))/(1 + q(e^{ε_D − ε_R} − 1))). ``coupled=False`` (the two
        records are kept with different probabilities, e.g. in different strata, the
        larger being ``rate``): the coins cannot be coupled; the smaller of two derived
        bounds, a replacement is a removal plus an addition, ε′ <= 2·A(q, ε_D), and the
        advanced joint convexity of Balle, Barthe and Gaboardi (2018, Theorem 2) with
        the record kept less often written as a mixture of being kept with the larger
        probability and of M(T) (within max(ε_D, ε_R) of either side), ε′ <=
        A(q, max(ε_D, ε_R)).
    Neighbours: M is ε_D-DP under add-remove and ε_R-DP under replace-one.
    Tightness: exact when ``coupled`` (``lower_epsilon_replace_one`` is the same value).
    """
    if coupled:
        return replace_one_exact(eps_add_remove, eps_replace_one, rate=rate)[1]
    return replace_one_candidates(eps_add_remove, eps_replace_one, rate=rate, coupled=False)[0]


def replace_one_candidates(
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, rate: float, coupled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The smallest of the three replace-one upper bounds that hold with δ > 0, and which
    one it is (0, 1, 2).

    0: two steps 2·A(q, ε_D) (δ′ = qδ_D(1 + e^{A(q, ε_D)})); 1: coupling the inclusion
    coins, the samples agree or are replace-one neighbours, ε_R (δ′ = qδ_R); 2: joint
    convexity A(q, max(ε_D, ε_R)) (δ′ = q·max(δ_D, δ_R)). ``coupled=False`` leaves 1 out.
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
    """Lower bound on ε′ for Poisson sampling under replace-one neighbours: the exact
    value ``replace_one_exact`` rounded down.

    Witness (binary output): Pr[1] = min(h, p·e^{s}) with s = ε_D·#x + (ε_D − ε_R)·#other
    records in the sample, h = 1/(1 + e^{max(ε_D, ε_R)}) and p small enough that the cap
    is not reached on D = C ∪ {x}, D′ = C ∪ {x′}: an addition moves s by ε_D or
    ε_D − ε_R ∈ [−ε_D, ε_D], a replacement by 0 or ±ε_R, so M is ε_D-DP under add-remove
    and ε_R-DP under replace-one (the cap keeps Pr[0] within the same ratios); the event
    {1} has probability ratio exactly (1 + q(e^{ε_D} − 1))/(1 + q(e^{ε_D − ε_R} − 1)).
    It needs only x and x′ to be kept with the same probability q independently of the
    rest, so it holds for stratified Poisson at the stratum of largest rate too.
    """
    return replace_one_exact(eps_add_remove, eps_replace_one, rate=rate)[0]


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


RELATION = Neighbours.ADD_REMOVE
"""The relation the family's theorems take M's ε under."""


def theorem(rate: float, conditions: tuple[str, ...] = ()) -> Theorem:
    """Lemma 3.3 of Bun et al. 2020 (add-remove) at inclusion probability ``rate``, as data: ε′ =
    A(q, ε), the closed form ``numeric.Amplification`` that ``upper_epsilon``,
    ``lower_epsilon`` and ``inverse_epsilon`` evaluate."""
    return Theorem(
        name="Lemma 3.3",
        basis=BASIS,
        relation=RELATION,
        guarantee=Neighbours.ADD_REMOVE,
        closed_form=numeric.Amplification(float(rate)),
        delta_prime=Proportional(rate),
        conditions=conditions,
        tight=True,
        refusals=(Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY),),
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


def replace_one_delta_prime(
    eps_add_remove: np.ndarray,
    eps_replace_one: np.ndarray,
    delta: float,
    delta_replace_one: np.ndarray,
    *,
    rate: float,
    coupled: bool = True,
) -> np.ndarray:
    """The δ′ that goes with the replace-one bound ``upper_epsilon_replace_one``: that
    of whichever of its three candidates is smallest (``replace_one_candidates``): two
    steps qδ_D(1 + e^{A(q, ε_D)}), the coupling qδ_R, joint convexity q·max(δ_D, δ_R);
    rounded up and capped at 1."""
    e_d = np.asarray(eps_add_remove, dtype=float)
    _, which = replace_one_candidates(e_d, eps_replace_one, rate=rate, coupled=coupled)
    a = numeric.amplification_upper(rate, e_d)
    with np.errstate(over="ignore"):
        two_steps = rate * delta * (1.0 + np.exp(a))
    coupled_delta = rate * delta_replace_one
    convex = rate * np.maximum(delta, delta_replace_one)
    chosen = np.choose(which, np.broadcast_arrays(two_steps, coupled_delta, convex))
    # cap after rounding: a probability stays <= 1 (round_up of 1 would pass it)
    out: np.ndarray = np.minimum(numeric.round_up(chosen), 1.0)
    return out


def replace_one_exact_delta_prime(
    eps_add_remove: np.ndarray,
    eps_replace_one: np.ndarray,
    delta: float,
    delta_replace_one: np.ndarray,
    *,
    rate: float,
) -> np.ndarray:
    """The δ′ that goes with the exact pure-ε value ε′ (``replace_one_exact``) when M is
    (ε_D, δ_D)-DP under add-remove and (ε_R, δ_R)-DP under replace-one, coins coupled.

    Basis: derived (docs/derivations.md §10.3): with X = e^{ε′}, per sample T of the rest and
        event E, a = Pr[M(T) ∈ E], b = Pr[M(T ∪ {x}) ∈ E], c = Pr[M(T ∪ {x′}) ∈ E],
        (1 − q)a + qb − X((1 − q)a + qc) = q(1 − X e^{−ε_R})(b − e^{ε_D}a) +
        qX(e^{−ε_R}b − c) identically (the definition of X makes a's coefficients agree),
        and both multipliers are >= 0 (ε′ <= ε_R); with b − e^{ε_D}a <= δ_D and
        e^{−ε_R}b − c <= e^{−ε_R}δ_R the divergence at ε′ is at most
        q((1 − w)δ_D + wδ_R), w = e^{ε′ − ε_R}. At ε_R = 2ε_D (M's add-remove ε alone)
        the multipliers q and qX e^{−ε_D} on b − e^{ε_D}a and e^{−ε_D}a − c give
        qδ_D(1 + e^{ε′ − ε_D}); the smaller of the two is used there.
    Rounded up and capped at 1.
    """
    e_d = np.asarray(eps_add_remove, dtype=float)
    declared_r = np.asarray(eps_replace_one, dtype=float)
    capped = declared_r >= 2.0 * e_d
    e_r = np.minimum(declared_r, 2.0 * e_d)
    up = replace_one_exact(e_d, e_r, rate=rate)[1]
    with np.errstate(over="ignore", invalid="ignore"):
        w = np.minimum(np.exp(up - e_r), 1.0)
        mixed = rate * ((1.0 - w) * delta + w * np.asarray(delta_replace_one, dtype=float))
        # declared ε_R above 2ε_D: its δ_R is not the one at the capped ε_R
        mixed = np.where(declared_r > 2.0 * e_d, np.inf, mixed)
        add_remove_only = rate * delta * (1.0 + np.exp(up - e_d))
    chosen = np.where(capped, np.minimum(mixed, add_remove_only), mixed)
    chosen = np.where(e_r <= 0.0, 0.0, chosen)
    out: np.ndarray = np.minimum(numeric.round_up(chosen), 1.0)
    return out


def replace_one_theorem(
    rate: float,
    *,
    delta: float = 0.0,
    delta_replace_one: Callable[[np.ndarray], np.ndarray] | None = None,
    conditions: tuple[str, ...] = (),
    coupled: bool = True,
) -> Theorem:
    """The replace-one guarantee (spec §2) at inclusion probability ``rate``, as data:
    formulas in M's (ε_D, ε_R), M required ε-DP under add-remove.

    Pure ε (δ = 0) with ``coupled``: the exact value (``replace_one_exact``), upper and
    lower the same formula. Otherwise the smallest of the derived candidates
    (``replace_one_candidates``) and the exact value as the lower bound (δ = 0), or the
    lower bound at the reported δ′ (δ > 0: no (ε″, δ′) guarantee below it).

    ``delta``: M's δ (add-remove); ``delta_replace_one``: ε_D -> M's δ_R (the declared
    mechanism's rule). ``coupled=False``: the replaced and the replacing record may be
    kept with different probabilities (at most ``rate``), so the coupling is left out.
    """
    q = rate
    delta_r = delta_replace_one
    exact = delta == 0.0 and coupled

    def delta_prime(e_d: np.ndarray, e_r: np.ndarray) -> np.ndarray:
        d_r = np.full(np.shape(e_d), delta) if delta_r is None else delta_r(e_d)
        if coupled:
            return replace_one_exact_delta_prime(e_d, e_r, delta, d_r, rate=q)
        return replace_one_delta_prime(e_d, e_r, delta, d_r, rate=q, coupled=coupled)

    def upper(e_d: np.ndarray, e_r: np.ndarray) -> np.ndarray:
        if coupled:
            return replace_one_exact(e_d, e_r, rate=q)[1]
        return replace_one_candidates(e_d, e_r, rate=q, coupled=coupled)[0]

    def lower(e_d: np.ndarray, e_r: np.ndarray) -> np.ndarray:
        if delta == 0.0:
            return lower_epsilon_replace_one(e_d, e_r, rate=q)
        return lower_epsilon_at_delta(e_d, e_r, delta_prime(e_d, e_r), rate=q)

    return Theorem(
        name="the replace-one guarantee for Poisson sampling",
        basis=(*BASIS, derivation("§1.2")),
        relation=RELATION,
        guarantee=Neighbours.REPLACE_ONE,
        upper=OfPair(upper),
        lower=OfPair(lower),
        conditions=conditions,
        tight=True if exact else None,
        refusals=(Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY),),
        delta_prime=OfPair(delta_prime),
    )


def replace_one_analysis(
    rate: float,
    mechanism: Mechanism,
    *,
    conditions: tuple[str, ...] = (),
    coupled: bool = True,
) -> Analysis:
    """The replace-one guarantee (spec §2) at inclusion probability ``rate``
    (``replace_one_theorem``) for the declared mechanism."""
    q = rate
    exact = mechanism.delta == 0.0 and coupled
    if exact:
        note = (
            "replace-one guarantee for Poisson sampling: exact — log((1 + q(e^ε_D − 1))/"
            "(1 + q(e^{ε_D − ε_R} − 1))): coupling the inclusion coins of the replaced "
            "and the replacing record, each event's probability ratio is at most this, "
            "and a binary output on the count of the replaced record's value attains it "
            f"({DERIVATIONS}, §1.2). ε_R = ε_D gives A(q, ε); ε_R = 2ε_D gives "
            "A(q, ε) − log(1 − q(1 − e^{−ε}))."
        )
    elif coupled:
        note = (
            "replace-one guarantee for Poisson sampling with δ > 0: derived — the pure-ε "
            "value log((1 + q(e^ε_D − 1))/(1 + q(e^{ε_D − ε_R} − 1))) holds with δ′ = "
            "q((1 − w)δ_D + wδ_R), w = e^{ε′ − ε_R} (at ε_R = 2ε_D also qδ_D(1 + "
            f"e^{{ε′ − ε_D}}), the smaller used) ({DERIVATIONS}, §10.3): the coupling's "
            "inequalities combine with the pure case's multipliers. It is below each "
            "earlier candidate (ε_R, A(q, max(ε_D, ε_R)), 2·A(q, ε_D)); the lower bound "
            "is the one at the reported δ′."
        )
    else:
        note = (
            "replace-one guarantee for Poisson sampling with different inclusion "
            "probabilities: derived — min(2·A(q, ε_D), A(q, max(ε_D, ε_R))) with q the "
            f"largest probability: a replacement is a removal plus an addition ({DERIVATIONS}, "
            "§1.2); "
            f"advanced joint convexity ({BBG18}, Theorem 2) on the "
            "mixtures written at the larger probability gives A(q, max(ε_D, ε_R)). The "
            "lower bound is the exact value for a replacement inside the stratum of "
            "largest rate; not tight in general."
        )
    notes = [note]
    if mechanism.neighbours is Neighbours.ADD_REMOVE and mechanism.epsilon_replace_one is None:
        notes.append(
            f"M's replace-one ε taken as ε_R = 2ε = {2 * mechanism.epsilon:g} "
            f"({BUN_2022}, §2.2); the verdict compares against it."
        )
    thm = replace_one_theorem(
        q,
        delta=mechanism.delta,
        delta_replace_one=mechanism.delta_replace_one_of,
        conditions=conditions,
        coupled=coupled,
    )
    return assemble(
        thm,
        mechanism,
        notes=tuple(notes),
        details={"rate": q},
    )


def exact_profile(params: Params, guarantee: Neighbours) -> ExactRemoval | None:
    """Lemma 3.3 maps a named mechanism's add-remove profile exactly, point by point, under
    an add-remove guarantee (δ′ = q·δ_M(ε) at ε′ = A(q, ε), the removal direction
    attaining it); under replace-one no exact map is known (None)."""
    return ExactRemoval(params.rate) if guarantee is Neighbours.ADD_REMOVE else None


def _verify_hook(*args: Any, **kwargs: Any) -> Plan:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.schemes.exact)."""
    from ampcalc.schemes.exact import poisson_instance  # lazy: start-up (bound)

    return poisson_instance(*args, **kwargs)


SCHEME = Scheme(
    name="poisson",
    summary="Poisson sample: each record kept independently with probability q",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.ADD_REMOVE, Neighbours.REPLACE_ONE),
    basis=BASIS,
    analyse=analyse,
    example={"rate": 0.01},
    supports_group_size=True,
    verify_plan=_verify_hook,
    exact_profile=exact_profile,
)


# --- group privacy (group_size > 1) --------------------------------------------------


REFUSES_GROUP_GUARANTEE = (
    "group privacy under Poisson sampling is for adding or removing g records "
    "(add-remove); no replace-one group formula is verified."
)
REFUSES_GROUP_REPLACE_ONE_ONLY = (
    "Poisson group privacy needs M's add-remove ε; declare `neighbours: add-remove` or `both`."
)
REFUSES_GROUP_DELTA = (
    "Poisson group privacy: g·log(1 + q(e^ε − 1)) is for pure ε (δ = 0); no "
    "verified (ε, δ) group bound is implemented."
)


def group_upper_epsilon(eps_add_remove: np.ndarray, *, rate: float, group: int) -> np.ndarray:
    """Upper bound on ε′ for Poisson sampling, adding or removing ``group`` records:
    g·log(1 + q(e^ε − 1)) (g single-record steps), rounded up."""
    return numeric.round_up(group * numeric.amplification_upper(rate, eps_add_remove))


def group_lower_epsilon(eps_add_remove: np.ndarray, *, rate: float, group: int) -> np.ndarray:
    """Lower bound: the same formula (the count witness attains it), rounded down."""
    return numeric.round_down(group * numeric.amplification_lower(rate, eps_add_remove))


def group_inverse_epsilon(target: np.ndarray, *, rate: float, group: int) -> np.ndarray:
    """The ε at which ``group_upper_epsilon`` reaches ``target``, unrounded: the
    single-record inverse at T/g (the assembly rounds and certifies)."""
    return numeric.amplification_inverse(rate, np.asarray(target) / group)


def group_theorem(rate: float, group: int) -> Theorem:
    """Lemma 3.3 of Bun et al. 2020 applied g times (add-remove of g records), as data."""
    q, g = rate, group
    return Theorem(
        name="Lemma 3.3, applied g times",
        basis=(cite(BUN_2020_WP, "Lemma 3.3, applied g times"), derivation("§3.4")),
        relation=RELATION,
        guarantee=Neighbours.ADD_REMOVE,
        upper=group_upper_epsilon,
        lower=group_lower_epsilon,
        inverse=group_inverse_epsilon,
        params={"rate": q, "group": g},
        conditions=(
            f"0 < rate <= 1: rate = {q:g}",
            f"a unit of g = {g} records is added or removed",
        ),
        tight=None,  # tight: stated in ``details`` beside the rate and g
        pure=True,
        group_size=g,
        refusals=(
            Refusal(Refuses.GUARANTEE, REFUSES_GROUP_GUARANTEE),
            Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_GROUP_REPLACE_ONE_ONLY),
            Refusal(Refuses.DELTA, REFUSES_GROUP_DELTA),
        ),
    )


def poisson_group_analysis(
    params: Params, mechanism: Mechanism, guarantee: Neighbours
) -> Analysis:
    """Poisson sampling, adding or removing g records: ε′ = g·log(1 + q(e^ε − 1)).

    Basis: g applications of the single-record bound (Bun et al. 2020, Lemma 3.3; triangle
    inequality) give the upper bound; the count witness attains
        it (exact LPs agree to 4e-15 on 228 instances, exact-lp-checks.md Conjecture 3).
    Neighbours: M ε-DP under add-remove; ε′ under add-remove of g records.
    Conditions: g >= 1; δ = 0.
    Formula: g·log(1 + q(e^ε − 1)) (add direction; removal alone gives
        −g·log(1 − q(1 − e^{−ε})), smaller; both in details).
    Tightness: tight.
    """
    q, g = params.rate, mechanism.group_size
    e0 = float(mechanism.epsilon)
    return assemble(
        group_theorem(q, g),
        mechanism,
        guarantee=guarantee,
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
