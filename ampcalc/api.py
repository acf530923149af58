"""The Python API: one function per command, same validation, same numbers, no printing.

Every command of the CLI has an equivalent here that returns data instead of text:

=================  ==============================================================
``bound``          ``bound(design, epsilon=None)`` -> ``BoundResult``
``invert``         ``invert(design, target=None, target_delta=None)`` -> ``InvertResult``
``validate``       ``validate(designs)`` -> list of dicts
``schemes``        ``schemes()`` -> list of dicts
``sweep``          ``sweep(design, vary={...}, of="bound")`` -> ``SweepResult``
``compare``        ``compare(designs, target=None)`` -> list of dicts
``check``          ``check(designs, max_epsilon=..., max_delta=None)`` -> list of dicts
``verify``         ``verify(designs, pairs="default", limit=5000)`` -> list of dicts
``plan``           ``plan(source, q=None)`` -> ``ampcalc.planner.Plan``
``weights``        ``weights(design)`` -> ``Weights`` (``.sample(seed)`` for ``--sample``)
``pws table``      ``pws_table(design, max_frequency=None, verify=False)`` -> dict
``pws sanitize``   ``pws_sanitize(design, keys, frequencies, seed)`` -> dict
``pws estimate``   ``pws_estimate(design, frequencies)`` -> dict
=================  ==============================================================

A *design* argument takes a ``Design`` (from ``load_design`` or ``ampcalc.designs``)
or anything ``load_design`` reads: a path (``str`` or ``pathlib.Path``), YAML text, or
a dict. A *designs* argument also takes a sequence of ``Design`` objects and files
holding several designs. Errors are the CLI's: ``DesignError`` (with ``.field`` and
``.line``) for bad input, ``AmpcalcError`` otherwise; the messages are the same.

The dict-returning functions give exactly the ``results`` entries (or payload) of the
command's ``--json`` output, so code written against the JSON contract works on them.
The CLI commands call these functions.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from ampcalc.model.design import Design, Neighbours
from ampcalc.model.errors import AmpcalcError, DesignError
from ampcalc.model.references import PWS

if TYPE_CHECKING:
    from ampcalc.analyses.sweep import Sweep
    from ampcalc.math.accuracy import Plan
    from ampcalc.model.results import BoundResult, InvertResult

#: What ``load_design`` accepts: a path, YAML text, a dict, or an already built design.
Source = Union[str, "os.PathLike[str]", Mapping[str, Any], Design]


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def _is_yaml_text(text: str) -> bool:
    """A string is YAML text (not a path) when it holds a newline or is a flow mapping."""
    if "\n" in text:
        return True
    stripped = text.strip()
    return stripped.startswith("{") and not Path(text).exists()


def load_designs(source: Any = None, *, overrides: Sequence[str] = ()) -> tuple[Design, ...]:
    """Load and validate every design of a file, YAML text or dict.

    Args:
        source: a path (``str`` or ``os.PathLike``; default ``ampcalc.yaml``; ``-`` reads
            standard input), YAML text (a string with a newline, or a one-line flow
            mapping ``{...}``), a dict as ``yaml.safe_load`` would give, or a ``Design``.
        overrides: ``PATH=VALUE`` strings, as the CLI's ``--set``.
    Returns:
        The validated designs, in file order.
    Raises:
        DesignError: the CLI's message, with ``.field`` and ``.line`` where known.
    """
    from ampcalc.designs import document as _design

    if isinstance(source, Design):
        if overrides:
            raise DesignError("overrides apply to a file, text or dict, not to a built Design")
        return (source,)
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, str) and "\n" not in source and _is_yaml_text(source):
        source = source + "\n"
    if source is not None and not isinstance(source, (str, Mapping)):
        raise DesignError(
            f"expected a path, YAML text, a dict or a Design, got {type(source).__name__}"
        )
    return _design.load_designs(source, overrides=overrides)


def load_design(source: Any = None, *, overrides: Sequence[str] = ()) -> Design:
    """Load and validate exactly one design (see ``load_designs`` for ``source``).

    Raises:
        DesignError: invalid input (the CLI's message), or not exactly one design.
    """
    found = load_designs(source, overrides=overrides)
    if len(found) != 1:
        raise DesignError(
            f"expected one design, found {len(found)}; use load_designs for a file with `designs:`"
        )
    return found[0]


def _one(design: Any) -> Design:
    return design if isinstance(design, Design) else load_design(design)


def _many(designs: Any) -> tuple[Design, ...]:
    if isinstance(designs, Design):
        return (designs,)
    if isinstance(designs, (list, tuple)):
        out: list[Design] = []
        for item in designs:
            out.extend(_many(item))
        return tuple(out)
    return load_designs(designs)


# --------------------------------------------------------------------------------------
# bound / invert
# --------------------------------------------------------------------------------------


def bound(design: Any, epsilon: Any = None) -> BoundResult:
    """Upper and lower bounds on ε′ for one design (``ampcalc bound``).

    Args:
        design: a ``Design``, or a path / YAML text / dict holding one design.
        epsilon: M's ε instead of the design's; a float, or an array for a vectorised
            evaluation (the result's ``upper``, ``lower``, ``verdict``... are then arrays).
    Returns:
        A ``BoundResult``: the JSON contract's fields as attributes, ``to_dict()``.
        A design outside its theorem's conditions gives null bounds and ``error``.
    """
    from ampcalc import engine

    return engine.bound(_one(design), epsilon=epsilon)


def invert(design: Any, target: Any = None, target_delta: float | None = None) -> InvertResult:
    """The largest certified mechanism ε for a target ε′ (``ampcalc invert``).

    Args:
        design: a ``Design``, or a path / YAML text / dict holding one design.
        target: the population target ε′ (default: the design's ``target:``); an
            array gives a vectorised inversion.
        target_delta: the population target δ′.
    Returns:
        An ``InvertResult`` (``certified``, ``impossible_above``, ``delta``, ...).
    """
    from ampcalc import engine

    return engine.invert(_one(design), target, target_delta)


def validate(designs: Any) -> list[dict[str, Any]]:
    """Check designs (syntax, fields, theorem conditions) without computing bounds.

    Returns the ``results`` entries of ``ampcalc validate --json``: ``name``,
    ``scheme``, ``valid`` and the checked ``conditions``, ``warnings`` and ``notes``, or
    ``error`` naming the failed condition. Invalid input raises ``DesignError`` as the CLI
    does.
    """
    from ampcalc import engine
    from ampcalc.model.errors import ConditionError

    out: list[dict[str, Any]] = []
    for d in _many(designs):
        entry: dict[str, Any] = {"name": d.name, "scheme": d.scheme, "valid": True}
        if getattr(d.mechanism, "profile", None) is not None:
            # a named mechanism: its profile goes through the scheme at the target δ′
            res = engine.bound(d)
            entry.update(
                conditions=list(res.conditions),
                warnings=list(res.warnings),
                notes=list(res.notes),
            )
            if res.error is not None:
                entry.update(valid=False, error=res.error)
            out.append(entry)
            continue
        try:
            analysis = engine.analyse(d)
            entry["conditions"] = list(analysis.conditions)
            entry["warnings"] = list(analysis.warnings)
            entry["notes"] = list(analysis.notes)
        except ConditionError as err:
            entry.update(valid=False, error=err.message)
        out.append(entry)
    return out


def schemes() -> list[dict[str, Any]]:
    """Every sampling scheme: parameters, relations and basis (``ampcalc schemes --json``)."""
    from ampcalc import schemes as registry

    return [
        {
            "name": s.name,
            "summary": s.summary,
            "parameters": [
                {
                    "name": f.name,
                    "required": f.required,
                    "domain": f.domain(),
                    "doc": f.doc,
                    "default": f.default,
                }
                for f in s.fields
            ],
            "mechanism_neighbours": s.mechanism_relation,
            "guarantee_neighbours": [str(g) for g in s.guarantees],
            "basis": [c.to_dict() for c in s.basis],
        }
        for s in registry.all_schemes()
    ]


# --------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------


def _spec_text(path: str, spec: Any) -> str:
    from ampcalc.analyses.sweep import yaml_scalar

    if isinstance(spec, str):
        return f"{path}={spec}"
    values = np.atleast_1d(np.asarray(spec)).ravel().tolist()
    if not values:
        raise DesignError(f"{path}: no values to sweep", where=None)
    items = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise DesignError(f"{path}: expected numbers to sweep, got {v!r}")
        items.append(yaml_scalar(v))
    return f"{path}={','.join(items)}"


def _plain_doc(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain_doc(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if getattr(value, f.name) is not None
        }
    if isinstance(value, (list, tuple)):
        return [_plain_doc(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain_doc(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "value") and isinstance(getattr(value, "value", None), str):
        return value.value
    return value


def _equal(a: Any, b: Any) -> bool:
    """Structural equality: dataclasses field by field, arrays elementwise (NaN = NaN)."""
    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(_equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, np.ndarray):
        try:
            return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
        except TypeError:
            return a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    try:
        return bool(a == b) or (a != a and b != b)
    except (ValueError, TypeError):
        return False


def _same_design(a: Design, b: Design) -> bool:
    return (
        _equal(a.params, b.params)
        and _equal(a.mechanism, b.mechanism)
        and _equal(a.target, b.target)
        and a.guarantee == b.guarantee
    )


def _design_document(design: Design) -> tuple[Any, str]:
    """A document that loads back into ``design`` (for sweeps over a built Design)."""
    from ampcalc import schemes
    from ampcalc.designs import mechanism_dict
    from ampcalc.designs.document import load_document, parse_yaml, read_source

    scheme = schemes.get(design.scheme)
    sampling: dict[str, Any] = {"scheme": design.scheme}
    for spec in scheme.fields:
        value = getattr(design.params, spec.name, None)
        if value is not None:
            sampling[spec.name] = _plain_doc(value)
    doc: dict[str, Any] = {"name": design.name, "sampling": sampling}
    if design.mechanism is not None:
        doc["mechanism"] = mechanism_dict(design.mechanism)
    if design.guarantee is not None:
        doc["guarantee"] = str(design.guarantee)
    if design.target is not None:
        doc["target"] = _plain_doc(design.target)
    try:
        (again,) = load_document(doc, filename="<python>")
        if _same_design(again, design):
            return doc, "<python>"
    except (AmpcalcError, ValueError, TypeError):
        pass
    # a design read from a file: take its entry of that file (unchanged since)
    where = design.where
    if where is not None and where.file and not where.file.startswith(("<", "-")):
        try:
            text, name = read_source(where.file)
            full = parse_yaml(text, filename=name)
            loaded = load_document(full, filename=name)
        except AmpcalcError:
            loaded = ()
        for i, candidate in enumerate(loaded):
            if candidate.name == design.name and _same_design(candidate, design):
                if isinstance(full, Mapping) and "designs" in full:
                    entry = dict(full["designs"][i])
                    for inherited in ("mechanism", "target", "guarantee"):
                        if inherited not in entry and inherited in full:
                            entry[inherited] = full[inherited]
                    entry.setdefault("name", design.name)
                    return entry, name
                return full, name
    raise AmpcalcError(
        f"cannot sweep the built {design.scheme} design {design.name!r}: it does not map "
        "back to a design document; pass the design's file path, YAML text or dict instead"
    )


def _built(source: Any) -> tuple[Design, ...] | None:
    """The designs when ``source`` is a ``Design`` or a sequence of them, else None."""
    if isinstance(source, Design):
        return (source,)
    if (
        isinstance(source, Sequence)
        and not isinstance(source, str)
        and source
        and all(isinstance(d, Design) for d in source)
    ):
        return tuple(source)
    return None


def _document(source: Any) -> tuple[Any, str]:
    from ampcalc.designs.document import parse_yaml, read_source

    if isinstance(source, Design):
        return _design_document(source)
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, Mapping):
        return source, "<dict>"
    if isinstance(source, str) and _is_yaml_text(source):
        return parse_yaml(source), "<string>"
    if source is not None and not isinstance(source, str):
        raise DesignError(
            f"expected a path, YAML text, a dict or a Design, got {type(source).__name__}"
        )
    text, name = read_source(source)
    return parse_yaml(text, filename=name), name


class SweepResult:
    """An evaluated sweep: one row per (design, grid point), held as columns.

    ``len(result)`` rows; ``for row in result`` gives dicts of plain values (NaN as
    ``None``); ``result["epsilon_prime.upper"]`` is a column (numpy array);
    ``result[i]`` is row ``i``; ``to_dict()`` is the ``ampcalc sweep --json`` payload
    (without ``ampcalc_version``/``command``); ``to_pandas()`` a DataFrame.
    """

    def __init__(self, sweep: Sweep) -> None:
        self.sweep = sweep

    @property
    def of(self) -> str:
        """``bound``, ``invert`` or ``plan``."""
        return self.sweep.of

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """Column name -> numpy array (one entry per row)."""
        return self.sweep.columns

    @property
    def designs(self) -> dict[str, dict[str, Any]]:
        """Per design name: scheme, basis, guarantee, warnings, notes."""
        return self.sweep.designs

    def column_names(self) -> list[str]:
        return self.sweep.column_names()

    def errors(self) -> list[str]:
        """The distinct messages of points outside their theorem's conditions."""
        return self.sweep.errors()

    def __len__(self) -> int:
        return len(self.sweep)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.sweep.rows()

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, str):
            if key not in self.sweep.columns:
                import difflib

                close = difflib.get_close_matches(key, self.column_names(), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise KeyError(f"no column {key!r}{hint}")
            return self.sweep.columns[key]
        n = len(self)
        index = int(key)
        if not -n <= index < n:
            raise IndexError(f"row {key} of {n}")
        index %= n
        return next(r for i, r in enumerate(self.sweep.rows()) if i == index)

    def __repr__(self) -> str:
        return f"<SweepResult of={self.of!r} rows={len(self)} columns={self.column_names()}>"

    def to_dict(self) -> dict[str, Any]:
        """The JSON payload of ``ampcalc sweep --json`` (of, vary, designs, columns, rows,
        and the ``references`` the designs' basis cites)."""
        from ampcalc.analyses.sweep import document
        from ampcalc.model.references import references_used

        doc = document(self.sweep)
        refs = references_used(doc)
        return {**doc, "references": refs} if refs else doc

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (one column per result column).

        Raises:
            AmpcalcError: pandas is not installed (it is not a dependency of ampcalc).
        """
        try:
            import pandas as pd
        except ImportError:
            raise AmpcalcError(
                "to_pandas needs pandas, which is not installed (pip install pandas); "
                "to_dict() and the columns work without it"
            ) from None
        return pd.DataFrame({k: v for k, v in self.sweep.columns.items()})


def sweep(
    design: Any,
    vary: Mapping[str, Any],
    *,
    of: str = "bound",
    target: float | None = None,
    target_delta: float | None = None,
    overrides: Sequence[str] = (),
) -> SweepResult:
    """Bounds (or inverses, or plans) over a grid of design values (``ampcalc sweep``).

    Args:
        design: a path, YAML text or dict (every design it holds is swept), or a
            ``Design``.
        vary: one or two fields (the first is the x axis) mapped to their values: a
            spec string ``"start:stop:steps"``, ``"start:stop:steps:log"``, ``"v1,v2"``,
            or a sequence/array of numbers. Paths as ``--vary``: ``epsilon`` (=
            ``mechanism.epsilon``), ``target``, ``sampling.sample``, ``designs[1]...``.
        of: ``bound``, ``invert`` or ``plan``.
        target, target_delta: the target for ``of="invert"`` when it is not varied.
        overrides: ``PATH=VALUE`` strings applied before the grid values.
    Returns:
        A ``SweepResult``; points outside their theorem's conditions carry ``error``.
    Raises:
        DesignError: a malformed sweep, or a grid point that is not a valid design.
    """
    from ampcalc.analyses import sweep as sw

    if of not in sw.KINDS:
        raise DesignError(f"unknown of={of!r}; expected one of {', '.join(sw.KINDS)}")
    if not isinstance(vary, Mapping) or not vary:
        raise DesignError(
            "nothing to sweep: give vary={PATH: SPEC}, e.g. vary={'epsilon': '0.01:10:100:log'}"
        )
    varies = [sw.parse_vary(_spec_text(str(path), spec)) for path, spec in vary.items()]
    built = _built(design)
    if (
        built is not None and not overrides and {v.path for v in varies} <= {sw.vector_path(of)}
    ):  # a built Design swept along ε (or the target) needs no document round trip
        return SweepResult(
            sw.evaluate_designs(built, varies, of=of, target=target, target_delta=target_delta)
        )
    document, filename = _document(design)
    result = sw.evaluate(
        document,
        varies,
        of=of,
        filename=filename,
        overrides=overrides,
        target=target,
        target_delta=target_delta,
    )
    return SweepResult(result)


# --------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------


def compare(designs: Any, target: float | None = None) -> list[dict[str, Any]]:
    """Certified ε at a target ε′ and each scheme's accuracy figures (``ampcalc compare``).

    Returns:
        One dict per design, the ``results`` entries of ``compare --json``:
        ``name``, ``scheme``, ``target``, ``epsilon: {certified, impossible_above}``,
        ``accuracy`` (and ``error`` for a design outside its conditions).
    Raises:
        DesignError: a design without a target (give ``target`` or a ``target:`` block).
    """
    from ampcalc.analyses.compare import compare_designs

    return compare_designs(_many(designs), target)


# --------------------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------------------


def check_verdict(
    result: Mapping[str, Any], max_epsilon: float, max_delta: float | None
) -> dict[str, Any]:
    """PASS/FAIL of one bound result (a ``BoundResult.to_dict()``) against the budget."""
    upper = result["epsilon_prime"]["upper"]
    delta_prime = result.get("delta_prime")
    reasons: list[str] = []
    if result.get("error"):
        reasons.append(f"outside the theorem's conditions: {result['error']}")
    elif upper is None:
        reasons.append("the theory gives no upper bound on ε′ for this design")
    elif upper > max_epsilon:
        reasons.append("ε′ bound above the budget")
    if max_delta is not None and not result.get("error"):
        if delta_prime is None:
            reasons.append("no bound on δ′ for this design")
        elif delta_prime > max_delta:
            reasons.append("δ′ above the budget")
    return {
        "name": result["name"],
        "scheme": result["scheme"],
        "passed": not reasons,
        "epsilon": result.get("epsilon"),
        "epsilon_prime_upper": upper,
        "max_epsilon": max_epsilon,
        "delta_prime": delta_prime,
        "max_delta": max_delta,
        "reasons": reasons,
        "error": result.get("error"),
    }


def check(
    designs: Any,
    max_epsilon: float,
    max_delta: float | None = None,
    *,
    epsilon: float | None = None,
) -> list[dict[str, Any]]:
    """A privacy-budget gate (``ampcalc check``): PASS/FAIL per design.

    A design passes when its upper bound on ε′ is at most ``max_epsilon`` (and, with
    ``max_delta``, its δ′ at most that). Returns the ``results`` entries of
    ``check --json`` (``passed``, ``reasons``, ...); ``all(e["passed"] for e in ...)``
    is the gate.
    """
    from ampcalc import engine

    if not (isinstance(max_epsilon, (int, float)) and math.isfinite(max_epsilon)) or (
        max_epsilon <= 0
    ):
        raise AmpcalcError(f"max_epsilon: expected a finite number > 0, got {max_epsilon!r}")
    if max_delta is not None and not 0 <= max_delta <= 1:
        raise AmpcalcError(f"max_delta: expected a number in [0, 1], got {max_delta!r}")
    return [
        check_verdict(engine.bound(d, epsilon=epsilon).to_dict(), max_epsilon, max_delta)
        for d in _many(designs)
    ]


# --------------------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------------------


def verify_design(
    design: Design,
    pairs: str = "default",
    limit: int = 5000,
    epsilon: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """One row of ``verify --json``: the exact ε′ of a tiny design against our bounds
    (``progress(done, total)`` is called as its instances are solved)."""
    from ampcalc.analyses.verify import verify_row

    if getattr(design.mechanism, "profile", None) is not None:
        raise AmpcalcError(
            f"design {design.name!r}: verify takes M as an (epsilon, delta) pair; a named "
            "mechanism's profile is checked against mpmath oracles in the test suite"
        )

    return verify_row(design, pairs, limit, epsilon, progress)


def verify(
    designs: Any,
    *,
    pairs: str = "default",
    limit: int = 5000,
    epsilon: float | None = None,
) -> list[dict[str, Any]]:
    """Exact worst-case ε′ of tiny designs vs ampcalc's bounds (``ampcalc verify``).

    Returns one dict per design: ``status`` PASS / FAIL (our bound is wrong) /
    INCONCLUSIVE, ``epsilon_prime_exact``, ``epsilon_prime: {lower, upper}``, ...
    """
    if pairs not in ("default", "all"):
        raise AmpcalcError(f"pairs: expected 'default' or 'all', got {pairs!r}")
    if limit < 1:
        raise AmpcalcError(f"limit: expected a whole number >= 1, got {limit!r}")
    return [verify_design(d, pairs, limit, epsilon) for d in _many(designs)]


# --------------------------------------------------------------------------------------
# plan
# --------------------------------------------------------------------------------------


def plan(source: Any, q: float | None = None) -> Plan:
    """Accuracy planning for SRSWOR at a fixed population target (``ampcalc plan``).

    Args:
        source: a planner design: path, YAML text or dict.
        q: a sampling-variance share of V_N in [0, 1): also report the largest rate
            that still allows a gain.
    Returns:
        An ``ampcalc.planner.Plan`` (``to_dict()`` is one ``results`` entry of
        ``plan --json``).
    """
    from ampcalc.analyses.plan import plan_document

    if q is not None and not 0 <= q < 1:
        raise AmpcalcError(f"q: expected a number in [0, 1), got {q!r}")
    document, filename = _document(source)
    return plan_document(document, filename, q)


# --------------------------------------------------------------------------------------
# weights (importance sampling)
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Weights:
    """Per-record figures of an importance design (``ampcalc weights``).

    Attributes:
        design: the design's name.
        probability: q(x) per record (row order of the record file).
        weight: w(x) = 1/q(x).
        epsilon_hat: ε̂(x), rounded up (003 Theorem 6 / Theorem 10).
        outside: records outside the domain or infeasible (written with q = 1 under
            ``privacy-constrained``; their q otherwise, never clipped).
    """

    design: str
    probability: np.ndarray
    weight: np.ndarray
    epsilon_hat: np.ndarray
    outside: np.ndarray

    def __len__(self) -> int:
        return int(self.probability.size)

    def sample(self, seed: int) -> np.ndarray:
        """The 0-based rows of the Poisson sample drawn with ``seed`` (as ``--sample``).

        Row i is kept when U_i < q(x_i), U_i from numpy's Philox generator keyed by the
        seed with counter i: the same rows however the file is split.
        """
        from ampcalc.math.importance import uniforms

        return np.flatnonzero(uniforms(int(seed), 0, len(self)) < self.probability)

    def to_dict(self) -> dict[str, Any]:
        """Columns as lists: row, probability, weight, epsilon_hat (the CSV's)."""
        return {
            "row": list(range(len(self))),
            "probability": self.probability.tolist(),
            "weight": self.weight.tolist(),
            "epsilon_hat": self.epsilon_hat.tolist(),
        }


def importance_design(designs: Sequence[Design]) -> Design:
    """The one ``scheme: importance`` design of a file (the ``weights`` command's rule)."""
    chosen = [d for d in designs if d.scheme == "importance"]
    if not chosen:
        raise DesignError("`ampcalc weights` needs a design with `scheme: importance`")
    if len(chosen) > 1:
        raise DesignError(
            f"the file holds {len(chosen)} importance designs; `ampcalc weights` takes one "
            "(select it with a file of its own)"
        )
    return chosen[0]


def importance_setup(d: Design) -> tuple[Any, Any, float, float | None]:
    """(params with ε* bound, profile, profile scaling k0, ε* or None) of an importance
    design, refusing (``ConditionError``) a privacy-constrained design whose declared ε
    exceeds ε*, with the message ``bound`` gives."""
    from ampcalc.schemes import importance as imp

    params: Any = imp.bind_target(d.params, d.target)
    profile: Any = d.mechanism
    eps_star = None
    if params.probabilities == "privacy-constrained":
        eps_star = imp._target_of(params)
        if profile.epsilon > eps_star:
            # the same refusal as `bound` (names the largest feasible radius)
            imp.analyse(params, profile, d.guarantee or Neighbours.ADD_REMOVE)
    k0 = profile.epsilon / profile.natural
    return params, profile, k0, eps_star


def weights(design: Any) -> Weights:
    """q(x), w(x) = 1/q(x) and ε̂(x) for every record of an importance design.

    Raises:
        DesignError: not an importance design.
        ConditionError: the design is outside Theorem 10's conditions (the message
            ``bound`` gives, naming the largest feasible radius).
    """
    from ampcalc.schemes import importance as imp

    d = importance_design(_many(design))
    params, profile, k0, eps_star = importance_setup(d)
    fig = imp.record_figures(params, profile, k0, eps_star)
    return Weights(
        design=d.name,
        probability=fig.q,
        weight=fig.w,
        epsilon_hat=fig.eps_hat,
        outside=fig.outside,
    )


# --------------------------------------------------------------------------------------
# pws (private weighted sampling)
# --------------------------------------------------------------------------------------


def pws_design(designs: Sequence[Design]) -> tuple[Design, Any]:
    """The one ``scheme: pws`` design of a file and its params with the target bound."""
    from ampcalc.schemes import pws

    chosen = [d for d in designs if d.scheme == "pws"]
    if len(chosen) != 1:
        raise DesignError(
            "`ampcalc pws` needs a file with exactly one design with `scheme: pws` "
            f"(found {len(chosen)})"
        )
    d = chosen[0]
    return d, pws.bind_target(d.params, d.target)


EXACT_CHECK_ROWS = 50_000


def pws_self_check(
    params: Any, q: Any, pi: Any, rows: Any, frequencies: bool = True
) -> tuple[bool, float, bool]:
    """DP self-check: keys-only outputs (exact rational arithmetic up to
    ``EXACT_CHECK_ROWS`` rows) and, with ``frequencies``, Algorithm 4's rows (float,
    with rounding slack). Returns (ok, largest divergence, keys-only check exact)."""
    from ampcalc.math import pws as K
    from ampcalc.schemes import pws

    eps, delta = params.epsilon, params.delta
    exact = pi.size <= EXACT_CHECK_ROWS
    if exact:
        keys = K.dp_check_pi_exact(pi, eps, q=q, exact=pws.exact_q(params))
    else:
        keys = K.dp_check_pi(pi, eps)
    ok = keys <= delta if exact else keys <= delta + K.dp_tolerance(delta, 1, eps)
    if not frequencies:
        return ok, keys, exact
    if rows is None:
        rows = K.frequency_rows(q, eps, delta, pi)
    freq = K.dp_check(rows)
    width = max(b.size for b in rows.band)
    ok = ok and freq <= delta + K.dp_tolerance(delta, width, eps)
    return ok, max(keys, freq), exact


def pws_table(
    design: Any,
    max_frequency: int | None = None,
    *,
    verify: bool = False,
    accuracy: bool = False,
) -> dict[str, Any]:
    """Every per-frequency row of a pws design (``ampcalc pws table --json`` payload).

    Returns ``design``, ``epsilon``, ``delta``, ``L``, ``settled_from``,
    ``privacy_cost_rows`` (with ``verify``: ``verified``, ``max_hockey_stick``,
    ``keys_only_exact``) and ``frequencies``: rows of ``frequency``, ``q``, ``pi``,
    ``p``, ``phi_sbh``, ``ratio`` (Cohen et al. 2021 Alg. 3). With
    ``accuracy`` each row adds the PWS estimators' and SbH's per-key figures
    (``pws_estimators.accuracy``: ``a_mle``, ``bias_mle``, ``variance_mle``,
    ``a_unbiased``, ``bias_unbiased``, ``variance_unbiased``, ``bias_sbh``,
    ``variance_sbh``; Cohen et al. 2021, §7.1, §8.1).
    """
    summary, cols = pws_table_columns(design, max_frequency, verify=verify)
    names = list(cols)
    ratio_ok = (cols["phi_sbh"] > 0).tolist()
    rows = [
        dict(zip(names, values, strict=True))
        for values in zip(*(cols[k].tolist() for k in names), strict=True)
    ]
    for row, ok in zip(rows, ratio_ok, strict=True):
        if not ok:
            row["ratio"] = None
    if accuracy:
        from ampcalc.records import pws_estimators as E

        _, params = pws_design(_many(design))
        for row, extra in zip(rows, E.accuracy(params, len(rows)), strict=True):
            row.update({k: v for k, v in extra.items() if k != "frequency"})
    return {**summary, "frequencies": rows}


def pws_table_columns(
    design: Any, max_frequency: int | None = None, *, verify: bool = False
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``pws_table``'s summary, and its rows as columns (``frequency``, ``q``, ``pi``,
    ``p``, ``phi_sbh``, ``ratio``: NaN where φ_i is not > 0, the rows' null)."""
    from ampcalc.math import pws as K
    from ampcalc.schemes import pws

    d, params = pws_design(_many(design))
    t = pws.compute_table(params, max_frequency)
    n = t.n
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(t.q > 0, t.pi / t.q, 0.0)
    sampled = bool(np.any(t.q < 1.0))
    phi = K.sbh_phi(
        n,
        params.epsilon,
        params.delta,
        method=params.method if sampled else "none",
        threshold=params.threshold,
        weight_power=params.weight_power,
    )
    pi = np.asarray(t.pi, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(phi > 0, pi / np.where(phi > 0, phi, 1.0), np.nan)
    cols = {
        "frequency": np.arange(1, n + 1, dtype=np.int64),
        "q": np.asarray(t.q, dtype=float),
        "pi": pi,
        "p": np.asarray(p, dtype=float),
        "phi_sbh": np.asarray(phi, dtype=float),
        "ratio": ratio,
    }
    summary: dict[str, Any] = {
        "design": d.name,
        "epsilon": params.epsilon,
        "delta": params.delta,
        "L": t.L,
        "settled_from": t.settled,
        "privacy_cost_rows": int(np.sum(t.pi < t.q)),
    }
    if verify:
        ok, summary["max_hockey_stick"], summary["keys_only_exact"] = pws_self_check(
            params, t.q, t.pi, None
        )
        summary["verified"] = ok
    return summary, cols


class PwsSanitiser:
    """Algorithm 3/4 tables for a design, extended on demand to larger frequencies."""

    def __init__(self, params: Any, frequencies: bool, extend: bool) -> None:
        from ampcalc.schemes import pws

        self.params = params
        self.frequencies = frequencies
        self.extend = extend
        self.table = pws.compute_table(params)
        self.n = self.table.n
        self._build(self.n)

    def _build(self, n: int) -> None:
        from ampcalc.math import pws as K
        from ampcalc.schemes import pws

        self.q = pws.q_of(self.params, n)
        self.pi = pws.reporting(self.params, self.q)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.p = np.where(self.q > 0, self.pi / self.q, 0.0)
        self.rows = (
            K.frequency_rows(self.q, self.params.epsilon, self.params.delta, self.pi)
            if self.frequencies
            else None
        )
        self.n = n

    def ensure(self, top: int, where: str) -> None:
        if top <= self.n:
            return
        if not self.extend:
            raise DesignError(
                f"{where}: frequency {top} is above max_frequency = {self.n}; its row was "
                "not computed (drop --no-extend to compute it)"
            )
        self._build(top)


def pws_sanitize(
    design: Any,
    keys: Sequence[str],
    frequencies: Any,
    seed: int,
    *,
    report_frequencies: bool = False,
    extend: bool = True,
) -> dict[str, Any]:
    """Sanitise a weighted sample (004 Alg. 2; ``ampcalc pws sanitize``), in memory.

    Args:
        design: the pws design.
        keys: the sample's keys (each once).
        frequencies: each key's frequency (whole numbers >= 1).
        seed: the sanitiser's seed: key x's uniform is a pure function of (seed, x)
            (a counter-based hash generator), so the output for a key does not depend
            on the other keys, their order or chunking; same as the CLI's ``--seed``.
        report_frequencies: also report sanitised frequencies (Algorithm 4).
        extend: compute rows above the design's ``max_frequency`` when needed.
    Returns:
        ``{"keys": [...reported keys...]}`` plus ``"frequency": [...]`` with
        ``report_frequencies`` (the CLI's output rows, in input order).
    """
    from ampcalc.math import pws as K

    _, params = pws_design(_many(design))
    key_list = [str(k) for k in keys]
    freqs = np.asarray(frequencies)
    if freqs.shape != (len(key_list),):
        raise DesignError(
            f"expected one frequency per key ({len(key_list)}), got shape {freqs.shape}"
        )
    if freqs.size and (freqs.dtype.kind not in "iu" or int(freqs.min()) < 1):
        if freqs.dtype.kind == "f" and np.all(freqs == np.round(freqs)) and freqs.min() >= 1:
            freqs = freqs.astype(np.int64)
        else:
            raise DesignError(
                "frequencies must be whole numbers >= 1 (keys with frequency 0 are not in "
                "the data; frequencies count elements)"
            )
    if len(set(key_list)) != len(key_list):
        raise DesignError("duplicate keys: a weighted sample lists each key once")
    freqs = freqs.astype(np.int64)
    san = PwsSanitiser(params, report_frequencies, extend=extend)
    if freqs.size:
        san.ensure(int(freqs.max()), "frequencies")
    kept, tokens = K.sanitize_keys(key_list, freqs, int(seed), p=san.p, rows=san.rows)
    idx = np.flatnonzero(kept).tolist()
    out: dict[str, Any] = {"keys": [key_list[i] for i in idx]}
    if report_frequencies:
        assert tokens is not None
        out["frequency"] = [int(tokens[i]) for i in idx]
    return out


def _argmax_col(rows: Any, j: int) -> int:
    best, arg = -1.0, j
    for h in range(j, rows.n + 1):
        v = rows.entry(h, j)
        if v <= 0 and h > j and rows.lo[h] > j:
            break
        if v > best:
            best, arg = v, h
    return arg


def pws_estimate_params(
    params: Any, tokens: Sequence[int], estimator: str = "mle"
) -> dict[str, Any]:
    """The MLE estimate (Cohen et al. 2021, Eq. 9) from sanitised frequencies, or the
    unbiased one (``estimator="unbiased"``, §7.1), with bias/variance and sampled-SbH's
    per-frequency bias/variance for comparison (§8.1): the ``pws estimate --json``
    payload without ``select``."""
    from ampcalc.math import pws as K
    from ampcalc.model.errors import ConditionError
    from ampcalc.records import pws_estimators as E
    from ampcalc.schemes import pws

    t = pws.compute_table(params)
    top = max([t.n, *tokens])
    # rows until column `top` has ended (the MLE scans h >= j while π_{h,j} > 0)
    n = top
    while True:
        q = pws.q_of(params, n)
        rows = K.frequency_rows(q, params.epsilon, params.delta, pws.reporting(params, q))
        if rows.lo[n] > top or n > 64 * top + 10_000:
            break
        n = 2 * n
    if estimator == "unbiased":
        a = E.unbiased_estimates(rows, upto=top)
        if not np.all(np.isfinite(a)):
            raise ConditionError(
                "the unbiased estimator is undefined here (π_{i,i} = 0 for some i: the "
                f"triangular system of {PWS}, §7.1 is singular); use the MLE"
            )
    else:
        a = K.mle_estimates(rows, upto=top)
    bias, var, mse = K.bias_variance(rows, a, upto=top)
    samp = E.sampling_of(params, rows.q[:top])
    freqs = np.arange(1, top + 1, dtype=float)
    if samp is not None:
        b_sbh, v_sbh = E.sbh_bias_variance(freqs, params.epsilon, params.delta, **samp)
    else:
        b_sbh = v_sbh = np.full(top, np.nan)
    tok = np.asarray(tokens, dtype=np.int64)
    est = float(np.sum(a[tok - 1])) if tok.size else 0.0
    # plug-in: each reported key's frequency taken as i_j (the MLE's frequency)
    i_of = np.array([_argmax_col(rows, j) for j in range(1, top + 1)])
    nrmse: float | None
    if tok.size:
        ii = np.minimum(i_of[tok - 1], top)
        b_plug = float(np.sum(bias[ii - 1]))
        v_plug = float(np.sum(var[ii - 1]))
        nrmse = math.sqrt(v_plug + b_plug**2) / est if est > 0 else None
    else:
        b_plug = v_plug = 0.0
        nrmse = None
    per = [
        {
            "frequency": i + 1,
            "a": float(a[i]),
            "bias": float(bias[i]),
            "variance": float(var[i]),
            "mse": float(mse[i]),
            "nrmse": math.sqrt(mse[i]) / (i + 1),
            "bias_sbh": float(b_sbh[i]) if math.isfinite(b_sbh[i]) else None,
            "variance_sbh": float(v_sbh[i]) if math.isfinite(v_sbh[i]) else None,
        }
        for i in range(top)
    ]
    return {
        "estimator": estimator,
        "estimate": est,
        "reported_keys": int(tok.size),
        "bias_plugin": b_plug,
        "variance_plugin": v_plug,
        "nrmse_plugin": nrmse,
        "frequencies": per,
    }


def pws_estimate(design: Any, frequencies: Any, estimator: str = "mle") -> dict[str, Any]:
    """MLE estimate of the sum of frequencies from sanitised frequencies
    (Cohen et al. 2021, Eq. 9; ``ampcalc pws estimate``).

    Args:
        design: the pws design the sample was sanitised with.
        frequencies: the reported (sanitised) frequency of each reported key.
    Returns:
        ``estimate``, ``reported_keys``, ``bias_plugin``, ``variance_plugin``,
        ``nrmse_plugin`` and per-frequency ``frequencies`` rows (``a``, ``bias``,
        ``variance``, ``mse``, ``nrmse``).
    """
    _, params = pws_design(_many(design))
    tokens = np.asarray(frequencies).ravel()
    if tokens.size and (
        tokens.dtype.kind not in "iuf"
        or np.any(tokens != np.round(tokens))
        or int(tokens.min()) < 1
    ):
        raise DesignError("sanitised frequencies must be whole numbers >= 1")
    if estimator not in ("mle", "unbiased"):
        raise DesignError(f"estimator must be 'mle' or 'unbiased', not {estimator!r}")
    return pws_estimate_params(params, [int(v) for v in tokens.tolist()], estimator)


__all__ = [
    "Source",
    "SweepResult",
    "Weights",
    "bound",
    "check",
    "compare",
    "invert",
    "load_design",
    "load_designs",
    "plan",
    "pws_estimate",
    "pws_sanitize",
    "pws_table",
    "schemes",
    "sweep",
    "validate",
    "verify",
    "weights",
]
