"""Poisson sampling under replace-one with δ > 0: the exact pure-ε value holds with
δ′ = q((1 − w)δ_D + wδ_R), w = e^{ε′ − ε_R} (docs/derivations.md §10.3), checked against
mpmath and on the exact (ε, δ) programme of ``ampcalc verify``."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import ampcalc
from ampcalc.schemes import poisson

mp.mp.dps = 40


def _exact(q, e_d, e_r):
    q, e_d, e_r = mp.mpf(q), mp.mpf(e_d), mp.mpf(e_r)
    return mp.log((1 + q * mp.expm1(e_d)) / (1 + q * mp.expm1(e_d - e_r)))


def _doc(q: float, mech: dict) -> dict:
    return {
        "mechanism": mech,
        "guarantee": "replace-one",
        "sampling": {"scheme": "poisson", "rate": q},
    }


@pytest.mark.parametrize(
    ("q", "e", "e_r", "d", "d_r"),
    [(0.2, 2.0, 0.5, 1e-6, 1e-6), (0.3, 1.0, 1.0, 1e-6, 1e-6), (0.05, 0.5, 0.2, 1e-5, 3e-6)],
)
def test_delta_prime_against_mpmath(q, e, e_r, d, d_r) -> None:
    dp = poisson.replace_one_exact_delta_prime(
        np.array(e), np.array(e_r), d, np.array(d_r), rate=q
    )
    x = _exact(q, e, e_r)
    w = mp.exp(x - e_r)
    want = q * ((1 - w) * d + w * d_r)
    assert float(dp) >= want and float(dp) == pytest.approx(float(want), rel=1e-13)
    # the multipliers: the identity behind the bound, at random (a, b, c)
    rng = np.random.default_rng(1)
    qm = mp.mpf(q)
    for a, b, c in (map(mp.mpf, row) for row in rng.uniform(0, 1, size=(5, 3))):
        lhs = (1 - qm) * a + qm * b - mp.exp(x) * ((1 - qm) * a + qm * c)
        rhs = qm * (1 - mp.exp(x - e_r)) * (b - mp.exp(e) * a) + qm * mp.exp(x) * (
            mp.exp(-e_r) * b - c
        )
        assert abs(lhs - rhs) < mp.mpf(10) ** -30


def test_add_remove_only_mechanism_uses_the_group_form() -> None:
    e, q, d = 1.0, 0.3, 1e-6
    up = poisson.replace_one_exact(np.array(e), np.array(2 * e), rate=q)[1]
    dp = poisson.replace_one_exact_delta_prime(
        np.array(e), np.array(2 * e), d, np.array((1 + np.exp(e)) * d), rate=q
    )
    want = q * d * (1 + mp.exp(_exact(q, e, 2 * e) - e))
    assert float(up) == pytest.approx(float(_exact(q, e, 2 * e)), rel=1e-13)
    assert float(dp) == pytest.approx(float(want), rel=1e-12) and float(dp) >= want


def test_example_from_the_matching_bounds_report() -> None:
    # rate 0.2, ε = 2, ε_R = 0.5: the upper was ε_R = 0.5, now the exact 0.2947...
    mech = {
        "epsilon": 2.0,
        "delta": 1e-6,
        "neighbours": "add-remove",
        "epsilon_replace_one": 0.5,
        "delta_replace_one": 1e-6,
    }
    r = ampcalc.bound(ampcalc.load_designs(_doc(0.2, mech))[0])
    assert r.upper == pytest.approx(float(_exact(0.2, 2.0, 0.5)), rel=1e-13)
    assert r.lower <= r.upper and r.delta_prime == pytest.approx(0.2e-6, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_seeded_sweep_on_the_exact_delta_programme(seed: int) -> None:
    rng = np.random.default_rng(20261128 + seed)
    q = float(np.round(rng.uniform(0.05, 0.9), 3))
    e = float(np.round(rng.uniform(0.2, 2.5), 3))
    delta = float(rng.choice([1e-3, 1e-2, 0.05]))
    kind = seed % 3
    mech: dict = {"epsilon": e, "delta": delta}
    if kind == 0:
        mech["neighbours"] = "both"
    elif kind == 1:
        mech["neighbours"] = "add-remove"
    else:
        mech.update(
            neighbours="add-remove",
            epsilon_replace_one=float(np.round(e * 0.6, 3)),
            delta_replace_one=float(delta / 2),
        )
    (row,) = ampcalc.verify(_doc(q, mech))
    assert row["status"] == "PASS", row
