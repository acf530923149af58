"""The Python API: one function per command, same validation, same numbers, no printing.

Every command of the CLI has an equivalent here that returns data instead of text:

=================  ==============================================================
``bound``          ``bound(design, epsilon=None)`` -> ``BoundResult``
``invert``         ``invert(design, target=None, target_delta=None)`` -> ``InvertResult``
``validate``       ``validate(designs)`` -> list of dicts
``schemes``        ``schemes()`` -> list of dicts
``sweep``          ``sweep(design, vary={...}, of="bound")`` -> ``SweepResult``
``sweep`` (large)  ``sweep_stream(design, vary, of="bound")`` -> ``Sweep`` or ``SweepStream``
``compare``        ``compare(designs, target=None)`` -> list of dicts
``check``          ``check(designs, max_epsilon=..., max_delta=None)`` -> list of dicts
``verify``         ``verify(designs, pairs="default", limit=5000)`` -> list of dicts
``invert --solve`` ``calibrate(design, knob, target, target_delta=None)`` -> dict
``plan``           ``plan(source, q=None)`` -> ``ampcalc.math.accuracy.Plan``
``budget``         ``budget(load_ledger(path))`` -> dict; ``budget_solve(ledger, knob)``
``report``         ``report(designs, target=None)`` -> list of ``DesignReport``
``weights``        ``weights(design)`` -> ``Weights`` (``.sample(seed)`` for ``--sample``)
``--suggest``      ``weights_planning(design)`` -> list of (name, value)
``pws table``      ``pws_table(design, max_frequency=None, verify=False)`` -> dict
``pws sanitize``   ``pws_sanitize(design, keys, frequencies, seed)`` -> dict
``pws estimate``   ``pws_estimate(design, frequencies)`` -> dict
``pws keys``       ``pws_expected_keys(design, zipf=None, frequencies=None)`` -> dict
=================  ==============================================================

A *design* argument takes a ``Design`` (from ``load_design`` or ``ampcalc.designs``)
or anything ``load_design`` reads: a path (``str`` or ``pathlib.Path``), YAML text, or
a dict. A *designs* argument also takes a sequence of ``Design`` objects and files
holding several designs. Errors are the CLI's: ``DesignError`` (with ``.field`` and
``.line``) for bad input, ``AmpcalcError`` otherwise; the messages are the same.

The dict-returning functions give exactly the ``results`` entries (or payload) of the
command's ``--json`` output, so code written against the JSON contract works on them.
The CLI commands call these functions.

The record commands (``weights``, ``pws``) stream their files through the helpers this
module also names (imported on first use): ``sampled_blocks`` (the Poisson sample, block
by block), ``sanitize_sample``/``write_chunk`` (a pws sample, chunk by chunk),
``read_rows``/``parse_freq`` (a sanitised file), and for ``--engine dask``
``require_dask``, ``run_weights``, ``run_sanitize``, ``output_format`` and
``write_summary_text``.

Streaming: ``sweep`` holds its whole result; ``sweep_stream`` evaluates a grid of more
than 2^21 rows (up to 10^7) in blocks and returns a ``SweepStream`` whose rows are
evaluated again, a block at a time, each time they are read (``rows()``, ``blocks()``,
``head(n)``), so memory stays bounded; ``sweep_grid`` reads the axes first, to size a
sweep before it is evaluated, and ``sweep_document`` is its ``--json`` payload.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from ampcalc.model.design import Design

if TYPE_CHECKING:
    from ampcalc.analyses.budget import DISCRETIZATION as DISCRETIZATION
    from ampcalc.analyses.budget import EPSILON_BUDGET as EPSILON_BUDGET
    from ampcalc.analyses.budget import Ledger
    from ampcalc.analyses.report import DesignReport as DesignReport
    from ampcalc.analyses.sweep import Sweep, SweepStream
    from ampcalc.analyses.sweep_result import SWEEP_KINDS as SWEEP_KINDS
    from ampcalc.analyses.sweep_result import SweepGrid, SweepResult
    from ampcalc.math.accuracy import Plan
    from ampcalc.model.results import BoundResult, InvertResult
    from ampcalc.records.dask_cluster import require_dask as require_dask
    from ampcalc.records.dask_parts import output_format as output_format
    from ampcalc.records.dask_parts import write_summary_text as write_summary_text
    from ampcalc.records.dask_sanitize import run_sanitize as run_sanitize
    from ampcalc.records.dask_weights import run_weights as run_weights
    from ampcalc.records.importance_weights import Weights
    from ampcalc.records.importance_weights import importance_design as importance_design
    from ampcalc.records.importance_weights import importance_setup as importance_setup
    from ampcalc.records.importance_weights import sampled_blocks as sampled_blocks
    from ampcalc.records.pws_estimate import pws_estimate_params as pws_estimate_params
    from ampcalc.records.pws_files import parse_freq as parse_freq
    from ampcalc.records.pws_files import read_rows as read_rows
    from ampcalc.records.pws_sanitize import PwsSanitiser as PwsSanitiser
    from ampcalc.records.pws_stream import sanitize_sample as sanitize_sample
    from ampcalc.records.pws_stream import write_chunk as write_chunk
    from ampcalc.records.pws_tables import pws_design as pws_design
    from ampcalc.records.pws_tables import pws_self_check as pws_self_check
    from ampcalc.records.pws_tables import pws_table_columns as pws_table_columns

#: What ``load_design`` accepts: a path, YAML text, a dict, or an already built design.
Source = Union[str, "os.PathLike[str]", Mapping[str, Any], Design]

#: Names this module re-exports -> the module that holds them (imported on first use,
#: like every function below, so ``import ampcalc.api`` stays cheap). The ``records``
#: helpers were importable from here before their code moved; the record commands'
#: streaming and Dask helpers are named here so that the commands call one surface.
_ELSEWHERE = {
    # the domains of a ledger's budget and accountant step, for the command's options
    "DISCRETIZATION": "ampcalc.analyses.budget",
    "EPSILON_BUDGET": "ampcalc.analyses.budget",
    "DesignReport": "ampcalc.analyses.report",
    "SWEEP_KINDS": "ampcalc.analyses.sweep_result",
    "Sweep": "ampcalc.analyses.sweep",
    "SweepGrid": "ampcalc.analyses.sweep_result",
    "SweepResult": "ampcalc.analyses.sweep_result",
    "SweepStream": "ampcalc.analyses.sweep",
    "Weights": "ampcalc.records.importance_weights",
    "importance_design": "ampcalc.records.importance_weights",
    "importance_setup": "ampcalc.records.importance_weights",
    "sampled_blocks": "ampcalc.records.importance_weights",
    "pws_estimate_params": "ampcalc.records.pws_estimate",
    "parse_freq": "ampcalc.records.pws_files",
    "read_rows": "ampcalc.records.pws_files",
    "PwsSanitiser": "ampcalc.records.pws_sanitize",
    "sanitize_sample": "ampcalc.records.pws_stream",
    "write_chunk": "ampcalc.records.pws_stream",
    "pws_design": "ampcalc.records.pws_tables",
    "pws_self_check": "ampcalc.records.pws_tables",
    "pws_table_columns": "ampcalc.records.pws_tables",
    "require_dask": "ampcalc.records.dask_cluster",
    "output_format": "ampcalc.records.dask_parts",
    "write_summary_text": "ampcalc.records.dask_parts",
    "run_sanitize": "ampcalc.records.dask_sanitize",
    "run_weights": "ampcalc.records.dask_weights",
}


def __getattr__(name: str) -> Any:
    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ampcalc.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ELSEWHERE})


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


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
    from ampcalc.designs import sources  # lazy: > 20 ms

    return sources.load_designs(source, overrides=overrides)


def load_design(source: Any = None, *, overrides: Sequence[str] = ()) -> Design:
    """Load and validate exactly one design (see ``load_designs`` for ``source``).

    Raises:
        DesignError: invalid input (the CLI's message), or not exactly one design.
    """
    from ampcalc.designs import sources  # lazy: > 20 ms

    return sources.load_design(source, overrides=overrides)


# --------------------------------------------------------------------------------------
# bound / invert / validate / schemes
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
    from ampcalc import engine  # lazy: schemes, pws and weights don't use it

    # a built Design goes straight to the engine (``designs.sources.as_design`` inline:
    # one import per call, as the per-call figure of benchmarks/bench_overhead.py wants)
    return engine.bound(
        design if isinstance(design, Design) else load_design(design), epsilon=epsilon
    )


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
    from ampcalc import engine  # lazy: schemes, pws and weights don't use it

    # as ``bound``: a built Design goes straight to the engine
    return engine.invert(
        design if isinstance(design, Design) else load_design(design), target, target_delta
    )


def calibrate(
    design: Any, knob: str, target: float, target_delta: float | None = None
) -> dict[str, Any]:
    """The noise of a design's named mechanism calibrated to a target ε′
    (``ampcalc invert --solve``).

    Args:
        design: a ``Design`` with one named Gaussian or Laplace mechanism (discrete ones
            too), or a path / YAML text / dict holding one.
        knob: ``"sigma"`` (Gaussian) or ``"scale"`` (Laplace).
        target: the population target ε′ (finite, > 0).
        target_delta: the population target δ′ (default: the design's).
    Returns:
        One ``results`` entry of ``invert --solve --json``: ``invert``'s fields (M's
        ``epsilon`` null) and ``knob: {name, mechanism, sensitivity, value,
        impossible_below, epsilon_prime_at_value}`` (``value`` None when nothing in the
        searched range meets the target; ``details.inverse`` says how it was found).
    Raises:
        DesignError: no such named mechanism, or a target that is not finite and > 0.
    """
    from ampcalc.analyses.calibrate import solve  # lazy: > 20 ms
    from ampcalc.designs.sources import as_design  # lazy: > 20 ms

    return solve(as_design(design), knob, target, target_delta)


def validate(designs: Any) -> list[dict[str, Any]]:
    """Check designs (syntax, fields, theorem conditions) without computing bounds.

    Returns the ``results`` entries of ``ampcalc validate --json``: ``name``,
    ``scheme``, ``valid`` and the checked ``conditions``, ``warnings`` and ``notes``, or
    ``error`` naming the failed condition. Invalid input raises ``DesignError`` as the CLI
    does.
    """
    from ampcalc.analyses.checks import validate_designs  # lazy: start-up (bound)

    return validate_designs(designs)


def schemes() -> list[dict[str, Any]]:
    """Every sampling scheme: parameters, relations and basis (``ampcalc schemes --json``)."""
    from ampcalc.designs.catalogue import scheme_catalogue  # lazy: > 20 ms

    return scheme_catalogue()


# --------------------------------------------------------------------------------------
# sweep / compare / check / verify / plan
# --------------------------------------------------------------------------------------


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
    from ampcalc.analyses.sweep_result import run_sweep  # lazy: start-up (bound)

    return run_sweep(
        design, vary, of=of, target=target, target_delta=target_delta, overrides=overrides
    )


def sweep_grid(vary: Mapping[str, Any] | Sequence[str]) -> SweepGrid:
    """The axes of a sweep, read and checked before anything is evaluated.

    Args:
        vary: as ``sweep``'s, or ``--vary``'s ``"PATH=SPEC"`` strings (one or two).
    Returns:
        A ``SweepGrid``: ``varies`` (the axes), ``points()`` (rows per design) and
        ``steps(of)`` (the points evaluated one at a time; the vectorised axis is one).
    Raises:
        DesignError: a malformed spec (located in ``vary``), or too many points.
    """
    from ampcalc.analyses.sweep_result import sweep_grid as read_grid  # lazy: start-up

    return read_grid(vary)


def sweep_stream(
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
    """``sweep`` in bounded memory, for grids too large to hold (``ampcalc sweep``).

    A grid of more than 2^21 rows is evaluated once in blocks and checked, and comes
    back as a ``SweepStream``: its rows are evaluated again, a block at a time, each
    time they are read. A smaller grid, or one the blocks cannot reproduce exactly (a
    point outside its theorem's conditions, ±inf), comes back whole as a ``Sweep``.
    Both have ``of``, ``varies``, ``designs``, ``len()``, ``rows()``,
    ``column_names()``, ``errors()`` and ``failed_points()``.

    Args:
        design: as ``sweep``'s; or, with ``filename``, a document already parsed from
            that file (validated here as the file would be, whatever its shape).
        vary: a ``SweepGrid`` from ``sweep_grid``, or what ``sweep_grid`` reads.
        of, target, target_delta, overrides: as ``sweep``'s.
        filename: the file ``design`` was parsed from (error messages name it).
        progress: called as ``progress(done, total)`` after each per-point step
            (``total`` is ``sweep_grid(vary).steps(of)``).
        stream: False evaluates the grid whole (a ``Sweep``, e.g. to draw it).
    Raises:
        DesignError: as ``sweep``.
    """
    from ampcalc.analyses.sweep_result import run_sweep_stream  # lazy: start-up (bound)

    return run_sweep_stream(
        design,
        vary,
        of=of,
        target=target,
        target_delta=target_delta,
        overrides=overrides,
        filename=filename,
        progress=progress,
        stream=stream,
    )


def sweep_document(result: Sweep | SweepStream) -> dict[str, Any]:
    """The ``ampcalc sweep --json`` payload of a ``sweep_stream`` result (``of``,
    ``vary``, ``designs``, ``columns``, ``rows``), without the envelope."""
    from ampcalc.analyses.sweep import document  # lazy: start-up (bound)

    return document(result)


def compare(designs: Any, target: float | None = None) -> list[dict[str, Any]]:
    """Certified ε at a target ε′ and each scheme's accuracy figures (``ampcalc compare``).

    Returns:
        One dict per design, the ``results`` entries of ``compare --json``:
        ``name``, ``scheme``, ``target``, ``epsilon: {certified, impossible_above}``,
        ``accuracy`` (and ``error`` for a design outside its conditions).
    Raises:
        DesignError: a design without a target (give ``target`` or a ``target:`` block).
    """
    from ampcalc.analyses.compare import compare_designs  # lazy: start-up (bound)
    from ampcalc.designs.sources import as_designs  # lazy: > 20 ms

    return compare_designs(as_designs(designs), target)


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
    from ampcalc.analyses.checks import check_designs  # lazy: start-up (bound)

    return check_designs(designs, max_epsilon, max_delta, epsilon=epsilon)


def verify_design(
    design: Design,
    pairs: str = "default",
    limit: int = 5000,
    epsilon: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """One row of ``verify --json``: the exact ε′ of a tiny design against our bounds
    (``progress(done, total)`` is called as its instances are solved)."""
    from ampcalc.analyses import checks  # lazy: start-up (bound)

    return checks.verify_design(design, pairs, limit, epsilon, progress)


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
    from ampcalc.analyses.checks import verify_designs  # lazy: start-up (bound)

    return verify_designs(designs, pairs=pairs, limit=limit, epsilon=epsilon)


def plan(source: Any, q: float | None = None) -> Plan:
    """Accuracy planning for SRSWOR at a fixed population target (``ampcalc plan``).

    Args:
        source: a planner design: path, YAML text or dict (a ``pathlib.Path`` is always
            read as a file, whatever its name looks like).
        q: a sampling-variance share of V_N in [0, 1): also report the largest rate
            that still allows a gain.
    Returns:
        An ``ampcalc.math.accuracy.Plan`` (``to_dict()`` is one ``results`` entry of
        ``plan --json``).
    """
    from ampcalc.analyses.plan import plan_source  # lazy: start-up (bound)

    return plan_source(source, q)


# --------------------------------------------------------------------------------------
# budget / report
# --------------------------------------------------------------------------------------


def load_ledger(
    path: str, *, overrides: Sequence[str] = (), discretization: float | None = None
) -> Ledger:
    """Read and validate a budget ledger (``ampcalc budget LEDGER``).

    Args:
        path: the ledger file (``-`` reads standard input).
        overrides: ``PATH=VALUE`` strings, as the CLI's ``--set``.
        discretization: the accountant's value discretization interval instead of the
            ledger's (``--discretization``; in [1e-7, 0.1]).
    Returns:
        The ``Ledger``: its ``entries`` (each ``count`` releases of a ``design``), its
        target and relation.
    Raises:
        DesignError: the CLI's message, at the ledger's file and line.
    """
    from ampcalc.analyses import budget as budgets  # lazy: > 20 ms

    ledger = budgets.load_ledger(path, overrides=overrides)
    if discretization is not None:
        ledger = budgets.with_discretization(ledger, discretization)
    return ledger


def budget(ledger: Ledger, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Total ε′ of a ledger's releases, each on an independently drawn sample
    (``ampcalc budget``; ``progress(done, total)`` is called as entries compose).

    Returns:
        The payload of ``budget --json``: ``name``, ``target``, ``neighbours``,
        ``entries`` (each entry's ``epsilon_prime``, ``delta_prime``, ``composed_as``),
        ``total: {lower, upper, delta, accountant, ...}``, ``remaining`` (the budget
        less the upper total) and ``overrun`` (the upper total less the budget when it
        is above it, else ``None``).
    Raises:
        CostLimit: the composition is above the accountant's limits (exit 2).
    """
    from ampcalc.analyses import budget as budgets  # lazy: > 20 ms
    from ampcalc.analyses import budget_solve as solver  # lazy: > 20 ms

    payload = budgets.run(ledger, progress)
    payload["overrun"] = solver.overrun(payload)
    return payload


def budget_solve(ledger: Ledger, knob: str, target: float | None = None) -> dict[str, Any]:
    """One common noise scale for a ledger's Gaussian (``knob="sigma"``) or Laplace
    (``"scale"``) entries, calibrated to the total ε budget (``ampcalc budget --solve``;
    ``target`` replaces the ledger's ``target.epsilon``).

    Returns:
        The payload of ``budget --solve --json``: ``knob: {value, impossible_below,
        width, ...}``, ``target``, ``discretization``, ``warnings``.
    Raises:
        DesignError: no target, no entry with that knob, or a knob other than these two.
    """
    from ampcalc.analyses import budget_solve as solver  # lazy: > 20 ms

    return solver.solve(ledger, knob, target)


def budget_count(
    ledger: Ledger, entry: str | None = None, target: float | None = None
) -> dict[str, Any]:
    """How many waves of one entry fit the ledger's ε budget (``ampcalc budget --solve
    count --entry E``): the largest count of entry ``entry`` (its 0-based index or its
    name; optional for a one-entry ledger) whose upper total is at most the budget
    (``target`` replaces the ledger's ``target.epsilon``), the other entries as written.

    Returns:
        The payload of ``budget --solve count --json``: ``knob: {name: "count", entry,
        index, current, value, more, fits, epsilon_upper_at_current,
        epsilon_upper_at_value, epsilon_upper_at_next}``, ``target``, ``warnings``.
    Raises:
        DesignError: no budget, or no such entry.
    """
    from ampcalc.analyses import budget_solve as solver  # lazy: > 20 ms

    return solver.solve_count(ledger, entry, target)


def report(
    designs: Any, *, target: float | None = None, target_delta: float | None = None
) -> list[DesignReport]:
    """What ``ampcalc report``'s HTML page shows, design by design: bounds, the inverse
    at ``target`` (default: each design's ``target:``), curves and references.

    Returns:
        One ``DesignReport`` per design (``error`` set for a design outside its
        theorem's conditions, which then has no curve).
    """
    from ampcalc.analyses.report import evaluate  # lazy: > 20 ms
    from ampcalc.designs.sources import as_designs  # lazy: > 20 ms

    return evaluate(as_designs(designs), target=target, target_delta=target_delta)


# --------------------------------------------------------------------------------------
# weights (importance sampling) and pws (private weighted sampling)
# --------------------------------------------------------------------------------------


def weights(design: Any, *, threads: int = 1) -> Weights:
    """q(x), w(x) = 1/q(x) and ε̂(x) for every record of an importance design.

    Args:
        design: a file (or ``Design``) holding one ``scheme: importance`` design.
        threads: the privacy-constrained weights' blocks on that many threads (the
            same figures; ``ampcalc weights`` uses two where there are two cores).
    Raises:
        DesignError: not an importance design.
        ConditionError: the design is outside Theorem 10's conditions (the message
            ``bound`` gives, naming the largest feasible radius).
    """
    from ampcalc.records.importance_weights import record_weights  # lazy: start-up (bound)

    return record_weights(design, threads=threads)


def weights_planning(design: Any) -> list[tuple[str, float | int]]:
    """What ``ampcalc weights --suggest`` prints: the record count and dimension, the
    mean ‖x‖₂² and the largest ‖x‖₁ and ‖x‖₂ of an importance design's records.

    Computed from the data, so for planning only: a ``q(·)`` built from them is
    data-dependent and breaks the guarantee.

    Raises:
        DesignError: not an importance design.
    """
    from ampcalc.designs.sources import as_designs  # lazy: > 20 ms
    from ampcalc.records.importance_weights import (  # lazy: start-up (bound)
        importance_design,
        planning_values,
    )

    return planning_values(importance_design(as_designs(design)).params)


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
    from ampcalc.records import pws_tables  # lazy: start-up (bound)

    return pws_tables.pws_table(design, max_frequency, verify=verify, accuracy=accuracy)


def pws_sanitize(
    design: Any,
    keys: Sequence[str],
    frequencies: Any,
    seed: int,
    *,
    report_frequencies: bool = False,
    extend: bool = True,
) -> dict[str, Any]:
    """Sanitise a weighted sample (Cohen et al. 2021 Alg. 2; ``ampcalc pws sanitize``), in memory.

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
    from ampcalc.records import pws_sanitize  # lazy: start-up (bound)

    return pws_sanitize.pws_sanitize(
        design,
        keys,
        frequencies,
        seed,
        report_frequencies=report_frequencies,
        extend=extend,
    )


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
    from ampcalc.records import pws_estimate as estimates  # lazy: start-up (bound)

    return estimates.pws_estimate(design, frequencies, estimator)


def pws_expected_keys(
    design: Any,
    *,
    zipf: float | None = None,
    support: int = 1000,
    frequencies: str | None = None,
) -> dict[str, Any]:
    """Expected numbers of keys reported by PWS, by sampled-SbH and by the non-private
    sample (Cohen et al. 2021, Fig. 2 and 4; ``ampcalc pws keys``) over a distribution
    of key frequencies.

    Args:
        design: the pws design.
        zipf: the integer Zipf law's α (Cohen et al. 2021's experiments) over
            ``support`` keys; or
        frequencies: a CSV with a ``frequency`` column and an optional ``count`` column.
    Returns:
        The figures of ``pws keys --json`` (without ``design``, ``epsilon``, ``delta``).
    """
    from ampcalc.designs.sources import as_designs  # lazy: > 20 ms
    from ampcalc.records import pws_estimators  # lazy: start-up (bound)
    from ampcalc.records.pws_tables import pws_design  # lazy: start-up (bound)

    _, params = pws_design(as_designs(design))
    if zipf is not None:
        dist = pws_estimators.zipf(support, zipf)
    else:
        dist = pws_estimators.read_distribution(str(frequencies))
    return pws_estimators.expected_keys(params, dist)


__all__ = [
    "SWEEP_KINDS",
    "Source",
    "Sweep",
    "SweepGrid",
    "SweepResult",
    "SweepStream",
    "Weights",
    "bound",
    "budget",
    "budget_count",
    "budget_solve",
    "calibrate",
    "check",
    "compare",
    "invert",
    "load_design",
    "load_designs",
    "load_ledger",
    "plan",
    "pws_estimate",
    "pws_expected_keys",
    "pws_sanitize",
    "pws_table",
    "report",
    "schemes",
    "sweep",
    "sweep_document",
    "sweep_grid",
    "sweep_stream",
    "validate",
    "verify",
    "weights",
    "weights_planning",
]
