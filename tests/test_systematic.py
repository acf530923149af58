"""Systematic sampling (Bun et al., §6.3; spec §7.4)."""

from __future__ import annotations

import dataclasses
import math

import oracle_cluster as oc
import pytest
from conftest import run_ampcalc

from ampcalc import engine, schemes
from ampcalc.designs.document import load_designs
from ampcalc.model.design import Neighbours
from ampcalc.schemes import exact as verify

REPLACE_ONE, ADD_REMOVE = Neighbours.REPLACE_ONE, Neighbours.ADD_REMOVE


def run(order: str, n: int = 10000, key: str = "interval: 50", eps: float = 1.0):
    text = (
        f"name: t\nmechanism: {{epsilon: {eps}, neighbours: both}}\nsampling:\n"
        f"  scheme: systematic\n  population: {n}\n  {key}\n  order: {order}\n"
    )
    (d,) = load_designs(text)
    return engine.bound(d)


def test_random_order_divides_is_srswor():
    """k | N: identical to SRSWOR of N/k (000 §6.3): A(200/10000, 1) by mpmath."""
    r = run("random")
    want = float(oc.amplification(0.02, 1.0))
    assert r.lower <= want <= r.upper
    assert r.upper == pytest.approx(want, rel=1e-14)
    assert any("exactly a simple random sample" in n for n in r.notes)


def test_random_order_not_dividing_uses_ceiling():
    """N = 10001, k = 50: sizes 200 or 201; tight bound A(201/10001, ε)."""
    r = run("random", n=10001)
    assert r.upper == pytest.approx(float(oc.amplification(201 / 10001, 1.0)), rel=1e-14)
    assert r.details["sample_sizes"] == [200, 201]


def test_sample_key():
    r = run("random", key="sample: 200")
    assert r.details["interval"] == 50


def test_fixed_order_no_guarantee():
    """Fixed order: no upper bound; the start-class witness (mpmath oracle) gives the lower
    bound, here all but ε (before: A(1/50, 1) = 0.0338); heuristic only in details."""
    r = run("fixed")
    assert r.upper is None and r.delta_prime is None
    want = oc.systematic_fixed(10000, 50, 1.0, 1.0)
    assert r.lower <= want and r.lower == pytest.approx(float(want), rel=1e-14)
    assert r.verdict == "no-amplification"
    assert r.details["witness_class_size"] == 200
    assert r.details["heuristic_cluster_analogy"] == pytest.approx(
        float(oc.ratio(1 / 50, 400, 1.0)), rel=1e-12
    )
    assert "NOT a bound" in r.details["heuristic_note"]


def fixed_design(n: int, k: int, eps: float, nb: str, delta: float = 0.0, order: str = "fixed"):
    (d,) = load_designs(
        {
            "mechanism": {"epsilon": eps, "delta": delta, "neighbours": nb},
            "sampling": {"scheme": "systematic", "population": n, "interval": k, "order": order},
        }
    )
    return d


FIXED_CASES = [
    (4, 3, "replace-one", 1.0),  # issue 15: lower was A(1/3, 1) = 0.4502, exact 1
    (4, 3, "both", 1.0),
    (4, 3, "add-remove", 1.0),
    (7, 3, "both", 0.3),
    (7, 3, "add-remove", 2.5),
    (6, 3, "replace-one", 1.0),
    (6, 4, "both", 2.5),
    (5, 2, "add-remove", 0.3),
]


@pytest.mark.parametrize(("n", "k", "nb", "eps"), FIXED_CASES)
def test_fixed_order_lower_is_the_exact_worst_case(n, k, nb, eps):
    """Fixed, known order (replace-one keeping positions): the start-class witness equals
    the exact LP of `ampcalc verify` (every ε-DP binary mechanism on the sample domain)
    and the 50-digit class-by-class oracle; it is never below A(1/k, ε_R)."""
    d = fixed_design(n, k, eps, nb)
    r = engine.bound(d)
    plan = schemes.get("systematic").verify_plan(d.params, d.mechanism, "default", 20000)
    exact = verify.run(plan, limit=20000).epsilon_prime
    e_r = 2 * eps if nb == "add-remove" else eps
    want = oc.systematic_fixed(n, k, e_r, None if nb == "replace-one" else eps)
    assert r.lower <= want and r.lower == pytest.approx(float(want), rel=1e-13)
    assert exact == pytest.approx(float(want), abs=1e-6)
    assert r.lower >= float(oc.amplification(1 / k, e_r)) * (1 - 1e-15)
    assert r.upper is None


