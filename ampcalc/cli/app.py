"""The command line: parse options, call the library, render, choose the exit code.

No maths and no YAML here. ``main(argv) -> int`` is the one place that maps outcomes
to exit codes: 0 ok, 1 a gate the user asked for failed (``--fail-above``), 2 bad
input or a design outside its theorem's conditions (and internal errors), 3 a
self-check found one of ampcalc's own bounds violated. The highest code wins.
SIGINT and SIGTERM stop the run with one line on stderr and exit 130 and 143
(``fileio.interruptible``); output files are only ever renamed into place whole.
"""

from __future__ import annotations

import enum
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ampcalc.model.errors import AmpcalcError

if TYPE_CHECKING:
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
    from ampcalc._version import __version__

    return __version__


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"ampcalc {version()}\n")
        raise typer.Exit(0)


app = typer.Typer(
    name="ampcalc",
    help=(
        "Privacy amplification by sampling: sound upper and lower bounds on the "
        "population-level ε′ of an ε-DP mechanism run on a sample, and their inverses.\n\n"
        "Example:  ampcalc bound examples/designs/srswor.yaml"
    ),
    add_completion=True,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version."
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
EpsilonOpt = Annotated[
    float | None,
    typer.Option("--epsilon", help="Override the mechanism's ε.", show_default=False),
]


def resolve_format(fmt: Format | None, as_json: bool) -> Format:
    if as_json and fmt not in (None, Format.json):
        raise typer.BadParameter(
            "--json and --format csv/table contradict each other", param_hint="--format"
        )
    if as_json:
        return Format.json
    return fmt or Format.table


def emit(text: str) -> None:
    emit_chunks((text,))


def emit_chunks(chunks: Iterable[str]) -> None:
    """Write to standard output, each piece as it comes (a large sweep in chunks)."""
    try:
        for chunk in chunks:
            sys.stdout.write(chunk)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): keep the exit code of the computation
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def rich_output() -> bool:
    return sys.stdout.isatty()


def result_text(
    output: Format,
    command: str,
    payload: Payload,
    *,
    csv: CsvRecords | None = None,
    table: TableText | None = None,
) -> str:
    """A command's result as a table, JSON or CSV (``render.render_result``).

    JSON is ``{"ampcalc_version", "command", **payload}``, CSV the records flattened (or
    ``csv()``'s text), the table ``table(rich)`` with ``rich`` true on a terminal. Only
    the chosen rendering is computed; a command without a table or CSV passes None.
    """
    from ampcalc.output.render import render_result

    return render_result(
        output.value,
        command=command,
        version=version(),
        payload=payload,
        csv=csv,
        table=table,
        rich_output=output is Format.table and rich_output(),
    )


def emit_result(
    output: Format,
    command: str,
    payload: Payload,
    *,
    csv: CsvRecords | None = None,
    table: TableText | None = None,
    chunks: Mapping[str, Callable[[], Iterator[str] | None]] | None = None,
) -> None:
    """Write a command's result to standard output as a table, JSON or CSV.

    Every command prints its result through here (see ``result_text``), so the
    choice between the three formats is made in one place. ``chunks`` maps a format
    to a function writing that format's same text in pieces (or returning None: then
    the text is rendered as usual), for results too large to hold as one string.
    """
    make = (chunks or {}).get(output.value)
    pieces = make() if make is not None else None
    if pieces is not None:
        emit_chunks(pieces)
        return
    emit(result_text(output, command, payload, csv=csv, table=table))


def say(message: str) -> None:
    sys.stderr.write(message.rstrip("\n") + "\n")


def load(design: str | None, overrides: Sequence[str] | None) -> Any:
    from ampcalc.designs.document import load_designs

    return load_designs(design if design is not None else None, overrides=overrides or ())


# ---- commands ---------------------------------------------------------------------------


