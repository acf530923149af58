"""Sweeps from the Python API: any design source in, a ``SweepResult`` out.

``run_sweep`` takes what ``ampcalc.sweep`` takes (a ``Design``, a path, YAML text or a
dict; grid values as spec strings or numbers), checks it, and evaluates it through
``sweep``: a built ``Design`` varied along ε (or the target) directly, anything else
through its design document (``ampcalc.designs.sources.source_document``).
``SweepResult`` wraps the evaluated ``Sweep`` as columns, rows, JSON or a DataFrame.

``sweep_grid`` reads the axes of a sweep without evaluating it (``SweepGrid``: its size
before any point is evaluated), and ``run_sweep_stream`` evaluates a sweep in bounded
memory (``sweep.evaluate_stream``): the ``ampcalc sweep`` command's way, for grids of up
to 10^7 rows.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ampcalc.analyses import sweep as sw
from ampcalc.analyses.sweep import document, yaml_scalar
from ampcalc.model.errors import AmpcalcError, DesignError
from ampcalc.model.references import references_used

if TYPE_CHECKING:
    from ampcalc.analyses.sweep import Sweep, SweepStream, Vary

#: what a sweep evaluates at each point (its ``of``): ``bound``, ``invert`` or ``plan``
SWEEP_KINDS = sw.KINDS


def spec_text(path: str, spec: Any) -> str:
    """``PATH=SPEC`` as ``--vary`` takes it, from a spec string or a sequence of numbers."""

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
        """Column name -> numpy array (one entry per row; a column with one value in
        every row, such as ``design``, may be a read-only view)."""
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

        doc = document(self.sweep)
        refs = references_used(doc)
        return {**doc, "references": refs} if refs else doc

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (one column per result column).

        Raises:
            AmpcalcError: pandas is not installed (it is not a dependency of ampcalc).
        """
        try:
            import pandas as pd  # lazy: pandas, > 20 ms
        except ImportError:
            raise AmpcalcError(
                "to_pandas needs pandas, which is not installed (pip install pandas); "
                "to_dict() and the columns work without it"
            ) from None
        return pd.DataFrame({k: v for k, v in self.sweep.columns.items()})


def run_sweep(
    design: Any,
    vary: Mapping[str, Any],
    *,
    of: str = "bound",
    target: float | None = None,
    target_delta: float | None = None,
    overrides: Sequence[str] = (),
) -> SweepResult:
    """``ampcalc.api.sweep`` (its arguments, returns and errors are documented there)."""
    from ampcalc.designs.sources import built_designs, source_document  # lazy: > 20 ms

    if of not in sw.KINDS:
        raise DesignError(f"unknown of={of!r}; expected one of {', '.join(sw.KINDS)}")
    if not isinstance(vary, Mapping) or not vary:
        raise DesignError(
            "nothing to sweep: give vary={PATH: SPEC}, e.g. vary={'epsilon': '0.01:10:100:log'}"
        )
    varies = sweep_grid(vary).varies
    built = built_designs(design)
    if (
        built is not None and not overrides and {v.path for v in varies} <= {sw.vector_path(of)}
    ):  # a built Design swept along ε (or the target) needs no document round trip
        return SweepResult(
            sw.evaluate_designs(built, varies, of=of, target=target, target_delta=target_delta)
        )
    document, filename = source_document(design)
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


@dataclass(frozen=True)
class SweepGrid:
    """The axes of a sweep, read and checked but not yet evaluated (``sweep_grid``).

    ``varies``: one or two varied fields, the first the x axis.
    """

    varies: tuple[Vary, ...]

    def points(self) -> int:
        """Grid points, each a row of the result for every design swept."""
        return math.prod(len(v.values) for v in self.varies)

    def steps(self, of: str) -> int:
        """Points evaluated one at a time for ``of``: the axis along M's ε (``bound``) or
        the target (``invert``, ``plan``) is one vectorised call, so it does not count."""
        vectorised = sw.vector_path(of)
        return math.prod(len(v.values) for v in self.varies if v.path != vectorised)


def sweep_grid(vary: Mapping[str, Any] | Sequence[str]) -> SweepGrid:
    """``ampcalc.api.sweep_grid`` (its arguments, returns and errors are documented there)."""
    if isinstance(vary, Mapping):
        if not vary:
            raise DesignError(
                "nothing to sweep: give vary={PATH: SPEC}, e.g. "
                "vary={'epsilon': '0.01:10:100:log'}"
            )
        texts = [spec_text(str(path), spec) for path, spec in vary.items()]
    else:
        texts = [vary] if isinstance(vary, str) else list(vary)
        if not texts:
            raise DesignError(
                "nothing to sweep: give PATH=SPEC strings, e.g. 'epsilon=0.01:10:100:log'"
            )
    return SweepGrid(tuple(sw.parse_varies(texts)))


def run_sweep_stream(
    design: Any,
    vary: SweepGrid | Mapping[str, Any] | Sequence[str],
    *,
    of: str = "bound",
    target: float | None = None,
    target_delta: float | None = None,
    overrides: Sequence[str] = (),
    filename: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    stream: bool = True,
) -> Sweep | SweepStream:
    """``ampcalc.api.sweep_stream`` (its arguments, returns and errors are documented
    there)."""
    from ampcalc.designs.sources import source_document  # lazy: > 20 ms

    if of not in sw.KINDS:
        raise DesignError(f"unknown of={of!r}; expected one of {', '.join(sw.KINDS)}")
    grid = vary if isinstance(vary, SweepGrid) else sweep_grid(vary)
    if filename is not None:  # a document already read from that file, as it was parsed
        document, name = design, filename
    else:
        document, name = source_document(design)
    evaluate = sw.evaluate_stream if stream else sw.evaluate
    return evaluate(
        document,
        grid.varies,
        of=of,
        filename=name,
        overrides=overrides,
        target=target,
        target_delta=target_delta,
        progress=progress,
    )
