"""``ampcalc sweep``: bounds (or inverses, or plans) over a grid of design values.

The evaluation is ``ampcalc.sweep``; the figure is ``ampcalc.plot``. This module only
parses options, renders and chooses the exit code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ampcalc.cli.app import (
    DesignArg,
    ExitCode,
    Format,
    FormatOpt,
    JsonOpt,
    SetOpt,
    app,
    check_option,
    emit_result,
    resolve_format,
    version,
)
from ampcalc.cli.conventions import OutputOpt, progress_bar, say
from ampcalc.load.files import refuse_input_as_output
from ampcalc.model.errors import AmpcalcError, DesignError, Where
from ampcalc.model.limits import LIMITS, limit
from ampcalc.model.references import describe_all
from ampcalc.model.references import footer as references_footer

if TYPE_CHECKING:
    from ampcalc.api import Sweep, SweepStream
    from ampcalc.output.columns import Piece

TABLE_ROWS = 200
PROGRESS_FROM = 20  # grid points


VaryOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--vary",
        help=(
            "A numeric design field and its values, start:stop:steps, "
            "start:stop:steps:log or a comma list (see the examples below). Twice for "
            "a grid."
        ),
        metavar="PATH=SPEC",
        show_default=False,
    ),
]
OfOpt = Annotated[
    str,
    typer.Option("--of", help="What to sweep: bound (ε′), invert (M's ε for a target) or plan."),
]
TargetOpt = Annotated[
    float | None,
    typer.Option("--target", "-t", help="Target ε′ for --of invert.", show_default=False),
]
TargetDeltaOpt = Annotated[
    float | None,
    typer.Option("--target-delta", help="Target δ′ for --of invert.", show_default=False),
]
PlotOpt = Annotated[
    str | None,
    typer.Option(
        "--plot",
        help=(
            "Draw the sweep to this file (.png, .svg, .pdf; needs the plot extra: "
            "pip install 'ampcalc\\[plot]'). The figure replaces the table; --format "
            "csv/--json still write the rows."
        ),
        metavar="FILE",
        show_default=False,
    ),
]
LogXOpt = Annotated[
    bool | None,
    typer.Option("--log-x/--linear-x", help="x axis scale (default: log for :log specs)."),
]
LogYOpt = Annotated[
    bool | None,
    typer.Option(
        "--log-y/--linear-y",
        help="y axis scale (default: log when the values span more than two decades).",
        show_default=False,
    ),
]
HeatmapOpt = Annotated[bool, typer.Option("--heatmap", help="Two --vary options: draw a heatmap.")]
ContourOpt = Annotated[
    float | None,
    typer.Option(
        "--contour",
        help="With --heatmap: draw the line where the upper bound on ε′ equals this target.",
        metavar="T",
        show_default=False,
    ),
]
TitleOpt = Annotated[str | None, typer.Option("--title", help="Figure title.", show_default=False)]
XLabelOpt = Annotated[
    str | None, typer.Option("--xlabel", help="x axis label.", show_default=False)
]
YLabelOpt = Annotated[
    str | None, typer.Option("--ylabel", help="y axis label.", show_default=False)
]
XFactorOpt = Annotated[
    float,
    typer.Option(
        "--x-factor",
        help="Multiply x values by this in the figure (e.g. 1e-4 shows m of N=10⁴ as a rate).",
    ),
]
YColumnOpt = Annotated[
    str | None,
    typer.Option("--y", help="Draw this result column as lines.", show_default=False),
]
ChartOpt = Annotated[
    bool | None,
    typer.Option(
        "--chart/--no-chart", help="Text chart under the table (default: on a terminal)."
    ),
]


@dataclasses.dataclass(frozen=True)
class _Figure:
    """The ``--plot`` options: where and how the figure is drawn (``file`` None: none)."""

    file: str | None
    log_x: bool | None
    log_y: bool | None
    heatmap: bool
    contour: float | None
    title: str | None
    xlabel: str | None
    ylabel: str | None
    x_factor: float
    y_column: str | None


@app.command(rich_help_panel="Bounds")
def sweep(
    design: DesignArg = None,
    vary: VaryOpt = None,
    of: OfOpt = "bound",
    target: TargetOpt = None,
    target_delta: TargetDeltaOpt = None,
    plot: PlotOpt = None,
    log_x: LogXOpt = None,
    log_y: LogYOpt = None,
    heatmap: HeatmapOpt = False,
    contour: ContourOpt = None,
    title: TitleOpt = None,
    xlabel: XLabelOpt = None,
    ylabel: YLabelOpt = None,
    x_factor: XFactorOpt = 1.0,
    y_column: YColumnOpt = None,
    chart: ChartOpt = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: SetOpt = None,
    out: OutputOpt = None,
) -> int:
    """Bounds over a grid of design values: CSV/JSON rows and, with --plot, a figure.

    Examples:

    ampcalc sweep examples/designs/srswor.yaml \\
        --vary mechanism.epsilon=0.01:10:50:log --plot eps.png
    ampcalc sweep examples/designs/srswor.yaml --vary sampling.sample=100,500,1000
    ampcalc sweep examples/designs/srswor.yaml --of invert --vary target=0.1,0.5,1
    """
    output = resolve_format(fmt, as_json, out)
    figure = _Figure(
        file=plot,
        log_x=log_x,
        log_y=log_y,
        heatmap=heatmap,
        contour=contour,
        title=title,
        xlabel=xlabel,
        ylabel=ylabel,
        x_factor=x_factor,
        y_column=y_column,
    )
    _check_options(of, vary, target, target_delta, figure)
    assert vary  # checked: nothing to sweep otherwise
    with _vary_flag():  # the library locates a spec in `vary`, the command in --vary
        result, points = _evaluate(design, vary, of, target, target_delta, set_, output, figure)
    code = _say_failed_points(result)
    if figure.file is not None:
        _draw(result, figure, points)
        if output.value == "table" and fmt is None and out is None:
            return int(code)  # the figure is the result; --format/--json/-o also write rows
    _emit(result, output, chart, out)
    return int(code)


def _check_options(
    of: str,
    vary: list[str] | None,
    target: float | None,
    target_delta: float | None,
    figure: _Figure,
) -> None:
    """The options' values, each on its own, before any file is read."""
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.load.fields import Field  # lazy: start-up (--help)

    check_option(target, "--target", "target")
    check_option(target_delta, "--target-delta", "target_delta")
    check_option(figure.contour, "--contour", "target")
    scale = Field(name="x_factor", kind="float", doc="x scale", low=0.0, low_open=True)
    check_option(figure.x_factor, "--x-factor", scale)
    if of not in api.SWEEP_KINDS:
        raise typer.BadParameter(
            f"{of!r}; expected one of {', '.join(api.SWEEP_KINDS)}", param_hint="--of"
        )
    if not vary:
        raise DesignError(
            "nothing to sweep: give --vary PATH=SPEC, e.g. "
            "--vary mechanism.epsilon=0.01:10:100:log"
        )