@app.command()
def bound(
    design: DesignArg = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: SetOpt = None,
    epsilon: EpsilonOpt = None,
    fail_above: Annotated[
        float | None,
        typer.Option(
            "--fail-above",
            help="Exit 1 when any design's upper bound on ε′ is above this value or missing.",
            show_default=False,
        ),
    ] = None,
) -> int:
    """Upper and lower bounds on ε′ (and δ′) for every design in the file.

    Example:  ampcalc bound examples/designs/srswor.yaml --json
    """
    output = resolve_format(fmt, as_json)
    from ampcalc import api

    designs = load(design, set_)
    results = [api.bound(d, epsilon=epsilon) for d in designs]
    dicts = [r.to_dict() for r in results]
    code = ExitCode.OK
    for r in dicts:
        if r.get("error"):
            say(f"{r['name']}: {r['error']}")
            code = max(code, ExitCode.BAD_INPUT)
    if fail_above is not None:
        for r in dicts:
            upper = r["epsilon_prime"]["upper"]
            if r.get("error"):
                continue
            if upper is None or upper > fail_above:
                shown = "no upper bound" if upper is None else f"upper bound {upper:.6g}"
                say(f"gate failed: {r['name']}: {shown} > {fail_above:g}")
                code = max(code, ExitCode.GATE_FAILED)
    emit_result(
        output, "bound", {"results": dicts}, csv=dicts, table=_results_table(dicts, "bound")
    )
    return int(code)


def _results_table(dicts: list[dict[str, Any]], kind: str) -> TableText:
    """The table of ``bound`` or ``invert`` results: one row per design, notes under it."""

    def table(rich: bool) -> str:
        from ampcalc.output import render

        rows_of = render.bound_rows if kind == "bound" else render.invert_rows
        header, rows = rows_of(dicts)
        return render.render_table(header, rows, render.notes(dicts), rich_output=rich)

    return table


