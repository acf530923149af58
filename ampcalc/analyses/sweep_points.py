"""A sweep's grid evaluated into columns: the engine at every point, for every design.

``Sweep`` is the evaluated grid (one row per design and point, as columns). The axis
along M's ε (or the target ε′) is one vectorised engine call per design (a ``_Piece``);
every other axis is loaded per point as ``--set`` overrides of the document. The
columns of ``bound``, ``invert`` and ``plan`` are made here.

Pure: no printing, no exits. ``evaluate`` and ``evaluate_designs`` are in
``ampcalc/analyses/sweep.py``; the streamed sweep in ``ampcalc/analyses/sweep_stream.py``.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ampcalc import engine
from ampcalc.analyses.vary import (
    EPSILON_PATH,
    MAX_POINTS,
    TARGET_PATH,
    Vary,
    _too_many,
    _where,
    yaml_scalar,
)
from ampcalc.math.accuracy import epsilon_sample, noise_ratio, q_bound
from ampcalc.model.design import Design, check_epsilon
from ampcalc.model.errors import DesignError
from ampcalc.model.limits import LIMITS, limit
from ampcalc.model.references import HU_2023, cite

KINDS = ("bound", "invert", "plan")

#: rows turned into dicts at a time by ``Sweep.rows``
ROWS_BLOCK = 1 << 14
BOUND_COLUMNS = (
    "epsilon",
    "epsilon_prime.lower",
    "epsilon_prime.upper",
    "delta_prime",
    "verdict",
    "reference_epsilon",
)
INVERT_COLUMNS = (
    "target.epsilon_prime",
    "epsilon.certified",
    "epsilon.impossible_above",
    "delta",
)


@dataclass
class Sweep:
    """The evaluated grid: one row per (design, grid point), as columns.

    Attributes:
        of: ``bound`` | ``invert`` | ``plan``.
        varies: the varied fields, in option order (the first is the x axis).
        columns: column name -> array, one entry per row; ``design`` and ``scheme``
            name the design; the varied paths hold the point; then the results
            (``BOUND_COLUMNS`` / ``INVERT_COLUMNS`` or the planner's), ``error``. A
            column with one value in every row may be a read-only view (copy it to
            change it).
        designs: per design name: scheme, basis, guarantee, warnings, notes (of the first
            evaluated point; shared by all points of a design).
        engine_seconds: time spent in engine calls.
    """

    of: str
    varies: tuple[Vary, ...]
    columns: dict[str, np.ndarray]
    designs: dict[str, dict[str, Any]] = field(default_factory=dict)
    engine_seconds: float = 0.0

    def __len__(self) -> int:
        return len(self.columns["design"]) if self.columns else 0

    def column_names(self) -> list[str]:
        return list(self.columns)

    def rows(self) -> Iterator[dict[str, Any]]:
        """Rows as dicts of plain Python values (NaN -> None), made a block at a time
        (the first rows of 10⁷ cost no list of 10⁷ Python values per column)."""
        names = self.column_names()
        n = len(self)
        for lo in range(0, n, ROWS_BLOCK):
            cols = [_plain_list(self.columns[k][lo : lo + ROWS_BLOCK]) for k in names]
            for values in zip(*cols, strict=True):
                yield dict(zip(names, values, strict=True))

    def errors(self) -> list[str]:
        values = self._error_values()
        return sorted(e for e in set(values) if e) if values else []

    def failed_points(self) -> int:
        values = self._error_values()
        return sum(1 for e in values if e) if values else 0

    def _error_values(self) -> list[Any]:
        """The error column's values, or [] when no point has an error (the usual case,
        told by ``list.count``, which compares identity first, in C)."""
        err = self.columns.get("error")
        if err is None or (len(err) and err.strides == (0,) and err[0] is None):
            return []  # no column, or one error (none) for every row
        values: list[Any] = err.tolist()
        return [] if values.count(None) == len(values) else values


def _plain_list(arr: np.ndarray) -> list[Any]:
    if arr.dtype.kind == "f":
        out = arr.tolist()
        return [None if v != v else v for v in out]  # NaN -> None
    return [None if v is None or (isinstance(v, float) and v != v) else v for v in arr.tolist()]


def vector_path(of: str) -> str | None:
    return {"bound": EPSILON_PATH, "invert": TARGET_PATH, "plan": TARGET_PATH}.get(of)


def _check_varies(of: str, varies: Sequence[Vary]) -> None:
    if of not in KINDS:
        raise DesignError(f"unknown `of` {of!r}; expected one of {', '.join(KINDS)}")
    if not varies:
        raise DesignError(
            "nothing to sweep: `vary` needs a PATH=SPEC, e.g. mechanism.epsilon=0.01:10:100:log"
        )
    if len(varies) > 2:
        raise DesignError("at most two varied paths (a grid); got " + str(len(varies)))
    paths = [v.path for v in varies]
    if len(set(paths)) != len(paths):
        raise DesignError(f"{paths[0]!r} is varied twice")
    for v in varies:
        if of == "bound" and v.field == TARGET_PATH:
            raise DesignError(
                'the target ε′ does not change a bound; vary it with of="invert"',
                where=_where(v.text),
            )
        if of in ("invert", "plan") and v.field == EPSILON_PATH:
            raise DesignError(
                f"of={of!r} starts from a target ε′, not M's ε; vary the target instead "
                "(target=0.1:2:20)",
                where=_where(v.text),
            )
        arr = v.floats()  # the grid itself (read-only), or a copy of a list's values
        if arr is None:
            arr = v.array()
        if v.field == EPSILON_PATH:
            check_epsilon(arr, where=_where(v.text), array=True)
        if v.field == TARGET_PATH and np.any(arr <= 0):
            raise DesignError(
                f"{v.field} must be > 0 at every point; got {min(arr):g}", where=_where(v.text)
            )
    total = math.prod(len(v.values) for v in varies)
    if total > MAX_POINTS:
        raise DesignError(_too_many(total))


def _overrides(base: Sequence[str], point: Mapping[str, float | int]) -> list[str]:
    return [*base, *(f"{p}={yaml_scalar(v)}" for p, v in point.items())]


def _point_text(point: Mapping[str, float | int]) -> str:
    return ", ".join(f"{p}={yaml_scalar(v)}" for p, v in point.items())


@dataclass
class _Piece:
    """The rows of one design at one point of the other axis (or a block of them)."""

    design: Design
    res: Any  # the engine's result (None for ``plan``)
    data: dict[str, Any] | None  # the planner's design entry (``plan``)
    columns: dict[str, np.ndarray]
    pointwise: bool  # a failed vectorised call spread over the grid, point by point


def _pieces(
    base_designs: tuple[Design, ...],
    load_point: Callable[[Mapping[str, float | int]], tuple[Design, ...]],
    varies: tuple[Vary, ...],
    of: str,
    target: float | None,
    target_delta: float | None,
    progress: Callable[[int, int], None] | None,
    block: int | None = None,
    seconds: list[float] | None = None,
) -> Iterator[_Piece]:
    """The grid's rows, in order: per point of the other axis, per design, the
    vectorised axis in one engine call (``block``: in calls of at most ``block``
    values). ``seconds[0]`` accumulates the time spent in engine calls."""
    vec_path = vector_path(of)
    vec = next((v for v in varies if v.path == vec_path), None)
    others = [v for v in varies if v is not vec]
    n_designs = len(base_designs)
    for v in varies:
        idx = v.design_index
        if idx is not None and idx >= n_designs:
            raise DesignError(
                f"the file holds {n_designs} design(s); there is no designs[{idx}]",
                where=_where(v.text),
            )
    per_point = math.prod(len(v.values) for v in others)
    if per_point > limit("sweep_design_points"):  # before the grid is built
        raise DesignError(
            LIMITS["sweep_design_points"].message(per_point), where=_where(others[0].text)
        )
    grid = list(itertools.product(*(v.values for v in others))) if others else [()]
    vec_values = None
    if vec is not None:  # the grid's own read-only array when it has one (no copy)
        vec_values = vec.floats()
        if vec_values is None:
            vec_values = vec.array()
    spans: list[tuple[int, int] | None] = [None]
    if block is not None and vec_values is not None and len(vec_values) > block:
        spans = [(lo, min(lo + block, len(vec_values))) for lo in range(0, len(vec_values), block)]
    kinds = {
        v.path: np.int64 if all(isinstance(x, int) for x in v.values) else float for v in others
    }
    for step, combo in enumerate(grid):
        point = {v.path: val for v, val in zip(others, combo, strict=True)}
        designs = _point_designs(load_point, point, others, n_designs) if point else base_designs
        for d in designs:
            for span in spans:
                values = vec_values if span is None else vec_values[span[0] : span[1]]  # type: ignore[index]
                yield _piece(
                    d, of, values, target, target_delta, varies, vec, point, kinds, seconds
                )
        if progress is not None:
            progress(step + 1, len(grid))


def _point_designs(
    load_point: Callable[[Mapping[str, float | int]], tuple[Design, ...]],
    point: Mapping[str, float | int],
    others: Sequence[Vary],
    n_designs: int,
) -> tuple[Design, ...]:
    """The designs at one point of the grid; a design error names the point and, when
    it comes from an override, the ``--vary`` that made it."""
    try:
        return load_point(point)
    except DesignError as err:
        where = err.where
        if where is not None and where.file == "--set":
            fld = re.sub(r"^designs\[\d+\]\.", "", where.field or "")
            hit = [v for v in others if where.field == v.path or fld == v.field]
            if hit:
                where = _where(hit[0].text)
        hint = err.hint
        plain = [v.path for v in others if v.design_index is None]
        if n_designs > 1 and plain:
            extra = (
                f"in a `designs:` file a plain path applies to every design; to vary "
                f"one design write designs[i].{plain[0]}"
            )
            hint = f"{hint}; {extra}" if hint else extra
        raise DesignError(
            f"at grid point {_point_text(point)}: {err.message}",
            where=where,
            hint=hint,
        ) from None


def _piece(
    d: Design,
    of: str,
    values: np.ndarray | None,
    target: float | None,
    target_delta: float | None,
    varies: tuple[Vary, ...],
    vec: Vary | None,
    point: Mapping[str, float | int],
    kinds: Mapping[str, Any],
    seconds: list[float] | None,
) -> _Piece:
    """The rows of design ``d`` at one point of the other axes, along the vectorised
    axis' ``values`` (one engine call; ``seconds[0]`` accumulates its time)."""
    t0 = time.perf_counter()
    pointwise = False
    if of == "plan":
        res = None
        cols, data = _plan_columns(d, values if values is not None else target)
    else:
        data = None
        res, cols = _evaluate(d, of, values, target, target_delta)
        if values is not None and len(values) > 1 and res.error is not None:
            res, cols, vectorised = _per_point(d, of, values, target_delta, res, cols)
            pointwise = not vectorised
    if seconds is not None:
        seconds[0] += time.perf_counter() - t0
    n = len(next(iter(cols.values())))
    piece: dict[str, Any] = {
        "design": _objects(n, d.name),
        "scheme": _objects(n, d.scheme),
    }
    for v in varies:
        if v is vec:
            piece[v.path] = np.asarray(values, dtype=float)
        else:
            piece[v.path] = np.full(n, point[v.path], dtype=kinds[v.path])
    piece.update(cols)
    return _Piece(d, res, data, piece, pointwise)


