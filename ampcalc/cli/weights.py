"""``ampcalc weights``: per-record inclusion probabilities and weights of an importance design.

Writes q(x), w(x) = 1/q(x) and ε̂(x) for every record (Personalized Privacy Amplification via
Importance Sampling, Theorem 6 / Theorem 10), draws the Poisson sample reproducibly (``--sample
--seed``:
row i's coin is a Philox draw keyed by (seed, i), so chunked or distributed runs agree),
or suggests planning values (``--suggest``) computed from the data. ``--engine dask``
runs the same per-record kernels on partitions (``ampcalc.distributed``).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections import deque
from importlib import import_module as _module
from typing import Annotated, Any

import numpy as np
import typer

from ampcalc.cli.app import (
    DesignArg,
    ExitCode,
    Format,
    SetOpt,
    app,
    emit,
    emit_result,
    load,
    result_text,
)
from ampcalc.cli.conventions import Progress, dashboard_note, progress_bar, say, wrote_message
from ampcalc.load.files import atomic_write, refuse_input_as_output
from ampcalc.model.errors import AmpcalcError, ConditionError, DesignError
from ampcalc.model.references import DERIVATIONS

EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="numpy (one process) or dask (partitions on a Dask cluster; the dask extra).",
    ),
]
WorkersOpt = Annotated[
    int, typer.Option("--workers", help="Dask engine: workers of the local cluster.")
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Dask engine: address of a running scheduler, or synchronous|threads|processes "
        "(default: a local cluster).",
        show_default=False,
    ),
]
DashboardOpt = Annotated[
    bool,
    typer.Option(
        "--dashboard",
        help="Dask engine: start the cluster's dashboard on 127.0.0.1 and print its address.",
    ),
]
OutputFormatOpt = Annotated[
    str | None,
    typer.Option(
        "--output-format",
        help="Output as csv or parquet (the Dask engine's part files; with numpy, the "
        "--output file; default: the output's suffix, else csv). Parquet needs pyarrow.",
        show_default=False,
    ),
]
SummaryJsonOpt = Annotated[
    bool,
    typer.Option("--json", help="Print the run's summary as JSON (needs --output)."),
]


@app.command(rich_help_panel="Records")
def weights(
    design: DesignArg = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="Write CSV (or Parquet) here, replaced whole (default: standard output); "
            "with --engine dask, a directory of part files.",
            metavar="FILE",
        ),
    ] = None,
    sample: Annotated[
        bool, typer.Option("--sample", help="Draw the Poisson sample (records with weights).")
    ] = False,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed of the sample draw (needed with --sample).")
    ] = None,
    suggest: Annotated[
        bool,
        typer.Option("--suggest", help="Print planning values computed from the data."),
    ] = False,
    overrides: SetOpt = None,
    engine: EngineOpt = "numpy",
    inputs: Annotated[
        str | None,
        typer.Option(
            "--input",
            help="Dask engine: the records as a file, directory or glob of CSV/Parquet "
            "partitions (default: the design's `records:`).",
            show_default=False,
        ),
    ] = None,
    output_fmt: OutputFormatOpt = None,
    workers: WorkersOpt = 2,
    scheduler: SchedulerOpt = None,
    dashboard: DashboardOpt = False,
    as_json: SummaryJsonOpt = False,
) -> int:
    """Per-record probabilities q*(x) and weights w*(x) of an importance design (CSV).

    Example:  ampcalc weights examples/designs/importance-kmeans.yaml -o w.csv
    """
    from ampcalc.api import importance_design, importance_setup  # lazy: start-up (--help)
    from ampcalc.schemes import importance as imp  # lazy: > 20 ms

    if engine not in ("numpy", "dask"):
        raise DesignError(f"--engine: expected numpy or dask, got {engine!r}")
    dask = engine == "dask"
    if dask:
        from ampcalc.records.dask_cluster import require_dask  # lazy: start-up (--help)

        require_dask()
        if suggest:
            raise DesignError("--suggest reads the file in one process: use --engine numpy")
    elif inputs is not None:
        raise DesignError("--input is for --engine dask (the numpy engine reads `records:`)")
    if as_json and not output:
        raise DesignError("--json prints the summary on standard output: give --output")
    refuse_input_as_output(output, [design, inputs])
    if dask:
        from ampcalc.load.records import deferred_reading  # lazy: start-up (--help)

        with deferred_reading():
            all_designs = load(design, overrides)
    else:
        all_designs = load(design, overrides)
    d = importance_design(all_designs)
    params: Any = imp.bind_target(d.params, d.target)
    if suggest:
        from ampcalc.records.importance_weights import planning_values  # lazy: start-up (--help)

        lines = [
            f"{name}: {value}" if isinstance(value, int) else f"{name}: {value:.10g}"
            for name, value in planning_values(params)
        ]
        emit("\n".join(lines) + "\n")
        say(
            "warning: these values come from the data. Using them as `mean_sq_norm:` or "
            f"`radius:` makes q(·) data-dependent and breaks the guarantee ({DERIVATIONS}, "
            "§4.7): use "
            "them for planning only, and fix the public values from other sources."
        )
        return int(ExitCode.OK)
    if sample and seed is None:
        raise DesignError("--sample needs --seed S (the draw must be reproducible)")
    try:
        params, profile, k0, eps_star = importance_setup(d)
        if not dask:
            fig = imp.record_figures(params, profile, k0, eps_star, threads=_threads())
    except ConditionError as err:
        say(f"ampcalc: {d.name}: {err.message}")
        return int(ExitCode.BAD_INPUT)
    if dask:
        return _weights_dask(
            d, params, profile, k0, eps_star, inputs, output, output_fmt, sample, seed,
            scheduler, workers, as_json, dashboard,
        )  # fmt: skip
    if fig.outside.any():
        rows = ", ".join(str(int(i)) for i in np.flatnonzero(fig.outside)[:10])
        say(
            f"warning: {int(fig.outside.sum())} record(s) outside the domain or infeasible "
            f"(first rows, 0-based: {rows}); written with q = 1 (privacy-constrained) or "
            "their q, not clipped"
        )
    kept: int | None = None
    out_fmt = "csv"
    if output:
        from ampcalc.records.dask_parts import output_format  # lazy: start-up (--help)

        out_fmt = output_format(output, output_fmt, "csv")
    with contextlib.ExitStack() as stack:
        write: Any = emit
        tick = stack.enter_context(progress_bar("writing weights", int(fig.q.size)))
        figs = (fig.q, fig.w, fig.eps_hat)
        if out_fmt == "parquet":
            assert output is not None
            kept = _write_parquet(output, design, params, fig, seed if sample else None)
        else:
            if output and sample:
                write = stack.enter_context(atomic_write(output, inputs=[design])).write
            if not sample:
                if output:  # bytes straight to the file (no str round trip)
                    fh = stack.enter_context(atomic_write(output, binary=True, inputs=[design]))
                    fh.write(b"row,probability,weight,epsilon_hat\n")
                    _write_rows(fh.write, figs, tick, binary=True)
                else:
                    write("row,probability,weight,epsilon_hat\n")
                    _write_rows(write, figs, tick)
            else:
                kept = _write_sample(write, params.data.source, fig, seed, tick)
    if sample:
        say(f"sampled {kept} of {fig.q.size} records (expected {float(np.sum(fig.q)):.6g})")
    if output:
        say(wrote_message(output, fig.q.size if kept is None else kept))
    if as_json:
        emit_result(
            Format.json,
            "weights",
            {
                **_summary(d, "numpy", fig.q.size, fig.q, kept, seed, fig, output),
                "output_format": out_fmt,
            },
        )
    return int(ExitCode.OK)


def _threads() -> int:
    """Threads for the per-record blocks (numpy releases the GIL): two where there
    are two cores."""

    return max(1, min(2, os.cpu_count() or 1))


def _write_rows(
    write: Any, figs: tuple[Any, ...], tick: Progress | None, *, binary: bool = False
) -> None:
    """``row,probability,weight,epsilon_hat`` rows: np.savetxt's %d/%.17g text, made
    column-wise (``records_csv.rows_text``, the same bytes) in blocks formatted on
    threads (numpy releases the GIL in its loops) and written in order (``binary``:
    ``write`` takes the bytes; otherwise str)."""
    from concurrent.futures import ThreadPoolExecutor  # lazy: start-up (--help)

    from ampcalc.output.records_csv import rows_text  # lazy: start-up (--help)

    size = int(figs[0].size)
    step = 1 << 16

    def text(start: int) -> str | bytes:
        stop = min(start + step, size)
        cols = [np.arange(start, stop), *(c[start:stop] for c in figs)]
        block = rows_text(cols, int_first=True)
        return block if binary else block.decode("ascii")

    workers = _threads()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        ahead: deque[Any] = deque()  # at most 2 blocks per thread formatted ahead
        for start in range(0, size, step):
            ahead.append((start, pool.submit(text, start)))
            while len(ahead) >= 2 * workers or (ahead and start + step >= size):
                done, job = ahead.popleft()
                write(job.result())
                if tick is not None:
                    tick(min(done + step, size), size)


def _write_parquet(
    output: str, design: str | None, params: Any, fig: Any, seed: int | None
) -> int | None:
    """The rows as one Parquet file (the Dask engine's part schema: ``row`` int64, the
    rest float64); with ``seed``, the Poisson sample's rows. pyarrow is imported here."""

    try:
        pa = _module("pyarrow")
        pq = _module("pyarrow.parquet")
    except ImportError as exc:
        raise AmpcalcError(
            f"Parquet output needs pyarrow, which is not installed ({exc.name}): install "
            "ampcalc[parquet] (pip install 'ampcalc[parquet]') or write CSV"
        ) from None
    if seed is None:
        names = ["row", "probability", "weight", "epsilon_hat"]
        cols = [np.arange(fig.q.size), fig.q, fig.w, fig.eps_hat]
        kept = None
    else:
        from ampcalc.records.importance_weights import sampled_blocks  # lazy: start-up (--help)

        src = params.data.source
        names = ["row", *src.names, "probability", "weight"]
        pieces: list[list[Any]] = [[] for _ in names]
        for _, rows, x, q, w in sampled_blocks(src, fig.q, fig.w, seed):
            block = [rows, *(x[:, j] for j in range(x.shape[1])), q, w]
            for piece, col in zip(pieces, block, strict=True):
                piece.append(col)
        cols = [np.concatenate(p) if p else np.zeros(0) for p in pieces]
        kept = int(cols[0].size)
    arrays = [pa.array(np.asarray(cols[0], dtype=np.int64))]
    arrays += [pa.array(np.asarray(c, dtype=float)) for c in cols[1:]]
    with atomic_write(output, binary=True, inputs=[design]) as fh:
        pq.write_table(pa.Table.from_arrays(arrays, names=names), fh)
    return kept


