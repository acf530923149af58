"""Two-stage cluster designs against the exact programme of ``ampcalc verify``.

A fixed number m per chosen cluster (``within: {scheme: srswor}``) and a Poisson second
stage (ampcalc derivations, §6): the exact worst case over every ε-DP mechanism (an LP
on the exact sample laws) lies in [lower, upper] on a seeded sweep of tiny designs, both
relations, and equals both bounds for equal clusters; the (ε, δ) form is checked by the
exact hockey-stick LP at the printed ε′.
"""

from __future__ import annotations

import dataclasses
import random

import mpmath as mp
import oracle_cluster as oc
import pytest

from ampcalc import api, engine, schemes
from ampcalc.designs.document import load_designs
from ampcalc.model.design import Neighbours


def verify(sizes, ell, within, eps, nb):
    s = {"scheme": "cluster", "clusters": {"sizes": sizes}, "chosen": ell, "within": within}
    d = api.load_design({"mechanism": {"epsilon": eps, "neighbours": nb}, "sampling": s})
    return api.verify_design(d, "default")


@pytest.mark.parametrize("nb", ["add-remove", "both"])
@pytest.mark.parametrize(
    ("sizes", "ell", "m"),
    [([3, 3, 3], 1, 1), ([3, 3, 3], 1, 2), ([4, 4], 1, 2), ([2, 2, 2], 1, 1), ([4, 4, 4], 1, 2)],
)
def test_srswor_within_equal_clusters_is_exact(sizes, ell, m, nb):
    r = verify(sizes, ell, {"scheme": "srswor", "sample": m}, 1.0, nb)
    assert r["status"] == "PASS", r
    lo, up = r["epsilon_prime"]["lower"], r["epsilon_prime"]["upper"]
    assert lo <= r["epsilon_prime_exact"] + 1e-9 and r["epsilon_prime_exact"] <= up + 1e-9
    assert up == pytest.approx(lo, rel=1e-12)  # the bounds meet, and the LP attains them


def test_srswor_within_closed_form_mpmath():
    """[3, 3, 3], ℓ = 1, m = 2, ε = 1, add-remove: removal from a cluster of 3 keeps x with
    a = 2/3; ε′ = log(1 + A·a(e^{2ε} − 1)/(A + (1 − A)e^{−(m−1)2ε})) = 1.4706505…, the
    exact programme's 1.470650517475007."""
    a_, a = mp.mpf(1) / 3, mp.mpf(2) / 3
    want = mp.log(1 + a_ * a * (mp.e**2 - 1) / (a_ + (1 - a_) * mp.exp(-2)))
    r = verify([3, 3, 3], 1, {"scheme": "srswor", "sample": 2}, 1.0, "add-remove")
    assert r["epsilon_prime"]["lower"] <= want <= r["epsilon_prime"]["upper"]
    assert float(want) == pytest.approx(r["epsilon_prime_exact"], abs=1e-9)


@pytest.mark.parametrize("nb", ["add-remove", "both"])
def test_poisson_within_equal_clusters_is_exact(nb):
    r = verify([2, 2, 2], 1, {"scheme": "poisson", "rate": 0.5}, 1.0, nb)
    assert r["status"] == "PASS", r
    if nb == "add-remove":  # the count witness meets the upper bound
        assert r["epsilon_prime_exact"] == pytest.approx(r["epsilon_prime"]["upper"], abs=1e-9)


def test_seeded_sweep_never_outside():
    rng = random.Random(20261128)
    seen = 0
    for _ in range(40):
        k = rng.randint(2, 3)
        sizes = [rng.randint(1, 3) for _ in range(k)]
        ell = rng.randint(1, k - 1)
        if rng.random() < 0.6:
            within = {"scheme": "srswor", "sample": rng.randint(1, 3)}
        else:
            within = {"scheme": "poisson", "rate": round(rng.uniform(0.1, 1.0), 2)}
        eps = round(rng.uniform(0.1, 2.0), 3)
        nb = rng.choice(["add-remove", "both"])
        r = verify(sizes, ell, within, eps, nb)
        if r["status"] == "INCONCLUSIVE":
            continue
        assert r["status"] == "PASS", (sizes, ell, within, eps, nb, r)
        seen += 1
    assert seen >= 30