def _grid(
    base_designs: tuple[Design, ...],
    load_point: Callable[[Mapping[str, float | int]], tuple[Design, ...]],
    varies: tuple[Vary, ...],
    of: str,
    target: float | None,
    target_delta: float | None,
    progress: Callable[[int, int], None] | None,
) -> Sweep:
    """The grid of ``varies`` over the designs; ``load_point`` builds a point's designs."""
    pieces: list[dict[str, Any]] = []
    meta: dict[str, dict[str, Any]] = {}
    seconds = [0.0]
    scalar_designs: set[str] = set()
    for p in _pieces(
        base_designs, load_point, varies, of, target, target_delta, progress, seconds=seconds
    ):
        if p.pointwise:
            scalar_designs.add(p.design.name)
        pieces.append(p.columns)
        _first_meta(meta, p)
    columns = _concat(pieces)
    _per_point_notes(meta, scalar_designs)
    return Sweep(of=of, varies=varies, columns=columns, designs=meta, engine_seconds=seconds[0])


def _first_meta(meta: dict[str, dict[str, Any]], p: _Piece) -> None:
    """A design's entry: that of its first evaluated point."""
    name = p.design.name
    if name not in meta and p.res is not None:
        meta[name] = _meta(p.res)
    elif name not in meta and p.data is not None:
        meta[name] = p.data


