"""PPS, PPS-cluster and the general lower bounds (000_97a39a4c524f603f.txt §6; spec §7)."""

from __future__ import annotations

import math

import numpy as np
import oracle_cluster as oc
import pytest
from conftest import run_ampcalc

from ampcalc import engine
from ampcalc.design import load_designs
from ampcalc.schemes._cluster_kernels import capped_inclusion


def bound(sampling: str, neighbours: str = "both", eps: float = 1.0):
    text = (
        f"name: t\nmechanism: {{epsilon: {eps}, neighbours: {neighbours}}}\nsampling:\n{sampling}"
    )
    (d,) = load_designs(text)
    return engine.bound(d)


SIZES = "[" + ", ".join(["1"] * 90 + ["50"] * 10) + "]"


def test_capping_spec_example():
    """spec §7.2 [VERIFIED]: sizes 90×1 + 10×50, ε = 1: m = 10 -> a_max 0.847458,
    LB 0.898604 (SRS 0.158565); m = 20 -> a_max = 1 (capped), LB = 1.0."""
    r = bound(f"  scheme: pps\n  size_measures: {SIZES}\n  sample: 10\n")
    assert r.details["max_inclusion_probability"] == pytest.approx(0.847458, abs=5e-7)
    assert r.lower == pytest.approx(0.898604, abs=5e-7)
    assert r.upper is None and r.verdict == "no-guarantee"
    r = bound(f"  scheme: pps\n  size_measures: {SIZES}\n  sample: 20\n")
    assert r.details["max_inclusion_probability"] == 1.0
    assert r.details["certainty_units"] == 10
    assert r.lower == pytest.approx(1.0, abs=1e-14)


def test_capping_sums_to_m():
    rng = np.random.default_rng(5)
    r = rng.pareto(1.2, 1000) + 0.01
    for m in (5, 50, 300):
        a, c = capped_inclusion(r, m)
        assert a.sum() == pytest.approx(m, rel=1e-12)
        assert np.all((a > 0) & (a <= 1))
        assert c == int(np.count_nonzero(a == 1.0))
        # the non-certainty units stay proportional to size
        free = a < 1
        ratio = a[free] / r[free]
        assert np.ptp(ratio) <= 1e-12 * ratio.max()


def test_inclusion_probabilities_direct():
    r = bound("  scheme: pps\n  inclusion_probabilities: [0.1, 0.5, 0.2]\n")
    assert r.lower == pytest.approx(float(oc.amplification(0.5, 1.0)), rel=1e-14)


def test_poisson_threshold():
    """With a public cap R: upper = lower = A(min(1, τR), ε); without: ε (and said so)."""
    base = "  scheme: pps\n  method: poisson-threshold\n  threshold: 0.001\n"
    r = bound(base + "  max_size_measure: 100\n  size_measures: [5, 20]\n", "add-remove")
    want = float(oc.amplification(0.1, 1.0))
    assert r.lower <= want <= r.upper and r.upper == pytest.approx(want, rel=1e-14)
    assert r.details["max_inclusion_probability_present"] == pytest.approx(0.02)
    r = bound(base + "  size_measures: [5, 20]\n", "add-remove")
    assert r.upper == pytest.approx(1.0) and r.lower == pytest.approx(1.0)
    assert r.verdict == "no-amplification"
    assert any("no public `max_size_measure`" in w for w in r.warnings)


def test_pps_cluster():
    """spec §7.3: A(max |C_i|/n, ε)."""
    r = bound("  scheme: pps-cluster\n  clusters: {sizes: [400, 250, 200, 100, 50]}\n")
    assert r.lower == pytest.approx(float(oc.amplification(0.4, 1.0)), rel=1e-14)
    assert r.upper is None and r.verdict == "no-guarantee"


def test_proposition_6_1_spec_vector():
    """spec §7.1 [VERIFIED]: a = a′ = 0.5, p = e/(1+e), p′ = q = q′ = 1/(1+e), ε = 1:
    (4) 0.306853 = ε + ln a; (5) 0.620115."""
    e = math.e
    p, o = e / (1 + e), 1 / (1 + e)
    r = bound(
        "  scheme: general-lower-bound\n  result: proposition-6.1\n  a: 0.5\n  a_prime: 0.5\n"
        f"  p: {p!r}\n  p_prime: {o!r}\n  q: {o!r}\n  q_prime: {o!r}\n"
    )
    assert r.details["bound_4"] == pytest.approx(0.306853, abs=5e-7)
    assert r.details["identity_5"] == pytest.approx(0.620115, abs=5e-7)
    assert r.lower == pytest.approx(0.620115, abs=5e-7) and r.upper is None


