"""Stratified designs: the parameters, their fields and the strata readers (inline
lists, CSV files, allocation vectors), with the rules of each allocation checked
while loading."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.files import excerpt
from ampcalc.model.limits import LIMITS
from ampcalc.schemes.base import Field

MAX_EXACT_INT = 2**53


ALLOCATIONS = ("proportional", "poisson", "fixed", "neyman")


ROUNDINGS = ("randomized", "nearest", "floor", "largest-remainder", "huntington-hill")


TOTAL_ROUNDINGS = ("nearest", "floor", "largest-remainder", "huntington-hill")


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
            apportioned as n·N_h/N by ``rounding`` (``fixed_total``, 001 §3, §3.1).
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

    from ampcalc.load.table import NOT_CSV, did_you_mean, plainly_not_a_header, read_table

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
    if plainly_not_a_header(header) and not set(header) & set(STRATUM_KEYS):
        raise err(
            f"{path}:{table.header_line}: {NOT_CSV}: expected a header with columns "
            f"{', '.join(STRATUM_KEYS)}"
        )
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
