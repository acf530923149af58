"""The one output helper: ``render.render_result`` / ``cli.emit_result``.

Every command prints its result through ``cli.emit_result`` (or builds the text with
``cli.result_text``); the choice between table, JSON and CSV is made only in
``render.render_result``. The last test keeps the per-command branches from coming back.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from conftest import ROOT, run_main

from ampcalc.cli.app import Format, emit_result, result_text, version
from ampcalc.output import render

RECORDS = [{"name": "a", "epsilon_prime": {"lower": 0.5, "upper": None}, "ok": True}]


def _never(*_args: object) -> str:
    raise AssertionError("a rendering that was not asked for was computed")


def test_json_is_the_envelope_of_the_payload() -> None:
    text = render.render_result(
        "json", command="bound", version="9.9", payload={"results": RECORDS}, csv=RECORDS
    )
    assert text == render.render_json(render.envelope("bound", "9.9", {"results": RECORDS}))
    assert json.loads(text) == {
        "ampcalc_version": "9.9",
        "command": "bound",
        "results": [{"name": "a", "epsilon_prime": {"lower": 0.5, "upper": None}, "ok": True}],
    }
    assert text.endswith("}\n")


def test_csv_flattens_records_or_takes_the_text_given() -> None:
    text = render.render_result("csv", command="bound", version="1", payload={}, csv=RECORDS)
    # one row per design: the column naming it is `design` in every command (as in sweep)
    assert text == "design,epsilon_prime.lower,epsilon_prime.upper,ok\na,0.5,,true\n"
    given = render.render_result(
        "csv", command="sweep", version="1", payload=_never, csv=lambda: "x\n1\n", table=_never
    )
    assert given == "x\n1\n"


def test_table_gets_the_rich_flag_and_only_the_chosen_rendering_runs() -> None:
    seen: list[bool] = []

    def table(rich: bool) -> str:
        seen.append(rich)
        return "T\n"

    for rich in (False, True):
        out = render.render_result(
            "table", command="c", version="1", payload=_never, csv=_never, table=table
        )
        assert out == "T\n"
        out = render.render_result(
            "table",
            command="c",
            version="1",
            payload=_never,
            csv=_never,
            table=table,
            rich_output=rich,
        )
    assert seen == [False, False, False, True]
    doc = render.render_result(
        "json", command="c", version="1", payload=lambda: {"k": 1}, csv=_never, table=_never
    )
    assert json.loads(doc) == {"ampcalc_version": "1", "command": "c", "k": 1}


def test_missing_renderings_and_unknown_formats_are_errors() -> None:
    with pytest.raises(ValueError, match="weights has no table output"):
        render.render_result("table", command="weights", version="1", payload={})
    with pytest.raises(ValueError, match="weights has no csv output"):
        render.render_result("csv", command="weights", version="1", payload={})
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        render.render_result("xml", command="c", version="1", payload={}, csv=[], table=_never)


def test_emit_result_writes_the_text_and_asks_for_rich_only_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    flags: list[bool] = []

    def table(rich: bool) -> str:
        flags.append(rich)
        return f"rich={rich}\n"

    emit_result(Format.table, "c", {}, csv=RECORDS, table=table)
    monkeypatch.setattr("ampcalc.cli.app.rich_output", lambda: True)
    emit_result(Format.table, "c", {}, csv=RECORDS, table=table)
    emit_result(Format.json, "c", {"results": RECORDS}, csv=RECORDS, table=table)
    out = capsys.readouterr().out
    expected_json = render.render_json(render.envelope("c", version(), {"results": RECORDS}))
    assert out == "rich=False\nrich=True\n" + expected_json
    assert flags == [False, True]
    assert result_text(Format.json, "c", {"results": RECORDS}) == expected_json


def test_check_table_json_and_csv_carry_the_same_verdicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    design = str(ROOT / "examples" / "designs" / "compare.yaml")
    args = ("check", design, "--max-epsilon", "0.01")
    lines = run_main(capsys, *args, expect=1).stdout.splitlines()
    doc = json.loads(run_main(capsys, *args, "--json", expect=1).stdout)
    csv_text = run_main(capsys, *args, "--format", "csv", expect=1).stdout
    assert doc["command"] == "check" and doc["passed"] is False
    verdicts = [("PASS" if e["passed"] else "FAIL", e["name"]) for e in doc["results"]]
    assert [tuple(line.split(":")[0].split(" ", 1)) for line in lines] == verdicts
    assert csv_text.splitlines()[1:] == [
        render.render_csv([e]).splitlines()[1] for e in doc["results"]
    ]


# --- keep it from coming back ---------------------------------------------------------

_COMMAND_FILES = [
    *sorted((ROOT / "ampcalc" / "cli").glob("*.py")),
]
# only the helper renders JSON/CSV or builds the envelope
_RENDERERS = {"render_json", "render_csv", "envelope", "render_result"}
# the helper and the --json/--format reconciliation are the only places that test formats
_ALLOWED = {"resolve_format", "result_text"}


def _format_branches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            where = node.name
        if where not in _ALLOWED:
            if isinstance(node, ast.Compare):
                text = ast.unparse(node)
                if any(f in text for f in ("Format.", '"json"', '"csv"', '"table"')):
                    found.append(f"{path.name}:{node.lineno} {where}: {text}")
            name = None
            if isinstance(node, ast.Name):
                name = node.id
            elif isinstance(node, ast.Attribute):
                name = node.attr
            elif isinstance(node, ast.alias):
                name = node.name
            if name in _RENDERERS:
                found.append(f"{path.name}:{getattr(node, 'lineno', '?')} {where}: {name}")
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(tree, "<module>")
    return found


def test_no_command_branches_on_the_output_format_itself() -> None:
    found = [hit for path in _COMMAND_FILES for hit in _format_branches(path)]
    assert found == [], "render through cli.emit_result / cli.result_text:\n" + "\n".join(found)


def test_the_branch_check_finds_a_per_command_branch(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from ..render import render_json\n"
        "def cmd(output):\n"
        "    if output is Format.json:\n"
        "        emit(render_json({}))\n"
    )
    hits = _format_branches(bad)
    assert len(hits) == 3 and "cmd: output is Format.json" in hits[1]