def _check_figure(figure: _Figure, of: str, design: str | None) -> None:
    """The ``--plot`` options that go together, and the figure's file, before the sweep
    is evaluated."""
    if figure.contour is not None and (figure.file is None or not figure.heatmap or of != "bound"):
        raise DesignError("--contour T draws on a figure: add --plot FILE --heatmap (--of bound)")
    if figure.file is not None:
        from ampcalc.output.plot import check_labels, check_output  # lazy: start-up (--help)

        check_output(figure.file)
        check_labels(figure.title, figure.xlabel, figure.ylabel)
        refuse_input_as_output(figure.file, [design], option="--plot")


def _evaluate(
    design: str | None,
    vary: list[str],
    of: str,
    target: float | None,
    target_delta: float | None,
    set_: list[str] | None,
    output: Format,
    figure: _Figure,
) -> tuple[Sweep | SweepStream, int]:
    """The sweep (streamed when large and without a figure) and its points per design."""
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.designs.document import parse_yaml, read_source  # lazy: > 20 ms

    grid = api.sweep_grid(vary)
    _check_figure(figure, of, design)
    text, name = read_source(design)
    document = parse_yaml(text, filename=name)
    points = grid.points()
    if figure.file is not None and points > limit("plot_points"):
        raise DesignError(LIMITS["plot_points"].message(points), where=Where(file="--plot"))
    if output.value in ("json", "csv") and figure.file is None:
        from ampcalc.output.columns import prefetch  # lazy: start-up (--help)

        prefetch(points)  # the large-output writer's imports load while the grid is evaluated
    steps = grid.steps(of)
    with contextlib.ExitStack() as stack:
        progress = None
        if steps >= PROGRESS_FROM:
            progress = stack.enter_context(progress_bar("sweeping", steps))
        # without a figure, a large grid is written as it is evaluated (bounded memory)
        result = api.sweep_stream(
            document,
            grid,
            of=of,
            filename=name,
            overrides=set_ or (),
            target=target,
            target_delta=target_delta,
            progress=progress,
            stream=figure.file is None,
        )
    return result, points


