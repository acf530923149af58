"""Poisson sampling as theorem records assembled by ``schemes.assembly``: the derived
replace-one guarantee (spec §2, docs/verify.md) and group privacy (Bun et al. 2020, Lemma 3.3
applied g times), against mpmath."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from ampcalc import engine
from ampcalc.designs.document import load_designs
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.schemes import poisson
from ampcalc.schemes.assembly import OfPair

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy


@pytest.fixture(autouse=True)
def _precision():
    old = mp.mp.dps
    mp.mp.dps = 50
    yield
    mp.mp.dps = old


def amp(q: float, eps) -> mp.mpf:
    return mp.log(1 + mp.mpf(q) * (mp.exp(mp.mpf(eps)) - 1))


def test_replace_one_delta_prime_of_the_exact_value() -> None:
    """q = 0.3, M (1, 1e-6)-DP add-remove, ε_R = 2ε: the exact pure-ε value
    A(q, 1) − log(1 − q(1 − e^{−1})) holds with δ′ = qδ(1 + e^{ε′ − ε}) (derivations
    §10.3), below the two-step bound 2·A(q, 1) and its δ′ qδ(1 + e^{A(q, 1)})."""
    mech = Mechanism(epsilon=1.0, delta=1e-6, neighbours=Neighbours.ADD_REMOVE)
    a = poisson.replace_one_analysis(0.3, mech)
    eps = np.asarray(1.0)
    q = mp.mpf(0.3)
    exact = amp(0.3, 1) - mp.log(1 - q * (1 - mp.exp(-1)))
    assert exact < 2 * amp(0.3, 1)
    assert a.upper is not None and a.delta_prime is not None
    up = float(a.upper(eps))
    assert up >= exact and up - float(exact) < 1e-14
    exact_delta = q * mp.mpf(1e-6) * (1 + mp.exp(exact - 1))
    dp = float(a.delta_prime(eps))
    assert dp >= exact_delta and (dp - exact_delta) / exact_delta < 1e-13
    assert dp < q * mp.mpf(1e-6) * (1 + mp.exp(amp(0.3, 1)))
    # the theorem record alone gives the same bounds as the assembled analysis
    thm = poisson.replace_one_theorem(0.3, delta=1e-6, delta_replace_one=mech.delta_replace_one_of)
    assert isinstance(thm.upper, OfPair) and isinstance(thm.delta_prime, OfPair)
    assert float(thm.upper.formula(eps, np.asarray(2.0))) == up
    assert float(thm.delta_prime.formula(eps, np.asarray(2.0))) == dp


def test_group_bound_and_its_certified_inverse() -> None:
    """g = 3, q = 0.05, ε = 0.5 (examples/designs/group-household.yaml): ε′ = 3·A(q, ε);
    the certified ε for a target ε′ = 0.1 solves 3·A(q, ε) = 0.1."""
    doc = {
        "mechanism": {"epsilon": 0.5, "neighbours": "add-remove", "group_size": 3},
        "sampling": {"scheme": "poisson", "rate": 0.05},
    }
    d = load_designs(doc)[0]
    res = engine.bound(d)
    exact = 3 * amp(0.05, 0.5)
    assert res.lower <= exact <= res.upper and res.upper - res.lower < 1e-15
    assert res.details["reference_epsilon"] == 1.5
    assert res.details["tight"] is True
    inv = engine.invert(d, 0.1)
    exact_eps = mp.log(1 + (mp.exp(mp.mpf(0.1) / 3) - 1) / mp.mpf(0.05))
    assert inv.certified <= exact_eps and float(exact_eps) - inv.certified < 1e-14


def test_group_condition_states_the_declared_relation() -> None:
    """Changed with the assembly: the group path stated "M is pure ε-DP (δ = 0) under
    add-remove" in its own words, without the declared relation every other path gives;
    it now reads as the assembled conditions do."""
    doc = {
        "mechanism": {"epsilon": 1.0, "neighbours": "both", "group_size": 2},
        "sampling": {"scheme": "poisson", "rate": 0.3},
    }
    res = engine.bound(load_designs(doc)[0])
    assert res.conditions[-1] == "M is ε-DP (δ = 0) under add-remove (declared: both)"
