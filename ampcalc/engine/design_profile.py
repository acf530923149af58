"""One design's amplified privacy profile, as points: what a ledger composes per release.

``entry_profile(design)`` gives an upper bound on the sampled mechanism's privacy profile
δ′(ε′) (ε′ >= 0) as points on a grid of ε′, every δ′ rounded up:

- a named mechanism M (``gaussian``, ``laplace``, ...): every point (ε, δ_M(ε)) of M's
  profile goes through the scheme's (ε, δ) theorem (``profiles.amplified_point``, the
  path ``ampcalc bound`` takes), e.g. a simple random sample under replace-one maps it
  to ε′ = log(1 + (m/N)(e^ε − 1)), δ′ = (m/N)·δ_M(ε) (Balle, Barthe and Gaboardi 2018).
  Each image is a valid (ε′, δ′) statement, so between two images the chord in e^{ε′}
  is one too (a profile is convex and decreasing in e^{ε′}), and a point holds for
  every larger ε′;
- a pure M (no profile, δ = 0): the amplified pure ε′ (binary randomized response at
  ε′, whose profile dominates every ε′-DP pair: Kairouz, Oh and Viswanath 2015);
- an (ε, δ) M: the amplified (ε′, δ′) as its four-outcome dominating pair's profile.

Combined, pointwise, with every other valid profile of the same entry (the pointwise
minimum of valid profiles of one mechanism is a valid profile):

- a named mechanism that is also pure (Laplace b = 10 is exactly 0.1-DP): the pure
  spelling's amplified ε′, as randomized response;
- item "never looser than the obvious": where a coupling pairs the samples of
  neighbouring populations as neighbours under a relation R (or as equal), the sampled
  mechanism's profile is at most M's own profile under R (joint convexity of the
  hockey-stick divergence over the coupling), so M's own profile caps it
  (``coupling``; docs/budget.md has the table).

Every (ε, δ) theorem here holds for both orders of each neighbouring pair, so the
profile is marked symmetric: its negative-loss side is the symmetric completion
δ(−ε) = 1 − e^{−ε} + e^{−ε}δ(ε) (Dong, Roth and Su, "Gaussian differential privacy",
Proposition 2.12: such a profile is f-DP for the symmetric trade-off function it
induces, and f-DP composes). ``completion`` gives both sides; the ledger turns them
into a pessimistic connect-the-dots privacy-loss distribution (Doroshenko et al. 2022)
with ``accounting.pmf.from_profile_points`` (the greatest convex minorant in e^{ε}, so
that no mass is negative). Poisson sampling under
add-remove has a dominating pair for each direction (Zhu, Dong and Wang 2022); the
ledger builds the Poisson-sampled Gaussian and Laplace from those natively, not here.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc import schemes
from ampcalc.accounting.profiles import Profile, epsilon_at_delta
from ampcalc.engine import core
from ampcalc.engine.profiles import _relation_profile, amplified_point
from ampcalc.math import numeric
from ampcalc.model.design import Design, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BBG18, DGKKM22, DRS22, KOV15, Citation, cite

#: M's ε values first carried through the theorem (a uniform grid to where δ′ is
#: negligible, plus a geometric one near 0); more are inserted where the images are
#: further apart in ε′ than GAP_ABSOLUTE + GAP_RELATIVE·ε′ (at most MAX_INSERT between
#: two, three rounds)
GRID = 400
GAP_ABSOLUTE = 5e-5
GAP_RELATIVE = 0.004
MAX_INSERT = 64

#: the cap: which relation a coupling of the samples of neighbouring populations holds
#: under, per scheme and guarantee relation (``None``: no such coupling is claimed)
COUPLINGS: dict[tuple[str, Neighbours], Neighbours] = {
    # the added record is in the sample or not; every other inclusion is independent
    ("poisson", Neighbours.ADD_REMOVE): Neighbours.ADD_REMOVE,
    # the replaced slot's coin is shared: both in (replace-one) or both out (equal)
    ("poisson", Neighbours.REPLACE_ONE): Neighbours.REPLACE_ONE,
    # the same index set on both populations: equal, or one record replaced
    ("srswor", Neighbours.REPLACE_ONE): Neighbours.REPLACE_ONE,
    # the chosen clusters are the same: the changed cluster is in the sample or not
    ("cluster", Neighbours.ADD_REMOVE): Neighbours.ADD_REMOVE,
}

#: why there is no cap, for the schemes the table names
NO_COUPLING: dict[str, str] = {
    "systematic": "an added or moved record shifts every later position of the fixed order",
    "srswr": "a record drawn with replacement can appear several times in the sample",
    "stratified": "a changed stratum size can change every stratum's allocation",
    "pps": "a changed record changes every unit's inclusion probability",
    "pps-cluster": "a changed record changes every cluster's inclusion probability",
    "random-size": "the sample size's law couples the samples only up to several records",
    "data-dependent-size": "the sample size depends on the data",
}


@dataclass(frozen=True)
class EntryProfile:
    """An upper bound on one release's amplified privacy profile, as points.

    Attributes:
        points: (ε′, δ′) with ε′ >= 0 ascending from 0, δ′ rounded up; between two
            points the chord in e^{ε′} holds, beyond the last its δ′.
        symmetric: the profile holds for both orders of every neighbouring pair (its
            negative side is the symmetric completion).
        pure_epsilon: ε′ when the entry is ε′-DP with δ′ = 0 and nothing tighter is
            known (k copies compose in closed form), else ``None``.
        pure_epsilon_spelled: the amplified ε′ of the entry's pure spelling (a pure
            M, or a named mechanism that is pure, e.g. Laplace), else ``None``.
        delta_prime: δ′ of an (ε′, δ′) entry (its mass at an infinite loss), else 0.
        composed_as: how the entry is composed, in words.
        basis: the works the profile rests on.
        cap: the relation whose M profile caps the entry (``None``: no cap), and
        cap_reason: why (or why not).
    """

    points: tuple[tuple[float, float], ...]
    symmetric: bool
    pure_epsilon: float | None
    delta_prime: float
    pure_epsilon_spelled: float | None
    composed_as: str
    basis: tuple[Citation, ...]
    cap: Neighbours | None
    cap_reason: str

    def delta(self, eps: Any) -> np.ndarray:
        """δ′ at ε′ >= 0 from the points (the chord in e^{ε′}; the last δ′ beyond)."""
        x = np.asarray(eps, dtype=float)
        xs = np.array([p[0] for p in self.points])
        ds = np.array([p[1] for p in self.points])
        return _interp_alpha(xs, ds, x)


def coupling(design: Design) -> tuple[Neighbours | None, str]:
    """The relation under which a coupling pairs the samples of two neighbouring
    populations as neighbours or as equal (``None`` when none is claimed), and why."""
    scheme = design.scheme
    guarantee = design.guarantee or schemes.get(scheme).guarantees[0]
    mech = design.mechanism
    if mech is not None and mech.group_size > 1:
        return None, "a unit of several records changes several records of the sample"
    rel = COUPLINGS.get((scheme, guarantee))
    if rel is None:
        why = NO_COUPLING.get(scheme, f"no coupling is established for {scheme} under {guarantee}")
        return None, why
    if mech is not None and rel is Neighbours.REPLACE_ONE:
        if mech.neighbours is Neighbours.ADD_REMOVE:
            return None, (
                "the coupled samples are replace-one neighbours and M is stated under "
                "add-remove only"
            )
    return rel, f"a coupling pairs the samples as {rel} neighbours or as equal"


def _interp_alpha(xs: np.ndarray, ds: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Upper profile at ``x`` >= 0 from upper points (xs, ds): running minimum (a point
    holds for every larger ε), then the chord in α = e^ε through the anchor (α = 0, 1)
    (a profile is convex in α and at most 1 at α = 0); beyond the last point its δ."""
    order = np.argsort(xs, kind="stable")
    xs, ds = xs[order], np.minimum.accumulate(ds[order])
    a = np.concatenate([[0.0], np.exp(xs)])
    d = np.concatenate([[1.0], ds])
    out = np.interp(np.exp(np.minimum(x, 700.0)), a, d)
    return np.asarray(numeric.round_up(out))


