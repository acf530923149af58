"""Importance sampling with personalised privacy (Personalized Privacy Amplification via
Importance Sampling, spec Part A).

Golden vectors are from spec importance-and-weighted-sampling.md §A13 (printed values
quoted in comments); the independent oracle is tests/oracle_importance.py (mpmath).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ampcalc import engine
from ampcalc.designs.document import load_designs
from ampcalc.math import numeric
from ampcalc.math.importance import (
    lloyd_noise_scales,
    personalised_epsilon,
    privacy_constrained_weights,
    uniforms,
)
from ampcalc.model.errors import DesignError

sys.path.insert(0, str(Path(__file__).parent))
import oracle_importance as oracle
from conftest import run_ampcalc, run_main

SIX = [(3, 0), (0, -2), (1, 1), (-0.5, 0.5), (0.2, -0.1), (0, 0.05)]


def write_csv(path: Path, rows, header="x,y") -> Path:
    text = (header + "\n" if header else "") + "\n".join(
        ",".join(str(v) for v in row) for row in rows
    )
    path.write_text(text + "\n")
    return path


def design(tmp_path: Path, body: str, name: str = "d.yaml") -> Path:
    p = tmp_path / name
    p.write_text(body)
    return p


@pytest.fixture
def six(tmp_path: Path) -> Path:
    return write_csv(tmp_path / "six.csv", SIX)


def laplace_design(tmp_path: Path, probabilities: str, extra: str = "", target: str = "1.0"):
    body = f"""
