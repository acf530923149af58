"""Closed-form composition of releases run on one sample (before amplification).

- Gaussians: k Gaussian releases with μᵢ = Δᵢ/σᵢ compose to the Gaussian with
  μ = √Σμᵢ² (Dong, Roth and Su 2022, Corollary 3.3): exact.
- zCDP releases: ρ = Σρᵢ (Bun and Steinke 2016, Lemma 2.3), then the zCDP conversion.
- Identical pure ε₀ releases: the k-fold composition of binary randomized response at
  ε₀ is the optimal composition of k ε₀-DP mechanisms (Kairouz, Oh and Viswanath 2015,
  Theorem 3.3; Murtagh and Vadhan 2016): its profile is
  δ(ε) = Σ_{i: (k−2i)ε₀ > ε} C(k, i)·p^{k−i}(1 − p)^i·(1 − e^{ε − (k−2i)ε₀}),
  p = e^{ε₀}/(1 + e^{ε₀}). Exact for randomized response (and for plain ε₀-DP
  releases, whose worst case it is); for Laplace, discrete Laplace or k-ary randomized
  response releases it is a sound upper profile (each is ε₀-DP), not their exact
  composition.

Anything else (mixed mechanisms) needs a numerical accountant and is refused here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ampcalc import numeric
from ampcalc._typing import ArrayLike, FloatArray
from ampcalc.accounting import profiles
from ampcalc.accounting.profiles import Gaussian, Profile, RandomizedResponse, Zcdp

_U = 2.0**-53

#: largest number of identical pure releases composed in closed form (one term each)
MAX_PURE_RELEASES = 100_000


class CompositionError(ValueError):
    """Releases that no closed form composes (the message says why)."""


def gaussians(mus: list[tuple[float, int]]) -> Gaussian:
    """The composition of Gaussians (μᵢ, countᵢ): the Gaussian with μ = √Σ countᵢ·μᵢ².

    μ is bracketed outward (the fsum of products and the square root are accurate to a
    few ulps; 8 ulps either way covers them): the upper profile uses the top of the
    bracket, the lower profile its bottom.
    """
    mu = math.sqrt(math.fsum(c * m * m for m, c in mus))
    return Gaussian(mu_given=float(numeric.round_up(mu)), mu_low=float(numeric.round_down(mu)))


@dataclass(frozen=True, slots=True, kw_only=True)
class PureComposition:
    """k identical ε₀-DP releases, composed optimally (binary randomized response).

    Attributes:
        epsilon: ε₀ of each release.
        count: k.
        single: one release's own profile (its lower profile is a lower bound on the
            composition's: dropping k − 1 outputs is post-processing).
        exact: the releases are ε₀ binary randomized response (or plain ε₀-DP), so the
            closed form is their exact composed profile.
    """

    epsilon: float
    count: int
    single: Profile
    exact: bool = True
    name: str = "composition"
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def pure_epsilon(self) -> float | None:
        return profiles._mul(float(self.count), self.epsilon, True)

    def _delta(self, eps: ArrayLike, upper: bool) -> FloatArray:
        e = np.asarray(eps, dtype=float)
        k, e0 = self.count, self.epsilon
        i = np.arange(k + 1, dtype=float)
        lgc = np.array(
            [
                math.lgamma(k + 1) - math.lgamma(j + 1) - math.lgamma(k - j + 1)
                for j in range(k + 1)
            ]
        )
        logp = lgc - k * math.log1p(math.exp(-e0)) - i * e0  # log C(k,i) p^{k−i}(1−p)^i
        # (k − 2i)ε₀ rounded outward: the profile grows with each loss
        loss = (k - 2.0 * i) * e0
        loss = np.where(loss > 0, loss * (1.0 + 2.0 * _U if upper else 1.0 - 2.0 * _U), loss)
        ee = e.reshape(-1, 1)
        with np.errstate(over="ignore", under="ignore"):
            terms = np.exp(logp) * -np.expm1(np.minimum(ee - loss, 0.0))
        terms = np.where(ee < loss, terms, 0.0)
        total = terms.sum(axis=1).reshape(e.shape)
        eta = (
            profiles._LIBM
            + 32.0 * _U * (float(np.max(np.abs(lgc))) + k * (e0 + 1.0) + 1.0)
            + 16.0 * _U * (np.abs(e) + 1.0)
            + 4.0 * _U * (k + 8)
        )
        if upper:
            return profiles._finish_up(total * (1.0 + eta), positive=False)
        return profiles._finish_down(total * (1.0 - eta))

    def delta(self, eps: ArrayLike) -> FloatArray:
        return self._delta(eps, True)

    def delta_lower(self, eps: ArrayLike) -> FloatArray:
        if self.exact:
            return self._delta(eps, False)
        return self.single.delta_lower(eps)

    def replace_one(self) -> PureComposition:
        # each release is 2ε₀-DP under replace-one (group privacy of two records)
        return PureComposition(
            epsilon=2.0 * self.epsilon,
            count=self.count,
            single=self.single.replace_one(),
            exact=False,
            name=self.name,
        )

    def describe(self) -> str:
        how = "" if self.exact else " (an upper profile: each release is ε₀-DP)"
        return (
            f"{self.count} × {self.single.describe()} composed optimally as "
            f"ε₀ = {self.epsilon:g}-DP releases{how}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": "pure-composition",
            "epsilon": self.epsilon,
            "count": self.count,
            "release": self.single.to_dict(),
            "exact": self.exact,
        }


def compose(releases: list[tuple[Profile, int]]) -> Profile:
    """One profile for releases (mechanism, count) run on one sample.

    Raises:
        CompositionError: the releases have no closed-form composition here.
    """
    total = sum(c for _, c in releases)
    if total == 1:
        return releases[0][0]
    if all(isinstance(p, Gaussian) for p, _ in releases):
        return gaussians([(p.mu, c) for p, c in releases])  # type: ignore[attr-defined]
    if all(isinstance(p, Zcdp) for p, _ in releases):
        # zCDP composes additively (Bun and Steinke 2016, Lemma 2.3): exact for the bound
        rho = math.fsum(c * p.rho for p, c in releases)  # type: ignore[attr-defined]
        return Zcdp(rho=float(numeric.round_up(rho)))
    pure = [p.pure_epsilon for p, _ in releases]
    first = releases[0][0]
    if all(e is not None for e in pure) and all(
        p.to_dict() == first.to_dict() for p, _ in releases
    ):
        if total > MAX_PURE_RELEASES:
            raise CompositionError(
                f"{total} identical pure releases; the closed form is evaluated up to "
                f"{MAX_PURE_RELEASES}"
            )
        e0 = pure[0]
        assert e0 is not None
        exact = isinstance(first, RandomizedResponse) and first.categories == 2
        return PureComposition(epsilon=e0, count=total, single=first, exact=exact)
    names = sorted({p.to_dict()["mechanism"] for p, _ in releases})
    raise CompositionError(
        "releases on one sample are composed in closed form when they are all Gaussian, "
        "all zCDP, or all the same pure-ε mechanism; these ("
        + ", ".join(names)
        + ") need a numerical accountant, which this version does not run for releases"
    )
