"""Kernels vs the mpmath oracle (one-sided), outward rounding, exact inversion."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import oracle
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ampcalc.math import numeric

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy

EPS = st.floats(min_value=1e-12, max_value=700.0)
EPS_WIDE = st.floats(min_value=1e-12, max_value=1e4)
RATE = st.floats(min_value=1e-9, max_value=1.0)


def rel_err(x: float, exact: mp.mpf) -> float:
    return float(abs(mp.mpf(x) - exact) / exact) if exact != 0 else abs(x)


@given(q=RATE, eps=EPS_WIDE)
@example(q=0.01, eps=1.0)
@example(q=1e-9, eps=1e-12)
@example(q=1e-9, eps=700.0)
@example(q=1e-9, eps=701.0)
@example(q=1.0, eps=50.0)
@example(q=0.5, eps=1e-12)
def test_amplification_upper_never_below_oracle_and_accurate(q: float, eps: float) -> None:
    exact = oracle.amplification(q, eps)
    up = float(numeric.amplification_upper(q, eps))
    lo = float(numeric.amplification_lower(q, eps))
    assert mp.mpf(up) >= exact  # a guarantee never goes low
    assert mp.mpf(lo) <= exact  # a lower bound never goes high
    assert rel_err(up, exact) < 1e-12
    assert rel_err(lo, exact) < 1e-12


@given(q=RATE, target=st.floats(min_value=1e-12, max_value=700.0))
@example(q=1e-9, target=689.5)  # exp(T)/q overflows here: the log form must take over
@example(q=0.01, target=1.0)
@example(q=1e-9, target=1e-12)
def test_inverse_matches_oracle(q: float, target: float) -> None:
    exact = oracle.amplification_inverse(q, target)
    got = float(numeric.amplification_inverse(q, target))
    assert math.isfinite(got)
    assert rel_err(got, exact) < 1e-12


@given(q=RATE, eps=EPS_WIDE)
@example(q=1.0, eps=800.0)
@example(q=1.0, eps=1e-12)
def test_removal_kernel_matches_oracle(q: float, eps: float) -> None:
    exact = oracle.removal_kernel(q, eps)
    got = float(numeric.neg_log1m(q, eps))
    assert rel_err(got, exact) < 1e-12


def test_amplification_is_vectorised_and_overflow_free() -> None:
    eps = np.array([1e-12, 1.0, 50.0, 700.0, 701.0, 1e5])
    out = numeric.amplification_upper(1e-12, eps)
    assert out.shape == eps.shape
    assert np.all(np.isfinite(out))
    # large ε: A(q, ε) = ε + log q + log1p((1 − q)e^{−ε}/q) → ε + log q
    assert out[-1] == pytest.approx(1e5 + math.log(1e-12), rel=1e-14)
    assert mp.mpf(out[-1]) >= oracle.amplification(1e-12, 1e5)


def test_rate_one_gives_epsilon_exactly_within_outward_ulps() -> None:
    eps = np.array([1e-12, 0.3, 1.0, 50.0, 700.0, 900.0])
    up = numeric.amplification_upper(1.0, eps)
    lo = numeric.amplification_lower(1.0, eps)
    assert np.all(up >= eps) and np.all(lo <= eps)
    assert np.all(np.abs(up - eps) <= 40 * np.spacing(eps))


def test_round_up_and_down_have_their_direction() -> None:
    x = np.array([0.0, 1e-300, 1.0, 1e300])
    assert np.all(numeric.round_up(x) > x)
    down = numeric.round_down(x)
    assert np.all(down[1:] < x[1:]) and down[0] == 0.0 and np.all(down >= 0)


def test_largest_feasible_returns_the_feasible_end_exactly() -> None:
    # f(x) = x² is increasing on x > 0; the answer is the largest float with x*x <= 2
    x = float(numeric.largest_feasible(lambda v: v * v, 2.0, 0.1, 10.0))
    assert x * x <= 2.0
    nxt = math.nextafter(x, math.inf)
    assert nxt * nxt > 2.0


def test_largest_feasible_widens_the_bracket_and_flags_extremes() -> None:
    x = float(numeric.largest_feasible(lambda v: np.log1p(v), 50.0, 1.0, 2.0))
    assert np.log1p(x) <= 50.0 < np.log1p(math.nextafter(x, math.inf))
    assert math.isnan(float(numeric.largest_feasible(lambda v: v + 5.0, 1.0, 1.0, 2.0)))
    assert math.isinf(float(numeric.largest_feasible(lambda v: np.zeros_like(v), 1.0, 1.0, 2.0)))


def test_smallest_reaching_is_exact() -> None:
    x = float(numeric.smallest_reaching(lambda v: v * v, 2.0, 0.1, 10.0))
    assert x * x >= 2.0
    prev = math.nextafter(x, 0.0)
    assert prev * prev < 2.0


def test_certify_down_steps_an_optimistic_candidate_to_feasibility() -> None:
    def f(v: np.ndarray) -> np.ndarray:
        return numeric.amplification_upper(0.01, v)

    exact = float(oracle.amplification_inverse(0.01, 1.0))
    too_high = math.nextafter(exact, math.inf) * (1 + 1e-13)
    x = float(numeric.certify_down(f, too_high, 1.0))
    assert float(f(np.asarray(x))) <= 1.0
