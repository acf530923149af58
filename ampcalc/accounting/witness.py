"""A lower bound on a ledger's total: witness pairs composed with the optimistic estimate.

The argument (docs/budget.md, "The lower total"; docs/derivations.md, "Witness pairs for
a ledger's lower total"). Take ONE pair of neighbouring populations for the whole ledger:
every record is 0 but one record x, which is 1 in D and 0 (replace-one) or absent
(add-remove) in its neighbour D′; x is placed, in each entry's frame, where that design
includes a record most often. For each entry take the mechanism

    M(S) = noise applied to t(S) = min(1, Σ_{i∈S} v_i)

(the Gaussian's noisy t·Δ, the Laplace's, randomized response on t, or the mixture
t·P + (1 − t)·Q of a dominating (ε, δ) pair): t moves by at most 1 between neighbouring
samples under either relation, so M has the declared guarantee under both. On D′ every
sampled record is 0, so M's output is Q (its output at t = 0) whatever the sample; on D
it is P (its output at t = 1) exactly when x is sampled, which happens with x's inclusion
probability π, so one wave's outputs are the pair ((1 − π)Q + πP, Q), and the waves,
on independent samples, are independent. The hockey-stick divergence of the composed
pair at e^ε is a lower bound on δ(ε) of the composed releases (one neighbouring pair and
one mechanism per entry among those every upper bound covers), so the ε at which it
reaches the ledger's δ is a lower bound on the total.

The pairs are optimistic privacy-loss distributions of ampcalc's own (``accounting.pmf``:
the hockey-stick divergence is never overstated), every entry's in the same order
(D, D′) (one direction: composing one entry's (D, D′) with another's (D′, D) would not be
one pair of populations), read at δ plus an allowance for the float error of the FFT, and
rounded down. The Gaussian and Laplace mixtures are the remove direction of the
π-sampled mechanism (``fastpld.sampled_direction``, built below the exact curve); the
discrete Laplace and finite-output mixtures have their losses rounded down onto the grid
(their losses are monotone in the output, so each loss interval is an interval of
outputs). Pure functions: nothing prints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.accounting import compose as C
from ampcalc.accounting import fastpld, profiles
from ampcalc.accounting import pmf as P
from ampcalc.accounting.meter import CostLimitError, Meter
from ampcalc.math import numeric
from ampcalc.model.design import Design, Mechanism, Neighbours
from ampcalc.model.limits import LIMITS
from ampcalc.schemes.pps import inclusion_summary
from ampcalc.schemes.pps_cluster import max_inclusion
from ampcalc.schemes.random_size import tilted_mean_bounds
from ampcalc.schemes.stratified.fixed_total import apportion

#: relative allowance on δ for the FFT's float error (as ``budget.FFT_DELTA``); reading
#: ε at a larger δ gives a smaller ε, so the lower bound stays one
FFT_DELTA = 1e-5
#: absolute allowance on δ for the same (a composed PLD's mass is 1: the FFT's rounding
#: error on any partial sum is far below it)
FFT_ABS = 1e-13
#: the witness pairs' interval is at most this (a coarse ``--discretization`` speeds up
#: the upper; the optimistic estimate of the witness at it would round every wave's
#: loss down by up to a whole interval, and the lower bound to nothing)
MAX_INTERVAL = 1e-3


class TooCostly(Exception):
    """The witness composition is above the accountant's limits."""


@dataclass(frozen=True, slots=True)
class Pair:
    """One wave's output distributions on (D, D′), before the design mixes them.

    Attributes:
        kind: ``gaussian`` (σ, Δ), ``laplace`` (b, Δ), ``discrete-laplace`` (1/b, Δ) or
            ``pmf`` (M's output probabilities at t = 1 and at t = 0, outcome by outcome).
        params: the numbers of ``kind``, hashable.
        words: the mechanism in words.
    """

    kind: str
    params: tuple[Any, ...]
    words: str


