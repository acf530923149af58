"""Importance sampling's bounds: the per-record figures and ``analyse`` (Theorem 6 over
the public domain bound), and the target a design binds."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.math.importance import (
    LinearCoefficients,
    largest_feasible_radius,
    personalised_epsilon,
    privacy_constrained,
    privacy_constrained_weights,
)
from ampcalc.model.design import Neighbours
from ampcalc.model.errors import ConditionError, DesignError, Where
from ampcalc.model.references import DERIVATIONS, IMPORTANCE
from ampcalc.schemes.base import Analysis
from ampcalc.schemes.importance.domain import (
    _each,
    _knob_invert,
    _map,
    _pc_invert,
    _profile_norms,
    _raw_norms,
    domain_bracket,
    scale_search,
)
from ampcalc.schemes.importance.params import (
    BASIS,
    Params,
    RecordEpsilon,
    _given,
)


@dataclass(frozen=True, kw_only=True)
class RecordFigures:
    """Per-record figures of one design at one profile scaling."""

    q: np.ndarray
    w: np.ndarray
    eps_hat: np.ndarray
    outside: np.ndarray


def record_figures(
    params: Params,
    profile: RecordEpsilon,
    k: float = 1.0,
    eps_star: float | None = None,
    threads: int = 1,
) -> RecordFigures:
    """q(x), w(x) = 1/q(x) and ε̂(x) (rounded up) for every record of the file
    (``threads``: the privacy-constrained weights' blocks on that many threads).

    privacy-constrained: w* from Theorem 10 / spec A7 (certified ε̂ <= ε*); records
    outside the feasible set get q = 1 (no sampling) and ε̂ = ε(1, x), and are flagged.
    """
    z = _profile_norms(params, profile)
    a = k * profile.coefficients.at(z)
    a = numeric.round_up(a, 1) if profile.linear else np.full(z.shape, a)
    outside = _raw_norms(params, profile) > params.radius
    mode = params.probabilities
    if mode == "privacy-constrained":
        assert eps_star is not None
        # certified: eps_hat_upper_w(a, w) where 0 < a <= ε*
        w, certified = privacy_constrained(a, eps_star, threads=threads)
        infeasible = np.isnan(w)
        w = np.where(infeasible, 1.0, w)
        with np.errstate(divide="ignore"):
            q = np.where(np.isinf(w), 0.0, 1.0 / w)
        outside = outside | infeasible
        eps_hat = np.where(infeasible, a, certified)
        eps_hat = np.where(np.isinf(w), 0.0, eps_hat)
        return RecordFigures(q=q, w=w, eps_hat=eps_hat, outside=outside)
    elif mode == "column":
        column = params.data.probability
        assert column is not None
        q = column
        w = 1.0 / q
    else:
        q = _map(params)(np.sqrt(params.data.sq_l2))
        w = 1.0 / q
    eps_hat = personalised_epsilon(q, a, linear=profile.linear)
    return RecordFigures(q=q, w=w, eps_hat=eps_hat, outside=outside)


def _record_details(params: Params, fig: RecordFigures) -> dict[str, Any]:
    e = fig.eps_hat
    p50, p90, p99 = np.quantile(e, [0.5, 0.9, 0.99]) if e.size else (0.0, 0.0, 0.0)
    kk = min(5, e.size)
    part = np.argpartition(e, e.size - kk)[e.size - kk :]
    top = part[np.argsort(e[part])[::-1]]
    out_rows = np.flatnonzero(fig.outside)
    return {
        "records": params.data.count,
        "dimension": params.data.dimension,
        "expected_size": float(np.sum(fig.q)),
        "quantiles": {
            "p50": float(p50),
            "p90": float(p90),
            "p99": float(p99),
            "max": float(np.max(e)),
        },
        "max_records": [{"row": int(i), "epsilon_hat": float(e[i])} for i in top],
        "infeasible_records": int(out_rows.size),
        "infeasible_rows": [int(i) for i in out_rows[:10]],
    }


def _conditions(params: Params, profile: RecordEpsilon) -> list[str]:
    return [
        "M satisfies the declared profile ε(w, x) on weighted records under add-remove "
        f"neighbours ({IMPORTANCE}, Def. 4; profile {profile.kind})",
        "q(·) is a public map of the record alone, fixed before seeing the data "
        f"({IMPORTANCE}, Def. 5; {DERIVATIONS}, §4.7); the sample and q are not published",
        f"every record of the domain has profile norm ‖x‖ <= r = {params.radius:g} "
        f"({profile.norm}; public bound)",
    ]


@dataclass(kw_only=True)
class _Mode:
    """What one probability mode adds to the analysis: its bounds, inverses and remarks
    (appended after the shared conditions and details, before the file's warning)."""

    fig: RecordFigures
    upper: Callable[[np.ndarray], np.ndarray] | None
    lower: Callable[[np.ndarray], np.ndarray]
    certified: Callable[[np.ndarray], np.ndarray] | None = None
    impossible_above: Callable[[np.ndarray], np.ndarray] | None = None
    invert_details: Callable[[np.ndarray], dict[str, Any]] | None = None
    eps_star: float | None = None
    calibrated: bool = False
    conditions: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    details: dict[str, Any] = dataclasses.field(default_factory=dict)


def _reference(eps: np.ndarray) -> np.ndarray:
    """M's ε as given (the profile's ε(1, x) supremum is the reference)."""
    return np.asarray(eps, dtype=float)


def _zero_delta(eps: np.ndarray) -> np.ndarray:
    """δ′ = 0: the profile is pure ε."""
    return np.zeros(np.shape(eps))


def _scaled(eps: np.ndarray, fn: Any, natural: float) -> np.ndarray:
    """``fn`` at each ε as a scaling k = ε/natural of the profile."""
    eps = np.asarray(eps, dtype=float)
    flat = [fn(float(e) / natural) for e in eps.ravel()]
    return np.asarray(flat, dtype=float).reshape(eps.shape)


def _check_design(params: Params, profile: RecordEpsilon) -> None:
    """Refuse a coreset map without a floor on a weight-linear profile, and a knob the
    profile does not have."""
    if params.probabilities == "coreset" and params.mix == 0.0 and profile.linear:
        raise ConditionError(
            f"{IMPORTANCE}, Theorem 6 over the domain: with `mix: 0` the coreset "
            "map gives q(x) → 0 as ‖x‖ → 0, and ε̂ = log(1 + q(e^{ε(1/q, x)} − 1)) grows "
            f"without bound for a weight-linear profile; use mix > 0 ({DERIVATIONS}, §4.7: the "
            "maximum "
            "exists because λm/N > 0)"
        )
    knobs: tuple[str, ...] = {"laplace-sum": ("scale",), "dp-lloyd": ("noise_constant",)}.get(
        profile.kind, ()
    )
    knobs += ("expected_size",)
    if params.knob is not None and params.knob not in knobs:
        raise DesignError(
            f"`knob: {params.knob}` does not apply to `profile: {profile.kind}`; expected "
            f"one of: {', '.join(knobs)}",
            where=Where(field="sampling.knob"),
        )


def _profile_details(params: Params, profile: RecordEpsilon, k0: float) -> dict[str, Any]:
    """The mode, the profile and its knobs at the declared scaling k0."""
    details: dict[str, Any] = {
        "probabilities": params.probabilities,
        "profile": profile.kind,
        "radius": params.radius,
    }
    if profile.kind == "laplace-sum":
        details["scale"] = _given(profile.scale) / k0
    if profile.kind == "dp-lloyd":
        details["noise_constant"] = _given(profile.noise_constant) * k0 * k0
        details["count_scale"] = _given(profile.count_scale) / k0
        details["sum_scale"] = _given(profile.sum_scale) / k0
    return details


def _feasible_target(params: Params, profile: RecordEpsilon, k0: float) -> tuple[float, float]:
    """Theorem 10's target ε* and the largest feasible radius, after its assumptions are
    checked (a weight-linear profile, ε* in range, the domain feasible for ε*)."""
    r = params.radius
    if not profile.linear:
        raise ConditionError(
            f"{IMPORTANCE}, Theorem 10: Assumption 9 fails for a profile "
            "that ignores weights (ε̂ falls to 0 as w grows, so the optimum is q → 0); "
            "use `probabilities: uniform` (Proposition 3)"
        )
    eps_star = _target_of(params)
    if eps_star > 700.0:
        raise ConditionError(
            f"{IMPORTANCE}, Theorem 10: ε* above 700 is outside the supported "
            "range (e^{ε*} overflows); such a target gives no meaningful protection"
        )
    coef = profile.coefficients
    feasible_r = largest_feasible_radius(
        LinearCoefficients(k0 * coef.alpha, k0 * coef.slope), eps_star
    )
    if profile.epsilon > eps_star:
        where = (
            f"the largest feasible radius is {feasible_r:.6g}"
            if feasible_r >= 0
            else "no radius is feasible (ε(1, 0) already exceeds ε*)"
        )
        raise ConditionError(
            f"{IMPORTANCE}, Theorem 10, Assumption 8: the domain is "
            f"infeasible: sup_(‖x‖<=r) ε(1, x) = {profile.epsilon:.6g} > ε* = "
            f"{eps_star:g} at r = {r:g}; {where}"
        )
    return eps_star, feasible_r


def _privacy_constrained(params: Params, profile: RecordEpsilon, k0: float) -> _Mode:
    """Theorem 10: q*(x) calibrated to the target ε*; the guarantee is max(ε*, ε)."""
    r = params.radius
    eps_star, feasible_r = _feasible_target(params, profile, k0)
    coef = profile.coefficients
    conditions = [
        f"Assumption 8: ε(1, x) <= ε* = {eps_star:g} for every ‖x‖ <= r "
        f"(largest feasible radius {feasible_r:.6g})",
        "Assumption 9/11: the profile is weight-linear (Lambert-W solution)",
    ]

    def upper(eps: np.ndarray) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        out: np.ndarray = np.maximum(eps_star, e)
        return out

    def lower(eps: np.ndarray) -> np.ndarray:
        def one(k: float) -> float:
            a = numeric.round_down(k * coef.at(r), 1)
            if a > eps_star:
                return float(a)
            w = privacy_constrained_weights(np.array([a]), eps_star)
            return float(personalised_epsilon(1.0 / w, a, rounding="down")[0])

        return _scaled(eps, one, profile.natural)

    def certified(t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        return np.where(t >= eps_star, t, np.nan)

    fig = record_figures(params, profile, k0, eps_star)
    notes = [
        "q*(x) = 1/w*(x) depends only on ε(·, x) and ε*, so it is a public map "
        f"({IMPORTANCE}, Theorem 10); every record's ε̂ is certified <= ε* as evaluated "
        f"(the feasible end, not a bisection midpoint: {DERIVATIONS}, §4.7)"
    ]
    warnings = []
    if params.expected_size is not None:
        warnings.append(
            "`expected_size` with privacy-constrained probabilities: invert reports the "
            "smallest ε* that size allows (details.target_for_expected_size); choosing "
            f"ε* from the data's own expected size is itself data-dependent ({DERIVATIONS}, "
            "§4.7)"
        )

    def invert_details(t: np.ndarray) -> dict[str, Any]:
        return _pc_invert(params, profile, k0, t)

    return _Mode(
        fig=fig,
        upper=upper,
        lower=lower,
        certified=certified,
        invert_details=invert_details,
        eps_star=eps_star,
        calibrated=True,
        conditions=conditions,
        warnings=warnings,
        notes=notes,
        details={"target_epsilon_prime": eps_star, "feasible_radius": feasible_r},
    )


def _column_lower(
    params: Params, profile: RecordEpsilon, fig: RecordFigures
) -> Callable[[np.ndarray], np.ndarray]:
    """The column mode's lower bound: the largest ε̂ of the file's records in the domain."""
    # a record is in the domain when its norm, as computed from the values read,
    # is <= r: the comparison that counts `infeasible_records` (a record at exactly
    # the radius belongs to the domain). Its ε(1, x) for the lower bound uses the
    # norm rounded down (the round-up of ``_profile_norms`` is for guarantees and
    # would push a record at the radius out of the domain).
    inside = ~fig.outside
    z_low = numeric.round_down(_raw_norms(params, profile), 16)

    def lower(eps: np.ndarray) -> np.ndarray:
        if not inside.any():
            return np.zeros(np.shape(eps))

        def one(k: float) -> float:
            a = numeric.round_down(k * profile.coefficients.at(z_low[inside]), 1)
            e = personalised_epsilon(fig.q[inside], a, linear=profile.linear, rounding="down")
            return float(np.max(e))

        return _scaled(eps, one, profile.natural)

    return lower


def _column(params: Params, profile: RecordEpsilon, k0: float) -> _Mode:
    """q read from the file's column: the domain guarantee needs a public floor
    (weight-linear profiles) or ceiling (weight-free ones)."""
    r = params.radius
    fig = record_figures(params, profile, k0)
    p0 = params.min_probability
    p1 = params.max_probability
    conditions: list[str] = []
    warnings: list[str] = []
    details: dict[str, Any] = {}
    upper: Callable[[np.ndarray], np.ndarray] | None
    if p1 is not None and profile.linear:
        warnings.append(
            f"max_probability = {p1:g} does not bound a weight-linear profile's loss "
            f"(ε̂ decreases in q: the worst record has the smallest q, {IMPORTANCE}, App. "
            "A); it is "
            "checked against the column only"
        )
    if p0 is None and profile.linear:
        warnings.append(
            "`probabilities: column` without a public `min_probability`: an added "
            "record's q is unknown, so no domain guarantee exists (ε̂ grows without "
            "bound as q → 0 for weight-linear profiles); per-record figures only"
        )
        upper = None
    else:

        def upper(eps: np.ndarray) -> np.ndarray:
            def one(k: float) -> float:
                a = numeric.round_up(k * profile.coefficients.at(r), 2)
                if not profile.linear:
                    if p1 is None:
                        return float(a)  # q may be 1 for an added record
                    # weight-free: ε̂ = A(q, ε) increases in q (Prop. 3)
                    return float(personalised_epsilon(np.array([p1]), a, linear=False)[0])
                return float(personalised_epsilon(np.array([p0]), a)[0])

            return _scaled(eps, one, profile.natural)

        if p0 is not None:
            conditions.append(f"every q(x) >= min_probability = {p0:g} (public floor)")
        if p1 is not None and not profile.linear:
            conditions.append(
                f"every q(x) <= max_probability = {p1:g} (public ceiling), an added "
                "record's included: a weight-free profile loses A(q, ε) = log(1 + "
                f"q(e^ε − 1)), largest at the largest q ({IMPORTANCE}, App. A, Proposition 3)"
            )
            details["max_probability"] = p1
        elif not profile.linear:
            warnings.append(
                "constant profile with `probabilities: column` and no public "
                "`max_probability`: an added record may have q = 1, so the guarantee is "
                "the unsampled ε (give `max_probability` for the amplified bound)"
            )
    lower = _column_lower(params, profile, fig)
    warnings.append(
        "`probabilities: column`: the guarantee holds only if the column's q was fixed "
        f"by a public rule before seeing the data ({DERIVATIONS}, §4.7)"
    )
    return _Mode(
        fig=fig,
        upper=upper,
        lower=lower,
        conditions=conditions,
        warnings=warnings,
        details=details,
    )


def _public_map(params: Params, profile: RecordEpsilon, k0: float) -> _Mode:
    """A public map q(x) (uniform or coreset): Theorem 6 bracketed over the domain, its
    inverse a search over the profile's scaling."""
    r = params.radius
    fig = record_figures(params, profile, k0)
    details: dict[str, Any] = {}
    warnings: list[str] = []
    notes: list[str] = []

    def upper(eps: np.ndarray) -> np.ndarray:
        return _scaled(eps, lambda k: domain_bracket(params, profile, k)[0], profile.natural)

    def lower(eps: np.ndarray) -> np.ndarray:
        return _scaled(eps, lambda k: domain_bracket(params, profile, k)[1], profile.natural)

    hi, lo, zmax = domain_bracket(params, profile, k0)
    details["domain_argmax_norm"] = zmax
    details["domain_gap"] = hi - lo
    if params.probabilities == "coreset":
        xbar_data = float(np.mean(params.data.sq_l2))
        details["data_mean_sq_norm"] = xbar_data
        qr = _map(params)(np.array([r]))[0]
        if qr >= 1.0:
            notes.append(
                "the coreset map reaches q = 1 inside the domain (m > N/(λ + "
                f"(1−λ)r²/x̃)); q is capped at 1 there ({DERIVATIONS}, §4.7)"
            )
    if profile.linear:
        warnings.append(
            "for weight-linear profiles ε̂ >= ε(1, x): importance sampling does not "
            f"amplify them ({IMPORTANCE}, App. A; {DERIVATIONS}, §4.7); it buys a smaller "
            "sample"
        )

    cache: dict[tuple[str, float], float] = {}

    def upper_k(k: float) -> float:
        return domain_bracket(params, profile, k)[0]

    def lower_k(k: float) -> float:
        return domain_bracket(params, profile, k)[1]

    def certified(t: np.ndarray) -> np.ndarray:
        def one(target: float) -> float:
            key = ("up", target)
            if key not in cache:
                cache[key] = scale_search(upper_k, target, feasible_end=True)
            return cache[key] * profile.natural

        return _each(t, one)

    def impossible_above(t: np.ndarray) -> np.ndarray:
        def one(target: float) -> float:
            k = scale_search(lower_k, target, feasible_end=False)
            return k * profile.natural

        return numeric.round_up(_each(t, one), 1)

    def invert_details(t: np.ndarray) -> dict[str, Any]:
        return _knob_invert(params, profile, k0, t, cache)

    return _Mode(
        fig=fig,
        upper=upper,
        lower=lower,
        certified=certified,
        impossible_above=impossible_above,
        invert_details=invert_details,
        warnings=warnings,
        notes=notes,
        details=details,
    )


def _outside_warning(rec: dict[str, Any], r: float, eps_star: float | None) -> str | None:
    """The warning about the file's records outside the domain (None when there are none)."""
    if not rec["infeasible_records"]:
        return None
    rows = ", ".join(str(i) for i in rec["infeasible_rows"])
    return (
        f"{rec['infeasible_records']} record(s) of the file lie outside the domain "
        f"(profile norm > r = {r:g}{' or infeasible for ε*' if eps_star else ''}); "
        f"first rows (0-based): {rows}. They are not clipped: their ε̂ is in the "
        "quantiles and may exceed the guarantee"
    )


_MODES = {"privacy-constrained": _privacy_constrained, "column": _column}


def analyse(params: Params, profile: RecordEpsilon, guarantee: Neighbours) -> Analysis:
    """Bounds for one importance-sampling design (Theorem 6 / Theorem 10)."""
    k0 = profile.epsilon / profile.natural
    _check_design(params, profile)
    conditions = _conditions(params, profile)
    details = _profile_details(params, profile, k0)
    mode = _MODES.get(params.probabilities, _public_map)(params, profile, k0)
    details.update(mode.details)
    rec = _record_details(params, mode.fig)
    details.update(rec)
    outside = _outside_warning(rec, params.radius, mode.eps_star)
    warnings = mode.warnings + ([outside] if outside is not None else [])
    # Built here, not by ``assembly.assemble``: ε′ is a quantile over the records' own
    # ε̂ (a per-record ε, not one mechanism ε under a relation), and its inverse
    # recalibrates the design's knob (``_knob_invert``) rather than inverting a formula.
    return Analysis(
        guarantee_neighbours=Neighbours.ADD_REMOVE,
        reference_epsilon=_reference,
        upper=mode.upper,
        lower=mode.lower,
        delta_prime=_zero_delta,
        certified=mode.certified,
        impossible_above=mode.impossible_above,
        basis=BASIS,
        conditions=tuple(conditions + mode.conditions),
        warnings=tuple(warnings),
        notes=tuple(mode.notes),
        details=details,
        calibrated=mode.calibrated,
        invert_details=mode.invert_details,
        # Assumption 8 (the domain is feasible for ε*) is checked at M's ε
        pointwise=params.probabilities == "privacy-constrained",
    )


def _target_of(params: Params) -> float:
    t = params.target_epsilon
    if t is None:
        raise ConditionError(
            f"{IMPORTANCE}, Theorem 10: `probabilities: privacy-constrained` "
            "needs the ε* every record must meet: add `target: {epsilon_prime: ...}`"
        )
    return float(t)


def bind_target(params: Params, target: Any) -> Params:
    """The params with ε* of the design's ``target:`` block attached."""
    eps = getattr(target, "epsilon_prime", None) if target is not None else None
    if eps == params.target_epsilon:
        return params
    return dataclasses.replace(params, target_epsilon=eps)
