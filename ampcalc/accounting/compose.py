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

- Pure releases with different ε₀ (none of them Laplace): the composition of binary
  randomized responses at each ε₀ in closed form (``PureMix``), an upper profile (exact
  for randomized response); basic composition when the joint outcomes are too many.

Other mixes of Gaussian, Laplace and pure releases are composed as privacy-loss
distributions (``AccountantComposition``, ``accounting.pmf``), each step checked against
the accountant's limits before it is computed; anything with zCDP mixed in is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ampcalc.accounting import fastpld, pmf, profiles
from ampcalc.accounting.profiles import Gaussian, Profile, RandomizedResponse, Zcdp
from ampcalc.math import numeric
from ampcalc.math.types import ArrayLike, FloatArray

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
            # beyond the largest loss δ is 0 by selection (ε may be inf there)
            + 16.0 * _U * (np.minimum(np.abs(e), 2.0 * k * e0) + 1.0)
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


#: largest number of joint outcomes Π(kᵢ + 1) of the randomized responses composed
#: exactly by ``PureMix`` (its table is a few arrays of this length)
MAX_PURE_OUTCOMES = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class PureMix:
    """Pure releases with different ε₀ on one sample: an upper profile in closed form.

    Each ε_g-DP release is dominated by binary randomized response at ε_g (Kairouz, Oh
    and Viswanath 2015, Theorem 2.4), and composition keeps the domination, so the
    composition of kᵍ releases at each ε_g is dominated by that of the randomized
    responses: its privacy loss is L = Σ_g (k_g − 2i_g)ε_g with the i_g independent,
    Binomial(k_g, 1 − p_g) under P, p_g = e^{ε_g}/(1 + e^{ε_g}), and

        δ(ε) = Σ_{L > ε} P(L)·(1 − e^{ε − L}),

    summed over the Π(k_g + 1) joint outcomes (exact for binary randomized response).
    Above ``MAX_PURE_OUTCOMES`` outcomes the groups are replaced by one randomized
    response at Σ k_g ε_g (basic composition: the composition is Σk_gε_g-DP), a looser
    but still sound upper profile. ``pure_epsilon`` is Σ k_g ε_g either way. The lower
    profile is the largest of the releases' own lower profiles (dropping the other
    outputs is post-processing), or the same sum rounded down when every release is
    binary randomized response.

    Attributes:
        groups: (ε_g, k_g), the distinct ε₀ and how many releases have it.
        releases: the releases as given (their lower profiles).
        exact: every release is binary randomized response and the groups are summed
            exactly.
    """

    groups: tuple[tuple[float, int], ...]
    releases: tuple[tuple[Profile, int], ...]
    exact: bool = False
    name: str = "pure-composition"
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def of(releases: list[tuple[Profile, int]]) -> PureMix:
        """Group the releases by ε₀; one group at the summed ε when the outcomes are
        too many to enumerate."""
        by_eps: dict[float, int] = {}
        for p, c in releases:
            e0 = p.pure_epsilon
            assert e0 is not None
            by_eps[e0] = by_eps.get(e0, 0) + c
        groups = tuple(sorted(by_eps.items()))
        outcomes = math.prod(k + 1 for _, k in groups)
        exact = all(isinstance(p, RandomizedResponse) and p.categories == 2 for p, _ in releases)
        if outcomes > MAX_PURE_OUTCOMES:
            total = float(numeric.round_up(math.fsum(k * e for e, k in groups)))
            return PureMix(groups=((total, 1),), releases=tuple(releases), exact=False)
        return PureMix(groups=groups, releases=tuple(releases), exact=exact)

    def _loss_error(self) -> float:
        """A bound on the float error of each computed loss Σ (k_g − 2i_g)ε_g."""
        g = len(self.groups)
        return 4.0 * _U * (g + 2) * math.fsum(k * e for e, k in self.groups)

    @property
    def pure_epsilon(self) -> float | None:
        top = math.fsum(k * e for e, k in self.groups) + 2.0 * self._loss_error()
        return float(numeric.round_up(top))

    def _table(self, upper: bool) -> tuple[FloatArray, FloatArray, FloatArray, float]:
        """(losses descending, cumulative P masses, cumulative Q masses, log-scale) of
        the joint outcomes, each loss moved by its error bound toward a larger (upper)
        or smaller δ."""
        key = f"table-{upper}"
        if key not in self._cache:
            loss = np.zeros(1)
            logp = np.zeros(1)
            mag = 0.0
            for e0, k in self.groups:
                i = np.arange(k + 1, dtype=float)
                lgc = np.array(
                    [
                        math.lgamma(k + 1) - math.lgamma(j + 1) - math.lgamma(k - j + 1)
                        for j in range(k + 1)
                    ]
                )
                lp = lgc - k * math.log1p(math.exp(-e0)) - i * e0
                mag += float(np.max(np.abs(lgc))) + k * (e0 + 1.0)
                loss = (loss[:, None] + ((k - 2.0 * i) * e0)[None, :]).ravel()
                logp = (logp[:, None] + lp[None, :]).ravel()
            err = self._loss_error()
            loss = loss + err if upper else loss - err
            order = np.argsort(-loss, kind="stable")
            loss, logp = loss[order], logp[order]
            with np.errstate(under="ignore", over="ignore"):
                pm = np.exp(logp)
                qm = np.exp(np.minimum(logp - loss, 0.0))  # Q's mass of each outcome
            self._cache[key] = (loss, np.cumsum(pm), np.cumsum(qm), mag)
        out: tuple[FloatArray, FloatArray, FloatArray, float] = self._cache[key]
        return out

    def _delta(self, eps: ArrayLike, upper: bool) -> FloatArray:
        e = profiles._eps(eps)
        loss, cp, cq, mag = self._table(upper)
        n = len(loss)
        # m = the number of outcomes with L > ε (losses are descending)
        m = n - np.searchsorted(loss[::-1], e, side="right")
        a = np.where(m > 0, cp[np.maximum(m - 1, 0)], 0.0)
        b = np.where(m > 0, cq[np.maximum(m - 1, 0)], 0.0)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            eb = np.where(b > 0, np.exp(e + np.log(np.where(b > 0, b, 1.0))), 0.0)
        val = a - np.minimum(eb, a)
        # relative error of each mass (exp of a sum of logs) and of the running sums;
        # δ = A − e^ε·B with e^ε·B <= A, so the error is within η·2A
        ea = np.where(m > 0, e, 0.0)  # where m = 0, δ is 0 by selection (ε may be inf)
        eta = profiles._LIBM + 32.0 * _U * (mag + 1.0) + 16.0 * _U * (np.abs(ea) + 1.0)
        eta = eta + 4.0 * _U * (n + 8)
        if upper:
            return profiles._finish_up(np.where(m > 0, val + 2.0 * eta * a, 0.0), positive=False)
        return profiles._finish_down(val - 2.0 * eta * a)

    def delta(self, eps: ArrayLike) -> FloatArray:
        return self._delta(eps, True)

    def delta_lower(self, eps: ArrayLike) -> FloatArray:
        if self.exact:
            return self._delta(eps, False)
        e = profiles._eps(eps)
        out = np.zeros(e.shape)
        for p, _ in self.releases:
            out = np.maximum(out, p.delta_lower(e))
        return out

    def replace_one(self) -> PureMix:
        # each release is 2ε₀-DP under replace-one (group privacy of two records)
        rel = tuple((p.replace_one(), c) for p, c in self.releases)
        groups = tuple((2.0 * e, k) for e, k in self.groups)
        return PureMix(groups=groups, releases=rel, exact=False, name=self.name)

    def describe(self) -> str:
        parts = ", ".join(f"{c} × {p.describe()}" for p, c in self.releases)
        if len(self.groups) == 1 and self.groups[0][1] == 1:
            how = f"composed as one ε₀ = {self.groups[0][0]:g}-DP release (basic composition)"
        else:
            how = "composed optimally as randomized responses at their ε₀" + (
                "" if self.exact else " (an upper profile: each release is ε₀-DP)"
            )
        return f"{parts} {how}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": "pure-composition",
            "groups": [{"epsilon": e, "count": k} for e, k in self.groups],
            "releases": [dict(p.to_dict(), count=c) for p, c in self.releases],
            "exact": self.exact,
        }


