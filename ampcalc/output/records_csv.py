"""``np.savetxt``'s ``%d``/``%.17g`` CSV text of numeric columns, formatted in numpy.

Per-record outputs (``ampcalc weights``: up to 10⁷ rows × 4 columns) get the bytes
``np.savetxt`` would write, made column-wise with array arithmetic instead of one
``%``-template per row:

* ``%.17g`` of a finite float x ≠ 0 is the 17 significant digits of x rounded to
  nearest: the integer N = round(|x|·10^k), 10¹⁶ <= N < 10¹⁷, k = 16 − E, E the decimal
  exponent. |x|·10^k is evaluated as a double-double: 10^k is held as P_hi + P_lo
  (``_POW``: P_hi the nearest double, P_lo the nearest double to the rest, exact
  rationals), x·P_hi exactly by Dekker's two-product (Veltkamp splitting: separate
  IEEE operations, which numpy never fuses), x·P_lo rounded. For 10⁻²⁰⁰ <= |x| <= 10²⁰⁰
  the total error is below 10⁻¹⁴ (relative error 2⁻¹⁰⁴ of a value below 2·10¹⁷, plus
  the rounding of the low part, |low| < 40), so N and E are exact wherever |x|·10^k
  is more than 10⁻⁶ away from a tie (j + 1/2); within 10⁻⁶ of 10¹⁶ or 10¹⁷ (exact
  powers of ten) the text is 1 followed by 16 zeros at the exponent either side gives
  (``_round17``). 0, −0, ±inf and NaN are spelt as ``%`` spells them. A row holding a
  value nearer than that to a tie (exact ties included), or outside that range
  (subnormals too), is formatted by Python's ``%`` itself (``rows_text``): the text is
  Python's wherever the arithmetic could not prove it.
* E is first estimated from the binary exponent (a table) and corrected by one where
  |x|·10^k falls outside [10¹⁶, 10¹⁷).
* The text is then spelt as Python's ``%g`` spells it (``"%.17g" % x``): fixed notation
  for −4 <= E < 17, otherwise ``d.ddde±XX``; trailing zeros and a bare point removed.

Each row is laid out in a byte matrix whose unused cells hold 0 (digits not printed,
point slots not used...), and the rows are the non-zero bytes in order: the text never
contains a NUL byte. ``tests/test_records_csv.py`` compares the bytes with ``%``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

_DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)
#: the 4 ASCII digits of 0..9999 (zero-padded), one row each
_QUAD = (np.arange(10_000)[:, None] // np.array([1000, 100, 10, 1]) % 10 + ord("0")).astype(
    np.uint8
)
_LOW, _HIGH = 1e-200, 1e200  # |x| formatted by the arithmetic (else: Python)
_TIE = 1e-6  # fractions within this of 1/2 go to Python (the error is below 1e-14)
_K_MIN, _K_MAX = -240, 240  # 10^k held for these k (|x| range above, with margin)


def _powers() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """P_hi, P_lo with P_hi + P_lo = 10^k to 2⁻¹⁰⁶ relative, and P_hi's Veltkamp halves."""
    ks = range(_K_MIN, _K_MAX + 1)
    hi = np.empty(len(ks))
    lo = np.empty(len(ks))
    for i, k in enumerate(ks):
        exact = Fraction(10) ** k
        h = float(exact)  # correctly rounded (Fraction.__float__)
        hi[i] = h
        lo[i] = float(exact - Fraction(h))
    h_hi, h_lo = _split(hi)
    return hi, lo, h_hi, h_lo


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split: a = a_hi + a_lo exactly, each half of 26 bits or fewer."""
    c = a * 134217729.0  # 2^27 + 1
    a_hi = c - (c - a)
    return a_hi, a - a_hi


#: by biased binary exponent b (v in [2^(b−1023), 2^(b−1022))): about floor(log10 of
#: the interval's low end), and the next power of ten as a double (an estimate of E:
#: one off at most, which the retries settle)
_E_OF_B = np.floor((np.arange(2048) - 1023) * math.log10(2)).astype(np.int64)
_TEN_OF_B = 10.0 ** np.minimum(_E_OF_B + 1, 308).astype(float)

_POW: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None


def _pow() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """P_hi, P_lo and P_hi's Veltkamp halves, each indexed by k − _K_MIN (four 1-D
    tables: four ``take`` calls cost a tenth of one gather of rows of a 2-D table)."""
    global _POW
    if _POW is None:
        _POW = _powers()
    return _POW


def _scaled(v: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, lo) with p + lo = v·10^k within 10⁻¹⁴ (v > 0 in range, |v·10^k| ~ 10¹⁶..10¹⁷)."""
    i = k - _K_MIN
    hi, lo, h_hi, h_lo = _pow()
    ph, pl, phh, phl = hi.take(i), lo.take(i), h_hi.take(i), h_lo.take(i)
    p = v * ph
    v_hi, v_lo = _split(v)
    err = ((v_hi * phh - p) + v_hi * phl + v_lo * phh) + v_lo * phl  # v·ph − p, exact
    return p, err + v * pl


