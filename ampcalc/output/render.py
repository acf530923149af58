"""Results -> text: a table for people (rich on a terminal, plain ASCII otherwise),
JSON and CSV for scripts. Nothing else happens here: no maths, no exit codes.

Column names in CSV are the JSON paths flattened with dots (``epsilon_prime.lower``).
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ampcalc.model.errors import printable
from ampcalc.model.references import describe_all, references_used
from ampcalc.model.references import footer as references_footer
from ampcalc.model.results import plain
from ampcalc.output.terms import detail_label, plain_references, with_glossary

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

#: The width when standard output is not a terminal and COLUMNS is unset.
DEFAULT_WIDTH = 80
#: Narrower than this, no table is readable; tables are drawn at least this wide.
MIN_WIDTH = 20
#: Column priorities by header: a table that does not fit folds its lowest-priority
#: column first (rightmost first among equals). ``KEEP`` columns (and the first column)
#: never fold; columns below ``FOLD_FIRST`` fold before any cell is wrapped.
KEEP = 100
FOLD_FIRST = 30
DEFAULT_PRIORITY = 50
PRIORITY: dict[str, int] = {
    "verdict": KEEP,
    "ε′ upper": KEEP,
    "certified ε": KEEP,
    "valid": KEEP,
    "gain": KEEP,
    "certified": KEEP,
    "ε′ lower": 70,
    "V_n/V_N": 70,
    "impossible above": 60,
    "impossible below": 60,
    "noise scale meeting the target": KEEP,
    "noise scale below which the target is impossible": 60,
    "target ε′": 55,
    "ε (M)": 45,
    "scheme": 40,
    "composed as": 25,
    "δ_n": 35,
    "δ′": 35,
    "δ (M)": 35,
    "guarantee": 10,
    "bounds": 15,
}
#: A column of sentences (a cell of five words or more) wraps before columns fold,
#: down to this width.
PROSE_WIDTH = 24
GAP = "  "
COLOURS = {
    "amplifies": "green",
    "degrades": "red",
    "no-amplification": "yellow",
    "no-guarantee": "yellow",
    "error": "red",
}


def terminal_width() -> int:
    """The width tables are drawn to: COLUMNS when set, else the terminal's width, else
    ``DEFAULT_WIDTH`` (standard output is a file or a pipe); at least ``MIN_WIDTH``."""

    columns = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return max(MIN_WIDTH, columns if columns > 0 else DEFAULT_WIDTH)


@functools.lru_cache(maxsize=4096)
def cells(text: str) -> int:
    """Display width of ``text`` in terminal cells."""
    import unicodedata  # lazy: start-up (bound)

    if text.isascii():
        return len(text)
    n = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


_LEAD = re.compile(r"^(\s*(?:(?:[-*•└…]|\d+\.)\s+)?)")


def wrap(text: str, width: int, *, break_long: bool = True) -> list[str]:
    """``text`` wrapped at spaces to ``width`` cells, each of its lines on its own.

    A line that fits is kept as it is. Continuation lines are indented like the text
    after a line's indentation and bullet (``  - ``, ``  └ ``), so a wrapped item stays
    under its bullet. A word is never split unless it alone is wider than the line and
    ``break_long`` is true (then it is cut, as the only way to fit)."""
    out: list[str] = []
    for line in text.split("\n"):
        out.extend(_wrap_line(line.rstrip(), max(1, width), break_long))
    return out


def _wrap_line(line: str, width: int, break_long: bool) -> list[str]:
    if cells(line) <= width:
        return [line]
    lead = _LEAD.match(line).group(1)  # type: ignore[union-attr]  # always matches
    hang = " " * cells(lead)
    if cells(hang) > width // 2:
        lead = hang = ""
    return _greedy([(w, " ") for w in line[len(lead) :].split()], width, lead, hang, break_long)


def _greedy(
    tokens: Sequence[tuple[str, str]], width: int, lead: str, hang: str, break_long: bool
) -> list[str]:
    """Fill lines greedily with ``(token, glue before it)``; the first line starts with
    ``lead``, the others with ``hang``."""
    lines: list[str] = []
    cur, filled = lead, False
    for word, glue in tokens:
        joined = cur + (glue if filled else "") + word
        if cells(joined) <= width:
            cur, filled = joined, True
            continue
        if filled:
            lines.append(cur.rstrip())
            cur, filled = hang, False
        while break_long and cells(cur + word) > width and width > cells(cur):
            cut = _cut(word, width - cells(cur))
            lines.append(cur + word[:cut])
            cur, word = hang, word[cut:]
        cur, filled = cur + word, True
    if filled or not lines:
        lines.append(cur.rstrip())
    return lines


def _cut(word: str, room: int) -> int:
    """How many characters of ``word`` fill ``room`` cells (at least one)."""
    used = 0
    for i, ch in enumerate(word):
        used += cells(ch)
        if used > room:
            return max(1, i)
    return len(word)


def _header_tokens(text: str) -> list[tuple[str, str]]:
    """A header's break opportunities: at spaces, and after a ``_`` or ``.`` between two
    words of three letters or more (so ``noise_variance_optimistic`` wraps between its
    words, never inside one, and ``V_n`` stays whole)."""
    out: list[tuple[str, str]] = []
    for word in text.split():
        segs = re.split(r"([_.])", word)
        cur, glue = segs[0], " "
        for sep, seg in zip(segs[1::2], segs[2::2], strict=True):
            last = re.split(r"[_.]", cur)[-1]
            if len(last) >= 3 and len(seg) >= 3:
                out.append((cur + sep, glue))
                cur, glue = seg, ""
            else:
                cur += sep + seg
        out.append((cur, glue))
    return out


def _header_lines(text: str, width: int) -> list[str]:
    return _greedy(_header_tokens(text), width, "", "", False)


def _longest(tokens: Iterable[str]) -> int:
    return max((cells(t) for t in tokens), default=0)


def _is_sub(row: Sequence[str]) -> bool:
    return bool(row) and row[0][:1].isspace()


def _spans(row: Sequence[str]) -> bool:
    """A per-unit row with only its first cell: drawn across the whole width."""
    return _is_sub(row) and not any(c.strip() for c in row[1:])


class _Layout:
    """Which columns a table shows at a width, how wide, and which fold."""

    def __init__(self, header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> None:
        self.header = list(header)
        self.width = width
        n = len(header)
        body = [list(r) + [""] * (n - len(r)) for r in rows]
        self.rows = body
        grid = [r for r in body if not _spans(r)]
        main = [r for r in body if not _is_sub(r)]
        cap = max(8, width // 4)
        self.natural: list[int] = []
        self.least: list[int] = []
        for i in range(n):
            col = [r[i] for r in (main if i == 0 else grid)]
            self.natural.append(_longest(col))
            if i == 0:
                least = 0
                for r in grid:
                    lead = _LEAD.match(r[0]).group(1)  # type: ignore[union-attr]
                    words = r[0][len(lead) :].split()
                    least = max(least, min(cap, cells(lead) + _longest(words)))
                self.least.append(least)
            else:
                self.least.append(_longest(w for c in col for w in c.split()))
        self.wish = _longest(r[0] for r in grid)  # the first column with its sub-rows
        self.head_natural = [cells(h) for h in header]
        self.head_least = [_longest(t for t, _ in _header_tokens(h)) for h in header]
        self.priority = [
            KEEP if i == 0 else PRIORITY.get(h, DEFAULT_PRIORITY) for i, h in enumerate(header)
        ]
        self.left = [i < 2 or any(" " in r[i].strip() for r in main) for i in range(n)]
        self.shown = list(range(n))
        self.folded: list[int] = []  # shown under each row as "header: value"
        self.constant: list[tuple[int, str]] = []  # stated once: the same in every row
        self.records = False  # no columns at all: one block of lines per row
        self.widths = self._fit()

    # -- the fitting steps ---------------------------------------------------------------
    def _need(self, cols: Sequence[int], cell: Sequence[int], head: Sequence[int]) -> int:
        return sum(max(cell[i], head[i]) for i in cols) + cells(GAP) * (len(cols) - 1)

    def _fits_unwrapped(self) -> bool:
        return self._need(self.shown, self.natural, self.head_least) <= self.width

    def _fits_wrapped(self) -> bool:
        return self._need(self.shown, self.least, self.head_least) <= self.width

    def _value_in_every_row(self, i: int) -> str | None:
        """The value of column ``i`` when it is the same in every row (of two or more)."""
        main = {r[i] for r in self.rows if not _is_sub(r)}
        subs = {r[i] for r in self.rows if _is_sub(r) and r[i].strip()}
        count = sum(1 for r in self.rows if not _is_sub(r))
        return main.pop() if count > 1 and len(main) == 1 and subs <= main else None

    def _fold(self, i: int) -> None:
        self.shown.remove(i)
        value = self._value_in_every_row(i)
        if value is not None:
            self.constant.append((i, value))
        else:
            self.folded.append(i)

    def _order(self, below: int) -> list[int]:
        """Columns to fold, in order: any column the same in every row (stated once,
        nothing is lost), then those of priority below ``below``, lowest first."""
        cand = [i for i in self.shown if i != 0 and self.priority[i] < KEEP]
        same = [i for i in cand if self._value_in_every_row(i) is not None]
        if 0 in self.shown and len(self.shown) > 1 and self._value_in_every_row(0) is not None:
            if not any(_is_sub(r) for r in self.rows):  # a sweep of one design
                same.append(0)
        rest = [i for i in cand if i not in same and self.priority[i] < below]
        return [
            *sorted(same, key=lambda i: (self.priority[i], -i)),
            *sorted(rest, key=lambda i: (self.priority[i], -i)),
        ]

    def _fit(self) -> dict[int, int]:
        n = len(self.header)
        if self._need(self.shown, self.natural, self.head_natural) <= self.width:
            return {i: max(self.natural[i], self.head_natural[i]) for i in range(n)}
        # headers wrap at their word breaks, prose columns wrap (no narrower than
        # PROSE_WIDTH); then low-priority columns fold, one by one
        prose = [
            i
            for i in self.shown
            if i and any(r[i].count(" ") >= 4 for r in self.rows if not _is_sub(r))
        ]
        if prose:
            cell = [
                max(self.least[i], min(self.natural[i], PROSE_WIDTH)) if i in prose else w
                for i, w in enumerate(self.natural)
            ]
            if self._need(self.shown, cell, self.head_least) <= self.width:
                return self._spread()
        for i in [None, *self._order(FOLD_FIRST)]:
            if i is not None:
                self._fold(i)
            if self._fits_unwrapped():
                return self._spread()
        # then cells wrap at spaces; then more columns fold, lowest priority first
        for i in [None, *self._order(KEEP)]:
            if i is not None:
                self._fold(i)
            if self._fits_unwrapped() or self._fits_wrapped():
                return self._spread()
        self.records = True
        return {}

    def _spread(self) -> dict[int, int]:
        """Widths for the shown columns: as wide as their content where the width allows,
        the widest columns narrowed first (never below a whole word)."""
        lo = {i: max(self.least[i], self.head_least[i]) for i in self.shown}
        hi = {i: max(self.natural[i], self.head_least[i], lo[i]) for i in self.shown}
        room = self.width - cells(GAP) * (len(self.shown) - 1)
        level = max(hi.values(), default=0)
        widths = {i: hi[i] for i in self.shown}
        while sum(widths.values()) > room and level > 0:
            level -= 1
            widths = {i: max(lo[i], min(hi[i], level)) for i in self.shown}
        spare = room - sum(widths.values())
        if 0 in widths:  # room left: per-unit rows under the first column unwrapped
            grow = max(0, min(spare, self.wish - widths[0]))
            widths[0] += grow
            spare -= grow
        for i in self.shown:  # headers back on one line where there is room
            grow = min(spare, max(0, self.head_natural[i] - widths[i]))
            if grow and widths[i] + grow >= self.head_natural[i]:
                widths[i] += grow
                spare -= grow
        return widths

    # -- drawing ------------------------------------------------------------------------
    def lines(self, rule: str) -> list[list[tuple[str, str | None]]]:
        """The table as lines of ``(text, style)`` pieces (style: None, ``bold`` or a
        verdict's colour)."""
        out: list[list[tuple[str, str | None]]] = []
        if self.records:
            for row in self.rows:
                out.extend(self._record(row))
            return out
        heads = {i: _header_lines(self.header[i], self.widths[i]) for i in self.shown}
        depth = max((len(h) for h in heads.values()), default=1)
        for k in range(depth):
            cells_k = []
            for i in self.shown:
                h = heads[i]
                text = h[k] if k < len(h) else ""
                cells_k.append(self._pad(text, i))
            out.append([(GAP.join(cells_k).rstrip(), "bold")])
        out.append([(GAP.join(rule * self.widths[i] for i in self.shown), None)])
        for row in self.rows:
            out.extend(self._row(row))
        for i, value in sorted(self.constant):
            out.extend(
                [(t, None)] for t in wrap(f"{self.header[i]} = {value} in every row", self.width)
            )
        return out

    def _pad(self, text: str, i: int) -> str:
        fill = " " * max(0, self.widths[i] - cells(text))
        return text + fill if self.left[i] else fill + text

    def _row(self, row: Sequence[str]) -> list[list[tuple[str, str | None]]]:
        if _spans(row):
            return [[(t, None)] for t in wrap(row[0], self.width)]
        parts = {i: wrap(row[i], self.widths[i], break_long=i == 0) for i in self.shown}
        depth = max(len(p) for p in parts.values())
        out = []
        for k in range(depth):
            line: list[tuple[str, str | None]] = []
            for j, i in enumerate(self.shown):
                text = parts[i][k] if k < len(parts[i]) else ""
                if j:
                    line.append((GAP, None))
                line.append((self._pad(text, i), COLOURS.get(text.strip())))
            out.append(_rstrip(line))
        extra = [f"{self.header[i]}: {row[i]}" for i in self.folded if row[i].strip(" " + DASH)]
        if extra:
            out.extend([(t, None)] for t in wrap("    " + "; ".join(extra), self.width))
        return out

    def _record(self, row: Sequence[str]) -> list[list[tuple[str, str | None]]]:
        out = [[(t, "bold" if not _is_sub(row) else None)] for t in wrap(row[0], self.width)]
        for i in range(1, len(self.header)):
            if row[i].strip():
                for t in wrap(f"    {self.header[i]}: {row[i]}", self.width):
                    out.append([(t, COLOURS.get(row[i].strip()) if t.endswith(row[i]) else None)])
        return out


def _rstrip(line: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    while line and not line[-1][0].strip():
        line.pop()
    if line:
        text, style = line[-1]
        line[-1] = (text.rstrip(), style)
    return line


def table_lines(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    footer: Sequence[str] = (),
    *,
    width: int | None = None,
    title: str | None = None,
    rule: str = "-",
) -> list[list[tuple[str, str | None]]]:
    """The lines of a table fitted to ``width`` (default ``terminal_width()``), as
    ``(text, style)`` pieces: no line is wider than the width.

    Fitting, in order, until the table fits: headers wrap at word breaks; columns
    the same in every row are dropped (stated once under the table: "δ′ = 0 in every
    row"), then low-priority columns (``PRIORITY`` below ``FOLD_FIRST``: guarantee)
    fold; cells wrap at spaces; other columns fold, lowest priority first; at last
    each row becomes a block of ``header: value`` lines. A folded column's values
    appear under their row as ``header: value`` (unknown values, ``-``, left out).
    Numbers, verdicts and other single words are never split (only an over-long word
    of the first column is). ``footer`` lines are wrapped at word boundaries, continuation
    lines indented under their bullet. Control and bidirectional characters in any of
    the texts are shown escaped (``model.errors.printable``).
    """
    w = max(MIN_WIDTH, width if width is not None else terminal_width())
    # a design's name, a stratum's, a warning quoting a file: a person reads these on a
    # terminal, so no control or bidirectional character reaches it (JSON and CSV keep
    # the exact text)
    header = [printable(h) for h in header]
    rows = [r if "".join(r).isprintable() else [printable(c) for c in r] for r in rows]
    footer = [printable(f, keep="\n") for f in footer]
    title = printable(title) if title else title
    out: list[list[tuple[str, str | None]]] = []
    if title:
        out.extend([(t, "bold")] for t in wrap(title, w))
    out.extend(_Layout(header, rows, w).lines(rule))
    if footer:
        out.append([])
        for line in footer:
            out.extend([(t, None)] for t in wrap(line, w))
    return out


def render_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    footer: Sequence[str],
    *,
    rich_output: bool,
    title: str | None = None,
    width: int | None = None,
) -> str:
    """A table plus its notes, fitted to ``width`` (``table_lines``): bold headers and
    coloured verdicts on a terminal (colour unless NO_COLOR), plain text otherwise."""
    w = max(MIN_WIDTH, width if width is not None else terminal_width())
    lines = table_lines(
        header, rows, footer, width=w, title=title, rule="━" if rich_output else "-"
    )
    if not rich_output:
        return "".join("".join(t for t, _ in line) + "\n" for line in lines)
    from rich.console import Console  # lazy: start-up (bound)
    from rich.text import Text  # lazy: start-up (bound)

    text = Text()
    for line in lines:
        for piece, style in line:
            text.append(piece, style=style or "")
        text.append("\n")
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=w, highlight=False)
    console.print(text, soft_wrap=True, end="")
    return buffer.getvalue()
