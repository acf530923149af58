"""Planner designs: a ``plan`` file -> a validated, frozen ``PlannerDesign``.

A planner design names the *population-level* target (ε, δ) the release must meet, an
SRSWOR sampling frame (population N; a fixed ``sample`` or a grid of ``rates``) and a
``statistic:`` block (``mean`` | ``median`` | ``custom``)::

    target: {epsilon_prime: 1.0, delta_prime: 4.9995e-5}
    sampling: {scheme: srswor, population: 10001}
    statistic: {kind: mean, range: 1.0, variance: 0.0106838, rates: [0.01, 0.1, 1.0]}

Reading checks it field by field, as a design file is checked (``load.fields``); a
failure is a ``DesignError`` at the file, line, column and field. ``analyses.plan``
computes the plan of the ``PlannerDesign`` this returns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.designs.document import parse_yaml, read_source
from ampcalc.load.fields import Field, MarkedList, Reader, check_keys, mapping, number
from ampcalc.load.files import excerpt
from ampcalc.math.accuracy import median_sample_size
from ampcalc.model.errors import DesignError, Where


def _f(name: str, kind: str, doc: str, **kw: Any) -> Field:
    return Field(name=name, kind=kind, doc=doc, **kw)


KINDS = ("mean", "median", "custom")

_TOP = ("name", "description", "target", "sampling", "statistic")
_TARGET = (
    _f(
        "epsilon_prime",
        "float",
        "population-level target ε",
        required=True,
        low=0.0,
        low_open=True,
    ),
    _f(
        "delta_prime",
        "float",
        "population-level target δ",
        default=0.0,
        low=0.0,
        high=1.0,
        high_open=True,
    ),
)
_SAMPLING = (
    _f("scheme", "choice", "sampling scheme", required=True, choices=("srswor",)),
    _f("population", "int", "population size N", low=1),
    _f("sample", "int", "a fixed sample size n (instead of statistic.rates)", low=1),
)
_STAT = (
    _f("kind", "choice", "statistic", required=True, choices=KINDS),
    _f("range", "float", "R = U − L, the data range (mean)", low=0.0, low_open=True),
    _f("bounds", "any", "public data bounds [L, U]"),
    _f("variance", "any", "S_N² (mean) or Var(g(S)) per rate (custom)"),
    _f("data", "str", "a file of values, one per line"),
    _f("rates", "any", "sampling rates: a list, or {from, to, steps, log}"),
    _f(
        "simulations",
        "int",
        "simulated samples per rate (median)",
        default=200,
        low=1,
        high=100000,
    ),
    _f("seed", "int", "random seed of the simulations (median)", default=1, low=0),
    _f("sensitivity_sample", "any", "Δ_n: a number or one per rate (custom)"),
    _f("sensitivity_population", "float", "Δ_N (custom)", low=0.0, low_open=True),
    _f("table", "any", "custom: rows of {rate, variance, sensitivity_sample}"),
)
_ROW = (
    _f("rate", "float", "a sampling rate", required=True, low=0.0, low_open=True, high=1.0),
    _f("variance", "float", "Var(g(S)) at this rate", required=True, low=0.0),
    _f("sensitivity_sample", "float", "Δ_n at this rate", low=0.0, low_open=True),
)
_GRID = (
    _f("from", "float", "smallest rate", required=True, low=0.0, low_open=True, high=1.0),
    _f("to", "float", "largest rate", required=True, low=0.0, low_open=True, high=1.0),
    _f("steps", "int", "number of rates", required=True, low=1, high=10000),
    _f("log", "bool", "log-spaced", default=False),
)
_RATE = _f("rate", "float", "a sampling rate", low=0.0, low_open=True, high=1.0)
_POS = _f("value", "float", "a number", low=0.0)
_POS_OPEN = _f("value", "float", "a number", low=0.0, low_open=True)
_BOUND = _f("bound", "float", "a data bound")


# --------------------------------------------------------------------------------------
# The typed planner design
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MeanStatistic:
    """The Laplace mean (Hu et al. 2023, §4.2): the data range R and S_N².

    Attributes:
        value_range: R = U − L (``range:``, or the width of ``bounds:``).
        variance: S_N², given, or the ``data:`` file's variance (ddof 1).
    """

    value_range: float
    variance: float


@dataclass(frozen=True, kw_only=True)
class MedianStatistic:
    """The smooth-sensitivity median (Hu et al. 2023, §4.3) of the population's values.

    Attributes:
        values: the population (the ``data:`` file; N odd).
        lower, upper: the public data bounds [L, U].
        simulations: simulated samples per rate; seed: their random seed.
    """

    values: tuple[float, ...]
    lower: float
    upper: float
    simulations: int
    seed: int


@dataclass(frozen=True, kw_only=True)
class CustomStatistic:
    """Any Laplace-noised statistic (Hu et al. 2023, eq. 5), one figure per rate.

    Attributes:
        variances: Var(g(S)) at each rate.
        sensitivity_sample: Δ_n at each rate.
        sensitivity_population: Δ_N.
    """

    variances: tuple[float, ...]
    sensitivity_sample: tuple[float, ...]
    sensitivity_population: float


@dataclass(frozen=True, kw_only=True)
class PlannerDesign:
    """A validated planner design.

    Attributes:
        title: the design's ``name:`` (its file name when absent).
        epsilon_prime, delta_prime: the population-level target (ε, δ).
        population: N.
        rates: the sampling rates to plan (a custom ``table:``'s rates, in its order).
        sample: the fixed sample size ``sampling.sample`` (``None``: n from each rate).
        statistic: what is released, with its figures.
    """

    title: str
    epsilon_prime: float
    delta_prime: float
    population: int
    rates: tuple[float, ...]
    sample: int | None
    statistic: MeanStatistic | MedianStatistic | CustomStatistic


@dataclass(frozen=True)
class _Blocks:
    """A planner document's validated blocks, with the raw ones errors point into."""

    reader: Reader
    doc: Mapping[Any, Any]
    sampling: Mapping[Any, Any]  # raw, for positions
    statistic: Mapping[Any, Any]  # raw, for positions
    smp: dict[str, Any]  # validated sampling fields
    st: dict[str, Any]  # validated statistic fields


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


def read_planner_design(source: str | None) -> PlannerDesign:
    """Read and validate a planner design file (``-``: standard input)."""

    text, name = read_source(source)
    return parse_planner_design(parse_yaml(text, filename=name), name)


def parse_planner_design(doc: Any, name: str) -> PlannerDesign:
    """Validate a parsed planner design (``name``: its file, for messages and relative
    ``data:`` paths) into a ``PlannerDesign``.

    Raises:
        DesignError: the first invalid field, at its file, line and column.
    """
    reader = Reader(name, "", {})
    doc = mapping(doc, reader, "", None, None, "a planner design")
    check_keys(doc, _TOP, reader, "", "a planner design")
    for key in ("target", "sampling", "statistic"):
        if key not in doc:
            hint = None
            if key == "target" and "mechanism" in doc:
                hint = (
                    "a planner design states the population-level target "
                    "(target: {epsilon_prime, delta_prime}), not a mechanism"
                )
            raise DesignError(
                f"missing required key {key!r}", where=reader.where("", doc), hint=hint
            )
    tgt_raw = mapping(doc["target"], reader, "target", doc, "target", "a target")
    tgt = reader.fields(tgt_raw, _TARGET, "target", "the target")
    smp_raw = mapping(doc["sampling"], reader, "sampling", doc, "sampling", "a sampling block")
    smp = reader.fields(smp_raw, _SAMPLING, "sampling", "the sampling block (planner form)")
    st_raw = mapping(doc["statistic"], reader, "statistic", doc, "statistic", "a statistic")
    st = reader.fields(st_raw, _STAT, "statistic", "the statistic block")
    b = _Blocks(reader, doc, smp_raw, st_raw, smp, st)
    eps, delta = float(tgt["epsilon_prime"]), float(tgt["delta_prime"])
    title = doc.get("name") if isinstance(doc.get("name"), str) else name

    values = None
    if st["data"] is not None:
        values = _read_data(st["data"], reader, "statistic.data", st_raw)
    big_n = _population(b, values)
    rates, fixed_n = _frame(b, big_n)
    bounds = _checked_bounds(b, values)
    statistic: MeanStatistic | MedianStatistic | CustomStatistic
    if st["kind"] == "mean":
        statistic = _mean(b, values, bounds, big_n)
    elif st["kind"] == "median":
        statistic = _median(b, values, bounds, big_n, rates, fixed_n, delta)
    elif st["table"] is not None:
        rates, statistic = _custom_table(b, fixed_n)
    else:
        statistic = _custom(b, len(rates))
    return PlannerDesign(
        title=title,
        epsilon_prime=eps,
        delta_prime=delta,
        population=big_n,
        rates=tuple(rates),
        sample=fixed_n,
        statistic=statistic,
    )


def _population(b: _Blocks, values: list[float] | None) -> int:
    """N: ``sampling.population``, or the number of values in ``statistic.data``."""
    big_n = b.smp["population"]
    if values is not None:
        if big_n is not None and big_n != len(values):
            raise b.reader.error(
                "sampling.population",
                f"the data file holds {len(values)} values but population is {big_n}",
                container=b.sampling,
                key="population",
                hint="drop sampling.population or make them agree",
            )
        big_n = len(values)
    if big_n is None:
        raise b.reader.error(
            "sampling",
            "missing required key 'population' (population size N; or give statistic.data)",
            container=b.sampling,
        )
    return int(big_n)


def _frame(b: _Blocks, big_n: int) -> tuple[list[float], int | None]:
    """(rates, fixed sample size or ``None``): ``sampling.sample`` or ``statistic.rates``
    (no rates yet for a custom ``table:``, which names its own)."""
    smp, st = b.smp, b.st
    if smp["sample"] is not None and st["rates"] is not None:
        raise b.reader.error(
            "sampling.sample",
            "give either sampling.sample or statistic.rates, not both",
            container=b.sampling,
            key="sample",
        )
    if smp["sample"] is not None:
        if smp["sample"] > big_n:
            raise b.reader.error(
                "sampling.sample",
                f"expected a sample size <= population ({big_n}), got {smp['sample']}",
                container=b.sampling,
                key="sample",
            )
        return [smp["sample"] / big_n], smp["sample"]
    if st["rates"] is not None:
        return _read_rates(st["rates"], b.reader, "statistic.rates", b.statistic, "rates"), None
    if st["table"] is not None and st["kind"] == "custom":
        return [], None  # the table names its rates
    raise b.reader.error(
        "statistic",
        "missing 'rates' (a list of sampling rates, or "
        "{from, to, steps, log}); or give sampling.sample",
        container=b.statistic,
    )


def _checked_bounds(b: _Blocks, values: list[float] | None) -> tuple[float, float] | None:
    """``statistic.bounds`` [L, U], holding every data value when data are given."""
    if b.st["bounds"] is None:
        return None
    bounds = _bounds(b.st["bounds"], b.reader, "statistic.bounds", b.statistic)
    if values is not None:
        lo, hi = min(values), max(values)
        if lo < bounds[0] or hi > bounds[1]:
            raise b.reader.error(
                "statistic.bounds",
                f"the data lie outside [L, U] = [{bounds[0]:g}, "
                f"{bounds[1]:g}] (data range [{lo:g}, {hi:g}]); the bounds "
                "must be public and hold every value",
                container=b.statistic,
                key="bounds",
                hint="widen the bounds (never derive them from the data)",
            )
    return bounds


def _mean(
    b: _Blocks, values: list[float] | None, bounds: tuple[float, float] | None, big_n: int
) -> MeanStatistic:
    """The mean's R (``range`` or ``bounds``) and S_N² (``variance`` or ``data``)."""
    st, reader = b.st, b.reader
    if st["range"] is not None:
        value_range = st["range"]
    elif bounds is not None:
        value_range = bounds[1] - bounds[0]
    else:
        raise reader.error(
            "statistic",
            "the mean needs the data range: 'range' (R) or 'bounds' [L, U]",
            container=b.statistic,
        )
    if values is not None:
        if st["variance"] is not None:
            raise reader.error(
                "statistic.variance",
                "give either variance or data, not both",
                container=b.statistic,
                key="variance",
            )
        variance = float(np.var(np.asarray(values), ddof=1)) if big_n > 1 else 0.0
    elif st["variance"] is not None:
        if isinstance(st["variance"], list):
            raise reader.error(
                "statistic.variance",
                "expected one number S_N² for the mean, got a list",
                container=b.statistic,
                key="variance",
            )
        variance = _numbers(
            st["variance"], _POS, reader, "statistic.variance", b.statistic, "variance", 1
        )[0]
    else:
        raise reader.error(
            "statistic",
            "the mean needs S_N²: 'variance' or 'data' (a file of values)",
            container=b.statistic,
        )
    return MeanStatistic(value_range=value_range, variance=variance)


def _median(
    b: _Blocks,
    values: list[float] | None,
    bounds: tuple[float, float] | None,
    big_n: int,
    rates: list[float],
    fixed_n: int | None,
    delta: float,
) -> MedianStatistic:
    """The median's public bounds and data (N odd), and a (ε, δ) target whose sample δ_n
    stays below 1 at every rate."""

    reader, st_raw = b.reader, b.statistic
    if bounds is None:
        raise reader.error(
            "statistic",
            "the smooth-sensitivity median needs public data bounds: 'bounds: [L, U]'",
            container=st_raw,
            hint="choose them from domain knowledge, never from the data",
        )
    if values is None:
        raise reader.error(
            "statistic",
            "the median needs 'data' (a file of the population's values)",
            container=st_raw,
        )
    if big_n % 2 == 0:
        raise reader.error(
            "statistic.data",
            f"the population holds {big_n} values (even); "
            "the smooth-sensitivity median needs an odd size",
            container=st_raw,
            key="data",
            hint="drop one value (or add one) so that N is odd",
        )
    if fixed_n is not None and fixed_n % 2 == 0:
        raise reader.error(
            "sampling.sample",
            f"expected an odd sample size for the median, got {fixed_n}",
            container=b.sampling,
            key="sample",
            hint=f"use sample: {fixed_n - 1} or {fixed_n + 1}",
        )
    if delta <= 0:
        raise reader.error(
            "target.delta_prime",
            "the smooth-sensitivity median is (ε, δ)-DP: expected delta_prime > 0",
            container=b.doc["target"],
            key="delta_prime",
        )
    for r in rates:
        n = fixed_n or median_sample_size(r, big_n)
        if delta * big_n / n >= 1:
            raise reader.error(
                "target.delta_prime",
                f"δ_n = (N/n)δ′ = {delta * big_n / n:.6g} >= 1 at rate "
                f"{r:g} (n = {n}): the sample's guarantee would be vacuous",
                container=b.doc["target"],
                key="delta_prime",
                hint="use larger rates or a smaller delta_prime",
            )
    return MedianStatistic(
        values=tuple(values),
        lower=bounds[0],
        upper=bounds[1],
        simulations=b.st["simulations"],
        seed=b.st["seed"],
    )


def _custom_table(b: _Blocks, fixed_n: int | None) -> tuple[list[float], CustomStatistic]:
    """(rates, statistic) of a custom ``table:`` of {rate, variance, sensitivity_sample}
    rows (``statistic.sensitivity_sample``: the Δ_n of rows without one)."""
    st, st_raw, reader = b.st, b.statistic, b.reader
    if st["rates"] is not None or st["variance"] is not None or fixed_n is not None:
        raise reader.error(
            "statistic.table",
            "give either a table or rates/variance (and no sampling.sample), not both",
            container=st_raw,
            key="table",
        )
    tab = st["table"]
    if not isinstance(tab, list) or not tab:
        raise reader.error(
            "statistic.table",
            "expected a non-empty list of {rate, variance, sensitivity_sample}",
            container=st_raw,
            key="table",
        )
    if st["sensitivity_population"] is None:
        raise reader.error(
            "statistic", "custom needs 'sensitivity_population' (Δ_N)", container=st_raw
        )
    recs = [
        reader.fields(
            mapping(row, reader, f"statistic.table[{i}]", tab, i, "a table row"),
            _ROW,
            f"statistic.table[{i}]",
            "a table row",
        )
        for i, row in enumerate(tab)
    ]
    default_sens = st["sensitivity_sample"]
    sens_t = []
    for i, rec in enumerate(recs):
        dn = rec["sensitivity_sample"]
        if dn is None:
            if default_sens is None:
                raise reader.error(
                    f"statistic.table[{i}]",
                    "missing 'sensitivity_sample' (Δ_n; or give statistic.sensitivity_sample)",
                    container=tab,
                    key=i,
                )
            dn = _numbers(
                default_sens,
                _POS_OPEN,
                reader,
                "statistic.sensitivity_sample",
                st_raw,
                "sensitivity_sample",
                1,
            )[0]
        sens_t.append(dn)
    statistic = CustomStatistic(
        variances=tuple(r["variance"] for r in recs),
        sensitivity_sample=tuple(sens_t),
        sensitivity_population=st["sensitivity_population"],
    )
    return [r["rate"] for r in recs], statistic


def _custom(b: _Blocks, count: int) -> CustomStatistic:
    """A custom statistic's ``variance`` and ``sensitivity_sample`` (a number, or one per
    rate: ``count`` rates) and ``sensitivity_population``."""
    st, st_raw, reader = b.st, b.statistic, b.reader
    if st["variance"] is None:
        raise reader.error(
            "statistic",
            "custom needs 'variance': Var(g(S)) at each rate (a list, one per rate)",
            container=st_raw,
        )
    if st["sensitivity_sample"] is None or st["sensitivity_population"] is None:
        raise reader.error(
            "statistic",
            "custom needs 'sensitivity_sample' (Δ_n) and 'sensitivity_population' (Δ_N)",
            container=st_raw,
        )
    variances = _numbers(
        st["variance"], _POS, reader, "statistic.variance", st_raw, "variance", count
    )
    sens = _numbers(
        st["sensitivity_sample"],
        _POS_OPEN,
        reader,
        "statistic.sensitivity_sample",
        st_raw,
        "sensitivity_sample",
        count,
    )
    return CustomStatistic(
        variances=tuple(variances),
        sensitivity_sample=tuple(sens),
        sensitivity_population=st["sensitivity_population"],
    )


# --------------------------------------------------------------------------------------
# Field readers
# --------------------------------------------------------------------------------------


def _read_rates(raw: Any, reader: Reader, path: str, container: Any, key: str) -> list[float]:
    """A list of rates, one rate, or a grid {from, to, steps, log}."""
    if isinstance(raw, dict):
        g = reader.fields(raw, _GRID, path, "a rate grid")
        lo, hi, steps = g["from"], g["to"], g["steps"]
        if lo > hi:
            raise reader.error(
                f"{path}.to", f"expected to >= from ({hi:g} < {lo:g})", container=raw, key="to"
            )
        if steps == 1:
            return [lo]
        if g["log"]:
            return [lo * (hi / lo) ** (i / (steps - 1)) for i in range(steps)]
        return [lo + (hi - lo) * i / (steps - 1) for i in range(steps)]
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return [number(raw, _RATE, reader.where(path, container, key))]
    if not isinstance(raw, list) or not raw:
        raise reader.error(
            path,
            "expected a non-empty list of rates in (0, 1] or {from, to, steps, log}",
            container=container,
            key=key,
        )
    items = raw if isinstance(raw, MarkedList) else MarkedList(raw)
    return [number(v, _RATE, reader.where(f"{path}[{i}]", items, i)) for i, v in enumerate(raw)]


def _numbers(
    raw: Any, spec: Field, reader: Reader, path: str, container: Any, key: str, count: int
) -> list[float]:
    """A number (repeated ``count`` times) or a list of exactly ``count`` numbers."""
    if isinstance(raw, list):
        if len(raw) != count:
            raise reader.error(
                path,
                f"expected {count} values (one per rate), got {len(raw)}",
                container=container,
                key=key,
            )
        return [
            float(number(v, spec, reader.where(f"{path}[{i}]", raw, i))) for i, v in enumerate(raw)
        ]
    return [float(number(raw, spec, reader.where(path, container, key)))] * count


def _read_data(file: str, reader: Reader, path: str, container: Any) -> list[float]:
    """The values of a ``data:`` file (one per line; ``#`` comments), all finite."""
    from ampcalc.load.table import read_table  # lazy: > 20 ms

    where = reader.where(path, container, "data")
    p = reader.resolve(file)

    def fail(message: str) -> DesignError:
        return DesignError(message, where=where)

    table = read_table(
        p, what="data file", error=fail, delimiter=",", comment="#", encoding="utf-8-sig"
    )
    values: list[float] = []
    for i, row in enumerate(table.rows):
        s = row[0]
        if not s:
            continue
        at = Where(file=str(p), line=table.lines[i])
        try:
            v = float(s)
        except ValueError:
            raise DesignError(f"expected a number, got {excerpt(s)}", where=at) from None
        if not math.isfinite(v):
            raise DesignError(f"expected a finite number, got {excerpt(s)}", where=at)
        values.append(v)
    if not values:
        raise DesignError(f"data file {p} holds no values", where=where)
    return values


def _bounds(raw: Any, reader: Reader, path: str, container: Any) -> tuple[float, float]:
    """Public data bounds [L, U] with L < U."""
    if not isinstance(raw, list) or len(raw) != 2:
        raise reader.error(
            path,
            "expected the public data bounds as a list [L, U]",
            container=container,
            key="bounds",
        )
    lo = number(raw[0], _BOUND, reader.where(f"{path}[0]", raw, 0))
    hi = number(raw[1], _BOUND, reader.where(f"{path}[1]", raw, 1))
    if not lo < hi:
        raise reader.error(
            path, f"expected L < U, got [{lo:g}, {hi:g}]", container=container, key="bounds"
        )
    return float(lo), float(hi)
