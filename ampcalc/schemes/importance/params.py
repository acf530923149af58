"""Importance sampling's design: the per-record ε profile (the mechanism) and the
sampling parameters, as the design file states them, with their checks."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.fields import describe, mapping
from ampcalc.load.records import RecordNorms, open_source, read_norms
from ampcalc.math.importance import (
    PROFILE_PARAMETERS,
    LinearCoefficients,
    lloyd_noise_constant,
    profile_coefficients,
)
from ampcalc.model.design import Neighbours
from ampcalc.model.errors import DesignError
from ampcalc.model.references import DERIVATIONS, IMPORTANCE, SU16, cite, derivation
from ampcalc.schemes.base import Field, Problem

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
    """The per-record ε(w, x) of a mechanism on weighted records (the importance-sampling
    paper, Def. 4, A1).

    The importance-sampling paper calls ε(w, x) the mechanism's PDP "profile" (the YAML key
    ``profile:`` names its form); it is one ε per record and weight, not a privacy profile δ(ε).

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
        """No replace-one ε: the profile is an add-remove notion (the importance-sampling
        paper, Def. 4)."""
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
    data = mapping(raw, reader, "mechanism", None, None, "a privacy profile")
    if "profile" not in data:
        raise reader.error(
            "mechanism",
            f"missing required key 'profile' (one of: {', '.join(PROFILES)})",
            container=data,
        )
    kind = data["profile"]
    if kind not in PROFILES:
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
    """Poisson importance sampling of the records of a file (the importance-sampling paper,
    Def. 5).

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
            (``constant``) profile's loss, A(max q, ε) (the importance-sampling paper, App. A,
            Prop. 3).
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
