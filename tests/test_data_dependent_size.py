"""data-dependent-size: Bun et al., §4.1 (Δε witness) and Lemma B.1."""

from __future__ import annotations

import json
import math

import mpmath as mp
import numpy as np
import pytest
from conftest import run_ampcalc
from hypothesis import given
from hypothesis import strategies as st
from oracle_sizes import count_pair_loss_below, sum_laplace_pair_loss

import ampcalc
from ampcalc import engine


def design(eps: float = 1.0, neighbours: str = "add-remove", **sampling):
    return ampcalc.load_designs(
        {
            "mechanism": {"epsilon": eps, "neighbours": neighbours},
            "sampling": {"scheme": "data-dependent-size", **sampling},
        }
    )[0]


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def test_paper_rounding_example():
    # 000 §4.3: |P| = 14 vs |P′| = 15, r = 1/10, nearest rounding: 1 vs 2 records -> Δ = 1,
    # ε′ >= ε: no amplification
    m14, m15 = round_half_up(14 / 10), round_half_up(15 / 10)
    assert (m14, m15) == (1, 2)
    r = engine.bound(design(population=14, sample=m14, sensitivity=abs(m15 - m14)))
    assert r.lower >= 1.0  # the paper's ε′ >= ε
    # an allocation of these figures may also give 2 records to the 13 records left when
    # x is removed: Σx + Lap(1), x = −1, loses ε + A(1/14, 2ε) = 1.375941 (the exact LP
    # value of this design, docs/verify.md), so the design degrades
    exact = count_pair_loss_below(13, True, 1, 13, 2, 2.0, 1.0)
    assert float(exact) == pytest.approx(1.375941, abs=1e-6)
    assert mp.mpf(r.lower) <= exact and r.lower == pytest.approx(float(exact), rel=1e-14)
    assert r.verdict == "degrades"
    assert r.details["lower_witness"].endswith("vs P − {x} (13 records, 2 drawn)")
    # an allocation that never falls as records are added (the paper's rounding) leaves 1
    assert any("whose lower bound is 1" in n for n in r.notes)
    assert r.guarantee_neighbours == "add-remove"
    assert r.details["sensitivity"] == 1


def test_two_direction_upper_bound():
    # issue text / spec §4.2: N = 14, m = 1, Δ = 1, ε = 1 -> A(2/14, 2) + 1 = 1.648528
    r = engine.bound(design(population=14, sample=1, sensitivity=1))
    exact = mp.log(1 + mp.mpf(2) / 14 * mp.expm1(2)) + 1
    assert float(exact) == pytest.approx(1.648528, abs=1e-6)
    assert mp.mpf(r.upper) >= exact
    assert r.upper == pytest.approx(1.648528, abs=1e-6)


def test_explicit_pair_beats_one_direction_value():
    # spec §4.2: the one-direction value A(1/15, 2) + 1 = 1.354829 is beaten by a pair:
    # 13 records of +1 with 2 sampled vs those plus one −1 record (14 records, 1 sampled),
    # M(S) = Σx + Lap(1) (ε-DP under add-remove): loss 1.375941
    one_direction = float(mp.log(1 + mp.expm1(2) / 15) + 1)
    assert one_direction == pytest.approx(1.354829, abs=1e-6)
    loss = sum_laplace_pair_loss(13, 2, 14, 1, 1.0)
    assert float(loss) == pytest.approx(1.375941, abs=1e-6)
    assert loss > one_direction
    r = engine.bound(design(population=14, sample=1, sensitivity=1))
    assert r.upper >= loss and r.lower <= loss
    # and the pair in the other direction (14 records with 1 sampled, plus one: 2 sampled)
    assert r.upper >= sum_laplace_pair_loss(14, 1, 15, 2, 1.0)


def test_degrades_when_sensitivity_above_one():
    r = engine.bound(design(eps=0.5, population=1000, sample=100, sensitivity=3))
    # P − {x} draws 103: Δε + A(100/1000, 2ε) = 1.5 + 0.158620
    exact = count_pair_loss_below(999, True, 100, 999, 103, 2.0, 0.5)
    assert float(exact) == pytest.approx(1.5 + math.log1p(0.1 * math.expm1(1.0)), rel=1e-14)
    assert mp.mpf(r.lower) <= exact and r.lower == pytest.approx(float(exact), rel=1e-14)
    assert r.verdict == "degrades"
    assert r.upper == pytest.approx(float(mp.log(1 + mp.mpf(103) / 1000 * mp.expm1(1)) + 1.5))


def test_vector_allocation_lower_only():
    r = engine.bound(design(eps=0.5, population=1000, sensitivity_l1=4))
    assert r.lower == 2.0 and r.upper is None
    assert r.verdict == "degrades"
    assert any("vector allocation" in w for w in r.warnings)
    assert r.details["sensitivity_kind"] == "l1"