@pytest.mark.parametrize(("te", "want"), [(0, 0.15857), (2, 0.57363), (5, 0.96319), (20, 1.0)])
def test_theorem_5_3_spec_vectors(te, want):
    """spec §6.2 [VERIFIED]: ε″ = 1, A = 0.1, ε′ ∈ {0, 2, 5, 20} -> {0.15857, 0.57363,
    0.96319, 1.00000}."""
    r = bound(
        f"  scheme: general-lower-bound\n  result: theorem-5.3\n  fraction: 0.1\n"
        f"  test_epsilon: {te}\n  reading: proof\n  conditional_epsilon: 1\n",
        "add-remove",
    )
    assert r.lower == pytest.approx(want, abs=5e-6)
    assert r.lower <= 1.0


def test_bad_input(tmp_path):
    f = tmp_path / "d.yaml"
    head = "name: t\nmechanism: {epsilon: 1, neighbours: both}\nsampling:\n"
    f.write_text(head + "  scheme: pps\n  size_measures: [1, -2, 3]\n  sample: 1\n")
    assert "item 1: expected a finite number >= 0" in run_ampcalc("bound", str(f), expect=2).stderr
    f.write_text(head + "  scheme: pps\n  size_measures: [1, 2, 3]\n")
    assert "needs `sample`" in run_ampcalc("bound", str(f), expect=2).stderr
    f.write_text(head + "  scheme: pps\n  inclusion_probabilities: [0.5, 1.5]\n")
    assert "exceeds 1" in run_ampcalc("bound", str(f), expect=2).stderr
    f.write_text(head + "  scheme: general-lower-bound\n  result: theorem-5.3\n  fraction: 0.1\n")
    assert "needs `test_epsilon`" in run_ampcalc("bound", str(f), expect=2).stderr
    f.write_text(head + "  scheme: pps-cluster\n  clusters: {sizes: [3, 4]}\n  chosen: 2\n")
    assert "expected 1 <= chosen < k = 2" in run_ampcalc("bound", str(f), expect=2).stderr


def _mixture_log_ratio(sizes, i, eps, z):
    """Independent mpmath evaluation of the spec §7.3 witness at the points z."""
    import mpmath as mp

    n = sum(sizes)
    others = [s for j, s in enumerate(sizes) if j != i]
    out = []
    for zz in z:
        zz = mp.mpf(zz)
        fp = sizes[i] / mp.mpf(n) * mp.exp(-eps * abs(zz - sizes[i]))
        fq = (sizes[i] + 1) / mp.mpf(n + 1) * mp.exp(-eps * abs(zz - sizes[i] - 1))
        for s in others:
            fp += s / mp.mpf(n) * mp.exp(-eps * abs(zz + s))
            fq += s / mp.mpf(n + 1) * mp.exp(-eps * abs(zz + s))
        out.append(abs(float(mp.log(fp / fq))))
    return max(out)


@pytest.mark.parametrize(("sizes", "eps"), [([4, 3, 2, 1], 0.7), ([10, 10, 5], 1.0)])
def test_pps_cluster_laplace_witness_against_grid(sizes, eps):
    """spec §7.3 optional witness: the knot/tail maximum equals a dense-grid maximum (the
    ratio is monotone between knots), for C_i the largest or smallest cluster."""
    from ampcalc.schemes.pps_cluster import laplace_witness

    got = laplace_witness(np.asarray(sizes), eps)
    grid = np.linspace(-max(sizes) - 3, max(sizes) + 4, 701)
    want = max(
        _mixture_log_ratio(sizes, sizes.index(max(sizes)), eps, grid),
        _mixture_log_ratio(sizes, sizes.index(min(sizes)), eps, grid),
    )
    assert got <= want + 1e-12
    assert got == pytest.approx(want, rel=1e-9)
    # the sampling weights depend on the data: the loss exceeds ε (no amplification)
    assert got > eps


def test_proposition_6_1_zero_probability_event():
    """p·a = 0: bound (4) is ln 0 (no bound, JSON null); (5) still holds."""
    r = bound(
        "  scheme: general-lower-bound\n  result: proposition-6.1\n  a: 0.5\n  a_prime: 0.5\n"
        "  p: 0\n  p_prime: 0.5\n  q: 0.5\n  q_prime: 0.5\n"
    )
    assert r.details["bound_4"] is None
    # rounded down: 8·2^-53 for the ratio's roundings and 8 ulps of the log
    exact = math.log(0.25 / 0.5)
    assert exact - 4e-15 <= r.details["identity_5"] <= exact
    assert r.lower == 0.0


def test_pps_add_remove_guarantee_refused(tmp_path):
    f = tmp_path / "d.yaml"
    f.write_text(
        "name: t\nmechanism: {epsilon: 1, neighbours: both}\nguarantee: add-remove\n"
        "sampling:\n  scheme: pps\n  inclusion_probabilities: [0.1, 0.5]\n"
    )
    res = run_ampcalc("bound", str(f), "--json", expect=2).json()["results"][0]
    assert res["epsilon_prime"]["lower"] is None
    assert "no add-remove result exists" in res["error"]
