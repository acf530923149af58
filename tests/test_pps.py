"""PPS, PPS-cluster and the general lower bounds (Bun et al., §6; spec §7)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import oracle_cluster as oc
import oracle_pps as op
import pytest
from conftest import run_ampcalc

from ampcalc import api, engine
from ampcalc.designs.document import load_designs
from ampcalc.schemes import pps
from ampcalc.schemes._cluster_kernels import capped_inclusion


def bound(sampling: str, neighbours: str = "both", eps: float = 1.0):
    text = (
        f"name: t\nmechanism: {{epsilon: {eps}, neighbours: {neighbours}}}\nsampling:\n{sampling}"
    )
    (d,) = load_designs(text)
    return engine.bound(d)


SIZES = "[" + ", ".join(["1"] * 90 + ["50"] * 10) + "]"


def test_capping_spec_example():
    """spec §7.2 [VERIFIED], a πps algorithm (`method: pips`): sizes 90×1 + 10×50, ε = 1:
    m = 10 -> a_max 0.847458, LB 0.898604 (SRS 0.158565); m = 20 -> a_max = 1 (capped),
    LB = 1.0."""
    r = bound(f"  scheme: pps\n  method: pips\n  size_measures: {SIZES}\n  sample: 10\n")
    assert r.details["max_inclusion_probability"] == pytest.approx(0.847458, abs=5e-7)
    assert r.lower == pytest.approx(0.898604, abs=5e-7)
    assert r.upper is None and r.verdict == "no-guarantee"
    r = bound(f"  scheme: pps\n  method: pips\n  size_measures: {SIZES}\n  sample: 20\n")
    assert r.details["max_inclusion_probability"] == 1.0
    assert r.details["certainty_units"] == 10
    assert r.lower == pytest.approx(1.0, abs=1e-14)


def test_unknown_algorithm_spec_example_is_the_srs_value():
    """V3: `method: pps` (algorithm unknown) on the spec §7.2 sizes: Σ a_i = m = 10 over
    100 records, so only A(0.1, 1) = 0.158565 is attained by every algorithm."""
    r = bound(f"  scheme: pps\n  size_measures: {SIZES}\n  sample: 10\n")
    want = float(oc.amplification(0.1, 1.0))
    assert want - 1e-14 <= r.lower <= want
    assert r.details["inclusion_basis"] == "fixed-size"
    assert r.details["pips_max_inclusion_probability"] == pytest.approx(0.847458, abs=5e-7)
    assert r.upper is None and r.verdict == "no-guarantee"


REPRO = "  size_measures: [1, 1, 1, 5, 10]\n  sample: 2\n"


def test_v3_repro_successive_and_unknown():
    """Issue V3: ε = 1 replace-one, sizes 1,1,1,5,10, m = 2. Before: lower 1.0
    (no-amplification) from πps a_i. Successive sampling: the largest record is drawn with
    probability 575/663 = 0.867270 (every ordered draw enumerated in rationals) and the
    exact worst case (replace-one LP, built apart from ampcalc.verify) is A(575/663, 1) =
    0.912369; the unknown algorithm gets A(2/5, 1) = 0.523137."""
    dist = op.successive([1, 1, 1, 5, 10], 2)
    a = op.inclusion(dist, 5)[4]
    assert a == Fraction(575, 663)
    exact = op.replace_one_lp(5, dist, 4, 1.0)
    assert exact == pytest.approx(0.912369, abs=5e-7)
    assert exact == pytest.approx(float(op.amplification(a, 1.0)), abs=1e-9)
    r = bound("  scheme: pps\n  method: successive\n" + REPRO, "replace-one")
    assert r.details["inclusion_basis"] == "successive"
    assert float(a) - 1e-14 <= r.details["max_inclusion_probability"] <= float(a)
    want = float(op.amplification(a, 1.0))
    assert want - 1e-14 <= r.lower <= want
    assert r.upper is None and r.verdict == "no-guarantee"
    r = bound("  scheme: pps\n" + REPRO, "replace-one")
    want = float(op.amplification(0.4, 1.0))
    assert want - 1e-14 <= r.lower <= want and r.verdict == "no-guarantee"
    r = bound("  scheme: pps\n  method: pips\n" + REPRO, "replace-one")
    assert r.lower == pytest.approx(1.0, abs=1e-14)  # πps: a certainty unit


def test_successive_inclusion_against_enumeration():
    """The recursion over drawn counts per size equals every-ordered-draw enumeration
    (never above it), on 40 random tiny designs; the largest size has the largest a_i."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        n = int(rng.integers(2, 7))
        r = [int(x) for x in rng.integers(0, 6, n)]
        r[0] = max(r[0], 1)
        m = int(rng.integers(1, sum(x > 0 for x in r) + 1))
        exact = op.inclusion(op.successive(r, m), n)
        assert max(exact) == exact[int(np.argmax(r))]
        for t in range(n):
            got, is_exact = pps.successive_inclusion(np.asarray(r, float), m, t)
            assert is_exact
            assert float(exact[t]) - 1e-13 <= got <= float(exact[t])


