"""The text of each cell of a chunk of result columns, and the rows made from them.

A chunk of one column becomes one text when every row holds the same value, else the
text of each cell: floats as ``float.__repr__`` (``float_text``; NaN as ``null`` in
JSON, an empty cell in CSV), integers as ``int.__repr__``, strings ``json.dumps``'d or
RFC 4180-quoted once per distinct value. ``join_rows`` fills the rows: one
``str.join`` over the texts interleaved with the constant pieces between them.
``NotExact`` is raised for a value whose ``json.dumps(indent=2)`` text this cannot
reproduce (an infinite float, a list or mapping inside a cell).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ampcalc.model.results import plain
from ampcalc.output.float_text import float_texts


class NotExact(Exception):
    """A value the column writer cannot reproduce byte for byte."""


def json_cell(value: Any) -> str:
    """A scalar's ``json.dumps`` text (NaN as ``null``); ``NotExact`` otherwise."""
    v = plain(value)
    if v is None or isinstance(v, (str, bool, int)):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, float):
        if v != v:
            return "null"
        if v in (float("inf"), float("-inf")):
            raise NotExact
        return float.__repr__(v)
    raise NotExact  # lists and mappings are indented over several lines


def csv_cell(value: Any) -> str:
    """A value's CSV cell: ``str`` of it (None: empty), RFC 4180-quoted when needed."""
    text = "" if value is None else str(value)
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def column_texts(arr: np.ndarray, kind: str) -> list[str]:
    """One column (a chunk of it) as the JSON or CSV text of each cell."""
    k = arr.dtype.kind
    if k == "f":
        if kind == "json" and bool(np.isinf(arr).any()):
            raise NotExact  # json.dumps(allow_nan=False) refuses it
        return float_texts(arr.astype(float, copy=False), "null" if kind == "json" else "")
    if k in "iu":
        return list(map(int.__repr__, arr.tolist()))
    cell: Callable[[Any], str] = json_cell if kind == "json" else csv_cell
    if kind == "json" and k == "b":
        return ["true" if v else "false" for v in arr.tolist()]
    cache: dict[Any, str] = {}
    out: list[str] = []
    for v in arr.tolist():
        try:
            out.append(cache[v])
        except KeyError:
            out.append(cache.setdefault(v, cell(v)))
        except TypeError:  # unhashable
            out.append(cell(v))
    return out


def float_bits(arr: np.ndarray) -> np.ndarray:
    """The bit patterns of ``arr`` as float64 (equal floats, -0.0 apart from 0.0)."""
    return np.ascontiguousarray(arr, dtype=np.float64).view(np.int64)


def is_constant(arr: np.ndarray) -> bool:
    """Whether every value of ``arr`` (not empty) is the same, to the bit for floats
    (or all NaN); an object column only when it is one element repeated (a view of
    stride 0) or holds one string, or None, throughout."""
    if len(arr) == 0:
        return False
    if arr.strides == (0,):  # a view of one element (``sweep._objects``)
        return True
    if arr.dtype.kind == "f":  # bit patterns: -0.0 is not 0.0 here
        bits = float_bits(arr)
        return bool(np.all(bits == bits[0])) or bool(np.all(np.isnan(arr)))
    if arr.dtype.kind == "O":
        values = arr.tolist()
        first = values[0]
        # list.count compares identity first, in C: an object column of one string is fast
        return (first is None or isinstance(first, str)) and values.count(first) == len(values)
    return bool(np.all(arr == arr[0]))


#: a chunk of one column: its one text (constant), or "%s" and the text of each cell
#: (a column equal to an earlier one shares its texts: each float is formatted once)
Cells = str | tuple[str, list[Any]]


#: texts already made for a float list: (start, stop) -> (its bits, its texts joined by
#: commas); a column of the same values in the same rows reuses them
Known = dict[tuple[int, int], tuple[np.ndarray, bytes]]


#: per column of a whole output: its one text when every row holds the same value
#: (``columns._fixed_texts``), else None (its chunks are then formatted cell by cell)
Fixed = Sequence[str | None]


def chunk_cells(
    columns: Sequence[np.ndarray],
    start: int,
    stop: int,
    kind: str,
    known: Known | None = None,
    fixed: Fixed | None = None,
    first_row: int = 0,
) -> list[Cells]:
    """Per column: the texts (or floats) of rows [start, stop), or one text if constant
    (``first_row``: the row of the output where ``columns`` start, for ``known``)."""
    out: list[Cells] = []
    formatted: list[tuple[str, np.ndarray, Cells]] = []  # (dtype, values, their cells)
    known_texts = (known or {}).pop((first_row + start, first_row + stop), None)
    for j, col in enumerate(columns):
        if fixed is not None and fixed[j] is not None:
            out.append(fixed[j])  # type: ignore[arg-type]  # not None: checked
            continue
        part = col[start:stop]
        key = float_bits(part) if part.dtype.kind == "f" else part
        cells = next(
            (t for k, a, t in formatted if k == part.dtype.str and np.array_equal(a, key)),
            None,
        )
        if cells is None and known_texts is not None and part.dtype.kind == "f":
            if np.array_equal(known_texts[0], key):  # finite floats: same texts in JSON and CSV
                cells = ("%s", known_texts[1].decode("ascii").split(","))
                formatted.append((part.dtype.str, key, cells))
        if cells is None:
            if is_constant(part):
                cells = column_texts(part[:1], kind)[0]
            else:
                cells = ("%s", column_texts(part, kind))
            if part.dtype.kind != "O":
                formatted.append((part.dtype.str, key, cells))
        out.append(cells)
    return out


def join_rows(
    pieces: Sequence[str], cells: list[Cells], n: int, joiner: str, end: str = ""
) -> str:
    """``pieces[0] cell0 pieces[1] cell1 ... pieces[-1]`` per row, rows joined, then
    ``end``: one ``str.join`` over the texts interleaved with the constant pieces."""
    consts = [pieces[0]]
    variable: list[list[Any]] = []
    for piece, cell in zip(pieces[1:], cells, strict=True):
        if isinstance(cell, str):
            consts[-1] += cell + piece
        else:
            variable.append(cell[1])
            consts.append(piece)
    if not variable:
        return joiner.join([consts[0]] * n) + end
    if n == 0:
        return end
    # per row: consts[0] v0 consts[1] v1 ... consts[-1]; the joiner opens each row but
    # the first (the last constant of a row and the next row's first are one string)
    width = 2 * len(variable)
    out: list[Any] = [None] * (n * width + 1)
    out[0] = consts[0]
    between = consts[-1] + joiner + consts[0]
    for j, texts in enumerate(variable):
        out[2 * j + 1 :: width] = texts
        if j + 1 < len(variable):
            out[2 * j + 2 :: width] = [consts[j + 1]] * n
    out[width::width] = [between] * (n - 1) + [consts[-1] + end]
    return "".join(out)