def _rr_delta(eps_prime: float, x: np.ndarray) -> np.ndarray:
    """Binary randomized response at ε′: δ(x) = (e^{ε′} − e^x)₊/(1 + e^{ε′}) for x >= 0."""
    with np.errstate(over="ignore"):
        v = np.maximum(0.0, -np.expm1(x - eps_prime)) / (1.0 + np.exp(-eps_prime))
    return np.asarray(numeric.round_up(np.where(x >= eps_prime, 0.0, v)))


def _pair_delta(eps_prime: float, delta_prime: float, x: np.ndarray) -> np.ndarray:
    """The four-outcome (ε′, δ′) pair: δ′ + (1 − δ′)·(randomized response at ε′)."""
    return np.asarray(
        numeric.round_up(delta_prime + (1.0 - delta_prime) * _rr_delta(eps_prime, x))
    )


def _pure_design(design: Design, pure: float, profile: Profile) -> Design:
    mech = design.mechanism
    assert mech is not None
    changes: dict[str, Any] = {
        "epsilon": pure,
        "delta": 0.0,
        "profile": None,
        "profile_releases": None,
    }
    if mech.neighbours is Neighbours.ADD_REMOVE:
        r1 = profile.replace_one().pure_epsilon
        changes["epsilon_replace_one"] = r1
        changes["delta_replace_one"] = 0.0 if r1 is not None else None
    return dataclasses.replace(design, mechanism=dataclasses.replace(mech, **changes))


