"""The exact per-stratum loss of randomised rounding (stratified/rounding_exact.py), checked
against the exact programme of ``ampcalc verify`` on a seeded sweep of tiny designs and
against an independent linear programme over the whole grid of (x sampled, others
sampled) at moderate sizes."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest
from scipy.optimize import linprog

from ampcalc import api, engine, schemes
from ampcalc.api import load_designs
from ampcalc.model.design import Neighbours
from ampcalc.schemes import exact as V
from ampcalc.schemes.stratified import theorem_4_3
from ampcalc.schemes.stratified.rounding_exact import stratum_exact

TOL = 2e-7  # the exact programme's solver tolerance on ε′ (docs/verify.md)


def _design(rate: float, sizes: list[int], mech: dict, guarantee: str = "add-remove"):
    return load_designs(
        {
            "mechanism": mech,
            "guarantee": guarantee,
            "sampling": {
                "scheme": "stratified",
                "allocation": "proportional",
                "rate": rate,
                "strata": [{"name": f"s{i}", "size": n} for i, n in enumerate(sizes)],
            },
        }
    )[0]


def _case(rng: random.Random) -> tuple[float, list[int], dict]:
    while True:
        sizes = [rng.randint(1, 5) for _ in range(rng.choice([1, 1, 2]))]
        r = rng.choice([0.25, 0.34, 0.5, 0.6, 0.75, 0.9])
        # Theorem 7.2's condition r·N_h >= 1 (the design is refused below it); the
        # (N − 1, N) pair is checked even where r·(N − 1) < 1
        if all(r * n >= 1 for n in sizes) and sum(sizes) <= 7:
            break
    eps = rng.choice([0.3, 1.0, 2.0])
    kind = rng.choice(["add-remove", "both", "explicit"])
    mech: dict = {"epsilon": eps, "neighbours": "both" if kind == "both" else "add-remove"}
    if kind == "explicit":
        mech["epsilon_replace_one"] = round(rng.uniform(0.1, 2 * eps), 3)
    return r, sizes, mech


@pytest.mark.parametrize("seed", range(10))
def test_add_remove_equals_the_exact_programme(seed: int) -> None:
    rng = random.Random(20261128 + seed)
    r, sizes, mech = _case(rng)
    d = _design(r, sizes, mech)
    res = engine.bound(d)
    plan = schemes.get("stratified").verify_plan(d.params, d.mechanism, "default")
    out = V.run(plan)
    assert out.status is None and out.epsilon_prime is not None
    assert res.lower <= out.epsilon_prime + TOL
    assert res.upper >= out.epsilon_prime - TOL
    assert abs(res.upper - out.epsilon_prime) < TOL
    assert res.upper - res.lower < 1e-12 * max(1.0, res.upper)


@pytest.mark.parametrize("seed", range(4))
def test_replace_one_upper_holds_on_the_exact_programme(seed: int) -> None:
    rng = random.Random(7 + seed)
    r, sizes, mech = _case(rng)
    sizes = [max(2, n) for n in sizes][:2] if len(sizes) == 2 else [2, 3]
    d = _design(r, sizes, mech, "replace-one")
    res = engine.bound(d)
    plan = schemes.get("stratified").verify_plan(
        d.params, d.mechanism, "default", guarantee=d.guarantee
    )
    out = V.run(plan)
    assert out.status is None and out.epsilon_prime is not None
    assert res.lower <= out.epsilon_prime + TOL <= res.upper + 2 * TOL


def _grid_lp(rate: float, n: int, eps: float, eps_r: float, add: bool) -> float:
    """Independent: the linear programme over every node (b, j) of one stratum of n
    records against n + 1 (Charnes–Cooper form of the worst pure-ε event)."""

    def sizes(size: int) -> dict[int, float]:
        x = rate * size
        lo = math.floor(x)
        p = x - lo
        return {lo: 1 - p, lo + 1: p} if p > 0 else {lo: 1.0}

    idx = {(b, j): i for i, (b, j) in enumerate((b, j) for b in (0, 1) for j in range(n + 1))}
    mu = np.zeros(len(idx))
    mu1 = np.zeros(len(idx))
    for m, w in sizes(n).items():
        mu[idx[(0, m)]] += w
    for m, w in sizes(n + 1).items():
        if m <= n:
            mu1[idx[(0, m)]] += w * (1 - m / (n + 1))
        if m >= 1:
            mu1[idx[(1, m - 1)]] += w * m / (n + 1)
    rows = []
    for (b, j), i in idx.items():
        nbrs = [((b, j + 1), eps), ((b, j - 1), eps), ((1 - b, j), eps)]
        nbrs += [((0, j + 1), eps_r)] if b == 1 else [((1, j - 1), eps_r)]
        for key, e in nbrs:
            if key in idx:
                row = np.zeros(len(idx))
                row[i], row[idx[key]] = 1.0, -math.exp(e)
                rows.append(row)
    top, bottom = (mu1, mu) if add else (mu, mu1)
    sol = linprog(
        -top,
        A_ub=np.array(rows),
        b_ub=np.zeros(len(rows)),
        A_eq=bottom[None],
        b_eq=[1.0],
        bounds=(0, None),
        method="highs",
    )
    assert sol.status == 0
    return math.log(-sol.fun)


@pytest.mark.parametrize(
    ("rate", "n", "eps", "ratio"),
    [(0.1, 20, 0.5, 2.0), (0.27, 13, 1.0, 2.0), (0.27, 13, 1.0, 1.0), (0.05, 41, 2.0, 1.3)],
)
def test_matches_an_independent_grid_programme(rate, n, eps, ratio) -> None:
    res = stratum_exact(rate, float(n), eps, ratio * eps)
    want_add = max(_grid_lp(rate, m, eps, ratio * eps, True) for m in (n - 1, n))
    want_rem = max(_grid_lp(rate, m, eps, ratio * eps, False) for m in (n - 1, n))
    assert float(res["add"][1]) == pytest.approx(want_add, abs=1e-7)
    assert float(res["remove"][1]) == pytest.approx(want_rem, abs=1e-7)
    assert float(res["lower"]) <= float(res["upper"])


def test_business_survey_is_exact_and_inside_the_old_interval() -> None:
    d = load_designs("examples/designs/stratified-business-survey.yaml")[0]
    res = engine.bound(d)
    r = 0.00145
    assert res.lower == pytest.approx(0.00342268, abs=5e-9)
    assert res.upper - res.lower < 1e-10 * res.upper
    assert math.log1p(r * math.expm1(0.5)) < res.lower  # the old witness
    assert res.upper < float(theorem_4_3(2 * r, r, 0.5))  # Theorem 7.2
    rows = res.details["strata"]
    assert max(row["epsilon_prime"]["upper"] for row in rows) == res.upper
    assert all(
        row["epsilon_prime"]["lower"] <= row["epsilon_prime"]["upper"] <= res.upper for row in rows
    )


def test_vectorised_over_epsilon_and_large_epsilon() -> None:
    e = np.array([1e-9, 0.1, 1.0, 5.0, 30.0, 300.0])
    res = stratum_exact(0.02, 60.0, e, 2 * e)
    one = [float(stratum_exact(0.02, 60.0, x, 2 * x)["upper"]) for x in e]
    assert np.all(np.isfinite(res["upper"])) and np.all(res["lower"] <= res["upper"])
    assert list(res["upper"]) == one
    # at large ε a replacement of x for a sampled record dominates: A(r, 2ε) < 2ε + log r
    # up to the chance that the draw is a replacement at all (about 1 − r here)
    assert 600 + math.log(0.02) - 0.5 < res["upper"][-1] < 600 + math.log(0.02)


def test_outward_rounding_against_mpmath_on_a_seeded_sweep() -> None:
    # the same breakpoint maximisation in 60-digit arithmetic (oracle_stratified.rr_exact)
    # brackets the float evaluation, also where r·N is within rounding of a whole number
    import mpmath as mp
    import oracle_stratified as orc

    rng = np.random.default_rng(20261128)
    for _ in range(60):
        n = int(rng.integers(2, 10**7))
        r = float(1.0 / n if rng.uniform() < 0.3 else 10 ** rng.uniform(-6, -0.1))
        r = max(r, 1.0 / n)
        e = float(10 ** rng.uniform(-9, 2))
        er = float(e * rng.choice([1.0, 2.0, rng.uniform(0.1, 2.0)]))
        res = stratum_exact(r, float(n), e, er)
        want = orc.rr_exact(r, n, e, er)
        for key in ("add", "remove"):
            lo, hi = res[key]
            assert lo <= want[key] <= hi, (n, r, e, er, key)
            # accuracy: the two sides' terms can cancel (weights near frac(rN)) at tiny ε′
            assert float(hi - want[key]) <= 1e-7 * float(want[key]) + 1e-21
    assert mp.mp.dps >= 50


@pytest.mark.parametrize(
    ("guarantee", "lower_how"), [("add-remove", "root-finder"), ("replace-one", "closed-form")]
)
def test_invert_says_the_exact_bounds_are_bisected(guarantee: str, lower_how: str) -> None:
    # the exact bounds' inverses bisect between closed forms: invert says "root-finder",
    # not the "closed-form" of a stated formula (replace-one's impossible-above ε is the
    # witness's closed form); what is certified is checked against the bound as evaluated
    d = load_designs("examples/designs/stratified-business-survey.yaml")[0]
    d = dataclasses.replace(d, guarantee=Neighbours(guarantee))
    r = api.invert(d, 1.0)
    assert r.details["inverse"] == "root-finder"
    assert r.details["inverse_lower"] == lower_how
    assert float(engine.bound(d, r.certified).upper) <= 1.0
