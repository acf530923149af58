"""Privacy-loss distributions of ampcalc's own: build, compose, read ε at δ.

A ``LossPmf`` is ONE direction of a pair (P, Q): the distribution of the privacy loss
L = log(P/Q) under P, on the grid h·(lower + i), plus a mass at L = +∞. Its
hockey-stick curve, for every real ε,

    δ(ε) = infinity_mass + Σᵢ pᵢ·(1 − e^{ε − ℓᵢ})₊,

is convex and non-increasing in t = e^ε, and composing two distributions (the loss of a
product pair is the sum of the losses) gives δ_{A⊗B}(ε) = E_{L_A}[δ_B(ε − L_A)]: a sum
with non-negative weights of one curve shifted, so composition is monotone in each
curve. A distribution whose curve lies above a release's profile everywhere (the
pessimistic side) composes to an upper bound on the composed profile; one whose curve
lies below it everywhere (the optimistic side) composes to a lower estimate. Neither
side needs the distribution to come from an actual pair: only non-negative masses.

- ``from_profile_points``: the pessimistic connect-the-dots distribution (Doroshenko,
  Ghazi, Kamath, Kumar and Manurangsi 2022, Algorithm 1) from points of an upper
  profile, on the greatest convex minorant of its grid values (so no mass is ever
  negative: the algorithm assumes convex points, and an upper profile evaluated point by
  point need not be);
- ``optimistic_from_profile_points``: a distribution whose curve is below the true
  profile everywhere, from lower and upper values of it (the chord-extension argument
  in its docstring), second order in h where the profile is smooth;
- ``compose``, ``self_compose`` (FFT, with the Chernoff tail truncation of dp_accounting's
  ``self_compose``), ``delta_for_epsilon``, ``epsilon_for_delta``;
- ``LossPair``: the two directions (REMOVE, ADD) of a release, or one when symmetric;
  its ε at δ is the larger of the two directions'.

Nothing here imports dp_accounting (the tests use its public PLD as the oracle).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ampcalc.accounting.meter import CostLimitError as CostLimitError
from ampcalc.accounting.meter import Meter
from ampcalc.accounting.minorant import convex_minorant
from ampcalc.math.types import ArrayLike, FloatArray

T = TypeVar("T")

#: dp_accounting's default tail mass truncation of ``self_compose`` and ``compose``
TAIL_MASS_TRUNCATION = 1e-15
#: relative rounding of δ values before the convex minorant (covers interpolation and
#: the slopes' float error: each mass is computed from float slopes of the same points)
_ROUND = 1e-12
#: privacy losses beyond ±MAX_LOSS are not put on a grid (e^ε must stay finite)
MAX_LOSS = 512.0


@dataclass(frozen=True, slots=True)
class LossPmf:
    """One direction's privacy-loss distribution: mass ``probs[i]`` at the loss
    ``offset + h·(lower + i)``, ``infinity_mass`` at +∞; ``pessimistic`` says which side
    it is (it decides how composition truncates the tails). ``offset`` (in [0, h), 0 on
    the pessimistic side) lets an optimistic distribution put its largest atoms exactly
    on its grid; offsets add up under composition."""

    h: float
    lower: int
    probs: FloatArray
    infinity_mass: float
    pessimistic: bool
    offset: float = 0.0

    @property
    def size(self) -> int:
        return len(self.probs)

    def losses(self) -> FloatArray:
        idx = np.arange(self.lower, self.lower + len(self.probs), dtype=float)
        out: FloatArray = self.offset + idx * self.h
        return out


@dataclass(frozen=True, slots=True)
class LossPair:
    """A release's two directions: ``remove`` (P = the population with the record, in
    dp_accounting's naming) and ``add``; ``add is None`` when the pair is symmetric (both
    directions have the same distribution)."""

    remove: LossPmf
    add: LossPmf | None = None

    def directions(self) -> tuple[LossPmf, ...]:
        return (self.remove,) if self.add is None else (self.remove, self.add)

    @property
    def size(self) -> int:
        return sum(p.size for p in self.directions())

    @property
    def pessimistic(self) -> bool:
        return self.remove.pessimistic


def _masses(t: FloatArray, v: FloatArray) -> FloatArray:
    """Masses at the vertices t₁.. of the convex piecewise-linear curve through
    (t₀, v₀), (t₁, v₁), ... (t₀ = 0 is the anchor: no mass) and flat at ``tail_value``
    after the last: mass tᵢ·(slope right − slope left) (a kink of the hockey-stick
    curve at t = e^ℓ of slope change p·e^{−ℓ} is a mass p at the loss ℓ)."""
    s = np.diff(v) / np.diff(t)
    right = np.append(s[1:], 0.0)
    out: FloatArray = t[1:] * (right - s)
    return out


# --------------------------------------------------------------------------------------
# pessimistic: connect the dots
# --------------------------------------------------------------------------------------


def _in_range(e: FloatArray, d: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Points with |ε| <= MAX_LOSS (e^ε finite; below −MAX_LOSS δ is 1 − e^ε to float
    precision, above +MAX_LOSS the last kept δ bounds it and becomes mass at +∞)."""
    keep = np.abs(e) <= MAX_LOSS
    if not keep.any():
        raise ValueError(f"profile points: none with |ε| <= {MAX_LOSS:g}")
    return e[keep], d[keep]