def _per_point_notes(meta: dict[str, dict[str, Any]], scalar_designs: set[str]) -> None:
    for name in scalar_designs:
        meta[name]["evaluation"] = "per point"
        meta[name].setdefault("notes", []).append(
            "evaluated one point at a time: the theorem's conditions depend on M's ε and "
            "fail at some points of the grid (see each row's error)"
        )


# ---------------------------------------------------------------------------------------
# streamed evaluation: bounded memory for the largest grids
# ---------------------------------------------------------------------------------------


def _evaluate(
    d: Any, of: str, values: Any, target: Any, target_delta: float | None
) -> tuple[Any, dict[str, np.ndarray]]:
    if of == "bound":
        res = engine.bound(d, epsilon=values)
        return res, _bound_columns(res, values)
    inv = engine.invert(d, values if values is not None else target, target_delta)
    return inv, _invert_columns(inv, values)


def _per_point(
    d: Any,
    of: str,
    values: np.ndarray,
    target_delta: float | None,
    res: Any,
    cols: dict[str, np.ndarray],
) -> tuple[Any, dict[str, np.ndarray], bool]:
    """A vectorised call that failed: per point, when the failure depends on the point.

    Every scheme's bounds are vectorised in ε and give, at each point, the bits a
    single call gives (``tests/test_pointwise.py``); a design whose conditions depend
    on M's ε is evaluated point by point by the engine, and fails the whole call when
    one point fails. Here such a failure is spread back over the grid, so each point
    reports its own result or error. A failure that does not depend on the point
    (the single call at the first point fails the same way) stays as it is.
    """
    first, one = _evaluate(d, of, float(values[0]), None, target_delta)
    if first.error == res.error:
        return res, cols, True
    parts = [one, *(_evaluate(d, of, float(v), None, target_delta)[1] for v in values[1:])]
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return first, merged, False