@app.command()
def invert(
    design: DesignArg = None,
    target: Annotated[
        float | None,
        typer.Option(
            "--target",
            "-t",
            help="Target ε′ for the population (default: the file's target.epsilon_prime).",
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
    solve: Annotated[
        str | None,
        typer.Option(
            "--solve",
            help="Solve for a named mechanism's noise instead of ε: sigma (gaussian) or "
            "scale (laplace).",
            show_default=False,
        ),
    ] = None,
) -> int:
    """Largest mechanism ε certified for a target ε′, and the ε above which it surely fails.

    Example:  ampcalc invert examples/designs/srswor.yaml --target 1.0
    """
    output = resolve_format(fmt, as_json)
    from ampcalc import api

    designs = load(design, set_)
    if solve is not None:
        return run_solve(designs, solve, target, target_delta, output)
    results = [api.invert(d, target, target_delta) for d in designs]
    dicts = [r.to_dict() for r in results]
    code = ExitCode.OK
    for r in dicts:
        if r.get("error"):
            say(f"{r['name']}: {r['error']}")
            code = max(code, ExitCode.BAD_INPUT)
    emit_result(
        output, "invert", {"results": dicts}, csv=dicts, table=_results_table(dicts, "invert")
    )
    return int(code)


@app.command("schemes")
def schemes_cmd(fmt: FormatOpt = None, as_json: JsonOpt = False) -> int:
    """Every sampling scheme: its parameters, the relation M must satisfy, its basis.

    Example:  ampcalc schemes --json
    """
    output = resolve_format(fmt, as_json)
    from ampcalc import api

    items = api.schemes()

    def table(rich: bool) -> str:
        from ampcalc.model.references import describe_all
        from ampcalc.model.references import footer as references_footer
        from ampcalc.output import render

        header = ["scheme", "guarantee", "what it is"]
        rows = [[i["name"], ", ".join(i["guarantee_neighbours"]), i["summary"]] for i in items]
        footer = [
            f"{i['name']}:\n"
            f"  - parameters (* required): "
            + ", ".join(p["name"] + ("*" if p["required"] else "") for p in i["parameters"])
            + f"\n  - M's relation: {i['mechanism_neighbours']}"
            + f"\n  - basis: {describe_all(i['basis'])}"
            for i in items
        ]
        footer += references_footer(items)
        return render.render_table(header, rows, footer, rich_output=rich)

    records = ({**i, "parameters": [p["name"] for p in i["parameters"]]} for i in items)
    emit_result(output, "schemes", {"schemes": items}, csv=records, table=table)
    return int(ExitCode.OK)


@app.command()
def validate(
    design: DesignArg = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: SetOpt = None,
) -> int:
    """Check a design file (syntax, fields, theorem conditions) without computing bounds.

    Example:  ampcalc validate examples/designs/srswor.yaml
    """
    output = resolve_format(fmt, as_json)
    from ampcalc import api

    dicts = api.validate(load(design, set_))
    code = ExitCode.OK
    for entry in dicts:
        if not entry["valid"]:
            say(f"{entry['name']}: {entry['error']}")
            code = ExitCode.BAD_INPUT

    def table(rich: bool) -> str:
        from ampcalc.output import render

        header = ["design", "scheme", "valid"]
        rows = [[e["name"], e["scheme"], "yes" if e["valid"] else "error"] for e in dicts]
        footer = [f"{e['name']}: error: {e['error']}" for e in dicts if e.get("error")]
        return render.render_table(header, rows, footer, rich_output=rich)

    emit_result(output, "validate", {"results": dicts}, csv=dicts, table=table)
    return int(code)


# ---- the boundary -------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run ampcalc with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    from ampcalc.load.files import Interrupted, interruptible, reset_inputs

    args = list(sys.argv[1:] if argv is None else argv)
    reset_inputs()
    try:
        with interruptible():
            rv = app(args=args, prog_name="ampcalc", standalone_mode=False)
    except Interrupted as sig:
        say(sig.message())
        return sig.exit_code
    except typer.Abort:
        say("aborted")
        return int(ExitCode.BAD_INPUT)
    except _ClickException as err:
        err.show()  # type: ignore[attr-defined]  # a ClickException (found at run time)
        return int(ExitCode.BAD_INPUT)
    except AmpcalcError as err:
        where = err.where
        say(str(err) if where and where.file else f"ampcalc: error: {err}")
        return int(ExitCode.BAD_INPUT)
    except typer.Exit as err:  # pragma: no cover - typer returns these in non-standalone
        return int(err.exit_code)
    except Exception:
        say("ampcalc: internal error, please report (set AMPCALC_DEBUG=1 for details)")
        if os.environ.get("AMPCALC_DEBUG") == "1":
            traceback.print_exc()
        return int(ExitCode.BAD_INPUT)
    if rv is None:
        return int(ExitCode.OK)
    return int(rv)


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


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
) -> int:
    """Calibrate every design's noise to the target and print the results."""
    from ampcalc.analyses.calibrate import solve
    from ampcalc.model.errors import DesignError

    results = []
    for d in designs:
        t = target
        if t is None and d.target is not None:
            t = d.target.epsilon_prime
        if t is None:
            raise DesignError(
                f"design {d.name!r}: no target; give --target T or `target: {{epsilon_prime: T}}`"
            )
        results.append(solve(d, knob, float(t), target_delta))
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
    )
    return int(code)


def _table(results: list[dict[str, Any]], rich: bool) -> str:
    from ampcalc.output.render import fmt, render_table

    header = ["design", "scheme", "target ε′", "δ′", "solve", "certified", "impossible below"]
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
        f"{r['name']}: ε′ at the certified {r['knob']['name']}: "
        f"{fmt(r['knob']['epsilon_prime_at_value'])}; " + "; ".join(r["warnings"])
        for r in results
    ]
    return render_table(header, rows, footer, rich_output=rich)


# Further commands live in ampcalc/cli/<name>.py, one module per command, and attach
# themselves to ``app`` when imported (each imports its heavy dependencies inside the
# command function and prints through ``emit_result``). To add one, append its module
# name here.
COMMAND_MODULES: tuple[str, ...] = (
    "sweep",
    "check",
    "weights",
    "completion",
    "compare",
    "pws",
    "verify",
    "plan",
    "budget",
    "pws_keys",
)


def _register_commands() -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"ampcalc.cli.{name}")


_register_commands()
