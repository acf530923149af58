"""``pws sanitize`` over a sample file, chunk by chunk (one process).

``sanitize_sample`` reads the sample (``records.pws_files.read_sample``), checks each
chunk (frequencies, scores, then duplicate keys against every key before them, or the
key order of a streamed file), draws every key's coin from its hash (``math.pws``: a
pure function of the seed and the key) and yields what to write; it raises the first
input error at the chunk that holds it (``KeyLog``: the hashes of the keys seen). The
command writes what it yields (``write_chunk``). The Dask engine (``distributed``) runs
the same reader, checks and writer on each CSV partition in its task (the same coins: a
key's coin is a pure function of the seed and the key). No printing.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.bytecols import ByteColumn
from ampcalc.load.files import excerpt
from ampcalc.load.keyset import KeyLog
from ampcalc.math import pws as K
from ampcalc.model.errors import DesignError
from ampcalc.output.keys_csv import write_key_bytes, write_key_text
from ampcalc.records.pws_files import check_score, duplicate_message, parse_freqs, read_sample


@dataclass(frozen=True)
class SanitizedChunk:
    """One chunk of the sample and its sanitized rows.

    Attributes:
        header: the sample's column names.
        extra: indices of the columns passed through (not key, frequency or score).
        keys: the key column.
        columns: every column of the chunk (cells, or ``ByteColumn``).
        kept: indices (in the chunk) of the keys reported.
        tokens: each key's sanitized frequency (Algorithm 4), or None.
        read: keys read so far, this chunk included.
        hashes: each key's 64-bit hash (``math.pws.byte_key_hashes``).
        top: the chunk's largest frequency (0 when empty).
    """

    header: list[str]
    extra: list[int]
    keys: ByteColumn
    columns: list[Any]
    kept: np.ndarray
    tokens: np.ndarray | None
    read: int
    hashes: np.ndarray | None = None
    top: int = 0


def cells(col: Any) -> list[str]:
    """A column's cells as strings (a list, or a ``ByteColumn``'s ``tolist``)."""
    return col if isinstance(col, list) else list(col.tolist())


def sanitize_sample(
    sample: str,
    chunk: int,
    sanitizer: Any,
    params: Any,
    seed: int,
    *,
    stream: bool = False,
    progress: Callable[[int, int], None] | None = None,
    on_header: Callable[[list[str], list[int]], None] | None = None,
) -> Iterator[SanitizedChunk]:
    """The sanitized chunks of ``sample`` (``records.pws_sanitize.PwsSanitiser`` tables,
    extended on demand). ``stream``: the file is sorted by key, each key once (checked
    chunk by chunk; no duplicate log is kept). ``on_header(header, extra)`` is called
    once, as soon as the header is read (before the first chunk is checked), so a
    writer can start its output.

    Raises:
        DesignError: a bad cell, a duplicate key, or a streamed file out of order.
    """
    seen = KeyLog()
    prev: tuple[str, int] | None = None
    n_in = 0
    for header, lines, cols in read_sample(sample, chunk):
        ki, fi = header.index("key"), header.index("frequency")
        si = header.index("score") if "score" in header else None
        extra = [c for c in range(len(header)) if c not in (ki, fi, si)]
        if on_header is not None and n_in == 0:
            on_header(header, extra)
        kcol = cols[ki]
        if not isinstance(kcol, ByteColumn):
            kcol = ByteColumn.from_strings(kcol)
        freqs = parse_freqs(cols[fi], sample, lines)
        if si is not None:
            for n, v in enumerate(cells(cols[si])):
                check_score(v, params, int(freqs[n]), sample, lines[n])
        if stream:
            prev = _check_order(kcol.tolist(), lines, prev, sample)
        hashes = K.byte_key_hashes(kcol.buf, kcol.start, kcol.end)
        if not stream:
            dup = seen.add(hashes, kcol.buf, kcol.start, kcol.end, lines)
            if dup is not None:
                raise DesignError(duplicate_message(sample, *dup))
        top = int(freqs.max()) if freqs.size else 0
        if freqs.size:
            sanitizer.ensure(top, f"{sample}:{lines[int(np.argmax(freqs))]}")
        kept, tokens = K.sanitize_hashes(hashes, freqs, seed, p=sanitizer.p, rows=sanitizer.rows)
        n_in += len(kcol)
        if progress is not None:
            progress(n_in, 0)  # keys so far; the file's count is not known ahead
        yield SanitizedChunk(
            header=header,
            extra=extra,
            keys=kcol,
            columns=cols,
            kept=np.flatnonzero(kept),
            tokens=tokens,
            read=n_in,
            hashes=hashes,
            top=top,
        )


def write_chunk(out: Any, writer: Any, part: SanitizedChunk, frequencies: bool) -> None:
    """Write a chunk's kept rows (``key[,frequency][,extra columns]``) to the text
    handle ``out`` (opened with ``newline=""``), the bytes ``writer`` (a ``csv.writer``
    on ``out`` with ``lineterminator="\\n"``) would write: from the key bytes where no
    cell needs quoting, else through ``writer``."""
    extra, kcol, idx = part.extra, part.keys, part.kept
    tokens = part.tokens if frequencies else None
    if not extra and write_key_bytes(out, kcol, idx, tokens):
        return  # written from the bytes read: no cell needs quoting
    keys = kcol.tolist()
    ids = idx.tolist()
    more = [cells(part.columns[c]) for c in extra]
    if not more and write_key_text(out, keys, ids, tokens):
        return  # written directly: no cell needed quoting
    if tokens is not None:
        tok = tokens.tolist()
        writer.writerows([keys[n], tok[n], *[m[n] for m in more]] for n in ids)
    else:
        writer.writerows([keys[n], *[m[n] for m in more]] for n in ids)


def _check_order(
    keys: list[str], lines: Sequence[int], prev: tuple[str, int] | None, sample: str
) -> tuple[str, int]:
    """A streamed chunk's keys strictly increase (also across the chunk before it)."""
    order = np.flatnonzero(np.fromiter(map(operator.le, keys[1:], keys[:-1]), bool, len(keys) - 1))
    if prev is not None and keys[0] <= prev[0]:
        order = np.concatenate(([-1], order))
    if order.size:
        n = int(order[0]) + 1
        if n > 0:
            pk, pl = keys[n - 1], lines[n - 1]
        else:
            assert prev is not None  # −1 leads `order` only after a chunk
            pk, pl = prev
        what = "repeats" if keys[n] == pk else "comes after"
        raise DesignError(
            f"{sample}:{lines[n]}: key {excerpt(keys[n])} {what} key {excerpt(pk)} of line "
            f"{pl} (streaming needs input sorted by key, each key once)"
        )
    return keys[-1], lines[-1]
