"""The exact replace-one value of Poisson sampling (docs/derivations.md §1.2).

ε′ = log((1 + q(e^ε − 1))/(1 + q(e^{ε − ε_R} − 1))), ε = M's add-remove ε, ε_R its
replace-one ε (at most 2ε): pinned against mpmath, against the exact programme of
``ampcalc verify``, and against the witness mechanism built by hand.
"""

from __future__ import annotations

import itertools

import mpmath as mp
import numpy as np
import pytest

import ampcalc
from ampcalc import engine
from ampcalc.schemes import poisson


def exact(q: float, eps: float, eps_r: float) -> mp.mpf:
    """The closed form in mpmath, as sums of non-negative terms (no cancellation)."""
    with mp.workdps(60):
        q_, e = mp.mpf(q), mp.mpf(eps)
        r = min(mp.mpf(eps_r), 2 * e)
        return mp.log((1 - q_) + q_ * mp.exp(e)) - mp.log((1 - q_) + q_ * mp.exp(e - r))


def design(q: float, eps: float, **mech: object) -> dict:
    return {
        "name": "t",
        "mechanism": {"epsilon": eps, "neighbours": "add-remove", **mech},
        "sampling": {"scheme": "poisson", "rate": q},
        "guarantee": "replace-one",
    }


def bounds(d: dict) -> tuple[float, float]:
    r = engine.bound(ampcalc.load_designs(d)[0])
    assert r.error is None, r.error
    return r.lower, r.upper


@pytest.mark.parametrize(
    ("d", "value", "before"),
    [
        # rate 0.2, ε = 2, ε_R = 2ε by default: [1.01308, 1.64643] before
        (design(0.2, 2.0), "1.013084", 1.64643),
        # a declared ε_R = 0.5: [0.122, 0.5] before
        (design(0.2, 2.0, epsilon_replace_one=0.5), "0.2947", 0.5),
        # the binomial example: a Poisson sample with rate 0.01, ε = 1, ε_R = 2
        (
            {
                "name": "t",
                "mechanism": {"epsilon": 1.0, "neighbours": "add-remove"},
                "sampling": {
                    "scheme": "random-size",
                    "population": 10**9,
                    "size": {"distribution": "binomial", "p": 0.01},
                },
            },
            "0.02337",
            0.157635,
        ),
    ],
)
def test_pinned_values_are_exact(d: dict, value: str, before: float) -> None:
    lo, up = bounds(d)
    m = d["mechanism"]
    q = d["sampling"].get("rate") or d["sampling"]["size"]["p"]
    e = m["epsilon"]
    x = exact(q, e, m.get("epsilon_replace_one", 2 * e))
    assert mp.mpf(lo) <= x <= mp.mpf(up)
    assert (up - lo) / float(x) < 1e-12
    assert mp.nstr(x, 10).startswith(value)
    assert up < before


@pytest.mark.parametrize("q", [1e-9, 0.01, 0.2, 0.7, 1.0])
@pytest.mark.parametrize("eps", [1e-12, 1e-6, 0.5, 2.0, 50.0, 700.0, 710.0])
@pytest.mark.parametrize("ratio", [0.0, 1e-9, 0.25, 1.0, 1.5, 2.0, 3.0])
def test_closed_form_against_mpmath(q: float, eps: float, ratio: float) -> None:
    e_r = ratio * eps
    lo, up = poisson.replace_one_exact(np.array([eps]), np.array([e_r]), rate=q)
    x = exact(q, eps, e_r)
    assert mp.mpf(lo[0]) <= x <= mp.mpf(up[0])
    if x > 0:
        assert float((mp.mpf(up[0]) - mp.mpf(lo[0])) / x) < 1e-12
    else:
        assert lo[0] == up[0] == 0.0


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_special_cases(eps: float) -> None:
    q = np.array([0.05, 0.3, 0.9])
    e = np.full(3, eps)
    # ε_R = ε: A(q, ε); ε_R = 2ε: A(q, ε) − log(1 − q(1 − e^{−ε})); ε_R = 0: 0
    a = np.log1p(q * np.expm1(eps))
    both = a - np.log1p(q * np.expm1(-eps))
    lo, up = poisson.replace_one_exact(e, e, rate=q)
    assert lo == pytest.approx(a, rel=1e-14) and up == pytest.approx(a, rel=1e-14)
    lo, up = poisson.replace_one_exact(e, 2 * e, rate=q)
    assert up == pytest.approx(both, rel=1e-14)
    # a declared ε_R above 2ε is capped: M's add-remove ε implies 2ε
    assert np.array_equal(poisson.replace_one_exact(e, 5 * e, rate=q)[1], up)
    assert np.all(poisson.replace_one_exact(e, 0 * e, rate=q)[1] == 0.0)


def test_below_the_earlier_bounds_and_above_their_witnesses() -> None:
    # the exact value never exceeds the three derived bounds and never falls below the
    # two earlier witnesses: no guarantee is weakened, no lower bound raised past truth
    rng = np.random.default_rng(7)
    q = rng.uniform(1e-4, 1.0, 400)
    e = rng.uniform(1e-3, 20.0, 400)
    r = e * rng.uniform(0.0, 2.0, 400)
    lo, up = poisson.replace_one_exact(e, r, rate=q)
    old_up = poisson.replace_one_candidates(e, r, rate=q)[0]
    assert np.all(up <= old_up * (1 + 1e-12))
    both = np.log1p(q * np.expm1(e)) - np.log1p(q * np.expm1(-e))
    one = np.log1p(q * np.expm1(np.minimum(e, r)))
    assert np.all(lo >= np.where(r >= 2 * e, both, one) * (1 - 1e-12))


