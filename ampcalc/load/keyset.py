"""Duplicate keys of a weighted sample, found through sorted 64-bit hashes.

``pws sanitize`` refuses a sample that lists a key twice, naming the line of the
repeat and of the first occurrence. A dict of every key with its line cost most of a
10⁷-key run and over a gigabyte; here the keys are hashed (the sanitizer's own 64-bit
key hash, ``math.pws.key_hashes``, computed once for the coins and this) and compared
as strings only where a hash ties: with 64-bit hashes a tie between different keys is
a ~n²/2⁶⁵ event, so the keys are kept compactly (UTF-8 bytes in numpy arrays) and read
only then. ``KeyLog`` (what ``pws sanitize`` uses) keeps the hashes seen in sorted runs
and reports a duplicate at the chunk that holds it; ``KeySet`` keeps them in one
sorted array (one merge of everything per chunk).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ampcalc.math.pws import key_hashes

#: a chunk's keys are stored as a fixed-width bytes array up to this many bytes a row
#: (wider: as an object array of the strings)
_MAX_WIDTH = 64


class KeySet:
    """Keys of the chunks added so far (their hashes, sorted; their text; their lines)."""

    def __init__(self) -> None:
        self._sorted = np.zeros(0, dtype=np.int64)
        self._hashes: list[np.ndarray] = []
        self._texts: list[np.ndarray] = []
        self._lines: list[Sequence[int]] = []

    def add(
        self,
        keys: list[str],
        lines: Sequence[int],
        raw: np.ndarray | None = None,
        hashes: np.ndarray | None = None,
    ) -> tuple[int, int] | None:
        """Add a chunk; ``(i, first_line)`` for its first key seen before (in an earlier
        chunk or earlier in this one), with the line of that key's first occurrence, or
        ``None`` (the chunk is then added). ``raw``: the keys as ``np.array(keys,
        dtype="S")`` or their UTF-8 bytes, if made already; ``hashes``: the keys'
        ``math.pws.key_hashes``, if computed already (the sanitizer's coins need them)."""

        n = len(keys)
        if hashes is None:
            hashes = key_hashes(keys, raw)
        h = np.asarray(hashes, dtype=np.uint64).view(np.int64)
        hs = np.sort(h)  # a tie is rare: the positions (argsort) only then
        tied = bool(n > 1 and (hs[1:] == hs[:-1]).any())
        # sorted needles: searchsorted walks the sorted hashes once (cache-friendly)
        pos = np.searchsorted(self._sorted, hs)
        inside = pos < self._sorted.size
        hit = np.zeros(n, dtype=bool)
        hit[inside] = self._sorted[pos[inside]] == hs[inside]
        if tied or hit.any():
            # candidates, in input order: a hash seen in an earlier chunk, or a repeat
            # of a hash within this chunk (every member of a tied run but the first)
            order = np.argsort(h, kind="stable")
            within = np.flatnonzero(hs[1:] == hs[:-1])
            cand = np.zeros(n, dtype=bool)
            cand[order[within + 1]] = True
            cand[order[hit]] = True
            for i in np.flatnonzero(cand).tolist():
                first = self._first_line(keys, lines, i, int(h[i]), h)
                if first is not None:
                    return i, first
        self._sorted = np.sort(np.concatenate([self._sorted, hs]), kind="stable")
        self._hashes.append(h)
        self._texts.append(_compact(keys, raw))
        self._lines.append(lines)
        return None

    def _first_line(
        self, keys: list[str], lines: Sequence[int], i: int, value: int, h: np.ndarray
    ) -> int | None:
        key = keys[i]
        for hashes, texts, lns in zip(self._hashes, self._texts, self._lines, strict=True):
            for j in np.flatnonzero(hashes == value).tolist():
                if _text(texts, j) == key:
                    return int(lns[j])
        for j in np.flatnonzero(h[:i] == value).tolist():
            if keys[j] == key:
                return int(lines[j])
        return None


#: runs of a size merged into one (``_SortedRuns``)
_FAN = 4


class _SortedRuns:
    """A set of 64-bit values: sorted runs of growing sizes (``_FAN`` runs of a size
    merged into one, as a counter in base ``_FAN`` carries: O(log) runs, each value
    re-sorted O(log) times) behind a bit array indexed by a value's top bits (8 to 64
    bits a value, so most values not in the set are told apart there, without a binary
    search in every run). The values are the sanitizer's mixed hashes, so their top
    bits are uniform."""

    def __init__(self) -> None:
        self._runs: list[np.ndarray] = []
        self._count = 0
        self._k = 16
        self._bits = np.zeros(1 << (self._k - 3), dtype=np.uint8)

    def contains(self, values: np.ndarray) -> np.ndarray:
        """Which of ``values`` (uint64, sorted) are in the set."""
        out = np.zeros(values.size, dtype=bool)
        if not self._runs:
            return out
        b = values >> np.uint64(64 - self._k)
        maybe = np.flatnonzero(
            (self._bits[b >> np.uint64(3)] >> (b & np.uint64(7)).astype(np.uint8)) & 1
        )
        if maybe.size:
            sub = values[maybe]
            hit = np.zeros(sub.size, dtype=bool)
            for run in self._runs:
                pos = np.searchsorted(run, sub)
                np.minimum(pos, run.size - 1, out=pos)
                hit |= run[pos] == sub
            out[maybe[hit]] = True
        return out

    def add(self, values: np.ndarray) -> None:
        """Add ``values`` (uint64, sorted, distinct, none in the set yet)."""
        if not values.size:
            return
        self._count += values.size
        if self._count * 8 > 1 << self._k:  # rebuilt at 32 to 64 bits a value
            self._k = min(40, (self._count * 32).bit_length())
            self._bits = np.zeros(1 << (self._k - 3), dtype=np.uint8)
            for run in self._runs:
                self._mark(run)
        self._mark(values)
        runs = self._runs
        runs.append(values)
        while len(runs) >= _FAN and runs[-_FAN].size <= runs[-1].size:
            merged = np.concatenate(runs[-_FAN:])
            merged.sort()
            runs[-_FAN:] = [merged]

    def _mark(self, values: np.ndarray) -> None:
        """Set the bits of ``values`` (sorted: their bytes come in runs)."""
        if not values.size:
            return
        b = values >> np.uint64(64 - self._k)
        byte = b >> np.uint64(3)
        bit = np.left_shift(1, (b & np.uint64(7)).astype(np.uint8), dtype=np.uint8)
        first = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))
        self._bits[byte[first]] |= np.bitwise_or.reduceat(bit, first)


