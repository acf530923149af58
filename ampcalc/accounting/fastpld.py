"""Poisson-sampled Gaussian and Laplace releases as privacy-loss distributions.

Each direction of a Poisson-sampled release with rate q (add-remove) has an exact
dominating pair (Zhu, Dong and Wang 2022), and its hockey-stick curve in closed form from
the mechanism's own profile δ_M(x) = H_{e^x}(M(1) ‖ M(0)) (valid for every real x; for
x < 0 by the symmetric pair, δ_M(x) = 1 − e^x + e^x·δ_M(−x): the Gaussian and the
Laplace pairs are symmetric under reflection). dp_accounting's naming:

- REMOVE, the pair ((1 − q)M(0) + qM(−Δ), M(0)): H_{e^ε} = q·δ_M(log((e^ε − (1 − q))/q))
  for e^ε > 1 − q, else 1 − e^ε (Balle, Barthe and Gaboardi 2018, Theorem 8's
  tightness);
- ADD, the pair (M(0), (1 − q)M(0) + qM(Δ)): H_{e^ε} = (1 − (1 − q)e^ε)·δ_M(ε + log q −
  log(1 − (1 − q)e^ε)) for e^ε < 1/(1 − q), else 0 (factor out 1 − (1 − q)e^ε from
  Q(S) − e^ε((1 − q)Q(S) + qP(S))).

Each is evaluated on the accountant's grid, rounded outward (``upper``: an upper bound
on the exact value, else a lower one), from the loss where δ(ε) − (1 − e^ε) falls below
``TAIL`` to the loss where δ(ε) does, and turned into a distribution by
``pmf.from_profile_points`` (pessimistic, connect-the-dots: the upper total) or
``pmf.optimistic_from_profile_points`` (below the exact curve: the accuracy estimate).
With q = 1 the two directions are the mechanism's own (unsampled) pair. Nothing here
depends on dp_accounting.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ampcalc.accounting import pmf as P
from ampcalc.accounting.meter import CostLimitError as CostLimitError
from ampcalc.accounting.meter import Meter as Meter
from ampcalc.accounting.meter import grid_points as grid_points
from ampcalc.accounting.profiles import Gaussian, Laplace, Profile
from ampcalc.math.types import ArrayLike, FloatArray

_U = 2.0**-53
#: slack for one libm call (exp, log, log1p, expm1), as in ``profiles._LIBM``
_LIBM = 1e-13
#: the δ left out at each end of a release's grid (below: kept by the chord from
#: (0, 1); above: the mass at +∞ of the pessimistic side)
TAIL = 1e-15
#: the largest privacy loss a grid reaches (e^ε stays finite in a float)
MAX_LOSS = 512.0


def signed_delta(profile: Profile, x: ArrayLike, *, upper: bool = True) -> FloatArray:
    """δ_M(x) of a symmetric pair for every real x (an upper bound, or a lower one)."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    pos = x >= 0.0
    fn = profile.delta if upper else profile.delta_lower
    if np.any(pos):
        out[pos] = fn(x[pos])
    neg = ~pos
    if np.any(neg):
        xn = x[neg]
        with np.errstate(under="ignore", over="ignore"):
            if upper:
                ex = np.exp(xn) * (1.0 + _LIBM)
                one_minus = -np.expm1(xn) * (1.0 + _LIBM) + 4.0 * _U
                out[neg] = one_minus + ex * fn(-xn) + 4.0 * _U
            else:
                ex = np.exp(xn) * (1.0 - _LIBM)
                one_minus = -np.expm1(xn) * (1.0 - _LIBM) - 4.0 * _U
                out[neg] = one_minus + ex * fn(-xn) - 4.0 * _U
    res: FloatArray = np.clip(out, 0.0, 1.0)
    return res


