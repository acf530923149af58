"""Algorithm 4 of private weighted sampling: sanitized frequencies (pure numpy).

Cohen et al. 2021 (Cohen et al. 2021): ``frequency_rows`` gives the rows
π_{i,•} of Algorithm 4 (banded, a row repeating an earlier one not stored: ``Rows``);
``dp_check`` and ``dp_check_pi`` check the DP of consecutive rows exactly (hockey-stick
divergence); ``mle_estimates`` and ``bias_variance`` give the MLE estimator a_j and
each frequency's bias, variance and MSE (spec B8, Eq. 9).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeVar, overload

import numpy as np

from ampcalc.math.pws_reporting import reporting_probabilities, step_constants

_T = TypeVar("_T")


class _Repeating(Sequence[_T]):
    """A list of Algorithm 4's per-row values (``zero``, ``lo`` or ``band``): the rows
    computed, then rows ``start``.. ``start + period − 1`` repeated up to row ``size − 1``
    (``lo`` shifted along: ``shift``). See ``frequency_rows``."""

    __slots__ = ("_head", "_period", "_shift", "_size", "_start")

    def __init__(self, head: list[Any], size: int, start: int, period: int, shift: bool) -> None:
        self._head = head
        self._size = size
        self._start = start
        self._period = period
        self._shift = shift

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, i: int) -> _T: ...
    @overload
    def __getitem__(self, i: slice) -> list[_T]: ...
    def __getitem__(self, i: int | slice) -> _T | list[_T]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._size))]
        k = operator.index(i)
        if k < 0:
            k += self._size
        if not 0 <= k < self._size:
            raise IndexError(i)
        if k < len(self._head):
            return self._head[k]  # type: ignore[no-any-return]
        base = self._start + (k - self._start) % self._period
        value = self._head[base]
        return value + (k - base) if self._shift else value  # type: ignore[no-any-return]

    def base(self, k: int) -> int:
        """The computed row that row ``k`` repeats (``k`` itself if computed)."""
        if k < len(self._head):
            return k
        return self._start + (k - self._start) % self._period


@dataclass
class Rows:
    """Banded rows of Algorithm 4: row i has π_{i,0} = ``zero[i]`` and entries
    π_{i,j} for j = ``lo[i]`` .. ``lo[i] + len(band[i]) − 1`` (index 0 is i = 0).

    ``computed``: rows 0..computed − 1 were computed one by one; every later row is one
    of the last ``period`` of them moved up (``frequency_rows``), so they are not
    stored. ``computed`` is n + 1 when no row repeats."""

    eps: float
    delta: float
    q: np.ndarray  # q_1..q_n
    pi: np.ndarray  # π_1..π_n
    zero: Sequence[float]
    lo: Sequence[int]
    band: Sequence[np.ndarray]
    computed: int = -1
    period: int = 0
    #: ``token_cdf`` of the rows asked for so far
    _cdf: dict[tuple[int, float], np.ndarray] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.computed < 0:
            self.computed = len(self.band)

    @property
    def n(self) -> int:
        return len(self.band) - 1

    @property
    def width(self) -> int:
        """The widest band (of the rows computed: the others repeat them)."""
        return max(self.band[i].size for i in range(self.computed))

    def _base(self, i: int) -> int:
        band = self.band
        return band.base(i) if isinstance(band, _Repeating) else i

    def token_cdf(self, w: int) -> np.ndarray:
        """Cumulative sums of row w's band over q_w, from its top entry down (what the
        sanitizer's tokens invert); computed once per row (once for the rows that repeat
        one row at the same q_w)."""
        key = (self._base(w), float(self.q[w - 1]))
        cum = self._cdf.get(key)
        if cum is None:
            b = self.band[w] / self.q[w - 1]
            cum = self._cdf[key] = np.cumsum(b[::-1])
        return cum

    def dense(self, i: int) -> np.ndarray:
        """Row i as a dense array over j = 0..i."""
        out = np.zeros(i + 1)
        out[0] = self.zero[i]
        b = self.band[i]
        lo = self.lo[i]
        out[lo : lo + b.size] = b
        return out

    def entry(self, i: int, j: int) -> float:
        lo = self.lo[i]
        b = self.band[i]
        return float(b[j - lo]) if lo <= j < lo + b.size else 0.0


class RowsTooLong(ValueError):
    """``frequency_rows`` stopped: computing the rows one by one would take more than
    ``max_entries`` band entries (``entries`` so far, at row ``row``)."""

    def __init__(self, entries: int, row: int) -> None:
        super().__init__(f"{entries} band entries computed by row {row}")
        self.entries = entries
        self.row = row


def constant_from(pi: np.ndarray) -> int:
    """The smallest c (1-based) with π_i = π_c for every i >= c in the array (1 for an
    empty or constant array): from there on Algorithm 4's rows can repeat."""
    change = np.flatnonzero(pi[1:] != pi[:-1])
    return int(change[-1]) + 2 if change.size else 1


