"""The assembly layer for results that use M's ε under both relations at once.

Witnesses run at min(ε_D, ε_R/c), formulas of (ε_D, ε_R), lower-only results, a δ′
formula δ′(ε, δ), the theorem's refusals in its order, and the reference ε of the
guarantee: each checked on a synthetic theorem (what reaches the formulas) and on the
families that use it (against mpmath values of the papers' formulas).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ampcalc
from ampcalc import engine
from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.schemes.assembly import (
    InScale,
    OfPair,
    Proportional,
    Refusal,
    Refuses,
    Scale,
    Theorem,
    Witness,
    assemble,
    epsilons,
    witness_reduced,
)

mp = pytest.importorskip("mpmath")


def _a(q: float, eps: float) -> float:
    """A(q, ε) = log(1 + q(e^ε − 1)) in 50 digits (Bun et al., Theorem 2.2)."""
    with mp.workdps(50):
        return float(mp.log(1 + mp.mpf(q) * (mp.exp(mp.mpf(eps)) - 1)))


def _b(a: float, k: int, eps: float) -> float:
    """B(A, K, ε) in 50 digits (Bun et al., Theorems 5.1/5.2)."""
    with mp.workdps(50):
        a_, e = mp.mpf(a), mp.mpf(eps)
        t = (1 - a_) * mp.exp(-k * e)
        return float(mp.log((a_ * mp.exp(e) + t) / (a_ + t)))


def _design(mechanism: dict, sampling: dict) -> ampcalc.Design:
    return ampcalc.load_design({"mechanism": mechanism, "sampling": sampling})


# --- what reaches the formulas ------------------------------------------------------


def _recording() -> tuple[list[tuple[float, ...]], Theorem]:
    seen: list[tuple[float, ...]] = []

    def pair(e_d: np.ndarray, e_r: np.ndarray) -> np.ndarray:
        seen.append((float(e_d), float(e_r)))
        return np.asarray(e_r, dtype=float)

    def witness(e: np.ndarray) -> np.ndarray:
        seen.append((float(e),))
        return np.asarray(e, dtype=float)

    thm = Theorem(
        name="T",
        basis=(),
        relation=Neighbours.BOTH,
        guarantee=Neighbours.REPLACE_ONE,
        upper=OfPair(pair),
        witnesses=(Witness(bound=witness, replace_one_ratio=2.0),),
    )
    return seen, thm


@pytest.mark.parametrize(
    ("mechanism", "pair", "witness"),
    [
        # add-remove, ε_R = 2ε: the witness runs at ε
        (Mechanism(epsilon=0.7), (0.7, 1.4), 0.7),
        # a stated ε_R = 1.1 < 1.4: at min(0.7, 1.1/2) = 0.55
        (Mechanism(epsilon=0.7, epsilon_replace_one=1.1), (0.7, 1.1), 0.55),
        # `both`: ε_R = ε, the 2ε-DP witness at ε/2
        (Mechanism(epsilon=0.7, neighbours=Neighbours.BOTH), (0.7, 0.7), 0.35),
        # replace-one only, no refusal: ε_D = +∞ (no add-remove constraint)
        (Mechanism(epsilon=0.7, neighbours=Neighbours.REPLACE_ONE), (math.inf, 0.7), 0.35),
    ],
)
def test_formulas_see_epsilon_under_each_relation(mechanism, pair, witness) -> None:
    seen, thm = _recording()
    a = assemble(thm, mechanism)
    assert a.upper is not None and a.lower is not None
    a.upper(np.asarray(mechanism.epsilon))
    a.lower(np.asarray(mechanism.epsilon))
    assert seen == [pair, (witness,)]
    assert witness_reduced(mechanism, 2.0) == (witness < mechanism.epsilon)
    assert tuple(float(x) for x in epsilons(mechanism)) == pair
    # the reference ε is M's ε under the guarantee (replace-one)
    assert float(a.reference_epsilon(np.asarray(mechanism.epsilon))) == pair[1]
    # a two-relation theorem states both, and adds no single-relation conversion note
    assert a.conditions == (
        f"M is ε_D-DP under add-remove and ε_R-DP under replace-one "
        f"(declared: {mechanism.neighbours})",
    )
    assert a.notes == () and a.warnings == ()


def test_refusals_are_checked_in_the_theorem_order() -> None:
    def upper(e_d: np.ndarray, e_r: np.ndarray) -> np.ndarray:
        return np.asarray(e_r, dtype=float)

    order = (
        Refusal(Refuses.GUARANTEE, "guarantee"),
        Refusal(Refuses.DELTA, "delta"),
        Refusal(Refuses.ADD_REMOVE_UNKNOWN, "add-remove"),
    )
    both_bad = Mechanism(epsilon=1.0, delta=1e-6, neighbours=Neighbours.REPLACE_ONE)
    for refusals, first in ((order, "delta"), (order[::-1], "add-remove")):
        thm = Theorem(
            name="T",
            basis=(),
            relation=Neighbours.BOTH,
            guarantee=Neighbours.REPLACE_ONE,
            upper=OfPair(upper),
            refusals=refusals,
        )
        with pytest.raises(ConditionError, match=f"^{first}$"):
            assemble(thm, both_bad, guarantee=Neighbours.REPLACE_ONE)
        with pytest.raises(ConditionError, match=r"^guarantee$"):
            assemble(thm, Mechanism(epsilon=1.0), guarantee=Neighbours.ADD_REMOVE)
        # a refused δ leaves δ′ = 0 for a pure mechanism
        a = assemble(thm, Mechanism(epsilon=1.0), guarantee=Neighbours.REPLACE_ONE)
        assert a.delta_prime is not None
        assert float(a.delta_prime(np.asarray(1.0))) == 0.0


def test_delta_formula_gets_the_relations_delta_and_no_mechanism_delta() -> None:
    seen: list[tuple[float, float]] = []

    def delta_prime(eps: np.ndarray, delta: np.ndarray) -> np.ndarray:
        seen.append((float(eps), float(delta)))
        return np.asarray(delta, dtype=float) / 2

    thm = Theorem(
        name="T",
        basis=(),
        relation=Neighbours.ADD_REMOVE,
        guarantee=Neighbours.ADD_REMOVE,
        upper=lambda e: np.asarray(e, dtype=float),
        delta_prime=delta_prime,
    )
    a = assemble(thm, Mechanism(epsilon=0.5, delta=1e-4))
    assert a.delta_prime is not None and a.mechanism_delta is None
    assert float(a.delta_prime(np.asarray(0.5))) == 5e-5
    assert seen == [(0.5, 1e-4)]
    pure = assemble(thm, Mechanism(epsilon=0.5))
    assert pure.delta_prime is not None and float(pure.delta_prime(np.asarray(0.5))) == 0.0
    assert len(seen) == 1  # δ = 0: the formula is not consulted


def test_a_theorem_takes_one_form_of_each_part() -> None:
    """Each part has one field (a formula of one relation's ε or ``OfPair``), so two
    forms of one part cannot be given; what is left to check is refused."""

    def f(e: np.ndarray) -> np.ndarray:
        return e

    def f2(e_d: np.ndarray, e_r: np.ndarray) -> np.ndarray:
        return e_r

    # the joint evaluation is the closed form's, never given beside other bounds: an
    # ``OfPair`` upper bound in place of the form's leaves none
    mixed = Theorem(
        name="T",
        basis=(),
        relation=Neighbours.ADD_REMOVE,
        guarantee=Neighbours.ADD_REMOVE,
        closed_form=numeric.Amplification(0.5),
        upper=OfPair(f2),
    )
    assert mixed.lower == mixed.closed_form.lower and mixed.bounds is None
    with pytest.raises(ValueError, match="one relation's ε"):
        Theorem(name="T", basis=(), relation=None, guarantee=Neighbours.REPLACE_ONE, lower=f)
    with pytest.raises(ValueError, match="one relation's ε"):
        Theorem(
            name="T",
            basis=(),
            relation=Neighbours.BOTH,
            guarantee=Neighbours.REPLACE_ONE,
            upper=OfPair(f2),
            delta_prime=Proportional(0.5),
        )
    ok = Theorem(
        name="T",
        basis=(),
        relation=Neighbours.BOTH,
        guarantee=Neighbours.REPLACE_ONE,
        upper=OfPair(f2),
        inverse=InScale(Scale.REPLACE_ONE, f),
    )
    assert isinstance(ok.upper, OfPair) and isinstance(ok.inverse, InScale)


def test_lower_only_theorem_with_its_own_inverse_finds_the_first_float() -> None:
    """Δ₁ε with Δ₁ = 3 (Bun et al., §4.1): the smallest ε whose rounded
    lower bound reaches 0.5 is the first float at or above 1/6 where it does."""
    d = _design(
        {"epsilon": 1.0, "neighbours": "add-remove"},
        {"scheme": "data-dependent-size", "population": 100, "sensitivity_l1": 3},
    )
    r = engine.invert(d, 0.5)
    assert r.certified is None
    x = float(r.impossible_above)
    assert x == pytest.approx(1 / 6, rel=1e-15)
    lower = engine.analyse(d).lower
    assert lower is not None
    assert float(lower(np.asarray(x))) >= 0.5 > float(lower(np.asarray(np.nextafter(x, 0))))
    zero = _design(
        {"epsilon": 1.0, "neighbours": "add-remove"},
        {"scheme": "data-dependent-size", "population": 100, "sensitivity_l1": 0},
    )
    never = engine.invert(zero, 0.5)  # Δ₁ = 0: the lower bound never reaches it
    assert math.isnan(never.impossible_above)
    assert "never reaches the target" in never.notes[-1]


# --- the families ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "k", "eps"),
    [
        # add-remove only: Theorem 5.1 (Bun et al.), K = n₍₁₎ + n_min = 8 + 2
        ({"epsilon": 1.0, "neighbours": "add-remove"}, 10, 1.0),
        # ε_R = ε (both): a swap replaces records, d = n₍₁₎ε = 8 (derivations §6.4)
        ({"epsilon": 1.0, "neighbours": "both"}, 8, 1.0),
        # ε_R = 1.5 between ε and 2ε: d = n₍₁₎ε + n_min(ε_R − ε) = 8 + 2·0.5 = 9
        ({"epsilon": 1.0, "neighbours": "add-remove", "epsilon_replace_one": 1.5}, 9, 1.0),
    ],
)
def test_cluster_lower_bound_is_the_swap_witness(mechanism, k, eps) -> None:
    """Clusters [3, 5, 8, 2, 7], ℓ = 2: the lower bound is B(2/5, K, ε) with the swap's
    loss d = Kε: Theorem 5.1 under add-remove, the replacing swap of docs/derivations.md
    §6.4 when M's replace-one ε_R is below 2ε (at or above A(2/5, ε), the single
    inclusion witness)."""
    d = _design(
        mechanism, {"scheme": "cluster", "clusters": {"sizes": [3, 5, 8, 2, 7]}, "chosen": 2}
    )
    r = engine.bound(d)
    exact = max(_b(0.4, k, eps), _a(0.4, 1.0))
    assert r.lower <= exact
    assert r.lower == pytest.approx(exact, rel=1e-14)
    assert r.upper >= r.lower


def test_cluster_delta_prime_is_the_derived_formula() -> None:
    """Clusters [1, 1, 1], ℓ = 1, ε = 1, δ = 0.05: δ′ = Aδ/(A + (1 − A)e^{−Kε}) with
    A = 1/3, K = 2; the exact LP of docs/cluster.md gives 0.0393493 (tight)."""
    d = _design(
        {"epsilon": 1.0, "delta": 0.05, "neighbours": "add-remove"},
        {"scheme": "cluster", "clusters": {"sizes": [1, 1, 1]}, "chosen": 1},
    )
    with mp.workdps(50):
        a = mp.mpf(1) / 3
        exact = float(a * mp.mpf("0.05") / (a + (1 - a) * mp.exp(-2)))
    r = engine.bound(d)
    assert exact == pytest.approx(0.0393493, abs=5e-8)
    assert r.delta_prime >= exact
    assert r.delta_prime == pytest.approx(exact, rel=1e-14)


@pytest.mark.parametrize(
    ("mechanism", "witness_eps"),
    [
        ({"epsilon": 1.0, "neighbours": "replace-one"}, 1.0),  # ε_D unknown: at ε_R
        ({"epsilon": 1.0, "neighbours": "add-remove"}, 1.0),  # min(ε, 2ε)
        ({"epsilon": 1.0, "neighbours": "add-remove", "epsilon_replace_one": 0.5}, 0.5),
    ],
)
def test_pps_cluster_witness_runs_at_the_epsilon_every_relation_allows(
    mechanism, witness_eps
) -> None:
    """One of [400, 250, 200, 100, 50] by PPS: A(0.4, ε) (Bun et al., §6.2, Proposition 6.1) with
    the single-inclusion witness at min(ε_D, ε_R)."""
    d = _design(
        mechanism, {"scheme": "pps-cluster", "clusters": {"sizes": [400, 250, 200, 100, 50]}}
    )
    r = engine.bound(d)
    exact = _a(0.4, witness_eps)
    assert r.upper is None
    assert r.lower <= exact
    assert r.lower == pytest.approx(exact, rel=1e-14)


def test_random_size_point_mass_needs_no_add_remove_epsilon() -> None:
    """A point mass at m = 30 of N = 100 is a srswor: A(0.3, ε_R) both ways
    (Bun et al., Theorems 2.2 and 3.1), also for M declared under
    replace-one only (its add-remove ε enters as +∞, which a point mass ignores)."""
    size = {"distribution": "point", "value": 30}
    d = _design(
        {"epsilon": 1.0, "neighbours": "replace-one"},
        {"scheme": "random-size", "population": 100, "size": size},
    )
    r = engine.bound(d)
    exact = _a(0.3, 1.0)
    assert r.lower <= exact <= r.upper
    assert r.upper == pytest.approx(exact, rel=1e-14)
    assert r.details["tilted_mean_size"] == 30.0
    other = _design(
        {"epsilon": 1.0, "neighbours": "replace-one"},
        {
            "scheme": "random-size",
            "population": 100,
            "size": {"distribution": "binomial", "p": 0.3},
        },
    )
    assert "footnote 1" in str(engine.bound(other).error)
