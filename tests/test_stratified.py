"""Stratified sampling: Theorem 4.3/7.2 values and inverse, deterministic rounding,
stratified Poisson, fixed and Neyman allocation, replace-one rule, bad input."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import oracle_stratified as orc
import pytest
from conftest import run_ampcalc, run_main
from hypothesis import given
from hypothesis import strategies as st

from ampcalc import engine
from ampcalc.designs.document import load_designs
from ampcalc.model.references import derivation
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes import stratified as strat


def design(sampling: dict, mechanism: dict | None = None, **extra) -> object:
    doc = {
        "mechanism": mechanism or {"epsilon": 1.0, "neighbours": "add-remove"},
        "sampling": {"scheme": "stratified", **sampling},
        **extra,
    }
    return load_designs(doc)[0]


def one(rate: float, size: int = 10**6, **kw) -> object:
    return design({"rate": rate, "strata": [{"name": "s", "size": size}], **kw})


# spec §5.1 table of Theorem 4.3 values [VERIFIED], 000 Theorem 4.3
TABLE = {
    0.001: (0.000664, 0.005147, 0.019066),
    0.01: (0.006630, 0.050825, 0.182185),
    0.05: (0.032908, 0.240987, 0.771246),
    0.1: (0.065227, 0.453960, 1.317244),
    0.2: (0.128185, 0.818532, 2.091745),
    0.5: (0.304992, 1.620115, 3.433781),
}


@pytest.mark.parametrize("rate", sorted(TABLE))
def test_theorem_4_3_table(rate: float) -> None:
    d = one(rate)
    for eps, want in zip((0.1, 0.5, 1.0), TABLE[rate], strict=True):
        # the formula itself (kept for the notes and the inverse's bracket)
        thm = strat.theorem_4_3(2 * rate, rate, eps)
        assert float(thm) == pytest.approx(want, abs=5e-7)
        exact = orc.thm43(rate, eps)
        assert thm >= exact  # outward rounding
        assert float(thm) - float(exact) <= 1e-14 * float(exact)
        # the design's result is the exact per-stratum loss: below Theorem 7.2, above
        # the randomised-response witness A(r, ε)
        r = engine.bound(d, epsilon=eps)
        assert orc.amp(rate, eps) <= r.lower <= r.upper < exact


def test_exact_inverse_round_trip() -> None:
    worst = 0.0
    for r in (1e-4, 0.001, 0.01, 0.1, 0.5):
        for t in (1e-10, 1e-3, 0.1, 1.0, 5.0, 50.0, 650.0):
            e = float(strat.theorem_4_3_inverse(2 * r, r, t))
            back = orc.thm43(r, e)
            worst = max(worst, abs(float(back / t - 1)))
            assert abs(float(orc.thm43_inverse(r, t)) / e - 1) <= 1e-12
    assert worst <= 1e-12


def test_lambda_example_exact_not_shortcut() -> None:
    # spec §5.1: r = 0.01: target 1 -> 1.90591, target 0.1 -> 0.74390 (000 §7.3 says ε′/(6r))
    d = one(0.01)
    for t, want in ((1.0, 1.90591), (0.1, 0.74390)):
        inv = engine.invert(d, t)
        assert engine.bound(d, epsilon=inv.certified).upper <= t
        # Theorem 7.2's exact inverse (want) is below the exact bound's certified ε
        exact = float(orc.thm43_inverse(0.01, t))
        assert exact == pytest.approx(want, abs=5e-6)
        assert exact < inv.certified <= inv.impossible_above <= inv.certified * (1 + 1e-12)
        shortcut = inv.details["shortcut"]
        assert shortcut["epsilon"] == pytest.approx(t / 0.06)
        assert shortcut["relative_error"] > 0.4  # the shortcut is far off


def test_count_mechanism_sanity_check() -> None:
    # spec §5.1: M = |S| + Lap(1), r = 0.1, |P| = 14 vs |P′| = 15: true loss 0.0970 under
    # randomised rounding, 1.0 under round-to-nearest; Thm 4.3 1.3172, size-aware 1.2191.
    rand = orc.laplace_mixture_loss(orc.size_pmf(0.1, 14), orc.size_pmf(0.1, 15))
    assert float(rand) == pytest.approx(0.0970, abs=5e-5)
    near = orc.laplace_mixture_loss({1: mp.mpf(1)}, {2: mp.mpf(1)})  # ⌊1.4⌉ = 1, ⌊1.5⌉ = 2
    assert float(near) == pytest.approx(1.0, abs=1e-15)
    ub = engine.bound(one(0.1, size=15), epsilon=1.0)
    assert ub.upper <= 1.317244 and ub.upper >= rand  # below Theorem 4.3, above the count
    # the lower bound's witness: randomised response on "x is sampled"; x's inclusion
    # probability under randomised rounding of 1.5 is E[m′]/15 = r exactly
    incl = sum(w * k for k, w in orc.size_pmf(0.1, 15).items()) / 15
    e = mp.e
    witness = mp.log((incl * e / (1 + e) + (1 - incl) / (1 + e)) / (1 / (1 + e)))
    assert witness <= ub.lower <= ub.upper and float(witness) == pytest.approx(0.158565, abs=1e-6)
    aware = engine.bound(one(0.1, size=15, size_aware=True), epsilon=1.0)
    assert aware.upper == ub.upper  # the exact value does not depend on the form
    det = engine.bound(one(0.1, size=14, rounding="nearest"), epsilon=1.0)
    assert det.lower == 1.0 <= float(near) + 1e-12 and det.verdict == "no-amplification"
    assert det.upper >= float(near)
    assert det.details["randomized_rounding"]["upper"] == engine.bound(one(0.1, size=14)).upper


def test_poisson_lemma_3_3_vector() -> None:
    # spec §5.3 [VERIFIED]: ε = 1, r = (0.01, 0.1, 0.5) -> (0.017037, 0.158565, 0.620115)
    d = design(
        {
            "allocation": "poisson",
            "strata": [{"size": 100, "rate": r} for r in (0.01, 0.1, 0.5)],
        }
    )
    res = engine.bound(d)
    got = [s["epsilon_prime"]["upper"] for s in res.details["strata"]]
    assert got == pytest.approx([0.017037, 0.158565, 0.620115], abs=5e-7)
    assert res.upper == pytest.approx(0.620115, abs=5e-7) and res.lower <= res.upper
    inv = engine.invert(d, 0.5)
    per = [s["epsilon"]["certified"] for s in inv.details["strata"]]
    assert inv.certified == min(per)
    for r, e in zip((0.01, 0.1, 0.5), per, strict=True):
        assert orc.amp(r, e) <= 0.5


def test_replace_one_is_twice_the_max() -> None:
    # rates 0.5 and 0.01: a replacement inside the 0.5 stratum (witness of the poisson
    # module) exceeds the sum of the two largest per-stratum values, 2·max covers it
    strata = [{"size": 100, "rate": 0.5}, {"size": 100, "rate": 0.01}]
    d = design({"allocation": "poisson", "strata": strata}, guarantee="replace-one")
    res = engine.bound(d)
    a_hi, a_lo = orc.amp(0.5, 1.0), orc.amp(0.01, 1.0)
    assert res.lower > a_hi + a_lo
    assert res.upper == pytest.approx(float(2 * a_hi), rel=1e-13)
    assert res.upper >= res.lower
    # the poisson family's replace-one result, without the coupling (two rates)
    assert derivation("§1.2") in res.basis
    assert any("different inclusion probabilities" in n for n in res.notes)
    dr = design({"rate": 0.01, "strata": [{"size": 1000}, {"size": 500}]}, guarantee="replace-one")
    rr = engine.bound(dr)
    # a removal's and an addition's exact losses: below 2 × Theorem 7.2's 0.182185
    assert rr.lower <= rr.upper < 2 * 0.182185
    inv = engine.invert(dr, 1.0)
    assert engine.bound(dr, epsilon=inv.certified).upper <= 1.0
    # a replacement inside one stratum is one of the replacements the total covers
    assert inv.details["strata"][0]["epsilon"]["certified"] >= inv.certified
    # one stratum: a replacement keeps the size, r·N = 10 records: srswor, A(0.01, 2)
    d1 = design({"rate": 0.01, "strata": [{"size": 1000}]}, guarantee="replace-one")
    r1 = engine.bound(d1)
    want = math.log1p(0.01 * math.expm1(2.0))
    assert r1.lower <= want <= r1.upper and r1.upper - r1.lower < 1e-14
    inv1 = engine.invert(d1, 1.0)
    assert engine.bound(d1, epsilon=inv1.certified).upper <= 1.0
    assert inv1.certified == pytest.approx(math.log1p(math.expm1(1.0) / 0.01) / 2, rel=1e-14)


@pytest.mark.parametrize(
    ("n", "rate", "mech", "want"),
    [
        # r·N whole: a srswor of r·N (000 Theorem 2.2), exact
        (4, 0.5, "add-remove", math.log1p(0.5 * math.expm1(2.0))),
        # 0.34·3 = 1.02: 1 or 2 records; M ε-DP both ways: A(r, ε) (LP value)
        (3, 0.34, "both", math.log1p(0.34 * math.expm1(1.0))),
        # add-remove M: the e^{c·m}-weighted witness, c = ε − ε_R = −1 (LP value)
        (3, 0.34, "add-remove", 1.1459904565742314),
    ],
)
def test_randomized_one_stratum_replace_one_exact(n, rate, mech, want) -> None:
    d = design(
        {"rate": rate, "strata": [{"name": "a", "size": n}]},
        {"epsilon": 1.0, "neighbours": mech},
        guarantee="replace-one",
    )
    res = engine.bound(d)
    assert exact(d, "replace-one") == pytest.approx(want, abs=TOL)
    assert res.lower == pytest.approx(want, abs=1e-14) and res.lower <= want + 1e-15
    assert res.upper >= want  # A(⌈rN⌉/N, ε_R): exact when r·N is whole
    if (rate * n).is_integer():
        assert res.upper - res.lower < 1e-14


def test_neyman_paper_vectors() -> None:
    # 000 Appendix E.1 / spec §8.3: Δ∞ = 19, Δ₁ = 37; the vectors sum to 10,004 and 10,005
    p = [1261, 621, 517, 1969, 833, 1947, 1058, 762, 257, 248, 306, 225]
    q = [1259, 620, 516, 1965, 831, 1943, 1056, 761, 257, 247, 306, 244]
    both = {"epsilon": 0.1, "neighbours": "both"}
    d = design({"allocation": "neyman", "allocations": [p, q]}, both, guarantee="replace-one")
    res = engine.bound(d)
    assert res.details["allocation_sensitivity"] == {"linf": 19, "l1": 37}
    assert res.details["allocation_sums"] == [10004, 10005]
    assert res.details["lower_bounds"] == pytest.approx({"linf": 1.9, "l1": 3.7})
    assert res.upper is None and res.delta_prime is None
    assert res.lower == pytest.approx(1.9, rel=1e-14) and res.verdict == "degrades"
    # add-remove M (ε_R = 2ε): all 12 counts with Lap(1/ε) give 37ε under replace-one;
    # an add-remove guarantee gets half of it
    d2 = design({"allocation": "neyman", "allocations": [p, q]}, {"epsilon": 0.1})
    r2 = engine.bound(d2)
    assert r2.lower == pytest.approx(1.85, rel=1e-14) and r2.verdict == "degrades"
    inv = engine.invert(d2, 1.0)
    assert inv.certified is None and inv.impossible_above == pytest.approx(1 / 18.5)


def test_neyman_allocation_and_updates() -> None:
    size = np.array([100, 50, 10, 5])
    sd = np.array([1.0, 3.0, 30.0, 100.0])
    m = alloc.neyman(size, sd, 40)
    assert m.sum() == 40 and np.all(m <= size)
    assert m[3] == 5 and m[2] == 10  # capped strata take a census
    # the remaining 25 go 100:150 -> 10 and 15
    assert m.tolist() == [10, 15, 10, 5]
    rng = np.random.default_rng(1)
    x = rng.gamma(2.0, 3.0, size=40)
    st0 = alloc.StratumStats(40, float(x.mean()), float(x.std(ddof=1)))
    rem = alloc.remove_record(st0, float(x[0]))
    assert rem.mean == pytest.approx(x[1:].mean(), rel=1e-13)
    assert rem.sd == pytest.approx(x[1:].std(ddof=1), rel=1e-12)
    add = alloc.add_record(st0, 100.0)
    y = np.append(x, 100.0)
    assert add.mean == pytest.approx(y.mean(), rel=1e-13)
    assert add.sd == pytest.approx(y.std(ddof=1), rel=1e-12)


def test_neyman_computed_neighbour() -> None:
    strata = [
        {"name": "low", "size": 1000, "sd": 1.0, "mean": 2.0, "min_value": 1.0},
        {"name": "mid", "size": 300, "sd": 20.0},
        {"name": "top", "size": 100, "sd": 50.0, "mean": 700.0},
    ]
    d = design({"allocation": "neyman", "total_sample": 60, "value_bound": 1000, "strata": strata})
    res = engine.bound(d)
    m0, m1 = res.details["allocations"]
    assert sum(m0) == sum(m1) == 60
    n0 = alloc.neyman(np.array([1000, 300, 100]), np.array([1.0, 20.0, 50.0]), 60)
    assert m0 == n0.tolist()
    diff = np.abs(np.array(m1) - np.array(m0))
    assert res.details["allocation_sensitivity"] == {
        "linf": int(diff.max()),
        "l1": int(diff.sum()),
    }


def test_fixed_allocation() -> None:
    strata = [{"size": 1000, "sample": 10}, {"size": 100, "sample": 5}]
    both = {"epsilon": 1.0, "neighbours": "both"}
    d = design({"allocation": "fixed", "strata": strata}, both, guarantee="replace-one")
    res = engine.bound(d)
    assert res.upper == res.lower or res.upper >= res.lower
    assert res.upper == pytest.approx(float(orc.amp(0.05, 1.0)), rel=1e-14)
    assert any("across strata" in w for w in res.warnings)
    d2 = design({"allocation": "fixed", "strata": strata}, both)
    r2 = engine.bound(d2)
    assert r2.error and "guarantee: replace-one" in r2.error


def test_extreme_epsilon_no_overflow() -> None:
    d = one(0.01)
    for eps in (1e-12, 1e-6, 300.0, 349.0, 351.0, 800.0):
        r = engine.bound(d, epsilon=eps)
        assert math.isfinite(r.upper) and r.upper <= orc.thm43(0.01, eps) * (1 + 1e-12)
        assert orc.amp(0.01, eps) * (1 - 1e-12) <= r.lower <= r.upper
    inv = engine.invert(d, 900.0)
    assert math.isfinite(inv.certified)
    assert engine.bound(d, epsilon=inv.certified).upper <= 900.0


@given(
    r=st.floats(1e-6, 1.0),
    eps=st.floats(1e-9, 500.0),
    t=st.floats(1e-9, 500.0),
    aware=st.booleans(),
)
def test_properties(r: float, eps: float, t: float, aware: bool) -> None:
    n = 10**7
    a = r + 1 / n if aware else 2 * r
    u = strat.theorem_4_3(a, r, eps)
    assert strat.lower_epsilon(r, eps) <= u
    assert strat.theorem_4_3(a, r, eps * 1.01) >= u
    guess = strat.theorem_4_3_inverse(a, r, t)
    e = float(strat.numeric.certify_down(lambda x: strat.theorem_4_3(a, r, x), guess, t))
    assert strat.theorem_4_3(a, r, e) <= t
    assert e >= float(guess) * (1 - 1e-12)


def run_yaml(tmp_path, text: str, *args: str, expect: int = 0):
    f = tmp_path / "d.yaml"
    f.write_text(text)
    return run_ampcalc(*args, str(f), expect=expect)


HEAD = "mechanism: {epsilon: 1.0}\nsampling:\n  scheme: stratified\n"


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        (
            "  rate: 0.01\n  strata:\n    - {name: big, size: 1000}\n"
            "    - {name: tiny, size: 50}\n",
            ["Theorem 7.2", "'tiny'", "r·N_h = 0.01·50"],
        ),
        ("  strata: [{size: 10}]\n", ["d.yaml:4", "needs `rate`"]),
        ("  rate: 0.1\n  strata: [{size: 10, rate: 0.2}]\n", ["not both"]),
        (
            "  allocation: poisson\n  rounding: floor\n  rate: 0.1\n  strata: [{size: 10}]\n",
            ["`rounding` is for"],
        ),
        (
            "  allocation: fixed\n  strata:\n    - {size: 10, sample: 11}\n",
            ["d.yaml:6", "larger than the stratum size"],
        ),
        (
            "  allocation: fixed\n  strata:\n    - {size: 10, sampel: 1}\n",
            ["d.yaml:6", "did you mean 'sample'"],
        ),
        (
            "  allocation: neyman\n  total_sample: 5\n  value_bound: 10\n  strata:\n"
            "    - {size: 10, mean: 1, min_value: 0}\n",
            ["needs `sd`"],
        ),
        ("  allocation: neyman\n  allocations: [[1, 2], [3]]\n", ["equal"]),
        # an infinite or NaN count is no whole number (it was an internal error)
        ("  allocation: neyman\n  allocations: [[.inf, 1], [1, 1]]\n", ["whole numbers >= 0"]),
        ("  allocation: neyman\n  allocations: [[1, 1], [.nan, 1]]\n", ["whole numbers >= 0"]),
        ("  allocaton: neyman\n  strata: [{size: 3}]\n", ["did you mean 'allocation'"]),
    ],
)
def test_bad_input_exit_2(tmp_path, body: str, needles: list[str]) -> None:
    out = run_yaml(tmp_path, HEAD + body, "bound", expect=2)
    for n in needles:
        assert n in out.stderr, out.stderr


def test_condition_failures_exit_2(tmp_path) -> None:
    body = "  rate: 0.01\n  strata: [{size: 1000}]\n"
    rest = HEAD.split("\n", 1)[1]
    out = run_yaml(
        tmp_path, "mechanism: {epsilon: 1.0, delta: 1e-6}\n" + rest + body, "bound", expect=2
    )
    assert "pure ε-DP" in out.stderr
    out = run_yaml(
        tmp_path,
        "mechanism: {epsilon: 1.0, neighbours: replace-one}\n" + rest + body,
        "bound",
        expect=2,
    )
    assert "needs M's add-remove ε" in out.stderr


def test_csv_strata_and_errors(tmp_path) -> None:
    (tmp_path / "s.csv").write_text("name,size,rate\na,1000,0.01\nb,2000,0.02\n")
    f = tmp_path / "d.yaml"
    f.write_text(HEAD + "  strata: {file: s.csv}\n")
    res = run_ampcalc("bound", str(f), "--json").json()["results"][0]
    assert [s["rate"] for s in res["details"]["strata"]] == [0.01, 0.02]
    assert orc.amp(0.02, 1.0) <= res["epsilon_prime"]["upper"] < orc.thm43(0.02, 1.0)
    assert any("derived" in n for n in res["notes"])
    (tmp_path / "s.csv").write_text("name,sise\na,1000\n")
    out = run_ampcalc("bound", str(f), expect=2)
    assert "did you mean 'size'" in out.stderr and "d.yaml:4" in out.stderr
    (tmp_path / "s.csv").write_text("name,size,rate\na,1000,0.01\nb,x,0.01\n")
    out = run_ampcalc("bound", str(f), expect=2)
    assert "s.csv:3: column 'size'" in out.stderr and "'x'" in out.stderr


def test_table_has_stratum_rows(capsys) -> None:
    out = run_main(
        capsys, "bound", "examples/designs/stratified-business-survey.yaml", "--details"
    ).stdout
    assert "  └ 1-4 employees" in out and "  └ 5000+ employees" in out


def test_hundred_thousand_strata_every_stratum_evaluated(tmp_path) -> None:
    # the time it takes is a benchmark (benchmarks/bench_stratified.py), not a test
    k = 10**5
    rng = np.random.default_rng(0)
    sizes = rng.integers(200, 5000, size=k)
    lines = ["name,size,sd"] + [f"s{i},{n},{1 + i % 7}" for i, n in enumerate(sizes)]
    (tmp_path / "s.csv").write_text("\n".join(lines) + "\n")
    f = tmp_path / "d.yaml"
    f.write_text(HEAD + "  rate: 0.01\n  size_aware: true\n  strata: {file: s.csv}\n")
    d = load_designs(str(f))[0]
    res = engine.bound(d)
    inv = engine.invert(d, 1.0)
    assert len(res.details["strata"]) == k and len(inv.details["strata"]) == k
    n_min = int(sizes.min())
    assert orc.amp(0.01, 1.0) <= res.upper < orc.thm43(0.01, 1.0, n_min)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (
            "  rate: 0.1\n  rounding: floor\n  size_aware: true\n  strata: [{size: 100}]\n",
            "`size_aware` is for proportional allocation with randomized rounding",
        ),
        (
            "  rate: 0.1\n  allocations: [[1], [2]]\n  strata: [{size: 100}]\n",
            "`allocations` is for `allocation: neyman`",
        ),
        (
            "  allocation: neyman\n  total_sample: 500\n  value_bound: 10\n  strata:\n"
            "    - {size: 100, sd: 1, mean: 1, min_value: 0}\n    - {size: 100, sd: 2, mean: 5}\n",
            "exceeds the population 200",
        ),
        (
            "  allocation: neyman\n  total_sample: 5\n  value_bound: 10\n  strata:\n"
            "    - {size: 100, sd: 1, mean: 1, min_value: 20}\n"
            "    - {size: 100, sd: 2, mean: 5}\n",
            "outside [0, value_bound]",
        ),
        ("  allocation: neyman\n  strata: [{size: 100, sd: 1}]\n", "needs `total_sample`"),
        (
            "  allocation: fixed\n  rate: 0.1\n  strata: [{size: 100, sample: 1}]\n",
            "`rate` is for proportional or poisson",
        ),
        ("  rate: 0.1\n  strata: {file: nowhere.csv}\n", "cannot read strata file"),
        ("  rate: 0.1\n  strata: []\n", "at least one stratum"),
    ],
)
def test_more_bad_input(tmp_path, body: str, needle: str) -> None:
    out = run_yaml(tmp_path, HEAD + body, "bound", expect=2)
    assert needle in out.stderr, out.stderr


def test_fixed_without_replace_one_guarantee_exit_2(tmp_path) -> None:
    body = "  allocation: fixed\n  strata: [{size: 100, sample: 5}]\n"
    out = run_yaml(tmp_path, HEAD + body, "bound", expect=2)
    assert "Set `guarantee: replace-one`" in out.stderr


SAMPLINGS = [
    {"rate": 0.02, "strata": [{"size": 60}, {"size": 5000}]},
    {"rate": 0.02, "size_aware": True, "strata": [{"size": 60}, {"size": 5000}]},
    {"rate": 0.02, "rounding": "floor", "strata": [{"size": 60}, {"size": 5000}]},
    {"allocation": "poisson", "strata": [{"size": 60, "rate": 0.3}, {"size": 9, "rate": 0.01}]},
]


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("guarantee", ["add-remove", "replace-one"])
@given(eps=st.floats(1e-6, 300.0), t=st.floats(1e-4, 50.0))
def test_engine_properties(sampling: dict, guarantee: str, eps: float, t: float) -> None:
    d = design(sampling, guarantee=guarantee)
    grid = np.array([eps, eps * 1.5])
    r = engine.bound(d, epsilon=grid)
    assert np.all(r.lower <= r.upper) and np.all(np.diff(r.upper) >= 0)
    inv = engine.invert(d, t)
    if inv.certified is not None:
        assert engine.bound(d, epsilon=inv.certified).upper <= t
    if inv.impossible_above is not None:
        assert engine.bound(d, epsilon=inv.impossible_above).lower >= t


# --------------------------------------------------------------------------------------
# Deterministic rounding and fixed allocation at the stated sizes, against the exact
# programme of ampcalc.verify (every ε-DP mechanism with binary output, tiny designs)
# --------------------------------------------------------------------------------------


def exact(d, guarantee: str) -> float:
    """ε′_exact of a tiny design from the stratified verify hook and the exact LP."""
    from ampcalc.model.design import Neighbours
    from ampcalc.schemes import exact as V

    plan = strat._verify_hook(d.params, d.mechanism, "default", 20000, Neighbours(guarantee))
    out = V.run(plan, limit=20000)
    assert out.status is None
    return float(out.epsilon_prime)


def det(sizes, rate: float, rounding: str, mech: dict | None = None, guarantee="add-remove"):
    strata = [{"name": f"s{i}", "size": n} for i, n in enumerate(sizes)]
    return design(
        {"rate": rate, "rounding": rounding, "strata": strata}, mech, guarantee=guarantee
    )


TOL = 2e-7  # the programme's tolerance on ε′ (ampcalc.verify.SOLVER_TOL, both directions)


def test_v1_one_stratum_replace_one_is_a_simple_random_sample() -> None:
    # issue 15 V1: N = 10, r = 0.1, nearest, add-remove ε = 1 (ε_R = 2): a replacement
    # keeps ⌊rN⌉ = 1, so the design is srswor of 1 of 10: A(0.1, 2) (000 Theorem 2.2)
    d = det([10], 0.1, "nearest", guarantee="replace-one")
    res = engine.bound(d)
    want = math.log1p(0.1 * math.expm1(2.0))
    assert want == pytest.approx(0.4940287080441784, abs=1e-15)
    assert res.lower <= want <= res.upper and res.upper - res.lower < 2e-15
    assert exact(d, "replace-one") == pytest.approx(want, abs=TOL)
    assert res.verdict == "amplifies"  # was lower 2.0, no-amplification
    assert res.details["allocation_sensitivity"] == {"linf": 0, "l1": 0}  # was l1 = 2
    w = res.details["witness"]
    assert w["relation"] == "replace-one"
    assert w["strata"] == [{"name": "s0", "size": [10, 10], "sample": [1, 1]}]
    # the same design with M replace-one only needs no add-remove ε
    d2 = det([10], 0.1, "nearest", {"epsilon": 2.0, "neighbours": "replace-one"}, "replace-one")
    r2 = engine.bound(d2)
    assert r2.error is None and r2.lower == pytest.approx(want, abs=1e-14)
    inv = engine.invert(d, 0.3)
    assert engine.bound(d, epsilon=inv.certified).upper <= 0.3
    assert engine.bound(d, epsilon=inv.impossible_above).lower >= 0.3


def test_s1_floor_nothing_sampled_is_not_no_amplification() -> None:
    # issue 15 S1: floor, N = 4, r = 0.0519: m = ⌊0.2076⌋ = 0, and 0 at N = 3 and 5 too
    d = det([4], 0.0519, "floor")
    res = engine.bound(d)
    assert res.lower == 0.0 and res.upper == 0.0  # was lower = ε, no-amplification
    assert exact(d, "add-remove") == pytest.approx(0.0, abs=TOL)
    assert res.details["allocation_sensitivity"] == {"linf": 0, "l1": 0}
    row = res.details["strata"][0]
    assert row["sample"] == 0
    assert row["sample_neighbours"] == {"record_removed": 0, "record_added": 0}
    assert res.details["witness"]["strata"][0]["sample"] == [0, 0]


def test_paper_example_14_to_15_is_witnessed() -> None:
    # 000 §4.3: |P| = 14, |P′| = 15, r = 1/10, round to nearest: 1 vs 2 sampled, ε′ = ε
    d = det([14], 0.1, "nearest")
    res = engine.bound(d)
    assert res.lower == res.upper == 1.0 and res.verdict == "no-amplification"
    assert exact(d, "add-remove") == pytest.approx(1.0, abs=TOL)
    w = res.details["witness"]
    assert w["neighbour"] == "a record added to stratum 's0'"
    assert w["strata"] == [{"name": "s0", "size": [14, 15], "sample": [1, 2]}]
    assert res.details["allocation_sensitivity"] == {"linf": 1, "l1": 1}
    assert "takes stratum 's0' from N = 14 to 15 and its sample from 1 to 2" in res.warnings[0]


# (sizes, rate, rounding, mechanism, guarantee, exact ε′ from the LP)
A2 = math.log1p(math.expm1(2.0) / 2)  # A(1/2, 2)
EXACT_GRID = [
    # N = 3: ⌊1.0⌉ = 1 -> ⌊1.5⌉ = 2 (removing a record moves it: ε) and ⌊2.0⌉ = 2 (adding
    # one keeps it: A(2/4, 2ε))
    ([3], 0.5, "nearest", "add-remove", "add-remove", A2),
    ([4], 0.25, "floor", "add-remove", "add-remove", 1.0),  # ⌊0.75⌋ = 0 -> ⌊1⌋ = 1
    ([5], 0.34, "nearest", "both", "add-remove", 0.5),  # 1.36 -> 1, 1.7 -> 2, 2.04 -> 2
    ([2, 2], 0.5, "nearest", "add-remove", "add-remove", A2),
    ([2, 3], 0.25, "floor", "add-remove", "add-remove", 1.0),  # ⌊0.75⌋ = 0 -> ⌊1⌋ = 1
    ([6], 0.5, "floor", "add-remove", "replace-one", A2),
    ([2, 2], 0.5, "nearest", "add-remove", "replace-one", A2 + 1.0),  # (0, 1) move
    ([3, 3], 0.5, "floor", "add-remove", "replace-one", math.log1p(math.expm1(2.0) / 3) + 1),
    ([1, 1], 1.0, "floor", "add-remove", "replace-one", 2.0),  # both allocations move: ε_R
]


@pytest.mark.parametrize(("sizes", "rate", "rounding", "neigh", "guarantee", "want"), EXACT_GRID)
def test_deterministic_rounding_exact_grid(sizes, rate, rounding, neigh, guarantee, want) -> None:
    eps = 0.5 if neigh == "both" else 1.0
    d = det(sizes, rate, rounding, {"epsilon": eps, "neighbours": neigh}, guarantee)
    res = engine.bound(d)
    assert exact(d, guarantee) == pytest.approx(want, abs=TOL)
    # exact at these sizes: lower = upper = the LP's value (to outward rounding)
    assert res.lower <= want <= res.upper and res.upper - res.lower < 3e-14


@pytest.mark.slow
def test_deterministic_rounding_sweep_lower_exact_upper() -> None:
    # every one- and two-stratum design of at most 6 records at six rates, both
    # roundings, add-remove and `both` M, both guarantees: lower <= exact <= upper;
    # exact equality wherever the docs say so (add-remove guarantee, one stratum)
    worst_gap = 0.0
    for sizes in ([1], [2], [3], [4], [5], [1, 1], [1, 2], [2, 2], [2, 3], [1, 4], [3, 3]):
        for rate in (0.1, 0.25, 0.34, 0.5, 0.75, 1.0):
            for rounding in ("nearest", "floor"):
                for neigh, eps in (("add-remove", 1.0), ("both", 0.5)):
                    for g in ("add-remove", "replace-one"):
                        d = det(sizes, rate, rounding, {"epsilon": eps, "neighbours": neigh}, g)
                        res = engine.bound(d)
                        ex = exact(d, g)
                        assert res.lower - TOL <= ex <= res.upper + TOL, (sizes, rate, g)
                        if g == "add-remove" or len(sizes) == 1:
                            assert res.upper - res.lower < 3e-14
                        worst_gap = max(worst_gap, res.upper - ex)
    # a record moved between strata with no allocation moving: the chained bound is loose
    assert 0.8 < worst_gap < 0.9  # 0.8676 at strata 1, 2, r = 0.5 (exact 2, upper 2.8676)


@pytest.mark.parametrize(
    ("n", "m", "mech"),
    [(10, 1, "add-remove"), (5, 2, "add-remove"), (4, 4, "both"), (6, 3, "replace-one")],
)
def test_one_stratum_equals_srswor(n: int, m: int, mech: str) -> None:
    # one stratum under replace-one: proportional (deterministic rounding) and fixed
    # allocation are a simple random sample of m of n (000 Theorem 2.2), as `srswor`
    mk = {"epsilon": 1.0, "neighbours": mech}
    srs = load_designs(
        {"mechanism": mk, "sampling": {"scheme": "srswor", "population": n, "sample": m}}
    )[0]
    want = engine.bound(srs)
    fixed = design(
        {"allocation": "fixed", "strata": [{"name": "s0", "size": n, "sample": m}]},
        mk,
        guarantee="replace-one",
    )
    prop = det([n], m / n, "nearest", mk, "replace-one")
    for d in (fixed, prop):
        got = engine.bound(d)
        assert got.error is None
        assert got.lower == pytest.approx(want.lower, abs=1e-15)
        assert got.upper == pytest.approx(want.upper, abs=1e-15)
    assert exact(fixed, "replace-one") == pytest.approx(float(want.lower), abs=TOL)
    if mech != "replace-one":  # randomised rounding needs M's add-remove ε
        rand = design(
            {"rate": m / n, "strata": [{"name": "s0", "size": n}]}, mk, guarantee="replace-one"
        )
        got = engine.bound(rand)
        assert got.lower == pytest.approx(want.lower, rel=1e-14)
        assert got.upper == pytest.approx(want.upper, rel=1e-14)
        assert got.lower <= want.upper and got.upper >= want.lower


def test_fixed_two_strata_exact() -> None:
    # within-stratum replacements: A(max m_h/N_h, ε) = A(2/3, 1) with M ε-DP both ways
    strata = [{"name": "a", "size": 3, "sample": 1}, {"name": "b", "size": 3, "sample": 2}]
    d = design(
        {"allocation": "fixed", "strata": strata},
        {"epsilon": 1.0, "neighbours": "both"},
        guarantee="replace-one",
    )
    want = math.log1p(2 / 3 * math.expm1(1.0))
    assert exact(d, "replace-one") == pytest.approx(want, abs=TOL)
    res = engine.bound(d)
    assert res.lower <= want <= res.upper


# --------------------------------------------------------------------------------------
# Rate 1: the sample is the population
# --------------------------------------------------------------------------------------


def test_rate_one_is_m_itself() -> None:
    # Theorem 7.2 at r = 1 gives A(2, 2ε) + 2ε = 4.62 at ε = 1; every record is sampled
    strata = [{"name": "a", "size": 2}, {"name": "b", "size": 3}]
    d = design({"rate": 1.0, "strata": strata})
    res = engine.bound(d)
    assert res.lower == res.upper == 1.0
    assert exact(d, "add-remove") == pytest.approx(1.0, abs=TOL)
    assert float(strat.theorem_4_3(2.0, 1.0, 1.0)) == pytest.approx(4.623, abs=1e-3)
    ro = engine.bound(design({"rate": 1.0, "strata": strata}, guarantee="replace-one"))
    assert ro.lower == ro.upper == 2.0  # ε_R = 2ε for an add-remove M
    both = {"epsilon": 1.0, "neighbours": "both"}
    rb = engine.bound(design({"rate": 1.0, "strata": strata}, both, guarantee="replace-one"))
    assert rb.lower == rb.upper == 1.0
    inv = engine.invert(d, 0.7)
    assert inv.certified <= 0.7 <= inv.impossible_above
    assert inv.certified == pytest.approx(0.7, abs=2e-15)
    assert inv.impossible_above == pytest.approx(0.7, abs=2e-15)
    # a census stratum among others: its ε′_h is ε, the others keep Theorem 7.2
    mixed = design(
        {"strata": [{"name": "a", "size": 2, "rate": 1.0}, {"name": "b", "size": 3, "rate": 0.5}]}
    )
    rm = engine.bound(mixed)
    rows = rm.details["strata"]
    assert rows[0]["epsilon_prime"] == {"lower": 1.0, "upper": 1.0}
    assert rows[1]["epsilon_prime"]["upper"] < float(orc.thm43(0.5, 1.0))
    ex = exact(mixed, "add-remove")
    assert ex == pytest.approx(1.0729469, abs=1e-6)  # docs/verify.md: strata 3, 2 at r = 0.5
    assert rm.lower - TOL <= ex <= rm.upper + TOL


def test_rounding_example_file_is_exact() -> None:
    # examples/designs/stratified-rounding.yaml: every lower bound is the LP's value
    path = "examples/designs/stratified-rounding.yaml"
    want = [math.log1p(0.1 * math.expm1(2.0)), 1.0, 1.0]
    for d, w in zip(load_designs(path), want, strict=True):
        res = engine.bound(d)
        g = str(d.guarantee or "add-remove")
        assert exact(d, g) == pytest.approx(w, abs=TOL)
        assert res.lower <= w <= res.upper and res.upper - res.lower < 3e-14


@pytest.mark.parametrize(
    ("mechanism", "rate", "sizes", "exact"),
    [
        # exact at the δ′ of the exact pure value's (ε, δ) form, qδ(1 + e^{ε′ − ε})
        # (derivations §10.3; it was 0.7958017263 at the earlier two-step δ′)
        ({"epsilon": 0.5, "delta": 1e-3, "neighbours": "add-remove"}, 0.8, (4, 3), 0.7960458095),
        # exact at the δ′ of the joint-convexity bound (q·δ), which the poisson family
        # reports (a one-rate design is one Poisson sample)
        ({"epsilon": 0.5, "delta": 1e-2, "neighbours": "both"}, 0.1, (3, 1), 0.06285472347),
    ],
)
def test_poisson_allocation_replace_one_lower_bound_holds_at_the_reported_delta(
    mechanism, rate, sizes, exact
) -> None:
    # the (ε, δ) oracle found the pure-witness lower bound above the exact ε′ at the
    # reported δ′ (0.79605 > 0.79580; 0.06285 > 0.06018); the lower bound is now read at δ′
    import ampcalc

    design = {
        "mechanism": mechanism,
        "guarantee": "replace-one",
        "sampling": {
            "scheme": "stratified",
            "allocation": "poisson",
            "rate": rate,
            "strata": [{"name": f"s{i}", "size": n} for i, n in enumerate(sizes)],
        },
    }
    (row,) = ampcalc.verify(design)
    assert row["status"] == "PASS", row
    assert row["epsilon_prime_exact"] == pytest.approx(exact, abs=1e-8)
    res = ampcalc.bound(design).to_dict()
    lo, dp = res["epsilon_prime"]["lower"], res["delta_prime"]
    e = min(mechanism["epsilon"], 2 * mechanism["epsilon"])  # min(ε_D, ε_R)
    witness = np.log(1 + rate * np.expm1(e) - dp * (1 + np.exp(e)))
    assert lo == pytest.approx(witness, rel=1e-12) and lo <= exact
