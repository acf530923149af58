"""CSV columns as byte ranges of one chunk's UTF-8 text, without a str per cell.

``load.table.stream_columns`` splits a chunk without quotes with ``str.split``: one
Python string per cell, most of a 10⁷-key ``pws sanitize`` run. ``split_bytes`` finds
the same cells as (start, end) offsets into the chunk's UTF-8 bytes with numpy; the
cells are the same because ``,`` and ``\\n`` are single bytes in UTF-8 that never occur
inside another character's encoding. A ``ByteColumn`` gives its cells as strings
(``tolist``) only where a caller needs them (the stream order check, scores, extra
columns, errors).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_COMMA, _NEWLINE, _CR = 44, 10, 13


class _Chunk:
    """The text of one chunk and its cells as strings, split once on demand."""

    __slots__ = ("_cells", "text", "width")

    def __init__(self, text: str, width: int) -> None:
        self.text = text
        self.width = width
        self._cells: list[str] | None = None

    def column(self, c: int) -> list[str]:
        if self._cells is None:
            self._cells = self.text.replace("\n", ",").split(",")
        return self._cells[c :: self.width]


class ByteColumn:
    """One column of a chunk: cell ``i`` is ``buf[start[i]:end[i]]`` (UTF-8).

    ``plain``: no cell holds a comma, a quote or a line break (``\\r`` or ``\\n``), so
    ``csv.writer`` would write each cell as it is (an empty lone cell aside).
    """

    __slots__ = ("_chunk", "_index", "_strings", "buf", "end", "plain", "start")

    def __init__(
        self,
        buf: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        *,
        plain: bool,
        strings: list[str] | None = None,
        chunk: _Chunk | None = None,
        index: int = 0,
    ) -> None:
        self.buf = buf
        self.start = start
        self.end = end
        self.plain = plain
        self._strings = strings
        self._chunk = chunk
        self._index = index

    def __len__(self) -> int:
        return int(self.start.size)

    def lengths(self) -> np.ndarray:
        """Each cell's length in bytes."""
        lengths: np.ndarray = self.end - self.start
        return lengths

    def tolist(self) -> list[str]:
        """The cells as strings (what ``str.split`` of the chunk gives)."""
        if self._strings is None:
            if self._chunk is not None:
                self._strings = self._chunk.column(self._index)
            else:
                data = self.buf.tobytes()
                self._strings = [
                    data[a:z].decode()
                    for a, z in zip(self.start.tolist(), self.end.tolist(), strict=True)
                ]
        return self._strings

    @classmethod
    def from_strings(cls, cells: list[str]) -> ByteColumn:
        """The column of ``cells`` (the csv module's cells of a quoted chunk)."""
        text = "".join(cells)
        if text.isascii():
            data = text.encode("ascii")
            lengths = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
        else:
            encoded = [c.encode() for c in cells]
            data = b"".join(encoded)
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(cells))
        end = np.cumsum(lengths)
        start = end - lengths
        return cls(np.frombuffer(data, dtype=np.uint8), start, end, plain=False, strings=cells)


def split_bytes(text: str, width: int) -> list[Any] | None:
    """The cells of a chunk's ``text`` (lines without quotes, no final line break) as
    ``width`` ``ByteColumn`` s: the cells ``text.replace("\\n", ",").split(",")``
    gives, column ``c`` being every ``width``-th from ``c``. ``None`` if a line is
    blank (the csv module skips it) or the cells are not (lines × width) (the caller
    reports the line)."""
    buf = np.frombuffer(text.encode(), dtype=np.uint8)
    sep = np.flatnonzero((buf == _COMMA) | (buf == _NEWLINE))
    breaks = sep[buf[sep] == _NEWLINE]
    if buf.size == 0 or (breaks.size and (breaks[0] == 0 or (np.diff(breaks) == 1).any())):
        return None
    if sep.size + 1 != (breaks.size + 1) * width:
        return None
    plain = "\r" not in text
    chunk = _Chunk(text, width)
    cols = []
    for c in range(width):
        # cell k runs from just after separator k - 1 to separator k (or the end)
        start = np.empty(breaks.size + 1, dtype=np.int64)
        if c == 0:
            start[0] = 0
            np.add(sep[width - 1 :: width], 1, out=start[1:])
        else:
            np.add(sep[c - 1 :: width], 1, out=start)
        end = np.empty(breaks.size + 1, dtype=np.int64)
        end[: sep[c::width].size] = sep[c::width]
        end[sep[c::width].size :] = buf.size
        cols.append(ByteColumn(buf, start, end, plain=plain, chunk=chunk, index=c))
    return cols


__all__ = ["ByteColumn", "split_bytes"]