def _grid_t(idx: np.ndarray, h: float) -> FloatArray:
    with np.errstate(over="ignore"):
        out: FloatArray = np.exp(idx * h)
    return out


def from_profile_points(
    eps: ArrayLike, delta: ArrayLike, h: float, *, pessimistic: bool = True
) -> LossPmf:
    """A privacy-loss distribution (one direction) from points of its profile.

    Contract (``pessimistic=True``):

    - ``eps``: strictly increasing finite privacy losses, of any sign (negative losses
      included: a direction's profile below ε = 0 is part of it), anywhere (grid
      multiples of ``h`` or not);
    - ``delta``: at each ε an UPPER bound on the profile δ(ε) = H_{e^ε}(P‖Q) of one
      direction of a pair, values in [0, 1]. Any such points will do: they need not be
      convex in e^ε nor non-increasing (an upper profile evaluated point by point need
      not be); the true profile is convex and non-increasing in e^ε, with δ ≥ 1 − e^ε.

    Points with |ε| > ``MAX_LOSS`` are dropped (e^ε must stay finite; the last δ kept
    bounds the profile beyond it).

    Returned: a distribution on the grid h·j, j from ⌊ε₀/h⌋ to ⌈ε_end/h⌉ (ε_end the first
    ε with δ = 0, else the last ε; the last δ is the mass at +∞), whose curve lies above
    the true profile at every ε. Construction: the grid values are the chord
    interpolation in e^ε of the points (between two points the convex profile is below
    its chord, so below the chord of upper values; left of ε₀ the chord from (0, 1);
    right of the last point its δ), rounded up, raised to 1 − e^ε, made non-increasing;
    their greatest convex minorant in e^ε (still above the profile: the profile is a
    convex minorant of the values) is the hockey-stick curve of the masses at its
    vertices (Doroshenko et al. 2022, Algorithm 1, on convex values: no mass negative,
    none clipped; asserted).

    ``pessimistic=False``: the points are taken as exact values, and the result is
    ``optimistic_from_profile_points(eps, delta, delta, h)``.

    Raises:
        ValueError: points not as above (empty, not increasing, δ outside [0, 1]).
    """
    e = np.asarray(eps, dtype=float)
    d = np.asarray(delta, dtype=float)
    if e.ndim != 1 or e.shape != d.shape or len(e) == 0:
        raise ValueError("profile points: eps and delta must be 1-d arrays of one length")
    if not (np.all(np.isfinite(e)) and np.all(np.diff(e) > 0)):
        raise ValueError("profile points: eps must be finite and strictly increasing")
    if not (np.all(d >= 0.0) and np.all(d <= 1.0)):
        raise ValueError("profile points: delta must lie in [0, 1]")
    if not pessimistic:
        return optimistic_from_profile_points(e, d, d, h)
    e, d = _in_range(e, d)
    zero = np.flatnonzero(d == 0.0)
    end = e[zero[0]] if len(zero) else e[-1]
    j0 = math.floor(e[0] / h)
    j1 = max(math.ceil(end / h), j0 + 1)
    idx = np.arange(j0, j1 + 1)
    with np.errstate(over="ignore"):
        te = np.exp(e)
        tg = _grid_t(idx, h)
        vals = np.interp(tg, np.concatenate(([0.0], te)), np.concatenate(([1.0], d)))
        one_minus = -np.expm1(idx * h)
    vals = np.minimum(vals * (1.0 + _ROUND) + 1e-300, 1.0)
    vals = np.maximum(vals, one_minus)
    vals = np.maximum.accumulate(vals[::-1])[::-1]
    return _pessimistic_from_grid(j0, vals, h)


def _pessimistic_from_grid(j0: int, vals: FloatArray, h: float) -> LossPmf:
    """Connect-the-dots on grid values vals[i] at ε = h·(j0 + i) (non-increasing, at least
    1 − e^ε), through their greatest convex minorant in e^ε anchored at (0, 1)."""
    n = len(vals)
    idx = np.arange(j0, j0 + n)
    t = np.concatenate(([0.0], _grid_t(idx, h)))
    v = np.concatenate(([1.0], vals))
    keep = convex_minorant(t, v)
    if keep[0] != 0 or keep[-1] != n:  # pragma: no cover - the ends are extreme points
        raise AssertionError("convex minorant lost an end point")
    m = _masses(t[keep], v[keep])
    probs = np.zeros(n)
    probs[keep[1:] - 1] = m
    # no mass clipped: the algorithm on convex values gives none below 0
    if not np.all(probs >= 0.0):  # pragma: no cover - guaranteed by the minorant's slopes
        raise AssertionError("connect-the-dots produced a negative mass")
    inf = float(v[-1])
    # exact arithmetic: the masses sum to 1 − δ_last (the sum telescopes); a float shortfall
    # goes to the lowest loss (raising δ only below it, where every pair has δ >= 1 − e^ε)
    short = 1.0 - inf - math.fsum(probs.tolist())
    if short > 0.0:
        probs[0] += short
    return LossPmf(h, j0, probs, inf, True)


