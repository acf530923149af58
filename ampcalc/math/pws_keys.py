"""The sanitizer of private weighted sampling: its keys' hashes and draws (numpy).

Cohen et al. 2021, Alg. 2 (Cohen et al. 2021) with a counter-based per-key
generator: each key's uniform is a pure function of the seed and the key's 64-bit hash
(FNV-1a over its UTF-8 bytes and length, then SplitMix64: ``key_hash_reference`` is the
definition), so chunked, streamed and distributed runs draw the same coins.
``sanitize_keys`` and ``sanitize_hashes`` keep or drop each key, and with Algorithm 4's
rows draw its sanitized frequency.
"""

from __future__ import annotations

import numpy as np

from ampcalc.math.pws_rows import Rows

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (a bijection on 64-bit words), vectorised."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        mixed: np.ndarray = x ^ (x >> np.uint64(31))
        return mixed


def encode_keys(keys: list[str]) -> np.ndarray:
    """The keys' UTF-8 bytes as one fixed-width bytes array (what ``key_hashes`` reads;
    shorter keys are zero-padded to the widest, which the hash does not see)."""
    if keys:
        width = len(keys[0])
        text = "".join(keys)
        if len(text) == width * len(keys) and width and text.isascii():
            # one length (their sum is n·width and none is longer): one buffer, viewed
            if max(map(len, keys)) == width:
                return np.frombuffer(text.encode("ascii"), dtype=f"S{width}")
    try:
        return np.array(keys, dtype="S")  # ASCII keys: the same bytes, no per-key encode
    except UnicodeEncodeError:
        return np.array([k.encode() for k in keys], dtype=bytes)


_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
#: a ``raw`` array up to this many bytes a row is hashed as it is; wider chunks are
#: hashed in groups of similar byte length, so one long key costs its own bytes only
_RAW_WIDTH = 64


def key_hash_reference(key: str) -> int:
    """The hash of one key in pure Python (the definition ``key_hashes`` vectorises):
    FNV-1a over the key's own UTF-8 bytes, then over its byte length (one 64-bit word),
    then the SplitMix64 finaliser."""
    m = 0xFFFFFFFFFFFFFFFF
    data = key.encode()
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & m
    h = ((h ^ len(data)) * _FNV_PRIME) & m
    h = (h + 0x9E3779B97F4A7C15) & m
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & m
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & m
    return h ^ (h >> 31)


#: the inverse of the FNV prime modulo 2⁶⁴ (the prime is odd)
_FNV_PRIME_INV = pow(_FNV_PRIME, -1, 1 << 64)


def _byte_lengths(keys: list[str], raw: np.ndarray | None) -> np.ndarray:
    """Each key's UTF-8 byte length (``raw``: the keys' bytes array, if made already)."""
    n = len(keys)
    text = "".join(keys)
    if raw is not None and "\x00" not in text:
        # a bytes array drops trailing NULs only: without NULs its lengths are exact
        return np.char.str_len(raw).astype(np.int64)
    if text.isascii():
        return np.fromiter(map(len, keys), dtype=np.int64, count=n)
    return np.fromiter((len(k.encode()) for k in keys), dtype=np.int64, count=n)


