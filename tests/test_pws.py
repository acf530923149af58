"""PWS (Cohen et al. 2021): spec Part B test vectors (B12), the SbH ratio (B9),
Zipf gains (B10), the DP self-check, the sanitizer's frequencies, bad input."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_pws import L as L_oracle
from oracle_pws import (
    hypoexponential_cdf,
    lemma44_ppswor,
    phi_sbh_closed,
    phi_sbh_quad,
    pi_alg3,
    pi_star_closed,
)

import ampcalc
from ampcalc import api, engine
from ampcalc.math import pws as K
from ampcalc.math import pws_sbh
from ampcalc.model.errors import DesignError
from ampcalc.schemes import pws


def design(**sampling):
    target = sampling.pop("target", {"epsilon_prime": 1.0, "delta_prime": 1e-3})
    return ampcalc.load_designs({"target": target, "sampling": {"scheme": "pws", **sampling}})[0]


# --- B12: Alg. 3 with q ≡ 1 -------------------------------------------------------------


def test_b12_alg3_eps1_delta1e3() -> None:
    # spec B12: ε = 1, δ = 1e-3; π_1..7, π_8..13, π_14..20 = 1; L = 6.136982
    pi = K.reporting_probabilities(np.ones(20), 1.0, 1e-3)
    first = [0.001, 0.003718281828, 0.01110733793, 0.03119287485, 0.08579102488]
    first += [0.234204184, 0.6376329775]
    np.testing.assert_allclose(pi[:7], first, rtol=1e-9)
    second = [0.8670605017, 0.9514621711, 0.9825118101, 0.9939343339, 0.9981364456]
    np.testing.assert_allclose(pi[7:13], [*second, 0.9996823161], rtol=1e-9)
    assert np.all(pi[13:] == 1.0) and pi[12] < 1.0  # first 1 at i = 14 = 2⌈L⌉
    assert K.L_eps_delta(1.0, 1e-3) == pytest.approx(6.136982, abs=1e-6)
    assert 14 == 2 * math.ceil(K.L_eps_delta(1.0, 1e-3))


def test_b12_alg3_eps01_delta001() -> None:
    # spec B12: ε = 0.1, δ = 0.01 (L = 17.826984, π = 1 first at i = 37)
    pi = K.reporting_probabilities(np.ones(40), 0.1, 0.01)
    np.testing.assert_allclose(
        pi[:5], [0.01, 0.02105170918, 0.03326573676, 0.04676432484, 0.06168257181], rtol=1e-9
    )
    np.testing.assert_allclose(pi[[9, 17]], [0.16337994, 0.480137243], rtol=1e-8)
    np.testing.assert_allclose(pi[[18, 19]], [0.5386570994, 0.5916080551], rtol=1e-9)
    assert int(np.argmax(pi == 1.0)) + 1 == 37
    assert K.L_eps_delta(0.1, 0.01) == pytest.approx(17.826984, abs=1e-6)


def test_b12_integral_L_corrected_closed_form() -> None:
    # spec B12: ε = 1, δ = 0.02364054 gives L = 3; printed Eq. 4 would give π_5 = 0.7374
    eps, delta = 1.0, 0.02364054
    assert K.L_eps_delta(eps, delta) == pytest.approx(3.0, abs=1e-6)  # δ given to 8 digits
    pi = K.reporting_probabilities(np.ones(10), eps, delta)
    want = [0.0236405, 0.0879022, 0.2625835, 0.7374165, 0.9120978, 0.9763595]
    np.testing.assert_allclose(pi[:6], want, atol=6e-8)  # 7 decimals printed
    assert pi[6:] == pytest.approx(1.0, abs=1e-7)
    assert pi[4] == pytest.approx(0.9120978, rel=1e-6)  # not the printed 0.7374
    np.testing.assert_allclose(pi_star_closed(eps, delta, 10), pi, atol=1e-12)


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-8, 1e-4, 0.02, 0.5, 1.0])
def test_general_L_closed_form_matches_alg3(eps: float, delta: float) -> None:
    # spec B5 general-L form [VERIFIED to 3e-13]
    n = 2 * math.ceil(K.L_eps_delta(eps, delta)) + 5
    pi = K.reporting_probabilities(np.ones(n), eps, delta)
    np.testing.assert_allclose(pi_star_closed(eps, delta, n), pi, atol=1e-11)
    # Lemma 4.3 corrected: at most 2⌈L⌉ rows with π_i < q_i
    assert np.sum(pi < 1.0) <= 2 * math.ceil(K.L_eps_delta(eps, delta))


def test_alg3_matches_mpmath_oracle() -> None:
    for eps, delta, method, tau in [
        (1.0, 1e-3, "none", 1),
        (0.1, 1e-6, "priority", 0.01),
        (0.5, 2**-20, "ppswor", 0.01),
        (1e-3, 1e-9, "none", 1),
    ]:
        q = K.inclusion_probabilities(3000, method=method, threshold=tau)
        pi = K.reporting_probabilities(q, eps, delta)
        ref = np.array([float(x) for x in pi_alg3(q.tolist(), eps, delta)])
        # each step rounds the privacy terms down by a few ulps: one-sided, and within
        # 4·2^-53 per step of the exact recursion (≤ 2⌈L⌉ binding steps)
        assert np.all(pi <= ref)
        assert np.max(np.abs(pi - ref) / np.maximum(ref, 1e-300)) < 1e-10
        assert K.L_eps_delta(eps, delta) == pytest.approx(float(L_oracle(eps, delta)), rel=1e-12)


def test_b12_ppswor_lemma44() -> None:
    # spec B12: ε = 0.5, δ = 2^-20, τ = 0.01: L = 24.9122, ℓ = 24
    q = K.inclusion_probabilities(200, method="ppswor", threshold=0.01)
    pi = K.reporting_probabilities(q, 0.5, 2**-20)
    assert K.L_eps_delta(0.5, 2**-20) == pytest.approx(24.9122, abs=1e-4)
    assert pi[22] == pytest.approx(0.14511894, rel=1e-7)
    assert pi[22] / q[22] == pytest.approx(0.70629037, rel=1e-7)
    assert pi[23] == q[23] == pytest.approx(0.21337214, rel=1e-7)
    assert np.all(pi[23:] == q[23:])
    np.testing.assert_allclose(lemma44_ppswor(0.5, 2**-20, q), pi, atol=1e-13)


def test_lemma44_fails_for_pps() -> None:
    # spec B5: ε = 1, δ = 1e-3, τ = 0.1 PPS: Alg. 3 gives π_10 = 0.96358, lemma form 1
    q = K.inclusion_probabilities(30, method="priority", threshold=0.1)
    pi = K.reporting_probabilities(q, 1.0, 1e-3)
    assert pi[9] == pytest.approx(0.96358, abs=1e-5)
    assert lemma44_ppswor(1.0, 1e-3, q)[9] == 1.0


# --- B12: Alg. 4 ------------------------------------------------------------------------


def test_b12_alg4_q1() -> None:
    rows = K.frequency_rows(np.ones(20), 1.0, 1e-3)
    diag = [0.001, 0.00271828, 0.00738906, 0.0200855, 0.0545982, 0.148413, 0.403429]
    np.testing.assert_allclose(rows.dense(7)[1:][::-1], diag, rtol=1e-5)
    row8 = [0.229428, 0.403429, 0.148413, 0.0545982, 0.0200855, 0.00738906, 0.00271828, 0.001]
    np.testing.assert_allclose(rows.dense(8)[1:], row8, rtol=1e-5)
    row14 = [3.17684e-4, 1.54587e-3, 4.20211e-3, 0.0114225, 0.0310496, 0.0844017, 0.229428]
    row14 += [0.403429, 0.148413, 0.0545982, 0.0200855, 0.00738906, 0.00271828, 0.001]
    np.testing.assert_allclose(rows.dense(14)[1:], row14, rtol=1e-5)
    assert rows.lo[20] == 7
    np.testing.assert_allclose(rows.band[20], row14, rtol=1e-5)
    for i in range(1, 21):  # rows sum to 1, Σ_{j>=1} = π_i, entries >= 0
        d = rows.dense(i)
        assert math.fsum(d) == pytest.approx(1.0, abs=1e-15)
        assert math.fsum(d[1:]) == pytest.approx(rows.pi[i - 1], abs=1e-15)
        assert np.all(d >= 0)
    assert K.dp_check(rows) <= 1e-3 * (1 + 1e-9)
    assert K.dp_check(rows) == pytest.approx(1e-3, rel=1e-9)


def test_b12_alg4_pps() -> None:
    q = K.inclusion_probabilities(30, method="priority", threshold=0.1)
    rows = K.frequency_rows(q, 1.0, 1e-3)
    want8 = [0.2, 0.162367, 0.403429, 0.148413, 0.0545982, 0.0200855, 0.00738906]
    np.testing.assert_allclose(rows.dense(8), [*want8, 0.00271828, 0.001], rtol=1e-5)
    r10 = rows.dense(10)
    np.testing.assert_allclose(
        r10[:5], [0.0364201, 0.0218387, 0.0746808, 0.229428, 0.403429], rtol=1e-5
    )
    assert r10[-1] == pytest.approx(0.001, rel=1e-9)
    assert K.dp_check(rows) == pytest.approx(1e-3, rel=1e-9)


@pytest.mark.parametrize(
    "method,tau,eps,delta",
    [("ppswor", 0.05, 0.5, 1e-4), ("priority", 0.02, 0.25, 2**-20), ("none", 1, 0.1, 0.01)],
)
def test_dp_self_check(method: str, tau: float, eps: float, delta: float) -> None:
    q = K.inclusion_probabilities(150, method=method, threshold=tau)
    rows = K.frequency_rows(q, eps, delta)
    assert K.dp_check(rows) <= delta * (1 + 1e-9)
    assert K.dp_check_pi_exact(rows.pi, eps) <= delta
    for i in range(1, 151):
        assert math.fsum(rows.band[i]) == pytest.approx(rows.pi[i - 1], abs=1e-14)


# --- B8: MLE ----------------------------------------------------------------------------


def test_b12_mle_and_bias_variance() -> None:
    rows = K.frequency_rows(np.ones(60), 1.0, 1e-3)
    a = K.mle_estimates(rows, upto=40)
    want = [10.9781, 9.22658, 9.45913, 10.178, 11.0671, 12.0224, 13.0041]
    np.testing.assert_allclose(a[:7], want, rtol=1e-5)
    np.testing.assert_allclose(a[7:30], np.arange(8, 31) + 6, rtol=1e-12)
    bias, var, _ = K.bias_variance(rows, a, upto=30)
    for i, b, v in [
        (1, -0.989022, 0.120398),
        (4, -3.67543, 3.29118),
        (7, -0.353431, 25.5111),
        (10, 0.116209, 2.69118),
        (14, -0.19052, 1.84979),
        (20, -0.202564, 1.93422),
        (25, -0.202566, 1.93424),
    ]:
        assert bias[i - 1] == pytest.approx(b, rel=1e-5)
        assert var[i - 1] == pytest.approx(v, rel=1e-5)


# --- B9/B10: SbH ------------------------------------------------------------------------


def test_b12_sbh_phi() -> None:
    phi = K.sbh_phi(20, 1.0, 1e-3)
    want = [5e-4, 1.35914e-3, 3.69453e-3, 0.0100428, 0.0272991, 0.0742066, 0.201714, 0.544059]
    want += [0.832269, 0.938295, 0.9773, 0.991649, 0.996928, 0.99887, 0.999584, 0.999847]
    want += [0.999944, 0.999979, 0.999992, 0.999997]
    np.testing.assert_allclose(phi, want, rtol=1e-5)


@pytest.mark.parametrize("eps,delta", [(0.1, 0.01), (1.0, 1e-3), (0.5, 1e-6)])
def test_ratio_formula_b9(eps: float, delta: float) -> None:
    # π*_i/φ_i = 2(1 − e^{−εi})/(1 − e^{−ε}) for i <= min(L + 1, T); not beyond
    n = 200
    pi = K.reporting_probabilities(np.ones(n), eps, delta)
    phi = K.sbh_phi(n, eps, delta)
    i = np.arange(1, n + 1)
    lim = min(K.L_eps_delta(eps, delta) + 1, K.sbh_threshold(eps, delta))
    inside = i <= lim
    ratio = 2 * -np.expm1(-eps * i) / -math.expm1(-eps)
    np.testing.assert_allclose((pi / phi)[inside], ratio[inside], rtol=1e-10)
    assert not np.allclose((pi / phi)[~inside][:3], ratio[~inside][:3], rtol=1e-3)


def test_ratio_values_b10() -> None:
    # spec B10: ε = 0.1, δ = 0.01: 2.00, 3.81, 5.45, 6.93, 8.27; 17.54 at i = 18
    r = K.reporting_probabilities(np.ones(20), 0.1, 0.01) / K.sbh_phi(20, 0.1, 0.01)
    np.testing.assert_allclose(r[:5], [2.00, 3.81, 5.45, 6.93, 8.27], atol=0.005)
    assert r[17] == pytest.approx(17.54, abs=0.005)


def test_zipf_gains_b10() -> None:
    # spec B10: q ≡ 1, ε = 0.1, α = 1, int_zipf(size=1e4): PWS/SbH ratios
    size, alpha, eps = 10_000, 1.0, 0.1
    w = np.floor(((np.arange(size) + 1.0) ** -alpha) / (size**-alpha)).astype(int)
    w = w[w >= 1]
    got = []
    for delta in [1, 0.1, 1e-2, 1e-3, 1e-4, 1e-6, 1e-8]:
        n = int(w.max())
        pi = K.reporting_probabilities(np.ones(n), eps, delta)
        phi = K.sbh_phi(n, eps, delta)
        got.append(pi[w - 1].sum() / phi[w - 1].sum())
    # printed to two decimals (spec B10 truncates: 1.9767 is printed 1.97)
    np.testing.assert_allclose(got, [1.71, 3.14, 2.84, 1.97, 1.55, 1.29, 1.20], atol=0.01)


def test_sampled_sbh_q1_limit() -> None:
    # sampled SbH with τ large (q ≈ 1 where it matters) reduces to φ of q ≡ 1
    phi_s = K.sbh_phi(30, 1.0, 1e-3, method="ppswor", threshold=50.0)
    np.testing.assert_allclose(phi_s, K.sbh_phi(30, 1.0, 1e-3), rtol=1e-9)


# --- sampled SbH (004 Sec. 8.1, Alg. 6; spec B9): closed forms and quadrature -----------


def _sbh_grid(eps: float, delta: float, tau: float) -> list[int]:
    T = K.sbh_threshold(eps, delta)
    pts = [1, 2, 3, 7, 30, 1000, 123_457, 2_000_000, math.floor(T), math.ceil(T)]
    pts += [round(T + k / eps) for k in (0.5, 3, 30)] + [round(T + k / tau) for k in (0.5, 3)]
    return sorted({v for v in pts if 1 <= v <= 2_000_000})


@pytest.mark.parametrize("method", ["ppswor", "priority"])
def test_sbh_closed_form_matches_mpmath(method: str) -> None:
    # f(i) = i: φ_i in closed form (sums of non-negative terms) against the plain
    # antiderivatives at 60 digits, over small ε, δ = 1, large frequencies
    form = pws_sbh._sbh_ppswor_linear if method == "ppswor" else pws_sbh._sbh_priority_linear
    worst = 0.0
    for eps in (1e-4, 1e-3, 0.1, 20.0):
        for delta in (1.0, 1e-8):
            for tau in (1e-7, 1e-3, 1.0):
                T = K.sbh_threshold(eps, delta)
                if method == "priority" and tau * T >= 1:
                    continue  # q = 1 on [T, ∞): the q ≡ 1 form
                idx = _sbh_grid(eps, delta, tau)
                phi = form(np.array(idx, dtype=float), eps, T, tau)
                for k, i in enumerate(idx):
                    ref = float(phi_sbh_closed(i, eps, delta, method, tau))
                    worst = max(worst, abs(phi[k] - ref) / ref)
    assert worst < 1e-13
    # the public function dispatches to it
    phi = K.sbh_phi(3000, 0.01, 1.0, method=method, threshold=0.003)
    np.testing.assert_array_equal(phi, form(np.arange(1.0, 3001.0), 0.01, 1.0, 0.003))


def test_sbh_delta1_small_eps_issue_case() -> None:
    # δ = 1 (T = 1), ppswor, ε = 0.001, τ = 0.1: the 48-point quadrature over a 50/ε
    # window gave φ_1 = 0.49840 (off by 2.9e-3); exact 0.49552060684140614 (mpmath,
    # plain antiderivatives and tanh-sinh quadrature agree)
    phi = K.sbh_phi(3000, 0.001, 1.0, method="ppswor", threshold=0.1)
    ref = float(phi_sbh_closed(1, 0.001, 1.0, "ppswor", 0.1))
    assert ref == pytest.approx(0.49552060684140614, rel=1e-15)
    assert float(phi_sbh_quad(1, 0.001, 1.0, "ppswor", 0.1)) == pytest.approx(ref, rel=1e-15)
    assert phi[0] == pytest.approx(ref, rel=1e-14)
    for i in (2, 10, 100, 1000, 3000):
        assert phi[i - 1] == pytest.approx(
            float(phi_sbh_closed(i, 0.001, 1.0, "ppswor", 0.1)), rel=1e-13
        )


def test_sbh_phi_is_a_probability() -> None:
    # ppswor, τ = 0.1, ε = 0.1, δ = 1e-3: φ_5000 was 1.0000000000000815; exact
    # 1 − O(e^{−430}), i.e. 1.0 in floats
    phi = K.sbh_phi(5000, 0.1, 1e-3, method="ppswor", threshold=0.1)
    assert phi[4999] == 1.0 == float(phi_sbh_closed(5000, 0.1, 1e-3, "ppswor", 0.1))
    assert np.all((phi >= 0) & (phi <= 1)) and np.all(np.diff(phi) >= 0)
    for method, p in [("ppswor", 1.0), ("priority", 1.0), ("ppswor", 2.0), ("priority", 0.5)]:
        phi = K.sbh_phi(3000, 0.5, 1e-6, method=method, threshold=0.3, weight_power=p)
        assert np.all((phi >= 0) & (phi <= 1))


def test_sbh_priority_huge_power_does_not_overflow() -> None:
    # T = 1 + ln 2/1e-4 = 6932.5 and T^100 overflows a float: this was an internal error
    # from `bound`; τT^p >= 1, so q = 1 on [T, ∞) and φ is the q ≡ 1 form
    phi = K.sbh_phi(10, 1e-4, 0.5, method="priority", threshold=0.01, weight_power=100.0)
    np.testing.assert_array_equal(phi, K.sbh_phi(10, 1e-4, 0.5))
    r = engine.bound(
        design(
            method="priority",
            threshold=0.01,
            weight_power=100,
            max_frequency=10,
            target={"epsilon_prime": 1e-4, "delta_prime": 0.5},
        )
    ).to_dict()
    assert r["details"]["frequencies"][0]["phi_sbh"] == phi[0]


def test_sbh_quadrature_matches_closed_form() -> None:
    # two independent computations of the f(i) = i integral: composite quadrature and
    # the closed forms (each checked against mpmath above)
    for method in ("ppswor", "priority"):
        for eps, delta, tau in [
            (1e-3, 1.0, 0.1),
            (0.1, 1e-3, 1e-4),
            (20.0, 1.0, 1e-7),
            (0.5, 0.5, 3.0),
        ]:
            T = K.sbh_threshold(eps, delta)
            if method == "priority" and tau * T >= 1:
                continue
            i = np.array(_sbh_grid(eps, delta, tau), dtype=float)
            got = pws_sbh._sbh_quadrature(i, eps, T, method, tau, 1.0)
            form = (
                pws_sbh._sbh_ppswor_linear if method == "ppswor" else pws_sbh._sbh_priority_linear
            )
            np.testing.assert_allclose(got, form(i, eps, T, tau), rtol=1e-13)


@pytest.mark.parametrize(
    "method,p,eps,delta,tau,i",
    [
        ("ppswor", 0.5, 0.001, 1e-3, 1e-7, 123_457),
        ("ppswor", 2.0, 0.1, 1.0, 1e-3, 40),
        ("priority", 1.5, 20.0, 1e-3, 1e-3, 2),
        ("priority", 3.0, 0.1, 1e-3, 1e-7, 200),
    ],
)
def test_sbh_quadrature_matches_mpmath(
    method: str, p: float, eps: float, delta: float, tau: float, i: int
) -> None:
    # f(i) = i^p, p ≠ 1: no closed form; composite Gauss–Legendre split at both scales
    got = K.sbh_phi(i, eps, delta, method=method, threshold=tau, weight_power=p)[i - 1]
    assert got == pytest.approx(float(phi_sbh_quad(i, eps, delta, method, tau, p)), rel=1e-13)


@pytest.mark.slow
def test_sbh_quadrature_sweep_matches_mpmath() -> None:
    rng = np.random.default_rng(11)
    worst = 0.0
    for method in ("ppswor", "priority"):
        for p in (0.3, 0.5, 1.5, 2.0, 3.0, 7.0):
            for eps in (1e-3, 0.1, 1.0, 20.0):
                for delta in (1.0, 1e-3):
                    for tau in (1e-7, 1e-3, 0.1, 2.0):
                        T = K.sbh_threshold(eps, delta)
                        if (method == "priority" and tau * T**p >= 1) or rng.random() > 0.25:
                            continue
                        grid = _sbh_grid(eps, delta, tau)
                        grid.append(round((1 / tau) ** (1 / p)))
                        ii = np.array(sorted(rng.choice(grid, 2, replace=False)), dtype=float)
                        got = pws_sbh._sbh_quadrature(ii, eps, T, method, tau, p)
                        for k, i in enumerate(ii.tolist()):
                            ref = float(phi_sbh_quad(i, eps, delta, method, tau, p))
                            worst = max(worst, abs(got[k] - ref) / ref)
    assert worst < 1e-13


@pytest.mark.parametrize(
    "a,b,x",
    [
        (0.1, 0.1, 3.0),
        (0.1, 0.1 + 1e-12, 3.0),
        (1e-4, 1e-7, 5.0),
        (2.0, 3.0, 1e-9),
        (1e-3, 5.0, 0.1),
        (5.0, 1e-3, 40.0),
        (0.3, 0.7, 0.99 / 0.7),  # the two sides of the series/closed-form switch
        (0.3, 0.7, 1.01 / 0.7),
    ],
)
def test_hypoexponential_cdf_matches_mpmath(a: float, b: float, x: float) -> None:
    got = float(K.hypoexponential_cdf(a, b, np.array([x]))[0])
    assert got == pytest.approx(float(hypoexponential_cdf(a, b, x)), rel=1e-14)


# --- priority sampling with τ = δ: π_i = q_i exactly ---------------------------------------


@pytest.mark.parametrize("tau,eps", [(1e-3, 1.0), (1e-3, 0.01), (0.01, 0.5), (2**-10, 1.0)])
def test_priority_tau_delta_reports_every_sampled_key(tau: float, eps: float) -> None:
    # 004 Sec. 8.1 (Fig. 4): PWS reporting approaches non-private sampling as τ → δ. At
    # τ = δ both privacy terms of Alg. 3 are >= τ·i, so π_i = q_i = min(1, τi) for every
    # i (mpmath on the exact q). At i = 1/τ the float q_{i−1} = fl(τ(i−1)) rounds below
    # 1 − δ, and the float step gave π = 1 − 2^-53 at q = 1: a spurious cost row.
    top = round(1 / tau)
    n = top + 3
    with mp.workdps(50):
        exact = [min(mp.mpf(1), mp.mpf(tau) * i) for i in range(1, n + 1)]
    ref = pi_alg3(exact, eps, tau)
    assert all(r == e for r, e in zip(ref, exact, strict=True))
    d = design(method="priority", threshold=tau, target={"epsilon_prime": eps, "delta_prime": tau})
    det = engine.bound(d).to_dict()["details"]
    assert det["privacy_cost_rows"] == 0 and det["privacy_cost_frequencies"] == "none"
    assert det["settled_from"] == 1
    table = api.pws_table(d, n, verify=True)
    assert table["privacy_cost_rows"] == 0 and table["verified"] is True
    assert [r["pi"] for r in table["frequencies"]] == [float(e) for e in exact]
    assert table["frequencies"][top - 1]["pi"] == 1.0
    # the sanitizer keeps every sampled key (p = 1), the same table
    _, params = api.pws_design([d])
    san = api.PwsSanitiser(params, frequencies=False, extend=True)
    san.ensure(n, "test")
    assert np.all(san.p == 1.0)


def test_priority_tau_delta_float_q_alone_cannot_tell() -> None:
    # the issue's reproduction: fl(0.999) + fl(0.001) < 1 in exact arithmetic, so from the
    # floats alone Algorithm 3 must stay below 1; with the exact q = τ·i it is 1
    q = K.inclusion_probabilities(1001, method="priority", threshold=1e-3)
    assert K.reporting_probabilities(q, 1.0, 1e-3)[999] == 1.0 - 2.0**-53
    exact = pws.exact_q(design(method="priority", threshold=1e-3).params)
    assert exact is not None and exact(999) + Fraction(1e-3) > 1
    pi = K.reporting_probabilities(q, 1.0, 1e-3, exact=exact)
    assert np.array_equal(pi, q)
    # no exact form: ppswor, non-integer powers, explicit lists (their floats are exact)
    assert pws.exact_q(design(method="ppswor", threshold=1e-3).params) is None
    assert pws.exact_q(design(method="priority", threshold=1e-3, weight_power=1.5).params) is None
    assert pws.exact_q(design(inclusion=[0.5, 1.0]).params) is None


@pytest.mark.parametrize("delta", [1e-9, 1e-3, 1.0])
def test_delta_prime_printed_with_every_upper_bound(delta: float) -> None:
    # issue 15 V4 audit: wherever pws prints an upper ε′ it carries δ′ = the target δ > 0
    for sampling in [{"method": "none"}, {"method": "ppswor", "threshold": 0.01}]:
        d = design(
            **sampling, max_frequency=50, target={"epsilon_prime": 0.5, "delta_prime": delta}
        )
        r = engine.bound(d).to_dict()
        assert r["epsilon_prime"]["upper"] == 0.5 and r["delta_prime"] == delta
        rows = api.sweep(d, {"sampling.threshold": "0.01,0.1"}).to_dict()["rows"]
        assert len(rows) == 2
        assert all(r["epsilon_prime.upper"] == 0.5 and r["delta_prime"] == delta for r in rows)
        assert api.invert(d).to_dict()["epsilon"]["certified"] is None  # no ε′ printed


# --- sanitizer ----------------------------------------------------------------------------


def test_sanitizer_frequencies_match_pi() -> None:
    # keys-only reporting rate per frequency within 4.5 binomial standard deviations
    q = K.inclusion_probabilities(12, method="priority", threshold=0.1)
    rows = K.frequency_rows(q, 1.0, 1e-2)
    p = rows.pi / q
    n_keys = 20000
    for w in [2, 5, 8, 12]:
        keys = [f"k{w}-{i}" for i in range(n_keys)]
        kept, tokens = K.sanitize_keys(keys, np.full(n_keys, w), seed=7, p=p, rows=rows)
        sd = math.sqrt(p[w - 1] * (1 - p[w - 1]) / n_keys) + 1e-12
        assert abs(kept.mean() - p[w - 1]) <= 4.5 * sd
        dist = np.bincount(tokens[kept], minlength=w + 1)[1:] / n_keys
        want = rows.dense(w)[1:] / q[w - 1]
        assert np.all(np.abs(dist - want) <= 4.5 * np.sqrt(want * (1 - want) / n_keys) + 1e-12)


def test_sanitizer_is_counter_based() -> None:
    keys = [f"key{i}" for i in range(1000)]
    u = K.key_uniforms(keys, 42)
    np.testing.assert_array_equal(u[500:], K.key_uniforms(keys[500:], 42))
    np.testing.assert_array_equal(u[::-1], K.key_uniforms(keys[::-1], 42))
    assert not np.array_equal(u, K.key_uniforms(keys, 43))


# --- the scheme ---------------------------------------------------------------------------


def test_bound_details_pinned() -> None:
    r = engine.bound(design(method="none", max_frequency=20)).to_dict()
    assert r["verdict"] == "calibrated"
    assert r["epsilon_prime"]["upper"] == 1.0 and r["delta_prime"] == 1e-3
    d = r["details"]
    assert d["L"] == pytest.approx(6.136982, abs=1e-6)
    assert d["first_frequency_half"] == 7  # π_7 = 0.6376 >= ½ > π_6
    assert d["privacy_cost_rows"] == 13
    f = d["frequencies"]
    assert len(f) == 20 and set(f[0]) >= {"frequency", "q", "pi", "p", "phi_sbh"}
    assert f[7]["pi"] == pytest.approx(0.8670605017, rel=1e-9)
    assert f[7]["phi_sbh"] == pytest.approx(0.544059, rel=1e-5)
    json.dumps(r, allow_nan=False)


def test_issue_example_q1_eps001() -> None:
    # issue: q ≡ 1, ε = 0.01, δ = 1e-6: π_1000 = 0.886, π first 1 at i = 1705
    r = engine.bound(design(method="none", target={"epsilon_prime": 0.01, "delta_prime": 1e-6}))
    d = r.to_dict()["details"]
    assert d["settled_from"] == 1705 and d["max_frequency"] == 1705
    assert d["frequencies"][999]["pi"] == pytest.approx(0.886, abs=5e-4)
    r2 = engine.bound(
        design(
            method="none", max_frequency=1000, target={"epsilon_prime": 0.01, "delta_prime": 1e-6}
        )
    )
    assert any("stops before" in n for n in r2.notes)


def test_delta_zero_explained() -> None:
    with pytest.raises(DesignError, match="no key can ever be reported"):
        design(method="none", target={"epsilon_prime": 1.0, "delta_prime": 0.0})


def test_non_decreasing_q_required() -> None:
    with pytest.raises(DesignError, match="non-decreasing"):
        design(method="priority", threshold=0.1, weight_power=-1)
    with pytest.raises(DesignError, match=r"q_3 = 0\.1 < q_2 = 0\.5"):
        design(inclusion=[0.2, 0.5, 0.1])


def test_explicit_inclusion_matches_method() -> None:
    q = K.inclusion_probabilities(50, method="priority", threshold=0.05).tolist()
    a = engine.bound(design(inclusion=q, max_frequency=50)).to_dict()["details"]["frequencies"]
    b = engine.bound(design(method="priority", threshold=0.05, max_frequency=50))
    b = b.to_dict()["details"]["frequencies"]
    assert [r["pi"] for r in a] == [r["pi"] for r in b]


def test_sanitizer_over_many_seeds_matches_pi() -> None:
    # the same 50 keys of frequency w over 400 seeds: reporting rate π_w/q_w (keys only)
    q = K.inclusion_probabilities(40, method="none")
    pi = K.reporting_probabilities(q, 0.25, 1e-3)
    keys = [f"user{i}" for i in range(50)]
    for w in [10, 20, 30]:
        hits = sum(
            int(K.sanitize_keys(keys, np.full(50, w), seed=s, p=pi / q)[0].sum())
            for s in range(400)
        )
        n = 50 * 400
        p = pi[w - 1]
        assert abs(hits / n - p) <= 4.5 * math.sqrt(p * (1 - p) / n) + 1e-12


@settings(max_examples=60, deadline=None)
@given(
    eps=st.floats(1e-3, 5.0),
    log_delta=st.floats(-12, 0),
    method=st.sampled_from(["ppswor", "priority", "none"]),
    log_tau=st.floats(-4, 0),
)
def test_alg3_properties(eps: float, log_delta: float, method: str, log_tau: float) -> None:
    delta = 10.0**log_delta
    q = K.inclusion_probabilities(400, method=method, threshold=10.0**log_tau)
    pi = K.reporting_probabilities(q, eps, delta)
    assert np.all(pi <= q) and np.all(np.diff(pi) >= 0)
    assert pi[0] == pytest.approx(min(q[0], delta), rel=1e-15)
    # exact rational check on the float π (no slack): the keys-only sanitizer is DP
    assert K.dp_check_pi_exact(pi, eps) <= delta
    if method == "none":
        np.testing.assert_allclose(pi_star_closed(eps, delta, 400), pi, atol=1e-11)
    if method == "ppswor":
        np.testing.assert_allclose(lemma44_ppswor(eps, delta, q), pi, atol=1e-11)
