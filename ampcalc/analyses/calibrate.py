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
from ampcalc.model.design import Design, Neighbours, Target
from ampcalc.model.errors import DesignError

KNOBS: dict[str, tuple[type[Any], ...]] = {
    "sigma": (Gaussian, DiscreteGaussian),
    "scale": (Laplace, DiscreteLaplace),
}
#: the noise scales searched, relative to the sensitivity
RANGE = (1e-6, 1e8)


def _with_noise(design: Design, profile: Any, value: float) -> Design:
    """The design with the named mechanism's noise scale set to ``value``."""
    mech = design.mechanism
    assert mech is not None
    new: Profile
    if isinstance(profile, Gaussian):
        new = Gaussian(sigma=value, sensitivity=profile.sensitivity)
    elif isinstance(profile, DiscreteGaussian):
        new = DiscreteGaussian(sigma=value, sensitivity=profile.sensitivity)
    elif isinstance(profile, Laplace):
        new = Laplace(scale=value, sensitivity=profile.sensitivity)
    else:
        new = DiscreteLaplace(scale=value, sensitivity=profile.sensitivity)
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
    if not (math.isfinite(target) and target > 0):
        raise DesignError("target ε′ must be finite and > 0")
    if target_delta is not None:
        design = dataclasses.replace(design, target=Target(delta_prime=target_delta))
    if profile.pure_epsilon is None and (
        design.target is None or design.target.delta_prime is None
    ):
        raise DesignError(
            f"design {design.name!r}: {profile.describe()} has δ > 0 at every ε: give the "
            "target δ′ (`target_delta`, or `target: {delta_prime: ...}`)"
        )
    sens = float(profile.sensitivity)
    lo, hi = sens * RANGE[0], sens * RANGE[1]
    if isinstance(profile, DiscreteGaussian):
        hi = min(hi, MAX_DISCRETE_SIGMA)

    memo: dict[float, Any] = {}

    def bounds_at(v: float) -> tuple[float | None, float | None]:
        if v not in memo:
            memo[v] = bound_profile(_with_noise(design, profile, v), profile_points=False)
        return memo[v].upper, memo[v].lower

    def upper_of(v: float) -> float:
        up, _ = bounds_at(v)
        return math.inf if up is None else float(up)

    def lower_of(v: float) -> float:
        _, low = bounds_at(v)
        return -math.inf if low is None else float(low)

    path = "bisection on the bound (relative 1e-9)"
    certified: float | None = None
    guess = _poisson_guess(design, profile, target)
    if guess is not None:
        certified = _step_until(lambda v: upper_of(v) <= target, guess, up=True)
        if certified is not None:
            path = "M's profile inverted at A⁻¹(q, T), checked with the bound"
    if certified is None:
        certified = _bisect(lambda v: upper_of(v) <= target, lo, hi)
    up_at = upper_of(certified) if certified is not None else None
    impossible: float | None = None
    if guess is not None and certified is not None and lower_of(certified) != -math.inf:
        # the Poisson bound is tight: the lower bound crosses T just below ``certified``
        start = _poisson_guess(design, profile, target, lower=True) or certified
        impossible = _step_until(
            lambda v: lower_of(v) >= target,
            min(start, certified) * (1.0 - 1e-13),
            up=False,
            rel=1e-13,
        )
    elif lower_of(lo) != -math.inf:
        # largest noise whose lower bound is >= T: the target surely fails at or below it
        first_below = _bisect(lambda v: lower_of(v) < target, lo, hi)
        if first_below is not None and first_below > lo:
            impossible = _step_until(lambda v: lower_of(v) >= target, first_below, up=False)
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
            for c in (memo[certified] if certified in memo else bound_profile(design)).basis
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
