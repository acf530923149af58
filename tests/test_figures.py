"""The documentation's figures: every ``ampcalc sweep`` line of
``examples/figures/render.sh`` is run as written; its data must equal the engine's
values point by point, and its figure must be a non-empty PNG of the fixed size.

Without matplotlib the figure is left out (``--plot`` dropped) but the data check
still runs.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import shlex
import struct
from pathlib import Path

import pytest
from conftest import ROOT, run_main

import ampcalc
from ampcalc import engine
from ampcalc.analyses.sweep import ALIASES
from ampcalc.output import plot

FIGURES = ROOT / "examples" / "figures"
HAVE_MPL = importlib.util.find_spec("matplotlib") is not None
PIXELS = (round(plot.SIZE[0] * plot.DPI), round(plot.SIZE[1] * plot.DPI))  # 1050 x 675


def commands() -> list[list[str]]:
    """The ``ampcalc sweep`` commands of render.sh (arguments after ``ampcalc``)."""
    out = []
    for line in (FIGURES / "render.sh").read_text().splitlines():
        line = line.strip()
        if line.startswith("ampcalc sweep"):
            words = shlex.split(line.split(" > ")[0])
            out.append(words[1:])
    return out


def option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def options(args: list[str], name: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == name]


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


def test_render_script_has_figures() -> None:
    assert len(commands()) >= 2


@pytest.mark.parametrize("args", commands(), ids=lambda a: a[1])
def test_figure_data_equals_the_engine_and_the_png_has_its_size(
    args, tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.chdir(FIGURES)
    args = list(args)
    if (
        option(args, "--of") == "plan"
        and importlib.util.find_spec("ampcalc.math.accuracy") is None
    ):
        pytest.skip("the accuracy planner is not available")
    figure = option(args, "--plot")
    assert figure is not None
    i = args.index("--plot")
    if HAVE_MPL:
        args[i + 1] = str(tmp_path / Path(figure).name)
    else:
        del args[i : i + 2]
    i = args.index("--format")
    args[i + 1] = "csv"
    run = run_main(capsys, *args)
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    of = option(args, "--of") or "bound"
    varies = options(args, "--vary")
    sizes = [len(v.split("=", 1)[1].split(",")) for v in varies if ":" not in v]
    assert rows and len(rows) >= max(sizes, default=1)
    design_file = FIGURES / args[1]
    cache: dict[tuple, object] = {}
    for row in rows:
        sets = []
        for v in varies:
            path = v.split("=", 1)[0]
            key = ALIASES.get(path, path)
            if key not in ("mechanism.epsilon", "target.epsilon_prime"):
                sets.append(f"{key}={row[key]}")
        k = tuple(sets)
        if k not in cache:
            cache[k] = {d.name: d for d in ampcalc.load_designs(design_file, overrides=sets)}
        d = cache[k][row["design"]]
        if of == "bound":
            eps = row.get("mechanism.epsilon")
            r = engine.bound(d, epsilon=None if eps is None else float(eps))
            assert float(row["epsilon_prime.upper"]) == r.upper
            if r.lower is not None:
                assert float(row["epsilon_prime.lower"]) == r.lower
                assert r.lower <= r.upper
        elif of == "plan":
            # 002 §4.1 eq. 5 through the planner's public function
            from ampcalc.math.accuracy import q_bound

            rho = d.params.sample / d.params.population
            assert float(row["plan.variance_share_max"]) == float(
                q_bound(float(row["target.epsilon_prime"]), rho)
            )
        else:
            r = engine.invert(d, float(row["target.epsilon_prime"]))
            assert float(row["epsilon.certified"]) == r.certified
            assert float(row["epsilon.impossible_above"]) == r.impossible_above
            # the certified ε meets the target as evaluated
            assert engine.bound(d, epsilon=r.certified).upper <= float(row["target.epsilon_prime"])
    if HAVE_MPL:
        out = tmp_path / Path(figure).name
        assert out.stat().st_size > 10_000
        assert png_size(out) == PIXELS


@pytest.mark.parametrize("args", commands(), ids=lambda a: a[1])
def test_committed_figures_exist_with_their_size(args) -> None:
    committed = FIGURES / option(args, "--plot")
    assert committed.exists(), f"run examples/figures/render.sh to create {committed.name}"
    assert png_size(committed) == PIXELS


def test_paper_002_figure_4_readings() -> None:
    # Hu et al., §4.2: at q = 0.6 a gain needs a rate below 16.77 % for
    # ε = 3 and below 61.4 % for ε = 0.1 (q decreases with the rate)
    if importlib.util.find_spec("ampcalc.math.accuracy") is None:
        pytest.skip("the accuracy planner is not available")
    from ampcalc.analyses import sweep as sw
    from ampcalc.designs.document import parse_yaml

    path = FIGURES / "002-figure4.yaml"
    s = sw.evaluate(
        parse_yaml(path.read_text()),
        [sw.parse_vary("sampling.sample=1676,1678,6139,6141"), sw.parse_vary("target=3,0.1")],
        of="plan",
        filename=str(path),
    )
    q = {
        (int(m), t): v
        for m, t, v in zip(
            s.columns["sampling.sample"],
            s.columns["target.epsilon_prime"],
            s.columns["plan.variance_share_max"],
            strict=True,
        )
    }
    assert q[(1676, 3.0)] > 0.6 > q[(1678, 3.0)]
    assert q[(6139, 0.1)] > 0.6 > q[(6141, 0.1)]


def test_cluster_lesson_reaches_no_amplification() -> None:
    # Bun et al., §5: at a fixed fraction ℓ/k the cluster bound climbs to
    # M's ε as the clusters grow (equal sizes: Theorems 5.1 and 5.2 meet)
    rows = list(csv.DictReader((FIGURES / "000-cluster-lesson.csv").open()))
    cl = [r for r in rows if r["scheme"] == "cluster"]
    ups = [float(r["epsilon_prime.upper"]) for r in cl]
    assert ups == sorted(ups) and ups[-1] == pytest.approx(0.1, rel=1e-9)
    for r in cl:  # tight up to outward rounding
        lo, up = float(r["epsilon_prime.lower"]), float(r["epsilon_prime.upper"])
        assert lo <= up and lo == pytest.approx(up, rel=1e-12)
    poisson = {float(r["epsilon_prime.upper"]) for r in rows if r["scheme"] == "poisson"}
    assert len(poisson) == 1 and poisson.pop() < ups[0]


def test_paper_002_figure_3_left_end() -> None:
    # Hu et al., Section 3: at a 1% sample the target ε = 1 allows
    # ε_n = 5.15; the figure's data (the committed CSV) holds the same number.
    rows = list(csv.DictReader((FIGURES / "002-figure3.csv").open()))
    hit = [
        r for r in rows if r["sampling.sample"] == "100" and float(r["target.epsilon_prime"]) == 1
    ]
    assert len(hit) == 1 and round(float(hit[0]["epsilon.certified"]), 2) == 5.15


@pytest.mark.parametrize("path", sorted(FIGURES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_figure_design_is_an_example_that_bounds(path, capsys) -> None:
    doc = run_main(capsys, "bound", str(path), "--json").json()
    assert doc["results"] and all("error" not in r for r in doc["results"])
    assert path.stem in (FIGURES / "render.sh").read_text()


def test_paper_000_figure_2_matches_the_spec_table() -> None:
    # spec bun-drechsler-hu-formulas.md §3, "Figure 2 test vectors [VERIFIED]" (N = 10⁴,
    # ε = 0.01, discrete truncated normal, neighbours: both), printed to 4 digits
    from ampcalc.analyses import sweep as sw
    from ampcalc.designs.document import parse_yaml

    path = FIGURES / "000-figure2.yaml"
    try:
        ampcalc.load_designs(path)
    except ampcalc.AmpcalcError as err:  # the random-size scheme is not registered
        pytest.skip(str(err))
    table = {  # σ: (UB, LB)
        1: (0.005013, 0.004988),
        100: (0.005112, 0.005088),
        500: (0.007509, 0.007491),
        800: (0.009679, 0.009676),
        1000: (0.009815, 0.009813),
    }
    s = sw.evaluate(
        parse_yaml(path.read_text()),
        [sw.parse_vary("sampling.size.sd=" + ",".join(map(str, table)))],
        filename=str(path),
    )
    paper = s.columns["design"] == "M 0.01-DP, neighbours: both (paper)"
    for sd, up, lo in zip(
        s.columns["sampling.size.sd"][paper],
        s.columns["epsilon_prime.upper"][paper],
        s.columns["epsilon_prime.lower"][paper],
        strict=True,
    ):
        ub, lb = table[int(sd)]
        # the upper bound is the paper's; the lower bound is now the sum witness read
        # at both tails (docs/random-size.md), never below the paper's LB and closer
        # to the upper bound (sd = 1: 0.0050125 against the paper's 0.004988)
        assert abs(up - ub) <= 5e-7, (sd, up)
        assert lb - 5e-7 <= lo <= up, (sd, up, lo)


def test_paper_004_figure_1_data_and_png(tmp_path) -> None:
    # the data are the engine's details.frequencies; spec importance-and-weighted-
    # sampling.md B10: π*_i/φ_i = 2.00, 3.81, 5.45, 6.93, 8.27 for i = 1..5 at
    # (ε, δ) = (0.1, 0.01), 17.54 at i = 18, and below 2/(1 − e^{−ε}) for i <= L + 1
    # (the paper's "2/ε" end is an approximation of it)
    import importlib.util
    import math

    spec = importlib.util.spec_from_file_location("fig004", FIGURES / "004-figure1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        data = module.tables()
    except ampcalc.AmpcalcError as err:  # the pws scheme is not registered
        pytest.skip(str(err))
    name, freq, _ = data[0]
    assert name == "(ε, δ) = (0.1, 0.01)"
    ratio = {r["frequency"]: r["pi"] / r["phi_sbh"] for r in freq[:20]}
    assert [round(ratio[i], 2) for i in range(1, 6)] == [2.00, 3.81, 5.45, 6.93, 8.27]
    assert round(ratio[18], 2) == 17.54
    assert all(2 - 1e-12 <= v <= 2 / (1 - math.exp(-0.1)) for v in ratio.values())
    for _, freq, _ in data:  # PWS reports every key at least as often as SbH
        assert all(r["pi"] >= r["phi_sbh"] for r in freq if r["phi_sbh"] is not None)
    committed = FIGURES / "004-figure1.png"
    assert png_size(committed) == PIXELS
    if HAVE_MPL:
        out = tmp_path / "f.png"
        assert module.main([str(out)]) == 0
        assert out.stat().st_size > 10_000 and png_size(out) == PIXELS
        assert out.with_suffix(".csv").read_text().startswith("design,frequency,pi,phi_sbh")
