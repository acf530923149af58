"""The committed figure data are the engine's: every CSV in ``examples/figures/`` is
made again by its line of ``render.sh`` and must equal the committed file, numbers to
a relative 1e-12 (another processor's last digits may differ), text exactly, the same
columns and rows in the same order. A figure whose data the engine no longer gives
fails here until ``sh examples/figures/render.sh`` is run again.

The sweep runs without ``--plot``: the rows a figure's command writes do not depend on
the figure (``tests/test_figures.py`` draws it). The documentation shows each of these
commands exactly as ``render.sh`` runs it.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import math
import re
import shlex
from pathlib import Path

import pytest
from conftest import ROOT, run_main

import ampcalc

FIGURES = ROOT / "examples" / "figures"
REL = 1e-12


def render_lines() -> list[str]:
    """The commands of render.sh (``ampcalc sweep`` and ``python``), one line each."""
    text = (FIGURES / "render.sh").read_text()
    return [s.strip() for s in text.splitlines() if s.startswith(("ampcalc sweep", "python "))]


def sweeps() -> list[tuple[list[str], str]]:
    """(arguments after ``ampcalc``, the CSV the line writes) of each sweep line."""
    out = []
    for line in render_lines():
        if line.startswith("ampcalc sweep"):
            command, target = line.rsplit(" > ", 1)
            out.append((shlex.split(command)[1:], target.strip()))
    return out


def without_plot(args: list[str]) -> list[str]:
    args = list(args)
    i = args.index("--plot")
    del args[i : i + 2]
    return args


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def assert_same_table(committed: str, fresh: str, name: str) -> None:
    """Same header and rows; a column whose every non-empty committed cell is a number
    is compared to ``REL`` (NaN equals NaN, an empty cell only an empty one), any other
    column exactly."""
    old = list(csv.reader(io.StringIO(committed)))
    new = list(csv.reader(io.StringIO(fresh)))
    assert old[0] == new[0], f"{name}: columns {old[0]} != {new[0]}"
    assert len(old) == len(new), f"{name}: {len(old) - 1} committed rows, {len(new) - 1} now"
    header, old, new = old[0], old[1:], new[1:]
    numeric = [
        all(_number(r[j]) is not None for r in old if r[j] != "") for j in range(len(header))
    ]
    for i, (a, b) in enumerate(zip(old, new, strict=True), start=2):
        assert len(a) == len(b) == len(header), f"{name}, line {i}: ragged row"
        for j, (u, v) in enumerate(zip(a, b, strict=True)):
            where = f"{name}, line {i}, column {header[j]}: committed {u!r}, now {v!r}"
            if not numeric[j] or u == "" or v == "":
                assert u == v, where
                continue
            x, y = _number(u), _number(v)
            assert x is not None and y is not None, where
            if math.isnan(x) or math.isnan(y):
                assert math.isnan(x) and math.isnan(y), where
            else:
                assert x == y or math.isclose(x, y, rel_tol=REL, abs_tol=0.0), where


def test_every_committed_csv_has_its_command() -> None:
    made = {target for _, target in sweeps()} | {"004-figure1.csv"}
    assert "004-figure1.csv" in {
        Path(shlex.split(s)[2]).with_suffix(".csv").name
        for s in render_lines()
        if s.startswith("python ")
    }
    assert {p.name for p in FIGURES.glob("*.csv")} == made


@pytest.mark.parametrize("args,target", sweeps(), ids=[t for _, t in sweeps()])
def test_committed_sweep_data_equal_a_fresh_run(args, target, capsys, monkeypatch) -> None:
    if "--of" in args and args[args.index("--of") + 1] == "plan":
        if importlib.util.find_spec("ampcalc.math.accuracy") is None:
            pytest.skip("the accuracy planner is not available")
    monkeypatch.chdir(FIGURES)
    run = run_main(capsys, *without_plot(args))
    assert_same_table((FIGURES / target).read_text(), run.stdout, target)


def test_committed_004_figure_1_data_equal_a_fresh_run(tmp_path) -> None:
    spec = importlib.util.spec_from_file_location("fig004", FIGURES / "004-figure1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        data = module.tables()
    except ampcalc.AmpcalcError as err:  # the pws scheme is not registered
        pytest.skip(str(err))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["design", "frequency", "pi", "phi_sbh"])
    writer.writeheader()
    for name, freq, _ in data:  # the rows main() writes next to the figure
        writer.writerows(
            {"design": name, "frequency": r["frequency"], "pi": r["pi"], "phi_sbh": r["phi_sbh"]}
            for r in freq
        )
    committed = (FIGURES / "004-figure1.csv").read_text()
    assert_same_table(committed, buf.getvalue().replace("\r\n", "\n"), "004-figure1.csv")


def test_bun_figure_2_committed_lower_bound_is_the_two_tailed_witness() -> None:
    # the committed data once held the one-tailed lower bound (σ = 1: 0.0049875); the
    # engine reads the sum witness at both tails (docs/random-size.md): 0.0050125,
    # within 10⁻⁸ of the upper bound 0.00501251
    rows = list(csv.DictReader((FIGURES / "000-figure2.csv").open()))
    paper = [
        r
        for r in rows
        if r["design"] == "M 0.01-DP, neighbours: both (paper)" and r["sampling.size.sd"] == "1"
    ]
    assert len(paper) == 1
    lo, up = float(paper[0]["epsilon_prime.lower"]), float(paper[0]["epsilon_prime.upper"])
    assert round(lo, 7) == 0.0050125 and 0 <= up - lo < 1e-8


def test_the_comparison_forgives_last_digits_only() -> None:
    head = "design,x,y\n"
    assert_same_table(head + "a,1,0.1\n", head + "a,1,0.10000000000000009\n", "t")
    assert_same_table(head + "a,1,nan\n", head + "a,1,nan\n", "t")
    for other in ("a,1,0.1000000001\n", "b,1,0.1\n", "a,1,\n", "a,1,nan\n"):
        with pytest.raises(AssertionError):
            assert_same_table(head + "a,1,0.1\n", head + other, "t")
    with pytest.raises(AssertionError):  # a row more
        assert_same_table(head + "a,1,0.1\n", head + "a,1,0.1\na,2,0.2\n", "t")


def _command(text: str) -> list[str]:
    """A shell block's command lines (continuations joined), split into words."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [
        shlex.split(s) for s in joined.splitlines() if s.startswith(("ampcalc sweep", "python "))
    ]


@pytest.mark.parametrize("doc", ["docs/sweep.md", "README.md"])
def test_docs_show_each_embedded_figures_command_as_render_sh_runs_it(doc) -> None:
    text = (ROOT / doc).read_text()
    lines = {tuple(shlex.split(line)) for line in render_lines()}
    by_png = {}
    for words in lines:
        png = [w for w in words if w.endswith(".png")]
        by_png[png[0]] = words
    blocks = re.findall(r"```sh\n((?:(?!```).)*)```\s*\n!\[[^\]]*\]\(([^)]*)\)", text, flags=re.S)
    shown = {Path(png).name: block for block, png in blocks}
    embedded = set(re.findall(r"!\[[^\]]*\]\([^)]*examples/figures/([\w.-]+\.png)\)", text))
    assert embedded, doc
    for png in embedded:
        assert png in shown, f"{doc}: no command above the figure {png}"
        block = shown[png]
        assert block.startswith("cd examples/figures\n"), f"{doc}: {png}"
        assert [tuple(c) for c in _command(block)] == [by_png[png]], f"{doc}: {png}"
