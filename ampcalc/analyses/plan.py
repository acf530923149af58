"""Planner designs: validate a ``plan`` file (target, SRSWOR frame, statistic) and plan it.

A planner design names the *population-level* target (ε, δ) the release must meet, an
SRSWOR sampling frame (population N; a fixed ``sample`` or a grid of ``rates``) and a
``statistic:`` block (``mean`` | ``median`` | ``custom``). ``plan_document`` checks it
field by field (errors name the file, line and field, as design files do) and hands
the numbers to ``ampcalc.math.accuracy`` (002_2b0afa8716090992.txt §4, spec §9). The
``plan`` command and ``ampcalc.plan`` both call it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ampcalc.load.files import excerpt
from ampcalc.model.errors import DesignError, Where
from ampcalc.schemes.base import Field

if TYPE_CHECKING:
    from ampcalc.math.accuracy import Plan


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


def _mapping(value: Any, reader: Any, path: str, container: Any, key: Any, what: str) -> Any:
    from ampcalc.load.fields import mapping

    return mapping(value, reader, path, container, key, what)


def _read_rates(raw: Any, reader: Any, path: str, container: Any, key: str) -> list[float]:
    from ampcalc.load.fields import MarkedList, number

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
    raw: Any, spec: Field, reader: Any, path: str, container: Any, key: str, count: int
) -> list[float]:
    """A number (repeated ``count`` times) or a list of exactly ``count`` numbers."""
    from ampcalc.load.fields import number

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


def _read_data(file: str, reader: Any, path: str, container: Any) -> list[float]:
    from ampcalc.load.table import read_table

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


def _bounds(raw: Any, reader: Any, path: str, container: Any) -> tuple[float, float]:
    from ampcalc.load.fields import number

    spec = _f("bound", "float", "a data bound")
    if not isinstance(raw, list) or len(raw) != 2:
        raise reader.error(
            path,
            "expected the public data bounds as a list [L, U]",
            container=container,
            key="bounds",
        )
    lo = number(raw[0], spec, reader.where(f"{path}[0]", raw, 0))
    hi = number(raw[1], spec, reader.where(f"{path}[1]", raw, 1))
    if not lo < hi:
        raise reader.error(
            path, f"expected L < U, got [{lo:g}, {hi:g}]", container=container, key="bounds"
        )
    return float(lo), float(hi)


def read_plan(source: str | None, variance_share: float | None) -> Plan:
    """Parse and validate a planner design file, then compute its plan."""
    from ampcalc.designs.document import parse_yaml, read_source

    text, name = read_source(source)
    return plan_document(parse_yaml(text, filename=name), name, variance_share)


def plan_document(doc: Any, name: str, variance_share: float | None) -> Plan:
    """Validate a parsed planner design (``name``: its file, for messages and relative
    ``data:`` paths) and compute its plan (an ``ampcalc.math.accuracy.Plan``); with a
    ``variance_share`` of V_N (002 §4.1's q), also the largest rate allowing a gain."""
    q = variance_share
    from ampcalc.load.fields import Reader, check_keys
    from ampcalc.math import accuracy as planner

    reader = Reader(name, "", {})
    doc = _mapping(doc, reader, "", None, None, "a planner design")
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
    tgt = reader.fields(
        _mapping(doc["target"], reader, "target", doc, "target", "a target"),
        _TARGET,
        "target",
        "the target",
    )
    smp_raw = _mapping(doc["sampling"], reader, "sampling", doc, "sampling", "a sampling block")
    smp = reader.fields(smp_raw, _SAMPLING, "sampling", "the sampling block (planner form)")
    st_raw = _mapping(doc["statistic"], reader, "statistic", doc, "statistic", "a statistic")
    st = reader.fields(st_raw, _STAT, "statistic", "the statistic block")
    kind = st["kind"]
    eps, delta = float(tgt["epsilon_prime"]), float(tgt["delta_prime"])
    title = doc.get("name") if isinstance(doc.get("name"), str) else name

    values = None
    if st["data"] is not None:
        values = _read_data(st["data"], reader, "statistic.data", st_raw)
    big_n = smp["population"]
    if values is not None:
        if big_n is not None and big_n != len(values):
            raise reader.error(
                "sampling.population",
                f"the data file holds {len(values)} values but population is {big_n}",
                container=smp_raw,
                key="population",
                hint="drop sampling.population or make them agree",
            )
        big_n = len(values)
    if big_n is None:
        raise reader.error(
            "sampling",
            "missing required key 'population' (population size N; or give statistic.data)",
            container=smp_raw,
        )

    if smp["sample"] is not None and st["rates"] is not None:
        raise reader.error(
            "sampling.sample",
            "give either sampling.sample or statistic.rates, not both",
            container=smp_raw,
            key="sample",
        )
    if smp["sample"] is not None:
        if smp["sample"] > big_n:
            raise reader.error(
                "sampling.sample",
                f"expected a sample size <= population ({big_n}), got {smp['sample']}",
                container=smp_raw,
                key="sample",
            )
        rates = [smp["sample"] / big_n]
        fixed_n: int | None = smp["sample"]
    elif st["rates"] is not None:
        rates = _read_rates(st["rates"], reader, "statistic.rates", st_raw, "rates")
        fixed_n = None
    elif st["table"] is not None and kind == "custom":
        rates, fixed_n = [], None  # the table below names its rates
    else:
        raise reader.error(
            "statistic",
            "missing 'rates' (a list of sampling rates, or "
            "{from, to, steps, log}); or give sampling.sample",
            container=st_raw,
        )

    bounds = None
    if st["bounds"] is not None:
        bounds = _bounds(st["bounds"], reader, "statistic.bounds", st_raw)
        if values is not None:
            lo, hi = min(values), max(values)
            if lo < bounds[0] or hi > bounds[1]:
                raise reader.error(
                    "statistic.bounds",
                    f"the data lie outside [L, U] = [{bounds[0]:g}, "
                    f"{bounds[1]:g}] (data range [{lo:g}, {hi:g}]); the bounds "
                    "must be public and hold every value",
                    container=st_raw,
                    key="bounds",
                    hint="widen the bounds (never derive them from the data)",
                )

    if kind == "mean":
        if st["range"] is not None:
            value_range = st["range"]
        elif bounds is not None:
            value_range = bounds[1] - bounds[0]
        else:
            raise reader.error(
                "statistic",
                "the mean needs the data range: 'range' (R) or 'bounds' [L, U]",
                container=st_raw,
            )
        if values is not None:
            import numpy as np

            if st["variance"] is not None:
                raise reader.error(
                    "statistic.variance",
                    "give either variance or data, not both",
                    container=st_raw,
                    key="variance",
                )
            variance = float(np.var(np.asarray(values), ddof=1)) if big_n > 1 else 0.0
        elif st["variance"] is not None:
            if isinstance(st["variance"], list):
                raise reader.error(
                    "statistic.variance",
                    "expected one number S_N² for the mean, got a list",
                    container=st_raw,
                    key="variance",
                )
            variance = _numbers(
                st["variance"], _POS, reader, "statistic.variance", st_raw, "variance", 1
            )[0]
        else:
            raise reader.error(
                "statistic",
                "the mean needs S_N²: 'variance' or 'data' (a file of values)",
                container=st_raw,
            )
        sizes = [(r, fixed_n or planner.mean_sample_size(r, big_n)) for r in rates]
        return planner.plan_mean(title, eps, delta, big_n, sizes, value_range, variance, q)

    if kind == "median":
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
                container=smp_raw,
                key="sample",
                hint=f"use sample: {fixed_n - 1} or {fixed_n + 1}",
            )
        if delta <= 0:
            raise reader.error(
                "target.delta_prime",
                "the smooth-sensitivity median is (ε, δ)-DP: expected delta_prime > 0",
                container=doc["target"],
                key="delta_prime",
            )
        for r in rates:
            n = fixed_n or planner.median_sample_size(r, big_n)
            if delta * big_n / n >= 1:
                raise reader.error(
                    "target.delta_prime",
                    f"δ_n = (N/n)δ′ = {delta * big_n / n:.6g} >= 1 at rate "
                    f"{r:g} (n = {n}): the sample's guarantee would be vacuous",
                    container=doc["target"],
                    key="delta_prime",
                    hint="use larger rates or a smaller delta_prime",
                )
        return planner.plan_median(
            title,
            eps,
            delta,
            values,
            rates,
            bounds[0],
            bounds[1],
            st["simulations"],
            st["seed"],
            q,
        )

    # custom
    if st["table"] is not None:
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
                _mapping(row, reader, f"statistic.table[{i}]", tab, i, "a table row"),
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
        sizes = [(r["rate"], planner.mean_sample_size(r["rate"], big_n)) for r in recs]
        return planner.plan_custom(
            title,
            eps,
            delta,
            big_n,
            sizes,
            [r["variance"] for r in recs],
            sens_t,
            st["sensitivity_population"],
            q,
        )
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
        st["variance"], _POS, reader, "statistic.variance", st_raw, "variance", len(rates)
    )
    sens = _numbers(
        st["sensitivity_sample"],
        _POS_OPEN,
        reader,
        "statistic.sensitivity_sample",
        st_raw,
        "sensitivity_sample",
        len(rates),
    )
    sizes = [(r, fixed_n or planner.mean_sample_size(r, big_n)) for r in rates]
    return planner.plan_custom(
        title, eps, delta, big_n, sizes, variances, sens, st["sensitivity_population"], q
    )


def plan_source(source: Any, q: float | None = None) -> Plan:
    """``plan_document`` of any design source (path, YAML text, dict; ``ampcalc.plan``),
    with ``q`` (the variance share) checked to lie in [0, 1)."""
    from ampcalc.designs.sources import source_document
    from ampcalc.model.errors import AmpcalcError

    if q is not None and not 0 <= q < 1:
        raise AmpcalcError(f"q: expected a number in [0, 1), got {q!r}")
    document, filename = source_document(source)
    return plan_document(document, filename, q)
