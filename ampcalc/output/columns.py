"""JSON and CSV written from result columns, streamed in chunks of rows.

The text is byte for byte what ``render.render_json`` (``json.dumps(..., indent=2,
ensure_ascii=False, allow_nan=False)``) and ``render.render_csv`` write for the same
rows, without a dict per row: each column of a chunk is formatted once
(``cells.chunk_cells``; a constant column once for the whole output, a column equal to
an earlier one shares its texts), the rows are joined from those texts
(``cells.join_rows``, or ``arrow_rows.rows_arrow`` for a large output when pyarrow is
installed), and the chunks are yielded as they are made, so memory stays bounded.

A value whose text the writer cannot reproduce exactly (an infinite float, a list or
mapping inside a cell) is found before anything is written: ``json_chunks`` then
returns ``None`` and the caller renders the document the usual way.
"""

from __future__ import annotations

import collections
import functools
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ampcalc.analyses.sweep import SweepStream
from ampcalc.model.results import plain
from ampcalc.output.arrow_rows import arrow_join, rows_arrow
from ampcalc.output.cells import (
    Fixed,
    Known,
    NotExact,
    chunk_cells,
    column_texts,
    csv_cell,
    float_bits,
    is_constant,
    join_rows,
    json_cell,
)
from ampcalc.output.float_text import float_bytes
from ampcalc.output.records_csv import rows_text
from ampcalc.output.render import envelope

if TYPE_CHECKING:
    from ampcalc.analyses.sweep import Sweep, SweepStream

#: a piece of output: text, or UTF-8 bytes (assembled by arrow in ``rows_arrow``, or
#: orjson's respelt floats)
Piece = str | bytes | memoryview

#: rows formatted and written at a time (bounded memory: ~7 MB of JSON text per chunk)
CHUNK = 1 << 14

#: a grid's JSON list keeps the texts of its first values this far, for the rows that
#: show them (~40 MB: a longer grid's later rows format their own)
KNOWN_ROWS = 1 << 21


def _fixed_texts(columns: Sequence[np.ndarray], kind: str) -> list[str | None]:
    """``Fixed``, checked once for the whole output instead of once per chunk (a chunk
    of an object column is a list of Python objects: ~0.5 ms per 16,384 rows each
    time); a column that changes within its first chunk is not checked further.
    Raises ``NotExact`` for a JSON value the writer cannot reproduce."""
    return [
        column_texts(c[:1], kind)[0] if is_constant(c[:CHUNK]) and is_constant(c) else None
        for c in columns
    ]


#: outputs of at least this many rows are assembled by pyarrow when it is installed: below
#: it, importing pyarrow (~0.1 s) costs more than it saves (~0.4 µs a row)
ARROW_FROM = 200_000


def prefetch(rows: int) -> None:
    """Import pyarrow's compute functions in a background thread when an output of
    ``rows`` rows will use them, so that the import overlaps the caller's computation
    (numpy releases the GIL) instead of delaying the first chunk."""
    if rows >= ARROW_FROM:
        # not a daemon: an early exit waits for the import instead of cutting it short
        threading.Thread(target=arrow_join, name="ampcalc-import").start()


#: threads formatting chunks of a large output at once (arrow's join and numpy's loops
#: release the GIL); 1 formats them in the caller's thread
WORKERS = 2


def _in_order(
    make: Callable[[int, int], Piece], n: int, parallel: bool
) -> Iterator[tuple[int, Piece]]:
    """``(start, make(start, stop))`` for the chunks of ``n`` rows, in order; with
    ``parallel``, made by ``WORKERS`` threads a few chunks ahead of the one returned."""
    bounds = [(start, min(start + CHUNK, n)) for start in range(0, n, CHUNK)]
    for (start, _), text in _ordered(lambda b: make(*b), bounds, parallel and len(bounds) >= 2):
        yield start, text


