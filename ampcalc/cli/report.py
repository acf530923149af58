"""``ampcalc report``: a self-contained HTML privacy report of one or more design files.

The evaluation is ``ampcalc.api.report``; the page is ``ampcalc.output.report``
(Jinja2 and matplotlib, the optional extra ``ampcalc[report]``, imported only when the
command runs). This module only parses options, writes the file and chooses the exit
code.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ampcalc.cli.app import ExitCode, SetOpt, app, check_option, load, version
from ampcalc.cli.conventions import say
from ampcalc.load.files import refuse_input_as_output
from ampcalc.model.errors import AmpcalcError

if TYPE_CHECKING:
    from ampcalc.api import DesignReport


DesignsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Design files (YAML); '-' reads standard input. Default: ./ampcalc.yaml.",
        metavar="DESIGN",
        show_default=False,
    ),
]
PageOpt = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        help="Write the page to this file ('-': standard output).",
        metavar="FILE",
        show_default=False,
    ),
]
TargetOpt = Annotated[
    float | None,
    typer.Option(
        "--target",
        "-t",
        help="Target ε′ for the inverse (default: each design's `target: {epsilon_prime}`).",
        show_default=False,
    ),
]
TargetDeltaOpt = Annotated[
    float | None,
    typer.Option("--target-delta", help="Target δ′ for the inverse.", show_default=False),
]
TitleOpt = Annotated[str, typer.Option("--title", help="The page's title.")]
OrganisationOpt = Annotated[
    str | None,
    typer.Option(
        "--organisation",
        help="Who publishes the release (shown on every page).",
        show_default=False,
    ),
]
DatasetOpt = Annotated[
    str | None,
    typer.Option("--dataset", help="The dataset the release comes from.", show_default=False),
]
ReleaseOpt = Annotated[
    str | None,
    typer.Option("--release", help="The release (a name, version or date).", show_default=False),
]


@app.command(rich_help_panel="Budget and planning")
def report(
    designs: DesignsArg = None,
    output: PageOpt = None,
    target: TargetOpt = None,
    target_delta: TargetDeltaOpt = None,
    title: TitleOpt = "Privacy report",
    organisation: OrganisationOpt = None,
    dataset: DatasetOpt = None,
    release: ReleaseOpt = None,
    set_: SetOpt = None,
) -> int:
    """A self-contained HTML page to attach to a data release: bounds, figures, references.

    Example:  ampcalc report examples/designs/srswor.yaml -o report.html
    """
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.output import report as page  # lazy: > 20 ms

    check_option(target, "--target", "target")
    check_option(target_delta, "--target-delta", "target_delta")
    if output is None:
        raise AmpcalcError("give the page's file name with -o FILE (e.g. -o report.html)")
    files: list[str | None] = [*designs] if designs else [None]
    inputs = [f for f in files if f is not None]
    refuse_input_as_output(output, inputs, option="--output")
    loaded = [d for f in files for d in load(f, set_)]
    reports = api.report(loaded, target=target, target_delta=target_delta)
    code = _say_errors(reports)
    html = page.render(
        reports,
        title=title,
        sources=[f if f is not None else "ampcalc.yaml" for f in files],
        version=version(),
        organisation=organisation,
        dataset=dataset,
        release=release,
    )
    _write_page(output, html, inputs)
    return int(code)


def _say_errors(reports: list[DesignReport]) -> ExitCode:
    """Say which designs are outside their theorem's conditions (then: exit 2)."""
    code = ExitCode.OK
    for r in reports:
        if r.error:
            say(f"{r.name}: {r.error}")
            code = max(code, ExitCode.BAD_INPUT)
    return code


def _write_page(output: str, html: str, inputs: list[str]) -> None:
    """The page to standard output (``-``) or to its file."""
    from ampcalc.output import report as page  # lazy: > 20 ms

    if output == "-":
        sys.stdout.write(html)
        sys.stdout.flush()
    else:
        page.write(output, html, inputs=inputs)
        say(f"wrote {output}")
