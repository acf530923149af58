"""Private weighted sampling kernels (pure numpy): 004_219872908bad6779.txt.

- ``inclusion_probabilities``: threshold sampling q_i (Alg. 1, Eq. 1).
- ``L_eps_delta``: L(ε, δ) (Eq. 3).
- ``reporting_probabilities``: Algorithm 3 (optimal key-reporting probabilities π_i),
  exact recursion in O(N): vectorised where π_i = q_i, scalar steps only where privacy
  binds (at most 2⌈L⌉ per binding stretch, spec B4/B5).
- ``frequency_rows``: Algorithm 4 (sanitized frequencies j ≤ i), banded sparse rows.
- ``hockey_stick``/``dp_check``: exact DP self-check between consecutive rows.
- ``sbh_phi``: stability-based histogram reporting probability (spec B9), sampled
  when q < 1.
- ``mle_estimates``/``bias_variance``: the MLE estimator a_j and per-frequency
  bias, variance and MSE (spec B8, Eq. 9).
- ``key_uniforms``/``sanitize_keys``: the sanitizer (Alg. 2) with a counter-based
  per-key generator, so chunked, streamed and distributed runs agree.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeVar, overload

import numpy as np

METHODS = ("ppswor", "priority", "none")
_T = TypeVar("_T")


def inclusion_probabilities(
    n: int, *, method: str, threshold: float = 1.0, weight_power: float = 1.0
) -> np.ndarray:
    """q_1..q_n of threshold sampling (004 Alg. 1, Eq. 1; spec B2).

    ppswor (Exp[1] scores): q_i = 1 − e^{−τ f(i)}; priority (U[0,1]): min(1, τ f(i));
    none: q_i ≡ 1; f(i) = i^p. Returned as float64 array of length n (index 0 is i = 1).
    """
    i = np.arange(1, n + 1, dtype=float)
    if method == "none":
        return np.ones(n)
    with np.errstate(over="ignore"):  # f = inf gives q = 1, as it should
        f = i if weight_power == 1 else i**weight_power
    if method == "ppswor":
        x = np.multiply(f, -threshold, out=f if f is i else None)
        np.expm1(x, out=x)
        return np.negative(x, out=x)
    if method == "priority":
        return np.minimum(1.0, threshold * f)
    raise ValueError(f"unknown method {method!r}")


def L_eps_delta(eps: float, delta: float) -> float:
    """L(ε, δ) = (1/ε) ln((e^ε − 1 + 2δ)/(δ(e^ε + 1))) (004 Eq. 3), stable form."""
    if eps > 30.0:  # e^ε − 1 + 2δ = e^ε(1 + (2δ − 1)e^{−ε}); no overflow for large ε
        num = eps + math.log1p((2.0 * delta - 1.0) * math.exp(-eps))
    else:
        num = math.log(math.expm1(eps) + 2.0 * delta)
    den = math.log(delta) + eps + math.log1p(math.exp(-eps))
    return max(0.0, (num - den) / eps)


def _step_consts(eps: float) -> tuple[float, float]:
    # above ε = 700 the factor e^ε is taken as e^700 (every constraint π_i <= e^ε π_{i−1} + δ
    # at the smaller factor implies the one at ε: the table stays private, never overflows)
    eps = min(eps, 700.0)
    return math.exp(eps), math.exp(-eps)


_U = 2.0**-53  # unit roundoff
_BLOCK = 1 << 16  # q values converted to Python floats at a time by the scalar steps


def _alg3_step(p: float, qi: float, e_dn: float, en_up: float, delta: float) -> float:
    """One step of Algorithm 3 with both privacy terms rounded down (never above the
    exact e^ε p + δ and 1 − e^{−ε}(1 − p − δ))."""
    a = delta if p == 0.0 else (e_dn * p + delta) * (1.0 - 4.0 * _U)
    m = math.fsum((1.0, -p, -delta))  # correctly rounded: its sign is exact
    if m <= 0.0:
        b = 1.0
    else:
        c = en_up * math.nextafter(m, math.inf) * (1.0 + 4.0 * _U)
        b = math.nextafter(1.0 - c, 0.0)
    return qi if qi <= a and qi <= b else (a if a < b else b)


def _keeps_exact(
    exact: Callable[[int], Fraction | None], i: int, e_dn: float, en_up: float, delta: float
) -> bool:
    """Does π_i = q_i hold exactly when π_{i−1} = q_{i−1} (1-based i), by rational
    arithmetic on the exact q (e^ε rounded down, e^{−ε} up: a sufficient test)?"""
    qi = exact(i)
    prev = Fraction(0) if i == 1 else exact(i - 1)
    if qi is None or prev is None:
        return False
    d = Fraction(delta)
    if qi > Fraction(e_dn) * prev + d:
        return False
    slack = 1 - prev - d
    return slack <= 0 or qi <= 1 - Fraction(en_up) * slack


def reporting_probabilities(
    q: np.ndarray,
    eps: float,
    delta: float,
    *,
    exact: Callable[[int], Fraction | None] | None = None,
) -> np.ndarray:
    """Algorithm 3 of 004: π_i = min{q_i, e^ε π_{i−1} + δ, 1 + e^{−ε}(π_{i−1} + δ − 1)}.

    Basis: 004_219872908bad6779.txt Alg. 3, Lemma 4.1 (pointwise maximal p_i = π_i/q_i).
    Conditions: ε > 0, 0 < δ <= 1, q non-decreasing (checked by the caller).
    Numerics: the two privacy terms are rounded down (a few ulps), so the float π
        satisfies the DP constraints exactly, not only up to rounding. Where
        π_{i−1} = q_{i−1} and q_i is clearly below both terms (checked vectorised with
        a deflated margin) the step gives π_i = q_i; scalar steps run only where
        privacy binds or might bind (at most 2⌈L⌉ per binding stretch).
    Exact q: ``exact(i)`` gives the exact q_i (1-based) as a rational when the float
        q_i rounds it (priority sampling: q_i = min(1, τ·i), τ the float given), or
        None. Where a binding stretch starts (π_{i−1} = q_{i−1}, so the key at i − 1 is
        reported with its exact sampling probability) and the float step says π_i < q_i,
        the step is decided exactly: if q_i meets both privacy terms in rational
        arithmetic, π_i = q_i. Without it a q that is exactly 1 − δ (τ = δ, i = 1/τ)
        rounds below and gives π_i = 1 − 2^-53 at q_i = 1, a spurious privacy cost.
    """
    q = np.asarray(q, dtype=float)
    n = q.size
    e_pos, e_neg = _step_consts(eps)
    e_dn = math.nextafter(e_pos, 0.0)
    en_up = math.nextafter(e_neg, math.inf)
    qprev = np.concatenate(([0.0], q[:-1]))
    with np.errstate(over="ignore", invalid="ignore"):
        # g = min(e^ε q_{i−1} + δ, 1 + e^{−ε}(q_{i−1} + δ − 1)), in place (two arrays of n)
        g = np.multiply(qprev, e_pos)
        g += delta
        qprev += delta
        qprev -= 1.0
        qprev *= e_neg
        qprev += 1.0
        np.minimum(g, qprev, out=g)
        del qprev
        g *= 1.0 - 64.0 * _U
        g -= 2.0**-50  # below the scalar step's terms
    binds = q > g  # π_i < q_i may happen when π_{i−1} = q_{i−1}
    del g
    pi: np.ndarray = q.copy()
    idx = np.flatnonzero(binds)
    k = 0
    base = 0
    ql: list[float] = []  # q[base : base + len(ql)] as Python floats, a block at a time
    while k < idx.size:
        i = int(idx[k])
        p = 0.0 if i == 0 else float(q[i - 1])
        start = True  # π_{i−1} = q_{i−1} (or i = 1)
        while i < n:
            if not base <= i < base + len(ql):
                base, ql = i, q[i : i + _BLOCK].tolist()
            qi = ql[i - base]
            p = _alg3_step(p, qi, e_dn, en_up, delta)
            if start and p < qi and exact is not None:
                if _keeps_exact(exact, i + 1, e_dn, en_up, delta):
                    p = qi
            start = False
            pi[i] = p
            i += 1
            if p == qi:
                break
        # continue from the next flagged index at or after i (π_{i−1} = q_{i−1} again)
        k = int(np.searchsorted(idx, i))
    return pi


def settled_index(q: np.ndarray, pi: np.ndarray) -> int | None:
    """Smallest m with π_i = q_i for every i >= m within the arrays (1-based), or None
    when the last row already differs."""
    diff = np.flatnonzero(pi != q)
    if diff.size == 0:
        return 1
    last = int(diff[-1]) + 1  # 1-based index of the last row with π < q
    return last + 1 if last < q.size else None


# --------------------------------------------------------------------------------------
# Algorithm 4: sanitized frequencies
# --------------------------------------------------------------------------------------


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
    """Algorithm 4 of 004 (spec B6): rows π_{i,•} over j = 0..i, banded.

    Basis: 004_219872908bad6779.txt Alg. 4, Thm. 5.1 (within outputs j <= i).
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
    e_pos, e_neg = _step_consts(eps)
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
        width = i - start + 1
        entries += width
        if max_entries is not None and entries > max_entries:
            raise RowsTooLong(entries, i)
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
        if nz.size:
            row = row[nz[0] : nz[-1] + 1]
            new_lo = start + int(nz[0])
            if start + int(nz[-1]) != i:
                row = np.concatenate((row, np.zeros(i - start - int(nz[-1]))))
        else:
            row = np.zeros(0)
            new_lo = i
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
# SbH baseline
# --------------------------------------------------------------------------------------


