"""``ampcalc sweep``: vary specs, grid evaluation against the engine, output, exit codes."""

from __future__ import annotations

import csv
import io
import json
import sys
import textwrap

import numpy as np
import pytest
from conftest import EXAMPLES, ROOT, run_ampcalc, run_main
from hypothesis import given
from hypothesis import strategies as st
from oracle import amplification

import ampcalc
from ampcalc import engine
from ampcalc.analyses import sweep as sw
from ampcalc.designs.document import parse_yaml
from ampcalc.model.errors import DesignError

SRS = EXAMPLES / "srswor.yaml"
COMPARE = EXAMPLES / "compare.yaml"


def doc(path):
    return parse_yaml(path.read_text(), filename=str(path))


# ---- vary specs --------------------------------------------------------------------------


def test_linear_range_includes_both_ends() -> None:
    v = sw.parse_vary("mechanism.epsilon=0.1:1:10")
    assert v.path == "mechanism.epsilon" and not v.log
    assert v.values[0] == 0.1 and v.values[-1] == 1.0 and len(v.values) == 10
    assert np.allclose(np.diff(v.values), 0.1)


def test_log_range_is_geometric_with_exact_ends() -> None:
    v = sw.parse_vary("epsilon=0.001:1000:7:log")
    assert v.path == "mechanism.epsilon" and v.log
    assert v.values == pytest.approx((1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0), rel=1e-12)
    assert v.values[0] == 0.001 and v.values[-1] == 1000.0


def test_integer_ends_give_whole_numbers_without_repeats() -> None:
    v = sw.parse_vary("sampling.sample=1:10:25")
    assert all(isinstance(x, int) for x in v.values)
    assert v.values == tuple(range(1, 11))
    # but M's ε stays real even with integer ends
    e = sw.parse_vary("mechanism.epsilon=1:2:3")
    assert e.values == (1.0, 1.5, 2.0)


def test_a_float_range_is_a_grid_equal_to_the_tuple_of_its_floats() -> None:
    v = sw.parse_vary("mechanism.epsilon=1e-6:800:1001:log")
    expected = np.geomspace(1e-6, 800, 1001)
    expected[0], expected[-1] = 1e-6, 800.0
    floats = tuple(expected.tolist())
    assert isinstance(v.values, sw.FloatGrid)
    assert v.values == floats and v.values == list(floats) and floats == v.values
    assert hash(v.values) == hash(floats)
    assert v.values[3] == floats[3] and type(v.values[3]) is float
    assert v.values[-2:] == floats[-2:] and list(v.values) == list(floats)
    assert np.array_equal(np.asarray(v.values), expected)
    assert np.array_equal(v.floats(), expected) and np.array_equal(v.array(), expected)
    with pytest.raises(ValueError, match="read-only"):
        v.floats()[0] = 2.0
    v.array()[0] = 2.0  # a copy
    np.asarray(v.values)[0] = 2.0  # a copy
    assert not np.asarray(v.values, copy=False).flags.writeable  # the grid's own array
    assert v.values[0] == 1e-6
    assert "1001 values" in repr(v.values)
    # integer ranges and comma lists stay tuples
    assert isinstance(sw.parse_vary("sampling.sample=1:10:10").values, tuple)
    assert sw.parse_vary("target=0.1,0.5").floats() is None


def test_constant_columns_are_read_only_views_with_the_same_rows() -> None:
    s = sw.evaluate(doc(COMPARE), [sw.parse_vary("mechanism.epsilon=0.5:2:4")])
    names = list(dict.fromkeys(s.columns["design"].tolist()))
    assert len(names) > 1 and s.columns["design"].flags.writeable  # concatenated: a copy
    one = sw.evaluate(doc(SRS), [sw.parse_vary("mechanism.epsilon=0.5:2:4")])
    design = one.columns["design"]
    assert design.strides == (0,) and not design.flags.writeable
    assert design.tolist() == [one.designs and next(iter(one.designs))] * 4
    assert one.errors() == [] and one.failed_points() == 0
    assert [r["error"] for r in one.rows()] == [None] * 4


