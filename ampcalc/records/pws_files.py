"""PWS sample files: reading keys, frequencies and scores, with errors at file lines.

Used by ``ampcalc pws sanitize`` and ``pws estimate`` in one process and by the Dask
engine (``records.distributed``) on each partition, so both read and refuse the same
files the same way. No printing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ampcalc.load.bytecols import ByteColumn, split_bytes
from ampcalc.load.files import excerpt
from ampcalc.load.table import bounded_line as bounded
from ampcalc.load.table import stream_columns, stream_rows
from ampcalc.model.errors import DesignError

#: the columns of a sample without a header row (its second cell is a whole number)
IMPLIED = ("key", "frequency", "score")
EXPECTED = "rows key,frequency[,score]"


def _headerless(cells: Sequence[str]) -> bool:
    return len(cells) >= 2 and cells[1].strip().lstrip("-").isdigit()


def read_rows(
    path: str, chunk: int, need_freq: bool = True
) -> Iterator[tuple[list[str], Sequence[int], list[list[str]]]]:
    """CSV rows in chunks: yields (header, line numbers, rows)."""
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
    path: str, chunk: int, *, as_bytes: bool = False
) -> Iterator[tuple[list[str], Sequence[int], list[Any]]]:
    """The sample CSV in chunks of about ``chunk`` rows, as columns: yields (header,
    line numbers, list of columns); see ``load.table.stream_columns``. ``as_bytes``:
    the columns of chunks without quotes come as ``load.bytecols.ByteColumn`` (byte
    ranges of the chunk's UTF-8 text, no str per cell); quoted chunks give lists of
    strings either way."""
    return stream_columns(
        path,
        chunk,
        what="sample file",
        expected=EXPECTED,
        implied=IMPLIED,
        headerless=_headerless,
        required=("key", "frequency"),
        split=split_bytes if as_bytes else None,
    )


def read_sample(path: str, chunk: int) -> Iterator[tuple[list[str], Sequence[int], list[Any]]]:
    """``read_columns`` with byte columns where a chunk has no quotes."""
    return read_columns(path, chunk, as_bytes=True)


def bounded_line(fh: Any, cap: int, path: str, line: int) -> str:
    """One line, refused past ``cap`` characters (standard input can be endless)."""
    return bounded(fh, cap, path, line)


def parse_freq(value: str, path: str, line: int, what: str = "frequency") -> int:
    try:
        v = int(value)
    except ValueError:
        v = None
    if v is None or v < 1:
        raise DesignError(
            f"{path}:{line}: {what} {excerpt(value)} is not a whole number >= 1 (keys with "
            "frequency 0 are not in the data; frequencies count elements)"
        )
    if v > FREQ_MAX:
        raise DesignError(
            f"{path}:{line}: {what} {excerpt(value)} is above {FREQ_MAX:,} (2⁶³ − 1)"
        )
    return v


#: the largest frequency a count column holds (int64)
FREQ_MAX = 2**63 - 1


def parse_freqs(col: Any, path: str, lines: Sequence[int]) -> Any:
    """The frequency column as int64; the first bad cell is an error naming its line.
    ``col``: a list of cells or a ``load.bytecols.ByteColumn``."""
    if isinstance(col, ByteColumn):
        fast = _digits(col)
        if fast is not None:
            return fast
        col = col.tolist()

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
        try:
            out = arr.astype(np.int64)
        except OverflowError:  # a cell above 2⁶³ − 1: name the first
            n = next(i for i, c in enumerate(arr.tolist()) if int(c) > FREQ_MAX)
            return parse_freq(str(arr[n]), path, lines[n])
        if (out >= 1).all():
            return out
        n = int(np.flatnonzero(out < 1)[0])
    else:
        n = int(np.flatnonzero(~ok)[0])
    return parse_freq(str(arr[n]), path, lines[n])


#: the bytes of a little-endian word that hold its last k digits, k = 0..8
_KEEP = [0] + [((1 << 64) - 1) ^ ((1 << (64 - 8 * k)) - 1) for k in range(1, 9)]


def _digits(col: Any) -> Any:
    """The cells of a ``ByteColumn`` as int64 if each is 1 to 16 ASCII digits with a
    value >= 1 (what ``int`` reads them as), else ``None``.

    Eight digits at a time in one 64-bit word (the 8 bytes ending at the cell's end,
    little-endian, those before the cell set to ``0``): every byte is checked to be a
    digit, then adjacent digits, pairs and quadruples are combined in place."""
    n = len(col)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    width = col.lengths()
    if int(width.min()) < 1 or int(width.max()) > 16:
        return None
    u = np.uint64
    # the buffer behind 16 zero bytes, as aligned words: the word of any 8 bytes is
    # two aligned words shifted together
    padded = np.zeros((col.buf.size + 40) // 8 * 8, dtype=np.uint8)
    padded[16 : 16 + col.buf.size] = col.buf
    aligned = padded.view("<u8")
    keeps = np.array(_KEEP, dtype=u)
    zeros, high = u(0x3030303030303030), u(0xF0F0F0F0F0F0F0F0)
    value = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=bool)
    for part in range(1 + int(width.max() > 8)):
        # the cell's last 8 digits, then the ones before them
        at = (col.end + (8 - 8 * part)).astype(u)
        q, r = at >> u(3), (at & u(7)) << u(3)
        x = (aligned[q] >> r) | (aligned[q + u(1)] << (u(64) - r))  # a shift by 64 gives 0
        keep = keeps[np.clip(width - 8 * part, 0, 8)]
        with np.errstate(over="ignore"):
            x = (x & keep) | (zeros & ~keep)
            bad |= ((x & high) != zeros) | (((x + u(0x0606060606060606)) & high) != zeros)
            x -= zeros
            x = (x * u(10) + (x >> u(8))) & u(0x00FF00FF00FF00FF)
            x = (x * u(100) + (x >> u(16))) & u(0x0000FFFF0000FFFF)
            x = (x * u(10000) + (x >> u(32))) & u(0xFFFFFFFF)
        value += x.astype(np.int64) * 10 ** (8 * part)
    if bad.any() or int(value.min()) < 1:
        return None
    return value


def check_duplicates(
    keys: list[str], lines: Sequence[int], seen: dict[str, int], path: str
) -> None:
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
    try:
        s = float(value)
    except ValueError:
        raise DesignError(f"{path}:{line}: score {excerpt(value)} is not a number") from None
    if params.inclusion is None and params.method != "none" and not s < params.threshold:
        raise DesignError(
            f"{path}:{line}: score {s:g} >= τ = {params.threshold:g}: this key is not in a "
            f"{params.method} sample with threshold τ (scores below τ are sampled)"
        )
