"""A named mechanism's privacy profile carried through a sampling scheme's theorem.

A scheme whose theorem maps an (ε, δ)-DP mechanism to an (ε′, δ′) guarantee is applied
to every point (ε, δ_M(ε)) of M's profile: each point is a valid (ε, δ) statement
about M, so each image (ε′(ε), δ′(ε)) is a valid guarantee for the sampled mechanism.
The sampled profile is reported as those points, and ε′ at the target δ′ is the image
of the smallest profile ε whose δ′ meets the target (ε′ grows with ε and δ′ falls, so
it is the smallest ε′ the theorem gives from M's profile); the chosen point is checked
as evaluated, so the answer is sound even where δ′ is not monotone.

Poisson sampling under add-remove: the removal direction makes the map exact
(H_{e^{ε′}}((1 − q)Q + qP ‖ Q) = q·H_{e^ε}(P ‖ Q) for e^{ε′} = 1 + q(e^ε − 1); Balle,
Barthe and Gaboardi 2018, Theorem 8's tightness), so M's lower profile gives a lower
bound on ε′ at δ′. Elsewhere no lower bound is claimed for a profile mechanism.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ampcalc import schemes
from ampcalc.accounting.profiles import Profile, epsilon_at_delta
from ampcalc.engine import core
from ampcalc.engine.analysis import analyse
from ampcalc.math import numeric
from ampcalc.model.design import Design, Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BALLE_WANG, BBG18, CKS20, DP_ACCOUNTING, DRS22, KOV15, cite
from ampcalc.model.results import BoundResult, Verdict

#: δ_M values of the reported profile points (plus the target's point)
PROFILE_DELTAS = tuple(10.0 ** (-k / 2) for k in range(2, 31))

_SOURCES = {
    "gaussian": (cite(BALLE_WANG, "Theorem 8"),),
    "laplace": (),
    "discrete-laplace": (),
    "discrete-gaussian": (cite(CKS20, "Theorem 7"),),
    "randomized-response": (cite(KOV15),),
    "zcdp": (cite(CKS20, "Corollary 13"),),
    "pure-composition": (cite(KOV15),),
    "accountant-composition": (cite(DP_ACCOUNTING, "privacy loss distributions (PLD)"),),
}


def _relation_profile(profile: Profile, declared: Neighbours, relation: Neighbours) -> Profile:
    """M's profile under ``relation`` from the one stated under ``declared``."""
    if declared is Neighbours.BOTH or declared is relation:
        return profile
    if declared is Neighbours.ADD_REMOVE and relation is Neighbours.REPLACE_ONE:
        return profile.replace_one()
    raise ConditionError(
        f"M's sensitivity is stated under {declared}; its {relation} profile does not "
        "follow from it (state it under `neighbours: add-remove` or `both`)"
    )


def point_mechanism(mech: Mechanism, eps: float, *, replace_one: bool = True) -> Mechanism:
    """The (ε, δ_M(ε)) mechanism of one profile point, with M's replace-one point
    (2ε, δ_R(2ε)) from its replace-one profile when M is stated under add-remove.

    ``replace_one=False`` leaves M's replace-one parameters to the model's defaults
    (2ε and group privacy's (1 + e^ε)δ, both valid): for add-remove guarantees, which
    do not use them, it saves evaluating the replace-one profile.
    """
    profile: Profile = mech.profile
    delta = float(profile.delta(eps))
    changes: dict[str, Any] = {
        "epsilon": eps,
        "delta": delta,
        "profile": None,
        "profile_releases": None,
    }
    if mech.neighbours is Neighbours.ADD_REMOVE and replace_one:
        changes["epsilon_replace_one"] = 2.0 * eps
        changes["delta_replace_one"] = float(profile.replace_one().delta(2.0 * eps))
    return dataclasses.replace(mech, **changes)