def test_comma_list_and_target_alias() -> None:
    v = sw.parse_vary("target=0.1, 0.5,1")
    assert v.path == "target.epsilon_prime" and v.values == (0.1, 0.5, 1.0)
    assert sw.parse_vary("sampling.sample=50,100").values == (50, 100)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("mechanism.epsilon", "expected PATH=SPEC"),
        ("mechanism.epsilon=0:1:5:log", "a log range needs ends > 0"),
        ("mechanism.epsilon=1:2:0", "steps must be between 1 and"),
        ("mechanism.epsilon=1:2:5:cubic", "unknown spacing 'cubic'"),
        ("mechanism.epsilon=a,b", "'a' is not a number"),
        ("mechanism..epsilon=1,2", "is not a field path"),
    ],
)
def test_bad_specs_say_what_was_expected(text, needle) -> None:
    with pytest.raises(DesignError, match=None) as info:
        sw.parse_vary(text)
    assert needle in info.value.message
    assert str(info.value).startswith("vary: ")


# ---- evaluation equals the engine ----------------------------------------------------------


def test_epsilon_sweep_equals_pointwise_engine_values() -> None:
    eps = sw.parse_vary("mechanism.epsilon=0.001:20:41:log")
    s = sw.evaluate(doc(COMPARE), [eps], filename=str(COMPARE))
    designs = ampcalc.load_designs(COMPARE)
    assert len(s) == 41 * len(designs)
    for d in designs:
        rows = s.columns["design"] == d.name
        for e, lo, up, verdict in zip(
            s.columns["mechanism.epsilon"][rows],
            s.columns["epsilon_prime.lower"][rows],
            s.columns["epsilon_prime.upper"][rows],
            s.columns["verdict"][rows],
            strict=True,
        ):
            r = engine.bound(d, epsilon=float(e))
            # vectorised and scalar calls give the same floats, bit for bit
            assert (lo, up, verdict) == (r.lower, r.upper, r.verdict)


def test_srs_sweep_matches_the_mpmath_oracle() -> None:
    # Bun et al., Theorem 2.2: ε′ = log(1 + (m/N)(e^ε − 1)) for M ε-DP
    # under replace-one, here m/N = 0.01 (independent mpmath evaluation).
    s = sw.evaluate(doc(SRS), [sw.parse_vary("epsilon=1e-9:500:60:log")])
    for e, up, lo in zip(
        s.columns["epsilon"],
        s.columns["epsilon_prime.upper"],
        s.columns["epsilon_prime.lower"],
        strict=True,
    ):
        exact = float(amplification(0.01, float(e)))
        assert lo <= exact <= up
        assert up == pytest.approx(exact, rel=1e-13)


def test_field_sweep_is_validated_per_point_like_set() -> None:
    s = sw.evaluate(doc(SRS), [sw.parse_vary("sampling.sample=10,100,1000")])
    assert s.columns["sampling.sample"].tolist() == [10, 100, 1000]
    for m, up in zip(s.columns["sampling.sample"], s.columns["epsilon_prime.upper"], strict=True):
        d = ampcalc.load_designs(SRS, overrides=[f"sampling.sample={m}"])[0]
        assert up == engine.bound(d).upper


def test_invalid_grid_point_names_the_point() -> None:
    with pytest.raises(DesignError) as info:
        sw.evaluate(doc(SRS), [sw.parse_vary("sampling.sample=100,20000")], filename="srs.yaml")
    assert "at grid point sampling.sample=20000" in info.value.message
    assert "larger than population 10000" in info.value.message


def test_invert_sweep_reproduces_paper_002_section_3() -> None:
    # Hu et al., Section 3 (discussion of Figure 3): "to achieve ε = 1
    # based on a 1% simple random sample it would be sufficient to use ε_n = 5.15".
    s = sw.evaluate(doc(SRS), [sw.parse_vary("target=0.1,0.5,1")], of="invert", filename=str(SRS))
    cert = dict(
        zip(s.columns["target.epsilon_prime"], s.columns["epsilon.certified"], strict=True)
    )
    assert round(cert[1.0], 2) == 5.15
    d = ampcalc.load_designs(SRS)[0]
    for t, c in cert.items():
        assert c == engine.invert(d, t).certified
        assert engine.bound(d, epsilon=c).upper <= t  # one-sided round trip


