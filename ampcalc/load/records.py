"""Record files for importance sampling: numeric CSV (streamed in chunks) or ``.npy``.

One record per row. A CSV header is detected (a first row with a non-numeric cell);
``columns:`` selects columns by name (with a header) or by 0-based index. A bad cell
(non-numeric, empty, NaN or infinite) is refused with its line and column, never
skipped. Only per-record norms are kept in memory (ℓ1, squared ℓ2), so a 10⁷-row file
costs ~160 MB besides the chunk being read.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.load.files import open_input
from ampcalc.load.progress import _PROGRESS, CHUNK_ROWS
from ampcalc.load.table import (
    NOT_CSV,
    bad_cell,
    is_number,
    numeric_block,
    pick_column,
    plainly_not_a_header,
    read_npy,
    sniff_delimiter,
    split_line,
)

ErrorFn = Callable[[str], Exception]

_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "ampcalc_deferred_records", default=False
)


@contextlib.contextmanager
def deferred_reading() -> Iterator[None]:
    """Load designs without opening their record files.

    Inside the block ``read_norms`` reads no records and ``open_source`` at most a
    regular file's first line: designs get an empty ``RecordNorms`` with
    ``deferred=True`` (and the record dimension) and the caller reads the records
    itself, partition by partition (the Dask engine of ``ampcalc weights``).
    """
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


@dataclass(frozen=True, eq=False)
class RecordSource:
    """Where the records are and how to read them.

    Attributes:
        path: the resolved file path.
        kind: ``npy`` or ``csv``.
        delimiter: CSV delimiter (``None``: whitespace).
        header: column names when the CSV has a header row.
        columns: 0-based indices of the numeric columns that form a record.
        probability_column: 0-based index of a column of inclusion probabilities.
        names: display names of ``columns``.
    """

    path: Path
    kind: str
    delimiter: str | None
    header: tuple[str, ...] | None
    columns: tuple[int, ...]
    probability_column: int | None = None
    names: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class RecordNorms:
    """Per-record norms (and the probability column, if any) of a record file."""

    l1: np.ndarray
    sq_l2: np.ndarray
    probability: np.ndarray | None
    dimension: int
    source: RecordSource = field(repr=False)
    #: True when the file was not read (``deferred_reading``): the arrays are empty.
    deferred: bool = False

    @property
    def count(self) -> int:
        return int(self.l1.shape[0])


def _pick(spec: Any, header: tuple[str, ...] | None, width: int, error: ErrorFn, what: str) -> int:
    return pick_column(spec, header, width, error, what)


def select_columns(
    header: tuple[str, ...] | None,
    width: int,
    columns: Any,
    probability_column: Any,
    error: ErrorFn,
    path: Any,
) -> tuple[tuple[int, ...], int | None]:
    """The record columns and the probability column (0-based) of a file's header."""
    pcol = (
        _pick(probability_column, header, width, error, "probability_column")
        if probability_column is not None
        else None
    )
    if columns is None:
        cols = tuple(i for i in range(width) if i != pcol)
    else:
        if isinstance(columns, (str, int)) and not isinstance(columns, bool):
            columns = [columns]
        if not isinstance(columns, (list, tuple)) or not columns:
            raise error("columns: expected a non-empty list of column names or 0-based indices")
        cols = tuple(_pick(c, header, width, error, "columns") for c in columns)
        if pcol is not None and pcol in cols:
            raise error("columns: the probability column cannot also be a record column")
    if not cols:
        raise error(f"{path}: no record columns left")
    return cols, pcol


def open_source(
    path: Path,
    columns: Any,
    probability_column: Any,
    error: ErrorFn,
) -> RecordSource:
    """Inspect a record file (format, header, columns) without reading it all.

    Inside ``deferred_reading`` a regular file is still inspected (its first line: the
    record dimension is part of the design, e.g. DP-Lloyd's noise scales); anything else
    (a directory or glob of partitions the engine resolves itself) is not touched, and
    the dimension is the number of ``columns:`` listed (0 when none are).
    """
    if _DEFERRED.get() and not path.is_file():
        listed = columns if isinstance(columns, (list, tuple)) else ()
        return RecordSource(
            path=path,
            kind="deferred",
            delimiter=None,
            header=None,
            columns=tuple(range(len(listed))),
            names=tuple(str(c) for c in listed),
        )
    try:
        path.stat()
    except FileNotFoundError:
        raise error(f"record file {str(path)!r} not found") from None
    except (OSError, ValueError):
        pass  # a name too long, no permission, a NUL byte: open_input says which
    with open_input(path, what="record file", binary=True, error=error):
        pass  # a regular file, readable (np.load and the chunked reader open it again)
    if path.suffix.lower() == ".npy":
        arr = read_npy(path, what="record file", error=error)
        if arr.shape[0] == 0:
            raise error(f"{path}: the file has no records")
        width = 1 if arr.ndim == 1 else arr.shape[1]
        header = None
        delimiter = None
    else:
        first = ""
        with open_input(path, what="record file", errors="replace", error=error) as fh:
            for line in fh:
                if line.strip():
                    first = line.rstrip("\r\n")
                    break
        if not first:
            raise error(f"{path}: the file is empty (expected one record per row)")
        delimiter = sniff_delimiter(first)
        cells = split_line(first, delimiter)
        width = len(cells)
        header = None if all(is_number(c) for c in cells) else tuple(cells)
        if header is not None and plainly_not_a_header(header):
            raise error(
                f"{path}:1: {NOT_CSV}: expected one record per row (numbers), under a "
                "header of column names or none"
            )
    cols, pcol = select_columns(header, width, columns, probability_column, error, path)
    names = tuple(header[i] if header else str(i) for i in cols)
    return RecordSource(
        path=path,
        kind="npy" if path.suffix.lower() == ".npy" else "csv",
        delimiter=delimiter,
        header=header,
        columns=cols,
        probability_column=pcol,
        names=names,
    )