def frequency_rows(
    q: np.ndarray,
    eps: float,
    delta: float,
    pi: np.ndarray | None = None,
    *,
    max_entries: int | None = None,
    repeats: bool = True,
) -> Rows:
    """Algorithm 4 of Cohen et al. 2021 (spec B6): rows π_{i,•} over j = 0..i, banded.

    Basis: Cohen et al. 2021 Alg. 4, Thm. 5.1 (within outputs j <= i).
    Formula (per row, vectorised with prefix/suffix sums, same greedy as the text):
        lower tail S_j = max(0, e^{−ε}(C_{i−1}(j) − δ) + [e^{−ε}π_{i−1,0} − π_{i,0}]_+)
        for j < i; then the rest R = π_i − S_{i−1} pushed to high j while the suffix
        constraint T_j <= e^ε Σ_{h>=j} π_{i−1,h} + δ allows.
    Numerics: differences of prefix sums; the DP self-check ``dp_check`` verifies it.
    Repeats: row i is a function of π_i, π_{i−1} and row i − 1 taken relative to i
        (its band and lo − i), the same float operations wherever the row sits. So once
        π is constant (from ``constant_from(pi)``), a row equal to an earlier one of that
        stretch, bit for bit and relative to its index, starts a cycle: every later row
        is the row ``period`` places before it, moved up by ``period``. Those rows are
        not computed; ``Rows`` gives them (the same floats a computation would give).
    ``max_entries``: raise ``RowsTooLong`` once more band entries than this were
        computed without a repeat (the caller's cost limit).
    ``repeats=False``: compute every row (the reference the repeats are tested against).
    """
    q = np.asarray(q, dtype=float)
    if pi is None:
        pi = reporting_probabilities(q, eps, delta)
    e_pos, e_neg = step_constants(eps)
    zero = [1.0]
    lo = [1]
    band: list[np.ndarray] = [np.zeros(0)]
    steady = constant_from(np.asarray(pi, dtype=float)) if repeats else q.size + 1
    seen: dict[tuple[int, float, int], int] = {}
    entries = 0
    n = q.size
    repeat: tuple[int, int] | None = None  # (first row of the cycle, period)
    for i in range(1, n + 1):
        p_i = float(pi[i - 1])
        z = 1.0 - p_i
        prev_lo, prev = lo[-1], band[-1]
        d0 = max(0.0, e_neg * zero[-1] - z)
        start = prev_lo if d0 - e_neg * delta <= 0 or prev.size == 0 else 1
        if prev.size == 0:
            start = i
        entries += i - start + 1
        if max_entries is not None and entries > max_entries:
            raise RowsTooLong(entries, i)
        new_lo, row = _row(i, start, d0, p_i, prev_lo, prev, e_pos, e_neg, delta)
        if i >= steady:
            key = (new_lo - i, z, hash(row.tobytes()))
            j = seen.get(key)
            if j is not None and band[j].tobytes() == row.tobytes():
                repeat = (j, i - j)
                break
            seen[key] = i
        zero.append(z)
        lo.append(new_lo)
        band.append(row)
    if repeat is None:
        return Rows(eps=eps, delta=delta, q=q, pi=np.asarray(pi, dtype=float), zero=zero,
                    lo=lo, band=band)  # fmt: skip
    first, period = repeat
    size = n + 1
    return Rows(
        eps=eps,
        delta=delta,
        q=q,
        pi=np.asarray(pi, dtype=float),
        zero=_Repeating(zero, size, first, period, shift=False),
        lo=_Repeating(lo, size, first, period, shift=True),
        band=_Repeating(band, size, first, period, shift=False),
        computed=len(band),
        period=period,
    )


