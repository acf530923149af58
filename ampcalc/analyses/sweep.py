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

The parts live in their own modules and every name is importable from here:
``vary`` reads ``--vary`` into the grid, ``sweep_points`` evaluates grid points into
the columns of a ``Sweep``, ``sweep_stream`` evaluates a sweep too large to hold in
blocks (``evaluate_stream``, ``SweepStream``).

Pure: no printing, no exits. The command is ``ampcalc/cli/sweep.py``; the
figures are drawn by ``ampcalc/output/plot.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ampcalc.analyses.sweep_points import (
    BOUND_COLUMNS,
    INVERT_COLUMNS,
    KINDS,
    ROWS_BLOCK,
    Sweep,
    _check_varies,
    _grid,
    _overrides,
    vector_path,
)
from ampcalc.analyses.sweep_stream import (
    STREAM_BLOCK,
    STREAM_FROM,
    SweepStream,
    evaluate_stream,
)
from ampcalc.analyses.vary import (
    ALIASES,
    EPSILON_PATH,
    MAX_POINTS,
    MAX_STEPS,
    TARGET_PATH,
    FloatGrid,
    Vary,
    _where,
    parse_varies,
    parse_vary,
    yaml_scalar,
)
from ampcalc.designs.document import load_document
from ampcalc.model.design import Design
from ampcalc.model.errors import DesignError

__all__ = [
    "ALIASES",
    "BOUND_COLUMNS",
    "EPSILON_PATH",
    "INVERT_COLUMNS",
    "KINDS",
    "MAX_POINTS",
    "MAX_STEPS",
    "ROWS_BLOCK",
    "STREAM_BLOCK",
    "STREAM_FROM",
    "TARGET_PATH",
    "FloatGrid",
    "Sweep",
    "SweepStream",
    "Vary",
    "document",
    "evaluate",
    "evaluate_designs",
    "evaluate_stream",
    "parse_varies",
    "parse_vary",
    "vector_path",
    "yaml_scalar",
]


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


def document(sweep: Sweep | SweepStream) -> dict[str, Any]:
    """The JSON payload (the ``ampcalc sweep --format json`` document, minus envelope)."""
    return {
        "of": sweep.of,
        "vary": [{"path": v.path, "values": list(v.values), "log": v.log} for v in sweep.varies],
        "designs": [{"name": k, **v} for k, v in sweep.designs.items()],
        "columns": sweep.column_names(),
        "rows": list(sweep.rows()),
    }