def _bad_cell(src: RecordSource, lines: list[str], first_line: int, error: ErrorFn) -> Exception:
    """Locate the first bad cell of a CSV chunk (only on the error path)."""
    wanted = list(src.columns) + (
        [src.probability_column] if src.probability_column is not None else []
    )
    labels = [src.header[c] if src.header else str(c) for c in wanted]
    width = len(src.header) if src.header else None
    found = bad_cell(str(src.path), lines, first_line, src.delimiter, wanted, labels, width=width)
    return error(found or f"{src.path}: unreadable rows from line {first_line}")


def iter_chunks(
    src: RecordSource, error: ErrorFn, chunk_rows: int = CHUNK_ROWS
) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
    """Yield (first row index, records (rows × columns), probability column or None)."""
    if src.kind == "npy":
        arr = read_npy(src.path, what="record file", error=error)
        if arr.ndim == 1:
            arr = arr.reshape(-1, 1)
        cols = list(src.columns)
        contiguous = cols == list(range(cols[0], cols[0] + len(cols)))
        for start in range(0, arr.shape[0], chunk_rows):
            block = arr[start : start + chunk_rows]
            x = block[:, cols[0] : cols[0] + len(cols)] if contiguous else block[:, cols]
            x = np.asarray(x, dtype=float)
            p = None
            if src.probability_column is not None:
                p = np.asarray(block[:, src.probability_column], dtype=float)
            bad = ~np.isfinite(x)
            if bad.any():
                i, j = np.argwhere(bad)[0]
                raise error(
                    f"{src.path}: row {start + i} (0-based), column {src.names[j]!r}: "
                    f"expected a finite number, got {x[i, j]!r}"
                )
            if p is not None and not np.isfinite(p).all():
                i = int(np.argmax(~np.isfinite(p)))
                raise error(f"{src.path}: row {start + i} (0-based): probability is {p[i]!r}")
            yield start, x, p
        return
    usecols = list(src.columns) + (
        [src.probability_column] if src.probability_column is not None else []
    )
    with open_input(src.path, what="record file", errors="replace", error=error) as fh:
        lineno = 1
        if src.header is not None:
            # skip leading blank lines and the header
            for line in fh:
                if line.strip():
                    lineno += 1
                    break
                lineno += 1
        start = 0
        pending_blank: list[str] = []
        while True:
            lines = list(itertools.islice(fh, chunk_rows))
            if not lines:
                break
            # trailing blank lines at the end of the file are allowed
            while lines and not lines[-1].strip():
                pending_blank.append(lines.pop())
            if pending_blank and lines:
                more = list(itertools.islice(fh, 1))
                if more:
                    lines += pending_blank[::-1] + more
                    pending_blank = []
            if not lines:
                continue
            if any(not ln.strip() for ln in lines):
                raise _bad_cell(src, lines, lineno, error)
            block = numeric_block(
                lines,
                name=str(src.path),
                first_line=lineno,
                delimiter=src.delimiter,
                columns=usecols,
                labels=[src.header[c] if src.header else str(c) for c in usecols],
                width=len(src.header) if src.header else None,
                error=error,
            )
            k = len(src.columns)
            p = block[:, k] if src.probability_column is not None else None
            yield start, np.ascontiguousarray(block[:, :k]), p
            start += len(lines)
            lineno += len(lines)


def record_norms(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ℓ1, squared ℓ2) norm of each row of a C-contiguous float array (rows × columns)."""
    return np.abs(x).sum(axis=1), np.einsum("ij,ij->i", x, x)


def read_norms(
    src: RecordSource, error: ErrorFn, progress: Callable[[int, int], None] | None = None
) -> RecordNorms:
    """Read a record file once, keeping ℓ1 and squared ℓ2 norms per record
    (``progress(records read, 0)`` after each chunk; default: ``reading_progress``'s)."""
    progress = progress if progress is not None else _PROGRESS.get()
    if src.kind == "deferred" or _DEFERRED.get():
        empty = np.zeros(0)
        return RecordNorms(
            l1=empty,
            sq_l2=empty,
            probability=empty,
            dimension=len(src.columns),
            source=src,
            deferred=True,
        )
    l1_parts: list[np.ndarray] = []
    sq_parts: list[np.ndarray] = []
    p_parts: list[np.ndarray] = []
    for start, x, p in iter_chunks(src, error):
        l1, sq = record_norms(x)
        l1_parts.append(l1)
        sq_parts.append(sq)
        if p is not None:
            p_parts.append(p)
        if progress is not None:
            progress(start + x.shape[0], 0)
    if not l1_parts:
        raise error(f"{src.path}: the file has no records (only a header)")
    return RecordNorms(
        l1=np.concatenate(l1_parts),
        sq_l2=np.concatenate(sq_parts),
        probability=np.concatenate(p_parts) if p_parts else None,
        dimension=len(src.columns),
        source=src,
    )