def amplified_point(
    design: Design, eps: float, guarantee: Neighbours | None = None
) -> tuple[float, float, Any]:
    """(ε′, δ′, analysis): the scheme's (ε, δ) theorem applied to the point
    (ε, δ_M(ε)) of the design's named mechanism M (under ``guarantee``, the scheme's
    first relation unless given). Each image is a valid (ε′, δ′) guarantee of the
    sampled mechanism: the points ``bound_profile`` reports, and what a ledger composes.

    Raises:
        ConditionError: the point is outside the theorem's conditions, or the theory
            gives no (ε′, δ′) upper bound for the design.
    """
    mech = design.mechanism
    assert mech is not None and mech.profile is not None
    if guarantee is None:
        guarantee = design.guarantee or schemes.get(design.scheme).guarantees[0]
    point = point_mechanism(mech, eps, replace_one=guarantee is not Neighbours.ADD_REMOVE)
    analysis = analyse(design, point)
    if analysis.upper is None or analysis.delta_prime is None:
        raise ConditionError("the theory gives no (ε′, δ′) upper bound for this design")
    e = np.asarray(eps, dtype=float)
    up = float(analysis.upper(e))
    dp = float(np.clip(analysis.delta_prime(e), 0.0, 1.0))
    return up, dp, analysis


def _refusal(design: Design, message: str) -> BoundResult:
    return core.failed(design, ConditionError(message), "bound")


def _meets_or_raises(cached: Any, eps: float, target_delta: float) -> bool:
    """Whether the point at ``eps`` meets δ′; the scheme's ``ConditionError`` passes."""
    return bool(cached(eps)[1] <= target_delta)


def _first_near(meets: Any, guess: float | None, cap: float) -> float | None:
    """The smallest float ε near ``guess`` at which ``meets`` turns true (exact to the
    last bit for the predicate as evaluated, like ``numeric.first_true``), found from a
    bracket of a few ulps around the guess; ``None`` when no bracket within a relative
    1e-6 of the guess has ``meets`` false at its bottom and true at its top (the caller
    then bisects from 1e-300)."""
    if guess is None or not (0.0 < guess <= cap):
        return None

    def ok(x: float) -> bool:
        return bool(meets(np.asarray(x)).item())

    r = 1e-15
    if ok(guess):
        while r < 1e-6:
            lo = guess * (1.0 - r)
            if not ok(lo):
                return float(numeric.first_true(meets, lo, guess))
            r *= 16.0
        return None
    while r < 1e-6:
        hi = min(guess * (1.0 + r), cap)
        if ok(hi):
            return float(numeric.first_true(meets, guess, hi))
        if hi >= cap:
            return None
        r *= 16.0
    return None


def _least_epsilon(
    meets: Any,
    cached: Any,
    profile: Profile,
    pure: float | None,
    target_delta: float,
    guess: Any,
) -> float | None:
    """The smallest profile ε of M whose point, through the scheme's theorem, meets δ′
    (``meets``; ``cached(ε)`` is the point's (ε′, δ′, analysis), ``guess()`` a first
    guess or None): the pure ε when it meets δ′ and no smaller one does; ``None`` for
    δ′ = 0 and an M that is not pure; not finite when no point meets δ′. A
    ``ConditionError`` of the scheme passes."""
    if target_delta == 0.0 or (pure is not None and _meets_or_raises(cached, pure, target_delta)):
        if pure is None:
            return None
        # the pure point (ε₀, 0); a smaller profile ε may meet δ′ > 0 too
        chosen = pure
        cached(pure)  # the scheme's refusal of the pure point is the answer
        if target_delta > 0.0:
            near = _first_near(meets, guess(), pure)
            chosen = near if near is not None else float(numeric.first_true(meets, 1e-300, pure))
        return chosen
    near = _first_near(meets, guess(), math.inf)
    if near is not None:
        return near
    hi = float(epsilon_at_delta(profile, target_delta))
    for _ in range(60):
        if meets(np.asarray(max(hi, 1e-300))).item() or hi > 1e7:
            break
        hi = hi * 2.0 + 1e-3
    return float(numeric.first_true(meets, 1e-300, max(hi, 1e-300)))