def _meta(res: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "scheme": res.scheme,
        "basis": [c.to_dict() for c in res.basis],
        "warnings": list(res.warnings),
        "notes": list(getattr(res, "notes", ())),
    }
    if hasattr(res, "guarantee_neighbours"):
        out["guarantee_neighbours"] = res.guarantee_neighbours
    return out


def _objects(n: int, value: Any) -> np.ndarray:
    """An object column of ``n`` rows, all ``value``: a read-only view of one element
    (stride 0), so that a design's name, scheme and error cost no memory per row and a
    reader tells them constant at once (``np.full(n, "text", dtype=object)`` would make
    ``n`` copies of a string, through a unicode array)."""
    one = np.empty(1, dtype=object)
    one[0] = value
    return np.broadcast_to(one, (n,))


def _as_column(value: Any, n: int, dtype: Any = float) -> np.ndarray:
    if dtype is object and (value is None or np.ndim(value) == 0):
        return _objects(n, value.item() if isinstance(value, np.ndarray) else value)
    if value is None:
        return np.full(n, np.nan, dtype=dtype)
    arr = np.asarray(value, dtype=dtype)
    if arr.ndim == 0:
        return np.full(n, arr.item(), dtype=dtype)
    return arr.reshape(-1)


def _bound_columns(res: Any, eps: np.ndarray | None) -> dict[str, np.ndarray]:
    n = 1 if eps is None or np.ndim(eps) == 0 else len(eps)
    ref = (res.details or {}).get("reference_epsilon")
    return {
        "epsilon": _as_column(res.epsilon, n),
        "epsilon_prime.lower": _as_column(res.lower, n),
        "epsilon_prime.upper": _as_column(res.upper, n),
        "delta_prime": _as_column(res.delta_prime, n),
        "verdict": _as_column(res.verdict, n, dtype=object),
        "reference_epsilon": _as_column(ref, n),
        "error": _objects(n, res.error),
    }


