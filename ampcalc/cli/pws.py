"""``ampcalc pws``: the private weighted sampling table, sanitiser and estimator.

- ``pws table DESIGN``: every per-frequency row (q_i, π_i, p_i, SbH φ_i) of a pws
  design (Cohen et al. 2021 Alg. 3; spec B9), ``--verify`` runs the DP
  self-check on Algorithm 4's rows.
- ``pws sanitize SAMPLE.csv --design D --seed S``: Algorithm 2 of Cohen et al. 2021 on a
  real sample (keys only, or keys with sanitised frequencies from Algorithm 4), streaming, with a
  counter-based per-key generator (same output however the file is chunked).
- ``pws estimate PRIVATE.csv --design D``: the MLE estimator (Cohen et al. 2021 Eq. 9, spec B8) of
  the sum of frequencies, with per-frequency bias, variance, MSE.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ampcalc.cli.app import (
    ExitCode,
    Format,
    FormatOpt,
    JsonOpt,
    SetOpt,
    app,
    emit,
    emit_result,
    load,
    resolve_format,
    result_text,
    version,
)
from ampcalc.cli.conventions import (
    DashboardOpt,
    OutputOpt,
    SchedulerOpt,
    SummaryJsonOpt,
    WorkersOpt,
    dashboard_note,
    progress_bar,
    say,
    wrote_message,
)
from ampcalc.load.files import atomic_write, excerpt, refuse_input_as_output
from ampcalc.model.errors import DesignError
from ampcalc.model.references import PWS

if TYPE_CHECKING:
    from ampcalc.api import PwsSanitiser

pws_app = typer.Typer(
    help=f"Private weighted sampling ({PWS}): table, sanitiser, estimator.\n\n"
    "Example:  ampcalc pws table examples/designs/pws.yaml",
    no_args_is_help=True,
)
app.add_typer(pws_app, name="pws", rich_help_panel="Records")

DesignOpt = Annotated[
    str, typer.Option("--design", "-d", help="The pws design (YAML).", show_default=False)
]


def _design(path: str | None, overrides: list[str] | None) -> Any:
    from ampcalc import api  # lazy: start-up (--help)

    return api.pws_design(load(path, overrides))


# ---- pws table ----------------------------------------------------------------------------

TableDesignArg = Annotated[str | None, typer.Argument(help="The pws design (YAML).")]
MaxFrequencyOpt = Annotated[
    int | None, typer.Option("--max-frequency", help="Rows to write (default: design's).")
]
TableVerifyOpt = Annotated[
    bool,
    typer.Option("--verify", help="Run Algorithm 4 and check every hockey-stick <= δ."),
]
AccuracyOpt = Annotated[
    bool,
    typer.Option(
        "--accuracy",
        help="Add each estimator's per-key bias and variance: PWS MLE and unbiased "
        f"({PWS}, §7.1), sampled-SbH (§8.1).",
    ),
]


@pws_app.command("table")
def table_cmd(
    design: TableDesignArg = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    max_frequency: MaxFrequencyOpt = None,
    verify: TableVerifyOpt = False,
    accuracy: AccuracyOpt = False,
    overrides: SetOpt = None,
    out: OutputOpt = None,
) -> int:
    """Every per-frequency row of a pws design: i, q_i, π_i, p_i, SbH φ_i, π_i/φ_i.

    Example:  ampcalc pws table examples/designs/pws.yaml --verify
    """
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.output import columns as co  # lazy: start-up (--help)

    out_format = resolve_format(fmt, as_json, out)
    d, params = _design(design, overrides)
    summary, cols = api.pws_table_columns([d], max_frequency, verify=verify)
    all_rows = _table_rows_of(d, max_frequency, accuracy, cols)
    status = ExitCode.OK
    if verify and not summary["verified"]:
        say(
            f"self-check failed: hockey-stick divergence {summary['max_hockey_stick']!r} "
            f"> δ = {params.delta!r}"
        )
        status = ExitCode.SELF_CHECK_FAILED

    def table(rich: bool) -> str:
        return _table_text(d, params, summary, all_rows(), len(cols["frequency"]), rich,
                           accuracy=accuracy, verify=verify)  # fmt: skip

    emit_result(
        out_format,
        "pws table",
        lambda: {**summary, "frequencies": all_rows()},
        csv=_LazyRows(all_rows),
        table=table,
        # written from the columns in chunks: the same bytes as the rows rendered
        chunks=None
        if accuracy
        else {
            "json": lambda: co.table_json_chunks(
                "pws table", version(), summary, "frequencies", cols
            ),
            "csv": lambda: co.csv_chunks(cols),
        },
        to=out,
        rows=len(cols["frequency"]),
    )
    return int(status)


def _table_rows_of(
    d: Any, max_frequency: int | None, accuracy: bool, cols: dict[str, Any]
) -> Callable[[], list[dict[str, Any]]]:
    """The table's rows, made once when first asked for (with ``accuracy``, the
    estimators' per-key columns come with them)."""

    @functools.cache
    def all_rows() -> list[dict[str, Any]]:
        if accuracy:
            from ampcalc import api  # lazy: start-up (--help)

            rows: list[dict[str, Any]] = api.pws_table([d], max_frequency, accuracy=True)[
                "frequencies"
            ]
            return rows
        return _table_rows(cols)

    return all_rows