def bound_profile(
    design: Design, epsilon: Any = None, *, profile_points: bool = True
) -> BoundResult:
    """``engine.bound`` for a design whose mechanism is a named (profile) mechanism.

    ``profile_points=False`` skips the sampled profile (``details.profile`` is empty)
    and M's own ε (``details.reference_epsilon`` is null, the verdict inconclusive): the
    calibration's inner loop needs ε′ at δ′ and its lower bound only.
    """
    mech = design.mechanism
    assert mech is not None and mech.profile is not None
    profile: Profile = mech.profile
    scheme = schemes.get(design.scheme)
    guarantee = design.guarantee or scheme.guarantees[0]
    if epsilon is not None:
        return _refusal(
            design,
            "a named mechanism fixes its own privacy profile: vary its noise scale (e.g. "
            "`mechanism.gaussian.sigma`), not M's ε",
        )
    target = design.target.delta_prime if design.target is not None else None
    pure = profile.pure_epsilon
    if target is None and pure is None:
        return _refusal(
            design,
            f"{profile.describe()} has δ > 0 at every ε: give the target δ′ as "
            "`target: {delta_prime: ...}`",
        )
    target_delta = 0.0 if target is None else float(target)

    def amplified(eps: float) -> tuple[float, float, Any]:
        return amplified_point(design, eps, guarantee)

    poisson_guesses: list[float | None] = []

    def poisson_guess() -> float | None:
        """Where M's point meets δ′ for Poisson sampling under add-remove (δ′ = q·δ_M(ε)
        there): M's ε at δ′/q; ``_first_near`` checks it as evaluated."""
        if poisson_guesses:
            return poisson_guesses[0]
        h: float | None = None
        q = float(design.params.rate) if design.scheme == "poisson" else 0.0
        if guarantee is Neighbours.ADD_REMOVE and 0.0 < q <= 1.0 and 0.0 < target_delta < q:
            h = float(epsilon_at_delta(profile, target_delta / q))
            h = h if math.isfinite(h) and h > 0.0 else None
        poisson_guesses.append(h)
        return h

    # a profile point with δ > 0 needs the scheme's (ε, δ) theorem
    try:
        if pure is None:
            probe_eps = poisson_guess()
            if probe_eps is None:
                probe_eps = float(epsilon_at_delta(profile, 1e-6))
        else:
            probe_eps = pure
        if pure is None:
            amplified(max(probe_eps, 1e-6))
    except ConditionError as err:
        return _refusal(
            design,
            f"the {design.scheme} scheme has no (ε, δ) theorem this mechanism's profile can "
            f"go through ({err.message}); {profile.describe()} has δ > 0 at every ε",
        )

    try:
        relation_profile = _relation_profile(profile, mech.neighbours, guarantee)
    except ConditionError:
        relation_profile = None  # the scheme's own conditions decide (e.g. Poisson)

    cache: dict[float, tuple[float, float, Any]] = {}

    def cached(eps: float) -> tuple[float, float, Any]:
        if eps not in cache:
            cache[eps] = amplified(eps)
        return cache[eps]

    def meets(x: np.ndarray) -> np.ndarray:
        flat = np.asarray(x, dtype=float).reshape(-1)
        out = np.zeros(flat.shape, dtype=bool)
        for i, v in enumerate(flat):
            try:
                out[i] = cached(float(v))[1] <= target_delta
            except ConditionError:  # a point outside the theorem's conditions: unusable
                out[i] = False
        return out.reshape(np.shape(x))

    try:
        chosen = _least_epsilon(meets, cached, profile, pure, target_delta, poisson_guess)
        if chosen is None:
            return _refusal(design, "δ′ = 0 needs a pure mechanism (δ_M(ε) = 0 somewhere)")
        if not math.isfinite(chosen):
            return _refusal(
                design,
                f"no point of M's profile gives δ′ <= {target_delta:g} through this scheme's "
                "theorem",
            )
        eps_prime, dp_chosen, analysis = cached(chosen)
    except ConditionError as err:
        return _refusal(design, err.message)

    points = _sampled_points(profile, chosen, pure, cached) if profile_points else []
    lower, poisson_exact = _poisson_lower(design, guarantee, mech, profile, target_delta)
    reference: float | None = None
    if relation_profile is not None and profile_points:
        reference = float(epsilon_at_delta(relation_profile, target_delta))
    return _profile_result(
        design,
        analysis,
        chosen=chosen,
        eps_prime=eps_prime,
        dp_chosen=dp_chosen,
        target_delta=target_delta,
        points=points,
        lower=lower,
        poisson_exact=poisson_exact,
        reference=reference,
    )


def _sampled_points(
    profile: Profile, chosen: float, pure: float | None, cached: Any
) -> list[list[float]]:
    """The sampled profile: the images (ε′, δ′) of M's profile points at
    ``PROFILE_DELTAS``, the chosen ε and the pure ε, sorted by ε′ (a point outside the
    theorem's conditions is left out)."""
    grid_eps = np.unique(
        np.concatenate(
            [
                np.asarray(epsilon_at_delta(profile, np.array(PROFILE_DELTAS))),
                [chosen] + ([pure] if pure is not None else []),
            ]
        )
    )
    points: list[list[float]] = []
    for e in grid_eps:
        if not math.isfinite(float(e)) or e <= 0.0:
            continue
        try:
            ep, dp, _ = cached(float(e))
        except ConditionError:
            continue
        points.append([ep, dp])
    points.sort(key=lambda p: p[0])
    return points