mechanism: {{profile: laplace-sum, scale: 4.0}}
sampling:
  scheme: importance
  records: six.csv
  probabilities: {probabilities}
  radius: 3.0
{extra}
target: {{epsilon_prime: {target}}}
"""
    return design(tmp_path, body)


# ---- A13 amplify and Lambert-W table ----------------------------------------------------


def test_amplify_vectors() -> None:
    # spec A13: amplify(2, 1) = 2.0; amplify(1, 10) = 0.158565078740429;
    # amplify(0.5, 4) = 0.150297825112806
    # (ε̂ = A(1/w, ε(w, x)), 003 Theorem 6, evaluated by numeric.amplification)
    for eps_w, w, want in [(2.0, 1.0, 2.0), (1.0, 10.0, 0.158565078740429)]:
        got = numeric.amplification(np.array(1.0 / w), np.array(eps_w))
        assert got == pytest.approx(want, rel=1e-13)
        assert float(oracle.amplify(eps_w, w)) == pytest.approx(want, rel=1e-14)
    got = numeric.amplification(np.array(0.25), np.array(0.5))
    assert got == pytest.approx(0.150297825112806, rel=1e-13)


LAMBERT = [  # spec A13 table: a, ε*, w*, q*
    (0.01, 1, 710.862178, 0.00140674),
    (0.05, 2, 135.258636, 0.00739324),
    (0.1, 1, 43.2070903, 0.0231443),
    (0.1, 5, 95.5272143, 0.0104682),
    (0.3, 2, 15.3111221, 0.065312),
    (0.9, 1, 1.30985735, 0.763442),
    (0.9, 5, 7.83656062, 0.127607),
]


@pytest.mark.parametrize(("a", "eps_star", "w_ref", "q_ref"), LAMBERT)
def test_lambert_table(a: float, eps_star: float, w_ref: float, q_ref: float) -> None:
    w = privacy_constrained_weights(np.array([a]), eps_star)[0]
    assert w == pytest.approx(w_ref, rel=1e-8)
    assert 1 / w == pytest.approx(q_ref, rel=1e-5)
    # "in every row amplify(a·w*, w*) = ε* to 1e-12" — and never above (no over-claim)
    exact = oracle.amplify(oracle.mp.mpf(a) * oracle.mp.mpf(w), w)
    assert exact <= eps_star
    assert float(exact) == pytest.approx(eps_star, abs=1e-12)


def test_midpoint_error_of_reference_code_is_not_repeated() -> None:
    # spec A6: the Rust-style midpoint w = 43.210938 gives ε̂ = 1.00019 > ε* = 1
    assert float(oracle.amplify(0.1 * 43.210938, 43.210938)) == pytest.approx(1.00019, abs=1e-5)
    w = privacy_constrained_weights(np.array([0.1]), 1.0)[0]
    assert w <= float(oracle.w_star(0.1, 1.0))


@settings(max_examples=60, deadline=None)
@given(
    a=st.floats(1e-6, 10.0),
    eps_star=st.floats(1e-4, 30.0),
)
def test_no_over_claim_against_oracle(a: float, eps_star: float) -> None:
    w = privacy_constrained_weights(np.array([a]), eps_star)[0]
    if a > eps_star:
        assert math.isnan(w)  # infeasible (Ass. 8)
        return
    ws = oracle.w_star(a, eps_star)
    # the certified weight is on the feasible side of the exact w*, and close to it
    # (1e-40: the oracle's own 50-digit rounding; at w = 1, ε̂ = a exactly)
    assert (
        oracle.amplify(oracle.mp.mpf(a) * oracle.mp.mpf(w), w) <= oracle.mp.mpf(eps_star) + 1e-40
    )
    assert w <= ws * (1 + 1e-15)
    assert float((ws - w) / ws) < 1e-9


def test_near_zero_target_uses_bisection_and_stays_feasible() -> None:
    # 1 − r < 1e-6: the Lambert-W argument is at −1/e (spec A7); bisection takes over
    eps_star = 1e-7
    a = np.array([eps_star * 0.9999999, 1e-9, 0.0])
    w = privacy_constrained_weights(a, eps_star)
    assert w[2] == np.inf
    for ai, wi in zip(a[:2], w[:2], strict=True):
        assert oracle.amplify(oracle.mp.mpf(ai) * oracle.mp.mpf(wi), wi) <= eps_star
        assert float(wi) == pytest.approx(float(oracle.w_star(ai, eps_star)), rel=1e-7)


def test_blocked_weights_and_their_certified_eps_hat_are_the_whole_arrays(monkeypatch) -> None:
    """``privacy_constrained`` works in blocks of records (on threads if asked) and
    hands back the ε̂ its certification evaluated: both the same bits as one pass over
    the whole array and as ``eps_hat_upper_w`` evaluated again on the weights
    (Theorem 10; spec A7)."""
    from ampcalc.math import importance as kern

    rng = np.random.default_rng(7)
    eps_star = 1.0
    # interior records, the ill-conditioned end (bisection), a = 0, infeasible, negative
    a = np.concatenate(
        [rng.uniform(0.0, 1.0, 997), [eps_star * 0.9999999, 0.0, 1.5, -0.1, eps_star]]
    )
    w, e = kern.privacy_constrained(a, eps_star)
    monkeypatch.setattr(kern, "BLOCK", 64)
    w_blocks, e_blocks = kern.privacy_constrained(a, eps_star)
    assert w_blocks.tobytes() == w.tobytes() and e_blocks.tobytes() == e.tobytes()
    w_threads, e_threads = kern.privacy_constrained(a, eps_star, threads=2)
    assert w_threads.tobytes() == w.tobytes() and e_threads.tobytes() == e.tobytes()
    pos = (a > 0) & (a <= eps_star)
    again = kern.eps_hat_upper_w(a[pos], w[pos])
    assert e[pos].tobytes() == again.tobytes()
    # certified wherever the weight could go down (at w = 1, a = ε* is over by the rounding)
    assert (e[pos & (w > 1.0)] <= eps_star).all() and np.isnan(e[~pos]).all()
    assert w[a == 0.0][0] == np.inf and np.isnan(w[(a > eps_star) | (a < 0)]).all()


def test_lloyd_strong_convexity_is_squared() -> None:
    # spec A9/A12-2: μ = (T s)² e^{T s}, not T²·s·e^{Ts}
    s, t = 0.03, 10
    mu = float(oracle.lloyd_strong_convexity(s, t))
    assert mu == pytest.approx((t * s) ** 2 * math.exp(t * s), rel=1e-15)
    assert mu != pytest.approx(t**2 * s * math.exp(t * s))


@settings(max_examples=50, deadline=None)
@given(a=st.floats(1e-6, 50), q1=st.floats(1e-6, 1.0), q2=st.floats(1e-6, 1.0))
def test_linear_profile_monotone_in_q(a: float, q1: float, q2: float) -> None:
    # spec A4 (003 App. A, Props. 16/17): for ε = a·w, ε̂ is non-increasing in q
    lo, hi = sorted((q1, q2))
    e_lo = personalised_epsilon(np.array(lo), np.array(a), rounding="down")
    e_hi = personalised_epsilon(np.array(hi), np.array(a), rounding="up")
    assert e_lo >= e_hi * (1 - 1e-14)
    assert e_hi >= a * (1 - 1e-14)  # never below the unsampled loss ε(1, x) = a


def test_overflow_large_weights() -> None:
    # a/q = 1e6: stable logaddexp branch; mpmath reference
    e = personalised_epsilon(np.array(1e-5), np.array(10.0))
    assert float(e) >= float(oracle.eps_hat_q(1e-5, 10.0))
    assert float(e) == pytest.approx(float(oracle.eps_hat_q(1e-5, 10.0)), rel=1e-14)


def test_philox_draws_do_not_depend_on_chunking() -> None:
    whole = uniforms(42, 0, 1000)
    parts = np.concatenate([uniforms(42, s, 100) for s in range(0, 1000, 100)])
    np.testing.assert_array_equal(whole, parts)
    assert 0 < whole.min() and whole.max() < 1
    assert not np.array_equal(whole, uniforms(43, 0, 1000))


# ---- six-point Laplace example (spec A13) --------------------------------------------------


def test_six_point_privacy_constrained(tmp_path: Path, six: Path) -> None:
    d = load_designs(laplace_design(tmp_path, "privacy-constrained"))[0]
    r = engine.bound(d)
    # w* = [1.971934, 4.221208, 4.221208, 12.428239, 62.470579, 547.874643]; m = 1.079209
    assert r.verdict == "calibrated"
    assert r.upper == 1.0
    assert r.lower <= 1.0 and r.lower == pytest.approx(1.0, abs=1e-12)
    assert r.epsilon == pytest.approx(0.75)  # sup ε(1, x) = r/β = 3/4
    assert r.details["expected_size"] == pytest.approx(1.079209, abs=1e-6)
    assert r.details["records"] == 6 and r.details["infeasible_records"] == 0
    assert r.details["quantiles"]["max"] <= 1.0
    from ampcalc.schemes.importance import bind_target, record_figures

    fig = record_figures(bind_target(d.params, d.target), d.mechanism, 1.0, 1.0)
    np.testing.assert_allclose(
        fig.w, [1.971934, 4.221208, 4.221208, 12.428239, 62.470579, 547.874643], rtol=1e-6
    )
    np.testing.assert_allclose(
        fig.q, [0.507116, 0.236899, 0.236899, 0.080462, 0.016008, 0.001825], atol=1e-6
    )


def test_six_point_uniform(tmp_path: Path, six: Path) -> None:
    # unif q = 0.179868 (= m/n, m = 1.079209): ε̂ = [2.522293, 1.313425, 1.313425,
    # 0.433215, 0.088978, 0.012862], max 2.522293 (spec A13)
    m = 1.0792089590604705
    d = load_designs(
        laplace_design(tmp_path, "uniform", f"  expected_size: {m!r}\n  population: 6\n")
    )[0]
    r = engine.bound(d)
    assert r.upper == pytest.approx(2.522293, abs=1e-6)
    assert r.upper >= float(oracle.eps_hat_q(m / 6, 0.75))
    assert r.lower <= float(oracle.eps_hat_q(m / 6, 0.75)) <= r.upper
    assert r.verdict == "degrades"  # weight-linear profiles are not amplified (A4)
    assert r.details["quantiles"]["max"] == pytest.approx(2.522293, abs=1e-6)
    from ampcalc.schemes.importance import record_figures

    fig = record_figures(d.params, d.mechanism)
    np.testing.assert_allclose(
        fig.eps_hat, [2.522293, 1.313425, 1.313425, 0.433215, 0.088978, 0.012862], atol=1e-6
    )


def test_six_point_compare_mse(tmp_path: Path, six: Path) -> None:
    # total MSE: priv 102.229493, unif 134.913609 (spec A13)
    from ampcalc import schemes

    d = load_designs(laplace_design(tmp_path, "privacy-constrained"))[0]
    out = schemes.get("importance").compare(d, 1.0)
    rows = out["strategies"]
    assert out["expected_size"] == pytest.approx(1.079209, abs=1e-6)
    assert rows["privacy-constrained"]["mse"] == pytest.approx(102.229493, abs=1e-5)
    assert rows["uniform"]["mse"] == pytest.approx(134.913609, abs=1e-5)
    assert rows["uniform"]["max_epsilon_hat"] == pytest.approx(2.522293, abs=1e-6)
    assert rows["privacy-constrained"]["max_epsilon_hat"] <= 1.0
    for row in rows.values():
        assert row["expected_size"] == pytest.approx(1.079209, abs=1e-6)
    # var-opt (not DP): MSE 99.118825, max ε̂ 1.138056 (spec A13)
    assert rows["var-opt (not DP)"]["mse"] == pytest.approx(99.118825, abs=1e-5)
    assert rows["var-opt (not DP)"]["max_epsilon_hat"] == pytest.approx(1.138056, abs=1e-6)


def test_six_point_var_opt_and_per_dimension() -> None:
    from ampcalc.math.importance import var_opt_probabilities

    x = np.array(SIX, dtype=float)
    # var-opt q = [0.437817, 0.291878, 0.206389, 0.103195, 0.032633, 0.007297] (A13)
    q = var_opt_probabilities(np.linalg.norm(x, axis=1), 1.079209)
    np.testing.assert_allclose(
        q, [0.437817, 0.291878, 0.206389, 0.103195, 0.032633, 0.007297], atol=2e-6
    )
    # per-dimension priv MSE [49.284501, 52.944993]; no-sampling noise alone 2dβ² = 64
    a = np.abs(x).sum(axis=1) / 4
    q_priv = 1 / privacy_constrained_weights(a, 1.0)
    np.testing.assert_allclose(
        [float(v) for v in oracle.laplace_sum_variance(q_priv, x, 4.0)],
        [49.284501, 52.944993],
        atol=1e-5,
    )
    assert float(sum(oracle.laplace_sum_variance(np.ones(6), x, 4.0))) == pytest.approx(64.0)


def test_lloyd_core_probabilities() -> None:
    # core q for z ∈ {0, .25, .5, 1}: [0.05, 0.060417, 0.091667, 0.216667] (A13:
    # λ = 0.5, m = 1000, n = 10000, x̃ = 0.3)
    from ampcalc.schemes.importance import coreset_q

    q = coreset_q(np.array([0.0, 0.25, 0.5, 1.0]), mix=0.5, m=1000, n=10000, xbar=0.3)
    np.testing.assert_allclose(q, [0.05, 0.060417, 0.091667, 0.216667], atol=1e-6)


# ---- DP-Lloyd example (spec A13) -------------------------------------------------------------

LLOYD = """
mechanism: {{profile: dp-lloyd, iterations: 10, {noise}}}
sampling:
  scheme: importance
  records: pts.csv
  probabilities: {mode}
  radius: 1.0
  expected_size: 1000
  population: 10000
  mean_sq_norm: 0.3
  mix: 0.5