def _table_text(
    d: Any, params: Any, summary: dict[str, Any], rows: list[dict[str, Any]], n: int,
    rich: bool, *, accuracy: bool, verify: bool,
) -> str:  # fmt: skip
    """The table: the rows that cost privacy (π_i < q_i; else the first five)."""
    from ampcalc.output.render import fmt as f6  # lazy: start-up (--help)
    from ampcalc.output.render import render_table  # lazy: start-up (--help)

    interesting = [r for r in rows if r["pi"] < r["q"]] or rows[:5]
    header = ["i", "q_i", "π_i", "p_i", "SbH φ_i", "π_i/φ_i"]
    body = [
        [
            str(r["frequency"]),
            f6(r["q"]),
            f6(r["pi"]),
            f6(r["p"]),
            f6(r["phi_sbh"]),
            f6(r["ratio"]),
        ]
        for r in interesting
    ]
    if accuracy:
        header += ["MLE bias", "MLE var", "unbiased a_i", "SbH bias", "SbH var"]
        for line, r in zip(body, interesting, strict=True):
            line += [
                f6(r["bias_mle"]),
                f6(r["variance_mle"]),
                f6(r["a_unbiased"]),
                f6(r["bias_sbh"]),
                f6(r["variance_sbh"]),
            ]
    foot = [
        f"{d.name}: (ε, δ) = ({params.epsilon:g}, {params.delta:g}), "
        f"L = {summary['L']:.6g}; "
        f"{summary['privacy_cost_rows']} of {n} rows have π_i < q_i (shown); "
        f"π_i = q_i for good from i = {summary['settled_from']}"
    ]
    if verify:
        foot.append(
            f"max hockey-stick divergence = {summary['max_hockey_stick']!r} (δ = "
            f"{params.delta!r}; keys only: exact check; sanitised frequencies: float "
            "rounding slack allowed)"
        )
    return render_table(header, body, foot, rich_output=rich)


class _LazyRows:
    """Rows made only when iterated (the CSV rendering falls back to them)."""

    def __init__(self, make: Any) -> None:
        self.make = make

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.make())


def _table_rows(cols: dict[str, Any]) -> list[dict[str, Any]]:
    """``api.pws_table``'s rows from its columns (NaN ratio: null)."""
    names = list(cols)
    rows = [
        dict(zip(names, values, strict=True))
        for values in zip(*(cols[k].tolist() for k in names), strict=True)
    ]
    for row, ok in zip(rows, (cols["phi_sbh"] > 0).tolist(), strict=True):
        if not ok:
            row["ratio"] = None
    return rows


# ---- pws sanitize -------------------------------------------------------------------------