@pytest.mark.parametrize(
    ("sizes", "ell", "m", "eps", "delta"),
    [([2, 2], 1, 1, 1.0, 0.05), ([3, 1], 1, 2, 0.7, 0.05), ([2, 2, 2], 1, 1, 1.0, 0.02)],
)
def test_srswor_within_delta_prime_holds(sizes, ell, m, eps, delta):
    text = (
        f"name: t\nmechanism: {{epsilon: {eps}, delta: {delta}, neighbours: add-remove}}\n"
        f"sampling:\n  scheme: cluster\n  clusters: {{sizes: {sizes}}}\n  chosen: {ell}\n"
        f"  within: {{scheme: srswor, sample: {m}}}\n"
    )
    (d,) = load_designs(text)
    res = engine.bound(d)
    plan = schemes.get("cluster").verify_plan(
        d.params, dataclasses.replace(d.mechanism, delta=0.0), "default", 20000
    )
    d_r = float(d.mechanism.delta_replace_one_of(eps))
    h, _ = oc.hockey_stick(
        plan, res.upper, {Neighbours.REPLACE_ONE: d_r, Neighbours.ADD_REMOVE: delta}
    )
    assert h <= res.delta_prime + 1e-9
    assert res.delta_prime < 1.0


def test_gaussian_goes_through_srswor_within():
    text = (
        "name: g\nmechanism: {gaussian: {sigma: 2.0, sensitivity: 1.0}, neighbours: add-remove}\n"
        "sampling:\n  scheme: cluster\n  clusters: {count: 100, size: 20}\n  chosen: 10\n"
        "  within: {scheme: srswor, sample: 2}\ntarget: {delta_prime: 1e-6}\n"
    )
    (d,) = load_designs(text)
    res = engine.bound(d)
    assert res.error is None if hasattr(res, "error") else True
    assert 0 < res.upper < 2.3 and res.delta_prime <= 1e-6


@pytest.mark.parametrize(
    ("sizes", "ell", "eps"),
    [([2, 2, 2], 1, 1.0), ([1, 1], 1, 0.7), ([3, 1, 2], 2, 0.5), ([1, 2, 3], 1, 0.3)],
)
def test_whole_clusters_under_both_relations_are_exact(sizes, ell, eps):
    """M ε-DP under both relations: a swap replaces records, d = n₍₁₎ε, and the count of
    x's cluster is a witness: both bounds are B(ℓ/k, n₍₁₎, ε) and the exact programme
    (pairs `all`) attains them, for unequal sizes too (ampcalc derivations, §6.4)."""
    s = {"scheme": "cluster", "clusters": {"sizes": sizes}, "chosen": ell}
    d = api.load_design({"mechanism": {"epsilon": eps, "neighbours": "both"}, "sampling": s})
    r = api.verify_design(d, "all")
    assert r["status"] == "PASS", r
    a = mp.mpf(ell) / len(sizes)
    want = mp.log1p(a * mp.expm1(eps) / (a + (1 - a) * mp.exp(-max(sizes) * mp.mpf(eps))))
    assert r["epsilon_prime"]["lower"] <= want <= r["epsilon_prime"]["upper"]
    assert float(want) == pytest.approx(r["epsilon_prime_exact"], abs=1e-9)
    assert r["epsilon_prime"]["upper"] == pytest.approx(float(want), rel=1e-13)


@pytest.mark.parametrize(("sizes", "ratio"), [([2, 2, 2], 0.5), ([3, 1, 2], 0.3), ([2, 2], 1.5)])
def test_whole_clusters_with_a_declared_replace_one_epsilon_stay_sound(sizes, ratio):
    s = {"scheme": "cluster", "clusters": {"sizes": sizes}, "chosen": 1}
    mech = {"epsilon": 1.0, "neighbours": "add-remove", "epsilon_replace_one": ratio}
    r = api.verify_design(api.load_design({"mechanism": mech, "sampling": s}), "all")
    assert r["status"] == "PASS", r