def test_successive_lower_bound_when_too_large(monkeypatch):
    """Above the recursion's state budget: 1 − Π_{k<m}(1 − r_t/(Σr − s_k)) is below the
    exact value and above the issue's 1 − (1 − r_t/Σr)^m; the exponential-race bound is
    below the exact value by at most 1/K."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(rng.integers(3, 7))
        r = [int(x) for x in rng.integers(1, 9, n)]
        m = int(rng.integers(2, n + 1))
        exact = op.inclusion(op.successive(r, m), n)
        t = int(np.argmax(r))
        others = np.delete(np.asarray(r, float), t)
        got = pps.successive_product_bound(others, float(r[t]), m)
        simple = 1 - (1 - r[t] / sum(r)) ** m
        assert simple - 1e-14 <= got <= float(exact[t])
        # the exponential-race integral on 1024 quantiles of T_t: within 1/1024 below
        if m < n:  # else every record is drawn (a_t = 1, no bound needed)
            race = pps.successive_race_bound(np.sort(others), float(r[t]), m)
            assert float(exact[t]) - 1 / 1024 - 1e-9 <= race <= float(exact[t])
    monkeypatch.setattr("ampcalc.schemes._pps_designs.SUCCESSIVE_EXACT_STATES", 1)
    monkeypatch.setattr("ampcalc.schemes._pps_designs.SUCCESSIVE_RACE_WORK", 0)
    r = bound("  scheme: pps\n  method: successive\n" + REPRO, "replace-one")
    assert r.details["inclusion_basis"] == "successive-lower-bound"
    # 1 − (1 − 10/18)(1 − 10/17) = 0.816993..., below the exact 575/663
    want = 1 - Fraction(8, 18) * Fraction(7, 17)
    assert float(want) - 1e-14 <= r.details["max_inclusion_probability"] <= float(want)


def test_sampford_and_systematic_distributions():
    """Sampford's p(s) formula equals the rejective procedure (every ordered sequence)
    and has inclusion probabilities a_i; systematic πps has them too."""
    a, _ = capped_inclusion(np.array([1.0, 2.0, 3.0, 4.0, 6.0]), 2)
    lib = pps.sampford_distribution(a, 2)
    ref = op.sampford_rejective([float(x) for x in a], 2)
    for s, v in ref.items():
        assert lib[tuple(int(i in s) for i in range(5))] == pytest.approx(float(v), abs=1e-15)
    inc = [sum(v for k, v in lib.items() if k[i]) for i in range(5)]
    assert inc == pytest.approx(list(a), abs=1e-15)
    probs = [0.25, 0.5, 0.75, 0.25, 0.25, 0.625]  # cut points on a 1/8 grid: exact
    lib = pps.systematic_pips_distribution(np.array(probs))
    ref = op.systematic_pips(probs, 800)
    assert {
        k: pytest.approx(float(ref[frozenset(i for i in range(6) if k[i])])) for k in lib
    } == lib
    inc = [sum(v for k, v in lib.items() if k[i]) for i in range(6)]
    assert inc == pytest.approx(probs, abs=1e-15)


@pytest.mark.parametrize("method", ["successive", "sampford"])
def test_equal_sizes_are_a_simple_random_sample(method):
    """Equal size measures under Sampford or successive sampling: a simple random sample,
    so the srswor bounds upper = lower = A(m/N, ε_R) (000 Theorem 2.2; exact LP value
    A(2/5, 1) = 0.523137 on the enumerated design); pps and pips keep the lower bound."""
    sizes = "  size_measures: [2, 2, 2, 2, 2]\n  sample: 2\n"
    r = bound(f"  scheme: pps\n  method: {method}\n" + sizes, "replace-one")
    want = float(op.amplification(0.4, 1.0))
    assert want - 1e-14 <= r.lower <= want <= r.upper <= want + 1e-14
    assert r.verdict == "amplifies" and r.details["simple_random_sample"] is True
    assert r.delta_prime == 0.0
    dist = (
        op.successive([2] * 5, 2)
        if method == "successive"
        else op.sampford_rejective([0.4] * 5, 2)
    )
    assert op.replace_one_lp(5, dist, 0, 1.0) == pytest.approx(want, abs=1e-9)
    for other in ("pps", "pips"):
        r = bound(f"  scheme: pps\n  method: {other}\n" + sizes, "replace-one")
        assert want - 1e-14 <= r.lower <= want and r.upper is None


def test_equal_sizes_delta_follows_srswor():
    """Equal sizes, successive, (ε, δ) mechanism: δ′ = (m/N)δ as for srswor."""
    r = bound(
        "  scheme: pps\n  method: successive\n  size_measures: [3, 3, 3, 3]\n  sample: 1\n",
        "replace-one",
    )
    text = (
        "name: t\nmechanism: {epsilon: 1, delta: 1.0e-4, neighbours: replace-one}\n"
        "sampling:\n  scheme: pps\n  method: successive\n  size_measures: [3, 3, 3, 3]\n"
        "  sample: 1\n"
    )
    (d,) = load_designs(text)
    r = engine.bound(d)
    assert r.upper is not None
    assert 2.5e-5 <= r.delta_prime <= 2.5e-5 * (1 + 1e-14)


@pytest.mark.parametrize(("extra", "worst"), [("  max_size_measure: 100\n", 0.1), ("", 1.0)])
def test_poisson_threshold_delta_prime(extra, worst):
    """V4: Poisson-threshold PPS with an (ε, δ) mechanism prints δ′ = a·δ (was null). At
    the printed ε′ the hockey-stick divergence of the reveal witness (publish x's
    presence with probability δ, else randomised response), both orders, is at most δ′
    and equals a·δ (mpmath, 50 digits): δ′ is tight."""
    eps, delta = 1.0, 1e-3
    text = (
        f"name: t\nmechanism: {{epsilon: {eps}, delta: {delta}, neighbours: add-remove}}\n"
        "sampling:\n  scheme: pps\n  method: poisson-threshold\n  threshold: 0.001\n" + extra
    )
    (d,) = load_designs(text)
    r = engine.bound(d)
    assert r.delta_prime is not None and r.upper is not None
    hs = op.poisson_reveal_hockey_stick(worst, eps, delta, r.upper)
    assert hs <= r.delta_prime
    assert float(hs) == pytest.approx(worst * delta, rel=1e-12)
    assert r.delta_prime == pytest.approx(worst * delta, rel=1e-14)
    assert any("δ′ = a·δ" in n for n in r.notes)
    inv = engine.invert(d, target=float(r.upper), target_delta=worst * delta / 2)
    assert delta / 2 * (1 - 1e-14) <= inv.to_dict()["delta"] <= delta / 2


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


# --- ampcalc verify per method ------------------------------------------------------


def verify_row(sampling: dict, eps: float = 1.0, neighbours: str = "replace-one", pairs="default"):
    d = api.load_design(
        {"mechanism": {"epsilon": eps, "neighbours": neighbours}, "sampling": sampling}
    )
    return api.verify_design(d, pairs)


def exact_of(r: dict) -> float:
    assert r["status"] == "PASS", r
    return r["epsilon_prime_exact"]


SUCC = {"scheme": "pps", "size_measures": [1, 1, 1, 5, 10], "sample": 2}


def test_verify_successive_repro_is_exact():
    """verify enumerates successive sampling: exact 0.912369 = A(575/663, 1) = the new
    lower bound (and the independent LP of oracle_pps); `method: pps` checks its lower
    bound A(0.4, 1) = 0.523137 against the same witness algorithm."""
    want = float(op.amplification(Fraction(575, 663), 1.0))
    for method in ("successive", "pps"):
        r = verify_row({**SUCC, "method": method})
        assert exact_of(r) == pytest.approx(want, abs=2e-7)
        assert "successive" in r["worst_pair"]
    r = verify_row({**SUCC, "method": "successive"})
    assert r["epsilon_prime"]["lower"] == pytest.approx(want, abs=1e-13)


def test_verify_sampford_and_systematic_pips():
    """Sizes 1, 2, 3, 4, 6, m = 2 (a = 0.125 … 0.75, no certainty unit), ε = 1.
    sampford: exact 0.827989 = A(0.75, 1), the lower bound (oracle: the rejective
    procedure enumerated, independent LP). pips enumerates systematic πps over the listed
    order: exact 0.827989 too on this order, above the lower bound never below it."""
    sizes = {"scheme": "pps", "size_measures": [1, 2, 3, 4, 6], "sample": 2}
    want = float(op.amplification(0.75, 1.0))
    a, _ = capped_inclusion(np.array([1.0, 2.0, 3.0, 4.0, 6.0]), 2)
    ref = op.replace_one_lp(5, op.sampford_rejective([float(x) for x in a], 2), 4, 1.0)
    assert ref == pytest.approx(want, abs=1e-9)
    r = verify_row({**sizes, "method": "sampford"})
    assert exact_of(r) == pytest.approx(ref, abs=2e-7)
    assert r["epsilon_prime"]["lower"] == pytest.approx(want, abs=1e-13)
    r = verify_row({**sizes, "method": "pips"})
    assert exact_of(r) >= want - 2e-7 and "systematic" in r["worst_pair"]


def test_verify_systematic_equal_sizes_exceeds_the_srs_value():
    """Equal sizes, N = 4, m = 2, ε = 1: systematic πps over the listed order takes {1, 3}
    or {2, 4}; its exact worst case 0.813666 (independent LP, oracle_pps) is far above
    the simple-random-sample value A(1/2, 1) = 0.620115, which is why `pips` keeps only
    the lower bound; Sampford with equal sizes is exactly A(1/2, 1)."""
    dist = op.systematic_pips([0.5] * 4, 8)
    ref = op.replace_one_lp(4, dist, 0, 1.0)
    assert ref == pytest.approx(0.8136663235, abs=1e-9)
    eq = {"scheme": "pps", "size_measures": [1, 1, 1, 1], "sample": 2}
    r = verify_row({**eq, "method": "pips"})
    assert exact_of(r) == pytest.approx(ref, abs=2e-7)
    assert r["epsilon_prime"]["upper"] is None
    r = verify_row({**eq, "method": "sampford"})
    srs = float(op.amplification(0.5, 1.0))
    assert exact_of(r) == pytest.approx(srs, abs=2e-7)
    assert r["epsilon_prime"]["upper"] == pytest.approx(srs, abs=1e-13)


@pytest.mark.parametrize("method", ["pps", "pips", "sampford", "successive"])
@pytest.mark.parametrize("neighbours", ["replace-one", "both", "add-remove"])
def test_verify_every_method_passes_with_all_pairs(method, neighbours):
    """--pairs all (size changes of x′ and two-value populations) on a tiny design:
    no bound is contradicted by the exact programme."""
    r = verify_row(
        {"scheme": "pps", "method": method, "size_measures": [1, 3, 2, 5], "sample": 2},
        0.7,
        neighbours,
        pairs="all",
    )
    assert r["status"] == "PASS", r


def test_verify_refuses_what_it_cannot_enumerate():
    r = verify_row({"scheme": "pps", "inclusion_probabilities": [0.1, 0.5]})
    assert r["status"] == "INCONCLUSIVE" and "depends on the PPS algorithm" in r["reason"]
    big = {"scheme": "pps", "method": "successive", "size_measures": [1] * 30, "sample": 10}
    r = verify_row(big)
    assert r["status"] == "INCONCLUSIVE" and "too large to verify" in r["reason"]


# --- pps-cluster with more than one draw --------------------------------------------


VILLAGES = "  clusters: {sizes: [400, 250, 200, 100, 50]}\n  chosen: 2\n"


def test_pps_cluster_two_draws_per_method():
    """ℓ = 2 of the villages: unknown algorithm A(2/5, 1); πps min(1, 2·400/1000) = 0.8;
    successive: the largest village is drawn with probability 0.698830 (every ordered
    draw in rationals)."""
    r = bound("  scheme: pps-cluster\n" + VILLAGES)
    want = float(op.amplification(0.4, 1.0))
    assert want - 1e-14 <= r.lower <= want and r.details["method"] == "pps"
    r = bound("  scheme: pps-cluster\n  method: pips\n" + VILLAGES)
    assert r.details["max_inclusion_probability"] == pytest.approx(0.8, abs=1e-15)
    a = op.inclusion(op.successive([400, 250, 200, 100, 50], 2), 5)[0]
    assert float(a) == pytest.approx(0.698830, abs=5e-7)
    r = bound("  scheme: pps-cluster\n  method: successive\n" + VILLAGES)
    assert float(a) - 1e-14 <= r.details["max_inclusion_probability"] <= float(a)
    want = float(op.amplification(a, 1.0))
    assert want - 1e-14 <= r.lower <= want and r.upper is None
    # one draw: |C_i|/n whatever the method
    one = "  clusters: {sizes: [400, 250, 200, 100, 50]}\n"
    for method in ("pps", "pips", "successive"):
        r = bound(f"  scheme: pps-cluster\n  method: {method}\n" + one)
        assert r.details["max_inclusion_probability"] == pytest.approx(0.4, abs=1e-15)


def test_method_input_errors(tmp_path):
    f = tmp_path / "d.yaml"
    head = "name: t\nmechanism: {epsilon: 1, neighbours: both}\nsampling:\n  scheme: pps\n"
    f.write_text(head + "  method: successive\n  inclusion_probabilities: [0.5, 0.5]\n")
    err = run_ampcalc("bound", str(f), expect=2).stderr
    assert "leave `method` at pps" in err
    f.write_text(head + "  method: sampford\n  size_measures: [1, 2, 3]\n  sample: 1.5\n")
    assert "draws a whole number of records" in run_ampcalc("bound", str(f), expect=2).stderr
    f.write_text(head + "  method: pips\n  size_measures: [1, 0, 0]\n  sample: 2\n")
    assert "records of positive size" in run_ampcalc("bound", str(f), expect=2).stderr


@pytest.mark.parametrize(
    "sampling",
    [
        *(
            f"  scheme: pps\n  method: {m}\n  size_measures: {s}\n  sample: 2\n"
            for m in ("pps", "pips", "sampford", "successive")
            for s in ("[1, 2, 3, 4]", "[2, 2, 2, 2]")
        ),
        "  scheme: pps\n  inclusion_probabilities: [0.1, 0.5]\n",
        "  scheme: pps\n  method: poisson-threshold\n  threshold: 0.1\n  max_size_measure: 4\n",
        "  scheme: pps-cluster\n  clusters: {sizes: [3, 1, 2]}\n  chosen: 2\n"
        "  method: successive\n",
    ],
)
def test_no_bare_epsilon_guarantee_with_delta(sampling):
    """V4 audit: with δ > 0 every printed upper bound carries a δ′ (or none is printed)."""
    neighbours = "add-remove" if "poisson-threshold" in sampling else "both"
    text = (
        f"name: t\nmechanism: {{epsilon: 1, delta: 1.0e-3, neighbours: {neighbours}}}\n"
        f"sampling:\n{sampling}"
    )
    (d,) = load_designs(text)
    r = engine.bound(d)
    assert r.upper is None or (r.delta_prime is not None and 0 < r.delta_prime <= 1e-3)


@pytest.mark.slow
def test_verify_random_tiny_pps_designs():
    """Seeded sweep: 60 random tiny designs over every fixed-size method and relation,
    --pairs all: the exact programme never contradicts a bound, and for successive and
    sampford the lower bound A(a_max, ε_R) is the exact value of the same-size pair."""
    rng = np.random.default_rng(2026)
    for _ in range(60):
        n = int(rng.integers(2, 6))
        sizes = [int(x) for x in rng.integers(1, 7, n)]
        method = str(rng.choice(["pps", "pips", "sampford", "successive"]))
        m = (
            int(rng.integers(1, n + 1))
            if method in ("sampford", "successive")
            else float(rng.choice([1, 1.5, 2, n - 0.5]))
        )
        neighbours = str(rng.choice(["replace-one", "both", "add-remove"]))
        eps = float(rng.choice([0.1, 0.5, 1.0, 2.0]))
        sampling = {"scheme": "pps", "method": method, "size_measures": sizes, "sample": m}
        r = verify_row(sampling, eps, neighbours, pairs="all")
        assert r["status"] in ("PASS", "INCONCLUSIVE"), r
        if r["status"] == "INCONCLUSIVE":
            assert "below what the programme resolves" in r["reason"], r
            continue
        if method in ("sampford", "successive") and neighbours == "replace-one":
            d = verify_row(sampling, eps, neighbours)
            assert d["epsilon_prime_exact"] == pytest.approx(
                d["epsilon_prime"]["lower"], abs=2e-7
            ), (sampling, d)
