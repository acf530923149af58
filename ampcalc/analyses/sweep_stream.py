"""Sweeps too large to hold: evaluated in blocks, checked, and evaluated again when read.

``evaluate_stream`` evaluates a grid of more than ``STREAM_FROM`` rows once in blocks
of ``STREAM_BLOCK`` values of the vectorised axis, checks that the blocks reproduce
``evaluate``'s columns exactly, and returns a ``SweepStream`` whose rows are made again,
a block at a time, each time they are read.

Pure: no printing, no exits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.analyses.sweep_points import (
    Sweep,
    _check_varies,
    _concat,
    _first_meta,
    _grid,
    _meta,
    _objects,
    _overrides,
    _Piece,
    _pieces,
)
from ampcalc.analyses.vary import Vary
from ampcalc.designs.document import load_document
from ampcalc.model.design import Design

#: a sweep of more rows than this is written by the command as it is evaluated
#: (``evaluate_stream``), in blocks of ``STREAM_BLOCK`` values of the vectorised axis
STREAM_FROM = 1 << 21
STREAM_BLOCK = 1 << 18


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
