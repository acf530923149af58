"""Privacy profiles of the named mechanisms against mpmath oracles (one-sided, tight).

Oracles: the hockey-stick divergence Σ max(0, P − e^ε Q) summed at 40 digits over the
mechanisms' output distributions (discrete mechanisms), the closed forms of Balle and
Wang (2018, Theorem 8) for the Gaussian, and the Canonne, Kamath and Steinke (2020,
Corollary 13) conversion minimised over α at 40 digits for zCDP.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ampcalc.accounting import profiles
from ampcalc.accounting.profiles import (
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    RandomizedResponse,
    Zcdp,
    epsilon_at_delta,
)
from ampcalc.math import numeric

mp.mp.dps = 40

EPS_GRID = np.array([0.0, 0.05, 0.3, 1.0, 2.0, 3.9, 7.5])


def hockey_stick(p: list[mp.mpf], q: list[mp.mpf], eps: float) -> mp.mpf:
    e = mp.exp(mp.mpf(eps))
    return mp.fsum(max(mp.mpf(0), a - e * b) for a, b in zip(p, q, strict=True))


def gaussian_oracle(mu: float, eps: float) -> mp.mpf:
    m, e = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m)


@pytest.fixture(autouse=True)
def _forty_digits() -> Iterator[None]:
    """Every oracle here at 40 digits, whatever precision another test module left set
    (mpmath's precision is global: modules set it at import, in collection order)."""
    with mp.workdps(40):
        yield


#: the oracles' own rounding at 40 digits (a hockey stick that is exactly 0, at ε = ε₀ of
#: randomized response, comes out as ±1e-40 or so): below it a float δ of 0 is exact
ORACLE_NOISE = mp.mpf("1e-35")


def check(up: float, lo: float, exact: mp.mpf, rel: float) -> None:
    assert mp.mpf(up) >= exact - ORACLE_NOISE  # a guarantee never goes low
    assert mp.mpf(lo) <= exact + ORACLE_NOISE  # a lower bound never goes high
    if exact > mp.mpf("1e-290"):
        assert float((mp.mpf(up) - exact) / exact) < rel
        assert float((exact - mp.mpf(lo)) / exact) < rel


@pytest.mark.parametrize("mu", [0.01, 0.3, 1.0, 5.0, math.sqrt(1000.0), 100.0])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 3.7, 10.0, 50.0, 617.0, 5000.0])
def test_gaussian_profile_against_balle_wang_closed_form(mu: float, eps: float) -> None:
    g = Gaussian(mu_given=mu)
    exact = gaussian_oracle(mu, eps)
    check(float(g.delta(eps)), float(g.delta_lower(eps)), exact, 1e-9)


@settings(max_examples=60, deadline=None)
@given(mu=st.floats(min_value=0.05, max_value=40.0), eps=st.floats(min_value=0.0, max_value=200.0))
def test_gaussian_profile_property(mu: float, eps: float) -> None:
    g = Gaussian(mu_given=mu)
    check(float(g.delta(eps)), float(g.delta_lower(eps)), gaussian_oracle(mu, eps), 1e-8)


def test_gaussian_sigma_rounds_mu_outward() -> None:
    # σ = 3 makes Δ/σ inexact in binary: the upper profile uses μ rounded up
    g = Gaussian(sigma=3.0, sensitivity=1.0)
    exact = gaussian_oracle(mp.mpf(1) / 3, 0.5)  # type: ignore[arg-type]
    check(float(g.delta(0.5)), float(g.delta_lower(0.5)), exact, 1e-10)


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
def test_laplace_profile(scale: float) -> None:
    m = Laplace(scale=scale, sensitivity=1.0)
    for eps, up, lo in zip(EPS_GRID, m.delta(EPS_GRID), m.delta_lower(EPS_GRID), strict=True):
        e0 = mp.mpf(1) / scale
        # the continuous limit of the discrete sum: 1 − e^{(ε − ε₀)/2}
        exact = max(mp.mpf(0), 1 - mp.exp((mp.mpf(eps) - e0) / 2))
        check(float(up), float(lo), exact, 1e-12)


def test_laplace_profile_against_numerical_integration() -> None:
    # the hockey-stick integral of Lap(1, b) against Lap(0, b), b = 2, at ε = 0.2
    b, eps = mp.mpf(2), mp.mpf("0.2")

    def dens(x: mp.mpf, c: int) -> mp.mpf:
        return mp.exp(-abs(x - c) / b) / (2 * b)

    # breakpoints at the kinks, including the crossing x = (1 + bε)/2 = 0.7
    exact = mp.quad(
        lambda x: max(0, dens(x, 1) - mp.exp(eps) * dens(x, 0)), [-60, 0, mp.mpf("0.7"), 1, 60]
    )
    closed = 1 - mp.exp((eps - 1 / b) / 2)
    assert abs(exact - closed) < mp.mpf("1e-13")
    m = Laplace(scale=2.0)
    check(float(m.delta(0.2)), float(m.delta_lower(0.2)), closed, 1e-12)