def _poisson_lower(
    design: Design, guarantee: Neighbours, mech: Mechanism, profile: Profile, target_delta: float
) -> tuple[float | None, bool]:
    """The lower bound on ε′ (None but for Poisson sampling under add-remove of an
    add-remove M: the exact removal direction), and whether the design is that
    Poisson case."""
    poisson_exact = design.scheme == "poisson" and guarantee is Neighbours.ADD_REMOVE
    if not poisson_exact or mech.neighbours is Neighbours.REPLACE_ONE:
        return None, poisson_exact
    q = float(design.params.rate)
    d_m = float(numeric.round_up(target_delta / q)) if target_delta > 0 else 0.0
    e_low = epsilon_at_delta(profile, d_m, lower=True)
    return max(float(numeric.amplification_lower(q, e_low)), 0.0), poisson_exact


def _profile_notes(
    mech: Mechanism,
    profile: Profile,
    chosen: float,
    target_delta: float,
    lower: float | None,
    poisson_exact: bool,
) -> list[str]:
    """The notes ``bound_profile`` adds to the theorem's: how M's profile went through
    it, composed releases, and why there is no lower bound."""
    notes = [
        f"M is {profile.describe()} under {mech.neighbours}: its privacy profile is carried "
        f"through the scheme's (ε, δ) theorem point by point; ε′ at δ′ = {target_delta:g} "
        f"comes from M's point (ε = {chosen:.10g}, δ = {float(profile.delta(chosen)):.6g})"
    ]
    if mech.profile_releases is not None and mech.profile_releases > 1:
        notes.append(
            f"the {mech.profile_releases} releases run on one sample are composed before "
            "amplification (one privacy profile), then amplified once"
        )
    if lower is None:
        notes.append(
            "no lower bound: the scheme's lower bounds are over all (ε, δ) mechanisms, "
            "not this one"
            if not poisson_exact
            else "no lower bound: M's add-remove profile is unknown"
        )
    return notes


def _profile_result(
    design: Design,
    analysis: Any,
    *,
    chosen: float,
    eps_prime: float,
    dp_chosen: float,
    target_delta: float,
    points: list[list[float]],
    lower: float | None,
    poisson_exact: bool,
    reference: float | None,
) -> BoundResult:
    """``bound_profile``'s result at M's chosen profile point: the verdict, the notes on
    how the profile went through the theorem, the sources and the details."""
    mech = design.mechanism
    assert mech is not None and mech.profile is not None
    profile: Profile = mech.profile
    upper_arr = np.asarray(eps_prime)
    verdict = core.verdicts(
        None if lower is None else np.asarray(lower),
        upper_arr,
        np.asarray(reference if reference is not None else math.inf),
    ).item()
    if reference is None:
        verdict = Verdict.INCONCLUSIVE.value  # M's own ε under that relation is unknown
    warnings = list(analysis.warnings)
    notes = [
        *analysis.notes,
        *_profile_notes(mech, profile, chosen, target_delta, lower, poisson_exact),
    ]
    basis = (*analysis.basis, *_SOURCES.get(profile.to_dict()["mechanism"], ()))
    if mech.profile_releases is not None and "gaussian" in profile.to_dict()["mechanism"]:
        basis = (*basis, cite(DRS22, "Corollary 3.3"))
    details: dict[str, Any] = dict(analysis.details)
    details.update(
        {
            "mechanism": profile.to_dict(),
            "mechanism_neighbours": str(mech.neighbours),
            "profile": points,
            "profile_point": {
                "epsilon": chosen,
                "delta": float(profile.delta(chosen)),
                "delta_prime": dp_chosen,
            },
            "reference_epsilon": reference,
            "lower_bound": "exact removal direction" if lower is not None else None,
        }
    )
    if poisson_exact:
        details.setdefault("tight", True)
    return BoundResult(
        name=design.name,
        scheme=design.scheme,
        epsilon=chosen,
        delta=float(profile.delta(chosen)),
        lower=lower,
        upper=eps_prime,
        delta_prime=target_delta,
        verdict=verdict,
        epsilon_replace_one=None,
        guarantee_neighbours=str(analysis.guarantee_neighbours),
        basis=basis if any(c.reference is BBG18 for c in basis) else (*basis, cite(BBG18)),
        conditions=analysis.conditions,
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
    )