def _significand(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, E, ok): 17-digit N = round(v·10^(16−E)) with 10¹⁶ <= N < 10¹⁷, for v in
    [_LOW, _HIGH]; ``ok`` False where it is not proven (near a tie)."""
    # E from the binary exponent: floor(log10(2^b)), plus one at or above the next
    # power of ten (an estimate where 10^j is not a double: the retries settle it)
    b = v.view(np.uint64) >> np.uint64(52)
    e = _E_OF_B.take(b)
    e += v >= _TEN_OF_B.take(b)
    n, ok, retry, step = _round17(v, e)
    for _ in range(3):  # log10's estimate is off by one at most
        if retry.size == 0:
            break
        vr, er = v[retry], e[retry] + step
        nr, okr, again, step = _round17(vr, er)
        n[retry], ok[retry], e[retry] = nr, okr, er
        retry = retry[again]
    if retry.size:
        ok[retry] = False
    return n, e, ok


def _round17(
    v: np.ndarray, e: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """N = round(v·10^(16−e)) (``e`` is raised by one where the rounding carries), the
    rows where it is proven, the rows whose ``e`` is off (10^16 <= y < 10^17 fails) and
    the step (−1 or +1) that moves their ``e`` toward the right one."""
    p, lo = _scaled(v, 16 - e)  # y = p + lo (to 1e-14), |lo| < 40
    # E is right when 10^16 <= y < 10^17; p >= 10^16 − 64 > 2^53 is an integer there
    fl = np.floor(lo)
    frac = lo - fl
    with np.errstate(invalid="ignore"):
        base = p.astype(np.int64)
    base += fl.astype(np.int64)  # floor(y) where p is in range
    off = (p < 1e16 - 64) | (p > 1e17 + 64) | (base < 10**16) | (base >= 10**17)
    # Within _TIE of 10^16 or 10^17 (exact powers of ten reach it) the side is not
    # known, but the text is: y just below 10^16 means E is one less, and there
    # 10·y > 10^17 − 10⁻⁵ rounds up to 10^17, i.e. 1.0000000000000000·10^E again;
    # y just above 10^17 means E is one more, and y/10 rounds to 10^16 at E + 1, what
    # rounding y up to 10^17 gives (the carry below). So these rows round as they
    # are and are not retried.
    edge = ((base == 10**16 - 1) | (base == 10**17 - 1)) & (frac > 1.0 - _TIE)
    edge |= ((base == 10**16) | (base == 10**17)) & (frac < _TIE)
    ok = ~(np.abs(frac - 0.5) <= _TIE)  # near a tie: Python's
    off &= ~edge
    retry = np.flatnonzero(off)
    # the side of the range y is on: from the exact floor(y) where p is near the
    # range (p alone can round onto 10^16 from below), else from p
    pr, br = p[retry], base[retry]
    step = np.where((pr < 1e16 - 64) | ((pr <= 1e17 + 64) & (br < 10**16)), -1, 1)
    base += frac > 0.5
    # rounding up to 10^17: 1.0000000000000000e(E+1) (rows with ``e`` off are redone)
    carry = (base == 10**17) & ~off
    if carry.any():
        base[carry] = 10**16
        e += carry
    return base, ok, retry, step


#: the 4 ASCII digits of 0..9999 packed in one little-endian uint32 each
_QUAD32 = _QUAD.view(np.uint32).ravel()
#: trailing zero digits of 0..9999 written with four digits (0: 4)
_TZ = np.cumprod(_QUAD[:, ::-1] == ord("0"), axis=1).sum(axis=1).astype(np.int64)
#: the ASCII digit d shifted to the top byte of a little-endian uint32
_TOP = (_DIGITS.astype(np.uint32) << 24).astype(np.uint32)
#: a little-endian uint32 mask keeping its first k bytes, k = 0..4
_WMASK = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF], dtype=np.uint32)
#: _QUAD32 with the trailing zero digits as 0 bytes (0: all four)
_QUAD32_TRIM = _QUAD32 & _WMASK[4 - _TZ]
#: _QUAD32, then _QUAD32_TRIM (index g + 10000 where only zero groups follow)
_QUAD32_BOTH = np.concatenate([_QUAD32, _QUAD32_TRIM])


def float_cells(x: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The bytes of ``"%.17g" % v`` for each float, one row each (0 = no byte), as
    column blocks to be laid side by side, and the mask of the values left to Python's
    ``%`` (their cells are empty)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    v = np.abs(x)
    fast = (v >= _LOW) & (v <= _HIGH)  # False for 0, inf, NaN
    all_fast = bool(fast.all())
    digits, e, ok = _significand(v if all_fast else np.where(fast, v, 1.0))
    fast &= ok
    all_fast = all_fast and bool(ok.all())
    # spelt without digits: 0, -0, inf, -inf, nan
    word = (
        np.zeros(0, dtype=np.int64)
        if all_fast
        else np.flatnonzero(~fast & ((v == 0) | ~np.isfinite(v)))
    )
    d0, *groups = _digit_groups(digits)
    words, sig = _significant_words(d0, groups)
    fixed = (e >= -4) & (e < 17)
    whole = fixed & (e >= 0)
    # digits printed: the integer part in full, then up to the last significant digit
    shown = np.where(whole, np.maximum(sig, e + 1), sig)
    if not all_fast:
        shown[~fast] = 0
        fixed &= fast
        whole &= fast
        words[~fast] = 0
    sci = ~fixed if all_fast else fast & ~fixed
    _print_integer_zeros(words, groups, shown, sig)
    parts = _sign_cells(x, fast, all_fast, word)
    parts += _word_cells(v, word)
    parts += _leading_zero_cells(fixed & (e < 0), e)
    parts += _digit_cells(words, _point_after(whole, sci, e, sig))
    parts += _exponent_cells(sci, e)
    slow = ~fast
    if word.size:
        slow[word] = False
    return parts, slow


def _digit_groups(digits: np.ndarray) -> tuple[np.ndarray, ...]:
    """The 17-digit integers as their leading digit d0 and four groups of four digits."""
    d0 = digits // 10**16
    rest = digits - d0 * 10**16
    g1 = rest // 10**12
    rest -= g1 * 10**12
    g2 = rest // 10**8
    rest -= g2 * 10**8
    g3 = rest // 10**4
    g4 = rest - g3 * 10**4
    return d0, g1, g2, g3, g4


def _significant_words(d0: np.ndarray, groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(words, sig): the ASCII digits as five little-endian uint32 per row (d0 the top
    byte of word 0, then the four groups) up to the last significant one, and the number
    of significant digits.

    A group followed by zero groups only is written without its trailing zeros
    (_QUAD32_TRIM: its second half), so the digits after the last significant one are
    not printed."""
    g1, g2, g3, g4 = groups
    words = np.empty((d0.size, 5), dtype=np.uint32)
    words[:, 0] = _TOP[d0]
    words[:, 4] = _QUAD32_TRIM[g4]
    tz = _TZ[g4]
    zero = g4 == 0
    for j, g in ((3, g3), (2, g2), (1, g1)):
        words[:, j] = _QUAD32_BOTH[g + zero * 10_000]
        tz += zero * _TZ[g]
        zero &= g == 0
    return words, 17 - tz


