"""Poisson importance sampling with personalised privacy (paper 003).

Basis: 003_e3b635228222e4e2.txt (Fay, Mair, Sjölund) Theorem 6 (amplification by
importance sampling), Theorem 10 and Algorithm 1 (privacy-constrained probabilities),
Proposition 13 (DP-Lloyd profile), Definition 14 / Theorem 15 (coreset distribution),
Proposition 3 (uniform Poisson); formulas as rebuilt in
spec importance-and-weighted-sampling.md Part A (the paper's text lost them).

The mechanism is a *privacy profile* ε(w, x) on weighted records (add-remove
neighbours, pure ε). The data set is an input (a record file): per-record figures are
reported in ``details``, while the DP guarantee (``upper``) is the supremum of ε̂ over
a public domain bound ``radius`` (any added record may lie anywhere in it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.records import RecordNorms, open_source, read_norms
from ampcalc.math import numeric
from ampcalc.math.importance import (
    PROFILE_PARAMETERS,
    LinearCoefficients,
    domain_supremum,
    laplace_sum_mse,
    largest_feasible_radius,
    lloyd_noise_constant,
    personalised_epsilon,
    privacy_constrained,
    privacy_constrained_weights,
    profile_coefficients,
    var_opt_probabilities,
)
from ampcalc.model.design import Neighbours
from ampcalc.model.errors import ConditionError, DesignError, Where
from ampcalc.model.references import DERIVATIONS, IMPORTANCE, SU16, cite, derivation
from ampcalc.schemes.base import Analysis, Field, Problem, Scheme

BASIS = (
    cite(IMPORTANCE, "Theorem 6"),
    cite(IMPORTANCE, "Theorem 10"),
    derivation("§4.7"),
)
PROFILES = tuple(PROFILE_PARAMETERS)  # laplace-sum, dp-lloyd, constant
MODES = ("uniform", "coreset", "privacy-constrained", "column")
KNOBS = ("scale", "noise_constant", "expected_size")


# --------------------------------------------------------------------------------------
# The mechanism: a per-record ε
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RecordEpsilon:
    """The per-record ε(w, x) of a mechanism on weighted records (003 Def. 4, A1).

    003 calls ε(w, x) the mechanism's PDP "profile" (the YAML key ``profile:`` names its
    form); it is one ε per record and weight, not a privacy profile δ(ε).

    ``epsilon`` is the declared (reference) ε: the unsampled loss sup_{‖x‖<=r} ε(1, x).
    Sweeps and ``--epsilon`` vary it; the profile is then scaled by ε/``natural``
    (for Laplace: a smaller scale; for DP-Lloyd: a larger noise constant B).

    Attributes:
        kind: ``laplace-sum`` (ε = w‖x‖₁/β), ``dp-lloyd`` (ε = Tw(1/β_c + ‖x‖/β_s),
            Prop. 13) or ``constant`` (ε = ε0, ignores weights; Prop. 3).
        coefficients: ε(1, x) = alpha + slope·‖x‖ at the declared parameters.
        norm: the profile's norm, ``l1`` or ``l2``.
        natural: sup ε(1, x) over the domain at the declared parameters.
        epsilon: the declared ε (equal to ``natural`` unless overridden).
        scale, iterations, count_scale, sum_scale, noise_constant: as declared.
    """

    kind: str
    coefficients: LinearCoefficients
    norm: str
    natural: float
    epsilon: float
    scale: float | None = None
    iterations: int | None = None
    count_scale: float | None = None
    sum_scale: float | None = None
    noise_constant: float | None = None
    dimension: int = 1
    radius: float = 1.0
    delta: float = 0.0
    neighbours: Neighbours = Neighbours.ADD_REMOVE
    releases: Any = None
    epsilon_replace_one: Any = None
    delta_replace_one: Any = None

    @property
    def linear(self) -> bool:
        return self.kind != "constant"

    def epsilon_replace_one_of(self, eps: Any) -> None:
        """No replace-one ε: the profile is an add-remove notion (003 Def. 4)."""
        return None

    def epsilon_add_remove_known(self) -> bool:
        return True

    def replace_one_ratio(self) -> float:
        return 1.0


def _given(value: float | None) -> float:
    """A profile or design figure its kind always sets (e.g. ``scale`` for laplace-sum)."""
    assert value is not None
    return value


_PROFILE_FIELDS = {
    "laplace-sum": (
        Field(name="profile", kind="str", doc="profile name"),
        Field(
            name="scale",
            kind="float",
            doc="Laplace noise scale β",
            required=True,
            low=0.0,
            low_open=True,
        ),
    ),
    "dp-lloyd": (
        Field(name="profile", kind="str", doc="profile name"),
        Field(name="iterations", kind="int", doc="Lloyd iterations T", required=True, low=1),
        Field(
            name="count_scale",
            kind="float",
            doc="count noise scale β_count",
            low=0.0,
            low_open=True,
        ),
        Field(name="sum_scale", kind="float", doc="sum noise scale β_sum", low=0.0, low_open=True),
        Field(
            name="noise_constant",
            kind="float",
            doc=f"noise constant B ({SU16} scales, {DERIVATIONS}, §4.7)",
            low=0.0,
            low_open=True,
        ),
        Field(
            name="norm",
            kind="choice",
            doc="norm of the sum noise",
            default="l2",
            choices=("l2", "l1"),
        ),
    ),
    "constant": (
        Field(name="profile", kind="str", doc="profile name"),
        Field(
            name="epsilon",
            kind="float",
            doc="M's ε (ignores weights)",
            required=True,
            low=0.0,
            low_open=True,
        ),
    ),
}


def parse_mechanism(raw: Any, reader: Any, params: Params) -> RecordEpsilon:
    """Validate the ``mechanism:`` profile block (errors name the YAML line) against the
    design's parsed sampling block ``params`` (its radius and record dimension)."""
    from ampcalc.load.fields import describe, mapping

    data = mapping(raw, reader, "mechanism", None, None, "a privacy profile")
    if "profile" not in data:
        raise reader.error(
            "mechanism",
            f"missing required key 'profile' (one of: {', '.join(PROFILES)})",
            container=data,
        )
    kind = data["profile"]
    if kind not in PROFILES:
        import difflib

        close = difflib.get_close_matches(str(kind), PROFILES, n=1)
        raise reader.error(
            "mechanism.profile",
            f"expected one of {', '.join(PROFILES)}, got {describe(kind)}",
            container=data,
            key="profile",
            hint=f"did you mean '{close[0]}'?" if close else None,
        )
    values = reader.fields(data, _PROFILE_FIELDS[kind], "mechanism", f"mechanism ({kind})")
    r, d = params.radius, params.data.dimension
    if kind == "dp-lloyd":
        given = [values[k] is not None for k in ("count_scale", "sum_scale")]
        b = values["noise_constant"]
        if b is not None and any(given):
            raise reader.error(
                "mechanism.noise_constant",
                f"give either `noise_constant` (B; {SU16} scales) or "
                "`count_scale` and `sum_scale`, not both",
                container=data,
                key="noise_constant",
            )
        if b is None and not all(given):
            missing = "count_scale" if not given[0] else "sum_scale"
            raise reader.error(
                "mechanism",
                f"missing required key {missing!r} (or give `noise_constant` B instead)",
                container=data,
            )
        if b is not None and d < 1:
            raise reader.error(
                "mechanism.noise_constant",
                "B sets the noise scales from the record dimension, unknown here (the "
                "records are not a file): give `count_scale` and `sum_scale`, or `columns:`",
                container=data,
                key="noise_constant",
            )
    coef, norm, scales = profile_coefficients(kind, values, d, r)
    extra: dict[str, Any] = {}
    if kind == "laplace-sum":
        extra["scale"] = values["scale"]
    if scales is not None:  # dp-lloyd: both scales and B, whichever was given
        t, (bc, bs) = values["iterations"], scales
        b = values["noise_constant"]
        if b is None:
            b = lloyd_noise_constant(bs, d, r, t)
        extra.update(iterations=t, count_scale=bc, sum_scale=bs, noise_constant=b)
    natural = float(coef.at(r))
    return RecordEpsilon(
        kind=kind,
        coefficients=coef,
        norm=norm,
        natural=natural,
        epsilon=natural,
        dimension=d,
        radius=r,
        **extra,
    )