def test_invert_round_trip():
    d = design(population=1000, sample=10, sensitivity=1)
    inv = engine.invert(d, 1.0)
    assert engine.bound(d, inv.certified).upper <= 1.0
    # the smallest ε with ε + A(10/1000, 2ε) >= 1 (mpmath root: 0.98916...)
    root = mp.findroot(lambda e: e + mp.log1p(mp.mpf(10) / 1000 * mp.expm1(2 * e)) - 1, 0.99)
    assert inv.impossible_above == pytest.approx(float(root), rel=1e-12)
    assert engine.bound(d, inv.impossible_above).lower >= 1.0
    assert engine.bound(d, np.nextafter(inv.impossible_above, 0)).lower < 1.0


@given(eps=st.floats(1e-9, 700), m=st.integers(0, 100), delta=st.integers(0, 5))
def test_ordered_and_monotone(eps, m, delta):
    d = design(population=100, sample=m, sensitivity=delta)
    r = engine.bound(d, np.array([eps, eps * 1.5]))
    assert np.all(r.lower <= r.upper)
    assert np.all(np.diff(r.upper) >= 0) and np.all(np.diff(r.lower) >= 0)


def test_replace_one_mechanism_refused():
    r = engine.bound(design(neighbours="replace-one", population=14, sample=1, sensitivity=1))
    assert r.error and "Lemma B.1" in r.error and r.upper is None


@pytest.mark.parametrize(
    ("sampling", "field", "msg"),
    [
        (
            {"population": 14, "sample": 1, "sensitivity": -1},
            "sampling.sensitivity",
            "expected a whole number in [0,",
        ),
        (
            {"population": 14, "sample": 20, "sensitivity": 1},
            "sampling.sample",
            "sample 20 is larger than population 14",
        ),
        ({"population": 14, "sample": 1}, "sampling.sensitivity", "give exactly one of"),
        ({"population": 14, "sensitivity": 1}, "sampling.sensitivity", "needs `sample`"),
    ],
)
def test_bad_input(tmp_path, sampling, field, msg):
    f = tmp_path / "d.yaml"
    doc = {
        "mechanism": {"epsilon": 1.0},
        "sampling": {"scheme": "data-dependent-size", **sampling},
    }
    f.write_text(json.dumps(doc, indent=1))
    r = run_ampcalc("bound", str(f), expect=2)
    assert field in r.stderr and msg in r.stderr


def test_example_json_details():
    r = run_ampcalc("bound", "examples/designs/data-dependent-size.yaml", "--json").json()
    res = r["results"][0]
    assert res["details"]["sensitivity"] == 1
    assert res["verdict"] == "degrades"
    assert res["epsilon_prime"]["lower"] == pytest.approx(1.375941, abs=1e-6)
    assert res["epsilon_prime"]["upper"] == pytest.approx(1.648528, abs=1e-6)


# --- the sum witness where x may be sampled, checked on the exact LP (ampcalc verify) ---


@pytest.mark.parametrize(
    ("n", "m", "sens", "eps", "mech", "exact"),
    [
        # issue 15: Δ = 0 (a constant allocation is a srswor at ε_R = 2ε): lower was 0
        (6, 3, 0, 2.0, {}, 3.325002747),
        (4, 2, 0, 1.0, {}, 1.43378083),
        (4, 2, 0, 1.0, {"neighbours": "both"}, 0.620114507),
        (4, 2, 0, 1.0, {"epsilon_replace_one": 0.6}, 0.3443407699),
        (4, 4, 0, 1.0, {}, 1.810130497),  # m = N: only P ∪ {x}, A(4/5, 2)
        (4, 1, 0, 0.3, {}, 0.1869190555),
        # Δ > 0: P − {x} draws m + Δ, loss Δε + A(m/N, ε_R) (was Δε)
        (4, 1, 1, 1.0, {}, 1.954458593),
        (4, 1, 2, 2.0, {}, 6.667196089),
        (4, 1, 2, 1.0, {"neighbours": "both"}, 2.35737402),
        (4, 4, 1, 1.0, {}, 2.575557118),  # m = N: P ∪ {x} draws N − Δ
        # P ∪ {x} at the best size in between: m′ = 1, ε + A(1/3, 2ε) (was 4 = Δε)
        (2, 2, 2, 2.0, {}, 4.937364011),
    ],
)
def test_lower_bound_is_the_exact_value(n, m, sens, eps, mech, exact):
    d = {
        "name": "t",
        "mechanism": {"epsilon": eps, "neighbours": "add-remove", **mech},
        "sampling": {
            "scheme": "data-dependent-size",
            "population": n,
            "sample": m,
            "sensitivity": sens,
        },
    }
    (row,) = ampcalc.verify(d, pairs="all")
    assert row["status"] == "PASS", row
    assert row["epsilon_prime_exact"] == pytest.approx(exact, abs=1e-8)
    assert row["epsilon_prime"]["lower"] == pytest.approx(exact, abs=1e-8)
    r = engine.bound(ampcalc.load_designs(d)[0])
    assert r.lower > sens * eps  # the noisy count alone gave Δε