SampleArg = Annotated[str, typer.Argument(help="Sample CSV: key,frequency[,score] ('-': stdin).")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the sanitiser's draws.")]
SanitizedOutputOpt = Annotated[
    str | None, typer.Option("--output", "-o", help="Output CSV (default: stdout).")
]
FrequenciesOpt = Annotated[
    bool,
    typer.Option("--frequencies", help="Report sanitised frequencies (Algorithm 4)."),
]
StreamOpt = Annotated[
    bool,
    typer.Option(
        "--stream",
        help="Bounded memory: the input must be sorted by key (duplicates and "
        "out-of-order keys are errors naming both rows).",
    ),
]
NoExtendOpt = Annotated[
    bool,
    typer.Option(
        "--no-extend",
        help="Refuse frequencies above the design's largest frequency (`max_frequency`) "
        "instead of computing.",
    ),
]
ChunkOpt = Annotated[int, typer.Option("--chunk-size", help="Rows per chunk.")]
SanitizeVerifyOpt = Annotated[
    bool, typer.Option("--verify", help="Check the DP of the tables used (hockey-stick).")
]
EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="numpy (one process) or dask (SAMPLE: a file, directory or glob of "
        "CSV/Parquet partitions; the dask extra).",
    ),
]
PartsFormatOpt = Annotated[
    str | None,
    typer.Option(
        "--output-format",
        help="Dask engine: part files as csv or parquet (default: the output's "
        "suffix, else the input's format).",
        show_default=False,
    ),
]


@pws_app.command("sanitize")
def sanitize_cmd(
    sample: SampleArg,
    design: DesignOpt,
    seed: SeedOpt,
    output: SanitizedOutputOpt = None,
    frequencies: FrequenciesOpt = False,
    stream: StreamOpt = False,
    no_extend: NoExtendOpt = False,
    chunk: ChunkOpt = 200_000,
    verify: SanitizeVerifyOpt = False,
    overrides: SetOpt = None,
    engine: EngineOpt = "numpy",
    output_fmt: PartsFormatOpt = None,
    workers: WorkersOpt = 2,
    scheduler: SchedulerOpt = None,
    dashboard: DashboardOpt = False,
    as_json: SummaryJsonOpt = False,
) -> int:
    """Sanitise a non-private weighted sample (Cohen et al. 2021, Algorithm 2): keys, or keys
    and frequencies.

    Example:

    ampcalc pws sanitize examples/designs/data/pws-sample.csv \\
        -d examples/designs/pws.yaml --seed 7 --frequencies -o private.csv
    """
    from ampcalc import api  # lazy: start-up (--help)

    _check_sanitize_options(engine, as_json, output, stream, sample, design)
    d, params = _design(design, overrides)
    san = api.PwsSanitiser(params, frequencies, extend=not no_extend)
    if engine == "dask":
        return _sanitize_dask(
            d, params, san, sample, output, output_fmt, seed, frequencies, no_extend,
            chunk, verify, scheduler, workers, as_json, dashboard,
        )  # fmt: skip
    n_in, n_out = _sanitize_numpy(
        sample, design, output, san, params, seed, frequencies, stream, chunk
    )
    if verify and not _self_check(params, san, frequencies):
        return int(ExitCode.SELF_CHECK_FAILED)
    say(f"sanitised {n_in} keys: {n_out} reported (rows computed up to frequency {san.n})")
    if output is not None:
        say(wrote_message(output, n_out))
    if as_json:
        summary = _sanitize_summary(
            d, "numpy", seed, frequencies, n_in, n_out, san.n, 1, output, "csv"
        )
        emit_result(Format.json, "pws sanitize", summary)
    return int(ExitCode.OK)


def _check_sanitize_options(
    engine: str, as_json: bool, output: str | None, stream: bool, sample: str, design: str
) -> None:
    """The options that go together, and the output that must not be an input."""
    if engine not in ("numpy", "dask"):
        raise DesignError(f"--engine: expected numpy or dask, got {engine!r}")
    if as_json and not output:
        raise DesignError("--json prints the summary on standard output: give --output")
    refuse_input_as_output(output, [sample, design])
    if engine == "dask":
        from ampcalc import api  # lazy: start-up (--help)

        api.require_dask()
        if stream:
            raise DesignError(
                "--stream is for --engine numpy (the Dask engine holds one partition at a "
                "time per worker)"
            )


