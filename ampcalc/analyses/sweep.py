"""Sweeps: the engine evaluated over a grid of design values, for curves and tables.

A sweep varies one or two numeric design fields (``--vary PATH=SPEC``) and evaluates
``bound`` (ε′ against the varied values), ``invert`` (the certified mechanism ε
against a target ε′ or a design field) or ``plan`` (the accuracy planner's figures,
``math.accuracy``) at every grid point, for every design of the file.

The axis along M's ε (``mechanism.epsilon``, for ``bound``) or along the target ε′
(``target``, for ``invert``) is evaluated in one vectorised engine call per design;
every other axis is applied per point as a ``--set`` override of the parsed
document, so that each point is validated exactly like a file (types, domains,
theorem conditions) and works for any registered scheme.

Pure: no printing, no exits. The command is ``ampcalc/cli/sweep.py``; the
figures are drawn by ``ampcalc/output/plot.py``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from ampcalc.model.design import Design, check_epsilon
from ampcalc.model.errors import DesignError, Where
from ampcalc.model.limits import LIMITS, limit
from ampcalc.model.references import HU_2023, cite

KINDS = ("bound", "invert", "plan")
EPSILON_PATH = "mechanism.epsilon"
TARGET_PATH = "target.epsilon_prime"
ALIASES = {
    "epsilon": EPSILON_PATH,
    "eps": EPSILON_PATH,
    "target": TARGET_PATH,
    "target.epsilon": TARGET_PATH,
}
MAX_POINTS = 10_000_000
MAX_STEPS = 10_000_000
#: rows turned into dicts at a time by ``Sweep.rows``
ROWS_BLOCK = 1 << 14
#: a sweep of more rows than this is written by the command as it is evaluated
#: (``evaluate_stream``), in blocks of ``STREAM_BLOCK`` values of the vectorised axis
STREAM_FROM = 1 << 21
STREAM_BLOCK = 1 << 18

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

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*:\s*({_NUMBER})\s*:\s*(\d+)\s*(?::\s*(\w+)\s*)?$")
_INT_LITERAL = re.compile(r"^\s*[-+]?\d+\s*$")
_PATH = re.compile(r"(?:designs\[\d+\]\.)?[A-Za-z_][\w\-]*(?:\.[A-Za-z_][\w\-]*|\[\d+\])*")


class FloatGrid(Sequence[float]):
    """The values of a range of floats (``start:stop:steps[:log]``): a read-only
    sequence of Python floats over a float array, each made when it is read.

    A sweep of 10⁶ points reads its grid as an array; a tuple of 10⁶ Python floats
    would cost ~50 ms to build and be walked by every garbage collection. Equal to a
    tuple or list of the same floats; ``numpy.asarray`` gives the floats without a
    Python object per value.
    """

    __slots__ = ("_array",)

    def __init__(self, array: np.ndarray, *, copy: bool = True) -> None:
        """``copy=False``: take a float64 ``array`` itself (made read-only; the caller
        drops its own reference), as ``parse_vary`` does with the grid it made."""
        arr = np.array(array, dtype=float) if copy else np.asarray(array, dtype=float)
        arr.flags.writeable = False
        self._array = arr

    @property
    def array(self) -> np.ndarray:
        """The values (read-only; not a copy)."""
        return self._array

    def __len__(self) -> int:
        return len(self._array)

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[float, ...]: ...

    def __getitem__(self, index: int | slice) -> float | tuple[float, ...]:
        if isinstance(index, slice):
            return tuple(self._array[index].tolist())
        return float(self._array[index])

    def __iter__(self) -> Iterator[float]:
        return iter(self._array.tolist())

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:  # no copy asked for: the read-only array itself
            return np.asarray(self._array, dtype=dtype)
        return np.array(self._array, dtype=dtype)  # a copy: the grid stays as it is

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FloatGrid):
            return bool(np.array_equal(self._array, other._array))
        if isinstance(other, tuple | list):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))  # as the equal tuple's

    def __repr__(self) -> str:
        n = len(self._array)
        if n <= 6:
            return f"FloatGrid({tuple(self)!r})"
        return f"FloatGrid({n} values, {self[0]!r} … {self[-1]!r})"


@dataclass(frozen=True)
class Vary:
    """One varied field: its design path and the values it takes.

    Attributes:
        path: the design path (as ``--set``), aliases resolved.
        values: the values, in order: a tuple (floats, or ints for whole-number
            fields), or a ``FloatGrid`` for a range of floats.
        log: the spec asked for log spacing (a hint for the plot's axis).
        text: the option as given.
    """

    path: str
    values: Sequence[float | int]
    log: bool = False
    text: str = ""

    @property
    def field(self) -> str:
        """The path relative to a design (``designs[i].`` removed)."""
        return re.sub(r"^designs\[\d+\]\.", "", self.path)

    @property
    def design_index(self) -> int | None:
        m = re.match(r"^designs\[(\d+)\]\.", self.path)
        return int(m.group(1)) if m else None

    def floats(self) -> np.ndarray | None:
        """The values as a read-only float array when they are a ``FloatGrid`` (a range
        of floats), else ``None``."""
        return self.values.array if isinstance(self.values, FloatGrid) else None

    def array(self) -> np.ndarray:
        """The values as a float array (a copy)."""
        return np.array(self.values, dtype=float)


def _where(text: str) -> Where:
    return Where(file="vary", field=text)


def parse_vary(text: str, *, integer: bool | None = None) -> Vary:
    """Parse ``PATH=SPEC``.

    SPEC is ``start:stop:steps`` (``steps`` evenly spaced values, ends included),
    ``start:stop:steps:log`` (geometric spacing; ends > 0), or a comma list
    ``v1,v2,...``.

    Args:
        text: the option's value.
        integer: round range values to whole numbers (and drop repeats); ``None``
            decides from the spec (both ends written as integers and the field is
            not M's ε or a target).
    Raises:
        DesignError: a malformed spec, with an example of a good one.
    """
    spec = _read_spec(text, integer)
    if spec.span is None:
        return Vary(path=spec.path, values=tuple(spec.items), log=spec.log, text=text)
    arr = _range_array(*spec.span, log=spec.log)
    if spec.integer:
        values = list(dict.fromkeys(round(float(v)) for v in arr))
        return Vary(path=spec.path, values=tuple(values), log=spec.log, text=text)
    return Vary(path=spec.path, values=FloatGrid(arr, copy=False), log=spec.log, text=text)


def parse_varies(texts: Sequence[str]) -> list[Vary]:
    """``parse_vary`` of each of one or two options; a grid of more than ``MAX_POINTS``
    points is refused before any of its values are made (from the specs: ``steps``
    values of a float range, the whole numbers of a rounded range, a list's items).

    Raises:
        DesignError: a malformed spec (the first, in option order), or too many points.
    """
    specs = [_read_spec(t, None) for t in texts]
    if len(specs) <= 2:
        total = math.prod(_size(s) for s in specs)
        if total > MAX_POINTS:
            raise DesignError(_too_many(total))
    return [parse_vary(t) for t in texts]


def _too_many(total: int) -> str:
    return f"{total:,} grid points is more than the limit of {MAX_POINTS:,}"


@dataclass(frozen=True)
class _Spec:
    """A checked ``PATH=SPEC``: a range (``span``: start, stop, steps) or a list."""

    path: str
    log: bool
    span: tuple[float, float, int] | None
    integer: bool
    items: tuple[float | int, ...] = ()


def _read_spec(text: str, integer: bool | None) -> _Spec:
    """``PATH=SPEC`` checked, without making a range's values (``parse_vary``)."""
    if "=" not in text:
        raise DesignError(
            "expected PATH=SPEC, e.g. mechanism.epsilon=0.01:10:200:log or sampling.sample=50,100",
            where=_where(text),
        )
    path, spec = (s.strip() for s in text.split("=", 1))
    path = ALIASES.get(path, path)
    if not _PATH.fullmatch(path):
        raise DesignError(
            f"{path!r} is not a field path; expected e.g. sampling.rate or "
            "designs[1].sampling.sample",
            where=_where(text),
        )
    floats_only = path.endswith(EPSILON_PATH) or path == TARGET_PATH or "delta" in path
    m = _RANGE.match(spec)
    if m:
        start, stop, steps = float(m.group(1)), float(m.group(2)), int(m.group(3))
        how = m.group(4)
        if how not in (None, "log", "lin", "linear"):
            raise DesignError(
                f"unknown spacing {how!r}; expected start:stop:steps or start:stop:steps:log",
                where=_where(text),
            )
        if not (math.isfinite(start) and math.isfinite(stop)):
            raise DesignError("range ends must be finite numbers", where=_where(text))
        if not 1 <= steps <= MAX_STEPS:
            raise DesignError(
                f"steps must be between 1 and {MAX_STEPS:,}; got {steps}", where=_where(text)
            )
        log = how == "log"
        if log and (start <= 0 or stop <= 0):
            raise DesignError(
                "a log range needs ends > 0, e.g. 0.001:1:50:log", where=_where(text)
            )
        if integer is None:
            integer = (
                not floats_only
                and bool(_INT_LITERAL.match(m.group(1)))
                and bool(_INT_LITERAL.match(m.group(2)))
            )
        return _Spec(path, log, (start, stop, steps), bool(integer))
    values: list[float | int] = []
    for item in spec.split(","):
        item = item.strip()
        if not re.fullmatch(_NUMBER, item):
            raise DesignError(
                f"{item!r} is not a number; expected start:stop:steps, "
                "start:stop:steps:log or a comma list such as 0.1,0.5,1",
                where=_where(text),
            )
        if _INT_LITERAL.match(item) and not floats_only:
            values.append(int(item))
        else:
            values.append(float(item))
    return _Spec(path, False, None, False, tuple(values))


def _range_array(start: float, stop: float, steps: int, *, log: bool) -> np.ndarray:
    """A range's values: ``steps`` evenly (``log``: geometrically) spaced, exact ends."""
    arr = np.geomspace(start, stop, steps) if log else np.linspace(start, stop, steps)
    if steps > 1:  # exact ends (linspace/geomspace may round the last one)
        arr[0], arr[-1] = start, stop
    return arr


def _size(spec: _Spec) -> int:
    """How many values ``parse_vary`` makes of ``spec``, without a Python object per
    value: a rounded range counts its distinct whole numbers in a float array (Python's
    ``round`` and ``numpy.rint`` both round half to even)."""
    if spec.span is None:
        return len(spec.items)
    if not spec.integer:
        return spec.span[2]
    values = _range_array(*spec.span, log=spec.log)
    changes, rising, falling = 0, True, True
    for lo in range(0, len(values), 1 << 20):  # a block at a time: no second 80 MB array
        whole = np.rint(values[max(lo - 1, 0) : lo + (1 << 20)])
        step = np.diff(whole)
        changes += int(np.count_nonzero(step))
        rising = rising and bool(np.all(step >= 0))
        falling = falling and bool(np.all(step <= 0))
    if rising or falling:  # in order: repeats are runs
        return 1 + changes
    return int(np.unique(np.rint(values)).size)


def yaml_scalar(value: float | int) -> str:
    """A number as YAML text that reads back as the same number."""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return repr(float(value))


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


# ---------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------


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


def evaluate(
    document: Any,
    varies: Sequence[Vary],
    *,
    of: str = "bound",
    filename: str = "<string>",
    overrides: Sequence[str] = (),
    target: float | None = None,
    target_delta: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Sweep:
    """Evaluate the engine on every grid point of ``varies`` for every design.

    Args:
        document: the parsed design document (``design.parse_yaml`` output or a dict).
        varies: one or two varied fields; the first is the x axis.
        of: ``bound``, ``invert`` or ``plan``.
        filename: the document's file name (error messages).
        overrides: ``--set`` overrides applied before the varied values.
        target, target_delta: for ``invert`` (when the target is not varied).
        progress: called as ``progress(done, total)`` after each per-point step.
    Returns:
        A ``Sweep``; points outside a theorem's conditions carry ``error`` and null
        results.
    Raises:
        DesignError: a malformed sweep, or a grid point that is not a valid design
            (the message names the point).
    """

    from ampcalc.designs.document import load_document

    varies = tuple(varies)
    _check_varies(of, varies)
    base_designs = load_document(document, filename=filename, overrides=overrides)

    def load_point(point: Mapping[str, float | int]) -> tuple[Design, ...]:
        return load_document(document, filename=filename, overrides=_overrides(overrides, point))

    return _grid(base_designs, load_point, varies, of, target, target_delta, progress)


def evaluate_designs(
    designs: Sequence[Design],
    varies: Sequence[Vary],
    *,
    of: str = "bound",
    target: float | None = None,
    target_delta: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Sweep:
    """``evaluate`` on built ``Design`` objects, without a round trip through a document.

    Only the vectorised path (``epsilon`` for ``bound`` and ``plan``, ``target`` for
    ``invert``) can vary: any other field changes the design, which must then be
    validated again from its document (``evaluate``).

    Raises:
        DesignError: a varied field other than the vectorised path.
    """
    varies = tuple(varies)
    _check_varies(of, varies)
    vec_path = vector_path(of)
    bad = [v.path for v in varies if v.path != vec_path]
    if bad:
        raise DesignError(
            f"cannot vary {bad[0]} on a built Design: only {vec_path} varies without "
            "validating the design again; pass its document (path, YAML text or dict)",
            where=_where(bad[0]),
        )

    def load_point(point: Mapping[str, float | int]) -> tuple[Design, ...]:
        return tuple(designs)

    return _grid(tuple(designs), load_point, varies, of, target, target_delta, progress)


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
    import time

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


@dataclass
class SweepStream:
    """A checked sweep too large to hold: its rows are evaluated again, a block at a
    time, each time they are read (``blocks``), with the same values as ``evaluate``'s
    columns (every scheme's vectorised bounds give at each point the bits of a single
    call, ``tests/test_pointwise.py``).

    Made by ``evaluate_stream`` only when a first pass over the blocks found what
    evaluating in blocks reproduces exactly: no point outside its theorem's
    conditions, the same design entry from every block, the same columns and types
    in every block, and only values JSON writes as they are (no ±inf). Its
    ``designs`` are those of ``evaluate``.
    """

    of: str
    varies: tuple[Vary, ...]
    names: list[str]
    designs: dict[str, dict[str, Any]]
    size: int
    make: Callable[[], Iterator[_Piece]]
    engine_seconds: float = 0.0

    def __len__(self) -> int:
        return self.size

    def column_names(self) -> list[str]:
        return list(self.names)

    def errors(self) -> list[str]:
        return []  # checked: no point has an error

    def failed_points(self) -> int:
        return 0

    def blocks(self) -> Iterator[dict[str, np.ndarray]]:
        """The columns of successive rows (at least ``STREAM_BLOCK`` rows a block but
        the last; every block has every column), evaluated again."""
        pending: list[dict[str, Any]] = []
        count = 0
        for p in self.make():
            pending.append(p.columns)
            count += len(p.columns["design"])
            if count >= STREAM_BLOCK:
                yield _concat(pending)
                pending, count = [], 0
        if pending:
            yield _concat(pending)

    def rows(self) -> Iterator[dict[str, Any]]:
        """Rows as dicts of plain Python values (``Sweep.rows``)."""
        for block in self.blocks():
            yield from Sweep(of=self.of, varies=self.varies, columns=block).rows()

    def head(self, rows: int) -> Sweep:
        """The first ``rows`` rows as a ``Sweep`` (every column)."""
        parts: list[dict[str, np.ndarray]] = []
        got = 0
        for block in self.blocks():
            parts.append({k: v[: rows - got] for k, v in block.items()})
            got += len(parts[-1]["design"])
            if got >= rows:
                break
        return self._sweep(parts)

    def select(self, names: Sequence[str]) -> Sweep:
        """Every row of the columns ``names`` as a ``Sweep`` (e.g. what a chart reads)."""
        return self._sweep([{k: b[k] for k in self.names if k in names} for b in self.blocks()])

    def _sweep(self, parts: list[dict[str, np.ndarray]]) -> Sweep:
        columns = {k: _join([p[k] for p in parts]) for k in parts[0]} if parts else {}
        return Sweep(of=self.of, varies=self.varies, columns=columns, designs=self.designs)


def _join(parts: list[np.ndarray]) -> np.ndarray:
    """The parts one after the other; parts that are views of one object (a design's
    name, ``_objects``) stay one view."""
    filled = [p for p in parts if len(p)]
    if (
        filled
        and filled[0].dtype.kind == "O"
        and all(p.strides == (0,) and p[0] is filled[0][0] for p in filled)
    ):
        return _objects(sum(len(p) for p in filled), filled[0][0])
    return np.concatenate(parts)


def evaluate_stream(
    document: Any,
    varies: Sequence[Vary],
    *,
    of: str = "bound",
    filename: str = "<string>",
    overrides: Sequence[str] = (),
    target: float | None = None,
    target_delta: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Sweep | SweepStream:
    """``evaluate``, in bounded memory: a grid of more than ``STREAM_FROM`` rows is
    evaluated once in blocks of
    ``STREAM_BLOCK`` values of the vectorised axis and checked (``SweepStream``), and
    its rows are evaluated again when they are read. A sweep the blocks cannot
    reproduce exactly (a point outside its theorem's conditions, a design entry that
    depends on the values, ±inf) is evaluated in one piece, as ``evaluate`` does, and
    returned as a ``Sweep``.

    Raises:
        DesignError: as ``evaluate``.
    """
    from ampcalc.designs.document import load_document

    varies = tuple(varies)
    _check_varies(of, varies)
    base_designs = load_document(document, filename=filename, overrides=overrides)

    def load_point(point: Mapping[str, float | int]) -> tuple[Design, ...]:
        return load_document(document, filename=filename, overrides=_overrides(overrides, point))

    def make(
        report: Callable[[int, int], None] | None = None, seconds: list[float] | None = None
    ) -> Iterator[_Piece]:
        return _pieces(
            base_designs,
            load_point,
            varies,
            of,
            target,
            target_delta,
            report,
            STREAM_BLOCK,
            seconds,
        )

    if math.prod(len(v.values) for v in varies) * len(base_designs) <= STREAM_FROM:
        return _grid(base_designs, load_point, varies, of, target, target_delta, progress)
    seconds = [0.0]
    checked = _checked(make(progress, seconds))
    if checked is None:
        return _grid(base_designs, load_point, varies, of, target, target_delta, None)
    names, meta, rows = checked
    return SweepStream(
        of=of,
        varies=varies,
        names=names,
        designs=meta,
        size=rows,
        make=make,
        engine_seconds=seconds[0],
    )


def _checked(
    pieces: Iterator[_Piece],
) -> tuple[list[str], dict[str, dict[str, Any]], int] | None:
    """The column names, design entries and rows of ``pieces`` when evaluating them in
    blocks gives what one piece per design and point gives (``SweepStream``); else
    ``None``."""
    meta: dict[str, dict[str, Any]] = {}
    layout: list[tuple[str, str]] | None = None
    rows = 0
    last: tuple[Design, dict[str, Any]] | None = None
    for p in pieces:
        if p.pointwise:
            return None
        cols = p.columns
        shape = [(k, v.dtype.str) for k, v in cols.items()]
        if layout is None:
            layout = shape
        elif shape != layout:
            return None
        if "error" not in cols or not _no_error(cols["error"]):
            return None
        if not all(_plain_values(c) for c in cols.values()):
            return None
        # the blocks of one design at one point: one entry (a warning of the whole
        # array is a warning of every block, or of none when they agree)
        entry = _meta(p.res) if p.res is not None else p.data
        if last is not None and last[0] is p.design:
            if entry != last[1]:
                return None
        else:
            last = (p.design, entry or {})
        _first_meta(meta, p)
        rows += len(cols["design"])
    if layout is None:
        return None
    names = [k for k, _ in layout if k != "error"] + ["error"]
    return names, meta, rows


def _no_error(err: np.ndarray) -> bool:
    if len(err) and err.strides == (0,):
        return err[0] is None
    values: list[Any] = err.tolist()
    return values.count(None) == len(values)


def _plain_values(col: np.ndarray) -> bool:
    """Every value is one JSON writes as it is: a finite float or NaN, an integer, a
    string, a boolean or None."""
    kind = col.dtype.kind
    if kind == "f":
        return not bool(np.isinf(col).any())
    if kind in "iub":
        return True
    if kind != "O":
        return False
    if len(col) and col.strides == (0,):
        distinct: Any = col[:1].tolist()
    else:
        try:
            distinct = set(col.tolist())
        except TypeError:  # unhashable: a list or a mapping
            return False
    return all(
        v is None or isinstance(v, (str, bool, int)) or (isinstance(v, float) and math.isfinite(v))
        for v in distinct
    )


def _evaluate(
    d: Any, of: str, values: Any, target: Any, target_delta: float | None
) -> tuple[Any, dict[str, np.ndarray]]:
    from ampcalc import engine

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
    (ε_n, what M on the sample may spend, 002 Theorem 1 inverted);
    ``plan.noise_ratio`` (r(ε, n/N), 002 eq. 8); ``plan.variance_share_max`` (002's q =
    1 − ε²/ε_n², 002 §4.1 eq. 5: a gain needs Var(g(S)) <= q·V_N); ``error``.
    """
    from ampcalc.math.accuracy import epsilon_sample, noise_ratio, q_bound

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


def document(sweep: Sweep | SweepStream) -> dict[str, Any]:
    """The JSON payload (the ``ampcalc sweep --format json`` document, minus envelope)."""
    return {
        "of": sweep.of,
        "vary": [{"path": v.path, "values": list(v.values), "log": v.log} for v in sweep.varies],
        "designs": [{"name": k, **v} for k, v in sweep.designs.items()],
        "columns": sweep.column_names(),
        "rows": list(sweep.rows()),
    }
