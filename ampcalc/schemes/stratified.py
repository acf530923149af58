"""Stratified sampling: proportional (randomised or deterministic rounding), stratified
Poisson, fixed per-stratum sizes, and Neyman allocation.

Results are stratified DP (000_97a39a4c524f603f.txt Definition 7.1): each stratum s
gets its own ε′_s for adding or removing a record *in that stratum*
(``details.strata``); the headline add-remove ε′ is max_s ε′_s. A replace-one
guarantee (``guarantee: replace-one``) is derived (deterministic rounding and fixed
allocation: computed pair by pair, see ``_analyse_deterministic``): a replacement is a
deletion in one stratum plus an addition in another or the same one, so its loss is at most
ε′_s + ε′_{s′} <= 2·max_s ε′_s (spec §8.1: every proven stratified result is for
add-remove; max{ε′_s, ε′_{s′}} of Definition 7.1 is not implied — with stratified
Poisson rates 0.5 and 0.01, the sum of the two largest per-stratum values is
exceeded by a replacement inside the 0.5 stratum).

Basis:
  - proportional + randomized: 000_97a39a4c524f603f.txt Theorem 7.2 (one stratum:
    Theorem 4.3; proof in Appendices C and E); exact inverse of spec §5.1;
  - proportional + randomized at rate 1: a census, ε′ = M's own ε (exact);
  - proportional + nearest/floor: at the stated sizes, each stratum's allocation at
    N_h − 1, N_h, N_h + 1: a step that keeps it is a simple random sample (000 Theorem
    2.2 coupling, A(m/N, ε_R), exact), a step that moves it costs exactly ε (000 §4.1
    witness); replace-one inside a stratum moves nothing, a record moved between strata
    chains the two steps (ε_R when both move);
  - poisson: 001_4ef689e3bef19c3a.txt Lemma 3.3 (tight);
  - fixed: 000 Theorem 2.2 within each stratum (replace-one inside a stratum);
  - neyman: 000 §7.2 and Appendix E.1 (deterministic, data-dependent allocation:
    lower bounds Δ∞·ε and Δ₁·ε, no upper bound).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.files import excerpt
from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.limits import LIMITS
from ampcalc.model.references import (
    BBG18,
    BUN_2020_WP,
    BUN_2022,
    DERIVATIONS,
    STRATIFIED_DOCS,
    cite,
    derivation,
)
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.assembly import assemble
from ampcalc.schemes.base import Analysis, Field, Scheme

MAX_EXACT_INT = 2**53
ALLOCATIONS = ("proportional", "poisson", "fixed", "neyman")
ROUNDINGS = ("randomized", "nearest", "floor", "largest-remainder", "huntington-hill")
TOTAL_ROUNDINGS = ("nearest", "floor", "largest-remainder", "huntington-hill")

BASIS_RANDOMIZED = (
    cite(BUN_2022, "Theorem 7.2"),
    cite(BUN_2022, "Theorem 4.3"),
    cite(BUN_2022, "Appendix E"),
)
BASIS_DETERMINISTIC = (
    cite(BUN_2022, "§4.1"),
    cite(BUN_2022, "Theorem 2.2 (per stratum)"),
    cite(
        STRATIFIED_DOCS,
        "Replace-one guarantee: one stratum's sample at N_h − 1, N_h, N_h + 1 coupled "
        "record by record",
    ),
)
BASIS_POISSON = (cite(BUN_2020_WP, "Lemma 3.3"), cite(BBG18))
BASIS_FIXED = (cite(BUN_2022, "Theorem 2.2 (per stratum)"),)
BASIS_NEYMAN = (cite(BUN_2022, "§7.2"), cite(BUN_2022, "Appendix E.1"), cite(BUN_2022, "§4.1"))
BASIS = (
    cite(BUN_2022, "Theorem 7.2"),
    cite(BUN_2022, "Definition 7.1"),
    cite(BUN_2020_WP, "Lemma 3.3"),
    cite(BUN_2022, "§7.2"),
)
REPLACE_ONE_BASIS = derivation("§1.3")

REPLACE_ONE_NOTE = (
    f"replace-one guarantee: derived ({DERIVATIONS}, §1.3), not proved by the papers: a "
    "replacement "
    "is a deletion in one stratum plus an addition in the same or another stratum, so "
    "ε′ <= ε′_s + ε′_{s′} <= 2·max_s ε′_s. Definition 7.1's max{ε′_s, ε′_{s′}} does not "
    "follow (stratified Poisson with rates 0.5 and 0.01: a replacement inside the 0.5 "
    "stratum exceeds the sum of the two largest per-stratum values)."
)

DETERMINISTIC_REPLACE_NOTE = (
    "replace-one guarantee under deterministic rounding: a replacement inside a stratum "
    "keeps every allocation (a simple random sample per stratum: A(m_h/N_h, ε_R), exact, "
    f"{BUN_2022}, Theorem 2.2); a record moved from stratum s to t is a "
    "removal from s and an addition to t, bounded by the sum of the two exact one-stratum "
    "losses, or by ε_R when both allocations move (the two changes pair into one "
    "replacement of a sampled record)"
)


# --------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False)
class Strata:
    """The strata, in order (for Neyman: increasing values of the study variable).

    Attributes:
        names: stratum labels.
        size: N_h, the public stratum sizes (int64).
        rate: per-stratum rate r_h, NaN where not given.
        sample: per-stratum sample size m_h (``fixed``), NaN where not given.
        sd: standard deviation S_h of the study variable (divisor N_h − 1), NaN if absent.
        mean: stratum mean of the study variable, NaN if absent.
        min_value: smallest value of the study variable in the stratum, NaN if absent.
    """

    names: tuple[str, ...]
    size: np.ndarray
    rate: np.ndarray
    sample: np.ndarray
    sd: np.ndarray
    mean: np.ndarray
    min_value: np.ndarray
    sizes_known: bool = True

    def __len__(self) -> int:
        return len(self.names)


@dataclass(frozen=True, kw_only=True, eq=False)
class Params:
    """A stratified design: the population is split into strata fixed in advance and
    public (names and sizes N_h), and each stratum is sampled independently.

    Attributes:
        allocation: ``proportional`` (rate r in every stratum, r·N_h rounded),
            ``poisson`` (each record of stratum h kept with probability r_h),
            ``fixed`` (data-independent sizes m_h from the strata's ``sample:``) or
            ``neyman`` (m_h ∝ N_h·S_h for a fixed total, computed from the data).
        rounding: proportional only: ``randomized`` (⌈rN_h⌉ with probability equal to
            the fractional part of rN_h, else ⌊rN_h⌋: Theorem 7.2), ``nearest`` (round
            half up) or ``floor`` (deterministic: no amplification).
        rate: common rate r (proportional, poisson); per-stratum ``rate:`` instead is
            allowed (for proportional a derived extension of Theorem 7.2, labelled so).
        strata: the strata (inline list or a CSV file with the same columns).
        size_aware: proportional + randomized: the tighter form from the proof of
            Theorem 4.3 (r + 1/N_h in place of 2r), labelled "from proof".
        total_sample: neyman: the total sample size m; proportional: the fixed total n
            apportioned as n·N_h/N by ``rounding`` (``_fixed_total``, 001 §3, §3.1).
        value_bound: top-code U of the study variable, values in [0, U]: the Neyman
            neighbour moves a record to U; ``ampcalc compare`` uses it as the
            sensitivity of the stratified mean.
        allocations: neyman: the two allocation vectors (P, then its neighbour P′)
            given directly instead of computing them.
    """

    allocation: str
    rounding: str | None
    rate: float | None
    strata: Strata
    size_aware: bool = False
    total_sample: int | None = None
    value_bound: float | None = None
    allocations: tuple[np.ndarray, np.ndarray] | None = None

    def rates(self) -> np.ndarray:
        """Per-stratum rate r_h (the common rate broadcast, or the strata's own)."""
        if self.rate is not None:
            return np.full(len(self.strata), float(self.rate))
        return self.strata.rate

    @property
    def per_stratum_rates(self) -> bool:
        return self.rate is None


FIELDS = (
    Field(
        name="allocation",
        kind="choice",
        doc="how the sample is split over strata",
        default="proportional",
        choices=ALLOCATIONS,
    ),
    Field(
        name="rate",
        kind="float",
        doc="common sampling rate r of every stratum (proportional, poisson)",
        low=0.0,
        high=1.0,
        low_open=True,
    ),
    Field(
        name="rounding",
        kind="choice",
        doc="proportional: rounding of r·N_h (default randomized), or with `total_sample` "
        "the apportionment of n·N_h/N (nearest, floor, largest-remainder, huntington-hill)",
        choices=ROUNDINGS,
    ),
    Field(name="strata", kind="any", doc="list of strata, or {file: strata.csv}"),
    Field(
        name="size_aware",
        kind="bool",
        doc="proportional + randomized: tighter proof-level form of Theorem 4.3",
        default=False,
    ),
    Field(
        name="total_sample",
        kind="int",
        doc="neyman, or proportional with deterministic rounding: total sample size",
        low=1,
        high=MAX_EXACT_INT,
    ),
    Field(
        name="value_bound",
        kind="float",
        doc="top-code U of the study variable (values in [0, U])",
        low=0.0,
        low_open=True,
    ),
    Field(name="allocations", kind="any", doc="neyman: the two allocation vectors [[P], [P′]]"),
)

STRATUM_FIELDS = (
    Field(name="name", kind="any", doc="stratum label"),
    Field(
        name="size", kind="int", doc="stratum size N_h", required=True, low=1, high=MAX_EXACT_INT
    ),
    Field(name="rate", kind="float", doc="stratum rate r_h", low=0.0, high=1.0, low_open=True),
    Field(name="sample", kind="int", doc="stratum sample size m_h", low=1, high=MAX_EXACT_INT),
    Field(name="sd", kind="float", doc="standard deviation S_h (divisor N_h − 1)", low=0.0),
    Field(name="mean", kind="float", doc="stratum mean of the study variable"),
    Field(name="min_value", kind="float", doc="smallest value in the stratum"),
)
STRATUM_KEYS = tuple(f.name for f in STRATUM_FIELDS)


def _read_inline(raw: Any, reader: Any) -> tuple[Strata, Callable[[int, str], Any]]:
    rows: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        path = f"sampling.strata[{i}]"
        if not isinstance(item, Mapping):
            raise reader.error(
                path,
                "expected a stratum (a mapping with `size:` and optional name, rate, "
                "sample, sd, mean, min_value)",
                container=raw,
                key=i,
            )
        rows.append(reader.fields(item, STRATUM_FIELDS, path, "a stratum"))

    def at(i: int, key: str) -> Any:
        item = raw[i]
        return lambda msg: reader.error(
            f"sampling.strata[{i}].{key}", msg, container=item, key=key
        )

    return _columns(rows), at


def _read_csv(raw: Mapping[str, Any], reader: Any) -> tuple[Strata, Callable[[int, str], Any]]:
    extra = [k for k in raw if k != "file"]
    if extra or "file" not in raw:
        raise reader.error(
            "sampling.strata",
            "expected `strata: {file: strata.csv}` (the only key is `file`) or a list of strata",
            container=raw,
            key=extra[0] if extra else None,
        )
    if not isinstance(raw["file"], str):
        raise reader.error(
            "sampling.strata.file", "expected a file name", container=raw, key="file"
        )
    path = reader.resolve(raw["file"])

    def err(msg: str) -> Any:
        return reader.error("sampling.strata.file", msg, container=raw, key="file")

    from ampcalc.load.table import did_you_mean, read_table

    cap = LIMITS["strata"].value
    table = read_table(
        path,
        what="strata file",
        error=err,
        header=True,
        delimiter=",",
        max_rows=cap,
        too_many=lambda _n: f"more than {cap:,} strata; the limit is {cap:,}",
        name=str(path),
    )
    header = list(table.header or ())
    for h in header:
        if h not in STRATUM_KEYS:
            raise err(
                f"{path}:{table.header_line}: unknown column {excerpt(h)} (expected: "
                f"{', '.join(STRATUM_KEYS)}){did_you_mean(h, STRATUM_KEYS)}"
            )
    if "size" not in header:
        raise err(f"{path}:{table.header_line}: missing column 'size' (the stratum sizes N_h)")
    for i, row in enumerate(table.rows):
        if len(row) != len(header):
            raise err(f"{table.at(i)}: {len(row)} cells, header has {len(header)}")
    cols: dict[str, list[str]] = {h: table.cells(j) for j, h in enumerate(header)}
    specs = {f.name: f for f in STRATUM_FIELDS}
    rows_n = len(cols["size"])
    out: dict[str, Any] = {}
    for h, cells in cols.items():
        if h == "name":
            out[h] = cells
            continue
        spec = specs[h]
        vals = np.full(rows_n, np.nan)
        for i, c in enumerate(cells):
            if c == "":
                if spec.required:
                    raise err(f"{table.at(i)}: empty {h!r}; expected {spec.domain()}")
                continue
            try:
                v = float(c)
            except ValueError:
                raise err(
                    f"{table.at(i)}: column {h!r}: expected {spec.domain()}, got {excerpt(c)}"
                ) from None
            bad = not math.isfinite(v)
            bad |= spec.kind == "int" and not v.is_integer()
            bad |= spec.low is not None and (v < spec.low or (spec.low_open and v == spec.low))
            bad |= spec.high is not None and v > spec.high
            if bad:
                raise err(
                    f"{table.at(i)}: column {h!r}: expected {spec.domain()}, got {excerpt(c)}"
                )
            vals[i] = v
        out[h] = vals
    rows_dicts = out

    def at(i: int, key: str) -> Any:
        return lambda msg: err(f"{table.at(i)}: stratum {i + 1}, {key}: {msg}")

    return _columns_arrays(rows_dicts, rows_n), at


def _columns(rows: list[dict[str, Any]]) -> Strata:
    k = len(rows)

    def col(key: str) -> np.ndarray:
        return np.array([np.nan if r[key] is None else float(r[key]) for r in rows], dtype=float)

    names = tuple(
        f"stratum {i + 1}" if r["name"] is None else str(r["name"]) for i, r in enumerate(rows)
    )
    return Strata(
        names=names,
        size=np.array([r["size"] for r in rows], dtype=np.int64).reshape(k),
        rate=col("rate"),
        sample=col("sample"),
        sd=col("sd"),
        mean=col("mean"),
        min_value=col("min_value"),
    )


def _columns_arrays(cols: dict[str, Any], k: int) -> Strata:
    nan = np.full(k, np.nan)
    names = cols.get("name") or [""] * k
    return Strata(
        names=tuple(n if n else f"stratum {i + 1}" for i, n in enumerate(names)),
        size=np.asarray(cols["size"]).astype(np.int64),
        rate=cols.get("rate", nan),
        sample=cols.get("sample", nan),
        sd=cols.get("sd", nan),
        mean=cols.get("mean", nan),
        min_value=cols.get("min_value", nan),
    )


def _read_allocations(raw: Any, reader: Any, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    def err(msg: str) -> Any:
        return reader.error("sampling.allocations", msg)

    shape_msg = "expected two lists of whole numbers >= 0: [[m_1, ..., m_k], [m′_1, ..., m′_k]]"
    if not isinstance(raw, list) or len(raw) != 2 or not all(isinstance(v, list) for v in raw):
        raise err(shape_msg)
    vecs = []
    for v in raw:
        if not v or any(
            isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 or x != int(x)
            for x in v
        ):
            raise err(shape_msg)
        vecs.append(np.array([int(x) for x in v], dtype=np.int64))
    if vecs[0].size != vecs[1].size:
        raise err(
            f"the two vectors have {vecs[0].size} and {vecs[1].size} entries; expected equal"
        )
    if k is not None and vecs[0].size != k:
        raise err(f"the vectors have {vecs[0].size} entries but there are {k} strata")
    return vecs[0], vecs[1]


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Read the strata (inline or CSV) and check the rules of each allocation."""
    allocation = values["allocation"]
    raw = values["strata"]

    def top(key: str, msg: str) -> Any:
        return reader.error(f"sampling.{key}", msg)

    allocations = None
    if values["allocations"] is not None:
        if allocation != "neyman":
            raise top("allocations", "`allocations` is for `allocation: neyman`")
    if raw is None:
        if values["allocations"] is None:
            raise reader.error(
                "sampling",
                "missing required key 'strata' (a list of strata with `size:`, or "
                "{file: strata.csv})",
            )
        allocations = _read_allocations(values["allocations"], reader, None)
        k = allocations[0].size
        nan = np.full(k, np.nan)
        strata = Strata(
            names=tuple(f"stratum {i + 1}" for i in range(k)),
            size=np.maximum(allocations[0], allocations[1]).astype(np.int64),
            rate=nan,
            sample=nan,
            sd=nan,
            mean=nan,
            min_value=nan,
            sizes_known=False,
        )
        at = None
    else:
        if isinstance(raw, Mapping):
            strata, at = _read_csv(raw, reader)
        elif isinstance(raw, list):
            strata, at = _read_inline(raw, reader)
        else:
            raise top("strata", "expected a list of strata or {file: strata.csv}")
        if len(strata) == 0:
            raise top("strata", "expected at least one stratum")
        if values["allocations"] is not None:
            allocations = _read_allocations(values["allocations"], reader, len(strata))
    if len(strata) > LIMITS["strata"].value:
        raise top("strata", LIMITS["strata"].message(len(strata)))
    rounding = values["rounding"]
    if allocation != "proportional" and rounding is not None:
        raise top("rounding", "`rounding` is for `allocation: proportional`")
    fixed_total = allocation == "proportional" and values["total_sample"] is not None
    if fixed_total:
        _check_fixed_total(values, rounding, reader)
    elif allocation == "proportional" and rounding in ("largest-remainder", "huntington-hill"):
        raise top(
            "rounding",
            f"`rounding: {rounding}` apportions a fixed total: give `total_sample` (not `rate`)",
        )
    if allocation == "proportional" and rounding is None:
        rounding = "randomized"
    if values["size_aware"] and not (allocation == "proportional" and rounding == "randomized"):
        raise top(
            "size_aware", "`size_aware` is for proportional allocation with randomized rounding"
        )
    rate = values["rate"]
    has_rate = ~np.isnan(strata.rate)
    if allocation in ("proportional", "poisson") and not fixed_total:
        if rate is not None and has_rate.any():
            raise top(
                "rate",
                "give one common `rate` or a `rate` for every stratum, not both",
            )
        if rate is None and not has_rate.all():
            i = int(np.argmin(has_rate))
            if not has_rate.any() or at is None:
                raise _at_key(
                    reader,
                    "strata",
                    f"`allocation: {allocation}` needs `rate` (one common rate) or a `rate` "
                    "for every stratum",
                )
            raise at(i, "rate")(
                f"stratum {strata.names[i]!r} has no `rate`; give every stratum a rate, or "
                "one common `rate`"
            )
    elif fixed_total:
        if has_rate.any() and at is not None:
            raise at(int(np.argmax(has_rate)), "rate")(
                "a stratum `rate` is not used with `total_sample` (the total is apportioned "
                "by the stratum sizes)"
            )
    else:
        if rate is not None:
            raise top(
                "rate", f"`rate` is for proportional or poisson allocation, not {allocation}"
            )
        if has_rate.any() and at is not None:
            raise at(int(np.argmax(has_rate)), "rate")(
                f"a stratum `rate` is for proportional or poisson allocation, not {allocation}"
            )
    if values["total_sample"] is not None and allocation not in ("neyman", "proportional"):
        raise top("total_sample", "`total_sample` is for neyman or proportional allocation")
    if allocation == "fixed":
        missing = np.isnan(strata.sample)
        if missing.any():
            i = int(np.argmax(missing))
            assert at is not None
            raise at(i, "sample")(
                f"stratum {strata.names[i]!r} has no `sample`; `allocation: fixed` needs "
                "each stratum's sample size"
            )
        over = strata.sample > strata.size
        if over.any():
            i = int(np.argmax(over))
            assert at is not None
            raise at(i, "sample")(
                f"sample {int(strata.sample[i])} is larger than the stratum size "
                f"{int(strata.size[i])}; expected 1 <= sample <= size"
            )
    if allocation == "neyman" and allocations is None:
        _check_neyman(values, strata, reader, at)
    return Params(
        allocation=allocation,
        rounding=rounding,
        rate=rate,
        strata=strata,
        size_aware=bool(values["size_aware"]),
        total_sample=values["total_sample"],
        value_bound=values["value_bound"],
        allocations=allocations,
    )


def _check_fixed_total(values: dict[str, Any], rounding: str | None, reader: Any) -> None:
    """Proportional allocation of a fixed total: a deterministic rule, no rate."""
    if rounding not in TOTAL_ROUNDINGS:
        raise _at_key(
            reader,
            "rounding" if rounding is not None else "total_sample",
            "a fixed `total_sample` is apportioned by a deterministic `rounding:` "
            f"({', '.join(TOTAL_ROUNDINGS)})" + ("" if rounding is None else f", not {rounding}"),
        )
    if values["rate"] is not None:
        raise reader.error(
            "sampling.rate", "give `rate` or `total_sample` for proportional allocation, not both"
        )


def _at_key(reader: Any, key: str, message: str) -> Any:
    """An error at an existing key of ``sampling`` (its line), else at the block."""
    where = reader.field_where.get(f"sampling.{key}")
    if where is not None:
        from ampcalc.model.errors import DesignError

        return DesignError(message, where=where)
    return reader.error("sampling", message)


def _check_neyman(values: dict[str, Any], strata: Strata, reader: Any, at: Any) -> None:
    for key, doc in (
        ("total_sample", "the total sample size m"),
        ("value_bound", "the top-code U"),
    ):
        if values[key] is None:
            raise _at_key(
                reader,
                "allocation",
                f"`allocation: neyman` needs `{key}` ({doc}), or the two allocation vectors "
                "as `allocations: [[...], [...]]`",
            )
    need: list[tuple[str, Sequence[int]]] = [("sd", range(len(strata)))]
    need += [("mean", sorted({0, len(strata) - 1})), ("min_value", [0])]
    for key, idx in need:
        arr = getattr(strata, key)
        for i in idx:
            if np.isnan(arr[i]):
                which = {0: "the lowest stratum", len(strata) - 1: "the top stratum"}
                role = (
                    which.get(i, f"stratum {strata.names[i]!r}")
                    if key != "sd"
                    else (f"stratum {strata.names[i]!r}")
                )
                raise at(i, key)(
                    f"{role} has no `{key}`; Neyman allocation needs `sd` for every stratum, "
                    "`mean` for the lowest and top strata and `min_value` for the lowest "
                    "(strata listed in increasing order of the study variable; the worst "
                    "neighbour moves the lowest record to the top-code U)"
                )
    total = int(values["total_sample"])
    if total > int(strata.size.sum()):
        raise reader.error(
            "sampling.total_sample",
            f"total_sample {total} exceeds the population {int(strata.size.sum())}",
        )
    u = float(values["value_bound"])
    for key, i in (("min_value", 0), ("mean", 0), ("mean", len(strata) - 1)):
        v = float(getattr(strata, key)[i])
        if not 0 <= v <= u:
            raise at(i, key)(f"{key} {v:g} is outside [0, value_bound] = [0, {u:g}]")


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------


def _kernel(q: Any, x: Any) -> np.ndarray:
    """log(1 + q(e^x − 1)) for any q > 0 (also q > 1, as Theorem 4.3's A(2r, ·) needs).

    ``log1p(q·expm1(x))`` for x <= 700; above, the overflow-free
    ``x + log q + log1p((1 − q)/q · e^{−x})``.
    """
    q, x = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(x, dtype=float))
    out = np.empty(q.shape, dtype=float)
    small = x <= numeric.LOG_SPACE_FROM
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out[small] = np.log1p(q[small] * np.expm1(x[small]))
        big = ~small
        if np.any(big):
            qb, xb = q[big], x[big]
            out[big] = xb + np.log(qb) + np.log1p((1.0 - qb) / qb * np.exp(-xb))
    return out


def _slack(q: Any, x: Any) -> np.ndarray:
    q, x = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(x, dtype=float))
    scale = np.maximum(np.abs(x), np.abs(np.log(q)))
    return np.where(x > numeric.LOG_SPACE_FROM, 8.0 * np.spacing(scale), 0.0)


def theorem_4_3(a: Any, b: Any, eps: Any) -> np.ndarray:
    """Upper bound (a guarantee) on one stratum's ε′ under proportional allocation with
    randomised rounding.

    Basis: 000_97a39a4c524f603f.txt Theorem 4.3 (one stratum), Theorem 7.2 (strata,
        proof in Appendix E); the tighter form is from the proof of Theorem 4.3 (App. C).
    Neighbours: M is ε-DP under add-remove; ε′ holds for adding or removing one record
        in the stratum (stratified add-remove DP, Definition 7.1).
    Conditions: r·N_h >= 1 (checked by ``analyse``); M pure ε-DP.
    Formula: ε′ = log(1 + a(e^{2ε} − 1)) + log(1 + b(e^{2ε} − 1)), with a = 2r, b = r
        (Theorem 4.3) or a = r + 1/N_h, b = r (size-aware, from the proof: |P| + 1 = N_h
        for the smaller dataset of the worst pair). a may exceed 1: read as the formula.
    Tightness: not tight (a lower bound is A(r, ε), see ``lower_epsilon``).
    Numerics: log1p/expm1 up to 2ε = 700, then log-space (``_kernel``); rounded up.
    """
    x = 2.0 * np.asarray(eps, dtype=float)
    raw = _kernel(a, x) + _kernel(b, x) + _slack(a, x) + _slack(b, x)
    return numeric.round_up(raw)


def theorem_4_3_inverse(a: Any, b: Any, target: Any) -> np.ndarray:
    """The ε with (1 + a·u)(1 + b·u) = e^{T}, u = e^{2ε} − 1: exact closed form (spec §5.1).

    u = 2(e^T − 1) / ((a + b) + √((a + b)² + 4ab(e^T − 1))) (the stable root of
    ab·u² + (a + b)u + 1 − e^T = 0), ε = ½·log1p(u); for T > 700 the same in logs.
    Not rounded: callers round down and certify against ``theorem_4_3``.
    """
    a, b, t = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, target)))
    s, p = a + b, a * b
    out = np.empty(t.shape, dtype=float)
    small = t <= numeric.LOG_SPACE_FROM
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        em = np.expm1(t[small])
        ss, ps = s[small], p[small]
        u = 2.0 * em / (ss + np.sqrt(ss * ss + 4.0 * ps * em))
        out[small] = 0.5 * np.log1p(u)
        big = ~small
        if np.any(big):
            tb, sb, pb = t[big], s[big], p[big]
            et = np.exp(-tb)
            log_den = 0.5 * tb + np.log(
                sb * np.exp(-0.5 * tb) + np.sqrt(sb * sb * et + 4.0 * pb * (-np.expm1(-tb)))
            )
            log_u = np.log(2.0) + tb + np.log1p(-et) - log_den
            out[big] = 0.5 * (log_u + np.log1p(np.exp(-log_u)))
    return out


def lower_epsilon(rate: Any, eps: Any) -> np.ndarray:
    """Lower bound on one stratum's ε′ (randomised rounding or Poisson): A(r, ε).

    Witness (derived): M = randomised response (ε) on "the added record x is in the
    sample", ε-DP under add-remove and under replace-one. Under randomised rounding x
    is sampled with probability exactly E[m′]/(N + 1) = r; under Poisson with r. So
    ε′ >= log(1 + r(e^ε − 1)) for the pair (P, P ∪ {x}). Tight for Poisson (001
    Lemma 3.3). Rounded down.
    """
    return numeric.amplification_lower(rate, eps)


# --------------------------------------------------------------------------------------
# Analyses
# --------------------------------------------------------------------------------------


def _need_add_remove(mechanism: Mechanism, theorem: str) -> None:
    if not mechanism.epsilon_add_remove_known():
        raise ConditionError(
            f"{theorem} needs M's add-remove ε, and `neighbours: replace-one` leaves it "
            "unknown (stratum sample sizes change with the population). Declare "
            "`neighbours: add-remove` or `both`."
        )


def _scalar_eps(mechanism: Mechanism) -> float:
    return float(mechanism.epsilon)


def _check_rate_condition(p: Params, rates: np.ndarray) -> None:
    bad = rates * p.strata.size < 1.0
    if bad.any():
        idx = np.flatnonzero(bad)
        i = int(idx[0])
        more = f" (and {idx.size - 1} more strata)" if idx.size > 1 else ""
        raise ConditionError(
            f"Theorem 7.2 ({BUN_2022}): needs r·|S_h| >= 1 in every stratum; "
            f"stratum {p.strata.names[i]!r} has r·N_h = {rates[i]:g}·{int(p.strata.size[i])} "
            f"= {rates[i] * p.strata.size[i]:.6g} < 1{more}. Raise the rate or merge the "
            "small strata."
        )


def _analyse_randomized(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    _need_add_remove(mechanism, f"Theorem 7.2 ({BUN_2022})")
    if mechanism.delta > 0:
        raise ConditionError(
            f"Theorem 7.2 ({BUN_2022}) is proved for pure ε-DP mechanisms "
            f"(delta = 0); the declared delta = {mechanism.delta:g} has no proved δ′"
        )
    r = p.rates()
    n = p.strata.size.astype(float)
    _check_rate_condition(p, r)
    a = r + 1.0 / n if p.size_aware else 2.0 * r
    # rate 1: the stratum is a census, every record is sampled, ε′_h = ε exactly
    census = r >= 1.0
    all_census = bool(census.all())
    fa, fb = alloc.pareto_front(a[~census], r[~census])
    r_max = float(r.max())
    replace = guarantee is Neighbours.REPLACE_ONE
    eps_r = mechanism.epsilon_replace_one_of
    ratio_lo = min(1.0, mechanism.replace_one_ratio())

    def per_stratum(eps: Any) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        out: np.ndarray = np.where(census, e, theorem_4_3(a, r, e))
        return out

    def stratified_max(eps: np.ndarray) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        parts = [e.copy()] if census.any() else []
        if fa.size:
            shape = (-1,) + (1,) * e.ndim
            parts.append(theorem_4_3(fa.reshape(shape), fb.reshape(shape), e).max(axis=0))
        worst: np.ndarray = functools.reduce(np.maximum, parts)
        return worst

    # one stratum under replace-one: a replacement keeps the size distribution, so the
    # design is a mixture of simple random samples of ⌊rN⌋ or ⌈rN⌉ records
    single = replace and len(p.strata) == 1 and not all_census
    mix = _size_mixture(float(r[0]), int(p.strata.size[0])) if single else None

    def upper(eps: np.ndarray) -> np.ndarray:
        if all_census:  # the sample is the population: M∘C = M
            return eps_r(eps) if replace else np.asarray(eps, dtype=float).copy()
        if mix is not None:
            return mix.upper(eps_r(eps))
        m = stratified_max(eps)
        return numeric.round_up(2.0 * m) if replace else m

    def lower(eps: np.ndarray) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        if all_census:
            return eps_r(e) if replace else e.copy()
        if mix is not None:
            lo1: np.ndarray = np.maximum(
                mix.lower(e, eps_r(e)), lower_epsilon(r_max, np.minimum(e, eps_r(e)))
            )
            return lo1
        if replace:
            lo = lower_epsilon(r_max, np.minimum(e, eps_r(e)))
            # a replacement inside a census stratum changes the sample by that record
            return np.maximum(lo, eps_r(e)) if census.any() else lo
        return e.copy() if census.any() else lower_epsilon(r_max, e)

    def per_stratum_certified(t: Any) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        guess = numeric.round_down(np.where(census, t, theorem_4_3_inverse(a, r, t)))
        return numeric.certify_down(per_stratum, guess, np.broadcast_to(t, guess.shape))

    def certified(target: np.ndarray) -> np.ndarray:
        t = np.asarray(target, dtype=float)
        if all_census:
            ratio = mechanism.replace_one_ratio() if replace else 1.0
            return numeric.certify_down(upper, numeric.round_down(t / ratio), t)
        if mix is not None:
            inv = numeric.amplification_inverse(mix.q_hi, t) / mechanism.replace_one_ratio()
            return numeric.certify_down(upper, numeric.round_down(inv), t)
        tt = t / 2.0 if replace else t
        shape = (-1,) + (1,) * t.ndim
        guess = tt.copy()
        if fa.size:
            inv = theorem_4_3_inverse(fa.reshape(shape), fb.reshape(shape), tt).min(axis=0)
            guess = np.minimum(guess, inv) if census.any() else inv
        return numeric.certify_down(upper, numeric.round_down(guess), t)

    def impossible_above(target: np.ndarray) -> np.ndarray:
        t = np.asarray(target, dtype=float)
        guess = numeric.round_up(numeric.amplification_inverse(r_max, t)) / (
            ratio_lo if replace else 1.0
        )
        return numeric.certify_up(lower, numeric.round_up(guess), t)

    def invert_details(target: np.ndarray) -> dict[str, Any]:
        t = np.asarray(target, dtype=float)
        if t.ndim:
            return {}
        if mix is not None:
            one = float(certified(t))
            imp1 = float(numeric.smallest_reaching(lower, float(t), one, 2.0 * one + 1.0))
            return {"strata": alloc.invert_rows(p, r, r * n, one, imp1)}
        if all_census:
            tt = float(t) / (mechanism.replace_one_ratio() if replace else 1.0)
        else:
            tt = float(t) / 2.0 if replace else float(t)
        cert = per_stratum_certified(tt)
        shortcut = _shortcut_note(r_max, float(t), float(np.min(cert)))
        imp = numeric.amplification_inverse(r, float(t)) / (ratio_lo if replace else 1.0)
        imp = numeric.certify_up(
            lambda e: lower_epsilon(r, e * (ratio_lo if replace else 1.0)),
            numeric.round_up(imp),
            float(t),
        )
        return {
            "strata": alloc.invert_rows(p, r, r * n, cert, imp),
            "shortcut": shortcut,
            "notes": (shortcut_note(shortcut, r_max, float(t)),),
        }

    eps0 = _scalar_eps(mechanism)

    def details_at(eps: np.ndarray) -> dict[str, Any]:
        e = np.asarray(eps, dtype=float)
        rr, cc = _per_stratum(r, e), _per_stratum(census, e) > 0
        rows = alloc.strata_rows(
            p,
            r,
            r * n,
            np.where(cc, e, lower_epsilon(rr, e)),
            np.where(cc, e, theorem_4_3(_per_stratum(a, e), rr, e)),
        )
        approx = 6.0 * r_max * e
        exact = np.asarray(stratified_max(e), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(exact > 0, (approx - exact) / np.where(exact > 0, exact, 1.0), np.nan)
        return {
            "approx_6re": approx,
            "approx_6re_relative_error": rel if rel.ndim else (None if np.isnan(rel) else rel),
            "census_strata": int(census.sum()),
            "strata": rows,
        }

    warnings: list[str] = []
    notes: list[str] = []
    form = "size-aware form from the proof of Theorem 4.3 (r + 1/N_h in place of 2r)"
    if p.size_aware:
        notes.append(f"upper bound: the {form}; labelled 'from proof', not a stated theorem")
    if p.per_stratum_rates:
        notes.append(
            f"per-stratum rates: derived extension of Theorem 7.2 ({DERIVATIONS}, §4.1; the "
            "proof is "
            "per stratum, the paper states one common r)"
        )
    if replace and not all_census and not single:
        notes.append(REPLACE_ONE_NOTE)
    if single:
        notes.append(
            "replace-one with one stratum: a replacement keeps the stratum size, so the "
            "design is a mixture of simple random samples of ⌊rN⌋ or ⌈rN⌉ records: ε′ <= "
            f"A(⌈rN⌉/N, ε_R) ({BUN_2022}, Theorem 2.2 at the larger size; "
            "exact when rN is a whole number, the srswor value)"
        )
    if census.any():
        which = [nm for nm, c in zip(p.strata.names, census.tolist(), strict=True) if c]
        shown = ", ".join(repr(x) for x in which[:3]) + (" …" if len(which) > 3 else "")
        notes.append(
            "rate 1: the sample is the whole population, M's own ε under the guarantee's "
            "relation, exactly (Theorem 7.2 would give "
            f"{float(theorem_4_3(2.0, 1.0, eps0)):.6g} at ε = {eps0:g})"
            if all_census
            else f"rate 1 in {len(which)} strata ({shown}): each is sampled whole, so its "
            "ε′_h is M's ε exactly (Theorem 7.2 is not used there)"
        )
    up0 = float(upper(np.asarray(eps0)))
    if not all_census and up0 >= eps0 * (mechanism.replace_one_ratio() if replace else 1.0):
        warnings.append(
            "no amplification is guaranteed at this ε: Theorem 7.2's bound is not below M's ε "
            "(the randomised-rounding bound exceeds ε for r above about 0.07–0.17; "
            f"{DERIVATIONS}, §4.1)"
        )
    if not all_census:
        notes.append(
            f"{cite(BUN_2022, '§4.3')} and {cite(BUN_2022, '§7.3')} approximate this bound as "
            f"ε′ ≈ 6rε ({6.0 * r_max * eps0:.6g} at ε = {eps0:g}, r = {r_max:g}; the bound "
            f"here is {up0:.6g}) and its inverse as λ ≈ ε′/(6r), which hold only for rε ≪ 1; "
            "ampcalc evaluates and inverts the bound exactly (details.approx_6re; on "
            "invert, details.shortcut)."
        )
    details: dict[str, Any] = {
        "allocation": "proportional",
        "rounding": "randomized",
        "form": "size-aware (from proof)" if p.size_aware else "Theorem 7.2",
        "rate_max": r_max,
        "strata_count": len(p.strata),
    }
    conditions = (
        f"r·N_h >= 1 in every stratum: smallest r·N_h = {float(np.min(r * n)):.6g}",
        "strata fixed in advance and public; within each stratum r·N_h is rounded up with "
        "probability equal to its fractional part, then a simple random sample of that size "
        "is drawn without replacement, independently across strata; the sample is secret",
        f"M is ε-DP under add-remove (declared: {mechanism.neighbours}), pure ε",
    )
    return Analysis(
        guarantee_neighbours=guarantee,
        reference_epsilon=(lambda e: eps_r(e)) if replace else (lambda e: np.asarray(e, float)),
        upper=upper,
        lower=lower,
        delta_prime=lambda e: np.zeros(np.shape(e)),
        certified=certified,
        impossible_above=None if replace and (census.any() or single) else impossible_above,
        basis=(
            *BASIS_RANDOMIZED,
            *((cite(BUN_2022, "Theorem 2.2 (one stratum)"),) if single else ()),
            *((REPLACE_ONE_BASIS,) if replace and not all_census and not single else ()),
        ),
        conditions=conditions,
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
        details_at=details_at,
        invert_details=invert_details,
    )


@dataclass(frozen=True)
class _SizeMixture:
    """One stratum under randomised rounding: ⌊rN⌋ or ⌈rN⌉ records, then srswor."""

    n: int
    sizes: tuple[int, ...]
    probs: tuple[float, ...]

    @property
    def q_hi(self) -> float:
        return max(self.sizes) / self.n

    def upper(self, er: np.ndarray) -> np.ndarray:
        """A replacement inside the stratum: A(⌈rN⌉/N, ε_R), the per-size bound of 000
        Theorem 2.2 at the larger size (a mixture with the same weights on both sides
        is no worse than its worst component)."""
        return numeric.amplification_upper(self.q_hi, er)

    def lower(self, ed: np.ndarray, er: np.ndarray) -> np.ndarray:
        """Witness Pr[M(S) = 1] ∝ e^{ε_R·[x ∈ S] + c·|S|}, c = ε_D − ε_R: every record's
        weight is c or ε_R + c, so M is ε_D-DP under add-remove (|c|, |ε_R + c| <= ε_D as
        ε_R <= 2ε_D) and ε_R-DP under replace-one. Loss: log of the e^{c·m}-weighted mean
        of 1 + (m/N)(e^{ε_R} − 1) over the sizes m. Rounded down."""
        e_d, e_r = np.broadcast_arrays(np.asarray(ed, float), np.asarray(er, float))
        c = e_d - e_r
        lo = min(self.sizes)
        logs_w = [
            math.log(pm) + c * (m - lo) for m, pm in zip(self.sizes, self.probs, strict=True)
        ]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            num = np.logaddexp.reduce(
                [
                    lw + numeric.amplification(m / self.n, e_r)
                    for lw, m in zip(logs_w, self.sizes, strict=True)
                ]
            )
            den = np.logaddexp.reduce(logs_w)
        val = num - den
        slack = 8.0 * np.spacing(np.maximum(np.abs(num), 1.0))
        out: np.ndarray = numeric.round_down(np.maximum(val - slack, 0.0))
        return out


def _size_mixture(rate: float, n: int) -> _SizeMixture:
    x = rate * n
    lo = math.floor(x)
    frac = x - lo
    if frac == 0.0:
        return _SizeMixture(n, (min(lo, n),), (1.0,))
    return _SizeMixture(n, (lo, min(lo + 1, n)), (1.0 - frac, frac))


def shortcut_note(shortcut: Mapping[str, Any], r_max: float, target: float) -> str:
    """The erratum of 000 §7.3 on ``invert``: λ ≈ ε′/(6r) against the exact inverse."""
    approx, exact = shortcut["epsilon"], shortcut["exact"]
    over = (
        f": the shortcut would spend {approx / exact:.3g} times the certified ε"
        if exact > 0 and approx > exact
        else ""
    )
    return (
        f"{cite(BUN_2022, '§7.3')}'s shortcut λ ≈ ε′/(6r) gives ε = {approx:.6g} at ε′ = "
        f"{target:g}, r = {r_max:g}; the exact inverse of Theorem 7.2 (used here) certifies "
        f"ε = {exact:.6g}{over} (details.shortcut)."
    )


def _shortcut_note(r_max: float, target: float, exact: float) -> dict[str, Any]:
    """The paper's shortcut λ ≈ ε′/(6r) (000 §7.3) against the exact inverse (spec §5.1)."""
    approx = target / (6.0 * r_max)
    return {
        "formula": f"ε ≈ ε′/(6r) ({BUN_2022}, §7.3)",
        "epsilon": approx,
        "exact": exact,
        "relative_error": (approx - exact) / exact if exact > 0 else None,
    }


def _step_values(
    delta: np.ndarray, q: np.ndarray, ed: np.ndarray, er: np.ndarray, up: bool
) -> np.ndarray:
    """Exact loss of one stratum step N ↔ N + 1 with allocations m and m + Δ, Δ ∈ {0, 1}.

    Δ = 1: ε_D (upper: drop x, or a random record, from the larger sample — a coupling
    at add-remove distance 1; lower: Pr[M(S) = 1] ∝ e^{ε_D·|S|}). Δ = 0: A(q, ε_R) with
    q = m/(N + 1) the added record's inclusion (upper: swap x for a random unsampled
    record, 000 Theorem 2.2's coupling; lower: Pr[M(S) = 1] ∝ e^{ε_R·[x ∈ S] − ε_R|S|/2},
    ε_D-DP under add-remove as ε_R <= 2ε_D). Rounded up (``up``) or down.
    """
    out: np.ndarray = np.where(delta > 0, ed, _amp(q, er, up))
    return out


def _amp(q: Any, eps: Any, up: bool) -> np.ndarray:
    """A(q, ε) rounded up or down; exactly 0 where q = 0 (nothing can be sampled)."""
    q = np.asarray(q, dtype=float)
    val = numeric.amplification_upper(q, eps) if up else numeric.amplification_lower(q, eps)
    out: np.ndarray = np.where(q > 0, val, 0.0)
    return out


MOVE_GRID = np.linspace(0.0, 1.0, 33)


def _move_witness(q_from: float, q_to: float, er: np.ndarray) -> np.ndarray:
    """Lower bound for a record x moved from stratum s to t when neither allocation moves.

    Witness: Pr[M(S) = 1] ∝ e^{a·[x ∈ S] − (ε_R − a)·[x′ ∈ S] − c·|S|} with c = a − ε_R/2:
    every record's weight lies in [−ε_R/2, ε_R/2], so M is ε_R/2 <= ε-DP under
    add-remove and ε_R-DP under replace-one. x is in P's sample with probability
    q_from = m_s/N_s, x′ in P′'s with q_to = m_t/(N_t + 1), the sample sizes agree:
    loss log(1 + q_from(e^a − 1)) − log(1 + q_to(e^{a − ε_R} − 1)) (and the same with
    the roles swapped for the other direction), maximised over a on a grid of [0, ε_R].
    a = ε_R is the within-stratum value A(q_from, ε_R). Rounded down.
    """
    e = np.asarray(er, dtype=float)[..., None]
    a = MOVE_GRID * e
    with np.errstate(over="ignore", invalid="ignore"):
        one = numeric.amplification(q_from, a) + numeric.neg_log1m(q_to, e - a)
        two = numeric.amplification(q_to, a) + numeric.neg_log1m(q_from, e - a)
    best = np.maximum(np.nanmax(one, axis=-1), np.nanmax(two, axis=-1))
    down = numeric.round_down(np.maximum(best, 0.0) - 8.0 * np.spacing(e[..., 0]))
    out: np.ndarray = np.maximum(down, 0.0)
    return out


@dataclass(frozen=True)
class _Rounded:
    """Deterministic allocations at the stated sizes and at every neighbour's sizes."""

    steps: alloc.RoundedSteps
    size: np.ndarray
    q_down: np.ndarray  # m_h/N_h: a record of the stated stratum h is sampled
    q_up: np.ndarray  # m_h/(N_h + 1): a record added to stratum h is sampled
    cross: tuple[tuple[int, int], ...]  # candidate (from s, to t) moves, s != t

    @classmethod
    def of(cls, p: Params) -> _Rounded:
        size = p.strata.size
        steps = alloc.proportional_steps(p.rates(), size, p.rounding or "nearest")
        down, up = steps.down, steps.up
        # r in (0, 1]: ⌊rN⌉ and ⌊rN⌋ are nondecreasing in N with steps of at most 1
        assert ((down >= 0) & (down <= 1) & (up >= 0) & (up <= 1)).all()
        n = size.astype(float)
        q_down = steps.at / n
        q_up = steps.at / (n + 1.0)
        return cls(steps, size, q_down, q_up, _cross_candidates(down, up, q_down, q_up))

    def cross_jumps(self, s: int, t: int) -> tuple[int, int]:
        return int(self.steps.down[s]), int(self.steps.up[t])


@dataclass(frozen=True)
class _Subset:
    """Some strata's steps, for per-stratum inversion (one ε per stratum)."""

    down: np.ndarray
    up: np.ndarray
    q_down: np.ndarray
    q_up: np.ndarray

    def __init__(self, steps: alloc.RoundedSteps, rd: _Rounded, mask: np.ndarray) -> None:
        object.__setattr__(self, "down", steps.down[mask])
        object.__setattr__(self, "up", steps.up[mask])
        object.__setattr__(self, "q_down", rd.q_down[mask])
        object.__setattr__(self, "q_up", rd.q_up[mask])

    def values(self, eps: Any, eps_r: Callable[[Any], np.ndarray], up: bool) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        er = eps_r(e)
        out: np.ndarray = np.maximum(
            _step_values(self.down, self.q_down, e, er, up),
            _step_values(self.up, self.q_up, e, er, up),
        )
        return out


def _cross_candidates(
    down: np.ndarray, up: np.ndarray, q_down: np.ndarray, q_up: np.ndarray
) -> tuple[tuple[int, int], ...]:
    """Ordered pairs (s, t), s != t, holding the worst move of a record from s to t.

    The loss of a move depends on (Δ_s, Δ_t) and increases in q_down[s] and q_up[t];
    within each of the four (Δ_s, Δ_t) classes the worst pair with s != t is among the
    two largest of each side, so at most 16 pairs are kept (none for one stratum).
    """
    if down.size < 2:
        return ()
    out: set[tuple[int, int]] = set()
    for a in (0, 1):
        s_idx = np.flatnonzero(down == a)
        s_top = s_idx[np.argsort(-q_down[s_idx], kind="stable")[:2]]
        for b in (0, 1):
            t_idx = np.flatnonzero(up == b)
            t_top = t_idx[np.argsort(-q_up[t_idx], kind="stable")[:2]]
            out.update((int(s), int(t)) for s in s_top for t in t_top if s != t)
    return tuple(sorted(out))


def _analyse_deterministic(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    rule = p.rounding or "nearest"
    r = p.rates()
    rd = _Rounded.of(p)
    steps, m = rd.steps, rd.steps.at
    k = len(p.strata)
    names = p.strata.names
    replace = guarantee is Neighbours.REPLACE_ONE
    eps_r = mechanism.epsilon_replace_one_of
    ed_known = mechanism.epsilon_add_remove_known()
    pure = mechanism.delta == 0.0
    if not replace:
        _need_add_remove(mechanism, "an add-remove guarantee under deterministic rounding")
    one_sided = [(s, t) for s, t in rd.cross if rd.cross_jumps(s, t) in ((1, 0), (0, 1))]
    if replace and not ed_known and one_sided:
        s, t = one_sided[0]
        raise ConditionError(
            f"moving a record from stratum {names[s]!r} to {names[t]!r} changes the total "
            "sample size (deterministic rounding), so M's add-remove ε is needed, and "
            "`neighbours: replace-one` leaves it unknown. Declare `neighbours: add-remove` "
            "or `both`."
        )
    # add-remove steps: the largest inclusion among steps that keep the allocation
    flat = np.concatenate([rd.q_down[steps.down == 0], rd.q_up[steps.up == 0]])
    q_flat = float(flat.max()) if flat.size else None
    jump = bool((steps.down > 0).any() or (steps.up > 0).any())
    q_within = float(np.max(rd.q_down))

    def ed_of(e: np.ndarray) -> np.ndarray:
        return e if ed_known else np.full(e.shape, np.inf)

    def add_remove(eps: np.ndarray, up: bool) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        er = eps_r(e)
        parts = [e.copy()] if jump else []
        if q_flat is not None:
            parts.append(_amp(q_flat, er, up))
        out: np.ndarray = functools.reduce(np.maximum, parts)
        return out

    def cross_value(s: int, t: int, e: np.ndarray, up: bool) -> np.ndarray:
        """A record moved from stratum s to t: the loss bound (up) or witness (down)."""
        er = eps_r(e)
        ds, dt = rd.cross_jumps(s, t)
        if ds and dt:  # both allocations move: the two changes pair into one replacement
            both: np.ndarray = np.array(er, dtype=float)
            return both
        if not up and not (ds or dt):
            return _move_witness(float(rd.q_down[s]), float(rd.q_up[t]), er)
        ed = ed_of(e)
        first = _step_values(np.asarray(ds), np.asarray(rd.q_down[s]), ed, er, up)
        second = _step_values(np.asarray(dt), np.asarray(rd.q_up[t]), ed, er, up)
        # one allocation moves: the sum is attained (docs/stratified.md), so it is both
        return numeric.round_up(first + second) if up else numeric.round_down(first + second)

    def replace_one(eps: np.ndarray, up: bool) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        out = _amp(q_within, eps_r(e), up)
        for s, t in rd.cross:
            out = np.maximum(out, cross_value(s, t, e, up))
        return out

    def upper(eps: np.ndarray) -> np.ndarray:
        return replace_one(eps, True) if replace else add_remove(eps, True)

    def lower(eps: np.ndarray) -> np.ndarray:
        return replace_one(eps, False) if replace else add_remove(eps, False)

    def stratum_values(eps: Any, up: bool) -> np.ndarray:
        """Stratified add-remove ε′_h: the worse of removing and adding a record of h."""
        e = np.asarray(eps, dtype=float)  # scalar, or one ε per stratum
        er = eps_r(e)
        down = _step_values(steps.down, rd.q_down, e, er, up)
        add = _step_values(steps.up, rd.q_up, e, er, up)
        out: np.ndarray = np.maximum(down, add)
        return out

    def invert_details(target: np.ndarray) -> dict[str, Any]:
        t = np.asarray(target, dtype=float)
        if t.ndim or not pure:
            return {}
        tt = float(t)
        if replace or not ed_known:
            cert = numeric.largest_feasible(upper, tt, tt / 4, tt)
            imp = numeric.smallest_reaching(lower, tt, tt / 4, tt)
            return {"strata": alloc.invert_rows(p, r, m, cert, imp)}
        # closed form per stratum, then certified as evaluated: a step that moves the
        # allocation needs ε <= T, one that keeps it A(q, ratio·ε) <= T
        tk = np.full(k, tt)
        ratio = mechanism.replace_one_ratio()
        keep = np.maximum(
            np.where(steps.down == 0, rd.q_down, 0.0), np.where(steps.up == 0, rd.q_up, 0.0)
        )
        moves = (steps.down > 0) | (steps.up > 0)
        with np.errstate(divide="ignore"):
            inv = np.where(keep > 0, numeric.amplification_inverse(keep, tk) / ratio, np.inf)
        guess = np.where(moves, np.minimum(tk, inv), inv)
        finite = np.isfinite(guess)
        cert = np.full(k, np.inf)
        imp = np.full(k, np.inf)
        if finite.any():
            g, t_f = guess[finite], tk[finite]
            sub = _Subset(steps, rd, finite)
            cert[finite] = numeric.certify_down(
                lambda e: sub.values(e, eps_r, True), numeric.round_down(g), t_f
            )
            imp[finite] = numeric.certify_up(
                lambda e: sub.values(e, eps_r, False), numeric.round_up(g), t_f
            )
        return {"strata": alloc.invert_rows(p, r, m, cert, imp)}

    eps0 = _scalar_eps(mechanism)
    e0 = np.asarray(eps0)
    rows = alloc.strata_rows(
        p,
        r,
        m,
        stratum_values(eps0, False) if ed_known else None,
        stratum_values(eps0, True) if ed_known and pure else None,
    )
    for row, removed, added in zip(
        rows, steps.removed.tolist(), steps.added.tolist(), strict=True
    ):
        row["sample_neighbours"] = {"record_removed": removed, "record_added": added}
    witness = _deterministic_witness(p, rd, replace, eps0, float(eps_r(e0)), cross_value)
    if replace:
        pairs = [rd.cross_jumps(s, t) for s, t in rd.cross]
        linf = max((max(a, b) for a, b in pairs), default=0)
        l1 = max((a + b for a, b in pairs), default=0)
    else:
        linf = l1 = int(max(steps.down.max(), steps.up.max()))
    warnings: list[str] = []
    notes: list[str] = []
    # a rounded allocation that moves is a failed guarantee; one that stays is context
    (warnings if linf else notes).append(_deterministic_note(rule, witness, linf, replace))
    details: dict[str, Any] = {
        "allocation": "proportional",
        "rounding": rule,
        "allocation_sensitivity": {"linf": linf, "l1": l1},
        "witness": witness,
        "strata_count": k,
        "strata": rows,
    }
    _randomized_side(p, mechanism, guarantee, eps0, details, notes)
    if not pure:
        warnings.append(
            "the upper bound is for pure ε-DP mechanisms: no upper bound with delta > 0"
        )
    if replace:
        notes.append(DETERMINISTIC_REPLACE_NOTE)
    return Analysis(
        guarantee_neighbours=guarantee,
        reference_epsilon=(lambda e: eps_r(e)) if replace else (lambda e: np.asarray(e, float)),
        upper=upper if pure else None,
        lower=lower,
        delta_prime=(lambda e: np.zeros(np.shape(e))) if pure else None,
        basis=BASIS_DETERMINISTIC,
        conditions=(
            "each stratum samples ⌊r·N_h⌉ (or ⌊r·N_h⌋) records without replacement: a "
            "deterministic function of the stratum size",
            "bounds at the stated stratum sizes: the pairs are the stated population and "
            "each of its neighbours",
            f"M is ε-DP under add-remove (declared: {mechanism.neighbours})"
            if not replace
            else f"M's replace-one ε_R (declared: {mechanism.neighbours})",
        ),
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
        invert_details=invert_details,
    )


def _deterministic_witness(
    p: Params,
    rd: _Rounded,
    replace: bool,
    eps0: float,
    er0: float,
    cross_value: Callable[[int, int, np.ndarray, bool], np.ndarray],
) -> dict[str, Any]:
    """The neighbour of the stated sizes whose witness gives the lower bound at ε."""
    names, size, steps = p.strata.names, rd.size, rd.steps
    e0 = np.asarray(eps0)

    def stratum(h: int, dn: int) -> dict[str, Any]:
        after = {-1: steps.removed, 0: steps.at, 1: steps.added}[dn]
        return {
            "name": names[h],
            "size": [int(size[h]), int(size[h]) + dn],
            "sample": [int(steps.at[h]), int(after[h])],
        }

    srs = (
        "Pr[M(S) = 1] ∝ e^{ε_R·[x ∈ S] − ε_R·|S|/2}, x the differing record (ε_R-DP under "
        "replace-one, ε-DP under add-remove as ε_R <= 2ε): loss A(m/N, ε_R), exact "
        f"(a simple random sample, {BUN_2022}, Theorem 2.2)"
    )
    empty = "none: the differing record is never sampled (m_h = 0), every M has loss 0"
    count = f"M(S) = |S| + Lap(1/ε) ({BUN_2022}, §4.1): loss Δ·ε, exact"
    best: dict[str, Any]
    if replace:
        h = int(np.argmax(rd.q_down))
        best = {
            "relation": "replace-one",
            "neighbour": f"a record of stratum {names[h]!r} replaced by another of the same "
            "stratum (every allocation unchanged)",
            "strata": [stratum(h, 0)],
            "mechanism": srs if steps.at[h] else empty,
            "epsilon_prime": float(_amp(rd.q_down[h], er0, False)),
        }
        for s, t in rd.cross:
            v = float(cross_value(s, t, e0, False))
            if v <= best["epsilon_prime"]:
                continue
            ds, dt = rd.cross_jumps(s, t)
            how = (
                "(|S_t| − |S_s|)/2 + Lap(1/ε_R) over the two strata's sample counts: the "
                "two allocation changes add up, loss ε_R, exact"
                if ds and dt
                else f"the changed stratum's sample count + Lap(1/min(ε, ε_R)) ({BUN_2022}, §4.1)"
            )
            best = {
                "relation": "replace-one",
                "neighbour": f"a record moved from stratum {names[s]!r} to {names[t]!r}",
                "strata": [stratum(s, -1), stratum(t, 1)],
                "mechanism": how,
                "epsilon_prime": v,
            }
        return best
    er = np.asarray(er0)
    vals = np.stack(
        [
            _step_values(steps.down, rd.q_down, e0, er, False),
            _step_values(steps.up, rd.q_up, e0, er, False),
        ]
    )  # (removed, added) x strata
    moves = np.stack([steps.down, steps.up])
    # the worst step; among equals, one that moves an allocation, then the first
    order = np.lexsort((np.arange(vals.size), -moves.ravel(), -vals.ravel()))
    side, h = divmod(int(order[0]), len(names))
    v, delta, dn = float(vals[side, h]), int(moves[side, h]), (-1 if side == 0 else 1)
    verb = "removed from" if dn < 0 else "added to"
    return {
        "relation": "add-remove",
        "neighbour": f"a record {verb} stratum {names[h]!r}",
        "strata": [stratum(h, dn)],
        "mechanism": count if delta else (srs if steps.at[h] else empty),
        "epsilon_prime": v,
    }


def _deterministic_note(rule: str, witness: dict[str, Any], linf: int, replace: bool) -> str:
    how = "round half up" if rule == "nearest" else "floor"
    if linf:
        moved = [s for s in witness["strata"] if s["sample"][0] != s["sample"][1]]
        if moved:
            s = moved[0]
            where = (
                f"{witness['neighbour']} takes stratum {s['name']!r} from N = {s['size'][0]} "
                f"to {s['size'][1]} and its sample from {s['sample'][0]} to {s['sample'][1]}"
            )
        else:
            where = "a neighbour of these sizes moves a stratum's rounded allocation by one"
        return (
            f"deterministic rounding ({how}): {where}, so a mechanism releasing a "
            f"stratum's sample count with Lap(1/ε) loses ε′ >= ε ({BUN_2022}, "
            "§4.1): no amplification. Randomised rounding (`rounding: randomized`, "
            "Theorem 7.2) fixes this."
        )
    rel = "replacement" if replace else "added or removed record"
    return (
        f"deterministic rounding ({how}): at these stratum sizes no {rel} changes a "
        "rounded allocation, so the design is a simple random sample without replacement "
        "in each stratum and the bounds are exact. Other sizes can move it "
        f"({BUN_2022}, §4.3: N = 14 → 15 at r = 0.1 takes ⌊rN⌉ from 1 to 2, "
        "and then ε′ >= ε)."
    )


def _randomized_side(
    p: Params,
    mechanism: Mechanism,
    guarantee: Neighbours,
    eps0: float,
    details: dict[str, Any],
    notes: list[str],
) -> None:
    """The same rates with randomised rounding, for comparison (``randomized_rounding``)."""
    try:
        fixed = _analyse_randomized(
            Params(allocation="proportional", rounding="randomized", rate=p.rate, strata=p.strata),
            Mechanism(
                epsilon=mechanism.epsilon,
                neighbours=mechanism.neighbours,
                epsilon_replace_one=mechanism.epsilon_replace_one,
            ),
            guarantee,
        )
        e0 = np.asarray(eps0)
        assert fixed.upper is not None and fixed.lower is not None
        side = {"lower": float(fixed.lower(e0)), "upper": float(fixed.upper(e0))}
        details["randomized_rounding"] = side
        notes.append(
            f"with randomised rounding the same rates give ε′ in [{side['lower']:.6g}, "
            f"{side['upper']:.6g}] at ε = {eps0:g}"
        )
    except ConditionError as err:
        details["randomized_rounding"] = None
        notes.append(f"randomised rounding would not be covered either: {err.message}")


def _per_stratum(values: Any, eps: Any) -> np.ndarray:
    """Per-stratum values against an evaluated ε of any shape: shape (k, *eps.shape)."""
    return np.asarray(values, dtype=float).reshape((-1,) + (1,) * np.ndim(eps))


def _analyse_poisson(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Stratified Poisson sampling: the ``poisson`` family's results at the largest rate.

    A record of stratum h is kept with probability r_h independently of everything
    else, so an addition or removal is the Poisson case at r_h <= r_max (Lemma 3.3,
    tight at the stratum of largest rate). A replacement may move a record between
    strata of different rates, where the inclusion coins cannot be coupled:
    ``poisson.replace_one_analysis`` without the coupling candidate (with it when all
    rates are equal, which makes the design one Poisson sample).
    """
    from ampcalc.schemes import poisson

    _need_add_remove(mechanism, f"Stratified Poisson sampling ({BUN_2020_WP}, Lemma 3.3)")
    r = p.rates()
    n = p.strata.size.astype(float)
    r_max = float(r.max())
    replace = guarantee is Neighbours.REPLACE_ONE
    conditions = (
        "each record of stratum h is kept independently with probability r_h, "
        "not depending on the data; the sample is secret",
    )
    if replace:
        equal = bool(np.all(r == r_max))
        base = poisson.replace_one_analysis(r_max, mechanism, conditions=conditions, coupled=equal)
    else:
        base = assemble(poisson.theorem(r_max, conditions), mechanism)
    eps_r = base.reference_epsilon

    def details_at(eps: np.ndarray) -> dict[str, Any]:
        rr = _per_stratum(r, eps)
        e = eps_r(eps) if replace else np.asarray(eps, dtype=float)
        rows = alloc.strata_rows(
            p,
            r,
            r * n,
            numeric.amplification_lower(rr, e),
            numeric.amplification_upper(rr, e),
        )
        out: dict[str, Any] = {"strata": rows}
        if base.details_at is not None:
            out.update(base.details_at(eps))
        return out

    def invert_details(target: np.ndarray) -> dict[str, Any]:
        t = np.asarray(target, dtype=float)
        if t.ndim:
            return {}
        tt = float(t) / 2.0 if replace else float(t)

        def per(e: Any) -> np.ndarray:
            return numeric.amplification_upper(r, e)

        cert = numeric.certify_down(
            per, numeric.round_down(numeric.amplification_inverse(r, tt)), tt
        )
        imp = numeric.certify_up(
            lambda e: numeric.amplification_lower(r, e),
            numeric.round_up(numeric.amplification_inverse(r, float(t))),
            float(t),
        )
        return {"strata": alloc.invert_rows(p, r, r * n, cert, imp)}

    return dataclasses.replace(
        base,
        basis=(*BASIS_POISSON, *base.basis[len(poisson.BASIS) :]),
        details={
            "allocation": "poisson",
            "rate_max": r_max,
            "tight": not replace,
            "strata_count": len(p.strata),
        },
        details_at=details_at,
        invert_details=invert_details,
    )


def _analyse_fixed(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Fixed allocation: the ``srswor`` family's Theorem 2.2 in the stratum of largest
    sampling fraction (a replacement inside a stratum is a simple random sample's)."""
    from ampcalc.schemes import srswor

    if guarantee is not Neighbours.REPLACE_ONE:
        raise ConditionError(
            f"fixed allocation: Theorem 2.2 ({BUN_2022}) holds per stratum for "
            "replace-one neighbours of a stratum of fixed, public size; adding or removing a "
            "record changes N_h and no theorem covers it. Set `guarantee: replace-one`."
        )
    m = p.strata.sample
    n = p.strata.size.astype(float)
    q = m / n
    top = int(np.argmax(q))
    worst = srswor.theorem(srswor.Params(population=int(p.strata.size[top]), sample=int(m[top])))
    ratio = mechanism.replace_one_ratio()
    eps_r = mechanism.epsilon_replace_one_of

    def details_at(eps: np.ndarray) -> dict[str, Any]:
        qq, e = _per_stratum(q, eps), eps_r(eps)
        rows = alloc.strata_rows(
            p,
            q,
            m.astype(np.int64),
            numeric.amplification_lower(qq, e),
            numeric.amplification_upper(qq, e),
        )
        return {"strata": rows}

    def invert_details(target: np.ndarray) -> dict[str, Any]:
        t = np.asarray(target, dtype=float)
        if t.ndim:
            return {}

        def per_u(e: Any) -> np.ndarray:
            return numeric.amplification_upper(q, eps_r(e))

        def per_l(e: Any) -> np.ndarray:
            return numeric.amplification_lower(q, eps_r(e))

        inv = numeric.amplification_inverse(q, float(t)) / ratio
        cert = numeric.certify_down(per_u, numeric.round_down(inv), float(t))
        imp = numeric.certify_up(per_l, numeric.round_up(inv), float(t))
        return {"strata": alloc.invert_rows(p, q, m.astype(np.int64), cert, imp)}

    theorem = dataclasses.replace(
        worst,
        basis=BASIS_FIXED,
        conditions=(
            "per-stratum sample sizes m_h fixed in advance (data-independent), strata sizes "
            "public; simple random sampling without replacement in each stratum",
        ),
        relation_words="",
    )
    return assemble(
        theorem,
        mechanism,
        details={
            "allocation": "fixed",
            "rate_max": float(q[top]),
            "strata_count": len(p.strata),
        },
        details_at=details_at,
        warnings=(
            "fixed allocation: the guarantee covers replacing a record by another of the "
            "same stratum; moving a record across strata changes the public stratum sizes "
            "and is not covered by any theorem here.",
        ),
        invert_details=invert_details,
    )


def neyman_allocations(p: Params) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The Neyman allocation on P and on its worst neighbour P′ (000 Appendix E.1).

    P′ moves the lowest stratum's smallest record (``min_value``) to the top-code U,
    which puts it in the top stratum: the lowest stratum loses it, the top stratum
    gains a record of value U, sizes, means and SDs updated exactly
    (``_allocation.remove_record`` / ``add_record``). Given ``allocations``, those
    vectors are used as they are.
    """
    if p.allocations is not None:
        return p.allocations[0], p.allocations[1], {"source": "allocations given"}
    s = p.strata
    k = len(s)
    assert p.total_sample is not None and p.value_bound is not None
    m0 = alloc.neyman(s.size, s.sd, p.total_sample)
    size1 = s.size.copy()
    sd1 = s.sd.astype(float).copy()
    low = alloc.remove_record(
        alloc.StratumStats(int(s.size[0]), float(s.mean[0]), float(s.sd[0])),
        float(s.min_value[0]),
    )
    if k == 1:
        top = alloc.add_record(low, p.value_bound)
        size1[0], sd1[0] = top.size, top.sd
    else:
        high = alloc.add_record(
            alloc.StratumStats(int(s.size[-1]), float(s.mean[-1]), float(s.sd[-1])),
            p.value_bound,
        )
        size1[0], sd1[0] = low.size, low.sd
        size1[-1], sd1[-1] = high.size, high.sd
    m1 = alloc.neyman(size1, sd1, p.total_sample)
    info = {
        "source": "computed: Neyman m_h ∝ N_h·S_h, capped at N_h, largest remainder",
        "neighbour": (
            f"the lowest stratum's record at min_value = {float(s.min_value[0]):g} moved "
            f"to value_bound = {p.value_bound:g} (into the top stratum)"
        ),
    }
    return m0, m1, info


def _analyse_neyman(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    m0, m1, info = neyman_allocations(p)
    diff = (m1 - m0).astype(np.int64)
    linf = int(np.max(np.abs(diff)))
    l1 = int(np.sum(np.abs(diff)))
    e_d_known = mechanism.epsilon_add_remove_known()
    eps_r = mechanism.epsilon_replace_one_of
    replace = guarantee is Neighbours.REPLACE_ONE

    def lower_replace(eps: np.ndarray) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        er = eps_r(e)
        ed = e if e_d_known else np.full(e.shape, np.inf)
        # one stratum's sample count + Lap(1/e): e-DP under both relations -> Δ∞·e;
        # every count + Lap(1/e): e-DP add-remove, 2e replace-one -> Δ₁·e
        one = linf * np.minimum(ed, er)
        every = l1 * np.minimum(ed, er / 2.0)
        return numeric.round_down(np.maximum(one, every))

    def lower(eps: np.ndarray) -> np.ndarray:
        if replace:
            return lower_replace(eps)
        # an ε′ add-remove guarantee implies 2ε′ replace-one: ε′ >= (replace-one loss)/2
        return numeric.round_down(lower_replace(eps) / 2.0)

    k = len(p.strata)
    n = p.strata.size

    def impossible_above(target: np.ndarray) -> np.ndarray:
        t = np.asarray(target, dtype=float)
        slope = float(lower(np.asarray(1.0)))  # the lower bound is linear in ε
        if slope <= 0:
            return np.full(t.shape, np.inf)
        return numeric.certify_up(lower, numeric.round_up(t / slope), t)

    def invert_details(target: np.ndarray) -> dict[str, Any]:
        t = np.asarray(target, dtype=float)
        if t.ndim:
            return {}
        imp = impossible_above(t)
        return {"strata": alloc.invert_rows(p, m0 / np.maximum(n, 1), m0, None, imp)}

    eps0 = _scalar_eps(mechanism)
    lo0 = float(lower(np.asarray(eps0)))
    rows = alloc.strata_rows(p, m0 / np.maximum(n, 1), m0, np.full(k, np.nan), None)
    for row in rows:
        row["epsilon_prime"]["lower"] = None
    if not e_d_known and not replace:
        raise ConditionError(
            "Neyman allocation with an add-remove guarantee needs M's add-remove ε; "
            "`neighbours: replace-one` leaves it unknown. Use `guarantee: replace-one`."
        )
    warnings = [
        "degradation: no amplification guarantee exists. The Neyman allocation is a "
        "deterministic function of the data (stratum sizes and SDs); moving one record "
        f"changes it by Δ∞ = {linf} (one stratum) and Δ₁ = {l1} (all strata), so a "
        f"mechanism releasing the sample counts with Lap(1/ε) loses at least Δ·ε "
        f"({BUN_2022}, §4.1, §7.2).",
    ]
    notes: list[str] = []
    if not replace:
        notes.append(
            "the worst neighbour is a replacement (a record moved across strata); under an "
            "add-remove guarantee ε′ the loss for it is at most 2ε′, so ε′ >= half the "
            "replace-one lower bound"
        )
    if p.allocations is None:
        notes.append(
            "allocation rounding (not specified in the paper): largest remainder, capped at "
            "N_h; sd taken with divisor N_h − 1"
        )
    notes.append(neyman_sums_note(int(m0.sum()), int(m1.sum()), given=p.allocations is not None))
    details: dict[str, Any] = {
        "allocation": "neyman",
        "allocation_sensitivity": {"linf": linf, "l1": l1},
        "allocations": [m0.tolist(), m1.tolist()],
        "allocation_sums": [int(m0.sum()), int(m1.sum())],
        "lower_bounds": {"linf": linf * eps0, "l1": l1 * eps0},
        "allocation_source": info["source"],
        "strata_count": k,
        "strata": rows,
    }
    if "neighbour" in info:
        details["neighbour"] = info["neighbour"]
    return Analysis(
        guarantee_neighbours=guarantee,
        reference_epsilon=(lambda e: eps_r(e)) if replace else (lambda e: np.asarray(e, float)),
        upper=None,
        lower=lower,
        delta_prime=None,
        basis=BASIS_NEYMAN,
        conditions=(
            "Neyman allocation m_h ∝ N_h·S_h with a fixed total: deterministic and data-dependent",
            f"lower bound at ε = {eps0:g}: {lo0:.6g}",
        ),
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
        impossible_above=impossible_above,
        invert_details=invert_details,
    )


def neyman_sums_note(total_p: int, total_neighbour: int, *, given: bool) -> str:
    """The erratum of 000 §7.2 / Appendix E.1: its Neyman vectors for m = 10,000 sum to
    10,004 and 10,005 (spec §8.3, §11 item 10), with this design's own sums."""
    whose = "the allocations given here" if given else "ampcalc's allocations here"
    return (
        f"{cite(BUN_2022, '§7.2')} and {cite(BUN_2022, 'Appendix E.1')} print Neyman "
        "allocations for a total of m = 10,000 whose entries sum to 10,004 (P) and 10,005 "
        "(its neighbour P′): the paper's rounding is not stated, and only the vectors' "
        f"differences (Δ∞ = 19, Δ₁ = 37 there) enter the bound; {whose} sum to "
        f"{total_p} and {total_neighbour} (details.allocation_sums)."
    )


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one stratified design (see the bound functions for the theorems)."""
    if params.allocation == "proportional":
        if params.total_sample is not None:
            from ampcalc.schemes._fixed_total import analyse_fixed_total

            return analyse_fixed_total(params, mechanism, guarantee)
        if params.rounding == "randomized":
            return _analyse_randomized(params, mechanism, guarantee)
        return _analyse_deterministic(params, mechanism, guarantee)
    if params.allocation == "poisson":
        return _analyse_poisson(params, mechanism, guarantee)
    if params.allocation == "fixed":
        return _analyse_fixed(params, mechanism, guarantee)
    return _analyse_neyman(params, mechanism, guarantee)


# --------------------------------------------------------------------------------------
# `ampcalc compare`: privacy against variance (000_97a39a4c524f603f.txt §7.1–7.2)
# --------------------------------------------------------------------------------------

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
        from ampcalc.schemes._fixed_total import sensitivity

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


def _verify_hook(
    params: Params,
    mechanism: Mechanism,
    pairs: str = "default",
    limit: int = 5000,
    guarantee: Neighbours | None = None,
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.verify).

    Records are distinct symbols, strata independent (a product of per-stratum samples):
    proportional allocation with randomised rounding (⌊rN_h⌋ or ⌈rN_h⌉ records, the
    latter with probability frac(rN_h)) or deterministic rounding (⌊rN_h⌉ or ⌊rN_h⌋,
    recomputed from each dataset's own stratum sizes), Poisson (each record kept with
    probability r_h), fixed (m_h records). Every pair has the stated sizes on one side.

    ``guarantee`` add-remove (the default except for fixed allocation; stratified DP,
    Definition 7.1): for every stratum h, a record x added to h (N_h vs N_h + 1) and x
    one of h's N_h records (N_h − 1 vs N_h; for randomised rounding only where
    r·(N_h − 1) >= 1 keeps Theorem 7.2's condition). ``all`` adds the same pairs over a
    two-value universe. Replace-one (the default for fixed allocation): x replaced by x′
    in the same stratum, and — not for fixed allocation, whose guarantee is for
    replacements within a stratum — x moved from stratum s to t for every s != t.
    ``ampcalc verify`` passes the guarantee the design asks for.
    """
    from ampcalc.schemes import exact as V

    kind = params.allocation
    if kind == "neyman":
        raise ConditionError(
            "no exact tiny-instance enumeration for neyman allocation (it depends on the "
            "records' values): the verify hook covers proportional, poisson and fixed "
            "allocation"
        )
    total = params.total_sample if kind == "proportional" else None
    if mechanism.delta > 0:
        raise ConditionError("the exact programme is for pure ε-DP (delta = 0)")
    if not params.strata.sizes_known:
        raise ConditionError("the stratum sizes are needed to enumerate samples")
    if guarantee is None:
        guarantee = Neighbours.REPLACE_ONE if kind == "fixed" else Neighbours.ADD_REMOVE
    if kind == "fixed" and guarantee is not Neighbours.REPLACE_ONE:
        raise ConditionError("fixed allocation gives a replace-one guarantee only")
    V.check_distinct_domain(int(params.strata.size.sum()) + 1, 1, limit)  # before listing
    rates = [float(x) for x in params.rates()] if total is None else []
    sizes = [int(x) for x in params.strata.size]
    fixed_m = [int(x) if math.isfinite(x) else 0 for x in params.strata.sample]
    rule = params.rounding or "nearest"
    randomized = kind == "proportional" and rule == "randomized" and total is None
    rel = V.relations_of(mechanism)
    # a fixed total: every stratum's sample size depends on all the sizes of its dataset
    # (set by ``instance`` before the strata are enumerated); drawn = min(m_h, N_h)
    dataset_sizes: list[int] = []
    names = params.strata.names

    def size_probs(rate: float, n: int) -> dict[int, float]:
        x = rate * n
        if abs(x - round(x)) < 1e-9:
            return {min(n, round(x)): 1.0}
        lo = math.floor(x)
        return {lo: 1.0 - (x - lo), lo + 1: x - lo}

    def allocation(h: int, n: int) -> int:
        if kind == "fixed":
            return fixed_m[h]
        if total is not None:
            from ampcalc.schemes._fixed_total import apportion

            return min(apportion(dataset_sizes, total, rule)[h], n)
        rounded = alloc.round_proportional(np.array([rates[h]]), np.array([n]), rule)
        return int(rounded[0])

    def stratum(h: int, counts: tuple[int, ...]) -> dict[Any, float]:
        n = sum(counts)
        if kind == "poisson":
            return V.poisson_distribution(counts, rates[h])
        if randomized:
            return V.srswor_size_mixture(counts, size_probs(rates[h], n))
        m = allocation(h, n)
        if m > n:
            raise ConditionError(
                f"stratum {names[h]!r}: a sample of {m} from {n} records is impossible"
            )
        return V.srswor_distribution(counts, m)

    def largest(h: int, n: int) -> int:
        if kind == "poisson" or total is not None:
            return n
        return math.ceil(rates[h] * n - 1e-9) if randomized else allocation(h, n)

    top = sum(largest(h, n + 1) for h, n in enumerate(sizes))
    V.check_distinct_domain(sum(sizes) + 1, top, limit)

    def instance(label: str, strata_syms: list[list[str]], p_counts: Any, pp_counts: Any) -> Any:
        symbols = tuple(s for syms in strata_syms for s in syms)
        dataset_sizes[:] = [sum(c) for c in p_counts]
        p = V.product_distribution([stratum(h, c) for h, c in enumerate(p_counts)])
        dataset_sizes[:] = [sum(c) for c in pp_counts]
        pp = V.product_distribution([stratum(h, c) for h, c in enumerate(pp_counts)])
        return V.Instance(label=label, symbols=symbols, caps=(1,) * len(symbols), p=p, p_prime=pp)

    def records(h: int, n: int) -> list[str]:
        return [f"s{h + 1}.{i + 1}" for i in range(n)]

    insts: list[Any] = []
    if guarantee is Neighbours.ADD_REMOVE:
        for h, n_h in enumerate(sizes):
            for extra in (1, 0):  # x added to the N_h records, or x one of them
                base = n_h - 1 + extra
                if extra == 0 and (base < 0 or (randomized and rates[h] * base < 1.0)):
                    continue
                syms = [
                    records(j, n) if j != h else [*records(j, base), "x"]
                    for j, n in enumerate(sizes)
                ]
                with_x = [tuple(1 for _ in s) for s in syms]
                without = [(*c[:-1], 0) if j == h else c for j, c in enumerate(with_x)]
                label = f"stratum {names[h]!r}: {base} vs {base + 1} records (x added)"
                inst = instance(label, syms, without, with_x)
                insts.append(inst)
                if pairs == "all":
                    group_of = tuple(j for j, s in enumerate(syms) for _ in s)
                    x = inst.symbols.index("x")
                    insts += V.value_instances(
                        label, group_of, x, inst.p, inst.p_prime, top, limit
                    )
    else:
        moves = [(h, h) for h in range(len(sizes))]
        if kind != "fixed":
            moves += [(s, t) for s in range(len(sizes)) for t in range(len(sizes)) if s != t]
        for s, t in moves:
            syms = [records(j, n - (j == s)) for j, n in enumerate(sizes)]
            syms[s].append("x")
            syms[t].append("x'")
            p_counts = [tuple(0 if y == "x'" else 1 for y in ss) for ss in syms]
            pp_counts = [tuple(0 if y == "x" else 1 for y in ss) for ss in syms]
            where = (
                f"x replaced by x′ in stratum {names[s]!r}"
                if s == t
                else f"x moved from stratum {names[s]!r} to {names[t]!r}"
            )
            insts.append(instance(where, syms, p_counts, pp_counts))
    if not insts:
        raise ConditionError("no stratum admits a neighbouring pair")
    used = {sum(k) for inst in insts for d in (inst.p, inst.p_prime) for k in d}
    return V.Plan(instances=tuple(insts), sizes=V.sizes_for(rel, [top, *used]), relations=rel)


SCHEME = Scheme(
    name="stratified",
    summary=(
        "stratified sample: proportional (randomised rounding), Poisson, fixed or Neyman "
        "allocation; stratified DP per stratum"
    ),
    params=Params,
    fields=FIELDS,
    mechanism_relation="add-remove (or both); replace-one for fixed allocation",
    guarantees=(Neighbours.ADD_REMOVE, Neighbours.REPLACE_ONE),
    basis=BASIS,
    analyse=analyse,
    example={
        "allocation": "proportional",
        "rate": 0.02,
        "strata": [{"name": "small", "size": 12000}, {"name": "large", "size": 900}],
    },
    parse_params=parse_params,
    compare=compare,
    verify_plan=_verify_hook,
    verify_plan_takes_guarantee=True,
)
