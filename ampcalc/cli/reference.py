"""``ampcalc schemes`` and ``ampcalc validate``: the registered families, and design
files checked without computing bounds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ampcalc.cli.app import (
    DesignsArg,
    ExitCode,
    FormatOpt,
    JsonOpt,
    SetOpt,
    app,
    each_file,
    emit_files,
    emit_result,
    resolve_format,
)
from ampcalc.cli.conventions import OutputOpt

if TYPE_CHECKING:
    from ampcalc.output.render import TableText


@app.command("schemes", rich_help_panel="Checks and reference")
def schemes_cmd(fmt: FormatOpt = None, as_json: JsonOpt = False, out: OutputOpt = None) -> int:
    """Every sampling scheme: its parameters, the relation M must satisfy, its basis.

    Example:  ampcalc schemes --json
    """
    output = resolve_format(fmt, as_json, out)
    from ampcalc import api  # lazy: start-up (--version)

    items = api.schemes()

    def table(rich: bool) -> str:
        from ampcalc.model.references import describe_all  # lazy: start-up (--version)

        # lazy: start-up (--version)
        from ampcalc.model.references import footer as references_footer
        from ampcalc.output import render  # lazy: start-up (--version)

        header = ["scheme", "guarantee", "what it is"]
        rows = [[i["name"], ", ".join(i["guarantee_neighbours"]), i["summary"]] for i in items]
        footer = [
            f"{i['name']}:\n"
            f"  - parameters (* required): "
            + ", ".join(p["name"] + ("*" if p["required"] else "") for p in i["parameters"])
            + f"\n  - M's relation: {i['mechanism_neighbours']}"
            + f"\n  - basis: {describe_all(i['basis'])}"
            for i in items
        ]
        footer += references_footer(items)
        return render.render_table(header, rows, footer, rich_output=rich)

    records = ({**i, "parameters": [p["name"] for p in i["parameters"]]} for i in items)
    emit_result(
        output, "schemes", {"schemes": items}, csv=records, table=table, to=out,
        rows=len(items),
    )  # fmt: skip
    return int(ExitCode.OK)


@app.command(rich_help_panel="Checks and reference")
def validate(
    design: DesignsArg = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: SetOpt = None,
    out: OutputOpt = None,
) -> int:
    """Check design files (syntax, fields, theorem conditions) without computing bounds.

    Example:  ampcalc validate examples/designs/srswor.yaml
    """
    output = resolve_format(fmt, as_json, out)
    from ampcalc import api  # lazy: start-up (--version)

    files, code = each_file(design, set_, api.validate)

    def table(dicts: list[dict[str, Any]]) -> TableText:
        def text(rich: bool) -> str:
            from ampcalc.output import render  # lazy: start-up (--version)

            header = ["design", "scheme", "valid"]
            rows = [[e["name"], e["scheme"], "yes" if e["valid"] else "error"] for e in dicts]
            return render.render_table(header, rows, [], rich_output=rich)

        return text

    emit_files(output, "validate", files, table, out)
    return int(code)