def _ordered(
    make: Callable[[Any], Piece], tasks: Iterable[Any], parallel: bool
) -> Iterator[tuple[Any, Piece]]:
    """``(task, make(task))`` for each of ``tasks``, in order; with ``parallel``, made by
    ``WORKERS`` threads a few tasks ahead of the one returned (``tasks`` is read as
    far ahead: a lazy iterator makes its items no earlier than that)."""
    if not parallel or WORKERS < 2:
        for task in tasks:
            yield task, make(task)
        return
    with ThreadPoolExecutor(WORKERS, thread_name_prefix="ampcalc-rows") as pool:
        ahead: collections.deque[Any] = collections.deque()
        try:
            for task in tasks:
                ahead.append((task, pool.submit(make, task)))
                if len(ahead) > 2 * WORKERS:
                    first, made = ahead.popleft()
                    yield first, made.result()
            while ahead:
                first, made = ahead.popleft()
                yield first, made.result()
        finally:  # stopped early (a closed pipe): drop what is not started
            for _, made in ahead:
                made.cancel()


@dataclass(frozen=True)
class Blocks:
    """Columns too large to hold at once: their ``names``, the number of ``rows``, and
    ``make()``, which gives the rows again as successive blocks (each a mapping of
    every name to that block's values). The caller has checked that every value can
    be written exactly (``_scan``)."""

    names: Sequence[str]
    rows: int
    make: Callable[[], Iterable[Mapping[str, np.ndarray]]]


#: a chunk of rows to format: the block's columns, the block's first row in the
#: output, and the chunk's rows [start, stop) in the block
Task = tuple[Sequence[np.ndarray], int, int, int]


def _tasks(blocks: Iterable[Sequence[np.ndarray]]) -> Iterator[Task]:
    """The chunks of ``CHUNK`` rows of each block in turn (a block is made when the
    chunks before it are handed out)."""
    first_row = 0
    for cols in blocks:
        m = len(cols[0]) if cols else 0
        for start in range(0, m, CHUNK):
            yield cols, first_row, start, min(start + CHUNK, m)
        first_row += m


def _source(
    columns: Mapping[str, np.ndarray] | Blocks, kind: str
) -> tuple[list[str], int, Fixed | None, Callable[[], Iterator[Task]]]:
    """Names, rows, ``Fixed`` and the chunks of ``columns`` (held or in ``Blocks``);
    raises ``NotExact`` for JSON held columns the writer cannot reproduce."""
    if isinstance(columns, Blocks):
        blocks = columns
        names = list(blocks.names)

        def each() -> Iterator[list[np.ndarray]]:
            for block in blocks.make():
                yield [np.asarray(block[k]) for k in names]

        return names, blocks.rows, None, lambda: _tasks(each())
    names = list(columns)
    cols = [np.asarray(columns[k]) for k in names]
    n = len(cols[0]) if cols else 0
    fixed = _fixed_texts(cols, kind)
    if kind == "json":
        _scan([c for c, one in zip(cols, fixed, strict=True) if one is None])
    return names, n, fixed, lambda: _tasks([cols])


def _scan(cols: Sequence[np.ndarray]) -> None:
    """Raise ``NotExact`` unless every cell can be written exactly (checked up front,
    so the output never stops half-way): no infinite float, only scalars in objects."""
    for c in cols:
        if c.dtype.kind == "f" and bool(np.isinf(c).any()):
            raise NotExact
        if c.dtype.kind == "O":
            values = c.tolist()
            # list.count compares identity first, in C: a column of one string is fast
            if values and values.count(values[0]) == len(values):
                distinct = values[:1]
            else:
                try:
                    distinct = list(set(values))
                except TypeError:  # unhashable: a list or a mapping
                    raise NotExact from None
            for v in distinct:
                json_cell(v)


