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
from typing import TYPE_CHECKING, Annotated, Any

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
from ampcalc.cli.conventions import (
    DashboardOpt,
    SchedulerOpt,
    SummaryJsonOpt,
    WorkersOpt,
    dashboard_note,
    progress_bar,
    say,
    wrote_message,
)
from ampcalc.load.files import atomic_write, refuse_input_as_output
from ampcalc.model.errors import ConditionError, DesignError
from ampcalc.model.references import DERIVATIONS

if TYPE_CHECKING:
    from ampcalc.api import Weights

EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="numpy (one process) or dask (partitions on a Dask cluster; the dask extra).",
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


WeightsOutputOpt = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        help="Write CSV (or Parquet) here, replaced whole (default: standard output); "
        "with --engine dask, a directory of part files.",
        metavar="FILE",
    ),
]
SampleOpt = Annotated[
    bool, typer.Option("--sample", help="Draw the Poisson sample (records with weights).")
]
SeedOpt = Annotated[
    int | None, typer.Option("--seed", help="Seed of the sample draw (needed with --sample).")
]
SuggestOpt = Annotated[
    bool,
    typer.Option("--suggest", help="Print planning values computed from the data."),
]
InputOpt = Annotated[
    str | None,
    typer.Option(
        "--input",
        help="Dask engine: the records as a file, directory or glob of CSV/Parquet "
        "partitions (default: the design's `records:`).",
        show_default=False,
    ),
]


@app.command(rich_help_panel="Records")
def weights(
    design: DesignArg = None,
    output: WeightsOutputOpt = None,
    sample: SampleOpt = False,
    seed: SeedOpt = None,
    suggest: SuggestOpt = False,
    overrides: SetOpt = None,
    engine: EngineOpt = "numpy",
    inputs: InputOpt = None,
    output_fmt: OutputFormatOpt = None,
    workers: WorkersOpt = 2,
    scheduler: SchedulerOpt = None,
    dashboard: DashboardOpt = False,
    as_json: SummaryJsonOpt = False,
) -> int:
    """Per-record probabilities q*(x) and weights w*(x) of an importance design (CSV).

    Example:  ampcalc weights examples/designs/importance-kmeans.yaml -o w.csv
    """
    from ampcalc import api  # lazy: start-up (--help)

    dask = _check_engine(engine, suggest, inputs, as_json, output)
    refuse_input_as_output(output, [design, inputs])
    d = api.importance_design(_load(design, overrides, dask))
    if suggest:
        return _suggest(d)
    if sample and seed is None:
        raise DesignError("--sample needs --seed S (the draw must be reproducible)")
    try:
        figures = _figures(d, dask)
    except ConditionError as err:
        say(f"ampcalc: {d.name}: {err.message}")
        return int(ExitCode.BAD_INPUT)
    if figures is None:
        return _weights_dask(
            d, inputs, output, output_fmt, sample, seed, scheduler, workers, as_json,
            dashboard,
        )  # fmt: skip
    return _weights_numpy(
        d, figures, design, output, output_fmt, seed if sample else None, as_json
    )


def _check_engine(
    engine: str, suggest: bool, inputs: str | None, as_json: bool, output: str | None
) -> bool:
    """The engine's options that go together; whether the engine is Dask."""
    if engine not in ("numpy", "dask"):
        raise DesignError(f"--engine: expected numpy or dask, got {engine!r}")
    dask = engine == "dask"
    if dask:
        from ampcalc import api  # lazy: start-up (--help)

        api.require_dask()
        if suggest:
            raise DesignError("--suggest reads the file in one process: use --engine numpy")
    elif inputs is not None:
        raise DesignError("--input is for --engine dask (the numpy engine reads `records:`)")
    if as_json and not output:
        raise DesignError("--json prints the summary on standard output: give --output")
    return dask


def _load(design: str | None, overrides: list[str] | None, dask: bool) -> Any:
    """The file's designs; with Dask, without reading the records (the workers do)."""
    if not dask:
        return load(design, overrides)
    from ampcalc.load.records import deferred_reading  # lazy: start-up (--help)

    with deferred_reading():
        return load(design, overrides)


def _suggest(d: Any) -> int:
    """``--suggest``: planning values from the data, with the warning they need."""
    from ampcalc import api  # lazy: start-up (--help)

    lines = [
        f"{name}: {value}" if isinstance(value, int) else f"{name}: {value:.10g}"
        for name, value in api.weights_planning(d)
    ]
    emit("\n".join(lines) + "\n")
    say(
        "warning: these values come from the data. Using them as `mean_sq_norm:` or "
        f"`radius:` makes q(·) data-dependent and breaks the guarantee ({DERIVATIONS}, "
        "§4.7): use "
        "them for planning only, and fix the public values from other sources."
    )
    return int(ExitCode.OK)