def _print_integer_zeros(
    words: np.ndarray, groups: list[np.ndarray], shown: np.ndarray, sig: np.ndarray
) -> None:
    """Integers with zeros at the end of their integer part (440, 1e16): those zeros
    are printed, ``words`` written again up to the ``shown`` digits."""
    pad = np.flatnonzero(shown > sig)
    if pad.size:
        full = np.empty((pad.size, 4), dtype=np.uint32)
        for j, g in enumerate(groups):
            full[:, j] = _QUAD32[g[pad]]
        full &= _WMASK[np.clip(shown[pad, None] - np.array([1, 5, 9, 13]), 0, 4)]
        words[pad, 1:] = full


def _point_after(whole: np.ndarray, sci: np.ndarray, e: np.ndarray, sig: np.ndarray) -> np.ndarray:
    """The digit the point follows (fixed, e >= 0: j = e; scientific: j = 0) when a
    digit follows it, else -1."""
    point_after = np.where(whole, e, np.where(sci, 0, -1))
    point_after[sig <= point_after + 1] = -1
    return point_after


def _sign_cells(
    x: np.ndarray, fast: np.ndarray, all_fast: bool, word: np.ndarray
) -> list[np.ndarray]:
    """The minus signs (none for the rows left to Python, nor for -nan: ``"%.17g" %
    -nan`` is ``"nan"``)."""
    neg = np.signbit(x)
    if not all_fast:
        neg &= fast
        neg[word] = np.signbit(x[word]) & ~np.isnan(x[word])
    if neg.any():
        return [neg.view(np.uint8)[:, None] * np.uint8(ord("-"))]
    return []