#: the accountant's discretisation interval for releases composed on one sample
PLD_INTERVAL = 1e-4


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountantComposition:
    """Different releases on one sample, composed as privacy-loss distributions.

    Gaussian and Laplace releases enter as their exact pairs (not subsampled); every
    other pure release as binary randomized response at its ε₀ (a dominating pair:
    Kairouz, Oh and Viswanath 2015). ``delta`` is the pessimistic (connect-the-dots)
    composition (an upper bound by its construction, rounded up here), ``delta_lower``
    the optimistic one (each distribution's curve below its exact profile) of the
    releases whose pair is exact (Gaussian, Laplace, binary randomized response; the
    others are dropped: a lower bound).
    """

    releases: tuple[tuple[Profile, int], ...]
    interval: float = PLD_INTERVAL
    exact: bool = False
    name: str = "accountant-composition"
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def pure_epsilon(self) -> float | None:
        return None

    def _pld(self, pessimistic: bool) -> Any:
        key = f"pld-{pessimistic}"
        if key not in self._cache:
            self._cache[key] = _accountant_pld(self.releases, pessimistic, self.interval)
        return self._cache[key]

    def _table(self, pessimistic: bool) -> tuple[float, FloatArray]:
        """(h, δ on the grid 0, h, 2h, ...) from one call of the accountant; h is four
        discretisation intervals (the step bound adds at most h to an inverted ε)."""
        key = f"table-{pessimistic}"
        if key not in self._cache:
            pl = self._pld(pessimistic)
            h = 4.0 * self.interval
            if pl is None:  # no release with an exact pair: the lower profile is 0
                self._cache[key] = (h, np.zeros(2))
                out0: tuple[float, FloatArray] = self._cache[key]
                return out0
            with np.errstate(over="ignore", invalid="ignore"):
                # up to where δ stops falling (0, or the accountant's mass at infinity) or
                # drops below 1e-30; beyond, δ(top) still bounds it from above
                top, prev = 1.0, float(pmf.delta_for_epsilon(pl, 0.5)[0])
                while top < 1e3:
                    cur = float(pmf.delta_for_epsilon(pl, top)[0])
                    if cur <= 1e-30 or cur >= prev:
                        break
                    prev, top = cur, top * 2.0
                grid = np.arange(0.0, top + 2 * h, h)
                vals = np.asarray(pmf.delta_for_epsilon(pl, grid), dtype=float)
            vals = np.where(np.isnan(vals), 1.0 if pessimistic else 0.0, vals)
            self._cache[key] = (h, vals)
        out: tuple[float, FloatArray] = self._cache[key]
        return out

    def _delta(self, eps: ArrayLike, pessimistic: bool) -> FloatArray:
        """The profile is decreasing in ε: between grid points the left value bounds it
        from above (pessimistic side), the right value from below (optimistic side)."""
        e = profiles._eps(eps)
        h, vals = self._table(pessimistic)
        n = len(vals)
        # grid positions, capped at the table's end before the cast to an index: an ε
        # beyond the table (up to ε = inf) reads δ at its last point, which bounds the
        # decreasing profile there from above (it is the mass at an infinite loss once δ
        # stops falling); the lower side reads 0 there
        with np.errstate(over="ignore"):
            pos = np.minimum(e / h, float(n))
        if pessimistic:
            idx = np.clip(np.floor(pos * (1.0 + 1e-12)).astype(np.int64), 0, n - 1)
            out = vals[idx]
            return profiles._finish_up(out * (1.0 + 1e-12) + 1e-15, positive=True)
        idx = np.ceil(pos * (1.0 - 1e-12)).astype(np.int64)
        out = np.where(idx < n, vals[np.clip(idx, 0, n - 1)], 0.0)
        return profiles._finish_down(out * (1.0 - 1e-12) - 1e-15)

    def delta(self, eps: ArrayLike) -> FloatArray:
        return self._delta(eps, True)

    def delta_lower(self, eps: ArrayLike) -> FloatArray:
        return self._delta(eps, False)

    def replace_one(self) -> AccountantComposition:
        return AccountantComposition(
            releases=tuple((p.replace_one(), c) for p, c in self.releases),
            interval=self.interval,
            name=self.name,
        )

    def describe(self) -> str:
        parts = ", ".join(f"{c} × {p.describe()}" for p, c in self.releases)
        return f"{parts} composed as privacy-loss distributions (interval {self.interval:g})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": "accountant-composition",
            "releases": [dict(p.to_dict(), count=c) for p, c in self.releases],
            "discretization": self.interval,
        }