def _sanitize_numpy(
    sample: str, design: str, output: str | None, san: PwsSanitiser, params: Any, seed: int,
    frequencies: bool, stream: bool, chunk: int,
) -> tuple[int, int]:  # fmt: skip
    """``--engine numpy``: the reported rows to ``output`` (or standard output), chunk by
    chunk; (keys read, keys reported)."""
    import csv  # lazy: start-up (--help)

    from ampcalc import api  # lazy: start-up (--help)

    with contextlib.ExitStack() as stack:
        tick = stack.enter_context(progress_bar("sanitising keys"))
        out: Any = sys.stdout
        if output is not None:
            out = stack.enter_context(atomic_write(output, newline="", inputs=[sample, design]))
        writer = csv.writer(out, lineterminator="\n")
        n_in = n_out = 0

        def start(header: list[str], extra: list[int]) -> None:
            head = [header[c] for c in extra]
            writer.writerow(["key", *(["frequency"] if frequencies else []), *head])

        parts = api.sanitize_sample(
            sample, chunk, san, params, seed, stream=stream, progress=tick, on_header=start
        )
        for part in parts:
            n_in = part.read
            api.write_chunk(out, writer, part, frequencies)
            n_out += int(part.kept.size)
    return n_in, n_out


def _self_check(params: Any, san: PwsSanitiser, frequencies: bool) -> bool:
    """``--verify``: the DP self-check of the tables used, said on stderr; passed?"""
    from ampcalc import api  # lazy: start-up (--help)

    ok, worst, exact = api.pws_self_check(params, san.q, san.pi, san.rows, frequencies)
    if not ok:
        say(f"self-check failed: hockey-stick {worst!r} > δ = {params.delta!r}")
        return False
    how = "exact" if exact and not frequencies else "up to float rounding of Algorithm 4"
    say(f"verified ({how}): max hockey-stick divergence {worst!r}, δ = {params.delta!r}")
    return True


def _sanitize_summary(
    d: Any, engine: str, seed: int, frequencies: bool, keys: int, reported: int, rows: int,
    partitions: int, output: str | None, output_format: str,
) -> dict[str, Any]:  # fmt: skip
    """The run's summary (the same fields for both engines)."""
    return {
        "design": d.name,
        "engine": engine,
        "seed": seed,
        "frequencies": frequencies,
        "keys": keys,
        "reported": reported,
        "rows_computed_up_to": rows,
        "partitions": partitions,
        "output": output,
        "output_format": output_format,
    }


def _sanitize_dask(
    d: Any, params: Any, san: PwsSanitiser, sample: str, output: str | None,
    output_fmt: str | None, seed: int, frequencies: bool, no_extend: bool, chunk: int,
    verify: bool, scheduler: str | None, workers: int, as_json: bool,
    dashboard: bool = False,
) -> int:  # fmt: skip
    """``--engine dask``: the same rows as part files, the same checks and summary."""
    from ampcalc import api  # lazy: start-up (--help)

    t = api.run_sanitize(
        params, san, sample=sample, output=output, fmt=output_fmt, seed=seed,
        frequencies=frequencies, extend=not no_extend, chunk=chunk, address=scheduler,
        workers=workers, dashboard=dashboard_note if dashboard else None,
    )  # fmt: skip
    n = t["rows_computed_up_to"]
    if verify:
        san.ensure(n, sample)
        if not _self_check(params, san, frequencies):
            return int(ExitCode.SELF_CHECK_FAILED)
    keys, reported = t["keys"], t["reported"]
    say(f"sanitised {keys} keys: {reported} reported (rows computed up to frequency {n})")
    say(wrote_message(t["output"], reported))
    summary = _sanitize_summary(
        d, "dask", seed, frequencies, t["keys"], t["reported"], n, t["partitions"],
        t["output"], t["output_format"],
    )  # fmt: skip
    text = result_text(Format.json, "pws sanitize", summary)
    api.write_summary_text(t["output"], text)
    if as_json:
        emit(text)
    return int(ExitCode.OK)


# ---- pws estimate -------------------------------------------------------------------------

PrivateArg = Annotated[
    str, typer.Argument(help="Sanitised CSV from `pws sanitize --frequencies`.")
]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option("--select", help="Keep rows with COLUMN=VALUE (repeatable, all must hold)."),
]
EstimatorOpt = Annotated[
    str,
    typer.Option(
        "--estimator",
        help=f"mle ({PWS}, Eq. 9, default) or unbiased ({PWS}, §7.1: entries can be negative, "
        "variance >= 1/δ).",
    ),
]