def _fnv_padded(raw: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """FNV-1a of each row's first ``lengths`` bytes, then of the length, from a
    zero-padded bytes array. A zero byte multiplies the state by the prime, so running
    over a row's padding of k zeros multiplies by primeᵏ: multiplying by the inverse
    prime's k-th power (mod 2⁶⁴) undoes it exactly, and the hash of a key does not
    depend on the width of the array it sits in."""
    n, width = raw.size, raw.dtype.itemsize
    h = np.full(n, _FNV_OFFSET, dtype=np.uint64)
    if width:
        cols = np.ascontiguousarray(raw.view(np.uint8).reshape(n, width).T)
        prime = np.uint64(_FNV_PRIME)
        with np.errstate(over="ignore"):
            for c in range(width):
                h ^= cols[c]
                h *= prime
        pad = width - lengths
        if pad.any():
            powers = np.ones(width + 1, dtype=np.uint64)
            m = 0xFFFFFFFFFFFFFFFF
            acc = 1
            for k in range(1, width + 1):
                acc = (acc * _FNV_PRIME_INV) & m
                powers[k] = acc
            with np.errstate(over="ignore"):
                h *= powers[pad]
    with np.errstate(over="ignore"):
        h ^= lengths.astype(np.uint64)
        h *= np.uint64(_FNV_PRIME)
    return h


def key_hashes(keys: list[str], raw: np.ndarray | None = None) -> np.ndarray:
    """A 64-bit hash of each key's UTF-8 bytes (FNV-1a over bytes and length, then
    SplitMix64), vectorised over keys (``raw``: ``encode_keys(keys)``, if made already).

    A key's hash depends on its own bytes only (``key_hash_reference``), not on the
    other keys hashed with it or on the width of ``raw``."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    if raw is not None and (raw.size != n or raw.dtype.itemsize > _RAW_WIDTH):
        raw = None
    lengths = _byte_lengths(keys, raw)
    top = int(lengths.max())
    if raw is None and top <= _RAW_WIDTH:
        raw = encode_keys(keys)
    if raw is not None:
        return _splitmix(_fnv_padded(raw, lengths))
    # byte lengths in [0, 64], then (2^k, 2^(k+1)]: each group padded to its own widest,
    # so a long key costs its own bytes, not every key of the chunk
    order = np.argsort(lengths, kind="stable")
    ls = lengths[order]
    bounds = [_RAW_WIDTH]
    while bounds[-1] < top:
        bounds.append(2 * bounds[-1])
    out = np.empty(n, dtype=np.uint64)
    a = 0
    for z in np.searchsorted(ls, bounds, side="right").tolist():
        if z > a:
            sel = order[a:z]
            out[sel] = _fnv_padded(encode_keys([keys[i] for i in sel.tolist()]), ls[a:z])
        a = z
    return _splitmix(out)


def byte_key_hashes(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``key_hashes`` of the keys ``buf[start[i]:end[i]]`` (their UTF-8 bytes, ranges of
    one ``uint8`` buffer), without a string or a padded copy per key.

    FNV-1a runs byte position by byte position over all keys at once: keys of one
    length read ``buf[start + c]``; keys of mixed lengths are ordered longest first, so
    the keys still running at position c are a prefix of that order and each byte is
    read once. Keys longer than 64 bytes (rare) go through ``key_hashes``."""
    n = int(start.size)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    lengths = np.asarray(end - start, dtype=np.int64)
    top = int(lengths.max())
    if top > _RAW_WIDTH:
        out = np.empty(n, dtype=np.uint64)
        long = lengths > _RAW_WIDTH
        data = buf.tobytes()
        sel = np.flatnonzero(long)
        out[sel] = key_hashes(
            [
                data[a:z].decode()
                for a, z in zip(start[sel].tolist(), end[sel].tolist(), strict=True)
            ]
        )
        short = np.flatnonzero(~long)
        if short.size:
            out[short] = byte_key_hashes(buf, start[short], end[short])
        return out
    prime = np.uint64(_FNV_PRIME)
    h = np.full(n, _FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        if int(lengths.min()) == top:
            for c in range(top):
                h ^= buf[start + c]
                h *= prime
        else:
            order = np.argsort(-lengths.astype(np.int8), kind="stable")
            first = start[order]
            # running[c]: how many keys are longer than c bytes
            running = n - np.cumsum(np.bincount(lengths, minlength=top + 1))[:top]
            for c, k in enumerate(running.tolist()):
                hk = h[:k]
                hk ^= buf[first[:k] + c]
                hk *= prime
            h[order] = h.copy()
        h ^= lengths.astype(np.uint64)
        h *= prime
    return _splitmix(h)


def key_uniforms(keys: list[str], seed: int, hashes: np.ndarray | None = None) -> np.ndarray:
    """One uniform in [0, 1) per key, a pure function of (seed, key).

    Counter-based: the key's 64-bit hash is the counter, the seed the key of a
    SplitMix64 mixing round (two rounds with the seed folded in between), so the draw
    for a key does not depend on the order, chunking or machine: chunked, streamed
    and distributed runs agree.
    """
    return hash_uniforms(key_hashes(keys) if hashes is None else hashes, seed)


def hash_uniforms(hashes: np.ndarray, seed: int) -> np.ndarray:
    """``key_uniforms`` from the keys' ``key_hashes``."""
    s = _splitmix(np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    x = _splitmix(_splitmix(hashes ^ s) ^ s)
    u: np.ndarray = (x >> np.uint64(11)).astype(float) * (1.0 / 9007199254740992.0)
    return u


def sanitize_keys(
    keys: list[str],
    freqs: np.ndarray,
    seed: int,
    *,
    p: np.ndarray,
    rows: Rows | None = None,
    hashes: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Algorithm 2 of Cohen et al. 2021: keep key x with probability p_{w_x} = π_{w_x}/q_{w_x}
    (keys only); with ``rows``, draw the token j from π_{w,•}/q_w (j = 0 drops the key).

    Returns (kept mask, tokens or None). One uniform per key (``key_uniforms``;
    ``hashes``: ``key_hashes(keys)``, if computed already).
    """
    return sanitize_hashes(
        key_hashes(keys) if hashes is None else hashes, freqs, seed, p=p, rows=rows
    )


def sanitize_hashes(
    hashes: np.ndarray,
    freqs: np.ndarray,
    seed: int,
    *,
    p: np.ndarray,
    rows: Rows | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """``sanitize_keys`` from the keys' ``key_hashes`` (all a key's draws depend on)."""
    freqs = np.asarray(freqs, dtype=np.int64)
    u = hash_uniforms(hashes, seed)
    keep = u < p[freqs - 1]
    if rows is None:
        return keep, None
    tokens = np.zeros(freqs.size, dtype=np.int64)
    kept = np.flatnonzero(keep)
    # kept keys grouped by frequency with one stable argsort (indices ascending per group)
    fk = freqs[kept]
    order = np.argsort(fk, kind="stable")
    grouped = kept[order]
    ws, starts = np.unique(fk[order], return_index=True)
    ends = np.append(starts[1:], grouped.size)[: starts.size]
    for w, a, z in zip(ws.tolist(), starts.tolist(), ends.tolist(), strict=True):
        sel = grouped[a:z]
        # keep iff u < p_w; the token is the inverse CDF of the kept part, top down
        cum = rows.token_cdf(w)
        k = np.minimum(np.searchsorted(cum, u[sel], side="right"), cum.size - 1)
        tokens[sel] = rows.lo[w] + cum.size - 1 - k
    return keep, tokens
