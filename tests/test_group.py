"""Group privacy (mechanism.group_size): srswor, poisson, srswr; spec LP values; refusals."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from conftest import run_ampcalc
from hypothesis import given
from hypothesis import strategies as st
from oracle_groups import binomial_log_mgf, hypergeom_log_mgf, hypergeom_pmf, relaxation

import ampcalc
from ampcalc.math import groups as _groups

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy

WOR = """
mechanism: {epsilon: %s, neighbours: %s, group_size: %d}
sampling: {scheme: srswor, population: %d, sample: %d}
"""


def bound(text: str):
    return ampcalc.bound(ampcalc.load_designs(text)[0])


def test_group_example_replace_one() -> None:
    # issue "Group privacy": N = 10,000, m = 100, g = 2, ε = 1: 0.0340709 vs conservative
    # 0.0619325
    res = bound(WOR % (1, "replace-one", 2, 10000, 100))
    assert res.lower == pytest.approx(0.0340709, abs=5e-8)
    assert res.upper == pytest.approx(0.0340709, abs=5e-8)
    d = res.to_dict()["details"]
    assert d["group_size"] == 2
    assert d["conservative_rule"] == pytest.approx(0.0619325, abs=5e-8)
    assert res.to_dict()["details"]["reference_epsilon"] == 2.0


def test_group_example_add_remove_default() -> None:
    # issue: the same under add-remove (ε_R = 2): 0.123829
    res = bound(WOR % (1, "add-remove", 2, 10000, 100))
    assert res.upper == pytest.approx(0.123829, abs=5e-7)


@pytest.mark.parametrize(
    ("n", "g", "m", "eps", "lp"),
    [
        # exact-lp-checks.md, Conjecture 2 table (LP columns)
        (6, 3, 4, 0.5, 1.049790032),
        (6, 3, 4, 2.0, 4.744257640),
        (5, 2, 3, 2.0, 3.040365173),
        (4, 3, 4, 2.0, 6.000000000),
        (2, 2, 1, 0.5, 0.500000000),
        (6, 2, 2, 0.5, 0.378804039),
    ],
)
def test_srswor_group_equals_spec_lp(n: int, g: int, m: int, eps: float, lp: float) -> None:
    res = bound(WOR % (eps, "replace-one", g, n, m))
    assert res.lower == pytest.approx(lp, abs=1e-9)
    assert res.upper >= lp - 1e-9


@pytest.mark.parametrize(
    ("g", "q", "eps", "lp"),
    [
        # exact-lp-checks.md, Conjecture 3 table
        (2, 0.1, 0.5, 0.125709447),
        (3, 0.3, 2.0, 3.211375831),
        (4, 0.5, 2.0, 5.735123322),
    ],
)
def test_poisson_group_equals_spec_lp(g: int, q: float, eps: float, lp: float) -> None:
    res = bound(
        f"mechanism: {{epsilon: {eps}, group_size: {g}}}\nsampling: {{scheme: poisson, rate: {q}}}"
    )
    assert res.lower == pytest.approx(lp, abs=1e-9)
    assert res.upper == pytest.approx(lp, abs=1e-9)
    assert res.lower <= res.upper


@pytest.mark.parametrize(
    ("n", "g", "m"), [(20, 3, 7), (10**12, 10**4, 10**6), (10**4, 50, 10**4 - 10), (9, 5, 6)]
)
@pytest.mark.parametrize("eps", [1e-3, 0.7, 4.0])
def test_hypergeom_against_mpmath_oracle(n: int, g: int, m: int, eps: float) -> None:
    k0, lp = _groups.hypergeom_logpmf(n, g, m)
    v = float(_groups.log_mgf(k0, lp, np.array([eps]))[0])
    ref = hypergeom_log_mgf(n, g, m, eps)
    assert abs(v - float(ref)) <= 1e-11 * float(ref)


def test_hypergeom_relaxation_against_oracle() -> None:
    for n, g, m, eps in [(8, 3, 4, 2.0), (12, 4, 6, 1.5), (30, 5, 20, 0.9)]:
        # the relaxation bound on the hypergeometric pmf, rounded up as the scheme does
        k0, lp = _groups.hypergeom_logpmf(n, g, m)
        up = _groups.slack_up(_groups.relaxation(k0, lp, np.array([eps])), lp.size)[0]
        ref = relaxation(hypergeom_pmf(n, g, m), eps)
        assert up >= ref
        assert up - float(ref) <= 1e-9


def test_srswr_group_is_binomial_mgf() -> None:
    res = bound(
        "mechanism: {epsilon: 1, neighbours: replace-one, group_size: 3}\n"
        "sampling: {scheme: srswr, population: 1000, sample: 50}"
    )
    ref = binomial_log_mgf(50, mp.mpf(3) / 1000, 1)
    assert res.lower <= ref <= res.upper
    assert res.lower == pytest.approx(float(ref), rel=1e-12)


@given(
    n=st.integers(2, 10**9),
    g=st.integers(2, 200),
    m=st.integers(1, 500),
    e=st.floats(1e-6, 30),
)
def test_srswor_group_properties(n: int, g: int, m: int, e: float) -> None:
    g, m = min(g, n), min(m, n)
    if g < 2:
        return
    res = bound(WOR % (e, "replace-one", g, n, m))
    assert 0 <= res.lower <= res.upper
    # never above group privacy applied to all g records, and below the conservative rule
    assert res.lower <= g * e * (1 + 1e-9)
    assert res.lower <= res.to_dict()["details"]["conservative_rule"] * (1 + 1e-9)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "two"])
def test_group_size_must_be_a_whole_number_ge_1(tmp_path, bad) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(
        f"mechanism:\n  epsilon: 1\n  group_size: {bad}\n"
        "sampling: {scheme: srswor, population: 100, sample: 10}\n"
    )
    run = run_ampcalc("bound", str(f), expect=2)
    assert "g.yaml:3" in run.stderr and "mechanism.group_size" in run.stderr
    assert "whole number in [1, inf)" in run.stderr


def test_group_size_above_population_refused(tmp_path) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, neighbours: both, group_size: 101}\n"
        "sampling: {scheme: srswor, population: 100, sample: 10}\n"
    )
    run = run_ampcalc("bound", str(f), expect=2)
    assert "group_size 101 is larger than population 100" in run.stderr


def test_group_size_refused_for_other_schemes(tmp_path) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, group_size: 2}\n"
        "sampling: {scheme: random-size, population: 100, size: {distribution: binomial, "
        "p: 0.1}}\n"
    )
    run = run_ampcalc("bound", str(f), expect=2)
    assert "schemes that support group_size: poisson, srswor, srswr" in run.stderr


def test_group_typo_gets_did_you_mean(tmp_path) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, group_sise: 2}\n"
        "sampling: {scheme: srswor, population: 100, sample: 10}\n"
    )
    run = run_ampcalc("bound", str(f), expect=2)
    assert "group_size" in run.stderr


def test_tiny_epsilon_keeps_relative_accuracy() -> None:
    # ε = 1e-12: V ≈ E[J]·ε; both bounds within 1e-9 relative of the mpmath value
    res = bound(WOR % (1e-12, "replace-one", 50, 10**12, 10**6))
    ref = float(hypergeom_log_mgf(10**12, 50, 10**6, 1e-12))
    assert res.lower <= ref <= res.upper
    assert res.upper - res.lower <= 1e-9 * ref