def _invert_columns(res: Any, targets: np.ndarray | None) -> dict[str, np.ndarray]:
    n = 1 if targets is None or np.ndim(targets) == 0 else len(targets)
    return {
        "target.epsilon_prime": _as_column(res.target_epsilon_prime, n),
        "epsilon.certified": _as_column(res.certified, n),
        "epsilon.impossible_above": _as_column(res.impossible_above, n),
        "delta": _as_column(res.delta, n),
        "error": _objects(n, res.error),
    }


def _concat(pieces: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    if not pieces:
        return {}
    names: list[str] = []
    for p in pieces:
        for k in p:
            if k not in names:
                names.append(k)
    out: dict[str, np.ndarray] = {}
    for k in names:
        parts = []
        for p in pieces:
            n = len(p["design"])
            parts.append(p[k] if k in p else np.full(n, None, dtype=object))
        out[k] = np.concatenate(parts) if len(parts) > 1 else parts[0]
    if "error" in out:  # errors last
        out["error"] = out.pop("error")
    return out


# ---------------------------------------------------------------------------------------
# the accuracy planner's columns
# ---------------------------------------------------------------------------------------


def _plan_columns(design: Any, target: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The planner's accuracy figures for one SRSWOR design at target ε′ (vectorised).

    Columns: ``target.epsilon_prime``; ``plan.rate`` (n/N); ``plan.epsilon_sample``
    (ε_n, what M on the sample may spend, Hu et al. Theorem 1 inverted);
    ``plan.noise_ratio`` (r(ε, n/N), Hu et al. eq. 8); ``plan.variance_share_max`` (Hu et al.'s q =
    1 − ε²/ε_n², Hu et al. §4.1 eq. 5: a gain needs Var(g(S)) <= q·V_N); ``error``.
    """
    if target is None and design.target is not None:
        target = design.target.epsilon_prime
    if target is None:
        raise DesignError(
            f'design {design.name!r}: of="plan" needs a target ε′: a varied target=..., '
            "`target` or a `target: {epsilon_prime: T}` block"
        )
    t = np.atleast_1d(np.asarray(target, dtype=float))
    n = len(t)
    meta = {
        "scheme": design.scheme,
        "basis": [
            cite(HU_2023, "Theorem 1 (ε_n = A⁻¹(n/N, ε))").to_dict(),
            cite(HU_2023, "§4.1 eq. 5 (q bound), eq. 8 (noise ratio)").to_dict(),
        ],
        "warnings": [],
        "notes": [],
    }
    if design.scheme != "srswor":
        nan = np.full(n, np.nan)
        message = (
            f'of="plan": the accuracy planner ({HU_2023}, §4) covers simple random samples '
            f"(scheme srswor), not {design.scheme}"
        )
        return {
            "target.epsilon_prime": t,
            "plan.rate": nan,
            "plan.epsilon_sample": nan,
            "plan.noise_ratio": nan,
            "plan.variance_share_max": nan,
            "error": _objects(n, message),
        }, meta
    rho = design.params.sample / design.params.population
    return {
        "target.epsilon_prime": t,
        "plan.rate": np.full(n, rho),
        "plan.epsilon_sample": np.asarray(epsilon_sample(t, rho), dtype=float).reshape(n),
        "plan.noise_ratio": np.asarray(noise_ratio(t, rho), dtype=float).reshape(n),
        "plan.variance_share_max": np.asarray(q_bound(t, rho), dtype=float).reshape(n),
        "error": np.full(n, None, dtype=object),
    }, meta


# ---------------------------------------------------------------------------------------
# output helpers
# ---------------------------------------------------------------------------------------
