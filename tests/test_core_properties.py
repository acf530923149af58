"""hypothesis properties of the srswor and poisson bounds, through the engine."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import oracle
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

import ampcalc
from ampcalc import engine

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy

EPS = st.floats(min_value=1e-12, max_value=700.0)
NEIGHBOURS = st.sampled_from(["add-remove", "replace-one", "both"])


def srswor(population: int, sample: int, neighbours: str, eps: float = 1.0):
    return ampcalc.load_designs(
        {
            "mechanism": {"epsilon": eps, "neighbours": neighbours},
            "sampling": {"scheme": "srswor", "population": population, "sample": sample},
        }
    )[0]


def poisson(rate: float, neighbours: str, guarantee: str = "add-remove", eps: float = 1.0):
    return ampcalc.load_designs(
        {
            "mechanism": {"epsilon": eps, "neighbours": neighbours},
            "sampling": {"scheme": "poisson", "rate": rate},
            "guarantee": guarantee,
        }
    )[0]


SIZES = st.integers(min_value=1, max_value=10**12).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(min_value=1, max_value=n))
)


@given(sizes=SIZES, neighbours=NEIGHBOURS, e1=EPS, e2=EPS)
@example(sizes=(10**12, 1), neighbours="both", e1=1e-12, e2=50.0)
def test_srswor_lower_le_upper_and_monotone_in_epsilon(sizes, neighbours, e1, e2) -> None:
    n, m = sizes
    d = srswor(n, m, neighbours)
    lo, hi = sorted((e1, e2))
    r = engine.bound(d, np.array([lo, hi]))
    assert np.all(r.lower <= r.upper)
    assert r.upper[0] <= r.upper[1] and r.lower[0] <= r.lower[1]


@given(n=st.integers(min_value=2, max_value=10**9), eps=EPS, neighbours=NEIGHBOURS)
def test_srswor_monotone_in_rate(n: int, eps: float, neighbours: str) -> None:
    small = engine.bound(srswor(n, 1, neighbours), eps)
    large = engine.bound(srswor(n, n // 2 + 1, neighbours), eps)
    assert small.upper <= large.upper and small.lower <= large.lower


@given(n=st.integers(min_value=1, max_value=10**12), eps=EPS, neighbours=NEIGHBOURS)
@example(n=1, eps=700.0, neighbours="both")
def test_srswor_full_sample_gives_no_amplification(n: int, eps: float, neighbours: str) -> None:
    r = engine.bound(srswor(n, n, neighbours), eps)
    eps_r = eps if neighbours != "add-remove" else 2 * eps
    assert r.lower <= eps_r <= r.upper
    assert r.verdict == "no-amplification"


@given(
    rate=st.floats(min_value=1e-12, max_value=1.0),
    eps=EPS,
    neighbours=NEIGHBOURS,
    guarantee=st.sampled_from(["add-remove", "replace-one"]),
)
def test_poisson_lower_le_upper_sound_against_oracle(rate, eps, neighbours, guarantee) -> None:
    assume(neighbours != "replace-one")  # refused: Poisson needs M's add-remove ε
    r = engine.bound(poisson(rate, neighbours, guarantee), eps)
    assert r.lower <= r.upper
    if guarantee == "add-remove":
        exact = oracle.amplification(rate, eps)
        assert mp.mpf(r.upper) >= exact >= mp.mpf(r.lower)
    else:
        # upper: min(2·A(q, ε_D), ε_R); the lower witness never exceeds it
        assert r.upper <= 2 * float(oracle.amplification(rate, eps)) * (1 + 1e-12)


@given(
    eps=EPS,
    neighbours=st.sampled_from(["add-remove", "both"]),
    guarantee=st.sampled_from(["add-remove", "replace-one"]),
)
def test_poisson_rate_one_gives_mechanism_epsilon(eps, neighbours, guarantee) -> None:
    r = engine.bound(poisson(1.0, neighbours, guarantee), eps)
    ref = r.details["reference_epsilon"]
    assert r.lower <= ref * (1 + 1e-12) and r.upper >= ref * (1 - 1e-12)
    assert r.verdict == "no-amplification"


TARGET = st.floats(min_value=1e-9, max_value=600.0)


@given(sizes=SIZES, neighbours=NEIGHBOURS, target=TARGET)
@example(sizes=(10**9, 1), neighbours="both", target=689.0)
@example(sizes=(10000, 100), neighbours="add-remove", target=1.0)
def test_srswor_invert_round_trips_one_sidedly(sizes, neighbours, target) -> None:
    n, m = sizes
    d = srswor(n, m, neighbours)
    inv = engine.invert(d, target)
    cert = inv.certified
    assert cert is not None and cert > 0
    assert engine.bound(d, cert).upper <= target  # exact, no tolerance
    # not needlessly conservative: a relative nudge of 1e-9 breaks the target
    assert engine.bound(d, cert * (1 + 1e-9)).upper > target
    # impossible_above: the lower bound reaches the target there
    assert engine.bound(d, inv.impossible_above).lower >= target
    assert inv.impossible_above >= cert


@given(
    rate=st.floats(min_value=1e-9, max_value=1.0),
    target=TARGET,
    neighbours=st.sampled_from(["add-remove", "both"]),
    guarantee=st.sampled_from(["add-remove", "replace-one"]),
)
def test_poisson_invert_round_trips(rate, target, neighbours, guarantee) -> None:
    d = poisson(rate, neighbours, guarantee)
    inv = engine.invert(d, target)
    cert = inv.certified
    if cert is None:  # the bound cannot exceed the target for any ε (replace-one, ε_R cap)
        assert inv.details.get("certified_unbounded")
        return
    assert engine.bound(d, cert).upper <= target
    assert engine.bound(d, math.nextafter(cert, math.inf) * (1 + 1e-9)).upper > target
    imp = inv.impossible_above
    assert imp is not None and imp >= cert
    assert engine.bound(d, imp).lower >= target


def test_inverse_vectorised_over_targets() -> None:
    d = srswor(10000, 100, "both")
    t = np.logspace(-9, 2.5, 200)
    inv = engine.invert(d, t)
    assert inv.certified.shape == t.shape
    assert np.all(engine.bound(d, inv.certified).upper <= t)
    assert np.all(np.diff(inv.certified) > 0)