def test_constant_allocation_lower_equals_upper():
    # Δ = 0: the upper bound A(m/N, 2ε) is attained (closed form, mpmath)
    r = engine.bound(design(eps=2.0, population=6, sample=3, sensitivity=0))
    exact = count_pair_loss_below(5, True, 3, 5, 3, 2.0, 2.0)
    assert float(exact) == pytest.approx(float(mp.log1p(mp.mpf(1) / 2 * mp.expm1(4))), rel=1e-30)
    assert mp.mpf(r.lower) <= exact <= mp.mpf(r.upper)
    assert r.lower == pytest.approx(float(exact), rel=1e-14)
    assert r.upper == pytest.approx(float(exact), rel=1e-14)


def test_count_witness_needs_a_reachable_size():
    # N = 2, m = 1, Δ = 5: a neighbour has 1 or 3 records, so m′ ∈ 0..3 and the noisy count
    # sees at most a shift of 2; the lower bound was 5ε = 5 above the exact worst case 2 of
    # every allocation with these figures (the LP at Δ = 2 allows every m′ in 0..3)
    d = {
        "name": "t",
        "mechanism": {"epsilon": 1.0, "neighbours": "add-remove"},
        "sampling": {
            "scheme": "data-dependent-size",
            "population": 2,
            "sample": 1,
            "sensitivity": 2,
        },
    }
    (row,) = ampcalc.verify(d, pairs="all")
    assert row["status"] == "PASS" and row["epsilon_prime_exact"] == pytest.approx(2.0, abs=1e-8)
    r = engine.bound(design(population=2, sample=1, sensitivity=5))
    assert r.lower == 2.0 and r.lower <= row["epsilon_prime_exact"] + 1e-8
    assert r.details["lower_witness"] == "noisy count |S| + Lap(1/ε): sample sizes 1 vs 1 ± 2"


def test_delta_refused():
    # issue 15 V4 audit: Lemma B.1 gives no δ′; an (ε, δ) mechanism gets no upper bound
    d = ampcalc.load_designs(
        {
            "mechanism": {"epsilon": 1.0, "delta": 0.01},
            "sampling": {
                "scheme": "data-dependent-size",
                "population": 4,
                "sample": 2,
                "sensitivity": 0,
            },
        }
    )[0]
    r = engine.bound(d)
    assert r.error and "δ = 0" in r.error
    assert r.upper is None and r.delta_prime is None


# --- allocation-test: 000 Proposition 4.1, LP of spec §4.3 --------------------------------


def alloc_design(p: dict, q: dict, eps: float = 1.0):
    return ampcalc.load_designs(
        {
            "mechanism": {"epsilon": eps, "neighbours": "add-remove"},
            "sampling": {"scheme": "allocation-test", "allocation": p, "neighbour_allocation": q},
        }
    )[0]


@pytest.mark.parametrize("eps", [1e-6, 0.1, 1.0, 5.0])
def test_allocation_test_deterministic_delta_one(eps):
    # spec §4.3: for deterministic f with Δ = 1, adv* = (e^ε − 1)/(e^ε + 1)
    d = alloc_design(
        {"values": [1], "probabilities": [1]}, {"values": [2], "probabilities": [1]}, eps
    )
    r = engine.bound(d)
    exact = mp.log(1 + mp.expm1(eps) / (mp.exp(eps) + 1))
    assert mp.mpf(r.lower) <= exact
    assert float((exact - mp.mpf(r.lower)) / exact) < 1e-6
    assert r.upper is None and r.verdict == "no-guarantee"


def test_allocation_test_randomised_rounding_pair():
    # 000 §4.3 setting with randomised rounding: |P| = 14 -> 1.4 (1 w.p. 0.6, 2 w.p. 0.4),
    # |P′| = 15 -> 1.5 (1 or 2 w.p. 0.5): adv* = 0.1·(e^ε − 1)/(e^ε + 1)
    d = alloc_design(
        {"values": [1, 2], "probabilities": [0.6, 0.4]},
        {"values": [1, 2], "probabilities": [0.5, 0.5]},
    )
    r = engine.bound(d)
    exact = mp.log(1 + mp.mpf("0.1") * mp.expm1(1) / (mp.e + 1))
    assert mp.mpf(r.lower) <= exact
    assert float((exact - mp.mpf(r.lower)) / exact) < 1e-6
    assert r.details["advantage"] == pytest.approx(0.1 * math.tanh(0.5), rel=1e-6)


def test_allocation_test_bad_sum(tmp_path):
    f = tmp_path / "d.yaml"
    doc = {
        "mechanism": {"epsilon": 1.0},
        "sampling": {
            "scheme": "allocation-test",
            "allocation": {"values": [1, 2], "probabilities": [0.5, 0.6]},
            "neighbour_allocation": {"values": [2], "probabilities": [1]},
        },
    }
    f.write_text(json.dumps(doc, indent=1))
    r = run_ampcalc("bound", str(f), expect=2)
    assert "sampling.allocation.probabilities" in r.stderr
    assert "off from 1 by +0.1" in r.stderr
