"""``ampcalc compare`` for stratified designs: privacy against variance
(Bun et al., §7.1–7.2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.stratified.fixed_total import sensitivity
from ampcalc.schemes.stratified.neyman import neyman_allocations
from ampcalc.schemes.stratified.params import Params

COMPARE_ASSUMPTIONS = (
    "estimator: stratified mean θ = Σ_h (N_h/N)·T_h/m_h, T_h the sample total of stratum h, "
    "m_h its planned sample size (expected size for randomised rounding and Poisson), values "
    "in [0, U] with U = value_bound",
    "noise: one Laplace draw on θ with scale b = max_h (N_h/N)·U/(m_h·ε_h): changing, "
    "adding or removing a record of stratum h moves T_h by at most U, so θ by "
    "(N_h/N)·U/m_h, and stratum h's loss is at most its certified ε_h; noise variance 2b²",
    "sampling variance: Σ_h (N_h/N)²(1 − m_h/N_h)S_h²/m_h (SRS within strata; for Poisson "
    "the same formula at the expected size, an approximation)",
)


def _planned_sizes(p: Params) -> np.ndarray:
    """m_h, each stratum's planned sample size (expected size for randomised rounding and
    Poisson; the drawn size min(m_h, N_h) for a fixed total)."""
    s = p.strata
    if p.allocation == "neyman":
        m0, _, _ = neyman_allocations(p)
        return m0.astype(float)
    if p.allocation == "fixed":
        return s.sample.astype(float)
    if p.allocation == "proportional" and p.total_sample is not None:
        rule = p.rounding or "nearest"
        return np.asarray(sensitivity(s.size.tolist(), p.total_sample, rule).drawn, float)
    if p.allocation == "proportional" and p.rounding != "randomized":
        return alloc.round_proportional(p.rates(), s.size, p.rounding or "nearest").astype(float)
    out: np.ndarray = p.rates() * s.size
    return out


def _certified_per_stratum(res: Any, k: int) -> np.ndarray:
    """Each stratum's certified ε from the inversion (its per-stratum rows, else the one
    certified ε for all k strata); NaN where none is certified."""
    strata = (res.details or {}).get("strata")
    if strata:
        return np.array(
            [
                np.nan if x["epsilon"]["certified"] is None else x["epsilon"]["certified"]
                for x in strata
            ]
        )
    if res.certified is not None:
        return np.full(k, float(res.certified))
    return np.full(k, np.nan)


def _sampling_variance(p: Params, m: np.ndarray, w: np.ndarray) -> tuple[float | None, str | None]:
    """Σ_h w_h²(1 − m_h/N_h)S_h²/m_h, or None and the reason it is not computed."""
    s = p.strata
    if np.isnan(s.sd).any():
        return None, "sampling variance not computed: give `sd` for every stratum"
    if (m <= 0).any():
        return None, "sampling variance not computed: a stratum has no sample"
    n = s.size.astype(float)
    return float(np.sum(w**2 * (1.0 - m / n) * s.sd**2 / m)), None


def _laplace_noise(
    u: float | None, w: np.ndarray, m: np.ndarray, eps: np.ndarray
) -> tuple[float | None, float | None]:
    """The Laplace scale b = max_h w_h·U/(m_h·ε_h) on the stratified mean and its variance
    2b²; (None, None) without U, a stratum without sample, or an ε not certified."""
    if u is None or (m <= 0).any() or not np.isfinite(eps).all() or (eps <= 0).any():
        return None, None
    b = float(np.max(w * u / (m * eps)))
    return b, 2.0 * b * b


def _sum_or_none(a: float | None, b: float | None) -> float | None:
    """a + b, or None where either is missing."""
    return None if a is None or b is None else a + b


def compare(design: Any, target: float, res: Any) -> dict[str, Any]:
    """Accuracy figures of a stratified design at population target ε′ = ``target``.

    ``res`` is the design's inversion at ``target`` (an ``InvertResult``). Returns the
    per-stratum certified ε (from ``res``), the Laplace noise of the
    stratified mean at those ε (needs ``value_bound``), the sampling variance (needs
    ``sd`` for every stratum) and their total; ``assumptions`` states the estimator and
    the sensitivity. For Neyman allocation no ε is certified: the noise is also given
    at the most generous ε not known to break the target (``impossible_above``), as a
    best case that is not a guarantee.
    """
    p: Params = design.params
    s = p.strata
    if res.error:
        return {"error": res.error}
    if not s.sizes_known:
        return {
            "sampling_variance": None,
            "noise_variance": None,
            "assumptions": [
                "no accuracy figures: the design gives allocation vectors without strata "
                "(sizes and SDs unknown)"
            ],
        }
    notes = list(COMPARE_ASSUMPTIONS)
    m = _planned_sizes(p)
    n = s.size.astype(float)
    w = n / n.sum()
    eps_h = _certified_per_stratum(res, len(s))
    sv, why = _sampling_variance(p, m, w)
    if why is not None:
        notes.append(why)
    out: dict[str, Any] = {"sampling_variance": sv}
    if p.value_bound is None:
        notes.append("noise not computed: give `value_bound` (the top-code U)")
    b, nv = _laplace_noise(p.value_bound, w, m, eps_h)
    out["noise_scale"] = b
    out["noise_variance"] = nv
    out["total_variance"] = _sum_or_none(sv, nv)
    imp = res.impossible_above
    if p.allocation == "neyman" and imp is not None:
        _, nv_opt = _laplace_noise(p.value_bound, w, m, np.full(len(s), float(imp)))
        out["noise_variance_optimistic"] = nv_opt
        out["total_variance_optimistic"] = _sum_or_none(sv, nv_opt)
        notes.append(
            f"Neyman: no ε is certified (no amplification guarantee); the optimistic "
            f"figures use ε = {float(imp):.6g}, above which the target surely fails — a "
            "best case, not a guarantee"
        )
    out["epsilon_per_stratum"] = [None if not np.isfinite(x) else float(x) for x in eps_h]
    out["assumptions"] = notes
    return out