# --------------------------------------------------------------------------------------
# The sampling block
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, kw_only=True)
class Params:
    """Poisson importance sampling of the records of a file (003 Def. 5).

    Each record x is kept independently with probability q(x) and weighted by
    w = 1/q(x). q must be a public map fixed before seeing the data (spec A4).

    Attributes:
        records: the record file (CSV or .npy), as written in the design.
        columns: record columns (names or 0-based indices); all numeric by default.
        probabilities: ``uniform`` (q = m/N), ``coreset`` (q = λm/N +
            (1−λ)m‖x‖₂²/(N x̃), Def. 14, spec A10), ``privacy-constrained``
            (q* = 1/w*, Theorem 10, calibrated to ``target.epsilon_prime``) or
            ``column`` (q read from ``probability_column``).
        radius: public bound r on the profile's norm of any record (the domain).
        expected_size: m (uniform/coreset); for privacy-constrained, optional: the
            size for which the smallest target is reported.
        population: public population size N (uniform/coreset).
        mix: λ of the coreset map (1 = uniform).
        mean_sq_norm: public x̃ = mean ‖x‖₂² of the coreset map.
        probability_column: the column of q (``column``).
        min_probability: public floor on q (``column``): without it no guarantee.
        max_probability: public ceiling on q (``column``): bounds a weight-free
            (``constant``) profile's loss, A(max q, ε) (003 App. A, Prop. 3).
        knob: what ``invert`` solves for (scale | noise_constant | expected_size).
        data: the file's per-record norms (read at load time).
        target_epsilon: ε* from the design's ``target:`` block (privacy-constrained).
    """

    records: str
    columns: Any
    probabilities: str
    radius: float
    expected_size: float | None
    population: float | None
    mix: float
    mean_sq_norm: float | None
    probability_column: Any
    min_probability: float | None
    max_probability: float | None
    knob: str | None
    data: RecordNorms
    target_epsilon: float | None = None


