"""srswr (bootstrap) scheme: issue values, spec LP values, oracle, properties, bad input."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from conftest import run_ampcalc
from hypothesis import given
from hypothesis import strategies as st
from oracle_groups import binomial_log_mgf, binomial_pmf, relaxation

import ampcalc
from ampcalc.schemes import srswr

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy

BOOT = """
mechanism: {epsilon: %s, neighbours: %s}
sampling: {scheme: srswr, population: %d, sample: %d}
"""


def bound(text: str, **kw):
    return ampcalc.bound(ampcalc.load_designs(text)[0], **kw)


def test_bootstrap_unsoundness_example_replace_one() -> None:
    # issue "Bootstrap samples": m = 100, N = 10,000, ε = 1: 0.0171813422 vs srswor 0.0170369
    res = bound(BOOT % (1, "replace-one", 10000, 100))
    assert res.lower == pytest.approx(0.0171813422, abs=5e-11)
    assert res.upper == pytest.approx(0.0171813422, abs=5e-11)
    d = res.to_dict()["details"]
    assert d["without_replacement_same_rate"] == pytest.approx(0.0170369, abs=5e-8)
    assert any("unsound" in w for w in res.to_dict()["warnings"])


def test_bootstrap_example_add_remove_default_eps_r_2() -> None:
    # issue: the same under the default add-remove relation (ε_R = 2): 0.063870
    res = bound(BOOT % (1, "add-remove", 10000, 100))
    assert res.upper == pytest.approx(0.063870, abs=5e-7)
    assert res.lower <= res.upper


@pytest.mark.parametrize(
    ("n", "m", "eps", "lp"),
    [
        # exact-lp-checks.md, Conjecture 1 table (LP column)
        (2, 4, 0.5, 1.123719214),
        (2, 4, 2.0, 5.735123322),
        (3, 6, 2.0, 6.845594865),
        (5, 4, 0.5, 0.487965133),
        (6, 4, 2.0, 2.900216164),
    ],
)
def test_lower_bound_equals_spec_lp(n: int, m: int, eps: float, lp: float) -> None:
    res = bound(BOOT % (eps, "replace-one", n, m))
    assert res.lower == pytest.approx(lp, abs=1e-9)
    assert res.upper >= lp - 1e-9


def test_relaxation_is_loose_above_eps_spec_value() -> None:
    # exact-lp-checks.md: n = 2, m = 4, ε = 2: relaxation 7.026 vs LP 5.735
    res = bound(BOOT % (2, "replace-one", 2, 4))
    assert res.upper == pytest.approx(7.026, abs=5e-4)
    assert str(res.verdict) == "degrades"


def test_classic_bootstrap_inverse_issue_example() -> None:
    # issue: N = m = 10^4, T = 1: the closed form gives 0.69317 (impossible_above); the
    # proven upper bound there is 1.0579 > T, so certified is found by root finding
    d = ampcalc.load_designs(BOOT % (1, "replace-one", 10000, 10000))[0]
    inv = ampcalc.invert(d, target=1.0)
    assert inv.impossible_above == pytest.approx(0.69317, abs=5e-6)
    up = srswr.upper_epsilon(np.array([inv.impossible_above]), population=10000, sample=10000)
    assert up[0] == pytest.approx(1.0579, abs=5e-5)
    assert inv.certified < inv.impossible_above
    assert srswr.upper_epsilon(np.array([inv.certified]), population=10000, sample=10000)[0] <= 1
    nxt = np.nextafter(inv.certified, 10)
    assert srswr.upper_epsilon(np.array([nxt]), population=10000, sample=10000)[0] > 1 - 1e-6


@pytest.mark.parametrize(("n", "m"), [(3, 5), (10, 10), (50, 200), (7, 3)])
@pytest.mark.parametrize("eps", [1e-3, 0.3, 1.0, 3.0])
def test_against_mpmath_oracle(n: int, m: int, eps: float) -> None:
    lo = srswr.lower_epsilon(np.array([eps]), population=n, sample=m)[0]
    up = srswr.upper_epsilon(np.array([eps]), population=n, sample=m)[0]
    v = binomial_log_mgf(m, mp.mpf(1) / n, eps)
    r = relaxation(binomial_pmf(m, mp.mpf(1) / n), eps)
    assert lo <= v
    assert abs(lo - float(v)) <= 1e-12 * float(v) + 1e-300
    exact_up = v if v <= eps else r
    assert up >= exact_up
    assert up - float(exact_up) <= 1e-9 * float(exact_up) + 1e-13


def test_extreme_inputs_stay_finite_and_ordered() -> None:
    eps = np.array([1e-12, 1e-3, 1.0, 50.0, 800.0])
    for n, m in [(10**12, 10**6), (10**4, 10**4), (2, 10**6)]:
        lo = srswr.lower_epsilon(eps, population=n, sample=m)
        up = srswr.upper_epsilon(eps, population=n, sample=m)
        assert np.all(np.isfinite(lo)) and np.all(np.isfinite(up))
        assert np.all(lo <= up)


@given(
    n=st.integers(1, 10**6),
    m=st.integers(1, 2000),
    e1=st.floats(1e-6, 20),
    e2=st.floats(1e-6, 20),
)
def test_properties_lower_le_upper_monotone(n: int, m: int, e1: float, e2: float) -> None:
    a, b = sorted((e1, e2))
    eps = np.array([a, b])
    lo = srswr.lower_epsilon(eps, population=n, sample=m)
    up = srswr.upper_epsilon(eps, population=n, sample=m)
    assert np.all(lo <= up)
    assert lo[0] <= lo[1] and up[0] <= up[1] + 1e-12 * up[1]


def test_delta_refused(tmp_path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, delta: 1.0e-6}\n"
        "sampling: {scheme: srswr, population: 100, sample: 10}\n"
    )
    run = run_ampcalc("bound", str(f), expect=2)
    assert "δ > 0" in run.stderr and "not one" in run.stderr


def test_group_size_above_population_refused(tmp_path) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, group_size: 11}\n"
        "sampling: {scheme: srswr, population: 10, sample: 10}\n"
    )
    run = run_ampcalc("bound", str(f), expect=2)
    assert "group_size 11 is larger than population 10" in run.stderr