def _say_failed_points(result: Sweep | SweepStream) -> ExitCode:
    """Say which points are outside their theorem's conditions; all of them: exit 2."""
    failed = result.failed_points()
    if not failed:
        return ExitCode.OK
    for e in result.errors():
        say(f"outside the conditions at some points: {e}")
    say(f"{failed} of {len(result)} points have no bound (outside their theorem's conditions)")
    return ExitCode.BAD_INPUT if failed == len(result) else ExitCode.OK


def _draw(result: Sweep | SweepStream, figure: _Figure, points: int) -> None:
    """Draw the figure to its file and say what it shows."""
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.output import plot  # lazy: start-up (--help)

    # a sweep with --plot is never streamed (at most LIMITS["plot_points"] points)
    assert isinstance(result, api.Sweep) and figure.file is not None
    plot.figure(
        result,
        figure.file,
        log_x=figure.log_x,
        log_y=figure.log_y,
        title=figure.title,
        xlabel=figure.xlabel,
        ylabel=figure.ylabel,
        x_factor=figure.x_factor,
        heatmap=figure.heatmap,
        y_column=figure.y_column,
        contour=figure.contour,
    )
    names = list(result.designs)
    which = f"design: {names[0]}" if len(names) == 1 else f"designs: {'; '.join(names)}"
    say(f"wrote {figure.file} ({points:,} points; {which})")
    if plot.caption(result):  # the theorems behind the curves, also in the file's metadata
        say(plot.caption(result))


def _emit(
    result: Sweep | SweepStream, output: Format, chart: bool | None, out: str | None
) -> None:
    """The rows as a table, JSON or CSV; large JSON and CSV written in chunks."""
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.output import columns  # lazy: start-up (--help)

    def csv_text() -> str:
        buf = io.StringIO()
        columns.sweep_csv(result, buf)
        return buf.getvalue()

    emit_result(
        output,
        "sweep",
        lambda: api.sweep_document(result),
        csv=csv_text,
        table=lambda rich: _table(result, rich=rich, chart=chart),
        # written from the columns in chunks: the same bytes, bounded memory
        chunks={
            "json": lambda: _ahead(columns.sweep_json_chunks(result, version())),
            "csv": lambda: _ahead(_csv_chunks(result)),
        },
        to=out,
        rows=len(result),
    )


@contextlib.contextmanager
def _vary_flag() -> Iterator[None]:
    """An error the library locates in a ``vary`` spec is located in ``--vary`` here."""

    try:
        yield
    except AmpcalcError as err:
        if err.where is not None and err.where.file == "vary":
            err.where = dataclasses.replace(err.where, file="--vary")
        raise


