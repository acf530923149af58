"""Duplicate keys of a weighted sample, found through sorted 64-bit hashes.

``pws sanitize`` refuses a sample that lists a key twice, naming the line of the
repeat and of the first occurrence. A dict of every key with its line cost most of a
10⁷-key run and over a gigabyte; here the keys are hashed (the sanitiser's own 64-bit
key hash, ``math.pws.key_hashes``, computed once for the coins and this) and compared
as strings only where a hash ties: with 64-bit hashes a tie between different keys is
a ~n²/2⁶⁵ event, so the keys are kept compactly (UTF-8 bytes in numpy arrays) and read
only then. ``KeyLog`` (what ``pws sanitize`` uses) sorts all hashes once, at the end;
``KeySet`` keeps them sorted as chunks arrive (one merge per chunk) and reports a
duplicate at the chunk that holds it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
        ``math.pws.key_hashes``, if computed already (the sanitiser's coins need them)."""
        from ampcalc.math.pws import key_hashes

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


class KeyLog:
    """Keys of a whole sample, checked for duplicates once, at the end (``first``).

    Each chunk adds its keys' 64-bit hashes and the keys themselves as byte ranges of
    its UTF-8 text (``load.bytecols.ByteColumn``); ``first`` sorts all hashes once and
    compares keys only where hashes tie. A merge per chunk (``KeySet``) cost a pass over
    every hash seen so far for each chunk."""

    def __init__(self) -> None:
        self._hashes: list[np.ndarray] = []
        self._keys: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._lines: list[Sequence[int]] = []

    def add(
        self,
        hashes: np.ndarray,
        buf: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        lines: Sequence[int],
    ) -> None:
        """A chunk's keys ``buf[start[i]:end[i]]`` at file lines ``lines``, with their
        ``math.pws.key_hashes``."""
        small = np.int32 if buf.size < 2**31 else np.int64
        self._hashes.append(np.asarray(hashes, dtype=np.uint64).view(np.int64))
        self._keys.append((buf, start.astype(small), end.astype(small)))
        self._lines.append(lines)

    def first(self) -> tuple[str, int, int] | None:
        """The first key (in file order) that repeats an earlier one, as (key, its
        line, the line of its first occurrence), or ``None``."""
        if not self._hashes:
            return None
        every = np.concatenate(self._hashes)
        every.sort()
        tie = every[1:] == every[:-1]
        if not tie.any():
            return None
        tied = np.unique(every[1:][tie])
        del every
        seen: dict[bytes, int] = {}
        for h, (buf, start, end), lines in zip(self._hashes, self._keys, self._lines, strict=True):
            for j in np.flatnonzero(np.isin(h, tied)).tolist():
                key = buf[int(start[j]) : int(end[j])].tobytes()
                earlier = seen.get(key)
                if earlier is not None:
                    return key.decode(), int(lines[j]), earlier
                seen[key] = int(lines[j])
        return None


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