def direction_delta(
    profile: Profile, q: float, eps: ArrayLike, *, remove: bool, upper: bool = True
) -> FloatArray:
    """One direction's hockey-stick divergence at each ε (module docstring), bounded from
    above (``upper``) or below."""
    e = np.asarray(eps, dtype=float)
    sg = 1.0 if upper else -1.0
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        ee = np.exp(e)
        if remove:
            u = ee - (1.0 - q)
            u_r = u - sg * (8.0 * _U * (ee + 1.0) + _LIBM * ee)  # rounded toward larger δ
            xr = np.log(np.maximum(u_r, 0.0) / q)
            x_r = xr - sg * 1e-12 * (1.0 + np.abs(np.where(np.isfinite(xr), xr, 0.0)))
            x_r = np.where(u_r > 0.0, x_r, -np.inf)
            dg = np.where(
                np.isfinite(x_r), signed_delta(profile, np.nan_to_num(x_r), upper=upper), 1.0
            )
            val = np.where(u_r > 0.0, q * dg * (1.0 + sg * 4.0 * _U), 0.0)
            edge = -np.expm1(e) * (1.0 + sg * _LIBM) + sg * 4.0 * _U  # 1 − e^ε
            # every direction has δ >= 1 − e^ε; below e^ε = 1 − q it is exactly that
            res = np.maximum(edge, val)
        else:
            qe = (1.0 - q) * ee
            v = 1.0 - qe
            v_r = v + sg * (8.0 * _U * (qe + 1.0) + _LIBM * qe)  # 1 − (1 − q)e^ε, rounded
            x = e + math.log(q) - np.log(np.maximum(v_r, 1e-300))
            x_r = x - sg * 1e-12 * (1.0 + np.abs(e) + abs(math.log(q)) + np.abs(x))
            dg = signed_delta(profile, np.where(v_r > 0.0, x_r, 0.0), upper=upper)
            res = np.where(v_r > 0.0, v_r * dg * (1.0 + sg * 4.0 * _U), 0.0)
    out: FloatArray = np.clip(res, 0.0, 1.0)
    return out


def remove_delta(mu: float, q: float, eps: FloatArray) -> FloatArray:
    """Upper bound on the REMOVE direction of the Gaussian with μ = Δ/σ at each ε."""
    return direction_delta(Gaussian(mu_given=mu), q, eps, remove=True)


def add_delta(mu: float, q: float, eps: FloatArray) -> FloatArray:
    """Upper bound on the ADD direction of the Gaussian with μ = Δ/σ at each ε."""
    return direction_delta(Gaussian(mu_given=mu), q, eps, remove=False)


def _first(pred: Any, lo: float, hi: float, h: float) -> float:
    """The crossing of a monotone predicate on arrays (false at lo, true at hi), to
    within h/4: 65 points a pass."""
    while hi - lo > h / 4:
        xs = np.linspace(lo, hi, 65)
        ok = np.asarray(pred(xs), dtype=bool)
        ok[-1] = True
        k = max(int(np.argmax(ok)), 1)
        lo, hi = float(xs[k - 1]), float(xs[k])
    return hi


def loss_range(profile: Profile, q: float, h: float, remove: bool) -> tuple[float, float]:
    """[left, right]: the losses between which a direction's grid runs (module
    docstring); infinite when either end is beyond ±``MAX_LOSS`` (e^ε overflows there:
    no grid is built, and the cost meter refuses an infinite one). Cached: the profiles
    are frozen dataclasses; the cache holds both directions of ``LOSS_RANGE_CACHE // 2``
    releases, so a ledger of that many distinct entries finds each range once."""
    key: Any = profile
    return _loss_range(key, q, h, remove)


#: loss ranges kept (each a few floats): a ledger's cost check, its two accountant sides
#: and its witness ask for every entry's ranges in turn, so fewer than two per entry
#: would evict each range before it is asked for again
LOSS_RANGE_CACHE = 1 << 14


@functools.lru_cache(maxsize=LOSS_RANGE_CACHE)
def _loss_range(profile: Any, q: float, h: float, remove: bool) -> tuple[float, float]:

    def f(e: FloatArray) -> FloatArray:
        return direction_delta(profile, q, e, remove=remove)

    def gap(e: FloatArray) -> FloatArray:
        # δ − (1 − e^ε), non-decreasing in ε (the upper bound's own rounding, relative
        # 1e-12 of 1 − e^ε, is not counted as a gap); δ >= 0 > 1 − e^ε for ε > 0
        with np.errstate(over="ignore"):
            out: FloatArray = np.where(
                e > 0.0, np.inf, f(e) + np.expm1(np.minimum(e, 0.0)) * (1.0 + 1e-12)
            )
        return out

    powers: FloatArray = np.asarray(2.0 ** np.arange(10), dtype=np.float64)  # 1 .. MAX_LOSS
    small = np.flatnonzero(f(powers) <= TAIL)
    if len(small) == 0:
        return (-math.inf, math.inf)
    k = int(small[0])
    right = _first(lambda e: f(e) <= TAIL, powers[k - 1] if k else -MAX_LOSS, powers[k], h)
    neg: FloatArray = -powers
    low = np.flatnonzero(gap(neg) <= TAIL)
    if len(low) == 0:
        return (-math.inf, math.inf)
    lo = -float(powers[low[0]])
    if gap(np.array([right]))[0] <= TAIL:  # pragma: no cover - δ > 1 − e^ε somewhere
        return (lo, right)
    left = _first(lambda e: gap(e) > TAIL, lo, right, h) - h / 4
    return (min(left, right - h), right)


