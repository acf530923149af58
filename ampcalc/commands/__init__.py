"""Commands beyond the core ones, one module each, attached to ``cli.app`` at import.

A command module imports ``from ..cli import app, ExitCode, Format, ...`` and
decorates its function with ``@app.command()``; it must keep module-level imports
light (numpy/scipy/rich inside the function). It prints its result with
``cli.emit_result`` (its JSON payload, CSV records and table function), never by
choosing between the formats itself. To add one, append its module name to
``COMMAND_MODULES``.
"""

from __future__ import annotations

import importlib

COMMAND_MODULES: list[str] = [
    "sweep",
    "check",
    "weights",
    "completion",
    "compare",
    "pws",
    "pws_keys",
    "verify",
    "plan",
]


def register() -> None:
    """Import every command module (which attaches its commands to the app)."""
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}")
