"""Privacy profiles δ_M(ε) of named noise mechanisms, soundly rounded.

Each mechanism is a frozen dataclass with:

- ``delta(eps)``: an upper bound on M's exact profile δ_M(ε) = sup over neighbouring
  pairs of the hockey-stick divergence H_{e^ε}(M(D) ‖ M(D′)) (vectorised over ε >= 0,
  rounded outward: never below the exact value after float rounding);
- ``delta_lower(eps)``: a lower bound on the profile of some mechanism the declaration
  covers (for the exact profiles: the same profile rounded down; for ``zcdp``: the
  Gaussian with μ = √(2ρ), which is ρ-zCDP);
- ``replace_one()``: the profile under replace-one neighbours when the sensitivity was
  stated under add-remove (a replacement is a removal then an addition, so a sum's
  replace-one sensitivity is at most twice its add-remove one; zCDP's group privacy
  gives 4ρ for two records);
- ``pure_epsilon``: the ε from which δ_M(ε) = 0 (``None``: positive for every ε).

Formulas and sources are in docs/mechanisms/. Only numpy and math are used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from ampcalc.math import numeric
from ampcalc.math.types import ArrayLike, FloatArray
from ampcalc.model.references import CKS20

#: unit roundoff of float64
_U = 2.0**-53
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT2 = math.sqrt(2.0)
#: the smallest positive float: an upper bound on any positive value that underflows
_TINY = 5e-324
#: relative error allowed for one call of libm's erfc/exp/log/expm1 (a few ulps in
#: practice; 1e-13 leaves a wide margin and costs nothing visible), and of scipy's erfc
#: (Cephes: peak relative error 5.7e-14 on [0, 26.6] by its documentation; 1.5e-14 against
#: mpmath on [−6, 20] here, which ``tests/test_accounting_profiles.py`` holds)
_LIBM = 1e-13

_LIBM_ERFC = np.frompyfunc(math.erfc, 1, 1)
#: from this many points on, erfc is scipy's vectorised one (about ten times faster than
#: libm's, called point by point); below, libm's (no scipy import for a single bound)
ERFC_VECTOR_FROM = 4096


def _erfc(x: FloatArray) -> FloatArray:
    """erfc at each point, within a relative ``_LIBM``: libm's below ``ERFC_VECTOR_FROM``
    points, scipy's from there. The path follows the call's size, not the point: a point
    evaluated alone and inside a long grid may differ by the two erfc's errors, both
    inside ``_LIBM``."""
    if x.size < ERFC_VECTOR_FROM:
        return np.asarray(_LIBM_ERFC(x), dtype=float)
    from scipy.special import erfc  # lazy: scipy, > 20 ms

    out: FloatArray = erfc(x)
    return out


class Profile(Protocol):
    """What the amplification and composition code needs from a mechanism."""

    @property
    def name(self) -> str: ...

    @property
    def pure_epsilon(self) -> float | None: ...

    @property
    def exact(self) -> bool: ...

    def delta(self, eps: ArrayLike) -> FloatArray: ...

    def delta_lower(self, eps: ArrayLike) -> FloatArray: ...

    def replace_one(self) -> Profile: ...

    def describe(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


def _eps(eps: ArrayLike) -> FloatArray:
    e = np.asarray(eps, dtype=float)
    if np.any(e < 0) or np.any(np.isnan(e)):
        raise ValueError("a privacy profile is evaluated at ε >= 0")
    return e


def _up1(x: float) -> float:
    return float(np.nextafter(x, math.inf))


def _down1(x: float) -> float:
    return float(np.nextafter(x, 0.0))


def _mul(a: float, b: float, up: bool) -> float:
    """a·b rounded up (``up``) or down: the float product when it is exact."""
    q = a * b
    if Fraction(a) * Fraction(b) == Fraction(q):
        return q
    return _up1(q) if up else _down1(q)


def _div(a: float, b: float, up: bool) -> float:
    """a/b rounded up (``up``) or down: the float quotient when it is exact."""
    q = a / b
    if Fraction(a) / Fraction(b) == Fraction(q):
        return q
    return _up1(q) if up else _down1(q)


def _finish_up(x: FloatArray, positive: bool) -> FloatArray:
    """Round an upper bound on a probability outward and clip it to [0, 1].

    Without ``positive`` a value of exactly 0 stays 0: the pure mechanisms return 0
    only where the exact profile is 0 (ε >= ε₀), by selection, not by arithmetic.
    """
    x = np.maximum(x, 0.0)
    out = np.where(x > 0.0, numeric.round_up(x), 0.0)
    if positive:
        out = np.maximum(out, _TINY)
    res: FloatArray = np.minimum(out, 1.0)
    return res


def _finish_down(x: FloatArray) -> FloatArray:
    res: FloatArray = np.minimum(numeric.round_down(np.maximum(x, 0.0)), 1.0)
    return res


# --------------------------------------------------------------------------------------
# log Φ(−x) with outward error bounds
# --------------------------------------------------------------------------------------

#: (2n − 1)!! for the asymptotic series of the Mills ratio, n = 0..9
_MILLS = (1.0, 1.0, 3.0, 15.0, 105.0, 945.0, 10395.0, 135135.0, 2027025.0, 34459425.0)
_SERIES_FROM = 20.0


def log_normal_sf(x: ArrayLike, *, upper: bool, dx: ArrayLike = 0.0) -> FloatArray:
    """An upper (``upper=True``) or lower bound on log Φ(−x), vectorised.

    Args:
        x: the point(s); Φ is the standard normal distribution function.
        upper: which side to round to.
        dx: a bound on the absolute error of ``x`` itself (as computed by the caller);
            the result covers every point within ``dx`` of ``x``.

    Numerics: ``log(erfc(x/√2)/2)`` (``_erfc``) for x <= 20; above, the asymptotic
    series Φ(−x) = φ(x)/x·Σ (−1)^n (2n−1)!!/x^{2n}, whose remainder has the sign of,
    and is smaller than, the first omitted term (DLMF 7.12.1): stopping after a positive
    term bounds it from above, after a negative term from below. The error of ``x``
    moves log Φ(−x) by at most h(x)·dx, with the hazard h(x) = φ(x)/Φ(−x) < |x| + 1.
    """
    xa = np.asarray(x, dtype=float)
    out = np.empty(xa.shape, dtype=float)
    small = xa <= _SERIES_FROM
    if np.any(small):
        v = _erfc(xa[small] / _SQRT2) * 0.5
        with np.errstate(divide="ignore"):
            out[small] = np.log(v)
    big = ~small
    if np.any(big):
        xb = xa[big]
        z = 1.0 / (xb * xb)
        s = np.zeros_like(xb)
        zn = np.ones_like(xb)
        for n in range(9):  # n = 0..8: ends on a positive term: an upper bound
            s += (-1.0) ** n * _MILLS[n] * zn
            zn = zn * z
        if not upper:
            s = s - _MILLS[9] * zn  # one more (negative) term: a lower bound
        out[big] = -0.5 * xb * xb - _LOG_SQRT_2PI - np.log(xb) + np.log(s)
    slack = (
        _LIBM
        + 16.0 * _U * (0.5 * xa * xa + np.abs(out) + 1.0)
        + (np.abs(xa) + 1.0) * np.asarray(dx, dtype=float)
    )
    res: FloatArray = out + slack if upper else out - slack
    return res


def _exp_up(x: FloatArray) -> FloatArray:
    with np.errstate(over="ignore", under="ignore"):
        res: FloatArray = np.exp(x) * (1.0 + _LIBM)
    return res


def _exp_down(x: FloatArray) -> FloatArray:
    with np.errstate(over="ignore", under="ignore"):
        res: FloatArray = np.exp(x) * (1.0 - _LIBM)
    return res


# --------------------------------------------------------------------------------------
# Gaussian (analytic Gaussian mechanism)
# --------------------------------------------------------------------------------------


def gaussian_delta(mu: ArrayLike, eps: ArrayLike, *, upper: bool = True) -> FloatArray:
    """Profile of the Gaussian mechanism with μ = sensitivity/σ (Balle and Wang 2018).

    δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle and Wang 2018, Theorem 8), the
    hockey-stick divergence of N(μ, 1) against N(0, 1), computed in log space as
    exp(log Φ(−a)) − exp(ε + log Φ(−b)) with a = ε/μ − μ/2, b = ε/μ + μ/2, each term
    bounded outward (``log_normal_sf``), so no term overflows (ε up to 10⁶) and no
    underflow is taken for 0.
    """
    e = _eps(eps)
    m: Any = np.asarray(mu, dtype=float)  # μ may be an array too (broadcast against ε)
    r = e / m
    a = r - 0.5 * m
    b = r + 0.5 * m
    dx = 4.0 * _U * (np.abs(r) + 0.5 * m)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        l1 = log_normal_sf(a, upper=upper, dx=dx)
        l2 = log_normal_sf(b, upper=not upper, dx=dx)
        s2 = e + l2
        s2 = (
            s2 - 4.0 * _U * (np.abs(e) + np.abs(l2))
            if upper
            else s2 + 4.0 * _U * (np.abs(e) + np.abs(l2))
        )
        if upper:
            val = _exp_up(l1) - _exp_down(s2)
            return _finish_up(np.where(np.isnan(val), 1.0, val), positive=True)
        val = _exp_down(l1) - _exp_up(s2)
        return _finish_down(np.where(np.isnan(val), 0.0, val))


@dataclass(frozen=True, slots=True, kw_only=True)
class Gaussian:
    """Gaussian noise of standard deviation σ on a query of L2 sensitivity Δ.

    ``mu`` = Δ/σ is all the profile depends on; a composition of Gaussians is the
    Gaussian with μ = √Σμᵢ² (``compose.gaussians``), given by ``mu`` directly.
    """

    sigma: float | None = None
    sensitivity: float = 1.0
    mu_given: float | None = None
    mu_low: float | None = None
    name: str = "gaussian"
    exact: bool = True

    @property
    def pure_epsilon(self) -> float | None:
        return None

    @property
    def mu(self) -> float:
        if self.mu_given is not None:
            return self.mu_given
        assert self.sigma is not None
        return self.sensitivity / self.sigma

    def _mu_up(self) -> float:
        """μ rounded up: ``mu_given`` is an upper bound on μ as given."""
        if self.mu_given is not None:
            return self.mu_given
        assert self.sigma is not None
        return _div(self.sensitivity, self.sigma, True)

    def _mu_down(self) -> float:
        """μ rounded down: ``mu_low`` when given, else ``mu_given`` is taken as exact."""
        if self.mu_given is not None:
            return self.mu_low if self.mu_low is not None else self.mu_given
        assert self.sigma is not None
        return _div(self.sensitivity, self.sigma, False)

    def delta(self, eps: ArrayLike) -> FloatArray:
        """Upper bound on δ(ε); the profile grows with μ, so μ is rounded up."""
        return gaussian_delta(self._mu_up(), eps, upper=True)

    def delta_lower(self, eps: ArrayLike) -> FloatArray:
        return gaussian_delta(self._mu_down(), eps, upper=False)

    def replace_one(self) -> Gaussian:
        return Gaussian(
            mu_given=_up1(2.0 * self._mu_up()), mu_low=2.0 * self._mu_down(), name=self.name
        )

    def describe(self) -> str:
        if self.mu_given is not None:
            return f"Gaussian, μ = {self.mu:.10g}"
        return f"Gaussian, σ = {self.sigma:g}, sensitivity {self.sensitivity:g}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mechanism": "gaussian", "mu": self.mu}
        if self.sigma is not None:
            out.update(sigma=self.sigma, sensitivity=self.sensitivity)
        return out


# --------------------------------------------------------------------------------------
# Laplace
# --------------------------------------------------------------------------------------


def _pure_rr_delta(eps0: float, eps: FloatArray, denom_rest: float, upper: bool) -> FloatArray:
    """(1 − e^{ε−ε₀})/(1 + c) for ε < ε₀, else 0; c >= 0 exact-ish, bounded outward."""
    with np.errstate(over="ignore"):
        d = eps - eps0
        val = -np.expm1(np.minimum(d, 0.0)) / (1.0 + denom_rest)
    if upper:
        val = val * (1.0 + _LIBM) + _U * 8.0 * np.abs(d)
        return _finish_up(np.where(eps < eps0, val, 0.0), positive=False)
    val = val * (1.0 - _LIBM) - _U * 8.0 * np.abs(d)
    return _finish_down(np.where(eps < eps0, val, 0.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class Laplace:
    """Laplace noise of scale b on a query of L1 sensitivity Δ: ε₀ = Δ/b.

    δ(ε) = 1 − e^{(ε − ε₀)/2} for ε < ε₀, 0 beyond (the hockey-stick divergence of
    Lap(Δ, b) against Lap(0, b); e.g. Koskela et al. 2021, dp_accounting's
    ``LaplacePrivacyLoss``).
    """

    scale: float
    sensitivity: float = 1.0
    name: str = "laplace"
    exact: bool = True

    @property
    def pure_epsilon(self) -> float | None:
        return _div(self.sensitivity, self.scale, True)

    def delta(self, eps: ArrayLike) -> FloatArray:
        e = _eps(eps)
        e0 = _div(self.sensitivity, self.scale, True)
        with np.errstate(over="ignore"):
            d = (e - e0) * (1.0 + 2.0 * _U)  # rounded away from 0 where e < e0: δ larger
            val = -np.expm1(np.minimum(d, 0.0) / 2.0) * (1.0 + _LIBM)
        return _finish_up(np.where(e < e0, val, 0.0), positive=False)

    def delta_lower(self, eps: ArrayLike) -> FloatArray:
        e = _eps(eps)
        e0 = _div(self.sensitivity, self.scale, False)
        d = (e - e0) * (1.0 - 2.0 * _U)
        val = -np.expm1(np.minimum(d, 0.0) / 2.0) * (1.0 - _LIBM)
        return _finish_down(np.where(e < e0, val, 0.0))

    def replace_one(self) -> Laplace:
        return Laplace(scale=self.scale, sensitivity=2.0 * self.sensitivity, name=self.name)

    def describe(self) -> str:
        return f"Laplace, scale {self.scale:g}, sensitivity {self.sensitivity:g}"

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": "laplace", "scale": self.scale, "sensitivity": self.sensitivity}


# --------------------------------------------------------------------------------------
# Randomized response
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RandomizedResponse:
    """k-ary randomized response at ε₀: the true category with e^{ε₀}/(e^{ε₀} + k − 1).

    δ(ε) = (e^{ε₀} − e^ε)/(e^{ε₀} + k − 1) for ε < ε₀, 0 beyond (the two rows of the
    channel for categories x ≠ x′). k = 2 is the pure-ε₀ dominating pair: every ε₀-DP
    mechanism's profile is at most binary randomized response's (Kairouz, Oh and
    Viswanath 2015).
    """

    epsilon: float
    categories: int = 2
    name: str = "randomized-response"
    exact: bool = True

    @property
    def pure_epsilon(self) -> float | None:
        return self.epsilon

    def _rest(self, upper: bool) -> float:
        # (k − 1)e^{−ε₀}: the denominator's rest; δ falls as it grows
        with np.errstate(under="ignore"):
            v = (self.categories - 1) * math.exp(-self.epsilon)
        return v * (1.0 - _LIBM) if upper else v * (1.0 + _LIBM)

    def delta(self, eps: ArrayLike) -> FloatArray:
        return _pure_rr_delta(self.epsilon, _eps(eps), self._rest(True), True)

    def delta_lower(self, eps: ArrayLike) -> FloatArray:
        return _pure_rr_delta(self.epsilon, _eps(eps), self._rest(False), False)

    def replace_one(self) -> RandomizedResponse:
        # group privacy: 2ε₀-DP under replace-one; binary RR dominates every such pair
        return RandomizedResponse(epsilon=2.0 * self.epsilon, categories=2, name=self.name)

    def describe(self) -> str:
        return f"randomized response, ε₀ = {self.epsilon:g}, {self.categories} categories"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": "randomized-response",
            "epsilon": self.epsilon,
            "categories": self.categories,
        }


# --------------------------------------------------------------------------------------
# Discrete Laplace (two-sided geometric)
# --------------------------------------------------------------------------------------

#: largest integer sensitivity of the discrete mechanisms (one term per unit)
MAX_INTEGER_SENSITIVITY = 10_000
#: largest σ of the discrete Gaussian (its tail table has ~39σ entries)
MAX_DISCRETE_SIGMA = 10_000.0


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscreteLaplace:
    """Discrete Laplace noise Pr[x] ∝ e^{−|x|/b} on an integer query of sensitivity Δ.

    With t = 1/b, c = tanh(t/2) and ε₀ = Δt, the loss at output x is ε₀ for x <= 0 and
    (Δ − 2x)t for 0 < x < Δ, so δ(ε) = (1 − e^{ε−ε₀})/(1 + e^{−t}) [ε < ε₀]
    + Σ_{x=1}^{Δ−1} c·e^{−xt}·(1 − e^{ε−(Δ−2x)t}) [(Δ − 2x)t > ε].
    """

    scale: float
    sensitivity: int = 1
    name: str = "discrete-laplace"
    exact: bool = True

    @property
    def pure_epsilon(self) -> float | None:
        return _div(float(self.sensitivity), self.scale, True)

    def _delta(self, eps: ArrayLike, upper: bool) -> FloatArray:
        e = _eps(eps)
        t = 1.0 / self.scale
        k = self.sensitivity
        e0 = k * t
        c = math.tanh(t / 2.0)
        with np.errstate(over="ignore", under="ignore"):
            total = np.where(e < e0, -np.expm1(np.minimum(e - e0, 0.0)), 0.0) / (
                1.0 + math.exp(-t)
            )
            for x in range(1, k):
                loss = (k - 2 * x) * t
                if loss <= 0:
                    break
                term = c * math.exp(-x * t) * -np.expm1(np.minimum(e - loss, 0.0))
                total = total + np.where(e < loss, term, 0.0)
        # relative error: each term a few roundings, exponents of size <= kt + ε,
        # and the ulp of t itself moves every exponent by <= (kt + ε)·u
        # (ε is capped at ε₀: beyond it δ is 0 by selection, and ε may be inf there)
        eta = _LIBM + 16.0 * _U * (k + 4) + 8.0 * _U * (e0 + np.minimum(e, e0) + 1.0)
        if upper:
            return _finish_up(total * (1.0 + eta), positive=False)
        return _finish_down(total * (1.0 - eta))

    def delta(self, eps: ArrayLike) -> FloatArray:
        return self._delta(eps, True)

    def delta_lower(self, eps: ArrayLike) -> FloatArray:
        return self._delta(eps, False)

    def replace_one(self) -> DiscreteLaplace:
        return DiscreteLaplace(scale=self.scale, sensitivity=2 * self.sensitivity, name=self.name)

    def describe(self) -> str:
        return f"discrete Laplace, scale {self.scale:g}, sensitivity {self.sensitivity}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": "discrete-laplace",
            "scale": self.scale,
            "sensitivity": self.sensitivity,
        }


# --------------------------------------------------------------------------------------
# Discrete Gaussian
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscreteGaussian:
    """Discrete Gaussian noise Pr[x] ∝ e^{−x²/(2σ²)} on an integer query of sensitivity Δ.

    δ(ε) = Pr[X > εσ²/Δ − Δ/2] − e^ε·Pr[X > εσ²/Δ + Δ/2] for X ~ N_Z(0, σ²)
    (Canonne, Kamath and Steinke 2020, Theorem 7), with the tails summed exactly over
    the integers (smallest terms first) up to where the weights fall below e^{−745}.
    """

    sigma: float
    sensitivity: int = 1
    name: str = "discrete-gaussian"
    exact: bool = True
    _table: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def pure_epsilon(self) -> float | None:
        return None

    def _tails(self) -> tuple[FloatArray, float, float]:
        """(T, Z, η): T[m] = Σ_{x=m}^{K} w(x), Z = Σ_x w(x), η their relative error."""
        if "tails" not in self._table:
            s2 = self.sigma * self.sigma
            kmax = math.ceil(self.sigma * math.sqrt(2.0 * 760.0)) + 2
            x = np.arange(kmax + 1, dtype=float)
            w = np.exp(-(x * x) / (2.0 * s2))
            tails = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])
            z = 2.0 * tails[1] + 1.0
            # sequential sums of positive terms: relative error <= (K + 1)u; weights
            # beyond K are below e^{-760} in total (a geometric tail): covered by _TINY
            eta = _LIBM + 4.0 * _U * (kmax + 8)
            self._table["tails"] = (tails, z, eta)
        out: tuple[FloatArray, float, float] = self._table["tails"]
        return out

    def _sf_bounds(self, m: np.ndarray) -> tuple[FloatArray, FloatArray]:
        """Lower and upper bounds on Pr[X >= m] for integer m (array)."""
        tails, z, eta = self._tails()
        kmax = len(tails) - 2

        def pos(mm: np.ndarray) -> tuple[FloatArray, FloatArray]:
            idx = np.clip(mm, 0, kmax + 1)
            v = tails[idx] / z
            return v * (1.0 - 2.0 * eta), v * (1.0 + 2.0 * eta) + _TINY

        lo_p, hi_p = pos(np.maximum(m, 1))
        lo_n, hi_n = pos(np.maximum(1 - m, 1))
        lo = np.where(m >= 1, lo_p, 1.0 - hi_n)
        hi = np.where(m >= 1, hi_p, 1.0 - lo_n)
        return lo, hi

    def _delta(self, eps: ArrayLike, upper: bool) -> FloatArray:
        e = _eps(eps)
        d = float(self.sensitivity)
        s = e * (self.sigma * self.sigma) / d
        best = np.full(e.shape, -np.inf if upper else np.inf)
        m0 = np.floor(s - d / 2.0).astype(np.int64) + 1
        # f(m) = Pr[X >= m] − e^ε Pr[X >= m + Δ] is largest at the exact threshold m0;
        # the neighbours of the computed one are tried too (a rounded threshold), the
        # max of the upper bounds covers the true maximum
        for shift in (-1, 0, 1):
            m = m0 + shift
            lo1, hi1 = self._sf_bounds(m)
            lo2, hi2 = self._sf_bounds(m + self.sensitivity)
            with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
                if upper:
                    t2 = np.where(lo2 > 0, _exp_down(e + np.log(np.maximum(lo2, _TINY))), 0.0)
                    val = hi1 - t2
                    best = np.maximum(best, np.where(np.isnan(val), 1.0, val))
                else:
                    t2 = np.where(hi2 > 0, _exp_up(e + np.log(np.maximum(hi2, _TINY))), 0.0)
                    val = lo1 - t2
                    best = np.minimum(best, np.where(np.isnan(val), 0.0, val))
        if upper:
            return _finish_up(best, positive=True)
        return _finish_down(best)

    def delta(self, eps: ArrayLike) -> FloatArray:
        return self._delta(eps, True)

    def delta_lower(self, eps: ArrayLike) -> FloatArray:
        # the lower bound at the computed threshold only: any threshold gives a lower
        # bound on the maximum, so take the largest lower bound
        e = _eps(eps)
        d = float(self.sensitivity)
        s = e * (self.sigma * self.sigma) / d
        m0 = np.floor(s - d / 2.0).astype(np.int64) + 1
        best = np.zeros(e.shape)
        for shift in (-1, 0, 1):
            m = m0 + shift
            lo1, _ = self._sf_bounds(m)
            _, hi2 = self._sf_bounds(m + self.sensitivity)
            with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
                t2 = np.where(hi2 > 0, _exp_up(e + np.log(np.maximum(hi2, _TINY))), 0.0)
                val = lo1 - t2
                best = np.maximum(best, np.where(np.isnan(val), 0.0, val))
        return _finish_down(best)

    def replace_one(self) -> DiscreteGaussian:
        return DiscreteGaussian(sigma=self.sigma, sensitivity=2 * self.sensitivity, name=self.name)

    def describe(self) -> str:
        return f"discrete Gaussian, σ = {self.sigma:g}, sensitivity {self.sensitivity}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": "discrete-gaussian",
            "sigma": self.sigma,
            "sensitivity": self.sensitivity,
        }


# --------------------------------------------------------------------------------------
# zCDP
# --------------------------------------------------------------------------------------


def _zcdp_log_delta(rho: float, eps: FloatArray, alpha: FloatArray) -> FloatArray:
    """log of e^{(α−1)(αρ−ε)}/(α−1)·(1 − 1/α)^α (as evaluated)."""
    am1 = alpha - 1.0
    res: FloatArray = am1 * (alpha * rho - eps) - np.log(am1) + alpha * np.log1p(-1.0 / alpha)
    return res


@dataclass(frozen=True, slots=True, kw_only=True)
class Zcdp:
    """A ρ-zCDP mechanism: no exact profile; the sound conversion of Canonne, Kamath
    and Steinke (2020, Corollary 13):

        δ(ε) = inf_{α>1} e^{(α−1)(αρ−ε)}/(α − 1)·(1 − 1/α)^α.

    Every α > 1 gives a valid δ, so the α found by the (golden-section) search is
    only a choice; the value at it is rounded outward. The Gaussian with μ = √(2ρ)'s
    profile is *not* used as the upper profile: ρ-zCDP does not imply domination by
    that Gaussian. It is the lower profile (that Gaussian is ρ-zCDP: a witness).
    """

    rho: float
    name: str = "zcdp"
    exact: bool = False

    @property
    def pure_epsilon(self) -> float | None:
        return None

    def best_alpha(self, eps: ArrayLike) -> FloatArray:
        """The α > 1 minimising the conversion's δ (golden section on log(α − 1);
        the objective is convex in α)."""
        e = _eps(eps)
        lo = np.full(e.shape, math.log(1e-9))
        hi = np.full(e.shape, math.log(1e9))
        g = (math.sqrt(5.0) - 1.0) / 2.0

        def f(u: FloatArray) -> FloatArray:
            with np.errstate(over="ignore", invalid="ignore"):
                v = _zcdp_log_delta(self.rho, e, 1.0 + np.exp(u))
            res: FloatArray = np.where(np.isnan(v), np.inf, v)
            return res

        c = hi - g * (hi - lo)
        d = lo + g * (hi - lo)
        fc, fd = f(c), f(d)
        for _ in range(90):
            left = fc < fd
            hi = np.where(left, d, hi)
            lo = np.where(left, lo, c)
            c_new = hi - g * (hi - lo)
            d_new = lo + g * (hi - lo)
            c, d = c_new, d_new
            fc, fd = f(c), f(d)
        res: FloatArray = 1.0 + np.exp((lo + hi) / 2.0)
        return res

    def delta(self, eps: ArrayLike) -> FloatArray:
        e = _eps(eps)
        alpha = self.best_alpha(e)
        with np.errstate(over="ignore", invalid="ignore"):
            logd = _zcdp_log_delta(self.rho, e, alpha)
            mag = (alpha - 1.0) * (alpha * self.rho + e) + np.abs(np.log(alpha - 1.0)) + 1.0
            logd = logd + _LIBM + 32.0 * _U * mag
            val = _exp_up(logd)
        return _finish_up(np.where(np.isnan(val), 1.0, val), positive=True)

    def delta_lower(self, eps: ArrayLike) -> FloatArray:
        return gaussian_delta(_down1(math.sqrt(2.0 * self.rho)), eps, upper=False)

    def replace_one(self) -> Zcdp:
        # zCDP group privacy: a group of two records is 4ρ-zCDP (Bun and Steinke 2016)
        return Zcdp(rho=4.0 * self.rho, name=self.name)

    def describe(self) -> str:
        return f"ρ-zCDP, ρ = {self.rho:g} ({CKS20} conversion)"

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": "zcdp", "rho": self.rho}


# --------------------------------------------------------------------------------------
# inversion
# --------------------------------------------------------------------------------------


def first_true_grid(predicate: Any, lo: ArrayLike, hi: ArrayLike, points: int = 64) -> FloatArray:
    """``numeric.first_true`` in fewer, wider calls: smallest float x in [lo, hi] with
    ``predicate(x)`` true (monotone: false, then true), elementwise; ``inf`` where
    ``predicate(hi)`` is false, ``lo`` where ``predicate(lo)`` is true.

    Each round evaluates ``predicate`` once on ``points`` floats spread evenly over the
    bit patterns between the bracket's ends (an array of shape ``lo.shape + (points,)``)
    and keeps the sub-bracket where it turns true, so 52 bits take about 9 calls instead
    of 64. The answer is the same float as ``first_true``'s: exact for the predicate as
    evaluated.
    """
    lo_a = np.asarray(lo, dtype=float)
    hi_a = np.asarray(hi, dtype=float)
    lo_a, hi_a = np.broadcast_arrays(lo_a, hi_a)
    at_lo = np.asarray(predicate(lo_a), dtype=bool)
    at_hi = np.asarray(predicate(hi_a), dtype=bool)
    lo_b = lo_a.view(np.int64).copy()
    hi_b = hi_a.view(np.int64).copy()
    active = ~at_lo & at_hi
    steps = np.arange(1, points + 1, dtype=np.int64)
    for _ in range(40):
        gap = hi_b - lo_b
        live = active & (gap > 1)
        if not np.any(live):
            break
        # candidates lo + ceil(gap·j/(points+1)), j = 1..points, strictly inside
        cand = lo_b[..., None] + np.maximum(
            (gap[..., None] // (points + 1)) * steps
            + ((gap[..., None] % (points + 1)) * steps) // (points + 1),
            1,
        )
        cand = np.minimum(cand, hi_b[..., None] - 1)
        cand = np.where(live[..., None], cand, hi_b[..., None])
        ok = np.asarray(predicate(cand.view(np.float64)), dtype=bool)
        ok = ok | ~live[..., None]
        # first true candidate (monotone): the new hi; the one before it: the new lo
        idx = np.argmax(ok, axis=-1)
        any_ok = np.any(ok, axis=-1)
        first = np.take_along_axis(cand, idx[..., None], axis=-1)[..., 0]
        prev = np.where(
            idx > 0,
            np.take_along_axis(cand, np.maximum(idx - 1, 0)[..., None], axis=-1)[..., 0],
            lo_b,
        )
        new_hi = np.where(any_ok, first, hi_b)
        new_lo = np.where(any_ok, prev, cand[..., -1])
        hi_b = np.where(live, new_hi, hi_b)
        lo_b = np.where(live, new_lo, lo_b)
    out: FloatArray = hi_b.view(np.float64).copy()
    out = np.where(at_lo, lo_a, out)
    out = np.where(~at_lo & ~at_hi, np.inf, out)
    return out


def epsilon_at_delta(profile: Profile, delta: ArrayLike, *, lower: bool = False) -> FloatArray:
    """Smallest float ε >= 0 with δ_M(ε) <= δ as evaluated (vectorised over δ).

    With ``lower=False`` the upper profile is inverted: M is (ε, δ)-DP at the returned
    ε (a guarantee). With ``lower=True`` the lower profile is: below the returned ε no
    (ε, δ) guarantee holds for the witness mechanism (rounded so it never goes high).
    """
    d = np.asarray(delta, dtype=float)
    fn = profile.delta_lower if lower else profile.delta

    def ok(x: FloatArray) -> np.ndarray:
        dd = d.reshape(d.shape + (1,) * (np.ndim(x) - d.ndim))
        return np.asarray(fn(x) <= dd)

    at0 = ok(np.zeros(d.shape))
    hi0 = profile.pure_epsilon
    hi = np.full(d.shape, _up1(hi0) if hi0 is not None else 1.0)
    for _ in range(80):
        bad = ~ok(hi)
        if not np.any(bad) or np.all(hi >= 1e7):
            break
        hi = np.where(bad, hi * 4.0, hi)
    found = first_true_grid(ok, np.full(d.shape, 1e-300), hi)
    if lower:
        # every float below ``found`` fails: the witness's ε at δ is above the float
        # just below it
        found = np.nextafter(found, 0.0)
    out: FloatArray = np.where(at0, 0.0, found)
    return out
