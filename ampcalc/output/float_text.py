"""The ``float.__repr__`` text of float arrays, made in bulk.

``float_texts`` gives one string per value and ``float_bytes`` the texts joined by
commas as one byte string. Both take orjson's text when orjson is installed: orjson
prints the same shortest round-trip digits as ``repr`` (the shortest string that reads
back as the same double, the nearest one on a tie) and spells a few of them
differently, which is rewritten here with whole-array numpy operations: exponents
(orjson ``e-7``/``e16``, ``repr`` ``e-07``/``e+16``) and the decade [1e-5, 1e-4),
which orjson writes positionally (``0.0000d…``) and ``repr`` as ``d.…e-05``.
``_orjson_ok`` checks once, on the values where the spellings differ, that the
installed orjson respelt gives ``repr``'s text; otherwise, and without orjson, the
texts are ``repr``'s own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


def float_texts(arr: np.ndarray, null: str) -> list[str]:
    """``float.__repr__`` of each value (NaN: ``null``); through orjson when installed
    and its spelling, respelt, matches ``repr`` on the boundary cases (``_orjson_ok``)."""
    fast = _orjson_texts(arr) if _orjson_ok() else None
    if fast is None:
        texts = list(map(float.__repr__, arr.tolist()))
        bad = np.isnan(arr)
    else:
        texts, bad = fast
        if bad.any():  # orjson writes NaN and ±inf as null
            for i in np.flatnonzero(bad).tolist():
                texts[i] = float.__repr__(float(arr[i]))
        bad = np.isnan(arr)
    if bad.any():
        for i in np.flatnonzero(bad).tolist():
            texts[i] = null
    return texts


def _load_orjson() -> Any:
    try:
        import orjson  # lazy: optional (the fast extra)
    except ImportError:  # optional: the exact pure-Python path is used without it
        return None
    return orjson


_ORJSON: Any = _load_orjson()
_ORJSON_OK: list[bool] = []


def _orjson_ok() -> bool:
    """Whether the installed orjson, respelt, writes ``repr``'s text: checked once, on
    the values where the spellings differ (exponents of one and two digits, both
    signs, the [1e-5, 1e-4) decade, subnormals), so an orjson release that spells
    floats differently falls back to the exact path instead of changing the output."""
    if _ORJSON is None:
        return False
    if not _ORJSON_OK:
        probe = np.array(
            [1e-7, 3e-05, 1.5e-05, 1e16, 7e16, 1e22, 1.2345678901234568e17, 1e-100, 2e-300,
             5e-324, 0.1, -2.5e-08, 1e100, 123.0, -0.0, 9.999999999999999e-05, 1e-05,
             -1.0000000000000003e-05, 1e15, 123456789012345.6, 1e-04]
        )  # fmt: skip
        got = _orjson_texts(probe)
        _ORJSON_OK.append(got is not None and got[0] == list(map(float.__repr__, probe.tolist())))
    return _ORJSON_OK[0]


_E, _MINUS, _COMMA, _ZERO, _PLUS = (ord(c) for c in "e-,0+")


def _orjson_texts(arr: np.ndarray) -> tuple[list[str], np.ndarray] | None:
    """The texts of ``float.__repr__`` (``_orjson_text``), one string each, and the
    mask of non-finite values (written as null by orjson: the caller respells them)."""
    a = np.ascontiguousarray(arr, dtype=np.float64)
    text = _orjson_text(a)
    if text is None:
        return None
    texts = text.split(",") if a.size else []
    if len(texts) != a.size:
        return None
    return texts, ~np.isfinite(a)


_CLOSE = ord("]")
_DECADE_HEAD = np.frombuffer(b"0.0000", dtype=np.uint8)
_DOT_E05 = np.frombuffer(b".e-05", dtype=np.uint8)


def _orjson_text(a: np.ndarray) -> str | None:
    """``_orjson_bytes`` as text."""
    raw = _orjson_bytes(a)
    return None if raw is None else raw.decode("ascii")


def _orjson_bytes(a: np.ndarray) -> bytes | None:
    """``",".join`` of ``float.__repr__`` of each value of the float64 array ``a``:
    orjson's text with its spelling rewritten (``_respell_decade``,
    ``_respell_exponents``). NaN and ±inf come out as ``null`` (the caller respells
    them); ``None`` when orjson refuses the array or its text is not the expected shape
    (the caller takes ``repr``)."""
    try:
        raw: bytes = _ORJSON.dumps(a, option=_ORJSON.OPT_SERIALIZE_NUMPY)
    except TypeError:  # orjson.JSONEncodeError: the exact pure-Python path
        return None
    if a.size == 0:
        return b""
    mag = np.abs(a)
    decade = np.flatnonzero((mag >= 1e-5) & (mag < 1e-4))
    if decade.size == 0 and b"e" not in raw:
        return raw[1:-1]
    # "[t,t,…,t]": every text ends in "," or the closing "]"; b[e + 3] exists
    b = np.frombuffer(raw + b"\0\0\0", dtype=np.uint8)
    edits = _Edits()
    if decade.size and not _respell_decade(edits, b, a, decade):
        return None
    _respell_exponents(edits, b)
    if not edits.places:
        return raw[1:-1]
    return _apply(edits, b)


@dataclass
class _Edits:
    """Bytes to insert into orjson's text ``b`` and the decade heads to drop from it.

    ``places[k]``: where bytes are inserted (before the byte there); ``inserted[k]``:
    the bytes; ``dropped_before[k]``: the bytes dropped before each of those places (the
    heads of the decade texts before it). ``heads``: the places of every byte of the
    heads ``0.0000`` dropped, one row per decade text; ``first``: where each head starts.
    """

    places: list[np.ndarray] = field(default_factory=list)
    inserted: list[np.ndarray] = field(default_factory=list)
    dropped_before: list[np.ndarray | int] = field(default_factory=list)
    first: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    heads: np.ndarray = field(default_factory=lambda: np.empty((0, 6), dtype=np.intp))


def _respell_decade(edits: _Edits, b: np.ndarray, a: np.ndarray, decade: np.ndarray) -> bool:
    """The edits of the texts of ``a[decade]``, all in [1e-5, 1e-4): orjson writes
    [-]0.0000d₁d₂…dₖ, repr [-]d₁.d₂…dₖe-05 (d₁e-05 for one digit): drop "0.0000", put "."
    after d₁ (when more digits follow) and "e-05" before the end. False when the text
    is not of that shape."""
    ends = np.flatnonzero(b == _COMMA)  # and the closing "]", 4 bytes from the end
    if ends.size != a.size - 1 or b[-4] != _CLOSE:
        return False
    ends = np.append(ends, b.size - 4)
    stop = ends[decade]
    first = np.concatenate(([1], ends[:-1] + 1))[decade] + (a[decade] < 0)
    heads = first[:, None] + np.arange(6)
    if not (
        bool(np.all(b[heads] == _DECADE_HEAD))
        and bool(np.all(b[first + 6] != _ZERO))
        and bool(np.all(first + 7 <= stop))
    ):
        return False
    edits.first, edits.heads = first, heads
    # per decade text, in order: "." after d₁ (when more digits follow), then "e-05" at
    # its end; the j-th text's own bytes follow its head and the j heads before it
    place = np.empty((stop.size, 5), dtype=np.intp)
    place[:, 0] = first + 7
    place[:, 1:] = stop[:, None]
    dropped = 6 * np.arange(1, stop.size + 1)
    if bool(np.all(place[:, 0] < stop)):  # the usual case: no text of one digit
        edits.places.append(place.ravel())
        edits.inserted.append(np.tile(_DOT_E05, stop.size))
        edits.dropped_before.append(np.repeat(dropped, 5))
    else:
        used = np.ones(place.shape, dtype=bool)
        used[:, 0] = place[:, 0] < stop
        edits.places.append(place[used])
        edits.inserted.append(np.broadcast_to(_DOT_E05, place.shape)[used])
        edits.dropped_before.append(np.broadcast_to(dropped[:, None], place.shape)[used])
    return True


def _respell_exponents(edits: _Edits, b: np.ndarray) -> None:
    """The edits of the exponents: insert "0" after "e-" before a lone digit, "+" after
    "e" before a digit, and "0" after that "+" before a lone digit."""
    e = np.flatnonzero(b == _E)
    if not e.size:
        return
    sign = b[e + 1]
    signed = (sign == _MINUS) | (sign == _PLUS)
    # signed exponents ("e-7"; "e+16" from orjson 3.10 on) get a "0" before a lone
    # digit; bare ones ("e16", older orjson) get the "+" too
    es = e[signed]
    after = b[es + 3]
    x = es[(after == _COMMA) | (after == _CLOSE)] + 2
    edits.places.append(x)
    edits.inserted.append(np.full(x.size, _ZERO, np.uint8))
    eb = e[~signed]
    if eb.size:
        after = b[eb + 2]
        lone = (after == _COMMA) | (after == _CLOSE)
        # "+" then (before a lone digit) "0", both at eb + 1
        y = np.repeat(eb + 1, 1 + lone)
        edits.places.append(y)
        w = np.full(y.size, _PLUS, np.uint8)
        w[np.cumsum(1 + lone)[lone] - 1] = _ZERO
        edits.inserted.append(w)
    # an exponent text is never a decade text: the heads dropped before it are the
    # decade texts before it (none when there are none: no search)
    first = edits.first
    for z in edits.places[len(edits.dropped_before) :]:
        edits.dropped_before.append(6 * np.searchsorted(first, z) if first.size else 0)


def _apply(edits: _Edits, b: np.ndarray) -> bytes:
    """``b`` with ``edits`` made, without its "[", "]" and the padding after it."""
    places, inserted = edits.places, edits.inserted
    pos = np.concatenate(places) if len(places) > 1 else places[0]
    val = np.concatenate(inserted) if len(inserted) > 1 else inserted[0]
    less = (
        np.concatenate(
            [
                np.broadcast_to(g, z.shape)
                for g, z in zip(edits.dropped_before, places, strict=True)
            ]
        )
        if edits.first.size
        else None
    )
    if len(places) > 1:
        order = np.argsort(pos, kind="stable")  # in order at the same place
        pos, val = pos[order], val[order]
        if less is not None:
            less = less[order]
    # each inserted byte lands at its place plus the bytes inserted before it, less
    # the bytes dropped before it; the kept bytes fill the other places, in order
    new = pos + np.arange(pos.size)
    if less is not None:
        keep = np.ones(b.size, dtype=bool)
        keep[edits.heads.ravel()] = False
        b = b[keep]
        new -= less
    out = np.empty(b.size + pos.size, dtype=np.uint8)
    slots = np.ones(out.size, dtype=bool)
    slots[new] = False
    out[slots] = b
    out[new] = val
    return out[1:-4].tobytes()


def float_bytes(arr: np.ndarray, *, counted: bool = False) -> bytes | None:
    """``",".join`` of the ``repr`` texts of finite floats, as bytes, without a string
    per value (orjson's text, respelt); ``None``: no orjson or not finite. ``counted``:
    the caller counts the texts itself (``arrow_rows.texts_array``)."""
    if not _orjson_ok() or not bool(np.isfinite(arr).all()):
        return None
    raw = _orjson_bytes(np.ascontiguousarray(arr, dtype=np.float64))
    if raw is None or (not counted and raw.count(b",") != arr.size - 1):
        return None
    return raw