def _accountant_pld(
    releases: tuple[tuple[Profile, int], ...], pessimistic: bool, interval: float
) -> pmf.LossPair | None:
    total = None
    kept = []
    for p, count in releases:
        exact_pair = isinstance(p, (Gaussian, profiles.Laplace)) or (
            isinstance(p, RandomizedResponse) and p.categories == 2
        )
        if not pessimistic and not exact_pair:
            # randomized response only dominates this release: for the lower profile it
            # is dropped (the rest is a post-processing of the composition)
            continue
        kept.append((p, count))
    # every release's grid from its loss range first (nothing built), then each step
    # charged before its arrays are allocated: a composition above the accountant's
    # limits is refused before its memory or time is spent
    try:
        pre = fastpld.Meter()
        for p, _ in kept:
            pre.charge(_release_points(p, interval), f"{p.describe()}")
        meter = fastpld.Meter()
        for p, count in kept:
            total = pmf.compose_pairs(
                total, _release_pld(p, count, pessimistic, interval, meter), meter
            )
    except fastpld.CostLimitError as err:
        raise CompositionError(
            f"these releases are too many or too large for the PLD accountant at its interval "
            f"{interval:g}: {err}"
        ) from None
    return total


def _release_points(p: Profile, interval: float) -> float:
    """Grid points of one release's distribution at ``interval``, from its loss range."""
    if isinstance(p, (Gaussian, profiles.Laplace)):
        return fastpld.sampled_points(p, 1.0, interval)
    e0 = p.pure_epsilon
    assert e0 is not None
    return fastpld.grid_points(-e0, e0, interval)