def _native_profile(kind: str, scale: float, sensitivity: float) -> Profile:
    if kind == "gaussian":
        return Gaussian(sigma=scale, sensitivity=sensitivity)
    return Laplace(scale=scale, sensitivity=sensitivity)


def atoms(profile: Profile, q: float, remove: bool) -> list[tuple[float, float]]:
    """(loss, mass under P) of the atoms of a direction's privacy loss, largest first: a
    sampled Laplace's loss is constant for x beyond either end of [−Δ, 0] (REMOVE) or
    [0, Δ] (ADD); none for the Gaussian."""
    if not isinstance(profile, Laplace):
        return []
    e0 = profile.sensitivity / profile.scale
    top, bot = math.log1p(q * math.expm1(e0)), math.log1p(q * math.expm1(-e0))
    if remove:  # P = (1 − q)Lap(0) + qLap(−Δ)
        out = [
            (bot, 0.5 * ((1.0 - q) + q * math.exp(-e0))),
            (top, 0.5 * ((1 - q) * math.exp(-e0) + q)),
        ]
    else:  # P = Lap(0)
        out = [(-bot, 0.5), (-top, 0.5 * math.exp(-e0))]
    return sorted(out, key=lambda a: -a[1])


def sampled_points(profile: Profile, q: float, h: float) -> float:
    """Grid points of a sampled release's two directions, from their loss ranges alone
    (nothing is built)."""
    total = 0.0
    for remove in (True, False) if q < 1.0 else (True,):
        lo, hi = loss_range(profile, q, h, remove)
        total += grid_points(lo, hi, h)
    return total


class Kept:
    """Optimistic REMOVE directions, each built once for a ledger and handed out again
    (``sampled_direction(..., kept=)``): the accuracy side of a ledger's accountant and
    its witness compose the same ones. A ``LossPmf`` is never changed once built."""

    def __init__(self) -> None:
        self._pmfs: dict[tuple[Any, float, float], P.LossPmf] = {}

    def get(self, profile: Profile, q: float, h: float) -> P.LossPmf:
        """The optimistic REMOVE direction of ``profile`` sampled at q, on the interval h."""
        key = (profile, q, h)
        if key not in self._pmfs:
            self._pmfs[key] = _built_direction(profile, q, h, remove=True, pessimistic=False)
        return self._pmfs[key]


def sampled_pair(
    profile: Profile,
    q: float,
    h: float,
    *,
    pessimistic: bool,
    meter: Meter | None = None,
    kept: Kept | None = None,
) -> P.LossPair:
    """The Poisson-sampled release's pair of distributions (both directions; one when
    q = 1, where the pair is symmetric); ``meter`` charged with the grid first."""
    if meter is not None:
        meter.charge(sampled_points(profile, q, h), f"the sampled {profile.describe()}")
    out = [
        sampled_direction(profile, q, h, remove=remove, pessimistic=pessimistic, kept=kept)
        for remove in ((True, False) if q < 1.0 else (True,))
    ]
    return P.LossPair(out[0], out[1] if len(out) > 1 else None)


def sampled_direction(
    profile: Profile,
    q: float,
    h: float,
    *,
    remove: bool,
    pessimistic: bool,
    kept: Kept | None = None,
) -> P.LossPmf:
    """One direction of the Poisson-sampled release (``remove``: the pair
    ((1 − q)Q + qP ‖ Q), P and Q M's dominating pair), pessimistic or optimistic; an
    optimistic REMOVE direction from ``kept`` when given (built there once)."""
    if kept is not None and remove and not pessimistic:
        return kept.get(profile, q, h)
    return _built_direction(profile, q, h, remove=remove, pessimistic=pessimistic)


def _built_direction(
    profile: Profile, q: float, h: float, *, remove: bool, pessimistic: bool
) -> P.LossPmf:
    lo, hi = loss_range(profile, q, h, remove)
    at = [] if pessimistic else atoms(profile, q, remove)
    # the optimistic side's grid through the largest atom
    off = at[0][0] - h * math.floor(at[0][0] / h) if at else 0.0
    eps = off + np.arange(math.floor((lo - off) / h), math.ceil((hi - off) / h) + 1) * h
    up = direction_delta(profile, q, eps, remove=remove, upper=True)
    if pessimistic:
        return P.from_profile_points(eps, up, h)
    low = direction_delta(profile, q, eps, remove=remove, upper=False)
    return P.optimistic_from_profile_points(eps, low, up, h, offset=off)