@dataclass(frozen=True, slots=True)
class Witness:
    """One entry's witness: x's inclusion probability π and M's pair; one wave's
    outputs are ((1 − π)Q + πP, Q)."""

    weight: float
    weight_words: str
    pair: Pair

    def key(self) -> tuple[Any, ...]:
        return (self.weight, self.pair.kind, self.pair.params)


# --------------------------------------------------------------------------------------
# the weight: x's inclusion probability, per design
# --------------------------------------------------------------------------------------


def _down(x: float) -> float:
    """A probability rounded down a few ulps (a smaller weight is a weaker witness:
    ((1 − π′)Q + π′P, Q) for π′ < π is a post-processing of the pair at π)."""
    return float(min(max(float(numeric.round_down(x)), 0.0), 1.0))


def inclusion(design: Design) -> tuple[float, str] | str:
    """(π, how) for the design's most often included record, or the reason there is
    none implemented."""
    p = design.params
    s = design.scheme
    if s == "poisson":
        # the rate is the float q itself (the sampler draws with it; the upper total
        # takes it as exact): nothing to round, and the witness's pair is then the one the
        # ledger's accountant builds for the entry (``fastpld.Kept``)
        return float(p.rate), f"q = {float(p.rate):g}"
    if s == "srswor":
        return _down(p.sample / p.population), f"m/N = {p.sample}/{p.population}"
    if s == "srswr":
        n, m = p.population, p.sample
        pi = -math.expm1(m * math.log1p(-1.0 / n)) if n > 1 else 1.0
        return _down(pi * (1.0 - 1e-14)), f"1 − (1 − 1/N)^m, N = {n}, m = {m}"
    if s == "systematic":
        return _down(1.0 / p.interval), f"1/k = 1/{p.interval} (the random start)"
    if s == "cluster":
        within = getattr(p, "within_rate", None)
        frac = p.chosen / p.clusters.count
        r = 1.0 if within is None else float(within)
        how = f"ℓ/k = {p.chosen}/{p.clusters.count}" + ("" if within is None else f" × r = {r:g}")
        return _down(frac * r * (1.0 - 1e-15)), how
    if s == "pps":
        if p.method == "poisson-threshold":
            if p.inclusion is None:
                return "PPS with a threshold and no size measures: x's inclusion is unknown"
            return _down(float(np.max(p.inclusion))), "the largest a_i = min(1, τr_i)"
        amax, basis, _ = inclusion_summary(p)
        return _down(float(amax)), f"the largest inclusion probability a ({basis})"
    if s == "pps-cluster":
        a, _ = max_inclusion(p.clusters, p.chosen, p.method)
        return _down(float(a)), "the largest cluster inclusion probability"
    if s == "random-size":
        # E[m] is the tilted mean at ε = 0; its enclosure's lower end, without
        # listing the sizes (N may be 10^12)
        _, mean_lo, _, _ = tilted_mean_bounds(p.size, p.population, np.zeros(1))
        return _down(float(mean_lo[0]) / p.population), "E[m]/N"
    if s == "stratified":
        return _stratified_inclusion(p)
    return (
        f"the {s} scheme: no inclusion witness is implemented (its sample or its "
        "mechanism depends on the data, or it is calibrated to a target)"
    )


def _stratified_inclusion(p: Any) -> tuple[float, str] | str:
    alloc = p.allocation
    if alloc == "poisson":
        rates = np.asarray(p.rates(), dtype=float)
        return _down(float(np.nanmax(rates))), "the largest stratum rate r_h"
    if alloc == "fixed":
        st = p.strata
        frac = np.asarray(st.sample, dtype=float) / np.asarray(st.size, dtype=float)
        return _down(float(np.nanmax(frac)) * (1.0 - 1e-15)), "the largest m_h/N_h"
    if alloc == "proportional" and p.total_sample is None:
        rates = np.asarray(p.rates(), dtype=float)
        if p.rounding in (None, "randomized"):
            # randomised rounding is unbiased: E[n_h] = r_h·N_h, so x is kept with r_h
            return _down(float(np.nanmax(rates))), "the largest rate r_h (randomised rounding)"
        size = np.asarray(p.strata.size, dtype=np.int64)
        # the scheme's deterministic rule (round half up, or floor) at the stated sizes
        x = rates * size.astype(float)
        m = np.floor(x + 0.5) if p.rounding == "nearest" else np.floor(x)
        return _largest_fraction(m, size, f"{p.rounding} rounding")
    if alloc == "proportional" and p.total_sample is not None:
        size = np.asarray(p.strata.size, dtype=np.int64)
        rule = p.rounding or "nearest"
        m = np.asarray(apportion(size.tolist(), int(p.total_sample), rule), dtype=float)
        return _largest_fraction(m, size, f"total {p.total_sample} apportioned, {rule}")
    return (
        f"stratified with {alloc} allocation: no inclusion witness is implemented (the "
        "stratum sample sizes are computed from the data)"
    )


