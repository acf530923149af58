"""The varied fields of a sweep: ``--vary PATH=SPEC`` read into a ``Vary`` and its values.

A spec is a list of numbers (``0.1,0.5,1``) or a range (``start:stop:steps[:log]``);
a range of floats is held as an array (``FloatGrid``), not as a Python float per value.
A grid's size is counted before its values are made, against ``MAX_POINTS``.

Pure: no printing, no exits. The sweep itself is ``ampcalc/analyses/sweep.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from ampcalc.model.errors import DesignError, Where

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