def test_fixed_order_issue_case_reaches_epsilon():
    """N = 4, k = 3, replace-one, ε = 1: the start class of 2 records is the only one of
    its size, so M reads the size and the loss is ε (issue 15: lower was 0.45)."""
    r = engine.bound(fixed_design(4, 3, 1.0, "replace-one"))
    assert r.lower == pytest.approx(1.0, rel=1e-14) and r.lower <= 1.0
    assert r.verdict == "no-amplification"
    assert any("only class of 2 records" in w for w in r.warnings)


RANDOM_DELTA_CASES = [
    (5, 2, "both", 1.0, 0.05),  # issue 15: exact δ 0.025 at the printed ε′, δ′ was null
    (5, 2, "replace-one", 1.0, 0.05),
    (5, 2, "add-remove", 1.0, 0.05),
    (6, 3, "both", 1.0, 0.05),
    (7, 3, "both", 0.3, 0.05),
    (7, 3, "add-remove", 3.0, 0.05),
    (4, 3, "replace-one", 2.5, 0.2),
]


@pytest.mark.parametrize(("n", "k", "nb", "eps", "delta"), RANDOM_DELTA_CASES)
def test_random_order_delta_prime_holds_at_the_printed_epsilon(n, k, nb, eps, delta):
    """Random order, M (ε, δ)-DP: δ′ = δ_R/k with the printed ε′ (each record is sampled
    with probability exactly 1/k; the sizes average N/k). The exact hockey-stick divergence
    at the printed ε′, over every (ε, δ)-DP binary mechanism on the exact sample
    distribution (LP), is at most δ′, and equals it when δ_R = δ (publishing the sample
    with probability δ attains it)."""
    d = fixed_design(n, k, eps, nb, delta, order="random")
    r = engine.bound(d)
    d_r = min((1 + math.exp(eps)) * delta, 1.0) if nb == "add-remove" else delta
    assert r.delta_prime == pytest.approx(d_r / k, rel=1e-14) and r.delta_prime >= d_r / k
    mech = d.mechanism
    plan = schemes.get("systematic").verify_plan(
        d.params, dataclasses.replace(mech, delta=0.0), "default", 20000
    )
    h, _ = oc.hockey_stick(plan, r.upper, {REPLACE_ONE: d_r, ADD_REMOVE: delta})
    assert h <= r.delta_prime + 1e-9
    if nb != "add-remove":
        assert h == pytest.approx(delta / k, abs=1e-9)
    if n % k:  # not (⌈N/k⌉/N)δ_R: the mean size is N/k
        assert r.delta_prime < d_r * (-(-n // k)) / n
    assert r.verdict == "amplifies"


def test_random_order_delta_prime_inverts():
    """invert with a δ′ target: M's δ = k·δ′ (both) or k·δ′/(1 + e^ε) at the certified ε
    (add-remove, δ_R = (1 + e^ε)δ)."""
    for nb in ("both", "add-remove"):
        d = fixed_design(10000, 50, 1.0, nb, 1e-7, order="random")
        inv = engine.invert(d, 0.05, 1e-6)
        want = 50 * 1e-6 / (1 if nb == "both" else 1 + math.exp(inv.certified))
        assert inv.delta == pytest.approx(want, rel=1e-13) and inv.delta <= want


def test_bad_input(tmp_path):
    f = tmp_path / "d.yaml"
    f.write_text(
        "name: t\nmechanism: {epsilon: 1, neighbours: both}\nsampling:\n  scheme: systematic\n"
        "  population: 100\n  interval: 10\n  sample: 10\n  order: random\n"
    )
    out = run_ampcalc("bound", str(f), expect=2)
    assert "give exactly one of `interval` (k) or `sample`" in out.stderr
    f.write_text(f.read_text().replace("  sample: 10\n", "").replace("random", "shuffled"))
    out = run_ampcalc("bound", str(f), expect=2)
    assert "expected one of 'random', 'fixed'" in out.stderr


def test_fixed_order_class_counts():
    """The oracle's class counts: N mod k classes of ⌈N/k⌉, the rest of ⌊N/k⌋."""
    for n, k in ((4, 3), (7, 3), (10, 4), (12, 4), (13, 12)):
        sizes = oc.small_classes(n, k)
        assert sizes.count(-(-n // k)) == (n % k or k) and sum(sizes) == n