FIELDS = (
    Field(
        name="records",
        kind="str",
        doc="record file (CSV or .npy), one record a row",
        required=True,
    ),
    Field(name="columns", kind="any", doc="record columns (names or 0-based indices)"),
    Field(name="probabilities", kind="choice", doc="the map q(x)", required=True, choices=MODES),
    Field(
        name="radius",
        kind="float",
        doc="public bound on the profile's norm of a record",
        required=True,
        low=0.0,
        low_open=True,
    ),
    Field(
        name="expected_size", kind="float", doc="expected sample size m", low=0.0, low_open=True
    ),
    Field(name="population", kind="float", doc="public population size N", low=0.0, low_open=True),
    Field(
        name="mix", kind="float", doc="coreset mix λ (1 = uniform)", default=0.5, low=0.0, high=1.0
    ),
    Field(
        name="mean_sq_norm",
        kind="float",
        doc="public mean squared ℓ2 norm x̃ (coreset)",
        low=0.0,
        low_open=True,
    ),
    Field(name="probability_column", kind="any", doc="column holding q (column mode)"),
    Field(
        name="min_probability",
        kind="float",
        doc="public floor on q (column mode)",
        low=0.0,
        high=1.0,
        low_open=True,
    ),
    Field(
        name="max_probability",
        kind="float",
        doc="public ceiling on q (column mode): bounds a constant profile's loss",
        low=0.0,
        high=1.0,
        low_open=True,
    ),
    Field(name="knob", kind="choice", doc="what invert solves for", choices=KNOBS),
)