class KeyLog:
    """Keys of a sample read chunk by chunk, each chunk checked for a duplicate as it is
    added (``add``): the first repeat is reported at the chunk that holds it, before
    the rest of the input is read.

    Kept per key seen: its 64-bit hash (twice: in the sorted runs of ``_SortedRuns``
    and in file order per chunk), its UTF-8 bytes (the chunk's text, or the keys'
    bytes copied out of it where the other columns take most of it) and its line. Keys
    are compared as bytes only where hashes tie, so different keys with one hash are
    not duplicates. About 26 bytes a key plus the keys' bytes."""

    def __init__(self) -> None:
        self._set = _SortedRuns()
        self._hashes: list[np.ndarray] = []  # each chunk's hashes, in file order
        self._keys: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # buf, start, end
        self._lines: list[Sequence[int] | np.ndarray] = []
        self._dup: tuple[str, int, int] | None = None

    def add(
        self,
        hashes: np.ndarray,
        buf: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        lines: Sequence[int],
    ) -> tuple[str, int, int] | None:
        """A chunk's keys ``buf[start[i]:end[i]]`` at file lines ``lines``, with their
        ``math.pws.key_hashes``: the first of them (in file order) that repeats an
        earlier key, as (key, its line, the line of its first occurrence), or ``None``
        (the chunk is then kept). After a duplicate, further chunks are not looked at."""
        if self._dup is not None:
            return self._dup
        if len(start) == 0:
            return None
        h = np.asarray(hashes, dtype=np.uint64)
        distinct = np.sort(h)
        tie = distinct[1:] == distinct[:-1]
        seen = self._set.contains(distinct)  # a hash seen in an earlier chunk
        cand = np.isin(h, distinct[seen]) if seen.any() else np.zeros(h.size, dtype=bool)
        if tie.any():  # a hash twice in this chunk
            cand |= np.isin(h, distinct[1:][tie])
            distinct = np.unique(distinct)
        if cand.any():
            for i in np.flatnonzero(cand).tolist():
                key = buf[int(start[i]) : int(end[i])].tobytes()
                first = self._earlier(key, h[i], h[:i], buf, start, end, lines)
                if first is not None:
                    self._dup = (key.decode(), int(lines[i]), first)
                    return self._dup
            distinct = distinct[~self._set.contains(distinct)]
        self._set.add(distinct)
        self._keep(h, buf, start, end, lines)
        return None

    def first(self) -> tuple[str, int, int] | None:
        """The duplicate ``add`` found, or ``None``."""
        return self._dup

    def _earlier(
        self,
        key: bytes,
        value: np.uint64,
        before: np.ndarray,
        buf: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        lines: Sequence[int],
    ) -> int | None:
        """The line of ``key`` in an earlier chunk (keys kept are distinct) or earlier
        in this one (``before``: the hashes of the chunk's keys before it)."""
        for hashes, (kb, ks, ke), lns in zip(self._hashes, self._keys, self._lines, strict=True):
            for j in np.flatnonzero(hashes == value).tolist():
                if kb[int(ks[j]) : int(ke[j])].tobytes() == key:
                    return int(lns[j])
        for j in np.flatnonzero(before == value).tolist():
            if buf[int(start[j]) : int(end[j])].tobytes() == key:
                return int(lines[j])
        return None

    def _keep(
        self,
        h: np.ndarray,
        buf: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        lines: Sequence[int],
    ) -> None:
        start = np.asarray(start, dtype=np.int64)
        end = np.asarray(end, dtype=np.int64)
        width = end - start
        total = int(width.sum())
        if 2 * total < buf.size:
            # the other columns take most of the text: copy the keys' bytes back to back
            # (byte k of the copy is byte k + (start − where the key lands) of the text)
            end = np.cumsum(width)
            shift = np.repeat(start - (end - width), width)
            shift += np.arange(total, dtype=np.int64)
            buf, start = buf[shift], end - width
            del shift
        small = np.int32 if buf.size < 2**31 else np.int64
        self._keys.append((buf, start.astype(small), end.astype(small)))
        self._hashes.append(h)
        self._lines.append(lines if isinstance(lines, range) else np.asarray(lines, np.int64))


def _compact(keys: list[str], raw: np.ndarray | None) -> np.ndarray:
    """The keys as UTF-8 in a fixed-width bytes array (exact: no key holds a NUL, which
    such an array would drop at the end), else as an object array of the strings."""
    if "\x00" in "".join(keys):
        return np.array(keys, dtype=object)
    if raw is None:
        try:
            raw = np.array(keys, dtype="S")  # ASCII keys: no per-key encode
        except UnicodeEncodeError:
            raw = np.array([k.encode() for k in keys], dtype=bytes)
    if raw.dtype.itemsize > _MAX_WIDTH:
        return np.array(keys, dtype=object)
    return raw


def _text(texts: np.ndarray, j: int) -> str:
    v = texts[j]
    return v.decode() if isinstance(v, bytes) else str(v)