def _write_sample(
    write: Any, src: Any, fig: Any, seed: int | None, tick: Progress | None = None
) -> int:
    """The Poisson sample's rows (``records.importance_weights.sampled_blocks``)."""
    from ampcalc.output.columns import savetxt_rows  # lazy: start-up (--help)
    from ampcalc.records.importance_weights import sampled_blocks  # lazy: start-up (--help)

    assert seed is not None  # --sample needs --seed (checked by the command)
    write("row," + ",".join(src.names) + ",probability,weight\n")
    kept = 0
    for done, rows, x, q, w in sampled_blocks(src, fig.q, fig.w, seed):
        if rows.size:
            write(savetxt_rows(np.column_stack([rows, x, q, w]), int_first=True))
            kept += rows.size
        if tick is not None:
            tick(done, fig.q.size)
    return kept


def _summary(
    d: Any, engine: str, records: int, q: Any, kept: int | None, seed: int | None,
    fig: Any, output: str | None,
) -> dict[str, Any]:  # fmt: skip
    """The run's summary (one process); the Dask engine prints the same fields."""

    outside = np.flatnonzero(fig.outside)
    doc = {
        "design": d.name,
        "engine": engine,
        "records": int(records),
        "expected_size": math.fsum(np.asarray(q, dtype=float).tolist()),
        "sampled": kept,
        "seed": seed if kept is not None else None,
        "outside_records": int(outside.size),
        "outside_rows": [int(i) for i in outside[:10]],
        "partitions": 1,
        "output": output,
        "output_format": "csv",
    }
    return doc