def _images(
    design: Design, guarantee: Neighbours, grid: np.ndarray
) -> dict[float, tuple[float, float]]:
    """ε -> (ε′, δ′) for the points of ``grid`` inside the theorem's conditions."""
    out: dict[float, tuple[float, float]] = {}
    for e in grid:
        try:
            ep, dp, _ = amplified_point(design, float(e), guarantee)
        except ConditionError:
            continue
        if math.isfinite(ep) and ep >= 0.0:
            out[float(e)] = (ep, dp)
    return out


def _gap(ep: float) -> float:
    """The widest step in ε′ left between two images near ``ep`` (finer where ε′ is
    small, where many releases' losses add up)."""
    return GAP_ABSOLUTE + GAP_RELATIVE * ep


def _theorem_points(
    design: Design, profile: Profile, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """Images (ε′, δ′) of M's profile points on a grid of ε reaching δ′ <= ``floor``:
    a coarse grid, then points inserted wherever two neighbouring images are further
    apart in ε′ than ``_gap`` allows."""
    guarantee = design.guarantee or schemes.get(design.scheme).guarantees[0]
    pure = profile.pure_epsilon
    top = float(epsilon_at_delta(profile, max(floor, 1e-300))) if pure is None else pure
    images: dict[float, tuple[float, float]] = {}
    for _ in range(8):
        grid = np.unique(
            np.concatenate([np.linspace(0.0, top, GRID), np.geomspace(1e-6, 0.05, 30)])
        )
        images = _images(design, guarantee, grid[grid <= top])
        if not images:
            raise ConditionError("no point of M's profile goes through this scheme's theorem")
        if min(d for _, d in images.values()) <= floor or pure is not None:
            break
        top *= 2.0
    for _ in range(3):
        eps = sorted(images)
        extra: list[float] = []
        for e0, e1 in itertools.pairwise(eps):
            a, b = images[e0][0], images[e1][0]
            n = math.ceil(abs(b - a) / _gap(min(a, b)))
            if n > 1:
                extra.extend(np.linspace(e0, e1, min(n, MAX_INSERT) + 1)[1:-1].tolist())
        if not extra:
            break
        images.update(_images(design, guarantee, np.array(extra)))
    xs = np.array([images[e][0] for e in sorted(images)])
    ds = np.array([images[e][1] for e in sorted(images)])
    return xs, np.asarray(numeric.round_up(ds))


def entry_profile(design: Design, result: Any = None, *, floor: float = 1e-30) -> EntryProfile:
    """The amplified privacy profile of one release of ``design``, as points.

    ``result`` is the design's ``BoundResult`` (used for an M without a named profile:
    its ε′ and δ′); ``floor`` the δ′ down to which a named mechanism's profile is
    followed (what is left above the last point is composed as an infinite loss).

    Raises:
        ConditionError: the design has no (ε′, δ′) upper bound to build a profile from.
    """
    mech = design.mechanism
    if mech is None:
        raise ConditionError("the design has no mechanism")
    rel, why = coupling(design)
    profile: Profile | None = getattr(mech, "profile", None)
    if profile is None:
        return _guarantee_profile(design, result, rel, why)
    return _named_profile(design, profile, rel, why, floor)


def _guarantee_profile(
    design: Design, result: Any, rel: Neighbours | None, why: str
) -> EntryProfile:
    """An M without a named profile: the profile of the dominating pair of the design's
    (ε′, δ′) bound (randomized response at ε′ when δ′ = 0, capped by M's own pure ε
    under the coupling ``rel`` when that is smaller)."""
    if result is None:
        result = core.bound(design)
    if result.upper is None or not math.isfinite(float(result.upper)):
        raise ConditionError(result.error or "the design has no upper bound")
    eps_p = float(result.upper)
    dp = float(result.delta_prime or 0.0)
    cap_eps = own_pure_epsilon(design.mechanism, rel)
    if dp == 0.0 and cap_eps is not None and cap_eps < eps_p:
        eps_p = cap_eps
    x = _x_grid(eps_p)
    if dp == 0.0:
        d = _rr_delta(eps_p, x)
        how = "pure closed form: randomized response at ε′"
    else:
        d = _pair_delta(eps_p, dp, x)
        how = "(ε′, δ′) dominating pair"
    return EntryProfile(
        points=_pairs(x, d),
        symmetric=True,
        pure_epsilon=eps_p if dp == 0.0 else None,
        delta_prime=dp,
        pure_epsilon_spelled=eps_p if dp == 0.0 else None,
        composed_as=how,
        basis=(cite(KOV15, "Theorem 2.4"),),
        cap=rel if dp == 0.0 and cap_eps is not None else None,
        cap_reason=why,
    )


def _named_profile(
    design: Design, profile: Profile, rel: Neighbours | None, why: str, floor: float
) -> EntryProfile:
    """A named M: the minimum of the upper profiles known for one release (the scheme's
    (ε, δ) theorem on each point of M's profile; its pure spelling through randomized
    response; M's own profile under the coupling ``rel``), symmetrically completed."""
    txs, tds = _theorem_points(design, profile, floor)
    sources: list[Any] = [lambda x: _interp_alpha(txs, tds, x)]
    locs = [txs]
    basis = [cite(BBG18)]
    parts = ["the scheme's (ε, δ) theorem on each point of M's profile"]
    pure = profile.pure_epsilon
    spelled: float | None = None
    if pure is not None:
        res = core.bound(_pure_design(design, pure, profile))
        if res.upper is not None and math.isfinite(float(res.upper)) and not res.delta_prime:
            e0 = spelled = float(res.upper)
            sources.append(lambda x, e0=e0: _rr_delta(e0, x))
            locs.append(_x_grid(e0))
            basis.append(cite(KOV15, "Theorem 2.4"))
            parts.append(f"its pure spelling (ε′ = {e0:.6g}, randomized response)")
    cap: Neighbours | None = None
    if rel is not None:
        own = own_profile(design, rel)
        if own is not None:
            cap = rel
            top = float(epsilon_at_delta(own, max(floor, 1e-300)))
            sources.append(lambda x, own=own: np.asarray(own.delta(x), dtype=float))
            locs.append(np.linspace(0.0, top, GRID))
            parts.append(f"M's own {rel} profile (no sampling)")
    x = np.unique(np.concatenate([*locs, [0.0]]))
    x = x[np.isfinite(x) & (x >= 0.0)]
    d = np.min(np.vstack([np.minimum(s(x), 1.0) for s in sources]), axis=0)
    basis.append(cite(DRS22, "Proposition 2.12"))
    basis.append(cite(DGKKM22, "Algorithm 1"))
    how = "symmetric completion of the profile: " + "; minimum with ".join(parts)
    return EntryProfile(
        points=_pairs(x, d),
        symmetric=True,
        pure_epsilon=None,
        delta_prime=0.0,
        pure_epsilon_spelled=spelled,
        composed_as=how,
        basis=tuple(basis),
        cap=cap,
        cap_reason=why,
    )


def own_profile(design: Design, relation: Neighbours) -> Profile | None:
    """The named mechanism M's own profile under ``relation`` (``None``: M has no named
    profile, or its profile under that relation does not follow from the one stated)."""
    mech = design.mechanism
    if mech is None or getattr(mech, "profile", None) is None:
        return None
    try:
        return _relation_profile(mech.profile, mech.neighbours, relation)
    except ConditionError:
        return None


def own_pure_epsilon(mech: Any, rel: Neighbours | None) -> float | None:
    """M's own pure ε under ``rel`` (``None``: not stated, not pure, or no coupling)."""
    if rel is None or mech.delta != 0.0 or mech.releases is not None:
        return None
    if mech.neighbours is Neighbours.BOTH or mech.neighbours is rel:
        return float(mech.epsilon)
    if rel is Neighbours.REPLACE_ONE and mech.epsilon_replace_one is not None:
        if not mech.delta_replace_one:
            return float(mech.epsilon_replace_one)
    return None


def _x_grid(eps_prime: float) -> np.ndarray:
    """0, ε′ and points just past it: where a randomized response's profile has kinks."""
    return np.array([0.0, eps_prime, eps_prime * (1.0 + 1e-12) + 1e-300])


def _pairs(x: np.ndarray, d: np.ndarray) -> tuple[tuple[float, float], ...]:
    d = np.minimum.accumulate(np.clip(d, 0.0, 1.0))
    return tuple((float(a), float(b)) for a, b in zip(x, d, strict=True))


# --------------------------------------------------------------------------------------
# the points a pessimistic connect-the-dots PLD is built from
# --------------------------------------------------------------------------------------


def completion(points: Any) -> tuple[np.ndarray, np.ndarray]:
    """Both sides of a symmetric profile: (ε, δ) for ε >= 0 and the completion
    δ(−ε) = 1 − e^{−ε} + e^{−ε}δ(ε) (rounded up), ascending in ε."""
    p = np.asarray(points, dtype=float)
    x, d = p[:, 0], p[:, 1]
    pos = x > 0.0
    neg_d = np.minimum(
        1.0, np.asarray(numeric.round_up(-np.expm1(-x[pos]) + np.exp(-x[pos]) * d[pos]))
    )
    xs = np.concatenate([-x[pos][::-1], x])
    ds = np.concatenate([neg_d[::-1], d])
    return xs, ds