def _ahead(chunks: Iterator[Piece] | None, depth: int = 2) -> Iterator[Piece] | None:
    """``chunks``, made in a thread up to ``depth`` ahead of the one being written: the
    write to a file or pipe releases the GIL, so the next chunk is formatted while the
    kernel copies the last one (on a second core). Same chunks, same order; an error
    raised making one is raised here, in its place."""
    if chunks is None:
        return None
    import queue  # lazy: start-up (--help)

    made: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def make() -> None:
        try:
            for chunk in chunks:
                while not stop.is_set():
                    try:
                        made.put(("chunk", chunk), timeout=0.05)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            item: tuple[str, Any] = ("end", None)
        except BaseException as err:  # raised again in the reader's thread
            item = ("error", err)
        while not stop.is_set():
            try:
                made.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def read() -> Iterator[Piece]:
        worker = threading.Thread(target=make, name="ampcalc-chunks", daemon=True)
        worker.start()
        try:
            while True:
                kind, value = made.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                yield value
        finally:
            stop.set()  # the reader stopped (done, or the pipe closed): so does the maker

    return read()


def _csv_chunks(result: Any) -> Iterator[Piece]:
    from ampcalc.output.columns import csv_chunks, sweep_columns  # lazy: start-up (--help)

    return csv_chunks(sweep_columns(result))


def _table(result: object, *, rich: bool, chart: bool | None) -> str:
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.output import render  # lazy: start-up (--help)
    from ampcalc.output.plot import label, text_chart  # lazy: start-up (--help)

    assert isinstance(result, api.Sweep | api.SweepStream)
    # a streamed sweep: its first rows, and (for the chart) the columns the chart draws
    head = result.head(TABLE_ROWS) if isinstance(result, api.SweepStream) else result
    vary_cols = [v.path for v in result.varies]
    if result.of == "bound":
        shown = [
            ("epsilon_prime.lower", "ε′ lower"),
            ("epsilon_prime.upper", "ε′ upper"),
            ("delta_prime", "δ′"),
            ("verdict", "verdict"),
        ]
        vary_cols = [c for c in vary_cols if c != "mechanism.epsilon"]
        shown.insert(0, ("epsilon", "ε (M)"))
    elif result.of == "invert":
        vary_cols = [c for c in vary_cols if c != "target.epsilon_prime"]
        shown = [
            ("target.epsilon_prime", "target ε′"),
            ("epsilon.certified", "certified ε"),
            ("epsilon.impossible_above", "impossible above"),
            ("delta", "δ (M)"),
        ]
    else:
        skip = {*vary_cols, "design", "scheme", "error"}
        shown = [(c, c) for c in result.column_names() if c not in skip]
    header = ["design", *(label(c).split(" (")[0] for c in vary_cols), *(h for _, h in shown)]
    rows = []
    for i, row in enumerate(head.rows()):
        if i >= TABLE_ROWS:
            break
        cells = [str(row["design"])]
        cells += [render.fmt(row[c]) for c in vary_cols]
        cells += [
            "error" if c == "verdict" and row.get("error") else render.fmt(row.get(c))
            for c, _ in shown
        ]
        rows.append(cells)
    footer: list[str] = []
    if len(result) > TABLE_ROWS:
        footer.append(
            f"... {len(result) - TABLE_ROWS} more rows ({len(result)} in all); "
            "use --format csv or --format json for every row"
        )
    for name, meta in result.designs.items():
        items = []
        if meta.get("basis"):
            items.append("basis: " + describe_all(meta["basis"]))
        items.extend(f"warning: {w}" for w in meta.get("warnings", []))
        items.extend(f"note: {n}" for n in meta.get("notes", []))
        if items:
            footer.append(f"{name}:")
            footer.extend(f"  - {i}" for i in items)
    footer += references_footer(list(result.designs.values()))
    text = render.render_table(header, rows, footer, rich_output=rich)
    if chart if chart is not None else rich:
        drawn = text_chart(_drawn(result))
        if drawn:
            text += "\n" + drawn
    return text


def _drawn(result: Any) -> Any:
    """What ``text_chart`` draws: the sweep, or the columns it reads of a streamed one."""
    from ampcalc import api  # lazy: start-up (--help)

    if not isinstance(result, api.SweepStream) or result.of not in ("bound", "invert"):
        return result
    key = "epsilon_prime.upper" if result.of == "bound" else "epsilon.certified"
    return result.select(["design", *(v.path for v in result.varies), key])