@pws_app.command("estimate")
def estimate_cmd(
    private: PrivateArg,
    design: DesignOpt,
    select: SelectOpt = None,
    estimator: EstimatorOpt = "mle",
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    overrides: SetOpt = None,
    out: OutputOpt = None,
) -> int:
    """Estimate of the sum of frequencies (MLE, Cohen et al. 2021, Eq. 9, or the unbiased
    estimator), with per-frequency bias/variance beside sampled-SbH's (Cohen et al. 2021,
    §7 and §8.1).

    Example:  ampcalc pws estimate private.csv -d examples/designs/pws.yaml
    """
    from ampcalc import api  # lazy: start-up (--help)

    out_format = resolve_format(fmt, as_json, out)
    if estimator not in ("mle", "unbiased"):
        raise typer.BadParameter(
            f"expected mle or unbiased, got {estimator!r}", param_hint="--estimator"
        )
    _, params = _design(design, overrides)
    conds = _select_conditions(select)
    tokens = _read_frequencies(private, conds)
    result = api.pws_estimate_params(params, tokens, estimator)
    per = result.pop("frequencies")

    def table(rich: bool) -> str:
        return _estimate_table(result, per, len(tokens), estimator, rich)

    payload = {**result, "select": dict(conds), "frequencies": per}
    emit_result(out_format, "pws estimate", payload, csv=per, table=table, to=out, rows=len(per))
    return int(ExitCode.OK)


def _select_conditions(select: list[str] | None) -> list[tuple[str, str]]:
    """``--select COLUMN=VALUE`` options as (column, value) pairs."""
    conds: list[tuple[str, str]] = []
    for s in select or []:
        if "=" not in s:
            raise typer.BadParameter(f"expected COLUMN=VALUE, got {s!r}", param_hint="--select")
        c, v = s.split("=", 1)
        conds.append((c.strip(), v))
    return conds


def _read_frequencies(private: str, conds: list[tuple[str, str]]) -> list[int]:
    """The sanitised frequency of every row of ``private`` that meets ``conds``."""
    from ampcalc import api  # lazy: start-up (--help)

    tokens: list[int] = []
    for header, lines, rows_ in api.read_rows(private, 1_000_000, need_freq=False):
        if "frequency" not in header:
            raise DesignError(
                f"{private}:1: no `frequency` column: the estimator needs sanitised "
                "frequencies (run `ampcalc pws sanitize --frequencies`)"
            )
        fi = header.index("frequency")
        for c, _ in conds:
            if c not in header:
                raise DesignError(f"{private}:1: --select column {excerpt(c)} not in the header")
        idx = [(header.index(c), v) for c, v in conds]
        for line, row in zip(lines, rows_, strict=True):
            if all(row[i] == v for i, v in idx):
                tokens.append(api.parse_freq(row[fi].strip(), private, line))
    return tokens


def _estimate_table(
    result: dict[str, Any], per: list[dict[str, Any]], keys: int, estimator: str, rich: bool
) -> str:
    """The first 20 frequencies' figures, and the estimate with its plug-in accuracy."""
    from ampcalc.output.render import fmt as f6  # lazy: start-up (--help)
    from ampcalc.output.render import render_table  # lazy: start-up (--help)

    body = [
        [
            str(r["frequency"]),
            f6(r["a"]),
            f6(r["bias"]),
            f6(r["variance"]),
            f6(r["nrmse"]),
            f6(r["bias_sbh"]),
            f6(r["variance_sbh"]),
        ]
        for r in per[: min(len(per), 20)]
    ]
    how = f"MLE, {PWS}, Eq. 9" if estimator == "mle" else f"unbiased, {PWS}, §7.1"
    foot = [
        f"sum of frequencies ≈ {result['estimate']:.6g} from {keys} reported keys ({how})",
        f"plug-in bias {result['bias_plugin']:.4g}, variance {result['variance_plugin']:.4g}, "
        f"NRMSE {f6(result['nrmse_plugin'])} "
        "(each key's frequency taken as its MLE frequency i_j; unreported keys add "
        "bias not counted here)",
    ]
    return render_table(
        ["i", "a_i", "Bias_i", "Var_i", "NRMSE_i", "SbH Bias_i", "SbH Var_i"],
        body,
        foot,
        rich_output=rich,
    )


__all__ = ["pws_app"]
