"""Results -> text: a table for people (rich on a terminal, plain ASCII otherwise),
JSON and CSV for scripts. Nothing else happens here: no maths, no exit codes.

Column names in CSV are the JSON paths flattened with dots (``epsilon_prime.lower``).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ampcalc.model.results import plain

DASH = "-"


def fmt(value: Any, digits: int = 6) -> str:
    """The one number format of tables: ``digits`` significant digits, ``-`` for null."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return DASH
        return f"{value:.{digits}g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, digits) for v in value)
    return str(value)


def envelope(command: str, version: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON document: version, command, then the command's own keys."""
    return {"ampcalc_version": version, "command": command, **payload}


def render_json(document: Mapping[str, Any]) -> str:
    """Strict JSON (``allow_nan=False``: a NaN can never pass as a number). An infinite
    figure inside ``details`` (e.g. a Laplace scale at ε = 5e-324) is written as null."""
    doc = plain(dict(document))
    try:
        return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError:  # an infinite float: allowed in details only, as null
        doc = _finite_details(doc)
        return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _finite_details(value: Any, inside: bool = False) -> Any:
    if isinstance(value, dict):
        return {k: _finite_details(v, inside or k == "details") for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_details(v, inside) for v in value]
    if inside and isinstance(value, float) and math.isinf(value):
        return None
    return value


def flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten a result dict for CSV: nested keys dotted, lists of scalars joined with
    ``"; "``, nested tables (lists of mappings) left out."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, (list, tuple)):
            if all(not isinstance(v, (Mapping, list, tuple)) for v in value):
                out[name] = "; ".join("" if v is None else _csv_scalar(v) for v in value)
        else:
            out[name] = "" if value is None else _csv_scalar(value)
    return out


def _csv_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def render_csv(records: Iterable[Mapping[str, Any]]) -> str:
    """One row per record, columns in order of first appearance."""
    import csv

    rows = [flatten(plain(dict(r))) for r in records]
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return buf.getvalue()


#: A command's JSON payload, or a function building it (called only for JSON).
Payload = Mapping[str, Any] | Callable[[], Mapping[str, Any]]
#: A command's CSV: the records (one row each), or a function returning the CSV text.
CsvRecords = Iterable[Mapping[str, Any]] | Callable[[], str]
#: A command's table: a function of "rich output?" returning the text.
TableText = Callable[[bool], str]

FORMATS = ("table", "json", "csv")

#: the CSV column of a record's ``name`` key, by command: ``design`` for one row per design
#: (as in ``sweep``), ``scheme`` for ``schemes`` (as its table and every other command
#: call a scheme); the JSON key stays ``name``
NAME_COLUMN = {
    **dict.fromkeys(
        ("bound", "invert", "validate", "check", "compare", "verify", "plan"), "design"
    ),
    "schemes": "scheme",
}


def rename_name(records: Iterable[Mapping[str, Any]], column: str) -> list[dict[str, Any]]:
    """The records with their ``name`` key renamed ``column``, in place."""
    return [{(column if k == "name" else k): v for k, v in r.items()} for r in records]


def render_result(
    output_format: str,
    *,
    command: str,
    version: str,
    payload: Payload,
    csv: CsvRecords | None = None,
    table: TableText | None = None,
    rich_output: bool = False,
) -> str:
    """A command's result in ``output_format`` (``table``, ``json`` or ``csv``): the one
    place that chooses between the three renderings.

    Only the chosen rendering is computed: ``payload`` and ``csv`` may be functions,
    ``table`` always is. JSON is the ``envelope`` of ``payload``; CSV is ``render_csv``
    of the records (or the function's text); the table gets ``rich_output``. A command
    with only a JSON document (a run summary) leaves ``csv`` and ``table`` out.
    """
    if output_format not in FORMATS:
        raise ValueError(f"unknown output format {output_format!r}; expected one of {FORMATS}")
    if output_format == "json":
        doc = payload() if callable(payload) else payload
        return render_json(envelope(command, version, doc))
    if output_format == "csv" and csv is not None:
        if callable(csv):
            return csv()
        column = NAME_COLUMN.get(command)
        return render_csv(rename_name(csv, column) if column else csv)
    if output_format == "table" and table is not None:
        return table(rich_output)
    raise ValueError(f"{command} has no {output_format} output")


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------


def bound_rows(results: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["design", "scheme", "ε (M)", "ε′ lower", "ε′ upper", "δ′", "verdict", "guarantee"]
    rows = []
    for r in results:
        ep = r["epsilon_prime"]
        rows.append(
            [
                r["name"],
                r["scheme"],
                fmt(r["epsilon"]),
                fmt(ep["lower"]),
                fmt(ep["upper"]),
                fmt(r["delta_prime"]),
                "error" if r.get("error") else fmt(r["verdict"]),
                fmt(r["guarantee_neighbours"]),
            ]
        )
        rows.extend(sub_rows(r, len(header), "bound"))
    return header, rows


def invert_rows(results: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["design", "scheme", "target ε′", "certified ε", "impossible above", "δ (M)"]
    rows = []
    for r in results:
        rows.append(
            [
                r["name"],
                r["scheme"],
                fmt(r["target"]["epsilon_prime"]),
                "error" if r.get("error") else fmt(r["epsilon"]["certified"]),
                fmt(r["epsilon"]["impossible_above"]),
                fmt(r["delta"]),
            ]
        )
        rows.extend(sub_rows(r, len(header), "invert"))
    return header, rows


SUB_ROWS_MAX = 50


def sub_rows(result: Mapping[str, Any], width: int, kind: str) -> list[list[str]]:
    """Indented rows under a design for its ``details.strata`` (stratified designs):
    per stratum ε′ (bound) or certified ε (invert); at most ``SUB_ROWS_MAX`` rows."""
    strata = (result.get("details") or {}).get("strata")
    if kind == "bound" and result.get("scheme") == "pws":
        return _pws_rows(result, width)
    if not isinstance(strata, (list, tuple)) or not strata:
        return []
    out = []
    for s in strata[:SUB_ROWS_MAX]:
        row = [""] * width
        row[0] = f"  └ {s.get('name', '')}"
        row[1] = f"N={fmt(s.get('size'))} m={fmt(s.get('sample'))}"
        if kind == "bound":
            ep = s.get("epsilon_prime") or {}
            row[3], row[4] = fmt(ep.get("lower")), fmt(ep.get("upper"))
        else:
            e = s.get("epsilon") or {}
            row[3], row[4] = fmt(e.get("certified")), fmt(e.get("impossible_above"))
        out.append(row)
    if len(strata) > SUB_ROWS_MAX:
        row = [""] * width
        row[0] = f"  └ ... {len(strata) - SUB_ROWS_MAX} more (--json)"
        out.append(row)
    return out


def _pws_rows(result: Mapping[str, Any], width: int) -> list[list[str]]:
    """Indented rows under a pws design: the frequencies where π_i < q_i (privacy costs
    reporting), at most ``SUB_ROWS_MAX``; every row: ``ampcalc pws table``."""
    freq = (result.get("details") or {}).get("frequencies") or []
    rows = [f for f in freq if isinstance(f, Mapping) and f.get("pi", 1) < f.get("q", 1)]
    out = []
    for f in rows[:SUB_ROWS_MAX]:
        row = [""] * width
        row[0] = f"  └ i={f['frequency']}"
        row[1] = f"q={fmt(f['q'], 4)}"
        row[2] = f"π={fmt(f['pi'], 4)}"
        row[3] = f"p={fmt(f['p'], 4)}"
        row[4] = f"φ_SbH={fmt(f.get('phi_sbh'), 4)}"
        out.append(row)
    if len(rows) > SUB_ROWS_MAX:
        row = [""] * width
        row[0] = f"  └ ... {len(rows) - SUB_ROWS_MAX} more (ampcalc pws table)"
        out.append(row)
    return out


HIDDEN_DETAILS = frozenset({"reference_epsilon", "tight", "inverse", "inverse_lower"})


def detail_line(details: Mapping[str, Any]) -> str | None:
    """The scalar ``details`` of a result on one line (nested tables are left out)."""
    parts = []
    for key, value in details.items():
        if key in HIDDEN_DETAILS or isinstance(value, (Mapping, list, tuple)):
            continue
        parts.append(f"{key} = {fmt(value)}")
    return "details: " + ", ".join(parts) if parts else None


def notes(results: Sequence[Mapping[str, Any]], *, basis: bool = True) -> list[str]:
    """The lines under a table: per design, its basis, details, errors and warnings."""
    lines: list[str] = []
    for r in results:
        items: list[str] = []
        if r.get("error"):
            items.append(f"error: {r['error']}")
        if basis and r.get("basis"):
            items.append("basis: " + "; ".join(r["basis"]))
        line = detail_line(r.get("details") or {})
        if line:
            items.append(line)
        items.extend(f"warning: {w}" for w in r.get("warnings", []))
        if items:
            lines.append(f"{r['name']}:")
            lines.extend(f"  - {i}" for i in items)
    return lines


def plain_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A stable, aligned ASCII table (used when stdout is not a terminal)."""
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    return "\n".join(out) + "\n"


def render_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    footer: Sequence[str],
    *,
    rich_output: bool,
    title: str | None = None,
) -> str:
    """A table plus its notes; rich (colour unless NO_COLOR) or plain text."""
    if not rich_output:
        text = plain_table(header, rows)
        if footer:
            text += "\n" + "\n".join(footer) + "\n"
        return text
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAVY, header_style="bold")
    buffer = io.StringIO()
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i < 2 else "right", overflow="fold")
    colours = {
        "amplifies": "green",
        "degrades": "red",
        "no-amplification": "yellow",
        "no-guarantee": "yellow",
        "error": "red",
    }
    for row in rows:
        cells = [f"[{colours[c]}]{c}[/]" if c in colours else c.replace("[", r"\[") for c in row]
        table.add_row(*cells)
    console = Console(file=buffer, force_terminal=True, width=_width())
    console.print(table)
    for line in footer:
        console.print(line, markup=False, highlight=False)
    return buffer.getvalue()


def _width() -> int:
    import shutil

    return max(100, shutil.get_terminal_size((120, 40)).columns)