"""


@pytest.fixture
def pts(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    x = rng.uniform(-0.6, 0.6, size=(50, 2))
    return write_csv(tmp_path / "pts.csv", x.tolist(), header="a,b")


def lloyd(tmp_path: Path, mode: str, noise: str = "noise_constant: 1.0"):
    return load_designs(design(tmp_path, LLOYD.format(mode=mode, noise=noise)))[0]


def test_lloyd_noise_scales() -> None:
    # B = 1, d = 2, r = 1, T = 10: β_sum = 5.199232, β_count = 3.846722 (spec A13)
    bs, bc = lloyd_noise_scales(1.0, 2, 1.0, 10)
    assert bs == pytest.approx(5.199232, abs=1e-6)
    assert bc == pytest.approx(3.846722, abs=1e-6)


def test_lloyd_uniform_and_core(tmp_path: Path, pts: Path) -> None:
    # full-data ε = 4.522977; unif ε = 42.927184; core dense 51.088001 at z = 0.10878
    u = engine.bound(lloyd(tmp_path, "uniform"))
    assert u.epsilon == pytest.approx(4.522977, abs=1e-6)
    assert u.upper == pytest.approx(42.927184, abs=1e-6)
    c = engine.bound(lloyd(tmp_path, "coreset"))
    assert c.upper == pytest.approx(51.088001, abs=1e-6)
    assert c.details["domain_argmax_norm"] == pytest.approx(0.10878, abs=1e-5)
    d = lloyd(tmp_path, "coreset")
    prof = d.mechanism
    ref, _ = oracle.coreset_lloyd_max(
        prof.coefficients.alpha, prof.coefficients.slope, 0.05, 0.5 * 1000 / 3000, 1.0, 400
    )
    assert c.lower <= ref <= c.upper
    assert (c.upper - c.lower) / c.upper < 1e-8


def test_lloyd_refined_maximum_beats_100_point_grid(tmp_path: Path, pts: Path) -> None:
    # calibrated B = 0.004232: grid100 says 1.000000000, true max 1.000043 (z = 0.1485);
    # unif at the same B gives 1.028265 (spec A13, A12-4)
    scales = "count_scale: 59.129922, sum_scale: 79.920028"
    c = engine.bound(lloyd(tmp_path, "coreset", scales))
    assert c.upper == pytest.approx(1.000043, abs=1e-6)
    assert c.details["domain_argmax_norm"] == pytest.approx(0.1485, abs=1e-3)
    u = engine.bound(lloyd(tmp_path, "uniform", scales))
    assert u.upper == pytest.approx(1.028265, abs=2e-6)


def test_lloyd_opt_weights() -> None:
    # ε* = 1, β_sum = 79.920028, β_count = 59.129922, z ∈ {0, .25, .5, 1}:
    # ε(1,x) = [0.169119, 0.200400, 0.231682, 0.294244];
    # w* = [21.500207, 17.009702, 13.862192, 9.788897]
    z = np.array([0.0, 0.25, 0.5, 1.0])
    a = 10 * (1 / 59.129922 + z / 79.920028)
    np.testing.assert_allclose(a, [0.169119, 0.200400, 0.231682, 0.294244], atol=1e-6)
    w = privacy_constrained_weights(a, 1.0)
    np.testing.assert_allclose(w, [21.500207, 17.009702, 13.862192, 9.788897], atol=2e-6)


def test_lloyd_invert_noise_constant(tmp_path: Path, pts: Path) -> None:
    # calibrating core to ε = 1 gives B = 0.004232 in the paper's code (grid100); the
    # sound supremum needs a slightly smaller B (its grid under-reports the maximum)
    r = engine.invert(lloyd(tmp_path, "coreset"), 1.0)
    knob = r.to_dict()["knob"]
    assert knob["name"] == "noise_constant"
    b_grid100 = 10 * (2 / (2 * 0.225)) ** (2 / 3) / 79.920028**2  # B behind β_sum above
    assert knob["value"] < b_grid100
    assert knob["value"] == pytest.approx(b_grid100, rel=1e-4)
    d = lloyd(tmp_path, "coreset", f"noise_constant: {knob['value']!r}")
    assert engine.bound(d).upper <= 1.0


# ---- Proposition 3 recovery and knobs ----------------------------------------------------------


def test_constant_profile_recovers_prop3(tmp_path: Path, six: Path) -> None:
    # a weight-ignoring profile ε: ε̂ = log(1 + q(e^ε − 1)) with q = m/N (Prop. 3)
    p = design(
        tmp_path,
        """