# --------------------------------------------------------------------------------------
# optimistic: extended chords
# --------------------------------------------------------------------------------------


def optimistic_from_profile_points(
    eps: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    h: float,
    infinity_mass: float = 0.0,
    offset: float = 0.0,
) -> LossPmf:
    """A distribution whose hockey-stick curve lies BELOW the true profile everywhere.

    Inputs: strictly increasing ε (any sign, on the grid or not), and at each a lower
    bound aᵢ and an upper bound bᵢ on the true profile D (convex, non-increasing in
    t = e^ε, D ≥ 1 − t); ``infinity_mass`` a lower bound on D at ε → ∞ (0 is always one).

    Argument (tᵢ = e^{εᵢ}; docs/derivations.md §9.3, a function below for each step):
    for t ≥ tᵢ, the line Rᵢ through (tᵢ₋₁, bᵢ₋₁) and (tᵢ, aᵢ) lies below D (its slope is
    at most D's chord slope on [tᵢ₋₁, tᵢ], and D lies above the extension of its own
    chord outside the chord's interval, by convexity); for t ≤ tᵢ₊₁, the line Lᵢ₊₁
    through (tᵢ₊₁, aᵢ₊₁) and (tᵢ₊₂, bᵢ₊₂) lies below D likewise; 1 − t and
    ``infinity_mass`` lie below D everywhere. On [tᵢ, tᵢ₊₁], Eᵢ = the max of those lines
    is below D. The chord cᵢ of the a-values on that interval exceeds Eᵢ by at most xᵢ =
    max (cᵢ − Eᵢ), attained at an end or where two of the lines cross (cᵢ − Eᵢ is
    concave and piecewise linear). With gᵢ = aᵢ − max(xᵢ₋₁, xᵢ), the chord of the
    g-values is at most cᵢ − xᵢ ≤ Eᵢ ≤ D on every interval; left of t₀ the segment from
    (0, m) with m on the line L₀ lowered by a₀ − g₀ (or 1 when g₀ ≤ 1 − t₀, or flat at
    g₀: D ≥ D(t₀) ≥ g₀ there) is below D; right of the last point Rₙ lowered by aₙ − gₙ
    runs down to ``infinity_mass``, below D. The greatest convex minorant of that
    polyline is below it, so below D, and is the curve of the masses at its vertices
    (non-negative by construction). Each mass is then moved to the grid point below its
    loss (the grid ``offset`` + h·j): a smaller loss lowers the term p·(1 − e^{ε − ℓ})₊
    at every ε (input points on that grid stay where they are). The result's curve is
    below D at every ε. Where D is smooth the xᵢ are O(h²) (the extended chords are
    tangent to second order), so the curve is within O(h²) of D, like connect-the-dots
    above it; at a kink of D (an atom of the true loss) it is O(h) in one interval.

    Raises:
        ValueError: points not as above.
    """
    points = _profile_bounds(eps, lower, upper)
    c = float(infinity_mass)
    pts = points.tightened(c)
    # the curve ends (flat at c) at the first point where a reaches c: that point keeps
    # its value, and the last interval's chord is lowered at its left end only
    at_c = np.flatnonzero(pts.a <= c)
    ends_at_c = len(at_c) > 0
    if ends_at_c:
        z = int(at_c[0])
        if z == 0:
            return _flat_at(c, h, offset)
        pts = pts.first(z + 1)
    if len(pts.e) < 2:
        return _flat_at(c, h, offset)
    lines0, lines_s = _lines_below(pts, c)
    excess, left_only = _chord_excess(pts.a, lines0, lines_s)
    g = _lowered_values(pts.a, excess, left_only, ends_at_c)
    tv, vv, jv, final = _polyline_below(pts, g, c, h, offset)
    kt, kv, kj = _minorant_down_to(tv, vv, jv, final, h, offset)
    if len(kt) < 2:
        return _flat_at(final, h, offset)
    return _masses_on_grid(kt, kv, kj, final, h, offset)


