"""The command line: parse options, call the library, render, choose the exit code.

No maths and no YAML here. ``main(argv) -> int`` is the one place that maps outcomes
to exit codes: 0 ok, 1 a gate the user asked for failed (``--fail-above``), 2 bad
input or a design outside its theorem's conditions (and internal errors), 3 a
self-check found one of ampcalc's own bounds violated. The highest code wins.
SIGINT and SIGTERM stop the run with one line on stderr and exit 130 and 143
(``fileio.interruptible``); output files are only ever renamed into place whole.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import gc
import importlib
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main

from ampcalc._version import __version__
from ampcalc.cli.conventions import (
    AmpcalcGroup,
    Chunk,
    ClosedOutput,
    Discard,
    OutputOpt,
    click_message,
    click_where,
    error_document,
    error_kind,
    error_line,
    format_from_suffix,
    hold_standard_descriptors,
    json_requested,
    lazy_progress_bar,
    report_error,
    say,
    silence_stream,
    write_chunk,
    write_output,
)
from ampcalc.load.files import Interrupted, interruptible, reset_inputs, write_failed
from ampcalc.model.errors import AmpcalcError, DesignError, Where
from ampcalc.output.terms import (
    GLOSSARY_LINE,
    NOISE_CERTIFIED,
    NOISE_IMPOSSIBLE,
    plain_references,
)

if TYPE_CHECKING:
    from ampcalc.load.fields import Field
    from ampcalc.output.render import CsvRecords, Payload, TableText

# typer may vendor its own click: find its ClickException through a public class.
_ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


class ExitCode(enum.IntEnum):
    OK = 0
    GATE_FAILED = 1
    BAD_INPUT = 2
    SELF_CHECK_FAILED = 3


class Format(str, enum.Enum):
    table = "table"
    json = "json"
    csv = "csv"


def version() -> str:
    return __version__


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"ampcalc {version()}\n")
        raise typer.Exit(0)


class CommandLine(AmpcalcGroup):
    """ampcalc's root command: the commands of ``COMMANDS``, listed in its order (the
    top-level help groups them into panels by task, each command's ``rich_help_panel``).

    Only what a run asks for is imported and built: a command is built the first time
    it is asked for, and a further module's commands are imported then too (``ampcalc
    bound`` builds this module's four and imports no further module, ``ampcalc sweep``
    imports and builds only ``cli/sweep.py``'s). Listing the commands (the top-level
    help, shell completion) and a name that is no command (the suggestions for a typo)
    build them all.
    """

    def list_commands(self, ctx: Any) -> list[str]:
        self._build(COMMANDS)
        listed = [name for name in COMMANDS if name in self.commands]
        return [*listed, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands:
            self._build([cmd_name] if cmd_name in COMMANDS else COMMANDS)
        return self.commands.get(cmd_name)

    def _build(self, names: Iterable[str]) -> None:
        """Add the commands of the ``names`` not built yet (importing their modules)."""
        missing = [name for name in names if name not in self.commands]
        if not missing:
            return

        modules = dict.fromkeys(m for name in missing for m in COMMANDS.get(name, ()))
        sources = [core] if "app" in modules else []
        if any(module != "app" for module in modules):
            for module in modules:
                importlib.import_module(f"ampcalc.cli.{module}")
            sources.append(app)  # the further modules' commands attach to ``app``
        for source in sources:
            # typer builds the commands registered there by now (an ``AmpcalcGroup``
            # gives them the help conventions)
            for name, command in typer.main.get_group(source).commands.items():
                self.commands.setdefault(name, command)


#: this module's commands (bound, invert), added to the command line
#: by ``CommandLine`` as the further modules' are
core = typer.Typer(cls=AmpcalcGroup)

app = typer.Typer(
    name="ampcalc",
    help=(
        "Privacy amplification by sampling: sound upper and lower bounds on the "
        "population-level ε′ of an ε-DP mechanism run on a sample, and their inverses.\n\n"
        "Example:  ampcalc bound examples/designs/srswor.yaml\n\n"
        "Copy the examples here first:  ampcalc examples examples\n\n"
        "A page a result cites:  ampcalc docs derivations"
    ),
    add_completion=True,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    cls=CommandLine,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_version_callback,
            is_eager=True,
            help="Print the version.",
        ),
    ] = False,
) -> None:
    """Privacy amplification by sampling: bounds on ε′ and their inverses."""


# ---- shared options (defined once) -------------------------------------------------------
DesignArg = Annotated[
    str | None,
    typer.Argument(
        help="Design file (YAML); '-' reads standard input. Default: ./ampcalc.yaml.",
        metavar="DESIGN",
        show_default=False,
    ),
]
FormatOpt = Annotated[
    Format | None,
    typer.Option("--format", "-f", help="Output format: table, json or csv.", show_default=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override a field, e.g. --set sampling.sample=500 (repeatable; value read as YAML).",
        metavar="PATH=VALUE",
        show_default=False,
    ),
]
DetailsOpt = Annotated[
    bool,
    typer.Option("--details", help="Show every per-unit row (strata, frequencies) in the table."),
]
EpsilonOpt = Annotated[
    float | None,
    typer.Option("--epsilon", help="Override the mechanism's ε.", show_default=False),
]


def check_option(value: float | None, option: str, spec: Field | str) -> float | None:
    """The one check of a numeric threshold or target option: absent, or a finite number
    in ``spec``'s domain by the rule every design field follows (``load.fields.number``).

    ``spec`` is a ``Field``, or ``"gate"`` (``--fail-above``: a number >= 0), ``"target"``
    or ``"target_delta"`` (the domains of a design's ``target:`` block). Anything else
    exits 2 with ``Invalid value for --fail-above: expected a finite number (a number in
    [0, inf)), got nan``: a NaN compares false with every result, a gate that always passes.
    """
    if value is None:
        return None
    from ampcalc.load.fields import Field, number  # lazy: start-up (--version)

    if spec == "gate":
        spec = Field(name="gate", kind="float", doc="threshold", low=0.0)
    elif isinstance(spec, str):
        from ampcalc.designs.document import TARGET_FIELDS  # lazy: > 20 ms

        spec = TARGET_FIELDS[0] if spec == "target" else TARGET_FIELDS[1]
    try:
        return float(number(value, spec, Where(field=option)))
    except DesignError as err:
        raise typer.BadParameter(err.message, param_hint=option) from None


def resolve_format(fmt: Format | None, as_json: bool, to: str | None = None) -> Format:
    """The output format: ``--format``/``--json``, else the ``-o`` file's suffix
    (``.json``, ``.csv``), else a table."""
    if as_json and fmt not in (None, Format.json):
        raise typer.BadParameter(
            "--json and --format csv/table contradict each other", param_hint="--format"
        )
    if as_json:
        return Format.json
    if fmt is None and (suffix := format_from_suffix(to)) is not None:
        return Format(suffix)
    return fmt or Format.table


def emit(text: str) -> None:
    emit_chunks((text,))


def emit_chunks(chunks: Iterable[Chunk]) -> None:
    """Write to standard output, each piece as it comes (a large sweep in chunks).

    A reader that went away (``| head``) keeps the exit code of the computation; any
    other failure (a full disk, a closed descriptor) is ``cannot write standard output:
    REASON`` (exit 2).
    """
    try:
        for chunk in chunks:
            write_chunk(sys.stdout, chunk)
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stream(sys.stdout)
    except OSError as exc:
        silence_stream(sys.stdout)
        raise AmpcalcError(write_failed("standard output", exc)) from None


def rich_output() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, OSError, ValueError):
        return False


def result_text(
    output: Format,
    command: str,
    payload: Payload,
    *,
    csv: CsvRecords | None = None,
    table: TableText | None = None,
    to_file: bool = False,
) -> str:
    """A command's result as a table, JSON or CSV (``render.render_result``).

    JSON is ``{"ampcalc_version", "command", **payload}``, CSV the records flattened (or
    ``csv()``'s text), the table ``table(rich)`` with ``rich`` true on a terminal. Only
    the chosen rendering is computed; a command without a table or CSV passes None.
    """
    from ampcalc.output.render import render_result  # lazy: start-up (--version)

    return render_result(
        output.value,
        command=command,
        version=version(),
        payload=payload,
        csv=csv,
        table=table,
        rich_output=output is Format.table and not to_file and rich_output(),
    )


def emit_result(
    output: Format,
    command: str,
    payload: Payload,
    *,
    csv: CsvRecords | None = None,
    table: TableText | None = None,
    chunks: Mapping[str, Callable[[], Iterator[Chunk] | None]] | None = None,
    to: str | None = None,
    rows: int | None = None,
) -> None:
    """Write a command's result to standard output (or to ``to``) as a table, JSON or CSV.

    Every command prints its result through here (see ``result_text``), so the
    choice between the three formats is made in one place. ``chunks`` maps a format
    to a function writing that format's same text in pieces (or returning None: then
    the text is rendered as usual), for results too large to hold as one string.
    With ``to`` (``-o FILE``) the text is written to that file atomically and
    ``wrote ROWS rows to FILE`` goes to stderr.
    """
    make = (chunks or {}).get(output.value)
    pieces = make() if make is not None else None
    if pieces is None:
        text = result_text(output, command, payload, csv=csv, table=table, to_file=to is not None)
        pieces = iter((text,))
    if to is not None:
        write_output(to, pieces, rows)
        return
    emit_chunks(pieces)


def load(design: str | None, overrides: Sequence[str] | None) -> Any:
    from ampcalc.designs.document import load_designs  # lazy: > 20 ms
    from ampcalc.load.progress import CHUNK_ROWS, reading_progress  # lazy: start-up (--version)

    # a large record file (importance designs) shows the records read so far
    bar = lazy_progress_bar("reading records", start_at=CHUNK_ROWS)
    with bar as progress, reading_progress(progress):
        return load_designs(design if design is not None else None, overrides=overrides or ())


# ---- commands ---------------------------------------------------------------------------


DesignsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Design files (YAML); '-' reads standard input. Default: ./ampcalc.yaml. "
        "Several files: one table of all their designs, a JSON list of one document per "
        "file, the worst exit code.",
        metavar="DESIGN",
        show_default=False,
    ),
]


class FileResults:
    """The results of one design file (``dicts``), or the error that stopped it."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.designs: Sequence[Any] = ()
        self.dicts: list[dict[str, Any]] = []
        self.error: AmpcalcError | None = None


def each_file(
    paths: Sequence[str] | None,
    set_: Sequence[str] | None,
    compute: Callable[[Sequence[Any]], list[dict[str, Any]]],
) -> tuple[list[FileResults], ExitCode]:
    """Load every design file and ``compute`` its result dicts; a file that cannot be
    loaded is reported (exit 2) and the others still run. One file: its error is raised."""

    files: list[str | None] = list(paths) if paths else [None]
    out: list[FileResults] = []
    code = ExitCode.OK
    for path in files:
        entry = FileResults(path)
        try:
            entry.designs = load(path, set_)
        except AmpcalcError as err:
            if len(files) == 1:
                raise
            say(error_line(err))
            entry.error = err
            code = ExitCode.BAD_INPUT
        else:
            entry.dicts = compute(entry.designs)
            code = max(code, condition_errors(entry.designs, entry.dicts))
        out.append(entry)
    return out, code


def condition_errors(designs: Sequence[Any], dicts: Sequence[Mapping[str, Any]]) -> ExitCode:
    """Say each failed theorem condition once, at its design's place in the file."""
    code = ExitCode.OK
    for d, r in zip(designs, dicts, strict=True):
        if r.get("error"):
            where = getattr(d, "where", None)
            at = where.prefix() if where is not None and where.file else ""
            say(f"{at}{r['name']}: {r['error']}")
            code = ExitCode.BAD_INPUT
    return code


def _results_document(dicts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"results": dicts}


def emit_files(
    output: Format,
    command: str,
    files: list[FileResults],
    table: Callable[[list[dict[str, Any]]], TableText],
    to: str | None,
    document: Callable[[list[dict[str, Any]]], dict[str, Any]] = _results_document,
) -> None:
    """One file: its result as before. Several: one table (and CSV) of every design, and
    a JSON list of one document per file (``file`` added; an unreadable file's document
    is ``{"file", "error": {...}}``). ``document`` makes a file's JSON payload from its
    result dicts (default ``{"results": dicts}``)."""
    dicts = [r for f in files for r in f.dicts]
    if len(files) == 1:
        emit_result(
            output, command, document(dicts), csv=dicts, table=table(dicts), to=to,
            rows=len(dicts),
        )  # fmt: skip
        return
    records = [
        {"file": f.path if f.path is not None else "ampcalc.yaml", **r}
        for f in files
        for r in f.dicts
    ]
    emit_result(
        output, command, {"results": dicts}, csv=records, table=table(dicts), to=to,
        rows=len(dicts),
        chunks={"json": lambda: iter((_json_list(command, files, document),))},
    )  # fmt: skip


def _json_list(
    command: str,
    files: list[FileResults],
    document: Callable[[list[dict[str, Any]]], dict[str, Any]] = _results_document,
) -> str:
    """Several files' JSON: a list of each file's document, ``file`` first."""

    docs: list[Any] = []
    for f in files:
        name = f.path if f.path is not None else "ampcalc.yaml"
        if f.error is not None:
            err = f.error
            doc = error_document(error_kind(err), err.message, err.where, err.hint)
            docs.append({"file": name, **doc})
        else:
            text = result_text(Format.json, command, document(f.dicts))
            docs.append({"file": name, **json.loads(text)})
    return json.dumps(docs, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


@core.command(rich_help_panel="Bounds")
def bound(
    design: DesignsArg = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: SetOpt = None,
    epsilon: EpsilonOpt = None,
    details: DetailsOpt = False,
    fail_above: Annotated[
        float | None,
        typer.Option(
            "--fail-above",
            help="Exit 1 when any design's upper bound on ε′ is above this value or missing.",
            show_default=False,
        ),
    ] = None,
    out: OutputOpt = None,
) -> int:
    """Upper and lower bounds on ε′ (and δ′) for every design in the file(s).

    Example:  ampcalc bound examples/designs/srswor.yaml --json
    """
    output = resolve_format(fmt, as_json, out)
    check_option(fail_above, "--fail-above", "gate")
    from ampcalc import api  # lazy: start-up (--version)

    def compute(designs: Sequence[Any]) -> list[dict[str, Any]]:
        return [api.bound(d, epsilon=epsilon).to_dict() for d in designs]

    files, code = each_file(design, set_, compute)
    if fail_above is not None:
        for r in (r for f in files for r in f.dicts):
            upper = r["epsilon_prime"]["upper"]
            if r.get("error"):
                continue
            if upper is None or upper > fail_above:
                shown = "no upper bound" if upper is None else f"upper bound {upper:.6g}"
                say(f"gate failed: {r['name']}: {shown} > {fail_above:g}")
                code = max(code, ExitCode.GATE_FAILED)
    emit_files(output, "bound", files, lambda d: _results_table(d, "bound", details), out)
    return int(code)


def _results_table(dicts: list[dict[str, Any]], kind: str, details: bool = False) -> TableText:
    """The table of ``bound`` or ``invert`` results: one row per design, notes under it;
    a design that has no bound says why there too (also on stderr, at its place in the
    file), so the table alone reads whole."""

    def table(rich: bool) -> str:
        from ampcalc.output import render  # lazy: start-up (--version)

        rows_of = render.bound_rows if kind == "bound" else render.invert_rows
        header, rows = rows_of(dicts, details=details)
        return render.render_table(header, rows, render.notes(dicts), rich_output=rich)

    return table


@core.command(rich_help_panel="Bounds")
def invert(
    design: DesignsArg = None,
    target: Annotated[
        float | None,
        typer.Option(
            "--target",
            "-t",
            help="Target ε′ for the population (default: the file's `target: {epsilon_prime}`); "
            "designs calibrated to their target (pws, privacy-constrained importance) are "
            "rebuilt for it.",
            show_default=False,
        ),
    ] = None,
    target_delta: Annotated[
        float | None,
        typer.Option("--target-delta", help="Target δ′ for the population.", show_default=False),
    ] = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: SetOpt = None,
    details: DetailsOpt = False,
    solve: Annotated[
        str | None,
        typer.Option(
            "--solve",
            help="Solve for a named mechanism's noise instead of ε: sigma (gaussian) or "
            "scale (laplace).",
            show_default=False,
        ),
    ] = None,
    out: OutputOpt = None,
) -> int:
    """Largest mechanism ε certified for a target ε′, and the ε above which it surely fails.

    Example:  ampcalc invert examples/designs/srswor.yaml --target 1.0
    """
    output = resolve_format(fmt, as_json, out)
    check_option(target, "--target", "target")
    check_option(target_delta, "--target-delta", "target_delta")
    from ampcalc import api  # lazy: start-up (--version)

    if solve is not None:
        paths: list[str | None] = list(design) if design else [None]
        designs = [d for path in paths for d in load(path, set_)]
        return run_solve(designs, solve, target, target_delta, output, out)

    def compute(designs: Sequence[Any]) -> list[dict[str, Any]]:
        return [api.invert(d, target, target_delta).to_dict() for d in designs]

    files, code = each_file(design, set_, compute)
    emit_files(output, "invert", files, lambda d: _results_table(d, "invert", details), out)
    return int(code)


# ---- the boundary -------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run ampcalc with ``argv`` (default ``sys.argv[1:]``) and return the exit code.

    Standard output or error closed by the caller (``>&-``, ``2>&-``) stand in as
    ``ClosedOutput`` and ``Discard`` for the run."""
    stand_ins = {
        name: stand_in
        for name, stand_in in (("stdout", ClosedOutput()), ("stderr", Discard()))
        if getattr(sys, name) is None
    }
    for name, stand_in in stand_ins.items():
        setattr(sys, name, stand_in)
    try:
        return _main(argv)
    finally:
        for name, stand_in in stand_ins.items():
            if getattr(sys, name) is stand_in:
                setattr(sys, name, None)


#: errors of a write to a stream (no file name): a full disk or quota, a file grown past
#: its size limit, a closed descriptor, a terminal gone
_STREAM_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EFBIG, errno.EBADF, errno.EIO, getattr(errno, "EDQUOT", errno.ENOSPC)}
)


def _stdout_failure(err: OSError) -> OSError | None:
    """Whether ``err`` is standard output failing, for a command that writes it itself
    (not through ``emit_chunks``): an error of a write to a stream, or standard output
    failing to flush now. Output files are written by ``atomic_write``, which names
    them in its own errors."""
    if err.filename is None and err.errno in _STREAM_ERRNOS:
        return err
    try:
        sys.stdout.flush()
    except OSError as exc:
        return exc
    except (AttributeError, ValueError):
        return None
    return None


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = json_requested(args)
    reset_inputs()
    try:
        with interruptible():
            rv = app(args=args, prog_name="ampcalc", standalone_mode=False)
    except Interrupted as sig:
        report_error(sig.message(), as_json, "interrupted", sig.message())
        return sig.exit_code
    except typer.Abort:
        report_error("ampcalc: error: aborted", as_json, "interrupted", "aborted")
        return int(ExitCode.BAD_INPUT)
    except _ClickException as err:
        if type(err).__name__ == "NoArgsIsHelpError":
            with contextlib.suppress(OSError):  # stdout closed: exit 2 says enough
                err.show()  # type: ignore[attr-defined]  # prints the help, as asked
            return int(ExitCode.BAD_INPUT)
        # one line, no typer `Usage:` block: the option and what is wrong with its value
        message = click_message(err)
        report_error(f"ampcalc: error: {message}", as_json, "usage", message, click_where(err))
        return int(ExitCode.BAD_INPUT)
    except AmpcalcError as err:
        report_error(error_line(err), as_json, error_kind(err), err.message, err.where, err.hint)
        return int(ExitCode.BAD_INPUT)
    except typer.Exit as err:  # pragma: no cover - typer returns these in non-standalone
        return int(err.exit_code)
    except Exception as err:
        if isinstance(err, OSError) and (failed := _stdout_failure(err)) is not None:
            silence_stream(sys.stdout)
            message = write_failed("standard output", failed)
            report_error(f"ampcalc: error: {message}", as_json, "error", message)
            return int(ExitCode.BAD_INPUT)
        message = "internal error, please report (set AMPCALC_DEBUG=1 for details)"
        report_error(f"ampcalc: error: {message}", as_json, "internal", message)
        if os.environ.get("AMPCALC_DEBUG") == "1":
            traceback.print_exc(file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    if rv is None:
        return int(ExitCode.OK)
    return int(rv)


def run() -> None:
    """Console-script entry point."""
    hold_standard_descriptors()
    code = main()
    # The interpreter's teardown garbage-collects every object still alive, several
    # times: the whole typer/pydantic/numpy stack, 0.05-0.15 s after the command is
    # done. Frozen objects are left out of those collections (stdout and stderr are
    # still flushed, atexit handlers and thread joins still run).
    gc.freeze()
    sys.exit(code)


# ---- invert --solve: noise calibration for named mechanisms -----------------------------
# JSON: ``invert``'s, with M's ``epsilon`` null and the calibrated noise under ``knob``:
# ``{name: sigma|scale, mechanism, sensitivity, value, impossible_below,
# epsilon_prime_at_value}`` (``details.inverse`` says how it was found).


def run_solve(
    designs: Sequence[Any],
    knob: str,
    target: float | None,
    target_delta: float | None,
    output: Format,
    to: str | None = None,
) -> int:
    """Calibrate every design's noise to the target and print the results."""
    from ampcalc import api  # lazy: start-up (--version)

    results = []
    for d in designs:
        t = target
        if t is None and d.target is not None:
            t = d.target.epsilon_prime
        if t is None:
            raise DesignError(
                f"design {d.name!r}: no target; give --target T or `target: {{epsilon_prime: T}}`"
            )
        results.append(api.calibrate(d, knob, float(t), target_delta))
    code = ExitCode.OK
    for r in results:
        if r["knob"]["value"] is None:
            say(f"{r['name']}: no {knob} meets the target ε′ in the searched range")
    emit_result(
        output,
        "invert",
        {"results": results},
        csv=results,
        table=lambda rich: _table(results, rich),
        to=to,
        rows=len(results),
    )
    return int(code)


def _table(results: list[dict[str, Any]], rich: bool) -> str:
    from ampcalc.output.render import fmt, render_table  # lazy: start-up (--version)

    header = ["design", "scheme", "target ε′", "δ′", "solve", NOISE_CERTIFIED, NOISE_IMPOSSIBLE]
    rows = [
        [
            r["name"],
            r["scheme"],
            fmt(r["target"]["epsilon_prime"]),
            fmt(r["target"]["delta_prime"]),
            f"{r['knob']['mechanism']} {r['knob']['name']}",
            fmt(r["knob"]["value"]),
            fmt(r["knob"]["impossible_below"]),
        ]
        for r in results
    ]
    footer = [
        plain_references(
            f"{r['name']}: ε′ at the certified {r['knob']['name']}: "
            f"{fmt(r['knob']['epsilon_prime_at_value'])}; "
            + "; ".join([*r["warnings"], *r.get("notes", [])])
        )
        for r in results
    ]
    footer.append(GLOSSARY_LINE)
    return render_table(header, rows, footer, rich_output=rich)


# Every command, in the order of ``ampcalc --help``, with the modules (ampcalc/cli/NAME.py)
# that define it; "app" is this module (its commands are on ``core``). A further module
# attaches its commands to ``app`` when imported (each imports its heavy dependencies
# inside the command function and prints through ``emit_result``), and is imported only
# when one of its commands is asked for (``CommandLine``). To add a command, add its row
# here and name its panel with ``@app.command(rich_help_panel=...)``.
COMMANDS: dict[str, tuple[str, ...]] = {
    # Bounds
    "bound": ("app",),
    "invert": ("app",),
    "check": ("check",),
    "sweep": ("sweep",),
    "compare": ("compare",),
    # Budget and planning
    "budget": ("budget",),
    "plan": ("plan",),
    "report": ("report",),
    # Records
    "weights": ("weights",),
    "pws": ("pws", "pws_keys"),
    # Checks and reference
    "verify": ("verify",),
    "validate": ("reference",),
    "schemes": ("reference",),
    "examples": ("shipped",),
    "docs": ("shipped",),
    "completion": ("completion",),
}