mechanism: {profile: constant, epsilon: 2.0}
sampling: {scheme: importance, records: six.csv, probabilities: uniform, radius: 3,
           expected_size: 100, population: 10000}
""",
    )
    r = engine.bound(load_designs(p)[0])
    exact = math.log1p(0.01 * math.expm1(2.0))
    assert r.lower <= exact <= r.upper
    assert r.upper == pytest.approx(exact, rel=1e-14)
    assert r.verdict == "amplifies"
    inv = engine.invert(load_designs(p)[0], 0.05).to_dict()
    # largest m with log(1 + (m/N)(e² − 1)) <= 0.05
    m_exact = 10000 * math.expm1(0.05) / math.expm1(2.0)
    assert inv["knob"]["name"] == "expected_size"
    assert inv["knob"]["value"] <= m_exact
    assert inv["knob"]["value"] == pytest.approx(m_exact, rel=1e-9)


def test_invert_scale_and_expected_size(tmp_path: Path, six: Path) -> None:
    base = "  expected_size: 2\n  population: 6\n"
    d = load_designs(laplace_design(tmp_path, "uniform", base))[0]
    inv = engine.invert(d, 1.0).to_dict()
    assert inv["knob"]["name"] == "scale"
    beta = inv["knob"]["value"]
    # uniform: ε̂ = log(1 + q(e^{(r/β)/q} − 1)) = 1 at q = 1/3, r = 3
    beta_exact = 3 / (math.log1p(math.expm1(1.0) * 3) / 3)
    assert beta >= beta_exact and beta == pytest.approx(beta_exact, rel=1e-10)
    d2 = load_designs(laplace_design(tmp_path, "uniform", base + "  knob: expected_size\n"))[0]
    inv2 = engine.invert(d2, 3.0).to_dict()
    m = inv2["knob"]["value"]
    # smallest m: ε̂ falls as q grows (A4); check the one-sided round trip
    upper_at = engine.bound(
        load_designs(
            laplace_design(tmp_path, "uniform", f"  expected_size: {m!r}\n  population: 6\n")
        )[0]
    ).upper
    assert upper_at <= 3.0
    below = float(np.nextafter(m, 0) * (1 - 1e-9))
    upper_below = engine.bound(
        load_designs(
            laplace_design(tmp_path, "uniform", f"  expected_size: {below!r}\n  population: 6\n")
        )[0]
    ).upper
    assert upper_below > 3.0 - 1e-9


def test_privacy_constrained_invert(tmp_path: Path, six: Path) -> None:
    d = load_designs(laplace_design(tmp_path, "privacy-constrained", "  expected_size: 1.5\n"))[0]
    inv = engine.invert(d, 1.0).to_dict()
    assert inv["epsilon"]["certified"] == 1.0
    assert inv["knob"] == {"name": "expected_size", "value": pytest.approx(1.079209, abs=1e-6)}
    t = inv["details"]["target_for_expected_size"]
    assert t["epsilon_prime"] < 1.0  # a larger size needs a smaller ε*
    d2 = load_designs(
        laplace_design(tmp_path, "privacy-constrained", "", target=repr(t["epsilon_prime"]))
    )[0]
    assert engine.bound(d2).details["expected_size"] <= 1.5 * (1 + 1e-12)
    assert "data-dependent" in t["warning"]
    assert any("data-dependent" in w for w in inv["warnings"])


def test_coreset_l1_profile_worst_point(tmp_path: Path, six: Path) -> None:
    # ℓ1 profile with an ℓ2 coreset map: at fixed ‖x‖₁ = z the worst point has
    # ‖x‖₂ = z/√d; check against a brute-force mpmath maximum over both norms
    d = load_designs(
        laplace_design(
            tmp_path,
            "coreset",
            "  expected_size: 2\n  population: 6\n  mean_sq_norm: 2.5\n",
        )
    )[0]
    r = engine.bound(d)
    mp = oracle.mp
    best = mp.mpf(0)
    for i in range(1, 301):
        z1 = mp.mpf(3) * i / 300
        for j in range(0, 21):
            z2 = z1 / mp.sqrt(2) + (z1 - z1 / mp.sqrt(2)) * j / 20
            q = min(mp.mpf(1), 0.5 * 2 / 6 + 0.5 * 2 * z2**2 / (6 * mp.mpf(2.5)))
            best = max(best, oracle.eps_hat_q(q, z1 / 4))
    assert best <= r.upper
    assert r.lower <= r.upper


# ---- bad input ---------------------------------------------------------------------------------


def test_non_numeric_cell_names_row_and_column(tmp_path: Path) -> None:
    write_csv(tmp_path / "six.csv", [(1, 2), (3, "abc"), (5, 6)])
    run = run_ampcalc("bound", str(laplace_design(tmp_path, "privacy-constrained")), expect=2)
    assert "six.csv:3: column 'y': expected a number, got 'abc'" in run.stderr
    assert "sampling.records" in run.stderr


def test_nan_cell(tmp_path: Path) -> None:
    write_csv(tmp_path / "six.csv", [(1, 2), ("nan", 1)])
    with pytest.raises(DesignError, match=r"six.csv:3: column 'x': expected a finite number"):
        load_designs(laplace_design(tmp_path, "privacy-constrained"))


def test_nan_in_npy(tmp_path: Path) -> None:
    np.save(tmp_path / "r.npy", np.array([[1.0, 2.0], [np.nan, 0.0]]))
    p = design(
        tmp_path,
        "mechanism: {profile: laplace-sum, scale: 4}\nsampling: {scheme: importance, "
        "records: r.npy, probabilities: privacy-constrained, radius: 3}\n"
        "target: {epsilon_prime: 1}\n",
    )
    with pytest.raises(DesignError, match=r"row 1 \(0-based\), column '0': expected a finite"):
        load_designs(p)


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "six.csv").write_text("")
    with pytest.raises(DesignError, match="the file is empty"):
        load_designs(laplace_design(tmp_path, "privacy-constrained"))
    (tmp_path / "six.csv").write_text("x,y\n")
    with pytest.raises(DesignError, match="no records"):
        load_designs(laplace_design(tmp_path, "privacy-constrained"))


def test_target_not_positive(tmp_path: Path, six: Path) -> None:
    run = run_ampcalc(
        "bound", str(laplace_design(tmp_path, "privacy-constrained", target="0")), expect=2
    )
    assert "target.epsilon_prime" in run.stderr and "(0, 1000000]" in run.stderr


def test_expected_size_above_population(tmp_path: Path, six: Path) -> None:
    p = laplace_design(tmp_path, "uniform", "  expected_size: 7\n  population: 6\n")
    run = run_ampcalc("bound", str(p), expect=2)
    assert "expected size 7 exceeds the population 6" in run.stderr
    p = laplace_design(tmp_path, "privacy-constrained", "  expected_size: 7\n")
    run = run_ampcalc("bound", str(p), expect=2)
    assert "expected size 7 exceeds the 6 records of the file" in run.stderr


def test_infeasible_domain_refused_with_largest_radius(tmp_path: Path, six: Path) -> None:
    # ε(1, x) = r/β = 3/4 > ε* = 0.5: largest feasible radius 0.5·4 = 2
    p = laplace_design(tmp_path, "privacy-constrained", target="0.5")
    run = run_ampcalc("bound", str(p), "--json", expect=2)
    err = run.json()["results"][0]["error"]
    assert "Assumption 8" in err and "largest feasible radius is 2" in err
    run_ampcalc("weights", str(p), expect=2)


def test_records_outside_radius_are_reported(tmp_path: Path) -> None:
    write_csv(tmp_path / "six.csv", [*SIX, (5, 5), (-4, 0)])
    r = engine.bound(load_designs(laplace_design(tmp_path, "privacy-constrained"))[0])
    assert r.details["infeasible_records"] == 2
    assert r.details["infeasible_rows"] == [6, 7]
    assert any("2 record(s) of the file lie outside the domain" in w for w in r.warnings)
    assert r.upper == 1.0  # the domain guarantee is unchanged; the outliers are flagged
    assert r.details["quantiles"]["max"] == pytest.approx(10 / 4)  # not clipped


def test_unknown_profile_and_column(tmp_path: Path, six: Path) -> None:
    p = design(
        tmp_path,
        "mechanism: {profile: laplace, scale: 4}\nsampling: {scheme: importance, "
        "records: six.csv, probabilities: privacy-constrained, radius: 3}\n"
        "target: {epsilon_prime: 1}\n",
    )
    run = run_ampcalc("bound", str(p), expect=2)
    assert (
        "d.yaml:1:13: mechanism.profile" in run.stderr
        and "did you mean 'laplace-sum'" in run.stderr
    )
    p = laplace_design(tmp_path, "privacy-constrained", "  columns: [x, z]\n")
    run = run_ampcalc("bound", str(p), expect=2)
    assert "no column 'z'" in run.stderr


def test_missing_public_values(tmp_path: Path, six: Path) -> None:
    p = laplace_design(tmp_path, "coreset", "  expected_size: 2\n  population: 6\n")
    run = run_ampcalc("bound", str(p), expect=2)
    assert "needs `mean_sq_norm`" in run.stderr and "--suggest" in run.stderr


def test_column_mode_without_floor_gives_no_guarantee(tmp_path: Path) -> None:
    write_csv(tmp_path / "six.csv", [(1, 0, 0.5), (0, 2, 0.1)], header="x,y,q")
    p = laplace_design(tmp_path, "column", "  probability_column: q\n")
    r = engine.bound(load_designs(p)[0])
    assert r.upper is None and r.verdict in ("no-guarantee", "degrades")
    p = laplace_design(tmp_path, "column", "  probability_column: q\n  min_probability: 0.1\n")
    r = engine.bound(load_designs(p)[0])
    assert r.upper == pytest.approx(float(oracle.eps_hat_q(0.1, 0.75)), rel=1e-13)
    assert r.upper >= float(oracle.eps_hat_q(0.1, 0.75))


# ---- CLI: weights ---------------------------------------------------------------------


def test_weights_output_and_sample(tmp_path: Path, six: Path) -> None:
    p = laplace_design(tmp_path, "privacy-constrained")
    out = tmp_path / "w.csv"
    run_ampcalc("weights", str(p), "-o", str(out))
    rows = np.loadtxt(out, delimiter=",", skiprows=1)
    np.testing.assert_allclose(
        rows[:, 2], [1.971934, 4.221208, 4.221208, 12.428239, 62.470579, 547.874643], rtol=1e-6
    )
    assert np.all(rows[:, 3] <= 1.0)
    s1 = run_ampcalc("weights", str(p), "--sample", "--seed", "7").stdout
    s2 = run_ampcalc("weights", str(p), "--sample", "--seed", "7").stdout
    assert s1 == s2 and s1.startswith("row,x,y,probability,weight\n")
    u = uniforms(7, 0, 6)
    q = rows[:, 1]
    kept = [int(line.split(",")[0]) for line in s1.splitlines()[1:]]
    assert kept == [i for i in range(6) if u[i] < q[i]]
    run = run_ampcalc("weights", str(p), "--sample", expect=2)
    assert "--seed" in run.stderr


def test_weights_suggest_warns(tmp_path: Path, six: Path) -> None:
    run = run_ampcalc(
        "weights",
        str(
            laplace_design(tmp_path, "privacy-constrained"),
        ),
        "--suggest",
    )
    x = np.array(SIX, dtype=float)
    assert f"{float(np.mean((x**2).sum(1))):.10g}" in run.stdout
    assert "breaks the guarantee" in run.stderr


def test_invert_json_has_knob(tmp_path: Path, six: Path, capsys) -> None:
    p = laplace_design(tmp_path, "privacy-constrained")
    run = run_main(capsys, "invert", str(p), "--json")
    res = json.loads(run.stdout)["results"][0]
    assert res["knob"]["name"] == "expected_size"
    assert res["epsilon"]["certified"] == 1.0


def test_examples_run() -> None:
    root = Path(__file__).parent.parent / "examples" / "designs"
    files = sorted(root.glob("importance*.yaml"))
    assert files
    for f in files:
        run_ampcalc("bound", str(f))


def test_csv_streams_in_chunks(tmp_path: Path) -> None:
    from ampcalc.load.records import iter_chunks, open_source

    rng = np.random.default_rng(3)
    x = rng.normal(size=(1000, 3))
    p = write_csv(tmp_path / "r.csv", x.round(6).tolist(), header="a,b,c")

    def err(msg: str) -> Exception:
        return ValueError(msg)

    src = open_source(p, ["c", "a"], None, err)
    chunks = list(iter_chunks(src, err, chunk_rows=64))
    assert len(chunks) == 16 and [c[0] for c in chunks] == list(range(0, 1000, 64))
    got = np.vstack([c[1] for c in chunks])
    np.testing.assert_allclose(got, x.round(6)[:, [2, 0]])
    # a blank line inside the file is refused with its line number; trailing ones are fine
    lines = p.read_text().splitlines()
    p.write_text("\n".join([*lines[:10], "", *lines[10:]]) + "\n\n\n")
    with pytest.raises(ValueError, match=":11: the line is empty"):
        list(iter_chunks(src, err, chunk_rows=64))
    p.write_text("\n".join(lines) + "\n\n\n")
    assert sum(c[1].shape[0] for c in iter_chunks(src, err, chunk_rows=64)) == 1000


def test_sweep_over_epsilon_is_monotone(tmp_path: Path, pts: Path) -> None:
    # declared ε scales the profile (smaller noise); the domain supremum grows with it
    d = lloyd(tmp_path, "coreset")
    eps = np.array([0.5, 1.0, 2.0, 4.0])
    r = engine.bound(d, eps)
    assert np.all(np.diff(r.upper) > 0) and np.all(r.lower <= r.upper)


def test_file_weights_never_over_claim_on_a_sample() -> None:
    # Theorem 10 weights for 20 000 records, checked with the mpmath oracle on 200 of them
    rng = np.random.default_rng(5)
    eps_star = 1.3
    a = rng.uniform(0.0, eps_star, size=20_000)
    w = privacy_constrained_weights(a, eps_star)
    for i in rng.choice(a.size, size=200, replace=False):
        exact = oracle.amplify(oracle.mp.mpf(a[i]) * oracle.mp.mpf(w[i]), w[i])
        assert exact <= eps_star
        assert float(exact) == pytest.approx(eps_star, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    noise=st.floats(1e-3, 10.0),
    mix=st.floats(0.01, 1.0),
    m=st.floats(10.0, 5000.0),
)
def test_domain_supremum_brackets_the_oracle(noise: float, mix: float, m: float) -> None:
    # sound bracket: lower <= dense mpmath maximum (a lower estimate) <= upper
    from ampcalc.math.importance import LinearCoefficients
    from ampcalc.schemes.importance import domain_bracket

    class P:  # the fields domain_bracket reads
        probabilities = "coreset"
        population = 10000.0
        expected_size = m
        radius = 1.0
        mean_sq_norm = 0.3

        class data:
            dimension = 2

    P.mix = mix
    bs, bc = lloyd_noise_scales(noise, 2, 1.0, 10)

    class Prof:
        linear = True
        norm = "l2"
        coefficients = LinearCoefficients(10 / bc, 10 / bs)

    hi, lo, _ = domain_bracket(P, Prof, 1.0)
    ref, _ = oracle.coreset_lloyd_max(
        10 / bc, 10 / bs, mix * m / 1e4, (1 - mix) * m / (1e4 * 0.3), 1.0, 200
    )
    assert lo <= hi
    assert lo <= ref * (1 + 1e-14)
    assert ref <= hi


def test_coreset_without_uniform_part_is_refused(tmp_path: Path, pts: Path) -> None:
    # λ = 0: q → 0 at the origin, ε̂ unbounded over the domain (spec A10)
    r = engine.bound(
        load_designs(
            design(
                tmp_path,
                LLOYD.format(mode="coreset", noise="noise_constant: 1.0").replace(
                    "mix: 0.5", "mix: 0"
                ),
            )
        )[0]
    )
    assert r.upper is None and "mix > 0" in r.error


def test_sampling_errors_point_at_their_line(tmp_path: Path, six: Path) -> None:
    p = design(
        tmp_path,
        "mechanism: {profile: laplace-sum, scale: 4}\nsampling:\n  scheme: importance\n"
        "  records: nope.csv\n  probabilities: uniform\n  radius: 3\n",
    )
    run = run_ampcalc("bound", str(p), expect=2)
    assert "d.yaml:5:3: sampling.probabilities: `probabilities: uniform` needs" in run.stderr
    p.write_text(p.read_text() + "  expected_size: 5\n  population: 9\n")
    run = run_ampcalc("bound", str(p), expect=2)
    assert "d.yaml:4:3: sampling.records: record file " in run.stderr
    assert "nope.csv' not found" in run.stderr


def test_weights_sample_from_npy_matches_philox_rule(tmp_path: Path) -> None:
    x = np.random.default_rng(9).normal(scale=0.5, size=(300, 3))
    np.save(tmp_path / "r.npy", x)
    p = design(
        tmp_path,
        "mechanism: {profile: laplace-sum, scale: 2}\nsampling: {scheme: importance, "
        "records: r.npy, columns: [0, 2], probabilities: uniform, radius: 10, "
        "expected_size: 30, population: 300}\n",
    )
    run = run_ampcalc("weights", str(p), "--sample", "--seed", "123")
    lines = run.stdout.splitlines()
    assert lines[0] == "row,0,2,probability,weight"
    kept = np.array([int(line.split(",")[0]) for line in lines[1:]])
    expect = np.flatnonzero(uniforms(123, 0, 300) < 0.1)
    np.testing.assert_array_equal(kept, expect)
    first = np.array([float(v) for v in lines[1].split(",")[1:3]])
    np.testing.assert_array_equal(first, x[expect[0], [0, 2]])


def test_knob_of_another_profile_is_bad_input(tmp_path: Path, six: Path) -> None:
    # the noise constant B belongs to dp-lloyd; a Laplace profile inverts for β or m
    base = "  expected_size: 2\n  population: 6\n  knob: noise_constant\n"
    p = laplace_design(tmp_path, "uniform", base)
    run = run_ampcalc("invert", str(p), "--target", "1.0", expect=2)
    assert (
        "sampling.knob: `knob: noise_constant` does not apply to `profile: laplace-sum`; "
        "expected one of: scale, expected_size"
    ) in run.stderr
    assert "internal error" not in run.stderr


# ---- column mode: a record at exactly the radius is in the domain (issue 15) ------------


@pytest.mark.parametrize(
    ("radius", "infeasible", "q_max"),
    [
        ("3.0", 0, 0.5),  # ‖(3, 0)‖₂ = 3 = r: in the domain (was dropped: 0.158565)
        ("3.0000001", 0, 0.5),
        ("2.9999999", 1, 0.1),  # (3, 0) is outside: the lower bound comes from q = 0.1
    ],
)
def test_column_record_at_the_radius(tmp_path: Path, radius: str, infeasible: int, q_max) -> None:
    write_csv(tmp_path / "rec.csv", [(3, 0, 0.5), (0, -2, 0.1), (1, 1, 0.05)], header="x,y,q")
    p = design(
        tmp_path,
        f"""