def rows_segment(
    columns: Mapping[str, np.ndarray] | Blocks, depth: int, known: Known | None = None
) -> Iterator[Piece]:
    """A JSON list of one object per row (keys in column order), its items at ``depth``
    levels of ``indent=2``; raises ``NotExact`` (before yielding) if it cannot be exact."""
    names, n, fixed, tasks = _source(columns, "json")
    pad = " " * (2 * depth)
    keys = [json.dumps(k, ensure_ascii=False) for k in names]
    pieces = [pad + "{\n" + pad + "  " + keys[0] + ": "] if keys else []
    pieces += [",\n" + pad + "  " + k + ": " for k in keys[1:]]
    pieces.append("\n" + pad + "}")

    def chunks() -> Iterator[Piece]:
        if n == 0:
            yield "[]"
            return
        if not keys:
            yield "[\n" + ",\n".join([pad + "{}"] * n) + "\n" + pad[:-2] + "]"
            return
        join = arrow_join() if n >= ARROW_FROM else None

        def rows(task: Task) -> Piece:
            cols, first_row, start, stop = task
            fast = join and rows_arrow(
                join, pieces, cols, start, stop, "json", ",\n", known, fixed, first_row
            )
            if fast:
                return fast
            texts = chunk_cells(cols, start, stop, "json", known, fixed, first_row)
            return join_rows(pieces, texts, stop - start, ",\n")

        first = True
        for _, text in _ordered(rows, tasks(), join is not None and n > CHUNK):
            yield "[\n" if first else ",\n"
            yield text
            first = False
        yield "\n" + pad[:-2] + "]"

    return chunks()


def list_segment(
    values: Sequence[Any], depth: int, array: np.ndarray | None = None, known: Known | None = None
) -> Iterator[Piece]:
    """A JSON list of scalars, its items at ``depth`` levels of ``indent=2``, in chunks;
    raises ``NotExact`` (before yielding) if it cannot be exact. ``array``: the values
    as a float array, when the caller knows that every value is a float."""
    arr = array
    if arr is None and values and set(map(type, values)) == {float}:
        arr = np.asarray(values, dtype=float)
    if arr is not None:
        _scan([arr])
    else:
        for v in set(values) if all(type(v) in (int, str) for v in values) else values:
            json_cell(v)
    pad = " " * (2 * depth)
    n = len(values)

    between = ",\n" + pad

    def items(start: int, stop: int) -> Piece:
        raw = float_bytes(arr[start:stop]) if arr is not None else None
        if raw is not None:
            if known is not None and arr is not None and start < KNOWN_ROWS:
                known[(start, stop)] = (float_bits(arr[start:stop]), raw)  # the rows may show them
            return raw.replace(b",", between.encode())
        if arr is not None:
            return between.join(column_texts(arr[start:stop], "json"))
        return between.join([json_cell(v) for v in values[start:stop]])

    def chunks() -> Iterator[Piece]:
        if n == 0:
            yield "[]"
            return
        # a long float list (a sweep's grid) is formatted on the row writer's threads
        for start, text in _in_order(items, n, arr is not None and n >= ARROW_FROM):
            yield ("[\n" if start == 0 else ",\n") + pad
            yield text
        yield "\n" + pad[:-2] + "]"

    return chunks()


def json_chunks(
    document: Mapping[str, Any], segments: Mapping[str, Callable[[], Iterator[Piece]]]
) -> Iterator[Piece] | None:
    """``render.render_json(document)`` in chunks, where ``document`` holds the keys of
    ``segments`` as placeholder strings and each segment writes the list standing there.
    ``None`` when the chunks could not be the same bytes (render the usual way)."""
    doc = plain(dict(document))
    try:
        head = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError:
        return None
    parts: list[str | Iterator[Piece]] = []
    rest = head
    try:
        for key, make in segments.items():
            marker = json.dumps(key, ensure_ascii=False)
            if rest.count(marker) != 1:
                return None
            before, rest = rest.split(marker)
            parts += [before, make()]
    except NotExact:
        return None
    parts.append(rest)

    def chunks() -> Iterator[Piece]:
        for p in parts:
            if isinstance(p, str):
                yield p
            else:
                yield from p

    return chunks()


def placeholder(name: str) -> str:
    """A placeholder string for ``json_chunks`` (NUL-delimited: no design text has it)."""
    return "\x00ampcalc:" + name + "\x00"