def _release_pld(
    p: Profile, count: int, pessimistic: bool, interval: float, meter: Any
) -> pmf.LossPair:
    """One release's distribution (its own symmetric pair: a Gaussian or Laplace exactly,
    a pure release as randomized response at its ε₀), self-composed ``count`` times."""
    meter.charge(_release_points(p, interval), p.describe())
    if isinstance(p, (Gaussian, profiles.Laplace)):
        one = fastpld.sampled_pair(p, 1.0, interval, pessimistic=pessimistic)
    else:
        e0 = p.pure_epsilon
        assert e0 is not None
        one = pmf.epsilon_delta_pair(e0, 0.0, interval, pessimistic=pessimistic)
    if count > 1:
        points = sum(pmf.self_compose_points(d, count) for d in one.directions())
        meter.charge(points, f"{count} × {p.describe()}")
    return pmf.self_compose_pair(one, count)


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
    if all(e is not None for e in pure) and not any(
        isinstance(p, profiles.Laplace) for p, _ in releases
    ):
        # pure releases the accountant would take as randomized responses anyway: their
        # composition in closed form (Laplace keeps its exact PLD in the accountant)
        return PureMix.of(releases)
    if all(
        isinstance(p, (Gaussian, profiles.Laplace)) or p.pure_epsilon is not None
        for p, _ in releases
    ):
        comp = AccountantComposition(releases=tuple(releases))
        # builds the accountant's PLDs now: a missing extra or a composition above its
        # limits is a load error
        comp.delta(0.0)
        comp.delta_lower(0.0)
        return comp
    names = sorted({p.to_dict()["mechanism"] for p, _ in releases})
    raise CompositionError(
        "releases on one sample are composed in closed form when they are all Gaussian, "
        "all zCDP, or all the same pure-ε mechanism, and by the PLD accountant when they "
        "mix Gaussian, Laplace and pure mechanisms; these ("
        + ", ".join(names)
        + ") mix zCDP with others: no sound composition is implemented for them"
    )