def _figures(d: Any, dask: bool) -> Weights | None:
    """Every record's figures (numpy engine), or None (Dask engine: its workers compute
    them, once the design passes the check ``bound`` makes).

    Raises:
        ConditionError: the design is outside Theorem 10's conditions.
    """
    from ampcalc import api  # lazy: start-up (--help)

    if dask:
        api.importance_setup(d)
        return None
    return api.weights(d, threads=_threads())


def _weights_numpy(
    d: Any, w: Weights, design: str | None, output: str | None, output_fmt: str | None,
    seed: int | None, as_json: bool,
) -> int:  # fmt: skip
    """``--engine numpy``: the rows (or the sample's, with ``seed``), then the summary."""
    if w.outside.any():
        rows = ", ".join(str(int(i)) for i in np.flatnonzero(w.outside)[:10])
        say(
            f"warning: {int(w.outside.sum())} record(s) outside the domain or infeasible "
            f"(first rows, 0-based: {rows}); written with q = 1 (privacy-constrained) or "
            "their q, not clipped"
        )
    out_fmt = "csv"
    if output:
        from ampcalc import api  # lazy: start-up (--help)

        out_fmt = api.output_format(output, output_fmt, "csv")
    kept = _write_weights(d, w, design, output, out_fmt, seed)
    if seed is not None:
        say(f"sampled {kept} of {len(w)} records (expected {float(np.sum(w.probability)):.6g})")
    if output:
        say(wrote_message(output, len(w) if kept is None else kept))
    if as_json:
        summary = _summary(d, "numpy", len(w), w.probability, kept, seed, w, output)
        emit_result(Format.json, "weights", {**summary, "output_format": out_fmt})
    return int(ExitCode.OK)


def _write_weights(
    d: Any, w: Weights, design: str | None, output: str | None, out_fmt: str,
    seed: int | None,
) -> int | None:  # fmt: skip
    """Write every record's row, or with ``seed`` the sample's (then: how many), to
    ``output`` or standard output (``output.weights_rows`` makes the rows)."""
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.output import weights_rows as rows  # lazy: start-up (--help)

    with contextlib.ExitStack() as stack:
        tick = stack.enter_context(progress_bar("writing weights", len(w)))
        src = d.params.data.source  # the records the sample keeps rows of
        if out_fmt == "parquet":
            assert output is not None
            if seed is None:
                table = rows.weights_table(w.probability, w.weight, w.epsilon_hat)
            else:
                blocks = api.sampled_blocks(src, w.probability, w.weight, seed)
                table = rows.sample_table(src.names, blocks)
            with atomic_write(output, binary=True, inputs=[design]) as fh:
                rows.write_parquet(table, fh)
            return None if seed is None else int(table.num_rows)
        if seed is not None:
            write: Any = emit
            if output:
                write = stack.enter_context(atomic_write(output, inputs=[design])).write
            blocks = api.sampled_blocks(src, w.probability, w.weight, seed)
            return rows.write_sample_csv(write, src.names, blocks, records=len(w), progress=tick)
        figs = (w.probability, w.weight, w.epsilon_hat)
        if output:  # bytes straight to the file (no str round trip)
            fh = stack.enter_context(atomic_write(output, binary=True, inputs=[design]))
            rows.write_weights_csv(fh.write, *figs, threads=_threads(), binary=True, progress=tick)
        else:
            rows.write_weights_csv(emit, *figs, threads=_threads(), progress=tick)
    return None


def _threads() -> int:
    """Threads for the per-record blocks (numpy releases the GIL): two where there
    are two cores."""

    return max(1, min(2, os.cpu_count() or 1))


def _summary(
    d: Any, engine: str, records: int, q: Any, kept: int | None, seed: int | None,
    w: Weights, output: str | None,
) -> dict[str, Any]:  # fmt: skip
    """The run's summary (one process); the Dask engine prints the same fields."""

    outside = np.flatnonzero(w.outside)
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
    d: Any, inputs: str | None, output: str | None, output_fmt: str | None, sample: bool,
    seed: int | None, scheduler: str | None, workers: int, as_json: bool,
    dashboard: bool = False,
) -> int:  # fmt: skip
    """``--engine dask``: the same rows as part files, the same warnings and summary."""
    from ampcalc import api  # lazy: start-up (--help)

    params, profile, k0, eps_star = api.importance_setup(d)
    source = inputs if inputs is not None else str(params.data.source.path)
    t = api.run_weights(
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
    api.write_summary_text(t["output"], text)
    if as_json:
        emit(text)
    return int(ExitCode.OK)
