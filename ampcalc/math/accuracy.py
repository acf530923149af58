"""Accuracy planner: does secret SRSWOR sampling buy accuracy at a fixed privacy target?

Science: Hu et al. (Theorem 1 and §4) and the spec
``bun-drechsler-hu-formulas.md`` §9. Pure functions, no printing.

Directions are named explicitly (Hu et al. flip the meaning of ε_n between Theorem 1 and §3):

* ``epsilon_population`` (ε): the target the *population-level* release must meet.
* ``epsilon_sample`` (ε_n): what the mechanism run on the SRSWOR sample of size n may
  spend so that, by Hu et al. Theorem 1, the population-level guarantee is ε:
  ε_n = A⁻¹(n/N, ε) = log(1 + (N/n)(e^ε − 1)), and δ_n = (N/n)δ.

**Theorem (no sampling is optimal for the global-sensitivity Laplace mean; spec §9.2).**
Let g(ρ) = ρ·log(1 + (e^ε − 1)/ρ) on (0, 1]. With x = e^ε − 1 > 0,
g′(ρ) = log(1 + x/ρ) − (x/ρ)/(1 + x/ρ) > 0 because log(1 + u) > u/(1 + u) for u > 0;
so g is strictly increasing and g(1) = ε. Hence for every n < N, (n/N)ε_n = g(n/N) < ε,
i.e. the noise ratio r(ε, n/N) = (g(n/N)/ε)² < 1, so the sample's Laplace noise variance
2(R/(ε_n n))² = 2(R/(εN))²/r exceeds the population's V_N = 2(R/(εN))². Adding the
non-negative sampling variance (1 − n/N)S²/n, V_n > V_N for every n < N: the variance
minimising rate is 1 (no sampling), for every ε > 0 and every data set. The planner's
"no gain" verdict for the mean comes from this theorem, not from comparing rounded
numbers. Hu et al. Figure 5 (a threshold ε below which r > 1) is a floating-point artefact of
evaluating log(1 + (N/n)(e^ε − 1)) naively (spec §9.2 warning, §11 item 15).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ampcalc.math.numeric import amplification_inverse
from ampcalc.math.types import FloatArray

__all__ = [
    "MeanPlan",
    "beta",
    "epsilon_sample",
    "max_rate_for_gain",
    "mean_sample_size",
    "median_sample_size",
    "noise_ratio",
    "one_minus_noise_ratio",
    "plan_custom",
    "plan_mean",
    "plan_median",
    "q_bound",
    "smooth_sensitivity",
    "smooth_sensitivity_many",
]

_SERIES_TERMS = 80  # x/ρ <= 1/2: terms fall by 1/2 each, 80 terms reach 1e-24 relative

# Short forms of ampcalc.model.references (math/ sits below model/, so they are spelled
# out here; tests/test_references.py checks they equal the list's short forms).
HU_2023 = "Hu et al."
DERIVATIONS = "ampcalc derivations"


def epsilon_sample(eps: ArrayLike, rho: ArrayLike) -> FloatArray:
    """ε_n = A⁻¹(ρ, ε): the sample-spend ε giving the population target ε (Hu et al. Thm 1)."""
    return amplification_inverse(rho, eps)


def _gap(eps: FloatArray, rho: FloatArray) -> FloatArray:
    """D = ε − ρ·log(1 + (e^ε − 1)/ρ) >= 0, computed without cancellation.

    With x = expm1(ε) and φ(y) = log1p(y) − y, D = φ(x) − ρφ(x/ρ). For x/ρ <= 1/2 the
    series D = Σ_{k>=2} (−1)^k x^k/k · (ρ^{1−k} − 1) (every ρ^{1−k} − 1 from expm1) has
    a dominant positive first term x²(1/ρ − 1)/2, so no cancellation at ε = 1e-12;
    otherwise D = ε − ρ·A⁻¹(ρ, ε) (overflow-free A⁻¹) where g/ε is bounded away from 1
    unless ρ ≈ 1.
    """
    eps, rho = np.broadcast_arrays(np.asarray(eps, float), np.asarray(rho, float))
    out = np.empty(eps.shape, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x = np.expm1(eps)
        series = (x / rho) <= 0.5
        if np.any(series):
            xs, rs = x[series], rho[series]
            log_r = np.log(rs)
            acc = np.zeros(xs.shape)
            for k in range(_SERIES_TERMS, 1, -1):  # smallest terms first
                # x^k (ρ^{1−k} − 1)/k = (x/ρ)^k ρ (1 − ρ^{k−1})/k: no overflow
                acc += (-1.0) ** k * (xs / rs) ** k * rs * -np.expm1((k - 1) * log_r) / k
            out[series] = acc
        rest = ~series
        if np.any(rest):
            out[rest] = eps[rest] - rho[rest] * amplification_inverse(rho[rest], eps[rest])
    return np.maximum(out, 0.0)


def one_minus_noise_ratio(eps: ArrayLike, rho: ArrayLike) -> FloatArray:
    """1 − r(ε, ρ) = (D/ε)(2 − D/ε) with D from ``_gap`` (stable; > 0 for ρ < 1)."""
    eps = np.asarray(eps, float)
    d = _gap(eps, np.asarray(rho, float)) / eps
    out: FloatArray = d * (2.0 - d)
    return out


def noise_ratio(eps: ArrayLike, rho: ArrayLike) -> FloatArray:
    """r(ε, n/N) = ((n/N)·ε_n/ε)² (Hu et al. eq. 8): V_N,noise / V_n,noise.

    Basis: Hu et al., eq. 8; spec §9.2. Evaluated as (1 − D/ε)² with the
    cancellation-free gap D (``_gap``) while D/ε < 1/2, else as (ρ·ε_n/ε)² directly,
    so r <= 1 holds as evaluated, for every ε > 0 (the naive form gives the
    spurious r > 1 of Hu et al. Figure 5 for tiny ε).
    """
    eps, rho = np.broadcast_arrays(np.asarray(eps, float), np.asarray(rho, float))
    d = _gap(eps, rho) / eps
    # for D/ε >= 1/2 the ratio g/ε itself is computed directly (no cancellation in 1 − d)
    direct = (rho * amplification_inverse(rho, eps) / eps) ** 2
    ratio: FloatArray = np.minimum(np.where(d < 0.5, (1.0 - d) ** 2, direct), 1.0)
    return ratio


def q_bound(eps: ArrayLike, rho: ArrayLike) -> FloatArray:
    """q = 1 − ε²/ε_n² (Hu et al. §4.1, eq. 5): a gain needs Var(g(S)) <= q·V_N.

    Assumes Δ_n = Δ_N (the best case); with Δ_n >= Δ_N it is still necessary.
    q ≈ 1 − (n/N)² for small ε (spec §9.2 vectors).
    """
    eps = np.asarray(eps, float)
    eps_n = epsilon_sample(eps, rho)
    ratio = eps / eps_n
    return (1.0 - ratio) * (1.0 + ratio)


def _log_expm1(a: FloatArray) -> FloatArray:
    """log(e^a − 1) for a > 0 without overflow."""
    a = np.asarray(a, float)
    with np.errstate(divide="ignore"):
        return np.where(
            a > 30.0,
            a + np.log1p(-np.exp(-np.minimum(a, 700.0))),
            np.log(np.expm1(np.minimum(a, 30.0))),
        )


def max_rate_for_gain(q: ArrayLike, eps: ArrayLike) -> FloatArray:
    """Largest rate n/N at which a sampling-variance share q of V_N still allows a gain.

    Basis: spec §9.2 (closed form, [DERIVED] from Hu et al. §4.1): q = 1 − ε²/ε_n² ⇔
    ε_n = ε/√(1 − q), and ε_n = A⁻¹(ρ, ε) ⇔ ρ = expm1(ε)/expm1(ε/√(1 − q)).
    Test vectors: q = 0.6 gives 16.77 % at ε = 3 and 61.4 % at ε = 0.1 (Hu et al. §4.2).
    Evaluated in log space (no overflow at ε = 800). q must be in [0, 1).
    """
    q = np.asarray(q, float)
    eps = np.asarray(eps, float)
    e_n = eps / np.sqrt(1.0 - q)
    return np.exp(_log_expm1(eps) - _log_expm1(e_n))


def mean_sample_size(rate: float, population: int) -> int:
    """n = ⌊ρN + 1/2⌋ (round half up, spec §11 item 12), at least 1 and at most N."""
    return int(min(population, max(1, math.floor(rate * population + 0.5))))


def median_sample_size(rate: float, population: int) -> int:
    """n = min(2⌊ρN/2⌋ + 1, N − (1 − N mod 2)): odd and at most N (spec §9.3)."""
    return int(min(2 * math.floor(rate * population / 2) + 1, population - (1 - population % 2)))


def beta(eps: float, delta: float) -> float:
    """β = ε/(2 log(2/δ)) (Hu et al. §2, eq. 4; spec §9.1: ε = 0.1, δ = 1/20002 → 0.0047184)."""
    return eps / (2.0 * math.log(2.0 / delta))


def smooth_sensitivity_many(
    sorted_rows: ArrayLike, b: float, lower: float, upper: float
) -> FloatArray:
    """Smooth sensitivity of the median of each row (rows sorted, odd length).

    Basis: Hu et al., eq. 4 (after Nissim–Raskhodnikova–Smith 2007):
    Δ^S(Y) = max_{k=0..n} e^{−kβ} max_{t=0..k+1} (y_{m+t} − y_{m+t−k−1}), m = (n+1)/2,
    with the boundary convention y_i = L for i < 1 and y_i = U for i > n (spec §9.1).
    Loop over k, vectorised over t and rows; a row stops once no later k can raise its
    maximum: B_k = e^{−kβ}(y_{m+k+1} − y_{m−k−1}) <= e^{−kβ}(U − L) bounds the k-th term,
    and a row stops when max_{k' >= k} B_{k'} <= its current maximum (the spec's early
    stopping, with the data window in place of U − L). k = 0 gives the local sensitivity.
    """
    y = np.atleast_2d(np.asarray(sorted_rows, float))
    rows, n = y.shape
    if n % 2 == 0:
        raise ValueError("the smooth-sensitivity median needs an odd size")
    m = (n + 1) // 2
    # z[j] = y_{j - n - 1}... pad n+1 copies of L on the left and U on the right so that
    # y_i (1-based, i in [-n, 2n+1]) is z[i + n]
    z = np.concatenate([np.full((rows, n + 1), lower), y, np.full((rows, n + 1), upper)], 1)
    off = n  # z index of y_i is i + off
    best = np.zeros(rows)
    ks = np.arange(n + 1)
    # B_k = e^{−kβ}(y_{m+k+1} − y_{m−k−1}) bounds the k-th term (every difference lies in
    # that window); a row is done once the largest B_{k'} for k' >= k is <= its maximum
    bound = np.exp(-ks * b) * (z[:, m + ks + 1 + off] - z[:, m - ks - 1 + off])
    tail = np.maximum.accumulate(bound[:, ::-1], axis=1)[:, ::-1]
    active = np.arange(rows)
    for k in range(0, n + 1):
        active = active[tail[active, k] > best[active]]
        if active.size == 0:
            break
        todo = active[bound[active, k] > best[active]]
        if todo.size == 0:
            continue
        t = np.arange(k + 2)
        hi = z[np.ix_(todo, m + t + off)]
        lo = z[np.ix_(todo, m + t - k - 1 + off)]
        a_k = np.max(hi - lo, axis=1) * math.exp(-k * b)
        best[todo] = np.maximum(best[todo], a_k)
    return best


def smooth_sensitivity(sorted_y: ArrayLike, b: float, lower: float, upper: float) -> float:
    """Smooth sensitivity of the median of one sorted, odd-length data set (eq. 4).

    Same value as ``smooth_sensitivity_many`` (same formula and boundary convention), with
    a data-driven pruning for large N: every difference in the k-th term lies inside the
    window [y_{m−k−1}, y_{m+k+1}], so B_k = e^{−kβ}(y_{m+k+1} − y_{m−k−1}) bounds that
    term. The terms are evaluated in decreasing order of B_k, stopping once the next B_k
    is at most the current maximum — exact, and far fewer k than stopping on (U − L).
    """
    y = np.asarray(sorted_y, float)
    n = y.size
    if n % 2 == 0:
        raise ValueError("the smooth-sensitivity median needs an odd size")
    m = (n + 1) // 2
    z = np.concatenate([np.full(n + 1, lower), y, np.full(n + 1, upper)])
    off = n
    ks = np.arange(n + 1)
    bound = np.exp(-ks * b) * (z[m + ks + 1 + off] - z[m - ks - 1 + off])
    order = np.argsort(-bound, kind="stable")
    best = 0.0
    for k in order:
        if bound[k] <= best:
            break
        k = int(k)
        t = np.arange(k + 2)
        a_k = float(np.max(z[m + t + off] - z[m + t - k - 1 + off])) * math.exp(-k * b)
        best = max(best, a_k)
    return best


# --------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------


@dataclass
class Plan:
    """What ``plan`` reports for one design (``to_dict`` is the JSON contract)."""

    name: str
    statistic: str
    epsilon_population: float
    delta_population: float
    population: int
    rows: list[dict[str, Any]]
    best_rate: float | None
    conclusion: str
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    max_rate_for_gain: float | None = None
    #: the sampling-variance share of V_N asked about (Hu et al. §4.1 calls it q; renamed so
    #: that it cannot be read as a sampling rate)
    variance_share: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "statistic": self.statistic,
            "epsilon_population": self.epsilon_population,
            "delta_population": self.delta_population,
            "population": self.population,
            "best_rate": self.best_rate,
            "conclusion": self.conclusion,
            "assumptions": list(self.assumptions),
            "notes": list(self.notes),
            "rows": self.rows,
            "details": self.details,
        }
        if self.variance_share is not None:
            out["variance_share"] = self.variance_share
            out["max_rate_for_gain"] = self.max_rate_for_gain
        return out


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


MeanPlan = Plan

_DIRECTIONS = (
    "epsilon_sample (ε_n) is what the mechanism on the sample may spend; the population-"
    f"level guarantee is the target ε ({HU_2023}, Theorem 1: ε = A(n/N, ε_n), δ = (n/N)δ_n)"
)


def plan_mean(
    name: str,
    eps: float,
    delta: float,
    population: int,
    sizes: Sequence[tuple[float, int]],
    value_range: float,
    variance: float,
    q: float | None = None,
) -> Plan:
    """Laplace mean, global sensitivity R/n (Hu et al. §4.2, eqs. 6–8; spec §9.2).

    V_N = 2(R/(εN))², V_n = (1 − n/N)S²/n + 2(R/(ε_n n))² with ε_n = A⁻¹(n/N, ε).
    Verdict per row: gain only at n = N (no sampling), by the module theorem.
    """
    big_n = population
    v_pop = 2.0 * (value_range / (eps * big_n)) ** 2
    rows: list[dict[str, Any]] = []
    for rate, n in sizes:
        rho = n / big_n
        eps_n = float(epsilon_sample(eps, rho))
        noise_n = 2.0 * (value_range / (eps_n * n)) ** 2
        samp = (1.0 - rho) * variance / n
        rows.append(
            {
                "rate": rate,
                "sample_size": n,
                "epsilon_sample": eps_n,
                "delta_sample": None,
                "variance_sample": samp + noise_n,
                "variance_population": v_pop,
                "noise_ratio": float(noise_ratio(eps, rho)),
                "one_minus_noise_ratio": float(one_minus_noise_ratio(eps, rho)),
                "variance_share_max": float(q_bound(eps, rho)),
                "sampling_variance": samp,
                "noise_variance_sample": noise_n,
                # the theorem: V_n > V_N for every n < N; n = N is no sampling at all
                "gain": False,
            }
        )
    plan = Plan(
        name=name,
        statistic="mean",
        epsilon_population=eps,
        delta_population=delta,
        population=big_n,
        rows=rows,
        best_rate=1.0,
        conclusion=(
            "no gain at any rate: for the Laplace mean with global sensitivity, sampling "
            "never reduces the variance (r(ε, n/N) < 1 for every ε > 0 and n < N), so the "
            f"best rate is 1 (no sampling) — {DERIVATIONS}, §2.7, proof in "
            "ampcalc/math/accuracy.py"
        ),
        assumptions=[
            "Laplace noise with global sensitivity R/n on the sample, R/N on the population"
        ],
        notes=[
            _DIRECTIONS,
            f"{HU_2023}, Figure 5 (an ε below which sampling reduces the noise) is a "
            "floating-point "
            f"artefact; in exact arithmetic r(ε, n/N) < 1 always ({DERIVATIONS}, §2.7)",
        ],
        details={"range": value_range, "variance": variance, "basis": f"{HU_2023}, §4.2 eqs. 6–8"},
    )
    return _with_variance_share(plan, q, eps)


def _gains_and_best_rate(rows: list[dict[str, Any]], v_pop: float) -> tuple[list[Any], float]:
    """The rows with a gain, and the rate of smallest variance (1 when none beats V_N)."""
    gains = [r for r in rows if r["gain"]]
    best = min(rows, key=lambda r: r["variance_sample"]) if rows else None
    best_rate = best["rate"] if best and best["variance_sample"] < v_pop else 1.0
    return gains, float(best_rate)


def _conclusion(gains: int, rates: int, best_rate: float, *, measure: str, how: str = "") -> str:
    """The plan's verdict in words: at how many of the rates sampling gains (``how``
    says how the rows were found, e.g. " (simulated)"), and the best rate."""
    if gains:
        return (
            f"gain at {gains} of {rates} rates{how}; the smallest {measure} is at rate "
            f"{best_rate:g}"
        )
    return f"no gain at any listed rate{how}: the best rate is 1 (no sampling)"


def _with_variance_share(plan: Plan, q: float | None, eps: float) -> Plan:
    """``plan`` with the variance share q asked for and the largest rate that can gain
    at it (``max_rate_for_gain``); unchanged without a q."""
    if q is not None:
        plan.variance_share = q
        plan.max_rate_for_gain = float(max_rate_for_gain(q, eps))
    return plan


def plan_custom(
    name: str,
    eps: float,
    delta: float,
    population: int,
    sizes: Sequence[tuple[float, int]],
    variances: Sequence[float],
    sens_sample: Sequence[float],
    sens_population: float,
    q: float | None = None,
) -> Plan:
    """General Laplace statistic (Hu et al. eq. 5): V_n = Var(g(S)) + 2(Δ_n/ε_n)², V_N = 2(Δ_N/ε)².

    A gain needs Var(g(S)) <= q·V_N, q = 1 − ε²/ε_n², when Δ_n = Δ_N; the negative form
    (no gain if Var(g(S)) >= 2Δ_N²(ε⁻² − ε_n⁻²)) assumes Δ_n >= Δ_N (spec §9.2, §11 item 18).
    """
    v_pop = 2.0 * (sens_population / eps) ** 2
    rows: list[dict[str, Any]] = []
    for (rate, n), var, dn in zip(sizes, variances, sens_sample, strict=True):
        rho = n / population
        eps_n = float(epsilon_sample(eps, rho))
        noise_n = 2.0 * (dn / eps_n) ** 2
        v_n = var + noise_n
        rows.append(
            {
                "rate": rate,
                "sample_size": n,
                "epsilon_sample": eps_n,
                "delta_sample": None,
                "variance_sample": v_n,
                "variance_population": v_pop,
                "noise_ratio": float(noise_ratio(eps, rho)),
                "variance_share_max": float(q_bound(eps, rho)),
                "sampling_variance": var,
                "noise_variance_sample": noise_n,
                # Hu et al. Table 1 row 1: no gain if Var(g(S)) >= 2Δ_N²(ε⁻² − ε_n⁻²) (Δ_n >= Δ_N)
                "no_gain_threshold": 2.0 * sens_population**2 * (eps**-2 - eps_n**-2),
                "gain": bool(v_n < v_pop),
            }
        )
    gains, best_rate = _gains_and_best_rate(rows, v_pop)
    conclusion = _conclusion(len(gains), len(rows), best_rate, measure="variance")
    plan = Plan(
        name=name,
        statistic="custom",
        epsilon_population=eps,
        delta_population=delta,
        population=population,
        rows=rows,
        best_rate=best_rate,
        conclusion=conclusion,
        assumptions=[
            "the no-gain condition Var(g(S)) >= 2Δ_N²(ε⁻² − ε_n⁻²) assumes Δ_n >= Δ_N "
            f"({HU_2023}, Table 1 row 1); variance_share_max assumes Δ_n = Δ_N (the best case)",
        ],
        notes=[_DIRECTIONS],
        details={"sensitivity_population": sens_population, "basis": f"{HU_2023}, eq. 5"},
    )
    return _with_variance_share(plan, q, eps)


def _sample_guarantee(
    eps: float, delta: float, rate: float, n: int, big_n: int
) -> tuple[float, float]:
    """(ε_n, δ_n) = (A⁻¹(n/N, ε), (N/n)δ) the sample of size n may spend (Hu et al. Thm 1).

    Raises:
        ValueError: δ_n >= 1, a vacuous (ε_n, δ_n) guarantee.
    """
    rho = n / big_n
    eps_n = float(epsilon_sample(eps, rho))
    delta_n = delta / rho
    if delta_n >= 1.0:
        raise ValueError(
            f"δ_n = (N/n)δ′ = {delta_n:.6g} >= 1 at rate {rate:g} (n = {n}): the sample's "
            "(ε_n, δ_n) guarantee is vacuous"
        )
    return eps_n, delta_n


def _simulated_medians(
    y: np.ndarray,
    n: int,
    b_n: float,
    lower: float,
    upper: float,
    simulations: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Smooth sensitivities and medians of ``simulations`` SRSWOR samples of size n < N
    from the sorted data ``y``, drawn from ``rng``.

    A sample is the n smallest of N iid uniforms, drawn in chunks of at most ~4·10⁶
    keys (memory) in a fixed order (reproducible for a seed).
    """
    big_n = y.size
    chunk = max(1, 4_000_000 // big_n)
    ss_parts, med_parts = [], []
    for start in range(0, simulations, chunk):
        keys = rng.random((min(chunk, simulations - start), big_n))
        idx = np.argpartition(keys, n - 1, axis=1)[:, :n]
        samples = np.sort(y[idx], axis=1)
        ss_parts.append(smooth_sensitivity_many(samples, b_n, lower, upper))
        med_parts.append(samples[:, (n - 1) // 2])
    return np.concatenate(ss_parts), np.concatenate(med_parts)


def _median_row(
    rate: float,
    n: int,
    eps_n: float,
    delta_n: float,
    ss: np.ndarray,
    med: np.ndarray,
    m_pop: float,
    ss_pop: float,
    v_pop: float,
) -> dict[str, Any]:
    """A rate's row: the simulated MSE of the noisy sample median (sampling error against
    the population median ``m_pop``, plus the exact Laplace noise 8(Δ^S_n/ε_n)²)."""
    samp_err = float(np.mean((med - m_pop) ** 2))
    noise = float(np.mean(8.0 * (ss / eps_n) ** 2))
    v_n = samp_err + noise
    return {
        "rate": rate,
        "sample_size": n,
        "epsilon_sample": eps_n,
        "delta_sample": delta_n,
        "variance_sample": v_n,
        "variance_population": v_pop,
        "noise_ratio": _finite(v_pop / noise) if noise > 0 else None,
        "variance_share_max": None,
        "sampling_variance": samp_err,
        "noise_variance_sample": noise,
        "smooth_sensitivity_ratio": float(np.median(ss)) / ss_pop if ss_pop > 0 else None,
        "gain": bool(v_n < v_pop),
    }


def plan_median(
    name: str,
    eps: float,
    delta: float,
    values: ArrayLike,
    rates: Sequence[float],
    lower: float,
    upper: float,
    simulations: int,
    seed: int,
    q: float | None = None,
) -> Plan:
    """Smooth-sensitivity noisy median, population vs seeded SRSWOR samples (Hu et al. §4.3).

    Population: MSE = E[η²] with η ~ Laplace(0, 2Δ^S/ε), i.e. 8(Δ^S/ε)², β from (ε, δ).
    Sample of odd size n: (ε_n, δ_n) = (A⁻¹(n/N, ε), (N/n)δ); per simulation the squared
    error of the sample median against the population median plus 8(Δ^S_n/ε_n)²
    (the Laplace noise is integrated exactly; only the sampling is simulated).
    """
    y = np.sort(np.asarray(values, float))
    big_n = y.size
    b_pop = beta(eps, delta)
    ss_pop = smooth_sensitivity(y, b_pop, lower, upper)
    m_pop = float(y[(big_n - 1) // 2])
    v_pop = 8.0 * (ss_pop / eps) ** 2
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for rate in rates:
        n = median_sample_size(rate, big_n)
        eps_n, delta_n = _sample_guarantee(eps, delta, rate, n, big_n)
        if n == big_n:
            ss, med = np.array([ss_pop]), np.array([m_pop])
        else:
            b_n = beta(eps_n, delta_n)
            ss, med = _simulated_medians(y, n, b_n, lower, upper, simulations, rng)
        rows.append(_median_row(rate, n, eps_n, delta_n, ss, med, m_pop, ss_pop, v_pop))
    gains, best_rate = _gains_and_best_rate(rows, v_pop)
    plan = Plan(
        name=name,
        statistic="median",
        epsilon_population=eps,
        delta_population=delta,
        population=big_n,
        rows=rows,
        best_rate=best_rate,
        conclusion=_conclusion(
            len(gains), len(rows), best_rate, measure="MSE", how=" (simulated)"
        ),
        assumptions=[
            f"public data bounds [L, U] = [{lower:g}, {upper:g}]; y_i = L below the data and "
            f"U above it (boundary convention, {DERIVATIONS}, §2.7)",
            "sample sizes are odd (n = min(2⌊ρN/2⌋ + 1, N − (1 − N mod 2))), as the "
            f"smooth-sensitivity median formula needs ({HU_2023}, eq. 4)",
            f"noise Laplace(0, 2Δ^S/ε) with β = ε/(2 log(2/δ)) ({HU_2023}, §4.3)",
        ],
        notes=[
            _DIRECTIONS,
            f"MSE of the noisy median against the population median; {simulations} seeded "
            f"SRSWOR samples per rate (seed {seed}), Laplace noise integrated exactly",
        ],
        details={
            "bounds": [lower, upper],
            "population_median": m_pop,
            "smooth_sensitivity_population": ss_pop,
            "beta_population": b_pop,
            "simulations": simulations,
            "seed": seed,
            "basis": f"{HU_2023}, §4.3, eq. 4",
        },
    )
    return _with_variance_share(plan, q, eps)