def sbh_threshold(eps: float, delta: float) -> float:
    """T = 1 + ln(1/δ)/ε (spec B9)."""
    return 1.0 + math.log(1.0 / delta) / eps


def _laplace_survival(v: np.ndarray | float, i: np.ndarray, eps: float) -> np.ndarray:
    """F(v) = Pr[Y >= v] for Y ~ Laplace(i, 1/ε), without cancellation on either side."""
    d = np.asarray(v, dtype=float) - i
    e = np.exp(-eps * np.abs(d))
    out: np.ndarray = np.where(d >= 0, 0.5 * e, 1.0 - 0.5 * e)
    return out


def hypoexponential_cdf(a: float, b: float, x: np.ndarray) -> np.ndarray:
    """Pr[W + V <= x] for independent W ~ Exp(a), V ~ Exp(b) (rates a, b > 0), x >= 0.

    With M = max(a, b), m = min(a, b): where Mx >= 1,
    1 − e^{−mx} − mx·e^{−mx}·(1 − e^{−(M−m)x})/((M−m)x) (expm1 forms; the subtracted
    term is at most 1 − (1 − e^{−1}) of the first, so a few ulps); where Mx < 1, the
    series ab·x²·Σ_k (−1)^k h_k(ax, bx)/(k + 2)! (h_k the complete homogeneous symmetric
    polynomial: the second divided difference of e^{−z} at 0, ax, bx), 24 terms. No
    cancellation for a ≈ b or small x.
    """
    x = np.asarray(x, dtype=float)
    big, small = max(a, b), min(a, b)
    out = np.empty(x.shape)
    far = big * x >= 1.0
    if np.any(far):
        xf = x[far]
        d = (big - small) * xf
        safe = np.where(d > 0, d, 1.0)
        rel = np.where(d > 0, -np.expm1(-d) / safe, 1.0)
        out[far] = -np.expm1(-small * xf) - small * xf * np.exp(-small * xf) * rel
    near = ~far
    if np.any(near):
        al, be = a * x[near], b * x[near]
        h = np.ones(al.shape)
        power = np.ones(al.shape)
        total = 0.5 * h
        fact = 2.0
        for k in range(1, 24):
            power = power * al
            h = be * h + power  # h_k(α, β) = β h_{k−1} + α^k
            fact *= k + 2
            total = total + (h / fact if k % 2 == 0 else -h / fact)
        out[near] = al * be * total
    res: np.ndarray = np.maximum(out, 0.0)
    return res


