"""Releases composed on one sample before amplification (closed forms).

Oracles: the Gaussian composition theorem μ = √Σμᵢ² (Dong, Roth and Su 2022, Corollary
3.3) with the 40-digit Poisson-subsampled Gaussian of the removal direction; the optimal
composition of k ε₀-DP mechanisms (Kairouz, Oh and Viswanath 2015, Theorem 3.3) as a
40-digit binomial hockey-stick sum of k-fold binary randomized response.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ampcalc import api
from ampcalc.accounting import compose
from ampcalc.accounting.profiles import (
    Gaussian,
    Laplace,
    RandomizedResponse,
    Zcdp,
    epsilon_at_delta,
)

mp.mp.dps = 40


def releases_design(items: str, target: float = 1e-6, rate: float = 0.01) -> str:
    return (
        "name: r\n"
        f"mechanism:\n  releases: {items}\n"
        f"sampling: {{scheme: poisson, rate: {rate}}}\n"
        f"target: {{delta_prime: {target}}}\n"
    )


def poisson_gaussian_oracle(mu: mp.mpf, q: float, delta_prime: float) -> mp.mpf:
    qq = mp.mpf(q)

    def prof(e: mp.mpf) -> mp.mpf:
        return mp.ncdf(mu / 2 - e / mu) - mp.exp(e) * mp.ncdf(-mu / 2 - e / mu)

    guess = float(epsilon_at_delta(Gaussian(mu_given=float(mu)), delta_prime / q))
    e0 = mp.findroot(lambda e: prof(e) - mp.mpf(delta_prime) / qq, mp.mpf(guess))
    return mp.log(1 + qq * mp.expm1(e0))


@pytest.mark.parametrize(("k", "issue"), [(10, 11.498), (100, 81.736), (1000, 612.055)])
def test_k_gaussians_on_one_poisson_sample(k: int, issue: float) -> None:
    # issue 17 §3: 11.498 / 81.736 / 612.055 for k = 10 / 100 / 1000, σ = 1, q = 0.01,
    # δ′ = 1e-6, to 1e-6 relative and never below
    r = api.bound(releases_design(f"[{{gaussian: {{sigma: 1.0}}, count: {k}}}]"))
    exact = poisson_gaussian_oracle(mp.sqrt(k), 0.01, 1e-6)
    assert mp.mpf(r.upper) >= exact
    assert float((mp.mpf(r.upper) - exact) / exact) < 1e-9
    assert mp.mpf(r.lower) <= exact
    assert r.upper == pytest.approx(issue, abs=5e-4)
    assert r.details["mechanism"]["mu"] >= math.sqrt(k)


def test_different_gaussians_compose_to_root_sum_of_squares() -> None:
    r = api.bound(
        releases_design(
            "[{gaussian: {sigma: 2.0, sensitivity: 1.0}}, {gaussian: {sigma: 1.0}, count: 3}]"
        )
    )
    mu = mp.sqrt(mp.mpf(1) / 4 + 3)
    exact = poisson_gaussian_oracle(mu, 0.01, 1e-6)
    assert mp.mpf(r.lower) <= exact <= mp.mpf(r.upper)
    assert float((mp.mpf(r.upper) - exact) / exact) < 1e-9


def k_fold_rr_oracle(e0: float, k: int, eps: float) -> mp.mpf:
    ee0 = mp.mpf(e0)
    p = mp.exp(ee0) / (1 + mp.exp(ee0))
    out = mp.mpf(0)
    for i in range(k + 1):
        loss = (k - 2 * i) * ee0
        if loss > eps:
            out += mp.binomial(k, i) * p ** (k - i) * (1 - p) ** i * (1 - mp.exp(eps - loss))
    return out


@pytest.mark.parametrize(("e0", "k"), [(1.0, 10), (0.1, 100), (0.5, 1000)])
def test_identical_pure_releases_optimal_composition(e0: float, k: int) -> None:
    prof = compose.compose([(RandomizedResponse(epsilon=e0), k)])
    assert isinstance(prof, compose.PureComposition) and prof.exact
    for eps in [0.0, 0.5 * k * e0**2, math.sqrt(k) * e0, 0.9 * k * e0]:
        exact = k_fold_rr_oracle(e0, k, eps)
        up, lo = float(prof.delta(eps)), float(prof.delta_lower(eps))
        assert mp.mpf(up) >= exact >= mp.mpf(lo)
        if exact > mp.mpf("1e-290"):
            # to 1e-9 relative, never below (issue 17 §4)
            assert float((mp.mpf(up) - exact) / exact) < 1e-9


def test_identical_laplace_releases_are_dominated_not_exact() -> None:
    lap = Laplace(scale=1.0)
    prof = compose.compose([(lap, 5)])
    assert isinstance(prof, compose.PureComposition) and not prof.exact
    # upper: the optimal composition of 1-DP releases; lower: one release's profile
    assert float(prof.delta(1.0)) == pytest.approx(float(k_fold_rr_oracle(1.0, 5, 1.0)), rel=1e-9)
    assert float(prof.delta_lower(0.2)) == float(lap.delta_lower(0.2))


def test_pure_releases_at_delta_zero_give_the_basic_sum() -> None:
    # at δ′ = 0 the k-fold composition is kε₀-DP: the plain `releases` form agrees
    named = api.bound(releases_design("[{randomized-response: {epsilon: 0.5}, count: 4}]", 0))
    plain = api.bound(releases_design("[0.5, 0.5, 0.5, 0.5]").replace("target", "#"))
    assert named.upper == plain.upper


def test_k_releases_beat_basic_composition() -> None:
    # issue 17 table: basic composition of (ε, δ) pairs gave 39.17 at k = 10
    r = api.bound(releases_design("[{gaussian: {sigma: 1.0}, count: 10}]"))
    assert r.upper < 11.5 < 39.17


def test_zcdp_mixed_with_others_is_refused() -> None:
    with pytest.raises(Exception, match="no sound composition"):
        api.load_design(releases_design("[{gaussian: {sigma: 1.0}}, {zcdp: {rho: 1.0}}]"))


def test_zcdp_releases_add_their_rho() -> None:
    # Bun and Steinke (2016), Lemma 2.3: ρ₁-zCDP then ρ₂-zCDP is (ρ₁ + ρ₂)-zCDP
    prof = compose.compose([(Zcdp(rho=0.1), 3), (Zcdp(rho=0.2), 1)])
    assert isinstance(prof, Zcdp)
    assert prof.rho >= 0.5 and prof.rho == pytest.approx(0.5, rel=1e-15)


def test_composed_gaussian_mu_is_bracketed() -> None:
    g = compose.gaussians([(1.0 / 3.0, 7), (0.1, 2)])
    exact = mp.sqrt(7 * mp.mpf(1.0 / 3.0) ** 2 + 2 * mp.mpf(0.1) ** 2)
    assert g.mu_low is not None
    assert mp.mpf(g.mu_low) <= exact <= mp.mpf(g.mu)
    assert np.nextafter(g.mu, 0) > g.mu_low  # a few ulps, not more


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(
    sigma=st.floats(min_value=0.6, max_value=3.0),
    k=st.integers(min_value=1, max_value=20),
    q=st.floats(min_value=0.005, max_value=0.2),
)
def test_one_sample_composition_against_dp_accounting(sigma: float, k: int, q: float) -> None:
    # k Gaussian releases on one Poisson sample are one subsampled Gaussian with σ/√k:
    # ampcalc's exact value lies between dp_accounting's optimistic and pessimistic PLD
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    r = api.bound(releases_design(f"[{{gaussian: {{sigma: {sigma!r}}}, count: {k}}}]", rate=q))
    kw = {"sampling_prob": q, "value_discretization_interval": 1e-3}
    std = sigma / math.sqrt(k)
    hi = pld.from_gaussian_mechanism(std, pessimistic_estimate=True, **kw)
    lo = pld.from_gaussian_mechanism(std, pessimistic_estimate=False, use_connect_dots=False, **kw)
    assert lo.get_epsilon_for_delta(1e-6) - 1e-9 <= r.upper
    assert r.lower <= hi.get_epsilon_for_delta(1e-6) + 1e-9


@pytest.mark.slow
def test_accountant_composition_brackets_the_gaussian_closed_form() -> None:
    # forced through the accountant, 10 Gaussians σ = 1 must bracket the exact
    # composition μ = √10 (Dong, Roth and Su 2022, Corollary 3.3)
    pytest.importorskip("dp_accounting")
    acc = compose.AccountantComposition(releases=((Gaussian(sigma=1.0), 10),))
    exact = float(epsilon_at_delta(Gaussian(mu_given=math.sqrt(10.0)), 1e-5))
    up = float(epsilon_at_delta(acc, 1e-5))
    lo = float(epsilon_at_delta(acc, 1e-5, lower=True))
    assert lo <= exact <= up
    assert (up - lo) / exact < 2e-3


@pytest.mark.slow
def test_mixed_releases_go_through_the_accountant() -> None:
    pytest.importorskip("dp_accounting")
    mixed = api.bound(
        releases_design("[{gaussian: {sigma: 2.0}, count: 3}, {laplace: {scale: 1.0}}]")
    )
    gauss = api.bound(releases_design("[{gaussian: {sigma: 2.0}, count: 3}]"))
    lap = api.bound(releases_design("[{laplace: {scale: 1.0}}]"))
    assert mixed.details["mechanism"]["mechanism"] == "accountant-composition"
    assert mixed.lower <= mixed.upper
    assert (mixed.upper - mixed.lower) / mixed.upper < 1e-3
    # composing more releases never lowers ε′
    assert mixed.upper >= max(gauss.lower, lap.lower)
