"""The profile path's scheme knowledge and the assembly's shared conversion/certification.

Oracles, computed here without ampcalc's kernels:

- the Gaussian mechanism's exact profile (Balle and Wang 2018, Theorem 8), with
  μ = sensitivity/σ: δ_M(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (scipy);
- Poisson sampling under add-remove maps each point exactly (Balle, Barthe and Gaboardi
  2018, Theorem 8's tightness): ε′ = log(1 + q(e^ε − 1)), δ′ = q·δ_M(ε);
- a certified ε is one-sided: the bound at it meets the target, the next float's may not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import ampcalc
from ampcalc import engine
from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.schemes import assembly, get
from ampcalc.schemes.base import ExactRemoval


def _gaussian_delta(mu: float, eps: float) -> float:
    return float(
        stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)
    )


def _gaussian_poisson(rate: float, target: float, guarantee: str | None = None) -> ampcalc.Design:
    doc: dict = {
        "mechanism": {"gaussian": {"sigma": 1.0}, "neighbours": "add-remove"},
        "sampling": {"scheme": "poisson", "rate": rate},
        "target": {"delta_prime": target},
    }
    if guarantee is not None:
        doc["guarantee"] = guarantee
    return ampcalc.load_design(doc)


def test_poisson_states_its_exact_profile_map_under_add_remove_only() -> None:
    scheme = get("poisson")
    assert scheme.exact_profile is not None
    params = scheme.params(rate=0.01)
    assert scheme.exact_profile(params, Neighbours.ADD_REMOVE) == ExactRemoval(0.01)
    assert scheme.exact_profile(params, Neighbours.REPLACE_ONE) is None
    assert get("srswor").exact_profile is None


def test_exact_removal_guess_and_lower_delta() -> None:
    exact = ExactRemoval(0.01)
    assert exact.guess_delta(1e-6) == 1e-6 / 0.01
    assert exact.guess_delta(0.0) is None and exact.guess_delta(0.02) is None
    assert exact.lower_delta(1e-6) >= 1e-6 / 0.01  # rounded up: a smaller lower ε
    assert exact.lower_delta(0.0) == 0.0
    assert exact.lower(2.0) <= math.log1p(0.01 * math.expm1(2.0))


@pytest.mark.parametrize(("rate", "target"), [(0.01, 1e-6), (0.1, 1e-8)])
def test_gaussian_through_poisson_matches_the_exact_map(rate: float, target: float) -> None:
    result = engine.bound(_gaussian_poisson(rate, target))
    assert result.error is None
    eps = float(result.epsilon)
    # the chosen point meets δ′ and a point 1e-6 smaller does not (the smallest ε′)
    assert rate * _gaussian_delta(1.0, eps) <= target * (1 + 1e-9)
    assert rate * _gaussian_delta(1.0, eps * (1 - 1e-6)) > target
    exact = math.log1p(rate * math.expm1(eps))
    assert result.upper >= exact and result.upper == pytest.approx(exact, rel=1e-12)
    # the exact removal direction gives a lower bound, tight up to the profile's rounding
    assert result.lower is not None and result.lower <= result.upper
    assert result.lower == pytest.approx(result.upper, rel=1e-6)
    assert result.details["tight"] is True


def test_no_lower_bound_without_an_exact_map() -> None:
    replace = engine.bound(_gaussian_poisson(0.01, 1e-6, "replace-one"))
    assert replace.error is None and replace.lower is None
    assert any("no lower bound" in n for n in replace.notes)


def test_profile_under_converts_add_remove_to_replace_one_and_refuses_the_reverse() -> None:
    profile = _gaussian_poisson(0.01, 1e-6).mechanism.profile
    same = assembly.profile_under(profile, Neighbours.BOTH, Neighbours.REPLACE_ONE)
    assert same is profile
    r1 = assembly.profile_under(profile, Neighbours.ADD_REMOVE, Neighbours.REPLACE_ONE)
    # replace-one is two add-remove steps: sensitivity doubles, μ = 2
    assert float(r1.delta(1.0)) == pytest.approx(_gaussian_delta(2.0, 1.0), rel=1e-9)
    with pytest.raises(ConditionError, match="profile does not follow"):
        assembly.profile_under(profile, Neighbours.REPLACE_ONE, Neighbours.ADD_REMOVE)


def test_profile_point_reads_the_replace_one_point_from_the_replace_one_profile() -> None:
    mech = _gaussian_poisson(0.01, 1e-6).mechanism
    point = assembly.profile_point(mech, 1.5)
    assert point.epsilon == 1.5 and point.profile is None
    assert point.delta == pytest.approx(_gaussian_delta(1.0, 1.5), rel=1e-9)
    assert point.epsilon_replace_one == 3.0
    assert point.delta_replace_one == pytest.approx(_gaussian_delta(2.0, 3.0), rel=1e-9)
    assert assembly.profile_point(mech, 1.5, replace_one=False).epsilon_replace_one is None


@pytest.mark.parametrize("ratio_declared", [None, 1.3])
def test_unit_inverses_are_certified_one_sided(ratio_declared: float | None) -> None:
    mech = Mechanism(epsilon=1.0, neighbours=Neighbours.ADD_REMOVE)
    if ratio_declared is not None:
        mech = Mechanism(
            epsilon=1.0, neighbours=Neighbours.ADD_REMOVE, epsilon_replace_one=ratio_declared
        )
    theorem = assembly.Theorem(
        name="t", basis=(), relation=Neighbours.REPLACE_ONE, guarantee=Neighbours.REPLACE_ONE
    )
    rates = np.array([0.05, 0.2, 0.5])
    units = assembly.UnitAmplification(rates, assembly.relation_of(mech, theorem))
    ratio = 2.0 if ratio_declared is None else ratio_declared
    target = 0.4
    cert, imp = units.inverses(target)
    up = numeric.amplification_upper(rates, ratio * cert)
    assert np.all(up <= target)
    # the closed form A(q, ratio·ε) = T: the certificate is within a few ulps of it
    exact = np.log1p(np.expm1(target) / rates) / ratio
    assert np.all(cert <= exact) and np.allclose(cert, exact, rtol=1e-12, atol=0)
    assert np.all(numeric.amplification_lower(rates, ratio * imp) >= target)
    lower, upper = units.bounds(np.array([0.5, 1.0]))
    assert lower.shape == upper.shape == (3, 2) and np.all(lower <= upper)


def test_certify_below_and_above_are_one_sided() -> None:
    q = 0.1

    def upper(e: np.ndarray) -> np.ndarray:
        return numeric.amplification_upper(q, e)

    def lower(e: np.ndarray) -> np.ndarray:
        return numeric.amplification_lower(q, e)

    guess = numeric.amplification_inverse(q, 0.3)
    below = assembly.certify_below(upper, guess, 0.3)
    above = assembly.certify_above(lower, guess, 0.3)
    assert upper(below) <= 0.3 and lower(above) >= 0.3
    assert below <= guess <= above
