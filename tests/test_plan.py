"""Accuracy planner (``ampcalc plan``): 002 §4 and spec §9 vectors, properties, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import oracle_plan as oracle
import pytest
from conftest import run_ampcalc, run_main
from hypothesis import given, settings
from hypothesis import strategies as st

from ampcalc.math import accuracy as planner

ROOT = Path(__file__).resolve().parent.parent
PLANS = ROOT / "examples" / "plans"


# ---- spec §9.2 vectors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("eps", "expected"),
    [
        (3.0, 0.167673),  # 002 §4.2 prints 16.77 %; spec §9.2 recomputes 0.167673
        (0.1, 0.613959),  # 002 §4.2 prints 61.4 %; spec 0.613959
        (1.0, 0.445094),  # spec §9.2 (not printed in 002)
        (0.5, 0.538514),
        (0.01, 0.630617),
        (0.001, 0.632272),
    ],
)
def test_max_rate_for_gain_q06(eps: float, expected: float) -> None:
    got = float(planner.max_rate_for_gain(0.6, eps))
    assert got == pytest.approx(expected, abs=5e-7)
    assert got == pytest.approx(float(oracle.max_rate_for_gain(0.6, eps)), rel=1e-13)


def test_max_rate_paper_percentages() -> None:
    # 002 §4.2: "16.77%" at ε = 3 and "61.4%" at ε = 0.1 (q = 0.6)
    assert round(100 * float(planner.max_rate_for_gain(0.6, 3.0)), 2) == 16.77
    assert round(100 * float(planner.max_rate_for_gain(0.6, 0.1)), 1) == 61.4


def test_max_rate_no_overflow() -> None:
    got = float(planner.max_rate_for_gain(0.6, 800.0))
    assert got == pytest.approx(float(oracle.max_rate_for_gain(0.6, 800.0)), rel=1e-12)
    assert got > 0


@pytest.mark.parametrize(
    ("eps", "rates", "expected"),
    [
        (0.01, [0.1, 0.5, 0.9], [0.98910, 0.74751, 0.18910]),  # spec §9.2 q ≈ 1 − (n/N)²
        (0.001, [0.1, 0.5, 0.9], [0.98991, 0.74975, 0.18991]),
    ],
)
def test_q_bound_vectors(eps: float, rates: list[float], expected: list[float]) -> None:
    got = planner.q_bound(eps, rates)
    assert np.allclose(got, expected, atol=6e-6)
    # the small-ε approximation q ≈ 1 − (n/N)² (002 §4.1)
    assert np.allclose(got, 1 - np.square(rates), atol=0.012)


@pytest.mark.parametrize(
    ("eps", "rho", "expected"),
    [(1, 0.01, 0.002655), (0.1, 0.5, 0.911097), (0.1, 0.01, 0.059723), (3, 0.1, 0.030704)],
)
def test_noise_ratio_vectors(eps: float, rho: float, expected: float) -> None:
    # spec §9.2 table "r(ε, n/N)"
    assert float(planner.noise_ratio(eps, rho)) == pytest.approx(expected, abs=6e-7)


def test_synthetic_vn() -> None:
    # spec §9.2 synthetic test: N = 10001, R = 1, S² = 0.0106838, ε = 1
    plan = planner.plan_mean(
        "t", 1.0, 0.0, 10001, [(0, 101), (0, 1001), (0, 5001)], 1.0, 0.0106838
    )
    got = [r["variance_sample"] for r in plan.rows]
    assert got == pytest.approx([1.12125e-4, 9.84222e-6, 1.10409e-6], rel=2e-5)
    assert plan.rows[0]["variance_population"] == pytest.approx(1.9996e-8, rel=1e-5)
    assert all(not r["gain"] for r in plan.rows)
    assert plan.best_rate == 1.0


def test_vn_ratio_900() -> None:
    # spec §9.2: V_N(ε = 0.1)/V_N(ε = 3) = 900
    a = planner.plan_mean("t", 0.1, 0, 100, [(1.0, 100)], 1.0, 0.0).rows[0]
    b = planner.plan_mean("t", 3.0, 0, 100, [(1.0, 100)], 1.0, 0.0).rows[0]
    assert a["variance_population"] / b["variance_population"] == pytest.approx(900)


def test_laplace_scale_example() -> None:
    # spec §9.2: §2.4 Laplace scale for the mean, ε = 0.1, N = 10001, R = 1: 9.999e-4
    v = planner.plan_mean("t", 0.1, 0, 10001, [(1.0, 10001)], 1.0, 0.0).rows[0]
    assert math.sqrt(v["variance_population"] / 2) == pytest.approx(9.999e-4, rel=1e-4)


def test_beta_vector() -> None:
    # spec §9.1: ε = 0.1, δ = 1/(2·10001) → β = 0.0047184
    assert planner.beta(0.1, 1 / 20002) == pytest.approx(0.0047184, abs=5e-8)


# ---- noise ratio: r <= 1, 1 − r > 0, Figure 5 artefact absent ------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.floats(min_value=-12, max_value=2.9),
    st.floats(min_value=1e-6, max_value=0.999999),
)
def test_noise_ratio_below_one(log_eps: float, rho: float) -> None:
    eps = 10.0**log_eps
    r = float(planner.noise_ratio(eps, rho))
    one_m = float(planner.one_minus_noise_ratio(eps, rho))
    assert r <= 1.0
    assert one_m > 0.0
    ref = oracle.one_minus_noise_ratio(eps, rho)
    assert one_m == pytest.approx(float(ref), rel=1e-9)


def test_oracle_worst_error_grid() -> None:
    worst = 0.0
    for eps in [1e-12, 1e-9, 1e-6, 1e-3, 0.1, 1, 3, 10, 50]:
        for rho in [1e-4, 1e-3, 0.01, 0.1, 0.5, 0.9, 0.99]:
            got = float(planner.one_minus_noise_ratio(eps, rho))
            ref = float(oracle.one_minus_noise_ratio(eps, rho))
            worst = max(worst, abs(got - ref) / ref)
            r = float(planner.noise_ratio(eps, rho))
            assert r == pytest.approx(float(oracle.noise_ratio(eps, rho)), rel=1e-14, abs=1e-300)
    assert worst < 1e-11


def test_figure5_artefact_naive_vs_stable() -> None:
    # spec §9.2: evaluated naively, r comes out >= 1 at rate 1e-4 for tiny ε (002 Fig. 5);
    # the stable form gives 1 − r ≈ ε(1 − ρ)/ρ > 0 (spec §9.2 first-order expansion)
    rho = 1e-4
    for eps in (1e-11, 1e-12):
        naive = (rho * math.log(1 + (math.exp(eps) - 1) / rho) / eps) ** 2
        assert naive > 1.0
        assert float(planner.noise_ratio(eps, rho)) < 1.0
        assert float(planner.one_minus_noise_ratio(eps, rho)) == pytest.approx(
            eps * (1 - rho) / rho, rel=1e-5
        )


def test_mean_verdict_is_theorem_not_rounding() -> None:
    # at ε = 1e-13 V_n and V_N agree to ~1e-9 relative; the verdict stays "no gain"
    plan = planner.plan_mean("t", 1e-13, 0, 10001, [(0.5, 5001), (1.0, 10001)], 1.0, 0.0)
    assert [r["gain"] for r in plan.rows] == [False, False]
    assert plan.best_rate == 1.0


# ---- smooth sensitivity -------------------------------------------------------------------


def test_smooth_sensitivity_k0_is_local() -> None:
    y = np.array([0.1, 0.2, 0.4, 0.45, 0.9])
    # huge β: only k = 0 counts → local sensitivity max(y_(m+1) − y_(m), y_(m) − y_(m−1))
    got = planner.smooth_sensitivity(y, 1e3, 0.0, 1.0)
    assert got == pytest.approx(max(0.45 - 0.4, 0.4 - 0.2))


@pytest.mark.parametrize("seed", range(8))
def test_smooth_sensitivity_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 30)) * 2 + 1
    y = np.sort(rng.uniform(0, 10, n))
    b = float(rng.choice([0.001, 0.05, 0.3, 2.0]))
    got = planner.smooth_sensitivity(y, b, -1.0, 12.0)
    assert got == pytest.approx(oracle.smooth_sensitivity_brute(list(y), b, -1.0, 12.0), rel=1e-12)


@pytest.mark.parametrize("b", [0.001, 0.1, 2.0])
def test_smooth_sensitivity_many_rows(b: float) -> None:
    rng = np.random.default_rng(3)
    rows = np.sort(rng.lognormal(0, 1, (6, 31)), axis=1)
    many = planner.smooth_sensitivity_many(rows, b, 0, 60)
    for row, v in zip(rows, many, strict=True):
        assert v == pytest.approx(oracle.smooth_sensitivity_brute(list(row), b, 0, 60), rel=1e-12)


def test_median_sample_sizes() -> None:
    # spec §9.3: n = 2⌊ρN/2⌋ + 1, odd, at most N
    assert planner.median_sample_size(0.1, 10001) == 1001
    assert planner.median_sample_size(0.01, 10001) == 101
    assert planner.median_sample_size(1.0, 10001) == 10001
    assert planner.median_sample_size(1.0, 10000) == 9999


def _lognormal(seed: int = 1, n: int = 10001) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(5, 0.5, n)


def test_median_table1_shape() -> None:
    # 002 Table 1 row 3 / spec §9.3: gains for ε <= 0.1, none for ε >= 1 (LogNormal(5, 0.5))
    y = _lognormal()
    hi = float(np.ceil(y.max()))
    small = planner.plan_median("t", 0.1, 1 / 20002, y, [0.1], 0.0, hi, 100, 1)
    big = planner.plan_median("t", 1.0, 1 / 20002, y, [0.01, 0.1, 0.5], 0.0, hi, 100, 1)
    assert small.rows[0]["gain"]
    assert not any(r["gain"] for r in big.rows)
    # SS ratio ~1.3 at ε = 0.1, n = 1001 (spec §9.3 replication: 1.25–1.39)
    assert 1.1 < small.rows[0]["smooth_sensitivity_ratio"] < 1.6


def test_median_seeded_reproducible() -> None:
    y = _lognormal(2, 501)
    a = planner.plan_median("t", 0.5, 1e-3, y, [0.2], 0.0, 2000.0, 30, 11).to_dict()
    b = planner.plan_median("t", 0.5, 1e-3, y, [0.2], 0.0, 2000.0, 30, 11).to_dict()
    c = planner.plan_median("t", 0.5, 1e-3, y, [0.2], 0.0, 2000.0, 30, 12).to_dict()
    assert a == b
    assert a["rows"][0]["variance_sample"] != c["rows"][0]["variance_sample"]


# ---- CLI ----------------------------------------------------------------------------------


def _plan_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    return json.loads(run_main(capsys, "plan", *args, "--json").stdout)


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _plan_json(capsys, str(PLANS / "mean.yaml"), "--variance-share", "0.6")
    assert doc["command"] == "plan"
    res = doc["results"][0]
    assert {"name", "statistic", "best_rate", "rows", "max_rate_for_gain"} <= set(res)
    # 002's q is named variance_share: q is the sampling rate everywhere else
    assert res["variance_share"] == 0.6 and "q" not in res
    keys = {
        "rate",
        "sample_size",
        "epsilon_sample",
        "delta_sample",
        "variance_sample",
        "variance_population",
        "noise_ratio",
        "variance_share_max",
        "gain",
    }
    assert all(keys <= set(r) for r in res["rows"])
    assert res["best_rate"] == 1.0
    assert res["max_rate_for_gain"] == pytest.approx(0.445094, abs=5e-7)  # spec §9.2, ε = 1


def test_json_without_q_has_no_max_rate(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _plan_json(capsys, str(PLANS / "mean.yaml"))
    assert "max_rate_for_gain" not in doc["results"][0]


@pytest.mark.parametrize("path", sorted(PLANS.glob("*.yaml")), ids=lambda p: p.name)
def test_examples_run(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    res = _plan_json(capsys, str(path))["results"][0]
    if res["statistic"] == "mean":
        # spec §9.2 synthetic: V_N = 1.9996e-8 at ε = 1, N = 10001, R = 1
        assert res["rows"][0]["variance_population"] == pytest.approx(1.9996e-8, rel=1e-5)
        assert res["best_rate"] == 1.0
    elif res["statistic"] == "median":
        # LogNormal(5, 0.5): gains at ε = 0.1, none at ε = 1 (002 Table 1 row 3, §4.3)
        gains = [r["gain"] for r in res["rows"]]
        assert any(gains) if res["epsilon_population"] <= 0.1 else not any(gains)
        assert [r["sample_size"] for r in res["rows"]] == [101, 1001, 5001]  # odd n, §9.3
        # δ_n = (N/n)δ (002 Thm 1), e.g. 10001/1001 · 4.9995e-5
        assert res["rows"][1]["delta_sample"] == pytest.approx(10001 / 1001 * 4.9995e-5)
    elif path.name == "custom.yaml":
        # custom: V_N = 2(Δ_N/ε)² = 2(1/0.05)² = 800
        assert res["rows"][0]["variance_population"] == pytest.approx(800.0)
    else:
        # table: rate 0.2 of 20000 → n = 4000, ε_n = log(1 + 5(e^0.2 − 1)) (002 Thm 1),
        # V_n = 2e-4 + 2(0.02/ε_n)² (002 eq. 5), V_N = 2(0.01/0.2)² = 0.005
        row = res["rows"][1]
        eps_n = math.log(1 + 5 * math.expm1(0.2))
        assert row["sample_size"] == 4000
        assert row["epsilon_sample"] == pytest.approx(eps_n, rel=1e-14)
        assert row["variance_sample"] == pytest.approx(2e-4 + 2 * (0.02 / eps_n) ** 2, rel=1e-13)
        assert row["variance_population"] == pytest.approx(0.005, rel=1e-14)
        assert row["no_gain_threshold"] == pytest.approx(2e-4 * (25 - eps_n**-2), rel=1e-13)
        assert res["best_rate"] == 0.2


def test_table_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_main(capsys, "plan", str(PLANS / "mean.yaml")).stdout
    assert "best rate: 1" in out and "no gain at any rate" in out
    csv_out = run_main(capsys, "plan", str(PLANS / "mean.yaml"), "--format", "csv").stdout
    lines = csv_out.strip().splitlines()
    assert lines[0].startswith("design,statistic,best_rate,rate,sample_size")
    assert len(lines) == 5


def _write(tmp_path: Path, text: str, name: str = "p.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


MEDIAN = """\
target: {{epsilon_prime: 0.5, delta_prime: {delta}}}
sampling: {{scheme: srswor{sample}}}
statistic:
  kind: median
  data: d.txt
  {bounds}
  {rates}
