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
    out: dict[str, Any] = {}
    notes = list(COMPARE_ASSUMPTIONS)
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
    if p.allocation == "neyman":
        m0, _, _ = neyman_allocations(p)
        m = m0.astype(float)
    elif p.allocation == "fixed":
        m = s.sample.astype(float)
    elif p.allocation == "proportional" and p.total_sample is not None:
        rule = p.rounding or "nearest"
        m = np.asarray(sensitivity(s.size.tolist(), p.total_sample, rule).drawn, float)
    elif p.allocation == "proportional" and p.rounding != "randomized":
        m = alloc.round_proportional(p.rates(), s.size, p.rounding or "nearest").astype(float)
    else:
        m = p.rates() * s.size
    n = s.size.astype(float)
    w = n / n.sum()
    strata = (res.details or {}).get("strata")
    if strata:
        eps_h = np.array(
            [
                np.nan if x["epsilon"]["certified"] is None else x["epsilon"]["certified"]
                for x in strata
            ]
        )
    elif res.certified is not None:
        eps_h = np.full(len(s), float(res.certified))
    else:
        eps_h = np.full(len(s), np.nan)
    sv = None
    if np.isnan(s.sd).any():
        notes.append("sampling variance not computed: give `sd` for every stratum")
    elif (m <= 0).any():
        notes.append("sampling variance not computed: a stratum has no sample")
    else:
        sv = float(np.sum(w**2 * (1.0 - m / n) * s.sd**2 / m))
    out["sampling_variance"] = sv
    u = p.value_bound

    def noise(eps: np.ndarray) -> tuple[float | None, float | None]:
        if u is None or (m <= 0).any() or not np.isfinite(eps).all() or (eps <= 0).any():
            return None, None
        b = float(np.max(w * u / (m * eps)))
        return b, 2.0 * b * b

    if u is None:
        notes.append("noise not computed: give `value_bound` (the top-code U)")
    b, nv = noise(eps_h)
    out["noise_scale"] = b
    out["noise_variance"] = nv
    out["total_variance"] = None if sv is None or nv is None else sv + nv
    if p.allocation == "neyman":
        imp = res.impossible_above
        if imp is not None:
            _, nv_opt = noise(np.full(len(s), float(imp)))
            out["noise_variance_optimistic"] = nv_opt
            out["total_variance_optimistic"] = (
                None if sv is None or nv_opt is None else sv + nv_opt
            )
            notes.append(
                f"Neyman: no ε is certified (no amplification guarantee); the optimistic "
                f"figures use ε = {float(imp):.6g}, above which the target surely fails — a "
                "best case, not a guarantee"
            )
    out["epsilon_per_stratum"] = [None if not np.isfinite(x) else float(x) for x in eps_h]
    out["assumptions"] = notes
    return out