mechanism: {{profile: constant, epsilon: 1.0}}
sampling:
  scheme: importance
  records: rec.csv
  columns: [x, y]
  probabilities: column
  probability_column: q
  radius: {radius}
""",
    )
    r = engine.bound(load_designs(p)[0])
    # constant profile: ε̂ = log(1 + q(e − 1)) (003 Proposition 3); A(0.5, 1) = 0.620115,
    # A(0.1, 1) = 0.158565 (spec A13)
    exact = oracle.eps_hat_q(q_max, 1.0, linear=False)
    assert mp_le(r.lower, exact)
    assert r.lower == pytest.approx(float(exact), rel=1e-14)
    assert r.details["infeasible_records"] == infeasible
    assert r.upper == pytest.approx(1.0, rel=1e-14)  # q of an added record may be 1


def test_column_record_at_the_radius_linear_profile(tmp_path: Path) -> None:
    # laplace-sum, ‖x‖₁/β: (3, 0) has ‖x‖₁ = 3 = r and the smallest q; ε(1/q, x) = 3/(βq)
    write_csv(tmp_path / "rec.csv", [(3, 0, 0.05), (0, -2, 0.1), (1, 1, 0.5)], header="x,y,q")
    out = []
    for radius in ("3.0", "3.0000001"):
        p = design(
            tmp_path,
            f"""