def csv_chunks(columns: Mapping[str, np.ndarray] | Blocks) -> Iterator[Piece]:
    """``render.render_csv``'s text of the rows, in chunks: a header, then one line per
    row."""
    names, n, fixed, tasks = _source(columns, "csv")
    yield ",".join(csv_cell(k) for k in names) + "\n"
    if not names:
        return
    pieces = ["", *[","] * (len(names) - 1), ""]
    join = arrow_join() if n >= ARROW_FROM else None

    def rows(task: Task) -> Piece:
        cols, _, start, stop = task
        fast = join and rows_arrow(join, pieces, cols, start, stop, "csv", "\n", None, fixed)
        if fast:
            return fast
        texts = chunk_cells(cols, start, stop, "csv", None, fixed)
        return join_rows(pieces, texts, stop - start, "\n")

    for _, text in _ordered(rows, tasks(), join is not None and n > CHUNK):
        yield text
        yield "\n"


def table_json_chunks(
    command: str,
    version: str,
    payload: Mapping[str, Any],
    key: str,
    columns: Mapping[str, np.ndarray],
) -> Iterator[Piece] | None:
    """The JSON envelope of ``{**payload, key: rows}`` with the rows (one object each,
    keys in column order, NaN as null) written from ``columns``; ``None``: render the
    usual way."""
    mark = placeholder(key)
    doc = envelope(command, version, {**payload, key: mark})
    return json_chunks(doc, {mark: lambda: rows_segment(columns, 2)})


# --- a sweep's CSV and JSON, from its columns --------------------------------------------


def sweep_csv(sweep: Sweep | SweepStream, out: Any) -> None:
    """CSV, one row per point (floats as ``repr``; null as an empty cell; RFC 4180
    quoting), written from the columns in chunks (``csv_chunks``)."""
    for chunk in csv_chunks(sweep_columns(sweep)):
        out.write(chunk if isinstance(chunk, str) else str(chunk, "utf-8"))


def text(pieces: Iterable[Piece]) -> str:
    """The pieces joined into one text (bytes pieces decoded)."""
    return "".join(p if isinstance(p, str) else str(p, "utf-8") for p in pieces)


def sweep_columns(sweep: Sweep | SweepStream) -> Mapping[str, np.ndarray] | Blocks:
    """A sweep's columns: held (``Sweep``), or made again a block at a time as they are
    written (``SweepStream``, checked to be exact when it was made)."""
    if isinstance(sweep, SweepStream):
        return Blocks(sweep.column_names(), len(sweep), sweep.blocks)
    return sweep.columns


def sweep_json_chunks(sweep: Sweep | SweepStream, version: str) -> Iterator[Piece] | None:
    """``render.render_json`` of the sweep's envelope, written from the columns in
    chunks (same bytes, bounded memory); ``None``: render ``document`` the usual way."""
    segments: dict[str, Callable[[], Iterator[Piece]]] = {}
    vary = []
    known: Known = {}  # the first varied values' texts, for the rows that show them
    for i, v in enumerate(sweep.varies):
        key = placeholder(f"vary{i}")
        shared = known if i == 0 else None
        segments[key] = functools.partial(list_segment, v.values, 4, v.floats(), shared)
        vary.append({"path": v.path, "values": key, "log": v.log})
    rows = placeholder("rows")
    segments[rows] = lambda: rows_segment(sweep_columns(sweep), 2, known)
    doc = {
        "of": sweep.of,
        "vary": vary,
        "designs": [{"name": k, **v} for k, v in sweep.designs.items()],
        "columns": sweep.column_names(),
        "rows": rows,
    }
    return json_chunks(envelope("sweep", version, doc), segments)


def savetxt_rows(block: Any, *, int_first: bool) -> str:
    """``np.savetxt(block, delimiter=",", fmt=...)``'s text (``%d`` first when
    ``int_first``, then ``%.17g``), formatted column-wise in numpy with the same bytes
    (``records_csv.rows_text``; rows it cannot prove go through ``%`` itself)."""
    if block.shape[0] == 0:
        return ""
    cols = [block[:, j] for j in range(block.shape[1])]
    return rows_text(cols, int_first=int_first).decode("ascii")