def _row(
    i: int,
    start: int,
    d0: float,
    p_i: float,
    prev_lo: int,
    prev: np.ndarray,
    e_pos: float,
    e_neg: float,
    delta: float,
) -> tuple[int, np.ndarray]:
    """Row i of Algorithm 4 over j = ``start``..i from row i − 1 (its band ``prev`` from
    ``prev_lo``): the lower tails, then the rest pushed to high j (``frequency_rows``).
    Returns the row's first j and its band (trailing zeros up to j = i kept, leading
    zeros dropped)."""
    width = i - start + 1
    prev_full = np.zeros(width)  # π_{i−1,j} for j = start..i (j = i is 0)
    off = prev_lo - start
    if prev.size:
        prev_full[off : off + prev.size] = prev
    cum_prev = np.cumsum(prev_full)
    # lower bounds for j = start..i−1
    t = e_neg * (cum_prev[:-1] - delta) + d0
    s = np.maximum(t, 0.0)
    row = np.zeros(width)
    if s.size:
        row[:-1] = np.diff(np.concatenate(([0.0], s)))
    rest = p_i - (s[-1] if s.size else 0.0)
    if rest > 0:
        # suffix constraints V_j = e^ε Σ_{h=j}^{i−1} π_{i−1,h} + δ, j = start..i
        suf_prev = np.cumsum(prev_full[::-1])[::-1]
        v = e_pos * suf_prev + delta
        suf_old = np.cumsum(row[::-1])[::-1]
        room = v - suf_old  # A_j uncapped, j = start..i
        ok = np.flatnonzero(room >= rest)
        jstar = int(ok[-1]) if ok.size else -1
        added = room.copy()
        if jstar >= 0:
            added[: jstar + 1] = rest
        added_next = np.concatenate((added[1:], [0.0]))
        row = row + (added - added_next)
    nz = np.flatnonzero(row != 0.0)
    if not nz.size:
        return i, np.zeros(0)
    row = row[nz[0] : nz[-1] + 1]
    if start + int(nz[-1]) != i:
        row = np.concatenate((row, np.zeros(i - start - int(nz[-1]))))
    return start + int(nz[0]), row


def hockey_stick(p: np.ndarray, r: np.ndarray, eps: float) -> float:
    """Σ_j max(0, P_j − e^ε R_j), summed exactly (math.fsum)."""
    n = max(p.size, r.size)
    pp = np.zeros(n)
    rr = np.zeros(n)
    pp[: p.size] = p
    rr[: r.size] = r
    return math.fsum(np.maximum(0.0, pp - math.exp(eps) * rr).tolist())


def dp_check(rows: Rows) -> float:
    """Largest hockey-stick divergence between consecutive rows, both directions
    (spec B1: exact accounting; must be <= δ). Rows that repeat earlier ones
    (``frequency_rows``) pair up as the rows they repeat, moved up: the pairs up to the
    first repeated row are all the pairs there are."""
    worst = 0.0
    prev = np.array([1.0])
    for i in range(1, min(rows.n, rows.computed) + 1):
        cur = rows.dense(i)
        worst = max(worst, hockey_stick(cur, prev, rows.eps), hockey_stick(prev, cur, rows.eps))
        prev = cur
    return worst


def dp_tolerance(delta: float, width: int, eps: float = 0.0) -> float:
    """Float slack of the Algorithm 4 self-check: the rows are exact up to rounding,
    O(ulp(1)) per entry of a row of ``width`` entries (differences of sums of order 1),
    amplified by e^ε in the divergence."""
    return delta * 1e-12 + 8.0 * (width + 1) * 2.0**-53 * math.exp(min(eps, 700.0))


