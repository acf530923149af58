"""A named mechanism's privacy profile carried through a sampling scheme's theorem.

A scheme whose theorem maps an (ε, δ)-DP mechanism to an (ε′, δ′) guarantee is applied
to every point (ε, δ_M(ε)) of M's profile: each point is a valid (ε, δ) statement
about M, so each image (ε′(ε), δ′(ε)) is a valid guarantee for the sampled mechanism.
The sampled profile is reported as those points, and ε′ at the target δ′ is the image
of the smallest profile ε whose δ′ meets the target (ε′ grows with ε and δ′ falls, so
it is the smallest ε′ the theorem gives from M's profile); the chosen point is checked
as evaluated, so the answer is sound even where δ′ is not monotone.

Where the scheme's theorem maps the profile exactly (``Scheme.exact_profile``: Poisson
sampling under add-remove, whose removal direction is exact; Balle, Barthe and
Gaboardi 2018, Theorem 8's tightness), M's lower profile gives a lower bound on ε′ at
δ′. Elsewhere no lower bound is claimed for a profile mechanism. How M's profile and
its points read under another relation is the assembly's (``assembly.profile_under``,
``assembly.profile_point``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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
from ampcalc.schemes.assembly import profile_point, profile_under
from ampcalc.schemes.base import ExactRemoval

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
    """M's profile under ``relation`` from the one stated under ``declared``
    (``assembly.profile_under``), typed as a ``Profile``."""
    out: Profile = profile_under(profile, declared, relation)
    return out


_FIXED_PROFILE = (
    "a named mechanism fixes its own privacy profile: vary its noise scale (e.g. "
    "`mechanism.gaussian.sigma`), not M's ε"
)


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
    point = profile_point(mech, eps, replace_one=guarantee is not Neighbours.ADD_REMOVE)
    analysis = analyse(design, point)
    if analysis.upper is None or analysis.delta_prime is None:
        raise ConditionError("the theory gives no (ε′, δ′) upper bound for this design")
    e = np.asarray(eps, dtype=float)
    up = float(analysis.upper(e))
    dp = float(np.clip(analysis.delta_prime(e), 0.0, 1.0))
    return up, dp, analysis


@dataclass
class _ProfileSearch:
    """M's profile points through the scheme's theorem under one guarantee, each image
    evaluated once, and what the search for the chosen point asks of them.

    Attributes:
        design: the design (its mechanism is a named one).
        guarantee: the relation ε′ is asked under.
        target_delta: δ′ (0 for a pure M without a target).
        exact: the scheme's exact map of M's profile under ``guarantee``, or None.
    """

    design: Design
    guarantee: Neighbours
    target_delta: float
    exact: ExactRemoval | None
    _images: dict[float, tuple[float, float, Any]] = field(default_factory=dict)
    _guesses: list[float | None] = field(default_factory=list)

    @classmethod
    def of(cls, design: Design, target_delta: float) -> _ProfileSearch:
        """The search for ``design`` under its guarantee (the scheme's first unless set)."""
        scheme = schemes.get(design.scheme)
        guarantee = design.guarantee or scheme.guarantees[0]
        hook = scheme.exact_profile
        exact = None if hook is None else hook(design.params, guarantee)
        return cls(design, guarantee, target_delta, exact)

    @property
    def profile(self) -> Profile:
        mech = self.design.mechanism
        assert mech is not None and mech.profile is not None
        profile: Profile = mech.profile
        return profile

    def amplified(self, eps: float) -> tuple[float, float, Any]:
        """The image (ε′, δ′, analysis) of M's point at ``eps``, evaluated afresh."""
        return amplified_point(self.design, eps, self.guarantee)

    def point(self, eps: float) -> tuple[float, float, Any]:
        """The image of M's point at ``eps``, evaluated once."""
        if eps not in self._images:
            self._images[eps] = self.amplified(eps)
        return self._images[eps]

    def meets(self, x: np.ndarray) -> np.ndarray:
        """Whether each point's δ′ meets the target (a point outside the theorem's
        conditions is unusable: False)."""
        flat = np.asarray(x, dtype=float).reshape(-1)
        out = np.zeros(flat.shape, dtype=bool)
        for i, v in enumerate(flat):
            try:
                out[i] = self.point(float(v))[1] <= self.target_delta
            except ConditionError:
                out[i] = False
        return out.reshape(np.shape(x))

    def guess(self) -> float | None:
        """Where M's point meets δ′ through an exact map (M's ε at the δ it gives,
        ``_first_near`` checks it as evaluated), or None; computed once."""
        if not self._guesses:
            h: float | None = None
            d_m = None if self.exact is None else self.exact.guess_delta(self.target_delta)
            if d_m is not None:
                h = float(epsilon_at_delta(self.profile, d_m))
                h = h if math.isfinite(h) and h > 0.0 else None
            self._guesses.append(h)
        return self._guesses[0]


def _refusal(design: Design, message: str) -> BoundResult:
    return core.failed(design, ConditionError(message), "bound")


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


def _least_epsilon(search: _ProfileSearch) -> float | None:
    """The smallest profile ε of M whose point, through the scheme's theorem, meets δ′:
    the pure ε when it meets δ′ and no smaller one does; ``None`` for δ′ = 0 and an M
    that is not pure; not finite when no point meets δ′. A ``ConditionError`` of the
    scheme passes."""
    meets, profile, target_delta = search.meets, search.profile, search.target_delta
    pure = profile.pure_epsilon
    if target_delta == 0.0 or (pure is not None and search.point(pure)[1] <= target_delta):
        if pure is None:
            return None
        # the pure point (ε₀, 0); a smaller profile ε may meet δ′ > 0 too
        chosen = pure
        search.point(pure)  # the scheme's refusal of the pure point is the answer
        if target_delta > 0.0:
            near = _first_near(meets, search.guess(), pure)
            chosen = near if near is not None else float(numeric.first_true(meets, 1e-300, pure))
        return chosen
    near = _first_near(meets, search.guess(), math.inf)
    if near is not None:
        return near
    hi = float(epsilon_at_delta(profile, target_delta))
    for _ in range(60):
        if meets(np.asarray(max(hi, 1e-300))).item() or hi > 1e7:
            break
        hi = hi * 2.0 + 1e-3
    return float(numeric.first_true(meets, 1e-300, max(hi, 1e-300)))


def _target_delta(design: Design, profile: Profile) -> float | None:
    """δ′ to answer at: the target's, 0 for a pure M without one; None: M is not pure
    and no target is given."""
    target = design.target.delta_prime if design.target is not None else None
    if target is None and profile.pure_epsilon is None:
        return None
    return 0.0 if target is None else float(target)


def _theorem_refusal(search: _ProfileSearch) -> BoundResult | None:
    """The refusal when M's profile cannot go through the scheme's theorem: M has δ > 0
    at every ε and a point of it (where an exact map meets δ′, else at δ_M = 1e-6) is
    outside the theorem's conditions; None when it can."""
    profile = search.profile
    if profile.pure_epsilon is not None:
        return None
    try:
        probe_eps = search.guess()
        if probe_eps is None:
            probe_eps = float(epsilon_at_delta(profile, 1e-6))
        search.amplified(max(probe_eps, 1e-6))
    except ConditionError as err:
        return _refusal(
            search.design,
            f"the {search.design.scheme} scheme has no (ε, δ) theorem this mechanism's "
            f"profile can go through ({err.message}); {profile.describe()} has δ > 0 at "
            "every ε",
        )
    return None


def _chosen_epsilon(search: _ProfileSearch) -> float:
    """M's profile ε whose image answers ε′ at δ′ (``_least_epsilon``).

    Raises:
        ConditionError: no point of M's profile meets δ′ (δ′ = 0 and M not pure, or
            none through the theorem), or the scheme refuses the point.
    """
    chosen = _least_epsilon(search)
    if chosen is None:
        raise ConditionError("δ′ = 0 needs a pure mechanism (δ_M(ε) = 0 somewhere)")
    if not math.isfinite(chosen):
        raise ConditionError(
            f"no point of M's profile gives δ′ <= {search.target_delta:g} through this "
            "scheme's theorem"
        )
    return chosen


def _reference_epsilon(
    mech: Mechanism, guarantee: Neighbours, target_delta: float
) -> float | None:
    """M's own ε at δ′ under the guarantee's relation (the verdict's reference), or None
    where M's profile under it is unknown."""
    try:
        relation_profile = _relation_profile(mech.profile, mech.neighbours, guarantee)
    except ConditionError:
        return None  # the scheme's own conditions decide (e.g. Poisson)
    return float(epsilon_at_delta(relation_profile, target_delta))


def _exact_lower(
    exact: ExactRemoval | None, mech: Mechanism, profile: Profile, target_delta: float
) -> float | None:
    """The lower bound on ε′ at δ′ through the scheme's exact map of M's add-remove
    profile (its lower profile at the δ the map gives), or None: no exact map, or M's
    add-remove profile is unknown."""
    if exact is None or mech.neighbours is Neighbours.REPLACE_ONE:
        return None
    e_low = epsilon_at_delta(profile, exact.lower_delta(target_delta), lower=True)
    return exact.lower(e_low)


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
    if epsilon is not None:
        return _refusal(design, _FIXED_PROFILE)
    target_delta = _target_delta(design, profile)
    if target_delta is None:
        return _refusal(
            design,
            f"{profile.describe()} has δ > 0 at every ε: give the target δ′ as "
            "`target: {delta_prime: ...}`",
        )
    search = _ProfileSearch.of(design, target_delta)
    refused = _theorem_refusal(search)
    if refused is not None:
        return refused
    try:
        chosen = _chosen_epsilon(search)
        eps_prime, dp_chosen, analysis = search.point(chosen)
    except ConditionError as err:
        return _refusal(design, err.message)
    points = _sampled_points(profile, chosen, search.point) if profile_points else []
    return _profile_result(
        design,
        analysis,
        chosen=chosen,
        eps_prime=eps_prime,
        dp_chosen=dp_chosen,
        target_delta=target_delta,
        points=points,
        lower=_exact_lower(search.exact, mech, profile, target_delta),
        exact=search.exact is not None,
        reference=(
            _reference_epsilon(mech, search.guarantee, target_delta) if profile_points else None
        ),
    )


def _sampled_points(profile: Profile, chosen: float, cached: Any) -> list[list[float]]:
    """The sampled profile: the images (ε′, δ′) of M's profile points at
    ``PROFILE_DELTAS``, the chosen ε and the pure ε, sorted by ε′ (a point outside the
    theorem's conditions is left out)."""
    pure = profile.pure_epsilon
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


def _profile_notes(
    mech: Mechanism,
    profile: Profile,
    chosen: float,
    target_delta: float,
    lower: float | None,
    exact: bool,
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
            if not exact
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
    exact: bool,
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
        *_profile_notes(mech, profile, chosen, target_delta, lower, exact),
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
    if exact:
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
