"""``ampcalc check``: a privacy-budget gate for pipelines (PASS/FAIL per design, exit 1).

A design passes when its *upper* bound on ε′ (the guarantee, rounded outward) is at
most ``--max-epsilon`` and, with ``--max-delta``, its δ′ is at most that. A design
with no upper bound (the theory gives none) fails; a design outside its theorem's
conditions fails with exit 2 (bad input outranks a failed gate). Several files are
checked as ``bound`` reads them (``app.each_file``): a file that cannot be read is
reported and exits 2, the others are still checked; with ``--json`` a list of one
document per file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ampcalc.cli.app import (
    EpsilonOpt,
    ExitCode,
    FormatOpt,
    JsonOpt,
    SetOpt,
    app,
    check_option,
    each_file,
    emit_files,
    resolve_format,
)
from ampcalc.cli.conventions import OutputOpt
from ampcalc.model.errors import printable

if TYPE_CHECKING:
    from ampcalc.output.render import TableText


def line(entry: dict[str, Any]) -> str:
    """``PASS name: ε′ <= 0.0123 (max 1), δ′ = 0 (max 1e-06)`` or ``FAIL ...: reason``."""
    up = entry["epsilon_prime_upper"]
    nums = f"ε′ <= {up:.6g} (max {entry['max_epsilon']:g})" if up is not None else "ε′: no bound"
    if entry["max_delta"] is not None:
        dp = entry["delta_prime"]
        shown = "no bound" if dp is None else f"{dp:.6g}"
        nums += f", δ′ = {shown} (max {entry['max_delta']:g})"
    if entry["passed"]:
        return f"PASS {entry['name']}: {nums}"
    if entry.get("error"):  # the condition itself is said once, on stderr, at its line
        return f"FAIL {entry['name']}: {nums}: outside the theorem's conditions"
    return f"FAIL {entry['name']}: {nums}: " + "; ".join(entry["reasons"])


DesignsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Design files (YAML); '-' reads standard input. Default: ./ampcalc.yaml.",
        show_default=False,
    ),
]


@app.command(rich_help_panel="Bounds")
def check(
    design: DesignsArg = None,
    max_epsilon: Annotated[
        float | None,
        typer.Option(
            "--max-epsilon",
            help="The ε′ budget: every design's upper bound must be at most this.",
            show_default=False,
        ),
    ] = None,
    max_delta: Annotated[
        float | None,
        typer.Option("--max-delta", help="The δ′ budget (when given).", show_default=False),
    ] = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: SetOpt = None,
    epsilon: EpsilonOpt = None,
    out: OutputOpt = None,
) -> int:
    """Guard a privacy budget: PASS/FAIL per design (of every file), exit 1 if any fails.

    Example:  ampcalc check examples/designs/srswor.yaml --max-epsilon 0.05
    """
    output = resolve_format(fmt, as_json, out)
    from ampcalc.api import check as check_designs  # lazy: start-up (--help)
    from ampcalc.load.fields import Field  # lazy: start-up (--help)

    if max_epsilon is None:
        raise typer.BadParameter(
            "give the budget, e.g. --max-epsilon 1", param_hint="--max-epsilon"
        )
    budget = Field(name="max_epsilon", kind="float", doc="ε′ budget", low=0.0, low_open=True)
    check_option(max_epsilon, "--max-epsilon", budget)
    check_option(max_delta, "--max-delta", "target_delta")

    def compute(designs: Sequence[Any]) -> list[dict[str, Any]]:
        return check_designs(designs, max_epsilon, max_delta, epsilon=epsilon)

    # a file that cannot be read is reported and fails the gate (exit 2); the others
    # are still checked
    files, code = each_file(design, set_, compute)
    for e in (e for f in files for e in f.dicts):
        if not e["error"] and not e["passed"]:
            code = max(code, ExitCode.GATE_FAILED)

    def table(entries: list[dict[str, Any]]) -> TableText:
        return lambda _rich: "".join(printable(line(e)) + "\n" for e in entries)

    def document(entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {"passed": all(e["passed"] for e in entries), "results": entries}

    emit_files(output, "check", files, table, out, document)
    return int(code)
