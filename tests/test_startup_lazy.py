"""Start-up: ``ampcalc bound`` imports none of the further command modules and
``ampcalc sweep`` only its own; every way of reading the whole command line (the
top-level help, completion, a mistyped name) sees all the commands, in ``COMMANDS``
order, grouped into the help's panels by task."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
import typer.main
from conftest import EXAMPLES
from typer.core import TyperGroup

from ampcalc.cli.app import COMMANDS, app, main


def _modules_after(argv: list[str]) -> tuple[int, list[str]]:
    code = (
        "import contextlib, io, json, sys\n"
        "from ampcalc.cli.app import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), "
        "contextlib.redirect_stderr(io.StringIO()):\n"
        f"    code = main({argv!r})\n"
        "mods = sorted(m for m in sys.modules if m.startswith('ampcalc.cli.'))\n"
        "print(json.dumps([code, mods]))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    code_, modules = json.loads(run.stdout.splitlines()[-1])
    return code_, modules


def test_bound_imports_no_further_command_module() -> None:
    code, modules = _modules_after(["bound", str(EXAMPLES / "srswor.yaml"), "--json"])
    assert code == 0
    assert modules == ["ampcalc.cli.app", "ampcalc.cli.conventions"]
    code, modules = _modules_after(["--version"])
    assert code == 0 and modules == ["ampcalc.cli.app", "ampcalc.cli.conventions"]


def test_a_further_command_imports_only_its_module() -> None:
    code, modules = _modules_after(["check", str(EXAMPLES / "srswor.yaml"), "--max-epsilon", "9"])
    assert code == 0
    assert modules == ["ampcalc.cli.app", "ampcalc.cli.check", "ampcalc.cli.conventions"]
    code, modules = _modules_after(["pws", "keys", "--help"])  # pws_keys adds to the group
    assert code == 0 and {"ampcalc.cli.pws", "ampcalc.cli.pws_keys"} <= set(modules)


def test_the_whole_command_line_is_there_in_order() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    names = root.list_commands(typer.Context(root))
    assert names == list(COMMANDS)
    assert names[:5] == ["bound", "invert", "check", "sweep", "compare"]
    pws = root.get_command(typer.Context(root), "pws")
    assert isinstance(pws, TyperGroup)
    assert pws.list_commands(typer.Context(pws)) == ["table", "sanitize", "estimate", "keys"]


def test_every_command_has_a_task_panel_and_the_panels_are_contiguous() -> None:
    root = typer.main.get_command(app)
    ctx = typer.Context(root)
    assert isinstance(root, TyperGroup)
    panels = [getattr(root.get_command(ctx, n), "rich_help_panel", None) for n in COMMANDS]
    order = list(dict.fromkeys(panels))
    assert order == ["Bounds", "Budget and planning", "Records", "Checks and reference"]
    # each panel's commands are next to each other in COMMANDS, so the help lists
    # them in the table's order
    assert panels == sorted(panels, key=order.index)


def test_top_level_help_lists_the_panels_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    at = [text.index(f"─ {p} ") for p in ("Bounds", "Budget", "Records", "Checks")]
    assert at == sorted(at)
    rows = [line for line in text.splitlines() if line.startswith("│ ") and line[2] != " "]
    commands = [row.split()[1] for row in rows if row.split()[1] in COMMANDS]
    assert commands == list(COMMANDS)


def test_a_mistyped_command_is_suggested_from_every_module(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["swep"]) == 2
    assert "Did you mean 'sweep'?" in capsys.readouterr().err
