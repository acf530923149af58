"""Stratified designs: the parameters, their fields and the strata readers (inline
lists, CSV files, allocation vectors), with the rules of each allocation checked
while loading."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.fields import is_whole
from ampcalc.load.files import excerpt
from ampcalc.model.errors import DesignError
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
            apportioned as n·N_h/N by ``rounding`` (``fixed_total``, Bun et al. 2020 §3, §3.1).
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


#: an error at one stratum's key, to be raised: ``at(i, key)(message)``
AtStratum = Callable[[int, str], Callable[[str], Exception]]

_STRATUM_SPECS = {f.name: f for f in STRATUM_FIELDS}


def _strata(
    names: Sequence[str],
    size: np.ndarray,
    columns: Mapping[str, np.ndarray],
    *,
    sizes_known: bool = True,
) -> Strata:
    """``Strata`` from the stratum names, the sizes and the columns given (the others NaN)."""
    nan = np.full(len(names), np.nan)
    return Strata(
        names=tuple(names),
        size=size,
        rate=columns.get("rate", nan),
        sample=columns.get("sample", nan),
        sd=columns.get("sd", nan),
        mean=columns.get("mean", nan),
        min_value=columns.get("min_value", nan),
        sizes_known=sizes_known,
    )


def _read_inline(raw: Any, reader: Any) -> tuple[Strata, AtStratum]:
    """Strata listed inline: one mapping of ``STRATUM_FIELDS`` per stratum."""
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


def _columns(rows: list[dict[str, Any]]) -> Strata:
    """The inline strata's fields as columns (NaN where a stratum leaves one out)."""

    def col(key: str) -> np.ndarray:
        return np.array([np.nan if r[key] is None else float(r[key]) for r in rows], dtype=float)

    names = [
        f"stratum {i + 1}" if r["name"] is None else str(r["name"]) for i, r in enumerate(rows)
    ]
    size = np.array([r["size"] for r in rows], dtype=np.int64).reshape(len(rows))
    return _strata(
        names, size, {key: col(key) for key in STRATUM_KEYS if key not in ("name", "size")}
    )


def _read_csv(raw: Mapping[str, Any], reader: Any) -> tuple[Strata, AtStratum]:
    """Strata from ``{file: strata.csv}``: a header of ``STRATUM_KEYS`` (``size``
    required), then one stratum a row."""
    path = _csv_path(raw, reader)

    def err(msg: str) -> Any:
        return reader.error("sampling.strata.file", msg, container=raw, key="file")

    from ampcalc.load.table import read_table  # lazy: start-up (bound)

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
    _check_csv_header(table, header, path, err)
    cells = {h: table.cells(j) for j, h in enumerate(header)}
    columns = {h: _csv_numbers(table, h, c, err) for h, c in cells.items() if h != "name"}
    names = cells.get("name") or [""] * len(table)

    def at(i: int, key: str) -> Any:
        return lambda msg: err(f"{table.at(i)}: stratum {i + 1}, {key}: {msg}")

    return _strata(
        [n if n else f"stratum {i + 1}" for i, n in enumerate(names)],
        columns["size"].astype(np.int64),
        columns,
    ), at


def _csv_path(raw: Mapping[str, Any], reader: Any) -> Any:
    """The strata file of ``{file: strata.csv}`` (its only key), resolved."""
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
    return reader.resolve(raw["file"])


def _check_csv_header(table: Any, header: list[str], path: Any, err: Any) -> None:
    """The header names known columns, ``size`` among them; every row has its width."""
    from ampcalc.load.table import (  # lazy: start-up (bound)
        NOT_CSV,
        did_you_mean,
        plainly_not_a_header,
    )

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


def _csv_numbers(table: Any, column: str, cells: list[str], err: Any) -> np.ndarray:
    """One numeric column of the strata file, every cell in its field's domain (an
    empty cell is NaN: not given)."""
    from ampcalc.load.table import is_number  # lazy: start-up (bound)

    spec = _STRATUM_SPECS[column]
    values = np.full(len(cells), np.nan)
    for i, cell in enumerate(cells):
        if cell == "":
            if spec.required:
                raise err(f"{table.at(i)}: empty {column!r}; expected {spec.domain()}")
            continue
        value = float(cell) if is_number(cell) else math.nan
        if not spec.admits(value):
            raise err(
                f"{table.at(i)}: column {column!r}: expected {spec.domain()}, got {excerpt(cell)}"
            )
        values[i] = value
    return values