@dataclass(frozen=True, slots=True)
class _ProfileBounds:
    """Points tᵢ = e^{εᵢ} (increasing, distinct, > 0) with a lower bound aᵢ and an upper
    bound bᵢ on the true profile D there (``one_minus``: 1 − tᵢ)."""

    e: FloatArray
    a: FloatArray
    b: FloatArray
    t: FloatArray
    one_minus: FloatArray

    def tightened(self, c: float) -> _ProfileBounds:
        """The bounds raised and lowered by what D is known to be: at least 1 − t and c,
        and non-increasing (so aᵢ >= aⱼ and bᵢ >= bⱼ for i < j, and b >= a)."""
        a = np.maximum(self.a, np.maximum(self.one_minus, c))  # both lie below D
        a = np.minimum.accumulate(a)  # D non-increasing: D(tᵢ) >= D(tⱼ) >= aⱼ for i < j
        b = np.maximum(self.b, a)
        b = np.maximum.accumulate(b[::-1])[::-1]  # D(tᵢ) <= D(tⱼ) <= bⱼ for i > j
        return dataclasses.replace(self, a=a, b=b)

    def first(self, n: int) -> _ProfileBounds:
        """The first ``n`` points."""
        return _ProfileBounds(*(x[:n] for x in (self.e, self.a, self.b, self.t, self.one_minus)))


def _profile_bounds(eps: ArrayLike, lower: ArrayLike, upper: ArrayLike) -> _ProfileBounds:
    """The input points, checked, with |ε| <= ``MAX_LOSS`` and distinct e^ε > 0 (the
    construction holds for any subset of the points); bounds clipped to [0, 1].

    Raises:
        ValueError: not 1-d arrays of one length >= 2, ε not finite and increasing, or
            fewer than two points left.
    """
    e = np.asarray(eps, dtype=float)
    a = np.clip(np.asarray(lower, dtype=float), 0.0, 1.0)
    b = np.clip(np.asarray(upper, dtype=float), 0.0, 1.0)
    if e.ndim != 1 or e.shape != a.shape or e.shape != b.shape or len(e) < 2:
        raise ValueError("profile points: eps, lower, upper: 1-d arrays of one length >= 2")
    if not (np.all(np.isfinite(e)) and np.all(np.diff(e) > 0)):
        raise ValueError("profile points: eps must be finite and strictly increasing")
    keep = np.abs(e) <= MAX_LOSS
    e, a, b = e[keep], a[keep], b[keep]
    if len(e) < 2:
        raise ValueError(f"profile points: fewer than two with |ε| <= {MAX_LOSS:g}")
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.exp(e)
        one_minus = -np.expm1(e)
    pts = _ProfileBounds(e, a, b, t, one_minus)
    # e^ε underflows to 0 far left, and two close ε can share one e^ε: such points are
    # left out
    distinct = (t > 0) & np.concatenate(([True], np.diff(t) > 0))
    if not distinct.all():
        pts = _ProfileBounds(*(x[distinct] for x in (e, a, b, t, one_minus)))
        if len(pts.e) < 2:
            raise ValueError("profile points: fewer than two with distinct e^ε > 0")
    return pts


def _flat_at(value: float, h: float, offset: float) -> LossPmf:
    """The distribution whose curve is flat at ``value``: all its mass at +∞."""
    return LossPmf(h, 0, np.zeros(1), value, False, offset)


