"""PWS sample files: reading keys, frequencies and scores, with errors at file lines.

Used by ``ampcalc pws sanitize`` and ``pws estimate`` in one process and by the Dask
engine (``records.distributed``) on each partition, so both read and refuse the same
files the same way. No printing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ampcalc.load.files import excerpt

#: the columns of a sample without a header row (its second cell is a whole number)
IMPLIED = ("key", "frequency", "score")
EXPECTED = "rows key,frequency[,score]"


def _headerless(cells: Sequence[str]) -> bool:
    return len(cells) >= 2 and cells[1].strip().lstrip("-").isdigit()


def read_rows(
    path: str, chunk: int, need_freq: bool = True
) -> Iterator[tuple[list[str], Sequence[int], list[list[str]]]]:
    """CSV rows in chunks: yields (header, line numbers, rows)."""
    from ampcalc.load.table import stream_rows

    return stream_rows(
        path,
        chunk,
        what="sample file",
        expected=EXPECTED,
        implied=IMPLIED,
        headerless=_headerless,
        required=("key", "frequency") if need_freq else ("key",),
    )


def read_columns(
    path: str, chunk: int
) -> Iterator[tuple[list[str], Sequence[int], list[list[str]]]]:
    """The sample CSV in chunks of about ``chunk`` rows, as columns: yields (header,
    line numbers, list of columns); see ``load.table.stream_columns``."""
    from ampcalc.load.table import stream_columns

    return stream_columns(
        path,
        chunk,
        what="sample file",
        expected=EXPECTED,
        implied=IMPLIED,
        headerless=_headerless,
        required=("key", "frequency"),
    )


def bounded_line(fh: Any, cap: int, path: str, line: int) -> str:
    """One line, refused past ``cap`` characters (standard input can be endless)."""
    from ampcalc.load.table import bounded_line as bounded

    return bounded(fh, cap, path, line)


def parse_freq(value: str, path: str, line: int, what: str = "frequency") -> int:
    from ampcalc.model.errors import DesignError

    try:
        v = int(value)
    except ValueError:
        v = None
    if v is None or v < 1:
        raise DesignError(
            f"{path}:{line}: {what} {excerpt(value)} is not a whole number >= 1 (keys with "
            "frequency 0 are not in the data; frequencies count elements)"
        )
    return v


def parse_freqs(col: Any, path: str, lines: Sequence[int]) -> Any:
    """The frequency column as int64; the first bad cell is an error naming its line."""
    import numpy as np

    try:
        fast = np.array(col, dtype=np.int64)
        if fast.size == 0 or fast.min() >= 1:
            return fast
    except (ValueError, OverflowError):
        pass
    arr = np.array(col, dtype=str)
    arr = np.char.strip(arr)
    ok = np.char.isdigit(arr)
    if ok.all():
        out = arr.astype(np.int64)
        if (out >= 1).all():
            return out
        n = int(np.flatnonzero(out < 1)[0])
    else:
        n = int(np.flatnonzero(~ok)[0])
    return parse_freq(str(arr[n]), path, lines[n])


def check_duplicates(
    keys: list[str], lines: Sequence[int], seen: dict[str, int], path: str
) -> None:
    from ampcalc.model.errors import DesignError

    first: dict[str, int] = {}
    for k, ln in zip(keys, lines, strict=True):
        earlier = seen.get(k, first.get(k))
        if earlier is not None:
            raise DesignError(duplicate_message(path, k, ln, earlier))
        first[k] = ln


def duplicate_message(path: str, key: str, line: int, earlier: int) -> str:
    return (
        f"{path}:{line}: duplicate key {excerpt(key)} (first on line {earlier}); "
        "a weighted sample lists each key once with its frequency"
    )


def check_score(value: str, params: Any, w: int, path: str, line: int) -> None:
    from ampcalc.model.errors import DesignError

    try:
        s = float(value)
    except ValueError:
        raise DesignError(f"{path}:{line}: score {excerpt(value)} is not a number") from None
    if params.inclusion is None and params.method != "none" and not s < params.threshold:
        raise DesignError(
            f"{path}:{line}: score {s:g} >= τ = {params.threshold:g}: this key is not in a "
            f"{params.method} sample with threshold τ (scores below τ are sampled)"
        )
