"""``ampcalc compare``: privacy against accuracy, design by design, at one target ε′.

For every design in the file: the certified mechanism ε at the population target T
(``engine.invert``) and the scheme's accuracy figures side by side
(Bun et al., §7.1–7.2: an allocation's variance advantage can be wiped
out by the noise its privacy cost forces).

Extension point (for scheme modules): a scheme contributes accuracy columns through
its ``Scheme.compare`` field::

    def compare(design: Design, target: float, inverted: InvertResult) -> dict[str, Any]: ...

It receives the validated design, the target ε′ and the design's inversion at it
(``ampcalc.analyses.compare`` computes it), and returns JSON-able figures
(numbers, strings, lists, nested mappings; ``None`` where a figure is unavailable),
placed as they are under ``accuracy`` in the result. Scalar numeric entries become
table columns (in order of first appearance over the designs); an ``assumptions``
list of strings is printed under the table; an ``error`` string marks the design as
failed (exit 2). The hook may raise ``ConditionError`` (reported like an ``invert``
failure). Schemes without the hook get ``accuracy: {}``.

JSON: ``{"ampcalc_version", "command": "compare", "target": T, "results": [{"name",
"scheme", "epsilon": {"certified", "impossible_above"}, "accuracy": {...}}]}`` (plus
``"error"`` on a failed design).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ampcalc.cli.app import (
    DesignArg,
    FormatOpt,
    JsonOpt,
    SetOpt,
    app,
    check_option,
    condition_errors,
    emit_result,
    load,
    resolve_format,
)
from ampcalc.cli.conventions import OutputOpt


@app.command(rich_help_panel="Bounds")
def compare(
    design: DesignArg = None,
    target: Annotated[
        float | None,
        typer.Option(
            "--target",
            "-t",
            help="Target ε′ for the population (default: the file's `target: {epsilon_prime}`).",
            show_default=False,
        ),
    ] = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: SetOpt = None,
    out: OutputOpt = None,
) -> int:
    """Certified ε at a target ε′ and each scheme's accuracy figures, design by design.

    Example:  ampcalc compare examples/designs/compare.yaml --target 1
    """
    output = resolve_format(fmt, as_json, out)
    check_option(target, "--target", "target")
    from ampcalc.api import compare as compare_designs  # lazy: start-up (--help)

    designs = load(design, set_)
    results = compare_designs(designs, target)
    code = condition_errors(designs, results)  # said once, at the design's line
    shown_target = target
    for row in results:
        shown_target = row["target"] if shown_target is None else shown_target
    payload = {"target": shown_target, "results": results}
    emit_result(
        output, "compare", payload, csv=results, table=lambda rich: _table(results, rich),
        to=out, rows=len(results),
    )  # fmt: skip
    return int(code)


def _table(results: list[dict[str, Any]], rich: bool) -> str:
    """The comparison table; errors and each scheme's assumptions (once) under it."""
    from ampcalc.output import render  # lazy: start-up (--help)

    header, rows = _rows(results)
    footer: list[str] = []
    seen: set[str] = set()
    for r in results:
        items = []
        for a in r["accuracy"].get("assumptions", []):
            if a not in seen:
                seen.add(a)
                items.append(f"assumption: {a}")
        if items:
            footer.append(f"{r['name']}:")
            footer.extend(f"  - {i}" for i in items)
    return render.render_table(header, rows, footer, rich_output=rich)


def _rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    from ampcalc.output.render import fmt  # lazy: start-up (--help)

    columns: list[str] = []
    for r in results:
        for key, value in r["accuracy"].items():
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            if (numeric or value is None) and key not in columns:
                columns.append(key)
    header = ["design", "scheme", "target ε′", "certified ε", "impossible above", *columns]
    rows = []
    for r in results:
        rows.append(
            [
                r["name"],
                r["scheme"],
                fmt(r["target"]),
                "error" if r.get("error") else fmt(r["epsilon"]["certified"]),
                fmt(r["epsilon"]["impossible_above"]),
                *(fmt(r["accuracy"].get(c)) for c in columns),
            ]
        )
    return header, rows