@pytest.mark.parametrize(("scale", "sens"), [(1.0, 1), (2.0, 3), (0.7, 5)])
def test_discrete_laplace_profile_brute_force(scale: float, sens: int) -> None:
    t = mp.mpf(1) / scale
    z = mp.fsum(mp.exp(-abs(x) * t) for x in range(-3000, 3001))
    xs = range(-600, 600 + sens + 1)
    p = [mp.exp(-abs(x) * t) / z for x in xs]
    q = [mp.exp(-abs(x - sens) * t) / z for x in xs]
    m = DiscreteLaplace(scale=scale, sensitivity=sens)
    for eps, up, lo in zip(EPS_GRID, m.delta(EPS_GRID), m.delta_lower(EPS_GRID), strict=True):
        exact = hockey_stick(p, q, eps)
        if eps >= sens / scale:
            exact = mp.mpf(0)  # the exact profile is 0 from ε₀ on (40 digits leave 1e-42)
        check(float(up), float(lo), exact, 1e-11)


@pytest.mark.parametrize(("sigma", "sens"), [(1.0, 1), (3.0, 2), (0.5, 1)])
def test_discrete_gaussian_profile_brute_force(sigma: float, sens: int) -> None:
    n = int(40 * sigma) + 10
    s2 = 2 * mp.mpf(sigma) ** 2
    z = mp.fsum(mp.exp(-(mp.mpf(x) ** 2) / s2) for x in range(-n - 60, n + 61))
    xs = range(-n, n + sens + 1)
    p = [mp.exp(-(mp.mpf(x) ** 2) / s2) / z for x in xs]
    q = [mp.exp(-(mp.mpf(x - sens) ** 2) / s2) / z for x in xs]
    m = DiscreteGaussian(sigma=sigma, sensitivity=sens)
    for eps, up, lo in zip(EPS_GRID, m.delta(EPS_GRID), m.delta_lower(EPS_GRID), strict=True):
        check(float(up), float(lo), hockey_stick(p, q, eps), 1e-8)


@pytest.mark.parametrize(("eps0", "k"), [(1.0, 2), (2.0, 5), (0.3, 3)])
def test_randomized_response_profile_brute_force(eps0: float, k: int) -> None:
    e0 = mp.exp(mp.mpf(eps0))
    den = e0 + k - 1
    # rows for true categories 0 and 1 of the k-ary channel
    p = [e0 / den] + [1 / den] * (k - 1)
    q = [1 / den, e0 / den] + [1 / den] * (k - 2)
    m = RandomizedResponse(epsilon=eps0, categories=k)
    for eps, up, lo in zip(EPS_GRID, m.delta(EPS_GRID), m.delta_lower(EPS_GRID), strict=True):
        check(float(up), float(lo), hockey_stick(p, q, eps), 1e-12)


def zcdp_oracle(rho: float, eps: float) -> mp.mpf:
    r, e = mp.mpf(rho), mp.mpf(eps)

    def f(a: mp.mpf) -> mp.mpf:
        return (a - 1) * (a * r - e) - mp.log(a - 1) + a * mp.log(1 - 1 / a)

    # f is convex on (1, ∞): minimise by a 40-digit golden section on log(α − 1)
    lo, hi = mp.log(mp.mpf("1e-12")), mp.log(mp.mpf("1e12"))
    g = (mp.sqrt(5) - 1) / 2
    for _ in range(300):
        c, d = hi - g * (hi - lo), lo + g * (hi - lo)
        if f(1 + mp.exp(c)) < f(1 + mp.exp(d)):
            hi = d
        else:
            lo = c
    return mp.exp(f(1 + mp.exp((lo + hi) / 2)))


@pytest.mark.parametrize("rho", [0.01, 0.5, 2.0])
@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0, 10.0])
def test_zcdp_conversion_is_the_canonne_kamath_steinke_infimum(rho: float, eps: float) -> None:
    m = Zcdp(rho=rho)
    exact = min(zcdp_oracle(rho, eps), mp.mpf(1))
    up = float(m.delta(eps))
    assert mp.mpf(up) >= exact
    if exact > mp.mpf("1e-290"):
        assert float((mp.mpf(up) - exact) / exact) < 1e-9
    # the lower profile is the ρ-zCDP Gaussian μ = √(2ρ): a witness, below the conversion
    wit = gaussian_oracle(math.sqrt(2 * rho), eps)
    assert mp.mpf(float(m.delta_lower(eps))) <= wit
    assert mp.mpf(float(m.delta_lower(eps))) <= mp.mpf(up)