def _lines_below(pts: _ProfileBounds, c: float) -> tuple[FloatArray, FloatArray]:
    """The lines below D on each interval [tᵢ, tᵢ₊₁]: the extended chords Rᵢ and Lᵢ₊₁,
    1 − t and c, in the interval's coordinate u = (t − tᵢ)/Δᵢ ∈ [0, 1], as their values
    at u = 0 (rows: R, L, 1 − t, c; −inf where a line is missing) and their slopes in u."""
    a, b, dt, n = pts.a, pts.b, np.diff(pts.t), len(pts.e)  # dt: the widths Δᵢ
    ninf = np.full(n - 1, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # R_i through (t_{i−1}, b_{i−1}), (t_i, a_i): slope in t (a_i − b_{i−1})/Δ_{i−1}
        r_s = np.concatenate(([np.nan], (a[1:-1] - b[:-2]) / dt[:-1] * dt[1:]))
        r_0 = np.where(np.isnan(r_s), ninf, a[:-1])
        r_s = np.nan_to_num(r_s)
        # L_{i+1} through (t_{i+1}, a_{i+1}), (t_{i+2}, b_{i+2}), evaluated at u = 0
        l_s = np.concatenate(((b[2:] - a[1:-1]) / dt[1:] * dt[:-1], [np.nan]))
        l_0 = np.where(np.isnan(l_s), ninf, a[1:] - l_s)
        l_s = np.nan_to_num(l_s)
    o_0, o_s = pts.one_minus[:-1], -dt  # 1 − t
    k_0, k_s = np.full(n - 1, c), np.zeros(n - 1)
    return np.stack([r_0, l_0, o_0, k_0]), np.stack([r_s, l_s, o_s, k_s])


def _crossings(lines0: FloatArray, lines_s: FloatArray) -> list[FloatArray]:
    """Where cᵢ − Eᵢ (concave, piecewise linear) can be largest: the interval's ends
    u = 0 and 1, and each u inside it where two of the lines cross (0 where they do not)."""
    width = lines0.shape[1]
    cands = [np.zeros(width), np.ones(width)]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for i in range(len(lines0)):
            for j in range(i + 1, len(lines0)):
                u = (lines0[i] - lines0[j]) / (lines_s[j] - lines_s[i])
                cands.append(np.where(np.isfinite(u) & (u > 0) & (u < 1), u, 0.0))
    return cands


def _chord_excess(
    a: FloatArray, lines0: FloatArray, lines_s: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """On each interval, xᵢ = max (cᵢ − Eᵢ) over the candidates (cᵢ the chord of the
    a-values, Eᵢ the max of the lines below D), at least 0; and the most the chord must
    be lowered at its left end only, max (cᵢ − Eᵢ)/(1 − u) (for a last interval that
    ends at c)."""
    # one candidate at a time (memory: a few arrays of the grid's length)
    excess = np.full(len(a) - 1, -np.inf)
    left_only = np.full(len(a) - 1, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for uu in _crossings(lines0, lines_s):
            chord = a[:-1] + (a[1:] - a[:-1]) * uu
            env = np.max(lines0 + lines_s * uu, axis=0)
            diff = np.where(np.isfinite(env), chord - env, 0.0)
            excess = np.maximum(excess, diff)
            left_only = np.maximum(left_only, np.where(uu < 1.0, diff / (1.0 - uu), -np.inf))
    return np.maximum(excess, 0.0), left_only


def _lowered_values(
    a: FloatArray, excess: FloatArray, left_only: FloatArray, ends_at_c: bool
) -> FloatArray:
    """gᵢ = aᵢ − max(xᵢ₋₁, xᵢ): values whose chords lie below D on every interval (a last
    point at c keeps its value, its interval lowered at the left end only)."""
    xl = np.concatenate(([0.0], excess))
    xr = np.concatenate((excess, [0.0]))
    if ends_at_c:
        xl[-1] = 0.0  # the last point stays at c ...
        xr[-2] = max(float(left_only[-1]), 0.0)  # ... its interval lowered at the left
    out: FloatArray = a - np.maximum(xl, xr)
    return out


def _loss_steps(t: float, h: float, offset: float) -> float:
    """The privacy loss log t in grid steps from ``offset``."""
    return (math.log(t) - offset) / h


def _polyline_below(
    pts: _ProfileBounds, g: FloatArray, c: float, h: float, offset: float
) -> tuple[FloatArray, FloatArray, FloatArray, float]:
    """The polyline below D: from (0, m) through the points (tᵢ, gᵢ), then along Rₙ
    lowered to gₙ down to c. Returned: its vertices' t, values and losses in grid steps
    (input points from ε itself, not log(e^ε)), and the value it ends flat at (c, or gₙ
    where Rₙ does not fall)."""
    a, b, t, dt = pts.a, pts.b, pts.t, np.diff(pts.t)
    # left of t₀: the segment from (0, m)
    slope0 = (b[1] - a[0]) / dt[0]
    m_opts = [g[0], a[0] - slope0 * t[0] - (a[0] - g[0])]
    if g[0] <= pts.one_minus[0]:
        m_opts.append(1.0)
    m = min(1.0, max(m_opts))
    # right of tₙ: Rₙ lowered to gₙ, down to c
    slope_n = (a[-1] - b[-2]) / dt[-1]
    tail_t: list[float] = []
    tail_v: list[float] = []
    tail_j: list[float] = []
    final = c
    if g[-1] > c:
        if slope_n < 0:
            tz = t[-1] + (c - g[-1]) / slope_n
            tail_t, tail_v, tail_j = [float(tz)], [c], [_loss_steps(tz, h, offset)]
        else:
            final = float(g[-1])  # D >= Rₙ >= aₙ >= gₙ beyond: flat
    tv = np.concatenate(([0.0], t, tail_t))
    vv = np.concatenate(([m], g, tail_v))
    jv = np.concatenate(([-math.inf], (pts.e - offset) / h, tail_j))
    return tv, vv, jv, final


def _minorant_down_to(
    tt: FloatArray, vals: FloatArray, jvals: FloatArray, final: float, h: float, offset: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The vertices (t, value, loss in grid steps) of the greatest convex minorant of the
    polyline, cut where it reaches ``final`` (max(minorant, final) is below D too)."""
    vals = np.maximum(vals, -1.0)  # g may dip below 0 (then max with c below)
    keep = convex_minorant(tt, vals)
    kt, kv, kj = tt[keep], vals[keep], jvals[keep]
    below = np.flatnonzero(kv <= final)
    if len(below):
        first = below[0]
        if first == 0:
            kt, kv, kj = kt[:1], np.array([final]), kj[:1]
        elif kv[first] < final:
            ta, va, tb, vb = kt[first - 1], kv[first - 1], kt[first], kv[first]
            tc = ta + (final - va) * (tb - ta) / (vb - va)
            kt = np.append(kt[:first], tc)
            kv = np.append(kv[:first], final)
            kj = np.append(kj[:first], _loss_steps(tc, h, offset))
        else:
            kt, kv, kj = kt[: first + 1], kv[: first + 1], kj[: first + 1]
    return kt, kv, kj


def _masses_on_grid(
    kt: FloatArray, kv: FloatArray, kj: FloatArray, final: float, h: float, offset: float
) -> LossPmf:
    """The masses at the minorant's vertices, each moved to the grid point at or below
    its loss (a point on the grid up to float rounding, 1e-6 of a step, stays on it)."""
    mass = _masses(kt, kv)
    jj = np.floor(kj[1:] + 1e-6).astype(np.int64)
    j0 = int(jj.min())
    probs = np.zeros(int(jj.max()) - j0 + 1)
    np.add.at(probs, jj - j0, np.maximum(mass, 0.0))
    return LossPmf(h, j0, probs, final, False, offset)


# --------------------------------------------------------------------------------------
# two-point pairs, composition, reading
# --------------------------------------------------------------------------------------


def epsilon_delta_pair(
    epsilon: float, delta: float, h: float, *, pessimistic: bool, offset: float = 0.0
) -> LossPair:
    """The dominating pair of every (ε, δ)-DP pair (randomized response at ε with mass δ
    on an outcome only P has; Kairouz, Oh and Viswanath 2015, Theorem 2.4): losses ±ε
    with masses (1 − δ)e^ε/(1 + e^ε), (1 − δ)/(1 + e^ε), δ at +∞; symmetric. Losses are
    rounded up to the grid (pessimistic) or down (optimistic, on the grid ``offset`` +
    h·j)."""
    if pessimistic:
        offset = 0.0
    hi = (1.0 - delta) / (1.0 + math.exp(-epsilon))
    lo = (1.0 - delta) / (1.0 + math.exp(epsilon))
    rnd = math.ceil if pessimistic else math.floor
    ja, jb = rnd((-epsilon - offset) / h), rnd((epsilon - offset) / h)
    probs = np.zeros(jb - ja + 1)
    probs[0] += lo
    probs[-1] += hi
    return LossPair(LossPmf(h, ja, probs, float(delta), pessimistic, offset))


def pair_from_profiles(
    eps: ArrayLike,
    remove: ArrayLike,
    h: float,
    *,
    pessimistic: bool,
    add: ArrayLike | None = None,
    remove_lower: ArrayLike | None = None,
    add_lower: ArrayLike | None = None,
) -> LossPair:
    """A release's pair from its profile points per direction, at the losses ``eps``:
    ``remove`` (and ``add``; ``None``: the pair is symmetric, one direction) upper
    bounds on each direction's profile; the ``*_lower`` values lower bounds on them (for
    the optimistic side; the upper values are taken as exact when not given).
    Pessimistic: ``from_profile_points`` per direction; optimistic:
    ``optimistic_from_profile_points`` (its contract)."""

    def one(up: ArrayLike, lo: ArrayLike | None) -> LossPmf:
        if pessimistic:
            return from_profile_points(eps, up, h)
        return optimistic_from_profile_points(eps, up if lo is None else lo, up, h)

    rem = one(remove, remove_lower)
    return LossPair(rem, None if add is None else one(add, add_lower))


def self_convolve_bounds(probs: FloatArray, k: int, tail: float) -> tuple[int, int]:
    """Indices [lo, hi] of the k-fold self-convolution of ``probs`` that hold all but
    ``tail`` of its mass: the Chernoff bounds of dp_accounting's
    ``compute_self_convolve_bounds`` (orders ±j/n, j = 1..20), all orders at once."""
    n = len(probs)
    upper, lower = (n - 1) * k, 0
    if tail == 0:
        return lower, upper
    orders = np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / n
    base = np.exp(np.arange(n, dtype=float) / n)
    mgf = np.empty(40)
    up, down = probs.copy(), probs.copy()
    for j in range(20):
        up = up * base
        down = down / base
        mgf[20 + j] = up.sum()
        mgf[19 - j] = down.sum()
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        bound = (k * np.log(mgf) + math.log(2.0 / tail)) / orders
    for order, bd in zip(orders.tolist(), bound.tolist(), strict=True):
        if not math.isfinite(bd):
            continue
        if order > 0:
            upper = min(upper, math.ceil(bd))
        else:
            lower = max(lower, math.floor(bd))
    return lower, upper


def self_compose_points(pmf: LossPmf, k: int, tail: float = TAIL_MASS_TRUNCATION) -> int:
    """Length of ``self_compose(pmf, k)``'s array, before any FFT."""
    if k <= 1:
        return pmf.size
    lo, hi = self_convolve_bounds(np.asarray(pmf.probs, dtype=float), k, tail)
    return max(hi - lo + 1, pmf.size)


def self_compose(
    pmf: LossPmf, k: int, tail: float = TAIL_MASS_TRUNCATION, meter: Meter | None = None
) -> LossPmf:
    """k independent copies composed: the FFT of the masses to the k-th power, on the
    window of the Chernoff bounds (mass outside it, at most ``tail``, is added at +∞ on
    the pessimistic side, as dp_accounting does; dropped on the optimistic side)."""
    from scipy import fft  # lazy: scipy, > 20 ms

    if k == 1:
        return pmf
    probs = np.asarray(pmf.probs, dtype=float)
    lo, hi = self_convolve_bounds(probs, k, tail)
    out_len = hi - lo + 1
    if meter is not None:
        meter.charge(max(out_len, len(probs)), f"{k} releases self-composed")
    n = fft.next_fast_len(max(out_len, len(probs)))
    conv = fft.irfft(fft.rfft(probs, n) ** k, n)
    out = np.roll(conv, -lo)[:out_len]
    inf = -math.expm1(k * math.log1p(-pmf.infinity_mass)) if pmf.infinity_mass < 1 else 1.0
    if pmf.pessimistic:
        inf = min(1.0, inf + tail)
    return LossPmf(pmf.h, pmf.lower * k + lo, out, inf, pmf.pessimistic, pmf.offset * k)


def _prefix_to_truncate(arr: FloatArray, threshold: float) -> int:
    over = np.cumsum(arr) > threshold
    return int(np.argmax(over)) if over.any() else len(arr)


def compose(a: LossPmf, b: LossPmf, tail: float = TAIL_MASS_TRUNCATION) -> LossPmf:
    """The distribution of the sum of the two losses (FFT convolution), its tails of mass
    ``tail``/2 each cut as dp_accounting's ``compose_pmfs``: pessimistic, the left tail
    moved up to the first kept loss and the right tail to +∞; optimistic, the right tail
    moved down to the last kept loss and the left tail dropped."""
    from scipy import signal  # lazy: scipy, > 20 ms

    if a.h != b.h or a.pessimistic != b.pessimistic:
        raise ValueError("composing distributions of different grids or sides")
    probs = signal.fftconvolve(a.probs, b.probs) if min(a.size, b.size) > 64 else None
    if probs is None:
        probs = np.convolve(a.probs, b.probs)
    inf = a.infinity_mass + b.infinity_mass - a.infinity_mass * b.infinity_mass
    left = _prefix_to_truncate(probs, tail / 2)
    right = len(probs) - _prefix_to_truncate(np.flip(probs), tail / 2)
    right = max(right, left + 1)
    left_mass, right_mass = float(np.sum(probs[:left])), float(np.sum(probs[right:]))
    out = probs[left:right].copy()
    if a.pessimistic:
        out[0] += left_mass
        inf += right_mass
    else:
        out[-1] += right_mass
    return LossPmf(
        a.h, a.lower + b.lower + left, out, min(inf, 1.0), a.pessimistic, a.offset + b.offset
    )


def compose_pairs(a: LossPair | None, b: LossPair, meter: Meter | None = None) -> LossPair:
    """Two releases' pairs composed, direction by direction (``a`` may be ``None``)."""
    if a is None:
        return b
    if meter is not None:
        meter.charge(a.size + b.size, "the running total composed")
    rem = compose(a.remove, b.remove)
    if a.add is None and b.add is None:
        return LossPair(rem)
    return LossPair(rem, compose(a.add or a.remove, b.add or b.remove))


def smallest_first(
    items: Sequence[T], combine: Callable[[T, T], T], size: Callable[[T], int]
) -> T:
    """``items`` combined two at a time, the two smallest first each time (a Huffman
    order): composing distributions so costs about the result's length times log₂ of
    their number, where composing each into one running total costs the sum of its
    lengths (quadratic in their number). Ties keep the given order."""
    heap = [(size(x), i, x) for i, x in enumerate(items)]
    heapq.heapify(heap)
    order = len(heap)
    while len(heap) > 1:
        _, _, a = heapq.heappop(heap)
        _, _, b = heapq.heappop(heap)
        both = combine(a, b)
        heapq.heappush(heap, (size(both), order, both))
        order += 1
    return heap[0][2]


def self_compose_pair(pair: LossPair, k: int, meter: Meter | None = None) -> LossPair:
    """k copies of a release's pair."""
    if k == 1:
        return pair
    rem = self_compose(pair.remove, k, meter=meter)
    return LossPair(rem, None if pair.add is None else self_compose(pair.add, k, meter=meter))


def _grid_deltas(pmf: LossPmf) -> FloatArray:
    """δ at every grid loss ℓⱼ of the distribution, without the infinity mass, as
    Aⱼ₋₁ = e^{−h}Aⱼ + (1 − e^{−h})Sⱼ (Sⱼ the mass at losses >= ℓⱼ): a recursion of
    positive terms, so no cancellation (δ small stays accurate relative to itself)."""
    from scipy import signal  # lazy: scipy, > 20 ms

    probs = np.asarray(pmf.probs, dtype=float)
    s_rev = np.cumsum(probs[::-1])  # S from the top: s_rev[k] = S_{n−1−k}
    eh = math.exp(-pmf.h)
    # y[k] = A_{n−2−k}: y[k] = e^{−h}·y[k−1] + (1 − e^{−h})·s_rev[k], y[−1] = A_{n−1} = 0
    y = signal.lfilter([-math.expm1(-pmf.h)], [1.0, -eh], s_rev)
    out: FloatArray = np.concatenate((y[::-1][1:], [0.0]))
    return out


def delta_for_epsilon(pmf: LossPmf | LossPair, eps: ArrayLike) -> FloatArray:
    """δ(ε) of the distribution (a pair: the larger direction) at each ε, exact for the
    distribution up to float rounding (its curve is linear in e^ε between grid losses)."""
    if isinstance(pmf, LossPair):
        outs = [delta_for_epsilon(p, eps) for p in pmf.directions()]
        res: FloatArray = np.maximum.reduce(outs)
        return res
    e = np.atleast_1d(np.asarray(eps, dtype=float))
    grid = _grid_deltas(pmf)
    probs = np.asarray(pmf.probs, dtype=float)
    n = len(probs)
    pos = (e - pmf.offset) / pmf.h - pmf.lower
    j = np.clip(np.floor(pos).astype(np.int64), -1, n - 1)
    out = np.empty_like(e)
    # below the lowest loss: δ = S − e^ε·Σ p e^{−ℓ}
    low = j < 0
    if np.any(low):
        with np.errstate(over="ignore"):
            qm = float(np.sum(probs * np.exp(-pmf.losses())))
            out[low] = float(probs.sum()) - np.exp(e[low]) * qm
    mid = (j >= 0) & (j < n - 1)
    if np.any(mid):
        jm = j[mid]
        # linear in t between tⱼ and tⱼ₊₁
        frac = np.expm1((pos[mid] - jm) * pmf.h) / math.expm1(pmf.h)
        out[mid] = grid[jm] + (grid[jm + 1] - grid[jm]) * frac
    out[j >= n - 1] = 0.0
    res2: FloatArray = np.clip(out, 0.0, None) + pmf.infinity_mass
    return res2


def epsilon_for_delta(pmf: LossPmf | LossPair, delta: float) -> float:
    """The smallest ε >= 0 with δ(ε) <= ``delta`` for the distribution (a pair: the larger
    of its directions'); ``inf`` when the infinity mass alone is above ``delta``. The
    curve is linear in e^ε between grid losses: the crossing is solved there exactly
    (up to float rounding; callers read at δ less an allowance)."""
    if isinstance(pmf, LossPair):
        return max(epsilon_for_delta(p, delta) for p in pmf.directions())
    if pmf.infinity_mass > delta:
        return math.inf
    target = delta - pmf.infinity_mass
    grid = _grid_deltas(pmf)
    over = np.flatnonzero(grid > target)
    if len(over) == 0:
        # at or below the lowest loss: δ = S − e^ε·Σ p e^{−ℓ} on (−∞, ℓ₀]
        probs = np.asarray(pmf.probs, dtype=float)
        with np.errstate(over="ignore"):
            qm = float(np.sum(probs * np.exp(-pmf.losses())))
        s = float(probs.sum())
        if s <= target or qm <= 0:
            return 0.0
        return max(0.0, math.log((s - target) / qm))
    jm = int(over[-1])  # the largest grid loss still above the target
    if jm >= len(grid) - 1:  # pragma: no cover - the top value is 0 <= target
        return math.inf
    ga, gb = float(grid[jm]), float(grid[jm + 1])
    frac = (ga - target) / (ga - gb) if ga > gb else 1.0
    eps = pmf.offset + (pmf.lower + jm) * pmf.h + math.log1p(frac * math.expm1(pmf.h))
    return max(0.0, eps)


def fft_noise(pair: LossPair) -> float:
    """An allowance for the FFT's rounding in δ read from a composed distribution: the
    largest negative mass (where the true mass is 0) times √(bins), times 1000 (an
    engineering margin, not a proof; see ``budget.FFT_DELTA``)."""
    worst = 0.0
    for p in pair.directions():
        if p.size:
            worst = max(worst, max(0.0, -float(np.min(p.probs))) * math.sqrt(p.size))
    return 1000.0 * worst
