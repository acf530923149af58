"""JSON and CSV straight from result columns, streamed in chunks, same bytes as before.

A sweep of 10⁶ points used to become 10⁶ row dicts, a recursive ``plain`` pass and one
``json.dumps(indent=2)`` string (pure-Python encoder, ~3 GB); its CSV was formatted
cell by cell. Here each column is formatted once per chunk of rows (a constant column
once, a column equal to an earlier one reuses its text), rows are filled into one
``%`` template, and chunks are written as they are made. The text is byte for byte
what ``render.render_json`` (``json.dumps(..., indent=2, ensure_ascii=False,
allow_nan=False)``) and ``sweep.write_csv`` produced: floats are ``float.__repr__``
(shortest round trip, as ``json`` writes them), NaN is ``null``/an empty cell, strings
are ``json.dumps``'d / RFC 4180-quoted once per distinct value.

Anything this writer does not reproduce exactly (an infinite float, a list or mapping
inside a cell) makes ``rows_json`` return ``None``; the caller then takes the old path.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ampcalc.model.results import plain

if TYPE_CHECKING:
    from ampcalc.analyses.sweep import Sweep, SweepStream

#: a piece of output: text, or UTF-8 bytes (assembled by arrow in ``_rows_arrow``, or
#: orjson's respelt floats)
Piece = str | bytes | memoryview

#: rows formatted and written at a time (bounded memory: ~7 MB of JSON text per chunk)
CHUNK = 1 << 14

#: a grid's JSON list keeps the texts of its first values this far, for the rows that
#: show them (~40 MB: a longer grid's later rows format their own)
KNOWN_ROWS = 1 << 21


class _NotExact(Exception):
    """A value the column writer cannot reproduce byte for byte."""


def _json_cell(value: Any) -> str:
    v = plain(value)
    if v is None or isinstance(v, (str, bool, int)):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, float):
        if v != v:
            return "null"
        if v in (float("inf"), float("-inf")):
            raise _NotExact
        return float.__repr__(v)
    raise _NotExact  # lists and mappings are indented over several lines


def _csv_cell(value: Any) -> str:
    text = "" if value is None else str(value)
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _float_texts(arr: np.ndarray, null: str) -> list[str]:
    """``float.__repr__`` of each value (NaN: ``null``); through orjson when installed
    and its spelling, respelt, matches ``repr`` on the boundary cases (``_orjson_ok``)."""
    fast = _orjson_texts(arr) if _orjson_ok() else None
    if fast is None:
        texts = list(map(float.__repr__, arr.tolist()))
        bad = np.isnan(arr)
    else:
        texts, bad = fast
        if bad.any():  # orjson writes NaN and ±inf as null
            for i in np.flatnonzero(bad).tolist():
                texts[i] = float.__repr__(float(arr[i]))
        bad = np.isnan(arr)
    if bad.any():
        for i in np.flatnonzero(bad).tolist():
            texts[i] = null
    return texts


def _load_orjson() -> Any:
    try:
        import orjson
    except ImportError:  # optional: the exact pure-Python path is used without it
        return None
    return orjson


_ORJSON: Any = _load_orjson()
_ORJSON_OK: list[bool] = []


def _orjson_ok() -> bool:
    """Whether the installed orjson, respelt, writes ``repr``'s text: checked once, on
    the values where the spellings differ (exponents of one and two digits, both
    signs, the [1e-5, 1e-4) decade, subnormals), so an orjson release that spells
    floats differently falls back to the exact path instead of changing the output."""
    if _ORJSON is None:
        return False
    if not _ORJSON_OK:
        probe = np.array(
            [1e-7, 3e-05, 1.5e-05, 1e16, 7e16, 1e22, 1.2345678901234568e17, 1e-100, 2e-300,
             5e-324, 0.1, -2.5e-08, 1e100, 123.0, -0.0, 9.999999999999999e-05, 1e-05,
             -1.0000000000000003e-05, 1e15, 123456789012345.6, 1e-04]
        )  # fmt: skip
        got = _orjson_texts(probe)
        _ORJSON_OK.append(got is not None and got[0] == list(map(float.__repr__, probe.tolist())))
    return _ORJSON_OK[0]


_E, _MINUS, _COMMA, _ZERO, _PLUS = (ord(c) for c in "e-,0+")


def _orjson_texts(arr: np.ndarray) -> tuple[list[str], np.ndarray] | None:
    """The texts of ``float.__repr__`` (``_orjson_text``), one string each, and the
    mask of non-finite values (written as null by orjson: the caller respells them)."""
    a = np.ascontiguousarray(arr, dtype=np.float64)
    text = _orjson_text(a)
    if text is None:
        return None
    texts = text.split(",") if a.size else []
    if len(texts) != a.size:
        return None
    return texts, ~np.isfinite(a)


_CLOSE = ord("]")
_DECADE_HEAD = np.frombuffer(b"0.0000", dtype=np.uint8)
_DOT_E05 = np.frombuffer(b".e-05", dtype=np.uint8)


def _orjson_text(a: np.ndarray) -> str | None:
    """``_orjson_bytes`` as text."""
    raw = _orjson_bytes(a)
    return None if raw is None else raw.decode("ascii")


def _orjson_bytes(a: np.ndarray) -> bytes | None:
    """``",".join`` of ``float.__repr__`` of each value of the float64 array ``a``,
    from orjson's shortest round-trip digits (the same digits: both print the
    shortest string that reads back as the same double, the nearest one on a tie),
    respelt in vectorised form: orjson writes exponents as ``e-7``/``e16`` where
    ``repr`` writes ``e-07``/``e+16``, and [1e-5, 1e-4) positionally (``0.0000d…``)
    where ``repr`` writes ``d.…e-05``. NaN and ±inf come out as ``null`` (the caller
    respells them); ``None`` when orjson refuses the array or its text is not the
    expected shape (the caller takes ``repr``)."""
    try:
        raw: bytes = _ORJSON.dumps(a, option=_ORJSON.OPT_SERIALIZE_NUMPY)
    except TypeError:  # orjson.JSONEncodeError: the exact pure-Python path
        return None
    if a.size == 0:
        return b""
    mag = np.abs(a)
    decade = np.flatnonzero((mag >= 1e-5) & (mag < 1e-4))
    if decade.size == 0 and b"e" not in raw:
        return raw[1:-1]
    # "[t,t,…,t]": every text ends in "," or the closing "]"; b[e + 3] exists
    b = np.frombuffer(raw + b"\0\0\0", dtype=np.uint8)
    at: list[np.ndarray] = []  # where bytes are inserted (before the byte there)
    what: list[np.ndarray] = []  # the bytes inserted
    gone: list[np.ndarray | int] = []  # bytes dropped before each of them
    first = np.empty(0, dtype=np.intp)  # the head "0.0000" of each decade text
    if decade.size:
        # orjson: [-]0.0000d₁d₂…dₖ, repr: [-]d₁.d₂…dₖe-05 (d₁e-05 for one digit): drop
        # "0.0000", put "." after d₁ (when more digits follow) and "e-05" before the end
        ends = np.flatnonzero(b == _COMMA)  # and the closing "]", 4 bytes from the end
        if ends.size != a.size - 1 or b[-4] != _CLOSE:
            return None
        ends = np.append(ends, b.size - 4)
        stop = ends[decade]
        first = np.concatenate(([1], ends[:-1] + 1))[decade] + (a[decade] < 0)
        head = first[:, None] + np.arange(6)
        if not (
            bool(np.all(b[head] == _DECADE_HEAD))
            and bool(np.all(b[first + 6] != _ZERO))
            and bool(np.all(first + 7 <= stop))
        ):
            return None
        # per decade text, in order: "." after d₁ (when more digits follow), then
        # "e-05" at its end; the j-th text's own bytes follow its head and the j heads
        # before it
        place = np.empty((stop.size, 5), dtype=np.intp)
        place[:, 0] = first + 7
        place[:, 1:] = stop[:, None]
        dropped = 6 * np.arange(1, stop.size + 1)
        if bool(np.all(place[:, 0] < stop)):  # the usual case: no text of one digit
            at.append(place.ravel())
            what.append(np.tile(_DOT_E05, stop.size))
            gone.append(np.repeat(dropped, 5))
        else:
            used = np.ones(place.shape, dtype=bool)
            used[:, 0] = place[:, 0] < stop
            at.append(place[used])
            what.append(np.broadcast_to(_DOT_E05, place.shape)[used])
            gone.append(np.broadcast_to(dropped[:, None], place.shape)[used])
    # exponents: insert "0" after "e-" before a lone digit, "+" after "e" before a
    # digit, and "0" after that "+" before a lone digit
    e = np.flatnonzero(b == _E)
    if e.size:
        sign = b[e + 1]
        signed = (sign == _MINUS) | (sign == _PLUS)
        # signed exponents ("e-7"; "e+16" from orjson 3.10 on) get a "0" before a lone
        # digit; bare ones ("e16", older orjson) get the "+" too
        es = e[signed]
        after = b[es + 3]
        x = es[(after == _COMMA) | (after == _CLOSE)] + 2
        at.append(x)
        what.append(np.full(x.size, _ZERO, np.uint8))
        eb = e[~signed]
        if eb.size:
            after = b[eb + 2]
            lone = (after == _COMMA) | (after == _CLOSE)
            # "+" then (before a lone digit) "0", both at eb + 1
            y = np.repeat(eb + 1, 1 + lone)
            at.append(y)
            w = np.full(y.size, _PLUS, np.uint8)
            w[np.cumsum(1 + lone)[lone] - 1] = _ZERO
            what.append(w)
        # an exponent text is never a decade text: the heads dropped before it are the
        # decade texts before it (none when there are none: no search)
        for z in at[len(gone) :]:
            gone.append(6 * np.searchsorted(first, z) if first.size else 0)
    if not at:
        return raw[1:-1]
    pos = np.concatenate(at) if len(at) > 1 else at[0]
    val = np.concatenate(what) if len(what) > 1 else what[0]
    less = (
        np.concatenate([np.broadcast_to(g, z.shape) for g, z in zip(gone, at, strict=True)])
        if first.size
        else None
    )
    if len(at) > 1:
        order = np.argsort(pos, kind="stable")  # in order at the same place
        pos, val = pos[order], val[order]
        if less is not None:
            less = less[order]
    # each inserted byte lands at its place plus the bytes inserted before it, less
    # the bytes dropped before it; the kept bytes fill the other places, in order
    new = pos + np.arange(pos.size)
    if less is not None:
        keep = np.ones(b.size, dtype=bool)
        keep[head.ravel()] = False
        b = b[keep]
        new -= less
    out = np.empty(b.size + pos.size, dtype=np.uint8)
    slots = np.ones(out.size, dtype=bool)
    slots[new] = False
    out[slots] = b
    out[new] = val
    return out[1:-4].tobytes()


def _float_bytes(arr: np.ndarray, *, counted: bool = False) -> bytes | None:
    """``",".join`` of the ``repr`` texts of finite floats, as bytes, without a string
    per value (orjson's text, respelt); ``None``: no orjson or not finite. ``counted``:
    the caller counts the texts itself (``_texts_array``)."""
    if not _orjson_ok() or not bool(np.isfinite(arr).all()):
        return None
    raw = _orjson_bytes(np.ascontiguousarray(arr, dtype=np.float64))
    if raw is None or (not counted and raw.count(b",") != arr.size - 1):
        return None
    return raw


def _column_texts(arr: np.ndarray, kind: str) -> list[str]:
    """One column (a chunk of it) as the JSON or CSV text of each cell."""
    k = arr.dtype.kind
    if k == "f":
        if kind == "json" and bool(np.isinf(arr).any()):
            raise _NotExact  # json.dumps(allow_nan=False) refuses it
        return _float_texts(arr.astype(float, copy=False), "null" if kind == "json" else "")
    if k in "iu":
        return list(map(int.__repr__, arr.tolist()))
    cell: Callable[[Any], str] = _json_cell if kind == "json" else _csv_cell
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


def _bits(arr: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(arr, dtype=np.float64).view(np.int64)


def _constant(arr: np.ndarray) -> bool:
    if len(arr) == 0:
        return False
    if arr.strides == (0,):  # a view of one element (``sweep._objects``)
        return True
    if arr.dtype.kind == "f":  # bit patterns: -0.0 is not 0.0 here
        bits = _bits(arr)
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
#: (``_fixed``), else None (its chunks are then formatted cell by cell)
Fixed = Sequence[str | None]


def _fixed(columns: Sequence[np.ndarray], kind: str) -> list[str | None]:
    """``Fixed``, checked once for the whole output instead of once per chunk (a chunk
    of an object column is a list of Python objects: ~0.5 ms per 16,384 rows each
    time); a column that changes within its first chunk is not checked further.
    Raises ``_NotExact`` for a JSON value the writer cannot reproduce."""
    return [
        _column_texts(c[:1], kind)[0] if _constant(c[:CHUNK]) and _constant(c) else None
        for c in columns
    ]


def _chunk_cells(
    columns: Sequence[np.ndarray],
    start: int,
    stop: int,
    kind: str,
    known: Known | None = None,
    fixed: Fixed | None = None,
    at: int = 0,
) -> list[Cells]:
    """Per column: the texts (or floats) of rows [start, stop), or one text if constant
    (``at``: the row of the output where ``columns`` start, for ``known``)."""
    out: list[Cells] = []
    done: list[tuple[str, np.ndarray, Cells]] = []
    made = (known or {}).pop((at + start, at + stop), None)
    for j, col in enumerate(columns):
        if fixed is not None and fixed[j] is not None:
            out.append(fixed[j])  # type: ignore[arg-type]  # not None: checked
            continue
        part = col[start:stop]
        key = _bits(part) if part.dtype.kind == "f" else part
        same = next(
            (t for k, a, t in done if k == part.dtype.str and np.array_equal(a, key)), None
        )
        if same is None and made is not None and part.dtype.kind == "f":
            if np.array_equal(made[0], key):  # finite floats: the same texts in JSON and CSV
                same = ("%s", made[1].decode("ascii").split(","))
                done.append((part.dtype.str, key, same))
        if same is None:
            if _constant(part):
                same = _column_texts(part[:1], kind)[0]
            else:
                same = ("%s", _column_texts(part, kind))
            if part.dtype.kind != "O":
                done.append((part.dtype.str, key, same))
        out.append(same)
    return out


def _rows(pieces: Sequence[str], cells: list[Cells], n: int, joiner: str, end: str = "") -> str:
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


#: outputs of at least this many rows are assembled by pyarrow when it is installed: below
#: it, importing pyarrow (~0.1 s) costs more than it saves (~0.4 µs a row)
ARROW_FROM = 200_000


#: arrow's element-wise join of string arrays and scalars (``_arrow``)
Join = Callable[[list[Any]], Any]


def _arrow() -> Join | None:
    """Arrow's ``binary_join_element_wise`` (``pyarrow.compute``) when pyarrow is
    installed (the ``fast`` and ``parquet`` extras), else ``None``: called with the
    string arrays and scalars to join, the separator last."""
    import importlib

    try:
        compute = importlib.import_module("pyarrow.compute")
    except ImportError:
        return None
    join = compute.binary_join_element_wise
    return lambda args: join(*args)


def _pyarrow() -> Any:
    import importlib

    return importlib.import_module("pyarrow")


def prefetch(rows: int) -> None:
    """Import pyarrow in a background thread when an output of ``rows`` rows will use
    it, so that the import overlaps the caller's computation (numpy releases the GIL)
    instead of delaying the first chunk."""
    if rows >= ARROW_FROM:
        import threading

        # not a daemon: an early exit waits for the import instead of cutting it short
        threading.Thread(target=_arrow, name="ampcalc-import").start()


def _text_scalar(text: str) -> Any:
    """An arrow string scalar, made from bytes (``pa.scalar`` of a Python string would
    import pandas, ~0.3 s, to ask whether the string is a pandas object)."""
    pa = _pyarrow()
    data = text.encode()
    offsets = np.array([0, len(data)], dtype=np.int32)
    return pa.StringArray.from_buffers(1, pa.py_buffer(offsets), pa.py_buffer(data))[0]


def _texts_array(raw: bytes, n: int, comma: bool) -> Any:
    """An arrow string array of the ``n`` texts in ``raw`` (``t1,t2,…,tn``), each with
    its trailing comma when ``comma`` (a view of the bytes: no copy), else without."""
    pa = _pyarrow()
    data = raw + b","
    b = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(b == _COMMA)
    if ends.size != n:
        raise _NotExact
    if not comma:
        keep = np.ones(b.size, dtype=bool)
        keep[ends] = False
        data = b[keep].tobytes()
        ends = ends - np.arange(n)
    else:
        ends = ends + 1
    offsets = np.empty(n + 1, dtype=np.int32)
    offsets[0] = 0
    offsets[1:] = ends
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def _rows_arrow(
    join: Join,
    pieces: Sequence[str],
    columns: Sequence[np.ndarray],
    start: int,
    stop: int,
    kind: str,
    joiner: str,
    known: Known | None = None,
    fixed: Fixed | None = None,
    at: int = 0,
) -> memoryview | None:
    """``_rows(pieces, _chunk_cells(...), …, joiner)``'s text as UTF-8 bytes (without
    an ``end``), assembled by arrow's element-wise join from one byte string per column
    (orjson's texts, respelt) instead of a Python string per cell. Every column of the
    chunk is constant or finite floats; ``None`` otherwise (the caller takes ``_rows``).
    A float text keeps its comma when the next piece opens with one (as every JSON field
    but the last and every CSV cell does)."""
    n = stop - start
    made = (known or {}).pop((at + start, at + stop), None)
    consts = [pieces[0]]
    args: list[Any] = []
    # a column of the same floats as an earlier one (M's ε, the reference ε) shares its
    # texts and their arrow array: (bits, texts, {comma: array})
    done: list[tuple[np.ndarray, bytes, dict[bool, Any]]] = []
    for j, col in enumerate(columns):
        part = col[start:stop]
        one = fixed[j] if fixed is not None else None
        # a float column not constant throughout is written cell by cell; an object
        # column may still hold one value in this chunk (arrow joins only floats)
        if one is None and (fixed is None or part.dtype.kind != "f") and _constant(part):
            one = _column_texts(part[:1], kind)[0]
        if one is not None:
            consts[-1] += one + pieces[j + 1]
            continue
        if part.dtype.kind != "f":
            return None
        key = _bits(part)
        same = next((d for d in done if np.array_equal(d[0], key)), None)
        if same is None:
            raw = made[1] if made is not None and np.array_equal(made[0], key) else None
            if raw is None:
                raw = _float_bytes(part, counted=True)
                if raw is None:
                    return None
            same = (key, raw, {})
            done.append(same)
        follow = pieces[j + 1]
        comma = follow.startswith(",")
        texts = same[2].get(comma)
        if texts is None:
            try:
                texts = same[2][comma] = _texts_array(same[1], n, comma)
            except _NotExact:  # not one text per value: the Python path writes the chunk
                return None
        args += [_text_scalar(consts[-1]), texts]
        consts.append(follow[1:] if comma else follow)
    if not args:
        return None
    args += [_text_scalar(consts[-1] + joiner), _text_scalar("")]
    try:
        joined = join(args)
    except _pyarrow().ArrowException:  # e.g. a chunk over arrow's 2 GiB string offsets
        return None
    offsets = np.frombuffer(
        joined.buffers()[1], dtype=np.int32, count=n + 1, offset=4 * joined.offset
    )
    first, last = int(offsets[0]), int(offsets[-1]) - len(joiner.encode())
    return memoryview(joined.buffers()[2])[first:last]


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
    import collections
    from concurrent.futures import ThreadPoolExecutor

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
    at = 0
    for cols in blocks:
        m = len(cols[0]) if cols else 0
        for start in range(0, m, CHUNK):
            yield cols, at, start, min(start + CHUNK, m)
        at += m


def _source(
    columns: Mapping[str, np.ndarray] | Blocks, kind: str
) -> tuple[list[str], int, Fixed | None, Callable[[], Iterator[Task]]]:
    """Names, rows, ``Fixed`` and the chunks of ``columns`` (held or in ``Blocks``);
    raises ``_NotExact`` for JSON held columns the writer cannot reproduce."""
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
    fixed = _fixed(cols, kind)
    if kind == "json":
        _scan([c for c, one in zip(cols, fixed, strict=True) if one is None])
    return names, n, fixed, lambda: _tasks([cols])


def _scan(cols: Sequence[np.ndarray]) -> None:
    """Raise ``_NotExact`` unless every cell can be written exactly (checked up front,
    so the output never stops half-way): no infinite float, only scalars in objects."""
    for c in cols:
        if c.dtype.kind == "f" and bool(np.isinf(c).any()):
            raise _NotExact
        if c.dtype.kind == "O":
            values = c.tolist()
            # list.count compares identity first, in C: a column of one string is fast
            if values and values.count(values[0]) == len(values):
                distinct = values[:1]
            else:
                try:
                    distinct = list(set(values))
                except TypeError:  # unhashable: a list or a mapping
                    raise _NotExact from None
            for v in distinct:
                _json_cell(v)


def rows_segment(
    columns: Mapping[str, np.ndarray] | Blocks, depth: int, known: Known | None = None
) -> Iterator[Piece]:
    """A JSON list of one object per row (keys in column order), its items at ``depth``
    levels of ``indent=2``; raises ``_NotExact`` (before yielding) if it cannot be exact."""
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
        join = _arrow() if n >= ARROW_FROM else None

        def rows(task: Task) -> Piece:
            cols, at, start, stop = task
            fast = join and _rows_arrow(
                join, pieces, cols, start, stop, "json", ",\n", known, fixed, at
            )
            if fast:
                return fast
            cells = _chunk_cells(cols, start, stop, "json", known, fixed, at)
            return _rows(pieces, cells, stop - start, ",\n")

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
    raises ``_NotExact`` (before yielding) if it cannot be exact. ``array``: the values
    as a float array, when the caller knows that every value is a float."""
    arr = array
    if arr is None and values and set(map(type, values)) == {float}:
        arr = np.asarray(values, dtype=float)
    if arr is not None:
        _scan([arr])
    else:
        for v in set(values) if all(type(v) in (int, str) for v in values) else values:
            _json_cell(v)
    pad = " " * (2 * depth)
    n = len(values)

    between = ",\n" + pad

    def items(start: int, stop: int) -> Piece:
        raw = _float_bytes(arr[start:stop]) if arr is not None else None
        if raw is not None:
            if known is not None and arr is not None and start < KNOWN_ROWS:
                known[(start, stop)] = (_bits(arr[start:stop]), raw)  # the rows may show them
            return raw.replace(b",", between.encode())
        if arr is not None:
            return between.join(_column_texts(arr[start:stop], "json"))
        return between.join([_json_cell(v) for v in values[start:stop]])

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
    except _NotExact:
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
    """``sweep.write_csv``'s text in chunks: a header, then one line per row."""
    names, n, fixed, tasks = _source(columns, "csv")
    yield ",".join(_csv_cell(k) for k in names) + "\n"
    if not names:
        return
    pieces = ["", *[","] * (len(names) - 1), ""]
    join = _arrow() if n >= ARROW_FROM else None

    def rows(task: Task) -> Piece:
        cols, _, start, stop = task
        fast = join and _rows_arrow(join, pieces, cols, start, stop, "csv", "\n", None, fixed)
        if fast:
            return fast
        cells = _chunk_cells(cols, start, stop, "csv", None, fixed)
        return _rows(pieces, cells, stop - start, "\n")

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
    from ampcalc.output.render import envelope

    mark = placeholder(key)
    doc = envelope(command, version, {**payload, key: mark})
    return json_chunks(doc, {mark: lambda: rows_segment(columns, 2)})


# --- a sweep's CSV and JSON, from its columns --------------------------------------------


def sweep_csv(sweep: Sweep | SweepStream, out: Any) -> None:
    """CSV, one row per point (floats as ``repr``; null as an empty cell; RFC 4180
    quoting), written from the columns in chunks (``columns_output.csv_chunks``)."""
    for chunk in csv_chunks(sweep_columns(sweep)):
        out.write(chunk if isinstance(chunk, str) else str(chunk, "utf-8"))


def text(pieces: Iterable[Piece]) -> str:
    """The pieces joined into one text (bytes pieces decoded)."""
    return "".join(p if isinstance(p, str) else str(p, "utf-8") for p in pieces)


def sweep_columns(sweep: Sweep | SweepStream) -> Mapping[str, np.ndarray] | Blocks:
    """A sweep's columns: held (``Sweep``), or made again a block at a time as they are
    written (``SweepStream``, checked to be exact when it was made)."""
    from ampcalc.analyses.sweep import SweepStream

    if isinstance(sweep, SweepStream):
        return Blocks(sweep.column_names(), len(sweep), sweep.blocks)
    return sweep.columns


def sweep_json_chunks(sweep: Sweep | SweepStream, version: str) -> Iterator[Piece] | None:
    """``render.render_json`` of the sweep's envelope, written from the columns in
    chunks (same bytes, bounded memory); ``None``: render ``document`` the usual way."""
    from ampcalc.output.render import envelope

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
    from ampcalc.output.records_csv import rows_text

    cols = [block[:, j] for j in range(block.shape[1])]
    return rows_text(cols, int_first=int_first).decode("ascii")