#: "0", "inf", "nan" in 3-byte cells
_WORDS = np.array([[ord("0"), 0, 0], list(b"inf"), list(b"nan")], dtype=np.uint8)


def _word_cells(v: np.ndarray, word: np.ndarray) -> list[np.ndarray]:
    """The rows ``word`` of |x| spelt without digits: "0", "inf", "nan"."""
    if not word.size:
        return []
    spelt = np.zeros((v.size, 3), dtype=np.uint8)
    w = v[word]
    spelt[word] = np.where(
        (w == 0)[:, None], _WORDS[0], np.where(np.isnan(w)[:, None], _WORDS[2], _WORDS[1])
    )
    return [spelt]


def _leading_zero_cells(ahead: np.ndarray, e: np.ndarray) -> list[np.ndarray]:
    """``0.`` and the zeros after the point before the first digit, where ``ahead``
    (fixed notation, e < 0: 0.000ddd)."""
    if not ahead.any():
        return []
    lead = np.zeros((ahead.size, 5), dtype=np.uint8)
    lead[:, 0] = ahead * np.uint8(ord("0"))
    lead[:, 1] = ahead * np.uint8(ord("."))
    for j in range(3):  # e = -2: one zero after the point; -4: three
        lead[:, 2 + j] = (ahead & (e <= -2 - j)) * np.uint8(ord("0"))
    return [lead]


def _digit_cells(words: np.ndarray, point_after: np.ndarray) -> list[np.ndarray]:
    """The 17 digit cells with a point cell after digit ``point_after`` (none: -1),
    one point column for each digit some row puts its point after."""
    dig = words.view(np.uint8)[:, 3:]
    used = np.bincount(point_after + 1, minlength=18)[1:]
    parts: list[np.ndarray] = []
    start = 0
    for j in np.flatnonzero(used).tolist():
        parts.append(dig[:, start : j + 1])
        parts.append((point_after == j).view(np.uint8)[:, None] * np.uint8(ord(".")))
        start = j + 1
    parts.append(dig[:, start:])
    return parts