def _read_allocations(raw: Any, reader: Any, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    def err(msg: str) -> Any:
        return reader.error("sampling.allocations", msg)

    shape_msg = "expected two lists of whole numbers >= 0: [[m_1, ..., m_k], [m′_1, ..., m′_k]]"
    if not isinstance(raw, list) or len(raw) != 2 or not all(isinstance(v, list) for v in raw):
        raise err(shape_msg)
    vecs = []
    for v in raw:
        if not v or not all(is_whole(x) for x in v):  # .inf and .nan too
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
    if values["allocations"] is not None and allocation != "neyman":
        raise _error(reader, "allocations", "`allocations` is for `allocation: neyman`")
    strata, at, allocations = _read_strata(values, reader)
    if len(strata) > LIMITS["strata"].value:
        raise _error(reader, "strata", LIMITS["strata"].message(len(strata)))
    fixed_total = allocation == "proportional" and values["total_sample"] is not None
    rounding = _read_rounding(values, fixed_total, reader)
    _check_rates(values, fixed_total, strata, reader, at)
    if values["total_sample"] is not None and allocation not in ("neyman", "proportional"):
        raise _error(
            reader, "total_sample", "`total_sample` is for neyman or proportional allocation"
        )
    if allocation == "fixed":
        assert at is not None  # strata without sizes come with allocation: neyman only
        _check_fixed_samples(strata, at)
    if allocation == "neyman" and allocations is None:
        _check_neyman(values, strata, reader, at)
    return Params(
        allocation=allocation,
        rounding=rounding,
        rate=values["rate"],
        strata=strata,
        size_aware=bool(values["size_aware"]),
        total_sample=values["total_sample"],
        value_bound=values["value_bound"],
        allocations=allocations,
    )


def _error(reader: Any, key: str, message: str) -> Any:
    """An error at ``sampling.KEY``, to be raised."""
    return reader.error(f"sampling.{key}", message)


def _read_strata(
    values: dict[str, Any], reader: Any
) -> tuple[Strata, AtStratum | None, tuple[np.ndarray, np.ndarray] | None]:
    """(strata, where their keys stand, the two Neyman allocation vectors or None):
    ``strata:`` inline or a CSV file, or, without it, strata of unknown sizes with
    the sample sizes of ``allocations:``."""
    raw, allocations = values["strata"], values["allocations"]
    if raw is None:
        if allocations is None:
            raise reader.error(
                "sampling",
                "missing required key 'strata' (a list of strata with `size:`, or "
                "{file: strata.csv})",
            )
        vectors = _read_allocations(allocations, reader, None)
        k = vectors[0].size
        size = np.maximum(vectors[0], vectors[1]).astype(np.int64)
        names = [f"stratum {i + 1}" for i in range(k)]
        return _strata(names, size, {}, sizes_known=False), None, vectors
    if isinstance(raw, Mapping):
        strata, at = _read_csv(raw, reader)
    elif isinstance(raw, list):
        strata, at = _read_inline(raw, reader)
    else:
        raise _error(reader, "strata", "expected a list of strata or {file: strata.csv}")
    if len(strata) == 0:
        raise _error(reader, "strata", "expected at least one stratum")
    if allocations is None:
        return strata, at, None
    return strata, at, _read_allocations(allocations, reader, len(strata))


def _read_rounding(values: dict[str, Any], fixed_total: bool, reader: Any) -> str | None:
    """``rounding:`` (proportional only; randomized by default) and ``size_aware``."""
    allocation = values["allocation"]
    rounding: str | None = values["rounding"]
    if allocation != "proportional" and rounding is not None:
        raise _error(reader, "rounding", "`rounding` is for `allocation: proportional`")
    if fixed_total:
        _check_fixed_total(values, rounding, reader)
    elif allocation == "proportional" and rounding in ("largest-remainder", "huntington-hill"):
        raise _error(
            reader,
            "rounding",
            f"`rounding: {rounding}` apportions a fixed total: give `total_sample` (not `rate`)",
        )
    if allocation == "proportional" and rounding is None:
        rounding = "randomized"
    if values["size_aware"] and not (allocation == "proportional" and rounding == "randomized"):
        raise _error(
            reader,
            "size_aware",
            "`size_aware` is for proportional allocation with randomized rounding",
        )
    return rounding


def _check_rates(
    values: dict[str, Any],
    fixed_total: bool,
    strata: Strata,
    reader: Any,
    at: AtStratum | None,
) -> None:
    """Proportional and Poisson allocations take one common ``rate`` or one for every
    stratum; the others (and a fixed total) take none."""
    allocation, rate = values["allocation"], values["rate"]
    has_rate = ~np.isnan(strata.rate)
    if allocation in ("proportional", "poisson") and not fixed_total:
        if rate is not None and has_rate.any():
            raise _error(
                reader, "rate", "give one common `rate` or a `rate` for every stratum, not both"
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
        return
    if fixed_total:
        unused = (
            "a stratum `rate` is not used with `total_sample` (the total is apportioned "
            "by the stratum sizes)"
        )
    else:
        if rate is not None:
            raise _error(
                reader,
                "rate",
                f"`rate` is for proportional or poisson allocation, not {allocation}",
            )
        unused = f"a stratum `rate` is for proportional or poisson allocation, not {allocation}"
    if has_rate.any() and at is not None:
        raise at(int(np.argmax(has_rate)), "rate")(unused)


def _check_fixed_samples(strata: Strata, at: AtStratum) -> None:
    """``allocation: fixed``: every stratum has its ``sample`` m_h, 1 <= m_h <= N_h."""
    missing = np.isnan(strata.sample)
    if missing.any():
        i = int(np.argmax(missing))
        raise at(i, "sample")(
            f"stratum {strata.names[i]!r} has no `sample`; `allocation: fixed` needs "
            "each stratum's sample size"
        )
    over = strata.sample > strata.size
    if over.any():
        i = int(np.argmax(over))
        raise at(i, "sample")(
            f"sample {int(strata.sample[i])} is larger than the stratum size "
            f"{int(strata.size[i])}; expected 1 <= sample <= size"
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
