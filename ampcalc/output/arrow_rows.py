"""Rows of a chunk assembled by pyarrow from one byte string per float column.

``rows_arrow`` gives ``cells.join_rows``'s text as UTF-8 bytes without a Python string
per cell: each float column's texts (``float_text.float_bytes``, one byte string) become
an arrow string array over those bytes, and arrow's ``binary_join_element_wise`` joins
them row by row with the constant pieces between them. pyarrow is optional (the
``fast`` and ``parquet`` extras) and imported only when a large output asks for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ampcalc.output.cells import (
    Fixed,
    Known,
    NotExact,
    column_texts,
    float_bits,
    is_constant,
)
from ampcalc.output.float_text import float_bytes

_COMMA = ord(",")


#: arrow's element-wise join of string arrays and scalars (``arrow_join``)
Join = Callable[[list[Any]], Any]


def arrow_join() -> Join | None:
    """Arrow's ``binary_join_element_wise`` (``pyarrow.compute``) when pyarrow is
    installed (the ``fast`` and ``parquet`` extras), else ``None``: called with the
    string arrays and scalars to join, the separator last."""
    try:
        compute = importlib.import_module("pyarrow.compute")
    except ImportError:
        return None
    join = compute.binary_join_element_wise
    return lambda args: join(*args)


def _pyarrow() -> Any:
    """The pyarrow module (imported on first use)."""
    return importlib.import_module("pyarrow")


def _text_scalar(text: str) -> Any:
    """An arrow string scalar, made from bytes (``pa.scalar`` of a Python string would
    import pandas, ~0.3 s, to ask whether the string is a pandas object)."""
    pa = _pyarrow()
    data = text.encode()
    offsets = np.array([0, len(data)], dtype=np.int32)
    return pa.StringArray.from_buffers(1, pa.py_buffer(offsets), pa.py_buffer(data))[0]


def texts_array(raw: bytes, n: int, comma: bool) -> Any:
    """An arrow string array of the ``n`` texts in ``raw`` (``t1,t2,…,tn``), each with
    its trailing comma when ``comma`` (a view of the bytes: no copy), else without."""
    pa = _pyarrow()
    data = raw + b","
    b = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(b == _COMMA)
    if ends.size != n:
        raise NotExact
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


def rows_arrow(
    join: Join,
    pieces: Sequence[str],
    columns: Sequence[np.ndarray],
    start: int,
    stop: int,
    kind: str,
    joiner: str,
    known: Known | None = None,
    fixed: Fixed | None = None,
    first_row: int = 0,
) -> memoryview | None:
    """The text of ``cells.join_rows(pieces, cells.chunk_cells(...), …, joiner)`` as
    UTF-8 bytes (without an ``end``), assembled by arrow's element-wise join from one
    byte string per column (orjson's texts, respelt) instead of a Python string per
    cell. Every column of the chunk is constant or finite floats; ``None`` otherwise
    (the caller takes ``join_rows``). A float text keeps its comma when the next piece
    opens with one (as every JSON field but the last and every CSV cell does)."""
    n = stop - start
    known_texts = (known or {}).pop((first_row + start, first_row + stop), None)
    consts = [pieces[0]]
    args: list[Any] = []
    # a column of the same floats as an earlier one (M's ε, the reference ε) shares its
    # texts and their arrow array: (bits, texts, {comma: array})
    formatted: list[tuple[np.ndarray, bytes, dict[bool, Any]]] = []
    for j, col in enumerate(columns):
        part = col[start:stop]
        one_text = fixed[j] if fixed is not None else None
        # a float column not constant throughout is written cell by cell; an object
        # column may still hold one value in this chunk (arrow joins only floats)
        if one_text is None and (fixed is None or part.dtype.kind != "f") and is_constant(part):
            one_text = column_texts(part[:1], kind)[0]
        if one_text is not None:
            consts[-1] += one_text + pieces[j + 1]
            continue
        if part.dtype.kind != "f":
            return None
        key = float_bits(part)
        texts_of = next((d for d in formatted if np.array_equal(d[0], key)), None)
        if texts_of is None:
            raw = (
                known_texts[1]
                if known_texts is not None and np.array_equal(known_texts[0], key)
                else None
            )
            if raw is None:
                raw = float_bytes(part, counted=True)
                if raw is None:
                    return None
            texts_of = (key, raw, {})
            formatted.append(texts_of)
        follow = pieces[j + 1]
        comma = follow.startswith(",")
        texts = texts_of[2].get(comma)
        if texts is None:
            try:
                texts = texts_of[2][comma] = texts_array(texts_of[1], n, comma)
            except NotExact:  # not one text per value: the Python path writes the chunk
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