def _error(reader: Any, key: str, message: str) -> Exception:
    """A DesignError at ``sampling.<key>``, with the line the loader recorded for it."""
    from ampcalc.model.errors import DesignError

    path = f"sampling.{key}" if key else "sampling.probabilities"
    where = reader.field_where.get(path) or reader.field_where.get("sampling.probabilities")
    return DesignError(message, where=where) if where else reader.error(path, message)


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Read the record file and check the cross-field rules (errors name the line)."""
    mode = values["probabilities"]

    def err_at(key: str) -> Any:
        return lambda msg: _error(reader, key, msg)

    need = {
        "uniform": ("expected_size", "population"),
        "coreset": ("expected_size", "population", "mean_sq_norm"),
        "column": ("probability_column",),
        "privacy-constrained": (),
    }[mode]
    for key in need:
        if values[key] is None:
            raise _error(
                reader,
                "",
                f"`probabilities: {mode}` needs `{key}`"
                + (
                    " (public: fixed before seeing the data; `ampcalc weights --suggest` "
                    "computes a planning value)"
                    if key == "mean_sq_norm"
                    else ""
                ),
            )
    if mode != "column" and values["probability_column"] is not None:
        raise _error(
            reader, "probability_column", "`probability_column` is for `probabilities: column`"
        )
    for key in ("min_probability", "max_probability"):
        if mode != "column" and values[key] is not None:
            raise _error(reader, key, f"`{key}` is for `probabilities: column`")
    lo_p, hi_p = values["min_probability"], values["max_probability"]
    if lo_p is not None and hi_p is not None and lo_p > hi_p:
        raise _error(
            reader,
            "max_probability",
            f"max_probability {hi_p:g} is below min_probability {lo_p:g}",
        )
    path = reader.resolve(values["records"])
    src = open_source(path, values["columns"], values["probability_column"], err_at("records"))
    data = read_norms(src, err_at("records"))
    m, n_pop = values["expected_size"], values["population"]
    if mode in ("uniform", "coreset") and m > n_pop:
        raise _error(
            reader,
            "expected_size",
            f"expected size {m:g} exceeds the population {n_pop:g} (q = m/N must be <= 1)",
        )
    if mode == "privacy-constrained" and m is not None and not data.deferred and m > data.count:
        raise _error(
            reader,
            "expected_size",
            f"expected size {m:g} exceeds the {data.count} records of the file",
        )
    if mode == "column":
        p = data.probability
        assert p is not None
        bad = (p <= 0) | (p > 1)
        floor = values["min_probability"]
        ceiling = values["max_probability"]
        if floor is not None:
            bad |= p < floor
        if ceiling is not None:
            bad |= p > ceiling
        if bad.any():
            i = int(np.argmax(bad))
            low = f"[{floor:g}" if floor is not None else "(0"
            what = f"{low}, {ceiling:g}]" if ceiling is not None else f"{low}, 1]"
            raise _error(
                reader,
                "probability_column",
                f"{path}: record {i} (0-based) has probability {float(p[i])!r}; expected {what}",
            )
    return Params(**values, data=data)


def check(params: Params) -> list[Problem]:
    """Cross-field rules that need no file access."""
    return []


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

    Basis: 003_e3b635228222e4e2.txt Theorem 6 (per point), sup over the domain
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


def analyse(params: Params, profile: RecordEpsilon, guarantee: Neighbours) -> Analysis:
    """Bounds for one importance-sampling design (Theorem 6 / Theorem 10)."""
    mode = params.probabilities
    k0 = profile.epsilon / profile.natural
    if mode == "coreset" and params.mix == 0.0 and profile.linear:
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
    conditions = _conditions(params, profile)
    warnings: list[str] = []
    notes: list[str] = []
    r = params.radius

    def ref(eps: np.ndarray) -> np.ndarray:
        return np.asarray(eps, dtype=float)

    def scaled(eps: np.ndarray, fn: Any) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        flat = [fn(float(e) / profile.natural) for e in eps.ravel()]
        return np.asarray(flat, dtype=float).reshape(eps.shape)

    details: dict[str, Any] = {"probabilities": mode, "profile": profile.kind, "radius": r}
    if profile.kind == "laplace-sum":
        details["scale"] = _given(profile.scale) / k0
    if profile.kind == "dp-lloyd":
        details["noise_constant"] = _given(profile.noise_constant) * k0 * k0
        details["count_scale"] = _given(profile.count_scale) / k0
        details["sum_scale"] = _given(profile.sum_scale) / k0
    calibrated = False
    upper: Callable[[np.ndarray], np.ndarray] | None
    certified = None
    impossible_above = None
    eps_star: float | None = None
    invert_details = None

    if mode == "privacy-constrained":
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
        calibrated = True
        conditions.append(
            f"Assumption 8: ε(1, x) <= ε* = {eps_star:g} for every ‖x‖ <= r "
            f"(largest feasible radius {feasible_r:.6g})"
        )
        conditions.append("Assumption 9/11: the profile is weight-linear (Lambert-W solution)")

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

            return scaled(eps, one)

        def certified(t: np.ndarray) -> np.ndarray:
            t = np.asarray(t, dtype=float)
            return np.where(t >= eps_star, t, np.nan)

        fig = record_figures(params, profile, k0, eps_star)
        details["target_epsilon_prime"] = eps_star
        details["feasible_radius"] = feasible_r
        notes.append(
            "q*(x) = 1/w*(x) depends only on ε(·, x) and ε*, so it is a public map "
            f"({IMPORTANCE}, Theorem 10); every record's ε̂ is certified <= ε* as evaluated "
            f"(the feasible end, not a bisection midpoint: {DERIVATIONS}, §4.7)"
        )

        if params.expected_size is not None:
            warnings.append(
                "`expected_size` with privacy-constrained probabilities: invert reports the "
                "smallest ε* that size allows (details.target_for_expected_size); choosing "
                f"ε* from the data's own expected size is itself data-dependent ({DERIVATIONS}, "
                "§4.7)"
            )

        def invert_details(t: np.ndarray) -> dict[str, Any]:
            return _pc_invert(params, profile, k0, t)

    elif mode == "column":
        fig = record_figures(params, profile, k0)
        p0 = params.min_probability
        p1 = params.max_probability
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

                return scaled(eps, one)

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

            return scaled(eps, one)

        warnings.append(
            "`probabilities: column`: the guarantee holds only if the column's q was fixed "
            f"by a public rule before seeing the data ({DERIVATIONS}, §4.7)"
        )
    else:
        fig = record_figures(params, profile, k0)

        def upper(eps: np.ndarray) -> np.ndarray:
            return scaled(eps, lambda k: domain_bracket(params, profile, k)[0])

        def lower(eps: np.ndarray) -> np.ndarray:
            return scaled(eps, lambda k: domain_bracket(params, profile, k)[1])

        hi, lo, zmax = domain_bracket(params, profile, k0)
        details["domain_argmax_norm"] = zmax
        details["domain_gap"] = hi - lo
        if mode == "coreset":
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

    rec = _record_details(params, fig)
    details.update(rec)
    if rec["infeasible_records"]:
        rows = ", ".join(str(i) for i in rec["infeasible_rows"])
        warnings.append(
            f"{rec['infeasible_records']} record(s) of the file lie outside the domain "
            f"(profile norm > r = {r:g}{' or infeasible for ε*' if eps_star else ''}); "
            f"first rows (0-based): {rows}. They are not clipped: their ε̂ is in the "
            "quantiles and may exceed the guarantee"
        )
    # Built here, not by ``assembly.assemble``: ε′ is a quantile over the records' own
    # ε̂ (a per-record ε, not one mechanism ε under a relation), and its inverse
    # recalibrates the design's knob (``_knob_invert``) rather than inverting a formula.
    return Analysis(
        guarantee_neighbours=Neighbours.ADD_REMOVE,
        reference_epsilon=ref,
        upper=upper,
        lower=lower,
        delta_prime=lambda eps: np.zeros(np.shape(eps)),
        certified=certified,
        impossible_above=impossible_above,
        basis=BASIS,
        conditions=tuple(conditions),
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
        calibrated=calibrated,
        invert_details=invert_details,
        # Assumption 8 (the domain is feasible for ε*) is checked at M's ε
        pointwise=mode == "privacy-constrained",
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
    return hi_m if not np.isfinite(first) else float(np.nextafter(first, 0.0))


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


# --------------------------------------------------------------------------------------
# compare columns
# --------------------------------------------------------------------------------------


def compare(design: Any, target: float, res: Any = None) -> dict[str, Any]:
    """uniform vs coreset vs privacy-constrained at the expected size ε* = target implies.

    Columns per strategy: max per-record ε̂ of the file, the domain guarantee, and for
    the Laplace sum the total MSE Σ(1/q − 1)‖x‖₂² + 2dβ² (spec A8).
    """
    params: Params = design.params
    profile: RecordEpsilon = design.mechanism
    k0 = profile.epsilon / profile.natural
    n = params.data.count
    m = expected_size_at(params, profile, k0, target)
    xbar = params.mean_sq_norm or float(np.mean(params.data.sq_l2))
    rows: dict[str, Any] = {}
    for mode in ("uniform", "coreset", "privacy-constrained"):
        p = dataclasses.replace(
            params,
            probabilities=mode,
            expected_size=m if mode != "privacy-constrained" else None,
            population=float(n),
            mean_sq_norm=xbar,
            mix=0.5 if mode == "coreset" else params.mix,
        )
        fig = record_figures(p, profile, k0, target)
        row: dict[str, Any] = {
            "expected_size": float(np.sum(fig.q)),
            "max_epsilon_hat": float(np.max(fig.eps_hat)),
        }
        if mode == "privacy-constrained":
            row["upper"] = target if profile.epsilon <= target else None
        else:
            row["upper"] = domain_bracket(p, profile, k0)[0]
        if profile.kind == "laplace-sum":
            row["mse"] = laplace_sum_mse(
                fig.q, params.data.sq_l2, _given(profile.scale) / k0, params.data.dimension
            )
        rows[mode] = row
    if profile.kind == "laplace-sum":
        # the data-dependent variance-optimal benchmark (not DP: spec A8), for reference
        qv = var_opt_probabilities(np.sqrt(params.data.sq_l2), m)
        z = _profile_norms(params, profile)
        a = numeric.round_up(k0 * profile.coefficients.at(z), 1)
        rows["var-opt (not DP)"] = {
            "expected_size": float(np.sum(qv)),
            "max_epsilon_hat": float(np.max(personalised_epsilon(qv, a))),
            "upper": None,
            "mse": laplace_sum_mse(
                qv, params.data.sq_l2, _given(profile.scale) / k0, params.data.dimension
            ),
        }
    return {"expected_size": m, "target_epsilon_prime": target, "strategies": rows}


SCHEME = Scheme(
    name="importance",
    summary="Poisson importance sampling of a record file, personalised privacy profile",
    params=Params,
    fields=FIELDS,
    mechanism_relation="add-remove (a privacy profile ε(w, x))",
    guarantees=(Neighbours.ADD_REMOVE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={},
    mechanism_form="custom",
    parse_params=parse_params,
    parse_mechanism=parse_mechanism,
    compare=compare,
    bind_target=bind_target,
)