mechanism: {{profile: laplace-sum, scale: 4.0}}
sampling:
  scheme: importance
  records: rec.csv
  columns: [x, y]
  probabilities: column
  probability_column: q
  min_probability: 0.05
  radius: {radius}
""",
        )
        r = engine.bound(load_designs(p)[0])
        assert r.details["infeasible_records"] == 0
        out.append(r)
    # the declared ε is sup ε(1, x) = r/β; the records' ε̂ at their own q and norm
    best = max(
        oracle.eps_hat_q(0.05, 3 / 4.0),  # 12.0043 (was dropped at r = 3: 2.7563)
        oracle.eps_hat_q(0.1, 2 / 4.0),
        oracle.eps_hat_q(0.5, 2 / 4.0),
    )
    assert best == oracle.eps_hat_q(0.05, 3 / 4.0)
    for r in out:
        assert mp_le(r.lower, best)
        assert r.lower == pytest.approx(float(best), rel=1e-12)


def mp_le(value: float, exact) -> bool:
    import mpmath as mp

    return bool(mp.mpf(value) <= exact)


def test_profiles_take_no_delta(tmp_path: Path, six: Path) -> None:
    # issue 15 V4 audit: the profile is pure ε (003 Def. 4), so no δ′ can be owed; a
    # `delta` key is refused rather than ignored
    for mech in (
        "{profile: constant, epsilon: 1.0, delta: 0.01}",
        "{profile: laplace-sum, scale: 4.0, delta: 0.01}",
    ):
        p = design(
            tmp_path,
            f"""
mechanism: {mech}
sampling: {{scheme: importance, records: six.csv, probabilities: uniform, radius: 3.0,
  population: 600, expected_size: 6}}
""",
        )
        run = run_ampcalc("bound", str(p), expect=2)
        assert "unknown key in mechanism" in run.stderr and "delta" in run.stderr
