"""The rows ``ampcalc weights`` writes, as CSV text or as an Arrow table for Parquet.

Two layouts (the Dask engine's part files have the same ones):

* every record: ``row,probability,weight,epsilon_hat`` (``WEIGHTS_COLUMNS``);
* the Poisson sample (``--sample``): ``row``, the record's columns, ``probability``,
  ``weight``, for the kept rows only.

CSV text is ``np.savetxt``'s (``%d`` for the row, ``%.17g`` for the rest), made
column-wise by ``records_csv.rows_text`` (the same bytes). The Arrow tables have
``row`` as int64 and every other column as float64. Where the text goes is the
caller's choice: each CSV writer takes a ``write`` callable (standard output, or a file
opened by ``load.files.atomic_write``), and ``write_parquet`` a binary file object.
pyarrow is optional (the ``parquet`` extra) and imported only by the Parquet functions.
"""

from __future__ import annotations

import importlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

import numpy as np

from ampcalc.model.errors import AmpcalcError
from ampcalc.output.records_csv import rows_text

#: the columns of every record's row
WEIGHTS_COLUMNS = ("row", "probability", "weight", "epsilon_hat")

#: the CSV header of every record's rows
WEIGHTS_HEADER = ",".join(WEIGHTS_COLUMNS) + "\n"

#: a block of the Poisson sample, as ``api.sampled_blocks`` yields it: (records read so
#: far, the kept rows' 0-based indices, their records (one row each), q, w)
SampleBlock = tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: rows formatted at a time by ``write_weights_csv`` (one thread's task)
BLOCK = 1 << 16


def write_weights_csv(
    write: Callable[[Any], object],
    probability: np.ndarray,
    weight: np.ndarray,
    epsilon_hat: np.ndarray,
    *,
    threads: int = 1,
    binary: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Every record's ``row,probability,weight,epsilon_hat`` row, after the header.

    The rows are formatted in blocks of ``BLOCK`` on ``threads`` threads (numpy releases
    the GIL in its loops), at most two blocks per thread ahead of the writing, and
    written in order.

    Args:
        write: takes each piece of text: ``bytes`` when ``binary`` (ASCII), else ``str``.
        probability: q(x) per record, in row order; ``weight`` and ``epsilon_hat`` the
            same length.
        threads: threads formatting blocks.
        binary: ``write`` takes bytes (a file opened in binary mode: no str round trip).
        progress: called with (rows written, rows) after each block.
    """
    write(WEIGHTS_HEADER.encode("ascii") if binary else WEIGHTS_HEADER)
    figs = (probability, weight, epsilon_hat)
    size = int(probability.size)

    def text(start: int) -> str | bytes:
        stop = min(start + BLOCK, size)
        cols = [np.arange(start, stop), *(c[start:stop] for c in figs)]
        block = rows_text(cols, int_first=True)
        return block if binary else block.decode("ascii")

    with ThreadPoolExecutor(max_workers=threads) as pool:
        ahead: deque[tuple[int, Future[str | bytes]]] = deque()
        for start in range(0, size, BLOCK):
            ahead.append((start, pool.submit(text, start)))
            while len(ahead) >= 2 * threads or (ahead and start + BLOCK >= size):
                done, job = ahead.popleft()
                write(job.result())
                if progress is not None:
                    progress(min(done + BLOCK, size), size)


def write_sample_csv(
    write: Callable[[str], object],
    names: Sequence[str],
    blocks: Iterable[SampleBlock],
    *,
    records: int,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """The Poisson sample's rows, ``row,<names>,probability,weight``, after the header.

    Args:
        write: takes each piece of text.
        names: the record's column names.
        blocks: the sample, block by block (``api.sampled_blocks``).
        records: how many records the sample is drawn from (the progress total).
        progress: called with (records read, ``records``) after each block.

    Returns:
        How many rows were written (the sample's size).
    """
    write("row," + ",".join(names) + ",probability,weight\n")
    kept = 0
    for done, rows, x, q, weight in blocks:
        if rows.size:
            cols = [rows, *(x[:, j] for j in range(x.shape[1])), q, weight]
            write(rows_text(cols, int_first=True).decode("ascii"))
            kept += rows.size
        if progress is not None:
            progress(done, records)
    return kept


def _arrow() -> tuple[Any, Any]:
    """pyarrow and ``pyarrow.parquet``.

    Raises:
        AmpcalcError: pyarrow is not installed.
    """
    try:
        return importlib.import_module("pyarrow"), importlib.import_module("pyarrow.parquet")
    except ImportError as exc:
        raise AmpcalcError(
            f"Parquet output needs pyarrow, which is not installed ({exc.name}): install "
            "ampcalc[parquet] (pip install 'ampcalc[parquet]') or write CSV"
        ) from None


def arrow_table(names: Sequence[str], cols: Sequence[np.ndarray]) -> Any:
    """An Arrow table of the columns: the first (``row``) as int64, the rest float64
    (also each part file of the Dask engine).

    Raises:
        AmpcalcError: pyarrow is not installed.
    """
    pa, _ = _arrow()
    arrays = [pa.array(np.asarray(cols[0], dtype=np.int64))]
    arrays += [pa.array(np.asarray(c, dtype=float)) for c in cols[1:]]
    return pa.Table.from_arrays(arrays, names=list(names))


def weights_table(probability: np.ndarray, weight: np.ndarray, epsilon_hat: np.ndarray) -> Any:
    """Every record's row as an Arrow table (``WEIGHTS_COLUMNS``).

    Raises:
        AmpcalcError: pyarrow is not installed.
    """
    _arrow()
    cols = [np.arange(probability.size), probability, weight, epsilon_hat]
    return arrow_table(WEIGHTS_COLUMNS, cols)


def sample_table(names: Sequence[str], blocks: Iterable[SampleBlock]) -> Any:
    """The Poisson sample's rows as an Arrow table: ``row``, ``names``,
    ``probability``, ``weight`` (its ``num_rows`` is the sample's size).

    Args:
        names: the record's column names.
        blocks: the sample, block by block (``api.sampled_blocks``); read only once
            pyarrow is found.

    Raises:
        AmpcalcError: pyarrow is not installed.
    """
    _arrow()
    columns = ["row", *names, "probability", "weight"]
    pieces: list[list[np.ndarray]] = [[] for _ in columns]
    for _, rows, x, q, weight in blocks:
        block = [rows, *(x[:, j] for j in range(x.shape[1])), q, weight]
        for piece, col in zip(pieces, block, strict=True):
            piece.append(col)
    cols = [np.concatenate(p) if p else np.zeros(0) for p in pieces]
    return arrow_table(columns, cols)


def write_parquet(table: Any, fh: IO[bytes]) -> None:
    """Write an Arrow table (``weights_table``, ``sample_table``) to ``fh`` as Parquet.

    Raises:
        AmpcalcError: pyarrow is not installed.
    """
    _, pq = _arrow()
    pq.write_table(table, fh)
