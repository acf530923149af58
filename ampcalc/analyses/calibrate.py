"""Noise calibration: the smallest noise scale whose amplified upper bound meets a target.

``solve(design, "sigma" | "scale", T)`` returns

- ``certified``: the smallest noise scale (σ for ``gaussian``/``discrete-gaussian``, the
  scale b for ``laplace``/``discrete-laplace``) whose upper bound on ε′ at the target δ′ is
  at most T, as evaluated (the bound at it is recomputed and reported);
- ``impossible_below``: the largest noise scale whose lower bound on ε′ is at least T
  (where the design has a lower bound): at or below it the target surely fails.

ε′ falls as the noise grows (the profile of every named mechanism falls pointwise with the
noise scale), so both are found by bisection on the floats' bit patterns
(``numeric.first_true``) and are exact to one float for the bounds as evaluated.

Poisson sampling under add-remove has a fast path for the Gaussian: ε′ = A(q, ε_M(δ′/q)),
so σ is found by bisecting the Gaussian profile at the fixed ε₀ = A⁻¹(q, T) (a few
milliseconds); the answer is then checked with the full bound.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ampcalc.accounting import compose
from ampcalc.accounting.profiles import (
    MAX_DISCRETE_SIGMA,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Profile,
    first_true_grid,
    gaussian_delta,
)
from ampcalc.engine.profiles import bound_profile
from ampcalc.math import numeric
from ampcalc.math.search import log_secant_crossing
from ampcalc.model.design import Design, Neighbours, Target
from ampcalc.model.errors import DesignError

KNOBS: dict[str, tuple[type[Any], ...]] = {
    "sigma": (Gaussian, DiscreteGaussian),
    "scale": (Laplace, DiscreteLaplace),
}
#: the noise scales searched, relative to the sensitivity
RANGE = (1e-6, 1e8)
#: relative precision (in log) of the noise of releases composed by the accountant
RELEASES_REL = 1e-4


def _noise(profile: Any, value: float) -> Profile:
    """The named mechanism ``profile`` with its noise scale set to ``value``."""
    if isinstance(profile, Gaussian):
        return Gaussian(sigma=value, sensitivity=profile.sensitivity)
    if isinstance(profile, DiscreteGaussian):
        return DiscreteGaussian(sigma=value, sensitivity=profile.sensitivity)
    if isinstance(profile, Laplace):
        return Laplace(scale=value, sensitivity=profile.sensitivity)
    return DiscreteLaplace(scale=value, sensitivity=profile.sensitivity)


def release_knob(design: Design, knob: str) -> list[int] | None:
    """For a design whose mechanism is named ``releases`` on one sample (more than one
    release in all): the indices of the releases that ``knob`` sets (σ of each Gaussian
    or discrete Gaussian, the scale of each Laplace or discrete Laplace); ``None`` for a
    design without such releases."""
    mech = design.mechanism
    rel = getattr(mech, "named_releases", None)
    if rel is None or sum(c for _, c in rel) <= 1:
        return None
    return [
        j
        for j, (p, _) in enumerate(rel)
        if isinstance(p, KNOBS[knob]) and not (isinstance(p, Gaussian) and p.sigma is None)
    ]


def _with_noise(design: Design, profile: Any, value: float, knob: str | None = None) -> Design:
    """The design with the named mechanism's noise scale set to ``value``; for named
    releases on one sample, the common noise of every release ``knob`` sets (``knob``
    defaults to the one ``profile``'s kind names), the releases composed again."""
    mech = design.mechanism
    assert mech is not None
    if knob is None:
        knob = "sigma" if isinstance(profile, KNOBS["sigma"]) else "scale"
    idx = release_knob(design, knob)
    if idx:
        rel = mech.named_releases
        assert rel is not None
        items = tuple((_noise(p, value) if j in idx else p, c) for j, (p, c) in enumerate(rel))
        try:
            composed = compose.compose(list(items))
        except compose.CompositionError as err:
            raise DesignError(f"design {design.name!r}: {err}", where=design.where) from None
        new_mech = dataclasses.replace(mech, profile=composed, named_releases=items)
        return dataclasses.replace(design, mechanism=new_mech)
    new = _noise(profile, value)
    return dataclasses.replace(design, mechanism=dataclasses.replace(mech, profile=new))


def with_noise(design: Design, value: float) -> Design:
    """The design with its named mechanism's noise scale (σ, or the scale b) set to
    ``value``: the design ``solve`` evaluates at ``value``."""
    mech = design.mechanism
    if mech is None or not isinstance(mech.profile, (*KNOBS["sigma"], *KNOBS["scale"])):
        raise DesignError(f"design {design.name!r} has no named mechanism with a noise scale")
    return _with_noise(design, mech.profile, value)


def solve(
    design: Design, knob: str, target: float, target_delta: float | None = None
) -> dict[str, Any]:
    """Calibrate the design's named mechanism's noise to the target ε′ (at δ′).

    Raises:
        DesignError: the design has no named mechanism with that knob, or no target.
    """
    mech = design.mechanism
    profile: Any = getattr(mech, "profile", None)
    if knob not in KNOBS:
        raise DesignError(f"the noise to solve for is sigma or scale, got {knob!r}")
    idx = release_knob(design, knob)
    if idx is not None:
        return _solve_releases(design, knob, idx, target, target_delta)
    if profile is None or not isinstance(profile, KNOBS[knob]):
        names = {"sigma": "gaussian or discrete-gaussian", "scale": "laplace or discrete-laplace"}
        raise DesignError(
            f"design {design.name!r}: solving for {knob} needs a single named {names[knob]} "
            "mechanism (not releases)"
        )
    if isinstance(profile, Gaussian) and profile.sigma is None:
        raise DesignError(
            f"design {design.name!r}: solving for sigma needs one Gaussian, not composed releases"
        )
    return _search(design, knob, profile, profile, target, target_delta)


def _solve_releases(
    design: Design, knob: str, idx: list[int], target: float, target_delta: float | None
) -> dict[str, Any]:
    """``solve`` for named releases on one sample: the one noise scale shared by every
    release ``knob`` sets (the others kept as written), the releases composed again at
    each scale tried.

    All Gaussian: the composition at a common σ is one Gaussian of sensitivity
    √Σ countᵢ·Δᵢ² (Dong, Roth and Su 2022, Corollary 3.3), so the Poisson fast path
    applies to it. Mixed with other mechanisms: the releases composed as ``bound``
    composes them (the PLD accountant), by bisection.
    """
    mech = design.mechanism
    assert mech is not None and mech.named_releases is not None
    rel = mech.named_releases
    if not idx:
        names = {"sigma": "gaussian or discrete-gaussian", "scale": "laplace or discrete-laplace"}
        kinds = sorted({p.to_dict()["mechanism"] for p, _ in rel})
        raise DesignError(
            f"design {design.name!r}: solving for {knob} needs a named {names[knob]} "
            f"release; its releases are {', '.join(kinds)}"
        )
    first = rel[idx[0]][0]
    guess_profile: Any = None
    if knob == "sigma" and len(idx) == len(rel) and all(isinstance(p, Gaussian) for p, _ in rel):
        # one Gaussian of sensitivity √Σ countᵢ·Δᵢ² at the common σ: the fast path's start
        sens = math.sqrt(math.fsum(c * float(p.sensitivity) ** 2 for p, c in rel))
        guess_profile = Gaussian(sigma=first.sigma, sensitivity=sens)
    out = _search(design, knob, first, guess_profile, target, target_delta)
    solved = sum(rel[j][1] for j in idx)
    total = sum(c for _, c in rel)
    others = total - solved
    out["knob"]["releases"] = solved
    out["notes"].append(
        f"the {total} releases on one sample share the solved {knob}: every "
        + " and ".join(sorted({rel[j][0].to_dict()["mechanism"] for j in idx}))
        + " release is set to it"
        + (f", the other {others} kept as written" if others else "")
        + ", and all are composed before amplification at each value tried"
        + (" (one Gaussian of sensitivity √Σ countᵢ·Δᵢ²)" if guess_profile is not None else "")
    )
    return out


def _search(
    design: Design,
    knob: str,
    profile: Any,
    guess_profile: Any,
    target: float,
    target_delta: float | None,
) -> dict[str, Any]:
    """The search of ``solve``: ``profile`` is the (first) mechanism whose noise is set,
    ``guess_profile`` the one mechanism the Poisson fast path inverts (``None``: none)."""
    design = _targeted(design, target, target_delta)
    lo, hi = _noise_range(profile)
    bounds = _NoiseBounds(design, profile, knob)
    path = "bisection on the bound (relative 1e-9)"
    certified: float | None = None
    guess = None if guess_profile is None else _poisson_guess(design, guess_profile, target)
    if guess is not None:
        certified = _step_until(lambda v: bounds.upper(v) <= target, guess, up=True)
        if certified is not None:
            path = "M's profile inverted at A⁻¹(q, T), checked with the bound"
    if certified is None and bounds.releases:
        # releases composed by the accountant (seconds per value): secant steps on
        # log ε′ against log σ from the noise as written, to RELEASES_REL, each side
        # checked as evaluated
        cert, imp = _secant_sides(bounds.upper, bounds.lower, target, lo, hi, profile, knob)
        at = bounds.upper(cert) if cert is not None else None
        path = f"secant steps on the composed releases' bound (relative {RELEASES_REL:g})"
        return _result(design, knob, profile, target, cert, imp, at, path, bounds.memo, lo, hi)
    if certified is None:
        certified = _bisect(lambda v: bounds.upper(v) <= target, lo, hi)
    up_at = bounds.upper(certified) if certified is not None else None
    impossible = _impossible_noise(design, guess_profile, guess, certified, bounds, target, lo, hi)
    return _result(
        design, knob, profile, target, certified, impossible, up_at, path, bounds.memo, lo, hi
    )


def _targeted(design: Design, target: float, target_delta: float | None) -> Design:
    """``design`` with the target δ′ asked for (if any), once the target is checked.

    Raises:
        DesignError: the target ε′ is not finite and > 0, or the mechanism has δ > 0 at
            every ε and no target δ′ is given.
    """
    if not (math.isfinite(target) and target > 0):
        raise DesignError("target ε′ must be finite and > 0")
    if target_delta is not None:
        design = dataclasses.replace(design, target=Target(delta_prime=target_delta))
    composed: Any = getattr(design.mechanism, "profile", None)
    if composed.pure_epsilon is None and (
        design.target is None or design.target.delta_prime is None
    ):
        raise DesignError(
            f"design {design.name!r}: {composed.describe()} has δ > 0 at every ε: give the "
            "target δ′ (`target_delta`, or `target: {delta_prime: ...}`)"
        )
    return design


def _noise_range(profile: Any) -> tuple[float, float]:
    """The noise scales searched: ``RANGE`` times the sensitivity (the discrete Gaussian's
    σ at most ``MAX_DISCRETE_SIGMA``)."""
    sens = float(profile.sensitivity)
    lo, hi = sens * RANGE[0], sens * RANGE[1]
    if isinstance(profile, DiscreteGaussian):
        hi = min(hi, MAX_DISCRETE_SIGMA)
    return lo, hi


class _NoiseBounds:
    """The design's bounds on ε′ with the noise ``knob`` of ``profile`` set to a value,
    each value evaluated once (``memo``: the bound, or None where released mechanisms
    compose beyond the accountant's limits)."""

    def __init__(self, design: Design, profile: Any, knob: str) -> None:
        self.design = design
        self.profile = profile
        self.knob = knob
        self.releases = bool(release_knob(design, knob))
        self.memo: dict[float, Any] = {}

    def at(self, v: float) -> tuple[float | None, float | None]:
        """(upper, lower) at noise ``v``; (None, None) where there is no bound."""
        memo = self.memo
        if v not in memo:
            try:
                noisy = _with_noise(self.design, self.profile, v, self.knob)
            except DesignError:
                if not self.releases:
                    raise
                # releases whose composition at this noise is above the accountant's
                # limits: no bound there (neither side is claimed)
                memo[v] = None
            else:
                memo[v] = bound_profile(noisy, profile_points=False)
        if memo[v] is None:
            return None, None
        return memo[v].upper, memo[v].lower

    def upper(self, v: float) -> float:
        """The upper bound at noise ``v`` (+∞ where there is none)."""
        up, _ = self.at(v)
        return math.inf if up is None else float(up)

    def lower(self, v: float) -> float:
        """The lower bound at noise ``v`` (−∞ where there is none)."""
        _, low = self.at(v)
        return -math.inf if low is None else float(low)


def _impossible_noise(
    design: Design,
    guess_profile: Any,
    guess: float | None,
    certified: float | None,
    bounds: _NoiseBounds,
    target: float,
    lo: float,
    hi: float,
) -> float | None:
    """The largest noise whose lower bound is >= T (the target surely fails at or below
    it), or None where none in [lo, hi] is found."""
    if guess is not None and certified is not None and bounds.lower(certified) != -math.inf:
        # the Poisson bound is tight: the lower bound crosses T just below ``certified``
        start = _poisson_guess(design, guess_profile, target, lower=True) or certified
        return _step_until(
            lambda v: bounds.lower(v) >= target,
            min(start, certified) * (1.0 - 1e-13),
            up=False,
            rel=1e-13,
        )
    if bounds.lower(lo) != -math.inf:
        first_below = _bisect(lambda v: bounds.lower(v) < target, lo, hi)
        if first_below is not None and first_below > lo:
            return _step_until(lambda v: bounds.lower(v) >= target, first_below, up=False)
    return None


def _secant_sides(
    upper_of: Any,
    lower_of: Any,
    target: float,
    lo: float,
    hi: float,
    profile: Any,
    knob: str,
) -> tuple[float | None, float | None]:
    """(a noise whose upper bound meets ``target``, a noise whose lower bound reaches it),
    each within ``RELEASES_REL`` (in log) of its crossing, checked as evaluated."""
    start = float(profile.sigma if knob == "sigma" else profile.scale)
    certified = log_secant_crossing(upper_of, target, lo, hi, start, rel=RELEASES_REL)
    if certified is None or not upper_of(certified) <= target:
        return None, None

    # the largest noise v with lower(v) >= target: the smallest u = 1/v with
    # target²/lower(1/u) <= target (decreasing in u); no lower bound counts as failing
    def flipped(u: float) -> float:
        low = lower_of(1.0 / u)
        return target * target / low if low > 0 else math.inf

    u = log_secant_crossing(flipped, target, 1.0 / hi, 1.0 / lo, 1.0 / certified, rel=RELEASES_REL)
    impossible = None if u is None else 1.0 / u
    if impossible is not None and not lower_of(impossible) >= target:
        impossible = None
    return certified, impossible


def _result(
    design: Design,
    knob: str,
    profile: Any,
    target: float,
    certified: float | None,
    impossible: float | None,
    up_at: float | None,
    path: str,
    memo: dict[float, Any],
    lo: float,
    hi: float,
) -> dict[str, Any]:
    sens = float(profile.sensitivity)
    tdp = design.target.delta_prime if design.target else None
    warnings: list[str] = []
    notes = [
        f"solved for the {profile.to_dict()['mechanism']} mechanism's {knob} (sensitivity "
        f"{sens:g}): knob.value is the smallest {knob} whose upper bound on ε′ meets the "
        f"target ({path}); at or below knob.impossible_below the lower bound reaches it"
    ]
    if certified is None:
        warnings.append(f"no {knob} in [{lo:g}, {hi:g}] meets the target")
    return {
        "name": design.name,
        "scheme": design.scheme,
        "target": {"epsilon_prime": target, "delta_prime": tdp},
        "epsilon": {"certified": None, "impossible_above": None},
        "delta": None,
        "basis": [
            c.to_dict()
            for c in (
                memo[certified]
                if certified is not None and memo.get(certified) is not None
                else bound_profile(design)
            ).basis
        ],
        "warnings": warnings,
        "notes": notes,
        "details": {"inverse": path},
        "knob": {
            "name": knob,
            "mechanism": profile.to_dict()["mechanism"],
            "sensitivity": sens,
            "value": certified,
            "impossible_below": impossible,
            "epsilon_prime_at_value": up_at,
        },
    }


def _bisect(ok: Any, lo: float, hi: float, rel: float = 1e-9) -> float | None:
    """Smallest noise (to ``rel``) with ``ok`` true, for ``ok`` false-then-true; the
    returned value satisfies ``ok`` as evaluated. ``None`` when ``ok(hi)`` fails."""
    if not ok(hi):
        return None
    if ok(lo):
        return lo
    while hi / lo > 1.0 + rel:
        mid = math.sqrt(lo * hi)
        if mid <= lo or mid >= hi:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _step_until(ok: Any, start: float, *, up: bool, rel: float = 1e-15) -> float | None:
    """From ``start``, step by ``rel`` (up or down) until ``ok`` holds as evaluated."""
    v = start
    for _ in range(200):
        if ok(v):
            return v
        v = v * (1.0 + rel) if up else v * (1.0 - rel)
        rel *= 2.0
    return None


def _poisson_guess(
    design: Design, profile: Any, target: float, *, lower: bool = False
) -> float | None:
    """The noise from inverting M's profile at ε₀ = A⁻¹(q, T) (Poisson, add-remove):
    there ε′ = A(q, ε_M(δ′/q)) exactly, so the smallest noise has δ_M(ε₀) = δ′/q.

    ``lower``: the same for the lower bound (M's lower profile, ε₀ and δ′/q nudged up):
    a start for the largest noise whose lower bound still reaches T."""
    mech = design.mechanism
    if (
        design.scheme != "poisson"
        or not isinstance(profile, (Gaussian, Laplace))
        or mech is None
        or mech.neighbours is Neighbours.REPLACE_ONE
        or design.guarantee not in (None, Neighbours.ADD_REMOVE)
    ):
        return None
    dp = design.target.delta_prime if design.target is not None else None
    if not dp and not isinstance(profile, Laplace):
        return None
    q = float(design.params.rate)
    e0 = float(numeric.amplification_inverse(q, target))
    d = float(dp or 0.0) / q
    if not (math.isfinite(e0) and e0 > 0 and d < 1):
        return None
    if lower:
        e0 = e0 * (1.0 + 1e-12)
        d = float(numeric.round_up(d))
    if isinstance(profile, Laplace):
        # δ_M(ε₀) = 1 − e^{(ε₀ − Δ/b)/2} <= δ′/q  ⇔  b >= Δ/(ε₀ − 2·log(1 − δ′/q)); the
        # check with the bound decides
        b = float(profile.sensitivity) / (e0 - 2.0 * math.log1p(-d))
        b = b * (1.0 - 1e-12) if lower else b
        return b if math.isfinite(b) and b > 0 else None

    # largest μ with δ_μ(ε₀) <= δ′/q (δ grows with μ): the float below the first μ
    # that breaks it; σ = Δ/μ
    first_bad = first_true_grid(lambda m: gaussian_delta(m, e0, upper=not lower) > d, 1e-6, 1e6)
    mu = np.nextafter(first_bad, 0.0)
    mu_f = float(mu)
    if not (math.isfinite(mu_f) and mu_f > 0):
        return None
    return float(profile.sensitivity) / mu_f