def _sbh_ppswor_linear(i: np.ndarray, eps: float, T: float, tau: float) -> np.ndarray:
    """Sampled SbH for ppswor with f(i) = i in closed form (sum of non-negative terms).

    φ_i = Pr[Y >= T, Y >= V], Y ~ Laplace(i, 1/ε), V ~ Exp(τ) (q(y) = Pr[V <= y]):
    for i <= T, ½e^{−ε(T−i)}·(τ + ε(1 − e^{−τT}))/(ε + τ); for i > T (x = i − T),
    ½(τ + ε(1 − e^{−τi}))/(ε + τ)  [Y >= i]
    + ½(1 − e^{−τT})(1 − e^{−εx})  [T <= Y < i, V < T]
    + ½e^{−τT}·Pr[Exp(ε) + Exp(τ) <= x]  [T <= Y < i, T <= V < Y].
    """
    out = np.empty(i.shape)
    low = i <= T
    il = i[low]
    out[low] = 0.5 * np.exp(-eps * (T - il)) * ((tau - eps * math.expm1(-tau * T)) / (eps + tau))
    ih = i[~low]
    x = ih - T
    out[~low] = (
        0.5 * (tau - eps * np.expm1(-tau * ih)) / (eps + tau)
        + 0.5 * (-math.expm1(-tau * T)) * (-np.expm1(-eps * x))
        + 0.5 * math.exp(-tau * T) * hypoexponential_cdf(eps, tau, x)
    )
    return out


