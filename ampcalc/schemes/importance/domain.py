"""Importance sampling's public domain bound, per-record norms and the searches for the
knob (scale, noise constant or expected size) that reaches a target ε."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.math.importance import (
    domain_supremum,
    personalised_epsilon,
    privacy_constrained_weights,
)
from ampcalc.model.references import DERIVATIONS
from ampcalc.schemes.importance.params import (
    Params,
    RecordEpsilon,
    _given,
)

# --------------------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------------------


def _raw_norms(params: Params, profile: RecordEpsilon) -> np.ndarray:
    """Per-record profile norm as computed (nearest rounding): domain membership."""
    z: np.ndarray = params.data.l1 if profile.norm == "l1" else np.sqrt(params.data.sq_l2)
    return z


def _profile_norms(params: Params, profile: RecordEpsilon) -> np.ndarray:
    """Per-record profile norm, rounded up (summation error) so ε(1, x) is not low."""
    return numeric.round_up(_raw_norms(params, profile), 16)


def coreset_q(z2: np.ndarray, *, mix: float, m: float, n: float, xbar: float) -> np.ndarray:
    """q(x) = min(1, λm/N + (1 − λ)m‖x‖₂²/(N x̃)) (Def. 14, Poisson form, spec A10)."""
    z2 = np.asarray(z2, dtype=float)
    q: np.ndarray = np.minimum(1.0, mix * m / n + (1.0 - mix) * m * z2 * z2 / (n * xbar))
    return q


def _map(params: Params, m: float | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """The public q(‖x‖₂) of uniform/coreset designs."""
    size = _given(params.expected_size if m is None else m)
    n = _given(params.population)
    if params.probabilities == "uniform" or params.mix == 1.0:
        q0 = min(1.0, size / n)
        return lambda z2: np.full(np.shape(z2), q0)
    xbar = _given(params.mean_sq_norm)
    return lambda z2: coreset_q(z2, mix=params.mix, m=size, n=n, xbar=xbar)


def domain_bracket(
    params: Params, profile: RecordEpsilon, k: float, m: float | None = None
) -> tuple[float, float, float]:
    """(upper, lower, argmax ‖x‖) of sup_{‖x‖<=r} ε̂ for uniform/coreset maps.

    Basis: Personalized Privacy Amplification via Importance Sampling, Theorem 6 (per point), sup
    over the domain
        (spec A4, A10 Eq. 5).
    Neighbours: add-remove; the added record is any point with profile norm <= r.
    Conditions: q fixed before seeing the data (public N, m, x̃).
    Formula: ε̂(z) = A(q(z₂), ε(1/q, z)). For weight-linear profiles ε̂ increases with
        ε(1, x) and decreases with q (A4), so at profile norm z the worst point has
        the smallest ‖x‖₂ the norms allow (z/√d for an ℓ1 profile and an ℓ2 map);
        for the constant profile ε̂ increases with q (worst: the largest q).
    Tightness: the lower end is attained at a point of the domain (randomised
        response on that point's presence); the gap is ~1e-9 relative or less.
    Numerics: branch-and-bound over cells of [0, r] with monotone cell bounds
        (sound), instead of the code's 100-point grid (spec A12-4).
    """
    qmap = _map(params, m)
    r = params.radius
    coef = profile.coefficients
    if not profile.linear:
        qr = qmap(np.array([r]))
        e0 = k * coef.alpha
        return (
            float(personalised_epsilon(qr, e0, linear=False)[0]),
            float(personalised_epsilon(qr, e0, linear=False, rounding="down")[0]),
            r,
        )
    c = np.sqrt(params.data.dimension) if profile.norm == "l1" else 1.0
    uniform = params.probabilities == "uniform" or params.mix == 1.0

    def cell_upper(zl: np.ndarray, zh: np.ndarray) -> np.ndarray:
        q = numeric.round_down(qmap(zl / c), 2)
        a = numeric.round_up(k * coef.at(zh), 2)
        # q -> 0 with a > 0: ε̂ is unbounded on the cell (never 0, as at a point)
        return np.where((q <= 0) & (a > 0), np.inf, personalised_epsilon(q, a))

    def point_lower(z: np.ndarray) -> np.ndarray:
        q = numeric.round_up(qmap(z / c), 2)
        return personalised_epsilon(q, numeric.round_down(k * coef.at(z), 2), rounding="down")

    if uniform:
        z = np.array([r])
        return float(cell_upper(z, z)[0]), float(point_lower(z)[0]), r
    return domain_supremum(cell_upper, point_lower, r)


# --------------------------------------------------------------------------------------
# Inversion knobs
# --------------------------------------------------------------------------------------


def _knob_name(params: Params, profile: RecordEpsilon) -> str:
    if params.knob is not None:
        return params.knob
    if params.probabilities == "privacy-constrained" or profile.kind == "constant":
        return "expected_size"
    return "scale" if profile.kind == "laplace-sum" else "noise_constant"


def _each(t: np.ndarray, fn: Any) -> np.ndarray:
    t = np.asarray(t, dtype=float)
    return np.asarray([fn(float(x)) for x in t.ravel()], dtype=float).reshape(t.shape)


def scale_search(fn: Any, target: float, *, feasible_end: bool) -> float:
    """Scaling k of the per-record ε where increasing ``fn(k)`` crosses ``target``.

    ``feasible_end``: the largest k found with fn(k) <= target (a certificate: the
    low end of the final bracket, never a midpoint); otherwise the smallest k found
    with fn(k) >= target (the high end). Bracketing by doubling from k = 1, then
    bisection to 1e-13 relative. ``nan`` (certificate) / ``inf`` when none exists.
    """

    def bad(k: float) -> bool:
        v = float(fn(k))
        return v > target if feasible_end else v < target

    def good(k: float) -> bool:
        return not bad(k)

    lo, hi = 1.0, 1.0
    if feasible_end:
        # lo feasible (fn <= target), hi infeasible
        while fn(lo) > target:
            lo /= 2.0
            if lo < 1e-300:
                return float("nan")
        hi = lo
        while fn(hi) <= target:
            hi *= 2.0
            if hi > 1e300:
                return float("inf")
    else:
        # lo short of the target, hi reaching it
        while fn(hi) < target:
            hi *= 2.0
            if hi > 1e300:
                return float("inf")
        lo = hi
        while fn(lo) >= target:
            lo /= 2.0
            if lo < 1e-300:
                return lo
    while hi - lo > 1e-13 * hi:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        reaches = fn(mid) > target if feasible_end else fn(mid) >= target
        if reaches:
            hi = mid
        else:
            lo = mid
    return lo if feasible_end else hi


def _knob_invert(
    params: Params,
    profile: RecordEpsilon,
    k0: float,
    t: np.ndarray,
    cache: dict[tuple[str, float], float] | None = None,
) -> dict[str, Any]:
    """invert's knob for uniform/coreset (spec A4, A6 (iii), A9)."""
    name = _knob_name(params, profile)
    ts = np.atleast_1d(np.asarray(t, dtype=float))
    values: list[float | None] = []
    extra: dict[str, Any] = {}
    for target in ts:
        if name == "expected_size":
            values.append(_size_for_target(params, profile, k0, float(target)))
            continue
        # largest profile scaling k with upper <= target (upper increases with k)
        key = ("up", float(target))
        if cache is not None and key in cache:
            k = cache[key]
        else:
            k = scale_search(
                lambda x: domain_bracket(params, profile, x)[0], float(target), feasible_end=True
            )
        if k <= 0 or not np.isfinite(k):
            values.append(None)
            continue
        if name == "scale":
            values.append(float(numeric.round_up(_given(profile.scale) / k, 2)))
        else:
            values.append(float(numeric.round_down(_given(profile.noise_constant) * k * k, 4)))
            extra = {
                "count_scale": float(numeric.round_up(_given(profile.count_scale) / k, 2)),
                "sum_scale": float(numeric.round_up(_given(profile.sum_scale) / k, 2)),
            }
    value: Any = values[0] if np.ndim(t) == 0 else values
    knob = {"name": name, "value": value, **(extra if np.ndim(t) == 0 else {})}
    return {"knob": knob}


def _size_for_target(
    params: Params, profile: RecordEpsilon, k0: float, target: float
) -> float | None:
    """Smallest m (weight-linear) or largest m (constant) with sup ε̂ <= target."""
    n = _given(params.population)
    hi_m = (
        n if params.probabilities == "uniform" or params.mix == 1.0 else n / max(params.mix, 1e-12)
    )

    def up(m: float) -> float:
        return domain_bracket(params, profile, k0, m)[0]

    lo_m = n * 1e-12
    if profile.linear:
        if up(hi_m) > target:
            return None

        def ok(ms: np.ndarray) -> np.ndarray:
            return np.array([up(float(m)) <= target for m in ms])

        return float(numeric.first_true(ok, np.array([lo_m]), np.array([hi_m]))[0])

    def bad(ms: np.ndarray) -> np.ndarray:
        return np.array([up(float(m)) > target for m in ms])

    first = float(numeric.first_true(bad, np.array([lo_m]), np.array([hi_m]))[0])
    if first == lo_m:
        return None
    return hi_m if not np.isfinite(first) else float(numeric.round_down(first, 1))


def expected_size_at(params: Params, profile: RecordEpsilon, k0: float, eps_star: float) -> float:
    """Σ q*(x) over the file's records at ε* (feasible records only)."""
    z = _profile_norms(params, profile)
    a = numeric.round_up(k0 * profile.coefficients.at(z), 1)
    w = privacy_constrained_weights(a, eps_star)
    w = np.where(np.isnan(w), 1.0, w)
    with np.errstate(divide="ignore"):
        return float(np.sum(np.where(np.isinf(w), 0.0, 1.0 / w)))


def _pc_invert(params: Params, profile: RecordEpsilon, k0: float, t: np.ndarray) -> dict[str, Any]:
    """Expected size a target implies; smallest target a given size allows (spec A6 (i))."""
    ts = np.atleast_1d(np.asarray(t, dtype=float))
    sizes = [expected_size_at(params, profile, k0, float(x)) if x <= 700 else None for x in ts]
    out: dict[str, Any] = {
        "knob": {"name": "expected_size", "value": sizes[0] if np.ndim(t) == 0 else sizes}
    }
    m = params.expected_size
    if m is not None:
        eps_min = float(np.max(_profile_norms(params, profile)))
        start = max(k0 * float(profile.coefficients.at(min(eps_min, params.radius))), 1e-300)

        def ok(e: np.ndarray) -> np.ndarray:
            return np.array([expected_size_at(params, profile, k0, float(x)) <= m for x in e])

        found = float(numeric.first_true(ok, np.array([start]), np.array([700.0]))[0])
        out["target_for_expected_size"] = {
            "expected_size": m,
            "epsilon_prime": found if np.isfinite(found) else None,
            "warning": "choosing ε* from the data's own expected size is itself "
            f"data-dependent: the resulting q* is not a public map ({DERIVATIONS}, §4.7)",
        }
    return out