def test_grid_over_designs_with_an_indexed_path() -> None:
    s = sw.evaluate(
        doc(COMPARE),
        [sw.parse_vary("designs[1].sampling.sample=50,500"), sw.parse_vary("epsilon=0.5,2")],
    )
    assert len(s) == 2 * 2 * 4
    # designs other than [1] do not move with the varied field
    poisson = s.columns["design"] == "Poisson 1%"
    ups = s.columns["epsilon_prime.upper"][poisson]
    assert ups[0] == ups[2] and ups[1] == ups[3]
    srs = s.columns["design"] == "SRS 100 of 10000"
    assert len(set(s.columns["epsilon_prime.upper"][srs].tolist())) == 4


@pytest.mark.parametrize(
    ("of", "vary", "needle"),
    [
        ("bound", ["target=1,2"], 'vary it with of="invert"'),
        ("invert", ["epsilon=1,2"], "vary the target instead"),
        ("bound", [], "nothing to sweep"),
        ("bound", ["epsilon=1,2", "epsilon=3"], "is varied twice"),
        ("nonsense", ["epsilon=1"], "unknown `of`"),
    ],
)
def test_malformed_sweeps(of, vary, needle) -> None:
    with pytest.raises(DesignError) as info:
        sw.evaluate(doc(SRS), [sw.parse_vary(v) for v in vary], of=of)
    assert needle in info.value.message


@given(
    st.floats(1e-6, 50.0),
    st.floats(1.0001, 100.0),
    st.integers(1, 10_000),
)
def test_sweep_bands_are_ordered_and_monotone(lo_eps, factor, m) -> None:
    d = {
        "mechanism": {"epsilon": 1.0, "neighbours": "both"},
        "sampling": {"scheme": "srswor", "population": 10_000, "sample": m},
    }
    s = sw.evaluate(d, [sw.parse_vary(f"epsilon={lo_eps!r}:{lo_eps * factor!r}:17:log")])
    lo, up = s.columns["epsilon_prime.lower"], s.columns["epsilon_prime.upper"]
    assert np.all(lo <= up)
    assert np.all(np.diff(up) >= 0) and np.all(np.diff(lo) >= 0)
    assert np.all(up <= s.columns["epsilon"] * (1 + 1e-12))


# ---- the command ---------------------------------------------------------------------------