def _sbh_priority_linear(i: np.ndarray, eps: float, T: float, tau: float) -> np.ndarray:
    """Sampled SbH for priority sampling with f(i) = i, τT < 1, in closed form.

    q(y) = min(1, τy) = Pr[cU <= y] with c = 1/τ, U ~ U[0, 1], so
    φ_i = Pr[Y >= max(T, cU)] = τ(T·F(T) + ∫_T^c F(v) dv), F the Laplace survival
    function; the integral split at i, each piece a sum of non-negative terms.
    """
    c = 1.0 / tau
    hi = np.minimum(i, c)  # ∫_T^{min(i,c)} (1 − ½e^{−ε(i−v)}) dv = ½L + ½(L − …) >= ½L
    span = np.maximum(hi - T, 0.0)
    rest = span - np.exp(-eps * (i - hi)) * (-np.expm1(-eps * span)) / eps
    below = 0.5 * span + 0.5 * np.maximum(rest, 0.0)
    lo = np.maximum(T, i)  # ∫_{max(T,i)}^c ½e^{−ε(v−i)} dv
    top = np.maximum(c - lo, 0.0)
    above = np.exp(-eps * (lo - i)) * (-np.expm1(-eps * top)) / (2.0 * eps)
    out: np.ndarray = tau * (T * _laplace_survival(T, i, eps) + below + above)
    return out


_SBH_NODES = 20
"""Gauss–Legendre nodes per piece of the sampled-SbH quadrature (f(i) = i^p, p ≠ 1)."""

_SBH_TAIL = 40.0
"""Laplace tails beyond 40/ε of the window are dropped: relative error <= 2e^{−40}/(1 − e^{−1})."""


def _sbh_quadrature(
    i: np.ndarray, eps: float, T: float, method: str, tau: float, p: float
) -> np.ndarray:
    """∫_T^∞ (ε/2)e^{−ε|y−i|} q(y) dy for q(y) = 1 − e^{−τy^p} or min(1, τy^p).

    Composite Gauss–Legendre (20 nodes a piece) in the offset u = y − i (so the density
    is exact at large i), on the window [max(T, i − 40/ε), max(T, i) + W] split at: T,
    i, the kink y = τ^{−1/p} (priority: above it q = 1 and the rest is the Laplace
    survival function in closed form), offsets ±{4, 10, 20, 40}/ε then every 20/ε (the
    density's scale), the levels τy^p = 1, 2, 4, …, 64 (q's scale) and a geometric grid
    of ratio 2 from the window's start (y^p's scale). Dropped: below i − 40/ε (q is
    non-decreasing, so at most e^{−40}q(i)/2), above max(T, i) + W with
    εW − p·ln(1 + W/max(T, i)) >= 40 and W >= 2p/ε (q(y) <= (y/y₀)^p q(y₀), so at
    most 2e^{−40}F·q). Checked against mpmath quadrature: worst relative error 3e-15.
    """
    x, w = np.polynomial.legendre.leggauss(_SBH_NODES)
    n = i.size
    out = np.zeros(n)
    kink = math.inf
    if method == "priority":
        try:
            kink = tau ** (-1.0 / p)
        except OverflowError:
            kink = math.inf
    levels = []
    if method == "ppswor":
        for t in (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0):
            try:
                levels.append((t / tau) ** (1.0 / p))
            except OverflowError:
                pass
    ylev = np.asarray(levels)
    tail = _SBH_TAIL
    step = 20_000  # bounded memory
    for s0 in range(0, n, step):
        ii = i[s0 : s0 + step]
        base = np.maximum(T, ii)
        W = np.full(ii.shape, tail / eps)
        for _ in range(8):
            W = np.maximum((tail + p * np.log1p(W / base)) / eps, 2.0 * p / eps)
        while True:
            short = eps * W - p * np.log1p(W / base) < tail
            if not np.any(short):
                break
            W = np.where(short, 2.0 * W, W)
        lo = np.maximum(T - ii, -tail / eps)  # offsets from i
        hi = np.minimum(base - ii + W, kink - ii)
        if math.isfinite(kink):
            out[s0 : s0 + step] += _laplace_survival(max(T, kink), ii, eps)
        offs = [-40.0, -20.0, -10.0, -4.0, 0.0, 4.0, 10.0, 20.0, 40.0]
        top = 40.0
        while top < float(np.max(W)) * eps:
            # every 20/ε (the density's scale), then doubling: a huge weight power makes
            # the window astronomically wide (W >= 2p/ε), where the density is e^{−4000}
            top += 20.0 if top < 4000.0 else top
            offs.append(top)
        m = ii.size
        cands = [
            lo[:, None],
            hi[:, None],
            np.broadcast_to(np.asarray(offs) / eps, (m, len(offs))),
        ]
        if ylev.size:
            cands.append(ylev[None, :] - ii[:, None])
        start = ii + lo
        ratio = float(np.max((ii + np.maximum(hi, lo)) / start))
        kg = math.ceil(math.log2(max(ratio, 1.0)))
        if kg >= 1:
            cands.append(start[:, None] * 2.0 ** np.arange(1, kg + 1)[None, :] - ii[:, None])
        pts = np.concatenate([np.broadcast_to(a, (m, a.shape[1])) for a in cands], axis=1)
        pts = np.minimum(np.maximum(pts, lo[:, None]), hi[:, None])
        pts.sort(axis=1)
        keep = pts[:, 1:] > pts[:, :-1]
        rows = np.broadcast_to(np.arange(m)[:, None], keep.shape)[keep]
        a_, b_ = pts[:, :-1][keep], pts[:, 1:][keep]
        acc = np.empty(a_.size)
        chunk = 20_000
        for k0 in range(0, a_.size, chunk):
            a = a_[k0 : k0 + chunk]
            half = (b_[k0 : k0 + chunk] - a) / 2.0
            u = a[:, None] + half[:, None] * (x[None, :] + 1.0)
            y = ii[rows[k0 : k0 + chunk]][:, None] + u
            with np.errstate(over="ignore"):  # f = inf gives q = 1, as it should
                t = tau * y**p
            qy = -np.expm1(-t) if method == "ppswor" else np.minimum(1.0, t)
            acc[k0 : k0 + chunk] = half * ((np.exp(-eps * np.abs(u)) * qy) @ w)
        out[s0 : s0 + step] += 0.5 * eps * np.bincount(rows, weights=acc, minlength=m)
    return out