def _exponent_cells(sci: np.ndarray, e: np.ndarray) -> list[np.ndarray]:
    """``e±XX`` (three digits from 100) where ``sci`` (scientific notation)."""
    if not sci.any():
        return []
    exp = np.zeros((sci.size, 5), dtype=np.uint8)
    a = np.abs(e)
    exp[:, 0] = np.where(sci, ord("e"), 0)
    exp[:, 1] = np.where(sci, np.where(e < 0, ord("-"), ord("+")), 0)
    exp[:, 2] = np.where(sci & (a >= 100), _DIGITS[(a // 100) % 10], 0)
    exp[:, 3] = np.where(sci, _DIGITS[(a // 10) % 10], 0)
    exp[:, 4] = np.where(sci, _DIGITS[a % 10], 0)
    return [exp]


def int_cells(x: np.ndarray) -> np.ndarray:
    """The bytes of ``"%d" % v`` for each value (integral, |v| < 2⁵³), one row each."""
    v = np.asarray(x)
    if v.dtype.kind == "f":
        if not bool(np.all(np.isfinite(v))):
            raise ValueError("int_cells: non-finite value")
        v = np.trunc(v)  # %d of a float truncates
    v = v.astype(np.int64)
    neg = v < 0
    a = np.abs(v)
    top = int(a.max()) if a.size else 0
    groups = max(-(-len(str(top)) // 4), 1)
    words = np.empty((v.size, groups), dtype=np.uint32)
    rest = a
    for j in range(groups - 1, -1, -1):
        q = rest // 10_000
        words[:, j] = _QUAD32[rest - q * 10_000]
        rest = q
    dig = words.view(np.uint8)
    # leading zeros are not printed (the last digit always is): digit j of the 4g
    # shown counts from 10^(4g−1−j), printed when a >= that power
    width = 4 * groups
    low = int(a.min()) if a.size else 0
    if len(str(low)) == len(str(top)):  # one digit count (a block of row numbers)
        dig[:, : width - len(str(top))] = 0
    else:
        shown = a[:, None] >= _POW10[width - 1 :: -1][:width]
        shown[:, -1] = True
        dig *= shown
    if neg.any():
        return np.concatenate([neg.view(np.uint8)[:, None] * np.uint8(ord("-")), dig], 1)
    return dig


_POW10 = np.array([10**p for p in range(19)], dtype=np.int64)


def rows_text(columns: list[Any], *, int_first: bool) -> bytes:
    """``np.savetxt(np.column_stack(columns), delimiter=",", fmt=...)``'s bytes: the
    first column ``%d`` when ``int_first``, the others ``%.17g``; rows end in ``\\n``.
    Rows holding a value the arithmetic does not prove are formatted by ``%`` itself."""
    n = len(columns[0]) if columns else 0
    if n == 0:
        return b""
    parts: list[np.ndarray] = []
    comma = np.full((n, 1), ord(","), dtype=np.uint8)
    slow = np.zeros(n, dtype=bool)
    for i, col in enumerate(columns):
        if i:
            parts.append(comma)
        if int_first and i == 0:
            parts.append(int_cells(col))
        else:
            cells, col_slow = float_cells(col)
            parts += cells
            slow |= col_slow
    parts.append(np.full((n, 1), ord("\n"), dtype=np.uint8))
    table = np.concatenate(parts, axis=1)
    if not slow.any():
        text: bytes = table[table != 0].tobytes()
        return text
    fmt = ",".join((["%d"] if int_first else ["%.17g"]) + ["%.17g"] * (len(columns) - 1))
    out: list[bytes] = []
    start = 0
    for r in np.flatnonzero(slow).tolist():
        part = table[start:r]
        out.append(part[part != 0].tobytes())
        row = tuple(float(c[r]) for c in columns)
        out.append((fmt % row + "\n").encode("ascii"))
        start = r + 1
    part = table[start:]
    out.append(part[part != 0].tobytes())
    return b"".join(out)