def witness(eps: float, eps_r: float, p: float, n_x: int, n_other: int) -> mp.mpf:
    """Pr[output 1] of the witness: min(h, p·e^s), s = ε·#x + (ε − ε_R)·#other."""
    h = 1 / (1 + mp.exp(max(eps, eps_r)))
    return min(h, p * mp.exp(eps * n_x + (eps - eps_r) * n_other))


@pytest.mark.parametrize(("eps", "eps_r"), [(1.0, 0.3), (1.0, 1.0), (0.7, 1.4), (2.0, 3.1)])
def test_the_witness_is_private_and_attains_the_value(eps: float, eps_r: float) -> None:
    q, c = 0.35, 2  # D = C ∪ {x}, D′ = C ∪ {x′}, |C| = 2 others (x′ is an "other")
    with mp.workdps(40):
        e, er = mp.mpf(eps), mp.mpf(eps_r)
        p = 1 / (1 + mp.exp(max(e, er))) * mp.exp(-(abs(e) + abs(e - er)) * (c + 2))
        # every dataset of up to 4 records of two kinds (x or other): add-remove and
        # replace-one neighbours, both outputs, within e^ε and e^{ε_R}
        for n_x, n_o in itertools.product(range(5), range(5)):
            f = witness(e, er, p, n_x, n_o)
            nbrs = [((n_x + 1, n_o), e), ((n_x, n_o + 1), e)]
            if n_o:
                nbrs.append(((n_x + 1, n_o - 1), er))
            for (a, b), budget in nbrs:
                g = witness(e, er, p, a, b)
                for u, v in ((f, g), (1 - f, 1 - g)):
                    assert u <= mp.exp(budget) * v * (1 + mp.mpf(10) ** -30)
                    assert v <= mp.exp(budget) * u * (1 + mp.mpf(10) ** -30)
        # the event {1} on the Poisson samples of D and D′
        pr_d = pr_dp = mp.mpf(0)
        for k in range(c + 1):  # k of the c others kept
            w = mp.binomial(c, k) * mp.mpf(q) ** k * (1 - mp.mpf(q)) ** (c - k)
            pr_d += w * ((1 - q) * witness(e, er, p, 0, k) + q * witness(e, er, p, 1, k))
            pr_dp += w * ((1 - q) * witness(e, er, p, 0, k) + q * witness(e, er, p, 0, k + 1))
        assert mp.log(pr_d / pr_dp) == pytest.approx(exact(q, eps, eps_r), rel=1e-25)


def test_seeded_sweep_on_the_exact_programme() -> None:
    # the exact worst case over every ε_D-DP (add-remove), ε_R-DP (replace-one)
    # mechanism on a tiny population equals both bounds
    rng = np.random.default_rng(20261128)
    docs = []
    for i in range(6):
        q = float(np.round(rng.uniform(0.05, 0.95), 3))
        e = float(np.round(rng.uniform(0.1, 3.0), 3))
        mech: dict = {"epsilon": e}
        if i % 3 == 0:
            mech["neighbours"] = "both"
        elif i % 3 == 1:
            mech["neighbours"] = "add-remove"  # ε_R = 2ε
        else:
            mech.update(neighbours="add-remove", epsilon_replace_one=float(np.round(e * 0.7, 3)))
        docs.append({**design(q, e), "name": f"s{i}", "mechanism": mech})
    rows = ampcalc.verify({"designs": docs})
    for row, d in zip(rows, docs, strict=True):
        assert row["status"] == "PASS", row
        m = d["mechanism"]
        e = m["epsilon"]
        e_r = e if m["neighbours"] == "both" else m.get("epsilon_replace_one", 2 * e)
        x = float(exact(d["sampling"]["rate"], e, e_r))
        assert row["epsilon_prime_exact"] == pytest.approx(x, rel=1e-7)
        assert row["epsilon_prime"]["lower"] == pytest.approx(x, rel=1e-12)
        assert row["epsilon_prime"]["upper"] == pytest.approx(x, rel=1e-12)


def test_delta_keeps_the_derived_candidates_and_passes_the_exact_programme() -> None:
    # δ > 0: the exact pure-ε value is not claimed; the bounds bracket the programme
    d = design(0.3, 1.0, delta=1e-3)
    (row,) = ampcalc.verify(d)
    assert row["status"] == "PASS", row
    assert row["epsilon_prime"]["lower"] < row["epsilon_prime"]["upper"]


def test_different_rates_keep_the_uncoupled_bound() -> None:
    # stratified Poisson with different rates: the coins cannot be coupled, so the upper
    # bound stays min(2·A(q, ε), A(q, max(ε, ε_R))) with q the largest rate
    e, r = np.array([1.0]), np.array([2.0])
    up = poisson.upper_epsilon_replace_one(e, r, rate=0.4, coupled=False)
    a = np.log1p(0.4 * np.expm1(1.0))
    assert up[0] == pytest.approx(min(2 * a, np.log1p(0.4 * np.expm1(2.0))), rel=1e-14)
    assert up[0] > poisson.upper_epsilon_replace_one(e, r, rate=0.4)[0]
