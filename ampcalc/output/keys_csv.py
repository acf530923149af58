"""The kept keys of ``pws sanitize`` as CSV rows, written without a ``csv.writer`` call
per row: ``key`` (or ``key,token``) lines, byte for byte what ``csv.writer`` writes, or
False (nothing written) when some cell could need quoting and the caller must use it."""

from __future__ import annotations

from typing import Any

import numpy as np


def write_key_bytes(out: Any, col: Any, idx: Any, tokens: Any) -> bool:
    """The rows ``key`` (or ``key,token``) of ``idx`` from the key column's bytes
    (``load.bytecols.ByteColumn``), the bytes ``csv.writer`` would write; False
    (nothing written) unless no cell can need quoting (``col.plain``) and no kept key
    is empty (a lone empty cell is ``""``)."""
    if idx.size == 0:
        return True
    if not col.plain:
        return False
    start = col.start[idx]
    size = col.end[idx] - start
    if int(size.min()) == 0:
        return False
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [(col.buf, start, size)]
    if tokens is not None:
        tok = tokens[idx]
        wide = len(str(int(tok.max())))
        digits = np.ascontiguousarray(tok.astype(f"S{wide}"))
        tsize = np.ones(tok.size, dtype=np.int64)
        for k in range(1, wide):
            tsize += tok >= 10**k
        comma = np.frombuffer(b",", dtype=np.uint8)
        parts.append((comma, np.zeros(tok.size, dtype=np.int64), np.ones(tok.size, np.int64)))
        parts.append((digits.view(np.uint8), np.arange(tok.size) * wide, tsize))
    line = np.frombuffer(b"\n", dtype=np.uint8)
    parts.append((line, np.zeros(idx.size, dtype=np.int64), np.ones(idx.size, np.int64)))
    out.write(gather_rows(parts).tobytes().decode())
    return True


def gather_rows(parts: list[tuple[Any, Any, Any]]) -> Any:
    """Rows made of pieces: row i is ``buf[start[i]:start[i] + size[i]]`` of each part
    in turn, all rows one after another (one ``uint8`` array)."""
    row = sum(size for _, _, size in parts)
    total = int(row.sum())
    out = np.empty(total, dtype=np.uint8)
    at = np.cumsum(row) - row  # where each row starts
    for buf, start, size in parts:
        if int(size.min()) == int(size.max()):  # one size: a block of rows × size
            step = np.arange(int(size[0]))
            out[at[:, None] + step] = buf[start[:, None] + step]
        else:
            first = np.cumsum(size) - size
            step = np.arange(int(size.sum())) - np.repeat(first, size)
            out[np.repeat(at, size) + step] = buf[np.repeat(start, size) + step]
        at = at + size
    return out


def write_key_text(out: Any, keys: list[str], idx: list[int], tokens: Any) -> bool:
    """The rows ``key`` (or ``key,token``) of ``idx`` written as one text, the bytes
    ``csv.writer`` would write; False (nothing written) if a key needs quoting: it
    holds a comma, a quote, a line break or is empty (a lone empty cell is ``""``)."""
    if not idx:
        return True
    kept = [keys[n] for n in idx]
    text = "\n".join(kept)
    if any(c in text for c in ',"\r') or "\n\n" in text or not kept[0] or not kept[-1]:
        return False
    if len(kept) != text.count("\n") + 1:
        return False  # a key with a line break
    if tokens is not None:
        tok = tokens[idx].tolist()
        text = "\n".join(map("%s,%d".__mod__, zip(kept, tok, strict=True)))
    out.write(text + "\n")
    return True
