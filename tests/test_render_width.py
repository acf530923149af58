"""Tables fit the terminal: at 60, 80, 120 and 200 columns no line is wider than the
width, no verdict or number is split across lines and every verdict is there whole;
low-priority columns fold before cells wrap; per-unit rows stay out beyond a handful.

Widths are measured with rich's own cell counter (not the renderer's), after the
colour codes are stripped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, example_designs, run_main
from rich.cells import cell_len

from ampcalc import api
from ampcalc.model.errors import AmpcalcError
from ampcalc.output import render

WIDTHS = (60, 80, 120, 200)
VERDICTS = ("amplifies", "no-amplification", "degrades", "no-guarantee", "calibrated", "error")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
STRATIFIED = EXAMPLES / "stratified-business-survey.yaml"
PWS = EXAMPLES / "pws.yaml"


def plain(text: str) -> str:
    return ANSI.sub("", text)


def table_part(text: str) -> str:
    """The table (and the lines stated under it), without the notes below the blank line."""
    return plain(text).split("\n\n")[0]


def tokens(text: str) -> set[str]:
    return {t.strip(";,") for t in text.split()}


def check_fits(text: str, width: int) -> None:
    for line in plain(text).splitlines():
        assert cell_len(line) <= width, f"{cell_len(line)} > {width}: {line!r}"


def check_cells_whole(text: str, rows: Sequence[Sequence[str]]) -> None:
    """Every one-word cell (numbers, verdicts, schemes) is a whole word of the table,
    and each verdict appears at least as often as rows carry it."""
    words = tokens(table_part(text))
    found = table_part(text).split()
    for row in rows:
        for cell in row[1:]:
            cell = cell.strip()
            if cell and cell != render.DASH and " " not in cell:  # "-" may be left out
                assert cell in words, f"{cell!r} split or missing in\n{text}"
    for verdict in VERDICTS:
        expected = sum(1 for r in rows if verdict in r[1:])
        assert found.count(verdict) >= expected, (verdict, text)


@functools.cache
def results(path: str, kind: str) -> list[dict[str, Any]]:
    from ampcalc.cli.app import load

    try:
        designs = load(path, None)
    except AmpcalcError:
        return []  # not a design file of bound/invert (e.g. a budget ledger)
    if kind == "bound":
        return [api.bound(d).to_dict() for d in designs]
    out = []
    for d in designs:  # at the file's target, else at ε′ = 1 (as --target 1 would)
        try:
            out.append(api.invert(d, None if d.target else 1.0, None).to_dict())
        except AmpcalcError:
            continue  # refused with exit 2: no table
    return out


def example_ids(p: Any) -> str:
    return str(p.name)


SLOW_EXAMPLES = {"importance-kmeans.yaml", "allocation-test.yaml", "pws-histogram.yaml"}  # > 2 s


@pytest.mark.parametrize("kind", ["bound", "invert"])
@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_EXAMPLES else p
        for p in example_designs()
    ],
    ids=example_ids,
)
def test_every_example_fits_every_width(path, kind) -> None:
    dicts = results(str(path), kind)
    if not dicts:
        pytest.skip("not a bound/invert design file")
    rows_of = render.bound_rows if kind == "bound" else render.invert_rows
    for details in (False, True):
        header, rows = rows_of(dicts, details=details)
        for width in WIDTHS:
            for rich in (False, True):
                text = render.render_table(
                    header, rows, render.notes(dicts), rich_output=rich, width=width
                )
                check_fits(text, width)
                check_cells_whole(text, rows)


def test_terminal_width_honours_columns_and_defaults_to_80(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "57")
    assert render.terminal_width() == 57
    monkeypatch.delenv("COLUMNS")

    def no_terminal(*_: Any) -> Any:
        raise OSError("not a terminal")

    monkeypatch.setattr("os.get_terminal_size", no_terminal)
    assert render.terminal_width() == 80


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("rich", [False, True])
def test_cli_bound_draws_to_the_terminal_width_not_100(capsys, monkeypatch, width, rich) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr("ampcalc.cli.app.rich_output", lambda: rich)
    out = run_main(capsys, "bound", str(STRATIFIED)).stdout
    check_fits(out, width)
    for verdict in ("amplifies", "degrades"):
        assert verdict in tokens(table_part(out))
    if width == 200:  # wide enough for every column on one line per design
        head = table_part(out).splitlines()[0]
        assert "guarantee" in head and "scheme" in head


def test_80_columns_folds_low_priority_columns_before_wrapping_cells() -> None:
    dicts = results(str(EXAMPLES / "srswor.yaml"), "bound")
    header, rows = render.bound_rows(dicts)
    text = render.render_table(header, rows, [], rich_output=False, width=80)
    lines = text.splitlines()
    # guarantee and the tightness went under their row; the design name and every number
    # stayed whole
    assert "guarantee" not in lines[0] + lines[1]
    assert lines[4] == "    guarantee: replace-one; bounds: exact"
    assert "1% secret simple random sample" in lines[3]
    wide = render.render_table(header, rows, [], rich_output=False, width=120)
    assert wide.splitlines()[0].split() == [
        "design", "scheme", "ε", "(M)", "ε′", "lower", "ε′", "upper", "δ′", "verdict", "guarantee"
    ] or "guarantee" in wide.splitlines()[0]  # fmt: skip


def test_a_column_the_same_in_every_row_is_stated_once() -> None:
    header = ["design", "scheme", "ε′ upper", "δ′", "verdict", "guarantee"]
    rows = [
        [f"a fairly long design name number {i}", "srswor", "0.0170369", "0", v, "replace-one"]
        for i, v in enumerate(["amplifies", "no-amplification", "degrades"])
    ]
    text = render.render_table(header, rows, [], rich_output=False, width=60)
    assert "guarantee = replace-one in every row" in text
    assert "scheme = srswor in every row" in text
    assert "δ′ = 0 in every row" in text
    check_fits(text, 60)
    check_cells_whole(text, rows)


def test_very_narrow_tables_become_records_without_splitting_a_verdict() -> None:
    header = ["design", "ε (M)", "ε′ lower", "ε′ upper", "verdict"]
    rows = [["x", "1", "0.0170369", "0.0170369", "no-amplification"]]
    text = render.render_table(header, rows, [], rich_output=False, width=30)
    check_fits(text, 30)
    assert "    verdict: no-amplification" in text.splitlines()


def test_notes_wrap_at_word_boundaries_under_their_bullet() -> None:
    words = [f"word{i}" for i in range(40)] + ["no-amplification", "0.000940204"]
    footer = render.bullets("design", ["warning: " + " ".join(words)])
    text = render.render_table(["design"], [["design"]], footer, rich_output=False, width=60)
    notes = text.split("\n\n")[1].splitlines()
    assert notes[0] == "design:"
    assert notes[1].startswith("  - warning: word0 ")
    assert all(line.startswith("    word") or "no-amp" in line for line in notes[2:])
    assert " ".join(" ".join(notes[1:]).split()) == "- warning: " + " ".join(words)
    check_fits(text, 60)


def test_labelled_and_bullets_make_a_second_block_like_warnings() -> None:
    assert render.labelled("note", ["a", "b"]) == ["note: a", "note: b"]
    assert render.labelled("note", None) == []
    assert render.bullets("x", render.labelled("note", ["a"])) == ["x:", "  - note: a"]
    assert render.bullets("x", []) == []


def test_strata_beyond_a_handful_are_counted_and_details_shows_all(capsys) -> None:
    out = run_main(capsys, "bound", str(STRATIFIED)).stdout
    # 12 strata per design (the example's file), 5 shown
    assert out.count("… 7 more strata, see --details or --json") == 4
    assert "└ 1-4 employees" in out and "└ 5000+ employees" not in out
    full = run_main(capsys, "bound", str(STRATIFIED), "--details").stdout
    assert "more strata" not in full and full.count("└ 5000+ employees") == 4
    inv = run_main(capsys, "invert", str(STRATIFIED), "--details", "-t", "1").stdout
    assert inv.count("└ 5000+ employees") >= 3


def test_pws_frequencies_beyond_a_handful_and_all_with_details(capsys) -> None:
    out = run_main(capsys, "bound", str(PWS)).stdout
    # 34 privacy-cost rows (details.privacy_cost_rows), 5 shown
    assert "… 29 more frequencies, see --details or ampcalc pws table" in out
    full = run_main(capsys, "bound", str(PWS), "--details").stdout
    assert "└ i=34 " in full and "└ i=35 " not in full


# ---- the other commands' tables ----------------------------------------------------------

OTHER = [
    ("compare", [str(STRATIFIED), "--target", "1"]),
    ("compare", [str(EXAMPLES / "compare.yaml"), "--target", "1"]),
    ("sweep", [str(EXAMPLES / "srswor.yaml"), "--vary", "epsilon=0.1:5:5", "--vary",
               "sampling.sample=10,100", "--chart"]),
    ("sweep", [str(STRATIFIED), "--vary", "epsilon=0.1,1"]),
    ("sweep", [str(EXAMPLES / "srswor.yaml"), "--of", "invert", "--vary", "target=0.5,1"]),
    ("plan", [str(ROOT / "examples" / "plans" / "mean.yaml"), "--q", "0.6"]),
    pytest.param("budget", [str(ROOT / "examples" / "budget" / "year.yaml")],
                 marks=pytest.mark.slow),  # the accountant takes ~5 s
]  # fmt: skip


@pytest.mark.parametrize(("command", "args"), OTHER, ids=lambda a: a if isinstance(a, str) else "")
def test_other_tables_fit(capsys, monkeypatch, command, args) -> None:
    import importlib

    module = importlib.import_module(f"ampcalc.cli.{command}")
    seen: dict[str, Any] = {}

    def record(output: Any, name: str, payload: Any, **kw: Any) -> None:
        seen.update(payload=payload() if callable(payload) else payload, table=kw["table"])

    monkeypatch.setattr(module, "emit_result", record)
    run_main(capsys, command, *args)  # computed once, drawn at every width below
    doc = seen["payload"]
    for width in WIDTHS:
        monkeypatch.setenv("COLUMNS", str(width))
        for rich in (False, True):
            out = seen["table"](rich)
            check_fits(out, width)
            words = tokens(table_part(out))
            for number in _numbers(command, doc):
                assert number in words, f"{number!r} split or missing at {width}:\n{out}"
            for r in [*doc.get("results", []), *(doc.get("rows") or [])[:50]]:
                verdict = r.get("verdict")
                if isinstance(verdict, str):
                    assert verdict in words


def _numbers(command: str, doc: dict[str, Any]) -> list[str]:
    """The numbers each table shows, formatted as the table formats them."""
    f = render.fmt
    if command == "compare":
        return [f(r["epsilon"]["certified"]) for r in doc["results"]] + [
            f(v) for r in doc["results"] for v in r["accuracy"].values() if isinstance(v, float)
        ]
    if command == "sweep":
        rows = doc.get("rows") or []
        keys = ("epsilon_prime.upper", "epsilon_prime.lower", "epsilon.certified")
        return [f(r[k]) for r in rows[:50] for k in keys if isinstance(r.get(k), float)]
    if command == "budget":
        return [f(e["epsilon_prime"]["upper"]) for e in doc["entries"]]
    if command == "plan":
        return [f"{r['variance_sample']:.4g}" for r in doc["results"][0]["rows"]]
    return []


def test_compare_headers_break_between_words_at_160_and_numbers_stay_whole(
    capsys, monkeypatch
) -> None:
    for width in (80, 160):
        monkeypatch.setenv("COLUMNS", str(width))
        out = run_main(capsys, "compare", str(STRATIFIED), "--target", "1").stdout
        head = table_part(out).split("-----")[0]
        pieces = set(head.split())
        # every header line piece is a whole word or ends at a "_" between words
        allowed = {"design", "scheme", "target", "ε′", "certified", "ε", "impossible", "above"}
        for piece in pieces:
            assert piece in allowed or re.fullmatch(r"(?:[a-z]{3,}_)*[a-z]{3,}_?", piece), piece
        words = tokens(table_part(out))
        # certified ε at target ε′ = 1 (the values the command's JSON carries)
        for number in ("3.5258", "3.52224", "7.07836", "0.0452777", "0.0847175"):
            assert number in words, (width, out)