def test_csv_one_row_per_point_with_the_documented_columns(capsys) -> None:
    run = run_main(capsys, "sweep", str(COMPARE), "--vary", "epsilon=0.1:1:5", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    assert len(rows) == 5 * 4
    assert list(rows[0]) == [
        "design",
        "scheme",
        "mechanism.epsilon",
        "epsilon",
        "epsilon_prime.lower",
        "epsilon_prime.upper",
        "delta_prime",
        "verdict",
        "reference_epsilon",
        "error",
    ]
    first = ampcalc.load_designs(COMPARE)[0]
    assert float(rows[0]["epsilon_prime.upper"]) == engine.bound(first, epsilon=0.1).upper


def test_json_document(capsys) -> None:
    run = run_main(
        capsys,
        "sweep",
        str(SRS),
        "--of",
        "invert",
        "--vary",
        "sampling.sample=100,1000",
        "--vary",
        "target=0.5,1",
        "--json",
    )
    data = run.json()
    assert data["command"] == "sweep" and data["of"] == "invert"
    assert [v["path"] for v in data["vary"]] == ["sampling.sample", "target.epsilon_prime"]
    assert len(data["rows"]) == 4
    row = data["rows"][1]
    assert (row["sampling.sample"], row["target.epsilon_prime"]) == (100, 1.0)
    assert round(row["epsilon.certified"], 2) == 5.15  # 002, Section 3
    assert data["designs"][0]["basis"]


def test_table_with_chart_and_truncation(capsys) -> None:
    run = run_main(capsys, "sweep", str(SRS), "--vary", "epsilon=0.01:10:300:log", "--chart")
    assert "... 100 more rows (300 in all)" in run.stdout
    assert "x: mechanism ε (M's own privacy parameter) (log scale)" in run.stdout
    assert "basis: Bun et al., Theorem 2.2" in run.stdout


def test_points_outside_conditions_are_null_and_reported(tmp_path, capsys) -> None:
    f = tmp_path / "mixed.yaml"
    f.write_text(
        textwrap.dedent(
            """\
            mechanism: {epsilon: 1, neighbours: replace-one}
            designs:
              - name: srs
                sampling: {scheme: srswor, population: 100, sample: 10}
              - name: poisson
                sampling: {scheme: poisson, rate: 0.1}
            """
        )
    )
    run = run_main(capsys, "sweep", str(f), "--vary", "epsilon=1,2", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    bad = [r for r in rows if r["design"] == "poisson"]
    assert all(r["epsilon_prime.upper"] == "" and "add-remove" in r["error"] for r in bad)
    assert "2 of 4 points have no bound" in run.stderr
    # every point outside its conditions: exit 2
    run_main(
        capsys, "sweep", str(f), "--set", "designs[0].sampling.scheme=poisson",
        "--set", "designs[0].sampling.rate=0.1", "--vary", "epsilon=1,2", expect=2,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--vary", "epsilon=0:1:3:log"], "--vary: epsilon=0:1:3:log: a log range needs ends > 0"),
        (["--vary", "sampling.smaple=1,2"], "sampling.smaple"),
        (["--vary", "epsilon=1", "--of", "maybe"], "expected one of bound, invert, plan"),
        (["--vary", "epsilon=1", "--plot", "out.gif"], "expected a file ending in .png"),
        ([], "nothing to sweep"),
    ],
)
def test_bad_input_exits_2_with_a_message(args, needle) -> None:
    run = run_ampcalc("sweep", str(SRS), *args, expect=2)
    assert needle in run.stderr


def test_plan_sweep_uses_the_planner_q_bound() -> None:
    from ampcalc.math.accuracy import epsilon_sample, q_bound

    s = sw.evaluate(
        doc(SRS), [sw.parse_vary("sampling.sample=100,5000"), sw.parse_vary("target=0.1,1")],
        of="plan",
    )  # fmt: skip
    for m, t, q, e in zip(
        s.columns["sampling.sample"],
        s.columns["target.epsilon_prime"],
        s.columns["plan.variance_share_max"],
        s.columns["plan.epsilon_sample"],
        strict=True,
    ):
        assert q == float(q_bound(t, m / 10_000)) and e == float(epsilon_sample(t, m / 10_000))
    # 002 Section 3: the 1% sample may spend ε_n = 5.15 for ε = 1
    assert round(float(s.columns["plan.epsilon_sample"][1]), 2) == 5.15
    # another scheme: a row with the reason, null values
    p = sw.evaluate(doc(COMPARE), [sw.parse_vary("target=1")], of="plan")
    poisson = p.columns["scheme"] == "poisson"
    assert all("covers simple random samples" in e for e in p.columns["error"][poisson])
    assert np.all(np.isnan(p.columns["plan.variance_share_max"][poisson]))


def test_missing_matplotlib_names_the_extra(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "x.png"
    run = run_main(
        capsys, "sweep", str(SRS), "--vary", "epsilon=1,2", "--plot", str(out), expect=2
    )
    assert "pip install 'ampcalc[plot]'" in run.stderr
    assert not out.exists()


def test_heatmap_and_svg(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "grid.svg"
    run_main(
        capsys,
        "sweep",
        str(SRS),
        "--vary",
        "sampling.sample=10:10000:12:log",
        "--vary",
        "epsilon=0.1:5:10",
        "--heatmap",
        "--plot",
        str(out),
        "--format",
        "json",
    )
    text = out.read_text()
    assert text.startswith("<?xml") and "<svg" in text
    assert "Theorem 2.2" in text  # the caption names the theorem


def test_sweep_help_lists_the_options() -> None:
    run = run_ampcalc("sweep", "--help")
    for option in ("--vary", "--of", "--plot", "--log-x", "--heatmap", "--format"):
        assert option in run.stdout


def test_json_is_strict(capsys) -> None:
    # NaN never passes as a number: failed points are null
    run = run_main(capsys, "sweep", str(SRS), "--vary", "epsilon=1e-3,1", "--json")
    json.loads(run.stdout, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert ROOT.exists()


def test_closed_form_sweep_imports_neither_scipy_nor_matplotlib() -> None:
    code = (
        "import sys; from ampcalc.cli import main; "
        "main(['sweep', 'examples/designs/srswor.yaml', '--vary', 'epsilon=1,2', '--format', "
        "'csv']); "
        "main(['sweep', 'examples/designs/srswor.yaml', '--of', 'invert', '--vary', "
        "'target=1,2', '--format', 'csv']); "
        "sys.stderr.write(str(sorted(m for m in ('scipy', 'matplotlib') if m in sys.modules)))"
    )
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert proc.stderr == "[]"


def test_progress_is_reported_per_grid_point() -> None:
    seen = []
    sw.evaluate(
        doc(SRS),
        [sw.parse_vary("sampling.sample=10,20,30"), sw.parse_vary("epsilon=1,2")],
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_sweeps_like_the_engine(path) -> None:
    # the sweep is generic: any registered scheme, ε vectorised, equals engine.bound
    s = sw.evaluate(doc(path), [sw.parse_vary("epsilon=0.25,1,3")], filename=str(path))
    designs = {d.name: d for d in ampcalc.load_designs(path)}
    for row in s.rows():
        d = designs[row["design"]]
        if d.mechanism is None:
            continue
        r = engine.bound(d, epsilon=row["mechanism.epsilon"])
        assert row["epsilon_prime.upper"] == r.upper
        assert row["epsilon_prime.lower"] == r.lower
        assert row["error"] == r.error


def test_vectorised_call_falls_back_to_points_when_conditions_depend_on_epsilon() -> None:
    # the importance scheme checks its domain condition at M's ε (003 Assumption 8):
    # a vectorised call alone would report a bound where a single call reports none
    path = EXAMPLES / "importance-laplace.yaml"
    if not path.exists():
        pytest.skip("no importance example")
    s = sw.evaluate(doc(path), [sw.parse_vary("epsilon=0.5,1,3")], filename=str(path))
    d = ampcalc.load_designs(path)[0]
    for e, up, err in zip(
        s.columns["epsilon"], s.columns["epsilon_prime.upper"], s.columns["error"], strict=True
    ):
        one = engine.bound(d, epsilon=float(e))
        assert err == one.error
        assert (up != up) if one.upper is None else up == one.upper
    meta = s.designs[d.name]
    if any(s.columns["error"]):
        assert meta["evaluation"] == "per point"
        # context, not something to act on: a note
        assert any("one point at a time" in n for n in meta["notes"])
        assert not any("one point at a time" in w for w in meta["warnings"])


def test_progress_bar_goes_to_stderr_not_into_the_csv(capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    run = run_main(
        capsys, "sweep", str(SRS), "--vary", "sampling.sample=1:10000:40", "--format", "csv"
    )
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    assert len(rows) == 40 and rows[0]["sampling.sample"] == "1"


def test_plain_path_in_a_designs_file_suggests_an_indexed_one() -> None:
    run = run_ampcalc("sweep", str(COMPARE), "--vary", "sampling.sample=10,100", expect=2)
    assert run.stderr.startswith("--vary: sampling.sample=10,100: at grid point sampling.sample")
    assert "to vary one design write designs[i].sampling.sample" in run.stderr


def test_a_built_design_is_swept_without_a_document_round_trip(monkeypatch) -> None:
    """A ``Design`` swept along ε goes straight to the engine (same numbers as its file);
    varying another field of a built design says how to do it."""
    from ampcalc.designs import sources

    designs = ampcalc.load_designs(COMPARE)
    from_file = ampcalc.sweep(COMPARE, vary={"epsilon": "0.5:4:8"})

    def no_round_trip(*args, **kwargs):
        raise AssertionError("a built design went through a document")

    monkeypatch.setattr(sources, "source_document", no_round_trip)
    built = ampcalc.sweep(list(designs), vary={"epsilon": "0.5:4:8"})
    for key in ("epsilon_prime.upper", "epsilon_prime.lower", "verdict"):
        assert list(built.columns[key]) == list(from_file.columns[key])
    one = ampcalc.sweep(designs[0], vary={"epsilon": [1.0, 2.0]})
    want = engine.bound(designs[0], epsilon=np.array([1.0, 2.0])).upper
    assert list(one.columns["epsilon_prime.upper"]) == list(want)
    with pytest.raises(DesignError, match=r"cannot vary sampling\.sample on a built Design"):
        sw.evaluate_designs(designs[:1], [sw.parse_vary("sampling.sample=10,20")])