def test_zcdp_is_not_the_gaussian_profile() -> None:
    # ρ-zCDP does not imply domination by the Gaussian with μ = √(2ρ): the conversion
    # is strictly larger than that Gaussian's profile
    m = Zcdp(rho=0.5)
    assert float(m.delta(1.0)) > 1.5 * float(Gaussian(mu_given=1.0).delta(1.0))


def test_replace_one_conversions_follow_the_pinned_rules() -> None:
    assert Gaussian(sigma=2.0).replace_one().mu >= 1.0  # 2Δ/σ
    assert Laplace(scale=1.0).replace_one().sensitivity == 2.0
    assert DiscreteLaplace(scale=1.0, sensitivity=2).replace_one().sensitivity == 4
    assert DiscreteGaussian(sigma=1.0).replace_one().sensitivity == 2
    assert Zcdp(rho=0.25).replace_one().rho == 1.0  # group of two: 4ρ
    rr = RandomizedResponse(epsilon=1.0, categories=4).replace_one()
    assert (rr.epsilon, rr.categories) == (2.0, 2)


def test_epsilon_at_delta_is_the_smallest_float() -> None:
    g = Gaussian(sigma=1.0)
    e = float(epsilon_at_delta(g, 1e-4))
    assert float(g.delta(e)) <= 1e-4
    assert float(g.delta(np.nextafter(e, 0.0))) > 1e-4
    lo = float(epsilon_at_delta(g, 1e-4, lower=True))
    assert lo <= e
    # the exact Gaussian ε at δ = 1e-4 lies in [lo, e]
    exact = mp.findroot(lambda x: gaussian_oracle(1.0, x) - mp.mpf("1e-4"), 3.8)  # type: ignore[arg-type]
    assert mp.mpf(lo) <= exact <= mp.mpf(e)
    # a pure mechanism reaches δ = 0 at ε₀
    assert float(epsilon_at_delta(Laplace(scale=1.0), 0.0)) == pytest.approx(1.0, rel=1e-15)


def test_poisson_subsampled_gaussian_exact_value() -> None:
    # issue 17 §2: σ = 1, q = 0.01, δ′ = 1e-6 → 0.3639478396 (dp_accounting PLD
    # 0.3639478398): ε₀ = ε_M(δ′/q), ε′ = log(1 + q(e^{ε₀} − 1))
    e0 = epsilon_at_delta(Gaussian(sigma=1.0), 1e-4)
    assert float(numeric.amplification_upper(0.01, e0)) == pytest.approx(0.3639478396, abs=1e-10)


def test_accounting_imports_no_scipy() -> None:
    code = (
        "import sys; import ampcalc.accounting.profiles as p; "
        "p.Gaussian(sigma=1.0).delta(1.0); p.Zcdp(rho=1.0).delta(1.0); "
        "print('scipy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_vectorised_erfc_is_within_the_allowance() -> None:
    """From ``ERFC_VECTOR_FROM`` points on, erfc is scipy's: its relative error against
    mpmath stays inside the ``_LIBM`` allowance every bound adds (measured 1.5e-14)."""
    x = np.concatenate([np.linspace(-6.0, 14.2, 4001), np.geomspace(1e-12, 14.2, 500)])
    assert x.size >= profiles.ERFC_VECTOR_FROM
    got = profiles._erfc(x)
    worst = max(
        abs((mp.mpf(float(g)) - mp.erfc(mp.mpf(float(v)))) / mp.erfc(mp.mpf(float(v))))
        for g, v in zip(got, x, strict=True)
    )
    assert worst < profiles._LIBM / 4


def test_gaussian_profile_on_a_long_grid_is_sound_both_ways() -> None:
    """A grid long enough for the vectorised erfc: every 97th point against the Balle-Wang
    oracle, both sides, and within 1e-9 of the same points evaluated one by one (libm's
    erfc)."""
    mu = 1.3
    eps = np.linspace(0.0, 12.0, 4 * profiles.ERFC_VECTOR_FROM)
    g = Gaussian(mu_given=mu)
    up, lo = g.delta(eps), g.delta_lower(eps)
    for i in range(0, eps.size, 97):
        check(float(up[i]), float(lo[i]), gaussian_oracle(mu, float(eps[i])), 1e-9)
        one = float(g.delta(eps[i : i + 1])[0])
        assert up[i] == pytest.approx(one, rel=1e-9, abs=1e-300)