def dp_check_pi_exact(
    pi: np.ndarray,
    eps: float,
    *,
    q: np.ndarray | None = None,
    exact: Callable[[int], Fraction | None] | None = None,
) -> float:
    """Keys-only DP check in exact rational arithmetic on the float π, with e^ε rounded
    down (a conservative divergence): the largest excess over 0 of
    max(P − e^ε Q) summed over the two outcomes, both directions.

    With ``q`` and ``exact`` (see ``reporting_probabilities``), a row with π_i = q_i
    reports its key with the exact sampling probability q_i (p_i = 1), which is used.
    """
    e = Fraction(math.nextafter(math.exp(eps), 0.0))
    prev = Fraction(0)
    worst = Fraction(0)
    pl = np.asarray(pi, dtype=float).tolist()
    ql = None if q is None or exact is None else np.asarray(q, dtype=float).tolist()
    for k, x in enumerate(pl):
        a = Fraction(x)
        if ql is not None and exact is not None and x == ql[k]:
            ex = exact(k + 1)
            a = a if ex is None else ex
        for p_, q_ in ((a, prev), (prev, a)):
            d = max(Fraction(0), p_ - e * q_) + max(Fraction(0), (1 - p_) - e * (1 - q_))
            worst = max(worst, d)
        prev = a
    return float(worst) if worst <= 1 else 1.0


def dp_check_pi(pi: np.ndarray, eps: float) -> float:
    """Largest hockey-stick divergence between consecutive keys-only outputs
    (reported with probability π_i or not)."""
    p = np.concatenate(([0.0], np.asarray(pi, dtype=float)))
    e = math.exp(eps)
    a, b = p[1:], p[:-1]
    d = np.maximum(
        np.maximum(0.0, a - e * b) + np.maximum(0.0, (1 - a) - e * (1 - b)),
        np.maximum(0.0, b - e * a) + np.maximum(0.0, (1 - b) - e * (1 - a)),
    )
    return float(d.max()) if d.size else 0.0


# --------------------------------------------------------------------------------------
# Estimators (spec B8)
# --------------------------------------------------------------------------------------


def mle_estimates(rows: Rows, g: np.ndarray | None = None, upto: int | None = None) -> np.ndarray:
    """MLE a_j = g(i_j)/π_{i_j}, i_j = argmax_{h>=j} π_{h,j} (Cohen et al. 2021 Eq. 9; spec B8).

    Scans h = j, j+1, … while π_{h,j} > 0 and keeps the first strict maximum. Needs the
    rows computed past the end of column j (``Rows.lo[n] > upto``). Index 0 is j = 1.
    """
    n = rows.n
    m = upto if upto is not None else n
    if g is None:
        g = np.arange(1, n + 1, dtype=float)
    a = np.full(m, np.nan)
    best = np.full(m + 1, -1.0)
    arg = np.zeros(m + 1, dtype=np.int64)
    ended = np.zeros(m + 1, dtype=bool)
    for h in range(1, n + 1):
        lo, b = rows.lo[h], rows.band[h]
        hi = min(lo + b.size - 1, m)
        if hi < lo:
            continue
        vals = b[: hi - lo + 1]
        js = np.arange(lo, hi + 1)
        upd = (vals > best[js]) & ~ended[js]
        best[js[upd]] = vals[upd]
        arg[js[upd]] = h
    for j in range(1, m + 1):
        h = int(arg[j])
        if h > 0:
            a[j - 1] = g[h - 1] / rows.pi[h - 1]
    return a


def bias_variance(
    rows: Rows, a: np.ndarray, g: np.ndarray | None = None, upto: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-frequency Bias_i, Var_i, MSE_i of the estimator a (spec B8), i = 1..upto."""
    m = upto if upto is not None else a.size
    if g is None:
        g = np.arange(1, m + 1, dtype=float)
    bias = np.zeros(m)
    mse = np.zeros(m)
    for i in range(1, m + 1):
        lo, b = rows.lo[i], rows.band[i]
        aj = a[lo - 1 : lo - 1 + b.size]
        gi = g[i - 1]
        e = float(np.dot(b, aj))
        bias[i - 1] = e - gi
        mse[i - 1] = rows.zero[i] * gi * gi + float(np.dot(b, (aj - gi) ** 2))
    return bias, mse - bias**2, mse
