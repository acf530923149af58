"""Results -> text: a table for people (rich on a terminal, plain ASCII otherwise),
JSON and CSV for scripts. Nothing else happens here: no maths, no exit codes.

Column names in CSV are the JSON paths flattened with dots (``epsilon_prime.lower``).
The table's layout to the terminal's width is ``ampcalc/output/table.py``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ampcalc.model.references import describe_all, references_used
from ampcalc.model.references import footer as references_footer
from ampcalc.model.results import plain

# the table layout has its own module; these names are still read from here
from ampcalc.output.table import DASH as DASH
from ampcalc.output.table import render_table as render_table
from ampcalc.output.table import terminal_width as terminal_width
from ampcalc.output.table import wrap as wrap
from ampcalc.output.terms import detail_label, plain_references, with_glossary


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
    """The JSON document: version, command, then the command's own keys, then the
    ``references`` its citations name (key -> full reference; left out if none)."""
    doc = {"ampcalc_version": version, "command": command, **payload}
    refs = references_used(payload)
    if refs:
        doc["references"] = refs
    return doc


def render_json(document: Mapping[str, Any]) -> str:
    """Strict JSON (``allow_nan=False``: a NaN can never pass as a number).

    JSON has no number for ±inf: such a value (e.g. a Laplace scale, or M's ε, at ε or
    a scale of 5e-324) is written as null, and the nearest ``notes`` list around it
    (the result's; else the document's) says which value it was. NaN is "no value"
    (``plain``): null with no note."""
    doc = plain(dict(document))
    try:
        text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError:  # an infinite float somewhere: null, with a note
        finite = _finite_json(doc, "", None)
        assert isinstance(finite, dict)
        text = json.dumps(finite, indent=2, ensure_ascii=False, allow_nan=False)
    return json_escape_controls(text) + "\n"


#: characters JSON may hold raw in a string that a terminal would act on: DEL, the C1
#: controls, bidirectional and zero-width format characters, line/paragraph separators
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def json_escape_controls(text: str) -> str:
    """JSON text with the characters of ``_JSON_UNSAFE`` written as ``\\uXXXX`` escapes
    (``json.dumps`` escapes only U+0000–U+001F): the same document, value for value, safe
    to print on a terminal. They can only stand inside strings, so the text stays valid."""
    if _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _finite_json(value: Any, path: str, found: list[str] | None) -> Any:
    """``value`` with every infinite float replaced by null; each is listed (its path
    from the nearest mapping with ``notes``, and its value) in a note of that mapping
    (the top-level document when there is none)."""
    if isinstance(value, dict):
        own = found is None or isinstance(value.get("notes"), list)
        here: list[str] = [] if own else found  # type: ignore[assignment]
        out = {k: _finite_json(v, k if own else f"{path}.{k}", here) for k, v in value.items()}
        if own and here:
            note = "infinite, written as null (JSON has no infinity): " + ", ".join(here)
            out["notes"] = [*out.get("notes", []), note]
        return out
    if isinstance(value, list):
        return [_finite_json(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        assert found is not None
        found.append(f"{path} = {value!r}")
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
            if key == "basis" and all(isinstance(v, Mapping) for v in value):
                out[name] = describe_all(value)  # basis objects: their short forms
            elif all(not isinstance(v, (Mapping, list, tuple)) for v in value):
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
    """One row per record, columns in order of first appearance. Values are exact (a
    control character is kept: CSV is for programs); a value holding a line break or a
    carriage return is quoted, so every record reads back as one row."""

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
        if any("\r" in v for v in row.values() if isinstance(v, str)):
            # a value with a carriage return (a design's name): exact, and quoted, which
            # the writer does only for its line terminator's characters
            one = io.StringIO()
            csv.DictWriter(one, fieldnames=columns, lineterminator="\r\n", restval="").writerow(
                row
            )
            buf.write(one.getvalue()[:-2] + "\n")
        else:
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


def bound_rows(
    results: Sequence[Mapping[str, Any]], *, details: bool = False
) -> tuple[list[str], list[list[str]]]:
    """The ``bound`` table: one row per design, then its per-unit rows (``sub_rows``)."""
    header = ["design", "scheme", "ε (M)", "ε′ lower", "ε′ upper", "δ′", "verdict", "guarantee"]
    header.append("bounds")  # tightness: exact, or how far apart (folds first)
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
                tightness_cell(r.get("tightness")),
            ]
        )
        rows.extend(sub_rows(r, len(header), "bound", details=details))
    return header, rows


def tightness_cell(t: Any) -> str:
    """``exact`` when the bounds meet (1e-9 relative), else ``×ratio, +gap nats``."""
    if not isinstance(t, Mapping):
        return DASH
    if t.get("exact"):
        return "exact"
    ratio = "" if t.get("ratio") is None else f"×{fmt(t['ratio'])}, "
    return f"{ratio}+{fmt(t.get('gap_nats'), 3)} nats"


def invert_rows(
    results: Sequence[Mapping[str, Any]], *, details: bool = False
) -> tuple[list[str], list[list[str]]]:
    """The ``invert`` table: one row per design, then its per-unit rows (``sub_rows``)."""
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
        rows.extend(sub_rows(r, len(header), "invert", details=details))
    return header, rows


#: Per-unit rows shown under a design unless ``--details`` asks for all of them.
SUB_ROWS_SHOWN = 5
#: How a per-unit row starts (``render_table`` tells sub-rows by their indentation).
SUB = "  └ "


def sub_rows(
    result: Mapping[str, Any], width: int, kind: str, *, details: bool = False
) -> list[list[str]]:
    """Indented rows under a design for its per-unit figures: ``details.strata``
    (stratified designs: per stratum ε′ for ``bound``, certified ε for ``invert``) or a
    pws design's privacy-cost frequencies. The first ``SUB_ROWS_SHOWN`` of them, then
    "… N more"; all with ``details``."""
    limit = None if details else SUB_ROWS_SHOWN
    if kind == "bound" and result.get("scheme") == "pws":
        return _pws_rows(result, width, limit)
    strata = (result.get("details") or {}).get("strata")
    if not isinstance(strata, (list, tuple)) or not strata:
        return []
    out = []
    for s in strata if limit is None else strata[:limit]:
        row = [""] * width
        row[0] = f"{SUB}{s.get('name', '')} (N={fmt(s.get('size'))}, m={fmt(s.get('sample'))})"
        if kind == "bound":
            ep = s.get("epsilon_prime") or {}
            row[3], row[4] = fmt(ep.get("lower")), fmt(ep.get("upper"))
        else:
            e = s.get("epsilon") or {}
            row[3], row[4] = fmt(e.get("certified")), fmt(e.get("impossible_above"))
        out.append(row)
    if limit is not None and len(strata) > limit:
        out.append(_more_row(width, len(strata) - limit, "strata", "--json"))
    return out


def _more_row(width: int, hidden: int, what: str, where: str) -> list[str]:
    row = [""] * width
    row[0] = f"{SUB}… {hidden} more {what}, see --details or {where}"
    return row


def _pws_rows(result: Mapping[str, Any], width: int, limit: int | None) -> list[list[str]]:
    """Indented rows under a pws design: the frequencies where π_i < q_i (privacy costs
    reporting); every frequency: ``ampcalc pws table``."""
    freq = (result.get("details") or {}).get("frequencies") or []
    rows = [f for f in freq if isinstance(f, Mapping) and f.get("pi", 1) < f.get("q", 1)]
    out = []
    for f in rows if limit is None else rows[:limit]:
        row = [""] * width
        row[0] = (
            f"{SUB}i={f['frequency']:<4} q={fmt(f['q'], 4):<9} π={fmt(f['pi'], 4):<9} "
            f"p={fmt(f['p'], 4):<9} SbH φ={fmt(f.get('phi_sbh'), 4)}"
        )
        out.append(row)
    if limit is not None and len(rows) > limit:
        out.append(_more_row(width, len(rows) - limit, "frequencies", "ampcalc pws table"))
    return out


HIDDEN_DETAILS = frozenset({"reference_epsilon", "tight", "inverse", "inverse_lower"})


def detail_line(details: Mapping[str, Any]) -> str | None:
    """The scalar ``details`` of a result on one line (nested tables are left out), each
    key in the plain words of ``terms.DETAIL_LABELS``."""
    parts = []
    for key, value in details.items():
        if key in HIDDEN_DETAILS or isinstance(value, (Mapping, list, tuple)):
            continue
        parts.append(f"{detail_label(key)} = {fmt(value)}")
    return "details: " + ", ".join(parts) if parts else None


def labelled(label: str, texts: Iterable[str] | None) -> list[str]:
    """``"label: text"`` for each text: one kind of remark (``warning``, ``note``, …)."""
    return [f"{label}: {t}" for t in texts or ()]


def bullets(heading: str, items: Sequence[str]) -> list[str]:
    """A text block under the table: ``heading:`` then one ``  - item`` line per item
    (none at all without items). ``render_table`` wraps the lines to the width at word
    boundaries, continuation lines indented under the item's text."""
    if not items:
        return []
    return [f"{heading}:", *(f"  - {i}" for i in items)]


def notes(results: Sequence[Mapping[str, Any]], *, basis: bool = True) -> list[str]:
    """The lines under a table: per design, its basis, details, errors, warnings (the
    user should act) and notes (context); one ``bullets`` block per design, each kind of
    remark through ``labelled``."""
    lines: list[str] = []
    for r in results:
        items: list[str] = []
        if r.get("error"):
            items.append(f"error: {r['error']}")
        if basis and r.get("basis"):
            items.append("basis: " + describe_all(r["basis"]))
        line = detail_line(r.get("details") or {})
        if line:
            items.append(line)
        items.extend(labelled("warning", _plain(r.get("warnings"))))
        items.extend(labelled("note", _plain(r.get("notes"))))
        lines.extend(bullets(r["name"], items))
    refs = references_footer(results)
    return lines + (with_glossary(refs) if lines or refs else [])


def _plain(texts: Iterable[str] | None) -> list[str]:
    """Remarks with the ``details.KEY`` they point to named as the table shows it."""
    return [plain_references(t) for t in texts or ()]


# ---- fitting a table to the width ------------------------------------------------------