def sbh_phi(
    n: int,
    eps: float,
    delta: float,
    *,
    method: str = "none",
    threshold: float = 1.0,
    weight_power: float = 1.0,
    frequencies: np.ndarray | None = None,
) -> np.ndarray:
    """Reporting probability of the stability-based histogram (spec B9; 004 Sec. 8.1,
    Alg. 6), i = 1..n (or at the given ``frequencies``, n ignored), each in [0, 1].

    q ≡ 1: φ_i = ½ e^{−ε(T−i)} for i <= T, 1 − ½ e^{−ε(i−T)} above. Sampled SbH (some
    q < 1): ∫_T^∞ Lap_{i,1/ε}(y) q(y) dy, in closed form for f(i) = i (ppswor:
    ``_sbh_ppswor_linear``, priority: ``_sbh_priority_linear``; relative error < 1e-14
    against mpmath, any ε, δ, τ, i), else by composite quadrature split at the scales
    of both factors (``_sbh_quadrature``).
    """
    T = sbh_threshold(eps, delta)
    if frequencies is None:
        i = np.arange(1, n + 1, dtype=float)
    else:
        i = np.asarray(frequencies, dtype=float).ravel()
    p = weight_power
    flat = method == "none"  # q = 1 on [T, ∞)
    if method == "priority":
        try:
            flat = threshold * T**p >= 1.0
        except OverflowError:  # T^p > 1.8e308: compare in logs
            flat = math.log(threshold) + p * math.log(T) >= 0.0
    if flat:
        out = _laplace_survival(T, i, eps)
    elif p == 1.0 and method == "ppswor":
        out = _sbh_ppswor_linear(i, eps, T, threshold)
    elif p == 1.0 and method == "priority":
        out = _sbh_priority_linear(i, eps, T, threshold)
    else:
        out = _sbh_quadrature(i, eps, T, method, threshold, p)
    res: np.ndarray = np.clip(out, 0.0, 1.0)
    return res


# --------------------------------------------------------------------------------------
# Estimators (spec B8)
# --------------------------------------------------------------------------------------


def mle_estimates(rows: Rows, g: np.ndarray | None = None, upto: int | None = None) -> np.ndarray:
    """MLE a_j = g(i_j)/π_{i_j}, i_j = argmax_{h>=j} π_{h,j} (004 Eq. 9; spec B8).

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


# --------------------------------------------------------------------------------------
# Sanitizer (Alg. 2) with a counter-based per-key generator
# --------------------------------------------------------------------------------------


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
    """Algorithm 2 of 004: keep key x with probability p_{w_x} = π_{w_x}/q_{w_x}
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