def _weights_dask(
    d: Any, params: Any, profile: Any, k0: float, eps_star: float | None,
    inputs: str | None, output: str | None, output_fmt: str | None, sample: bool,
    seed: int | None, scheduler: str | None, workers: int, as_json: bool,
    dashboard: bool = False,
) -> int:  # fmt: skip
    """``--engine dask``: the same rows as part files, the same warnings and summary."""
    from ampcalc.records.dask_parts import write_summary_text  # lazy: start-up (--help)
    from ampcalc.records.dask_weights import run_weights

    source = inputs if inputs is not None else str(params.data.source.path)
    t = run_weights(
        params, profile, k0, eps_star, inputs=source, output=output, fmt=output_fmt,
        sample=sample, seed=seed, address=scheduler, workers=workers,
        dashboard=dashboard_note if dashboard else None,
    )  # fmt: skip
    if t["outside"]:
        rows = ", ".join(str(i) for i in t["outside_rows"])
        say(
            f"warning: {t['outside']} record(s) outside the domain or infeasible "
            f"(first rows, 0-based: {rows}); written with q = 1 (privacy-constrained) or "
            "their q, not clipped"
        )
    if sample:
        say(f"sampled {t['kept']} of {t['records']} records (expected {t['expected_size']:.6g})")
    say(wrote_message(t["output"], t["kept"] if sample else t["records"]))
    doc = {
        "design": d.name,
        "engine": "dask",
        "records": t["records"],
        "expected_size": t["expected_size"],
        "sampled": t["kept"],
        "seed": seed if sample else None,
        "outside_records": t["outside"],
        "outside_rows": t["outside_rows"],
        "partitions": t["partitions"],
        "output": t["output"],
        "output_format": t["output_format"],
    }
    text = result_text(Format.json, "weights", doc)
    write_summary_text(t["output"], text)
    if as_json:
        emit(text)
    return int(ExitCode.OK)
