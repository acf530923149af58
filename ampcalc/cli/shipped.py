"""``ampcalc examples`` and ``ampcalc docs``: what the help texts run and results cite,
for an installed ampcalc that has no ``examples/`` or ``docs/`` folder beside it.

``ampcalc examples`` lists the shipped examples and ``ampcalc examples DIR`` copies them
into DIR (``ampcalc examples examples`` makes the help texts' ``examples/designs/...``
paths work in the current folder); ``ampcalc docs`` lists the documentation pages and
``ampcalc docs PAGE`` prints one (results cite ``docs/derivations.md``: ``ampcalc docs
derivations``). The files are ``ampcalc.load.shipped``'s.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ampcalc.cli.app import ExitCode, app
from ampcalc.cli.conventions import say
from ampcalc.load import shipped


@app.command(rich_help_panel="Checks and reference")
def examples(
    folder: Annotated[
        str | None,
        typer.Argument(
            help="Copy the examples into this folder (created if missing), keeping their "
            "sub-folders. Without it: list them.",
            metavar="DIR",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite example files already in DIR.")
    ] = False,
) -> int:
    """List the example designs, ledgers and plans, or copy them into a folder.

    Example:  ampcalc examples examples
    """
    if folder is None:
        sys.stdout.write("".join(f"examples/{name}\n" for name in shipped.example_files()))
        say("copy them here with: ampcalc examples examples")
        return int(ExitCode.OK)
    written = shipped.copy_examples(folder, force=force)
    shown = folder.rstrip("/\\") or folder
    say(
        f"copied {len(written)} example files into {shown}/; try: "
        f"ampcalc bound {shown}/designs/srswor.yaml"
    )
    return int(ExitCode.OK)


@app.command(rich_help_panel="Checks and reference")
def docs(
    page: Annotated[
        str | None,
        typer.Argument(
            help="The page to print, e.g. derivations (results cite it as "
            "docs/derivations.md). Without it: list the pages.",
            metavar="PAGE",
            show_default=False,
        ),
    ] = None,
) -> int:
    """Print a page of ampcalc's documentation (the pages results cite), or list them.

    Example:  ampcalc docs derivations
    """
    if page is None:
        sys.stdout.write("".join(f"{name}\n" for name in shipped.doc_pages()))
        return int(ExitCode.OK)
    text = shipped.doc_page(page)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return int(ExitCode.OK)
