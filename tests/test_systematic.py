"""Systematic sampling (000_97a39a4c524f603f.txt §6.3; spec §7.4)."""

from __future__ import annotations

import oracle_cluster as oc
import pytest
from conftest import run_ampcalc

from ampcalc import engine
from ampcalc.design import load_designs


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
    assert any("exactly a simple random sample" in w for w in r.warnings)


def test_random_order_not_dividing_uses_ceiling():
    """N = 10001, k = 50: sizes 200 or 201; tight bound A(201/10001, ε)."""
    r = run("random", n=10001)
    assert r.upper == pytest.approx(float(oc.amplification(201 / 10001, 1.0)), rel=1e-14)
    assert r.details["sample_sizes"] == [200, 201]


def test_sample_key():
    r = run("random", key="sample: 200")
    assert r.details["interval"] == 50


def test_fixed_order_no_guarantee():
    """Fixed order: no upper bound, lower A(1/k, ε), heuristic only in details."""
    r = run("fixed")
    assert r.upper is None and r.verdict == "no-guarantee"
    assert r.lower == pytest.approx(float(oc.amplification(1 / 50, 1.0)), rel=1e-14)
    assert r.details["heuristic_cluster_analogy"] == pytest.approx(
        float(oc.ratio(1 / 50, 400, 1.0)), rel=1e-12
    )
    assert "NOT a bound" in r.details["heuristic_note"]


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