def _largest_fraction(m: np.ndarray, size: np.ndarray, how: str) -> tuple[float, str]:
    """The largest m_h/N_h over the non-empty strata (rounded down)."""
    n = size.astype(float)
    frac = np.where(n > 0, m / np.where(n > 0, n, 1.0), 0.0)
    return _down(float(np.max(frac)) * (1.0 - 1e-15)), f"the largest m_h/N_h ({how})"


# --------------------------------------------------------------------------------------
# the pair: M's outputs at t = 1 and t = 0
# --------------------------------------------------------------------------------------


def _rr_pmf(eps: float, delta: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(P, Q): the (ε, δ) dominating pair's output probabilities at t = 1 and t = 0
    (Kairouz, Oh and Viswanath 2015): (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0) and its
    mirror image."""
    a = (1.0 - delta) / (1.0 + math.exp(-eps))
    b = (1.0 - delta) / (1.0 + math.exp(eps))
    return (delta, a, b, 0.0), (0.0, b, a, delta)


def _profile_pair(profile: Any) -> Pair | str:
    """M's pair for a named mechanism's profile (a composition of releases on one
    sample: one of its releases, the others' outputs dropped, which is post-processing)."""
    if isinstance(profile, profiles.Gaussian):
        if profile.sigma is not None and profile.mu_given is None:
            return Pair(
                "gaussian",
                (float(profile.sigma), float(profile.sensitivity)),
                f"Gaussian σ = {profile.sigma:g} on t·{profile.sensitivity:g}",
            )
        # μ rounded down: a Gaussian of smaller μ is the declared one on a query that
        # moves less, so an instance of it
        mu = float(profile.mu_low if profile.mu_low is not None else profile.mu)
        return Pair("gaussian", (1.0, mu), f"Gaussian μ = {mu:.6g} on t")
    if isinstance(profile, profiles.Laplace):
        return Pair(
            "laplace",
            (float(profile.scale), float(profile.sensitivity)),
            f"Laplace b = {profile.scale:g} on t·{profile.sensitivity:g}",
        )
    if isinstance(profile, profiles.DiscreteLaplace):
        return Pair(
            "discrete-laplace",
            (1.0 / float(profile.scale), int(profile.sensitivity)),
            f"discrete Laplace b = {profile.scale:g} on t·{profile.sensitivity}",
        )
    if isinstance(profile, profiles.RandomizedResponse):
        e, c = float(profile.epsilon), int(profile.categories)
        den = math.exp(e) + c - 1.0
        hi, lo = math.exp(e) / den, 1.0 / den
        rest = (c - 2) * lo
        return Pair(
            "pmf",
            ((hi, lo, rest), (lo, hi, rest)),
            f"{c}-ary randomized response at ε = {e:g} on t",
        )
    if isinstance(profile, profiles.Zcdp):
        mu = float(numeric.round_down(math.sqrt(2.0 * profile.rho)))
        return Pair("gaussian", (1.0, mu), f"Gaussian μ = √(2ρ) = {mu:.6g} (ρ-zCDP) on t")
    if isinstance(profile, C.PureComposition):
        inner = _profile_pair(profile.single)
        if isinstance(inner, str):
            return inner
        return Pair(inner.kind, inner.params, inner.words + " (one of the releases)")
    releases = getattr(profile, "releases", None)
    if isinstance(profile, C.PureMix | C.AccountantComposition) and releases:
        best: Pair | str = "no release of the composition has a witness"
        score = -1.0
        for rel, _ in releases:
            cand = _profile_pair(rel)
            if isinstance(cand, str):
                continue
            s = float(np.asarray(rel.delta_lower(0.0)))  # total variation: the strongest
            if s > score:
                best, score = Pair(cand.kind, cand.params, cand.words + " (one release)"), s
        return best
    return f"{profile.describe()}: no witness pair is implemented"


def _mechanism_pair(mech: Mechanism) -> Pair | str:
    """M's pair (P at t = 1, Q at t = 0) for the entry's mechanism."""
    if mech.group_size > 1:
        return "group privacy (group_size > 1): no witness is implemented"
    if mech.profile is not None:
        return _profile_pair(mech.profile)
    eps, delta = float(mech.epsilon), float(mech.delta)
    if mech.releases is not None and len(mech.releases) > 1:
        # one release, the others' outputs dropped (post-processing)
        top = max(mech.releases, key=lambda r: (r.epsilon, r.delta))
        eps, delta = float(top.epsilon), float(top.delta)
        if mech.neighbours is Neighbours.ADD_REMOVE and mech.delta_replace_one is not None:
            delta = min(delta, float(mech.delta_replace_one))
    elif mech.neighbours is Neighbours.ADD_REMOVE:
        delta = min(delta, float(mech.delta_replace_one_of(eps)))
    if mech.neighbours is Neighbours.ADD_REMOVE:
        # M must hold its guarantee under both relations: ε under replace-one too
        eps *= min(1.0, mech.replace_one_ratio())
    if not (eps > 0.0 and math.isfinite(eps)):
        return "M's ε is not a positive finite number"
    p, q = _rr_pmf(eps, delta)
    words = f"randomized response at ε = {eps:g}" + (f", δ = {delta:g}" if delta > 0 else "")
    return Pair("pmf", (p, q), words + " on t")


def entry_witness(design: Design) -> Witness | str:
    """The entry's witness (x's inclusion probability and M's pair), or why none.

    A ``str`` is the reason, in words, for a user."""
    mech = design.mechanism
    if mech is None:
        return f"the {design.scheme} scheme has no mechanism of its own"
    inc = inclusion(design)
    if isinstance(inc, str):
        return inc
    pair = _mechanism_pair(mech)
    if isinstance(pair, str):
        return pair
    weight, how = inc
    return Witness(weight=weight, weight_words=how, pair=pair)


# --------------------------------------------------------------------------------------
# composition (ampcalc's own optimistic distributions)
# --------------------------------------------------------------------------------------


def _log_pmf(probs: Sequence[float]) -> dict[int, float]:
    return {i: math.log(x) for i, x in enumerate(probs) if x > 0.0}


#: the discrete Laplace witness drops outputs whose mass is below e^{−TAIL_LOG}
TAIL_LOG = 55.0
#: most outputs of a discrete Laplace witness
MAX_DISCRETE_OUTPUTS = 400_000


@dataclass(frozen=True)
class Rounded:
    """One wave's optimistic loss distribution: ``mass[j]`` at loss (``start`` + j)·di,
    and ``infinity`` at an infinite loss (outputs the neighbour never gives)."""

    start: int
    mass: np.ndarray
    infinity: float = 0.0

    def loss_pmf(self, di: float) -> Any:
        """As an optimistic ``pmf.LossPmf`` of one order (D, D′)."""
        return P.LossPmf(di, self.start, np.asarray(self.mass, dtype=float), self.infinity, False)


def _points(n: int) -> None:
    """Refuse a pair's grid of ``n`` points above ``pld_points``, before it is built.

    Raises:
        TooCostly: it is above the limit."""
    cap = LIMITS["pld_points"]
    if n > cap.value:
        raise TooCostly(cap.message(n))


def _rounded(bins: np.ndarray, mass: np.ndarray, infinity: float = 0.0) -> Rounded:
    """``mass`` at losses ``bins``·di (bins may repeat, in any order), summed per bin."""
    keep = mass > 0.0
    b, m = bins[keep], mass[keep]
    if b.size == 0:
        return Rounded(0, np.zeros(1), infinity)
    start = int(b.min())
    dense = np.bincount(b - start, weights=m)
    return Rounded(start, dense, infinity)


def discrete_laplace_mixture(a: float, sens: int, pi: float, di: float) -> Rounded | None:
    """The optimistic privacy-loss distribution of ((1 − π)DL(0) + πDL(Δ) ‖ DL(0)), DL
    the discrete Laplace law tanh(a/2)·e^{−a|k|} on the integers, outputs of mass below
    e^{−``TAIL_LOG``} dropped; ``None`` when it has too many outputs."""
    reach = math.ceil(TAIL_LOG / a)
    if 2 * reach + sens + 1 > MAX_DISCRETE_OUTPUTS:
        return None
    k = np.arange(-reach, sens + reach + 1, dtype=float)
    c = math.log(math.tanh(a / 2.0))
    lq = c - a * np.abs(k)
    lp1 = c - a * np.abs(k - sens)
    log_1mpi = math.log1p(-pi) if pi < 1.0 else -math.inf
    lp = np.logaddexp(log_1mpi + lq, math.log(pi) + lp1)
    bins = np.floor((lp - lq) / di).astype(np.int64)
    return _rounded(bins, np.exp(lp))


def pmf_mixture(p1: Sequence[float], p0: Sequence[float], pi: float, di: float) -> Rounded:
    """The optimistic loss distribution of ((1 − π)Q + πP ‖ Q) on finitely many outputs
    (P = ``p1``, Q = ``p0``): each output's loss rounded down, its mass where Q has none
    at an infinite loss."""
    p = pi * np.asarray(p1, dtype=float) + (1.0 - pi) * np.asarray(p0, dtype=float)
    q = np.asarray(p0, dtype=float)
    both = (p > 0.0) & (q > 0.0)
    infinity = float(np.sum(p[(p > 0.0) & (q <= 0.0)]))
    bins = np.floor((np.log(p[both]) - np.log(q[both])) / di).astype(np.int64)
    return _rounded(bins, p[both], infinity)


def witness_pmf(w: Witness, di: float, kept: fastpld.Kept | None = None) -> Any:
    """One wave's witness pair ((1 − π)Q + πP ‖ Q), the order (D, D′), as an optimistic
    ``pmf.LossPmf`` (``None``: not built, too many outputs). A Gaussian or Laplace pair is
    the remove direction of M sampled at rate π (``fastpld.sampled_direction``; from
    ``kept`` when the ledger's accountant built it already).

    Raises:
        TooCostly: its grid is above ``pld_points``."""
    pi, kind, par = w.weight, w.pair.kind, w.pair.params
    if kind in ("gaussian", "laplace"):
        if kind == "gaussian":
            prof: Any = profiles.Gaussian(sigma=float(par[0]), sensitivity=float(par[1]))
        else:
            prof = profiles.Laplace(scale=float(par[0]), sensitivity=float(par[1]))
        lo, hi = fastpld.loss_range(prof, pi, di, True)
        points = (hi - lo) / di + 2 if math.isfinite(hi - lo) else math.inf
        if points > MAX_GRID:
            raise TooCostly(f"the {w.pair.words} witness's grid of {points:.3g} points")
        _points(int(points))
        return fastpld.sampled_direction(prof, pi, di, remove=True, pessimistic=False, kept=kept)
    if kind == "discrete-laplace":
        r = discrete_laplace_mixture(float(par[0]), int(par[1]), pi, di)
    else:
        r = pmf_mixture(par[0], par[1], pi, di)
    return None if r is None else r.loss_pmf(di)


#: most grid points of one witness (beyond any ``pld_points`` limit)
MAX_GRID = 1e12
#: tail mass the self-composition may drop (the optimistic side drops it)
TAIL_TRUNCATION = 1e-15


def _charge(groups: Sequence[tuple[Any, int]], meter: Any) -> None:
    """Refuse, before any composition, a witness whose grids exceed the limits of
    ``ampcalc/model/limits.py``: each group's grid and its self-composition's window
    (``pmf.self_convolve_bounds``) are charged to ``meter`` (``pld_points`` per grid,
    ``accountant_work`` in all); the compositions that follow are charged as they come,
    as the accountant's are.

    Raises:
        TooCostly: a limit is exceeded (the message says which)."""
    try:
        for r, k in groups:
            meter.charge(r.size, "a witness's grid")
            if k > 1:
                lo, hi = P.self_convolve_bounds(
                    np.asarray(r.probs, dtype=float), k, TAIL_TRUNCATION
                )
                meter.charge(
                    max(r.size, int(hi) - int(lo) + 1), f"a witness self-composed {k} times"
                )
    except CostLimitError as err:
        raise TooCostly(str(err)) from None


def compose(
    witnesses: Sequence[tuple[Witness, int]],
    delta: float,
    di: float,
    kept: fastpld.Kept | None = None,
) -> float:
    """ε at ``delta`` of the composed witness pairs (``count`` waves of each), the
    optimistic estimate rounded down: a lower bound on the composed releases' ε at δ.

    Identical witnesses are grouped and self-composed once; the interval is ``di`` or
    ``MAX_INTERVAL``, the smaller. A sampled Gaussian or Laplace pair is read from
    ``kept`` when the ledger's accountant built it already."""
    di = min(di, MAX_INTERVAL)
    groups: dict[tuple[Any, ...], tuple[Witness, int]] = {}
    for w, k in witnesses:
        if w.weight <= 0.0:
            continue  # x is never sampled: the pair is (Q, Q), no loss
        g = groups.get(w.key())
        groups[w.key()] = (w, k + (g[1] if g else 0))
    if not groups:
        return 0.0
    exact = _exact_binary(list(groups.values()), delta)
    if exact is not None:
        return exact
    built = [(witness_pmf(w, di, kept), k) for w, k in groups.values()]
    # dropping an entry whose pair was not built is post-processing: still a lower bound
    pairs = [(r, k) for r, k in built if r is not None]
    if not pairs:
        return 0.0
    # mass at an infinite loss alone above δ: no finite ε for the witness, nor the total
    log_finite = math.fsum(k * math.log1p(-min(r.infinity_mass, 1.0)) for r, k in pairs)
    if -math.expm1(log_finite) * (1.0 - 1e-12) > delta * (1.0 + FFT_DELTA) + FFT_ABS:
        return math.inf
    meter = Meter()
    _charge(pairs, meter)
    ones = [P.self_compose(r, k, TAIL_TRUNCATION) if k > 1 else r for r, k in pairs]

    def compose_charged(a: Any, b: Any) -> Any:
        try:
            meter.charge(a.size + b.size, "the witnesses composed")
        except CostLimitError as err:
            raise TooCostly(str(err)) from None
        return P.compose(a, b, TAIL_TRUNCATION)

    total = P.smallest_first(ones, compose_charged, _length)
    noise = P.fft_noise(P.LossPair(total))
    eps = float(P.epsilon_for_delta(total, delta * (1.0 + FFT_DELTA) + FFT_ABS + noise))
    if not math.isfinite(eps):
        return math.inf
    return max(float(numeric.round_down(eps)), 0.0)


def _length(p: Any) -> int:
    """A distribution's grid length (the order ``pmf.smallest_first`` composes in)."""
    return int(p.size)


#: most outcomes the exact composition of binary pairs enumerates
MAX_OUTCOMES = 2_000_000
#: relative error allowed for the exact composition's δ (log-binomials of counts up to
#: a million, summed in float: far below it)
EXACT_SLACK = 1e-8


def _binary(w: Witness) -> tuple[float, float] | None:
    """(P(1), Q(1)) of the wave's pair when it has two outcomes, else None."""
    if w.pair.kind != "pmf":
        return None
    p1, p0 = w.pair.params
    mixed = [w.weight * a + (1.0 - w.weight) * b for a, b in zip(p1, p0, strict=True)]
    used = [i for i, (a, b) in enumerate(zip(mixed, p0, strict=True)) if a > 0.0 or b > 0.0]
    if len(used) != 2 or any(mixed[i] <= 0.0 or p0[i] <= 0.0 for i in used):
        return None
    return mixed[used[0]], p0[used[0]]


def _exact_binary(groups: Sequence[tuple[Witness, int]], delta: float) -> float | None:
    """The exact ε at δ of composed two-outcome pairs (pure M: randomized response on
    t), ``None`` when a pair has more outcomes or the outcomes are too many: the number
    of first outcomes in each group indexes the composed outcomes, and δ(ε) =
    Σ_o (P(o) − e^ε Q(o))_+ is summed over them; ε is the largest value where δ
    (rounded down) is still above ``delta``, found by bisection: no accountant and no
    discretisation."""
    from scipy.special import gammaln  # lazy: scipy, > 20 ms

    pairs = [(_binary(w), k) for w, k in groups]
    if any(b is None for b, _ in pairs) or math.prod(k + 1 for _, k in pairs) > MAX_OUTCOMES:
        return None
    log_p = np.zeros(1)
    loss = np.zeros(1)
    for b, k in pairs:
        assert b is not None
        p, q = b
        j = np.arange(k + 1, dtype=float)
        lc = gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)
        lp = lc + j * math.log(p) + (k - j) * math.log1p(-p)
        ll = j * (math.log(p) - math.log(q)) + (k - j) * (math.log1p(-p) - math.log1p(-q))
        log_p = (log_p[:, None] + lp[None, :]).ravel()
        loss = (loss[:, None] + ll[None, :]).ravel()
    prob = np.exp(log_p)

    def above(eps: float) -> bool:
        terms = prob * -np.expm1(np.minimum(eps - loss, 0.0))
        return float(np.sum(terms)) * (1.0 - EXACT_SLACK) > delta

    hi = float(np.max(loss))
    if hi <= 0.0 or not above(0.0):
        return 0.0
    lo = 0.0
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        if above(mid):
            lo = mid
        else:
            hi = mid
    return max(float(numeric.round_down(lo)), 0.0)


MEANING = (
    "a lower bound on the exact total: witness pairs (one pair of neighbouring "
    "populations, one mechanism per entry; docs/budget.md) composed from below"
)


def lower_total(
    designs: Sequence[tuple[str, Design, int]],
    delta: float,
    di: float,
    kept: fastpld.Kept | None = None,
) -> Mapping[str, Any]:
    """The ledger's lower total from witness pairs: ``{"lower", "lower_meaning",
    "lower_witness"}``, or ``{"lower": None, "lower_reason"}`` naming the entry without
    a witness. ``designs``: (entry name, design, count); ``kept``: the optimistic REMOVE
    directions the ledger's accountant built already (``fastpld.Kept``)."""
    found: list[tuple[Witness, int]] = []
    words: list[str] = []
    for name, design, count in designs:
        w = entry_witness(design)
        if isinstance(w, str):
            reason = f"entry {name!r} has no witness: {w}"
            return {
                "lower": None,
                "lower_meaning": f"no lower bound on the total ({reason})",
                "lower_reason": reason,
            }
        found.append((w, count))
        words.append(f"{name}: π = {w.weight:.6g} ({w.weight_words}), {w.pair.words}")
    try:
        lo = compose(found, delta, di, kept)
    except TooCostly as err:
        reason = f"the witness composition is too large to compute: {err}"
        return {
            "lower": None,
            "lower_meaning": f"no lower bound on the total ({reason})",
            "lower_reason": reason,
        }
    if not math.isfinite(lo):
        reason = (
            "the witness pairs alone put more than δ at an infinite privacy loss: no "
            "finite ε holds at this δ"
        )
        return {
            "lower": None,
            "lower_meaning": f"no finite lower bound ({reason})",
            "lower_reason": reason,
            "lower_witness": "; ".join(words),
        }
    return {
        "lower": lo,
        "lower_meaning": MEANING,
        "lower_witness": "; ".join(words),
    }