"""


def _median(
    tmp_path: Path,
    n: int = 11,
    delta: str = "0.001",
    sample: str = "",
    bounds: str = "bounds: [0, 100]",
    rates: str = "rates: [0.5]",
) -> str:
    (tmp_path / "d.txt").write_text("".join(f"{i * 3}\n" for i in range(n)))
    return _write(tmp_path, MEDIAN.format(delta=delta, sample=sample, bounds=bounds, rates=rates))


def test_bad_even_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _median(tmp_path, sample=", sample: 4", rates="")
    err = run_main(capsys, "plan", path, expect=2).stderr
    assert "p.yaml:2" in err and "sampling.sample" in err
    assert "odd sample size" in err and "use sample: 3 or 5" in err


def test_bad_even_population(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = run_main(capsys, "plan", _median(tmp_path, n=10), expect=2).stderr
    assert "statistic.data" in err and "(even)" in err and "drop one value" in err


def test_missing_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = run_main(capsys, "plan", _median(tmp_path, bounds=""), expect=2).stderr
    assert "needs public data bounds" in err


def test_data_outside_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = run_main(capsys, "plan", _median(tmp_path, bounds="bounds: [0, 20]"), expect=2).stderr
    assert "p.yaml:6" in err and "outside [L, U] = [0, 20]" in err


def test_delta_n_above_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = run_main(
        capsys, "plan", _median(tmp_path, delta="0.4", rates="rates: [0.1]"), expect=2
    ).stderr
    assert "target.delta_prime" in err and "δ_n = (N/n)δ′" in err and ">= 1" in err


def test_typo_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(
        tmp_path,
        "target: {epsilon_prime: 1}\nsampling: {scheme: srswor, "
        "population: 100}\nstatistic: {kind: mean, range: 1, varaince: 0.1, "
        "rates: [0.5]}\n",
    )
    err = run_main(capsys, "plan", path, expect=2).stderr
    assert "p.yaml:3" in err and "did you mean 'variance'?" in err


def test_bad_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(
        tmp_path,
        "target: {epsilon_prime: 1}\nsampling: {scheme: srswor, "
        "population: 100}\nstatistic:\n  kind: mean\n  range: 1\n  variance: 0.1\n"
        "  rates: [0.5, 1.5]\n",
    )
    err = run_main(capsys, "plan", path, expect=2).stderr
    assert "p.yaml:7" in err and "statistic.rates[1]" in err and "(0, 1]" in err


def test_subprocess_bad_input_no_traceback(tmp_path: Path) -> None:
    run_ampcalc("plan", _median(tmp_path, bounds=""), expect=2)


@pytest.mark.parametrize("b", [1e-4, 0.004, 0.05])
def test_pruned_single_equals_rowwise(b: float) -> None:
    # the pruned single-data-set path and the row-vectorised path compute the same eq. 4
    y = np.sort(np.random.default_rng(5).lognormal(5, 0.5, 2001))
    one = planner.smooth_sensitivity(y, b, 0.0, 2000.0)
    many = float(planner.smooth_sensitivity_many(y[None, :], b, 0.0, 2000.0)[0])
    assert one == many


def test_terminal_sparkline() -> None:
    from ampcalc import api
    from ampcalc.cli.plan import sparkline, table

    # V_n/V_N falls with the rate for the mean (5666 … 1 in examples/plans/mean.yaml)
    assert sparkline([5666.0, 492.8, 55.2, 1.0]) == "█▆▄▁"
    text = table(api.plan(PLANS / "mean.yaml").to_dict(), rich=True)
    assert "V_n/V_N by rate (log scale): █▆▄▁" in text
    assert "by rate" not in table(api.plan(PLANS / "mean.yaml").to_dict(), False)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0.01, max_value=0.95), st.floats(min_value=-4, max_value=1.5))
def test_max_rate_round_trip(q: float, log_eps: float) -> None:
    # spec §9.2 closed form: q_bound at the largest rate gives back q
    eps = 10.0**log_eps
    rho = float(planner.max_rate_for_gain(q, eps))
    assert 0 < rho < 1
    assert float(planner.q_bound(eps, rho)) == pytest.approx(q, rel=1e-9)
    # q_bound increases as the rate falls: smaller rates allow more sampling variance
    assert float(planner.q_bound(eps, rho * 0.9)) > q


def test_issue_design_verbatim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(
        tmp_path,
        "target: {epsilon_prime: 1.0, delta_prime: 4.9995e-5}\n"
        "sampling: {scheme: srswor, population: 10001}\n"
        "statistic:\n  kind: mean\n  range: 1.0\n  variance: 0.0106838\n"
        "  rates: [0.01, 0.05, 0.1, 0.5, 1.0]\n",
    )
    res = _plan_json(capsys, path, "--q", "0.6")["results"][0]
    assert [r["sample_size"] for r in res["rows"]] == [100, 500, 1000, 5001, 10001]
    assert res["best_rate"] == 1.0 and not any(r["gain"] for r in res["rows"])
    # spec §9.2: q = 0.6, ε = 1 → 0.445094
    assert res["max_rate_for_gain"] == pytest.approx(0.445094, abs=5e-7)
    # rate 1: no sampling, V_n = V_N and r = 1 exactly
    assert res["rows"][-1]["variance_sample"] == res["rows"][-1]["variance_population"]
    assert res["rows"][-1]["noise_ratio"] == 1.0


def test_bound_on_a_plan_file_points_to_plan() -> None:
    run = run_ampcalc("bound", "examples/plans/mean.yaml", expect=2)
    assert run.stdout == ""
    assert run.stderr.startswith("examples/plans/mean.yaml:8:1: statistic:")
    assert "run `ampcalc plan FILE`" in run.stderr
