"""Start-up: ``ampcalc bound`` builds only its own command and imports none of the
further command modules; every other way of reading the command line sees all the
commands, in the order of an eager import, and the same help."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import EXAMPLES

from ampcalc.cli.app import COMMAND_MODULES, app, main


def test_bound_imports_no_further_command_module() -> None:
    code = (
        "import contextlib, io, json, sys\n"
        "from ampcalc.cli.app import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = main(['bound', {str(EXAMPLES / 'srswor.yaml')!r}, '--json'])\n"
        "mods = sorted(m for m in sys.modules if m.startswith('ampcalc.cli.'))\n"
        "print(json.dumps([code, mods, json.loads(out.getvalue())['command']]))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    code_, modules, command = json.loads(run.stdout.splitlines()[-1])
    assert code_ == 0 and command == "bound"
    assert modules == ["ampcalc.cli.app", "ampcalc.cli.conventions"]


def test_the_whole_command_line_is_there_in_the_eager_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import typer.main

    assert main(["bound", str(EXAMPLES / "srswor.yaml"), "--json"]) == 0
    capsys.readouterr()
    names = list(typer.main.get_command(app).commands)
    assert names[:4] == ["bound", "invert", "schemes", "validate"]
    # the further commands follow in COMMAND_MODULES order, then the pws group (which
    # pws_keys adds to), as typer lists an eager import's
    modules = [m for m in COMMAND_MODULES if m not in ("pws", "pws_keys")]
    assert names[4:] == [*modules, "pws"]
    assert "keys" in typer.main.get_command(app).commands["pws"].commands  # type: ignore[attr-defined]
