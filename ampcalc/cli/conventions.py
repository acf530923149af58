"""What every command shares: ``-o/--output``, progress bars, the error printer, help.

- ``OutputOpt`` and ``write_output``: a command's result goes to a file through
  ``load.files.atomic_write`` (a temporary file in the same directory, renamed into
  place only when the writing finished), then ``wrote N rows to FILE`` on stderr.
- ``progress_bar``: library code reports progress through a ``progress(done, total)``
  callback; this turns it into a rich progress bar on stderr, or into nothing when
  stderr is not a terminal.
- ``report_error``: the one error style: ``file:line:col: field: message`` for input
  errors, ``ampcalc: error: message`` for everything else, and with ``--json`` the same
  error as ``{"error": {...}}`` on standard output.
- ``AmpcalcGroup``: the help conventions (no ``<bool>`` after flags, upper-case
  argument names, values named ``FILE``, ``FLOAT``, ``TEXT``, ``FORMAT`` rather than by
  Python type, the example paragraph as the epilog), applied to every command once.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import os
import sys
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperArgument, TyperGroup

from ampcalc.load.files import atomic_write, show_path
from ampcalc.model.errors import AmpcalcError, ConditionError, Where, printable

#: the progress callback library code takes: ``progress(done, total)``
Progress = Callable[[int, int], None]

OutputOpt = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        help="Write the result to this file instead of standard output (replaced whole, "
        "never left half-written); format from --format, else the suffix "
        "(.json, .csv), else a table.",
        metavar="FILE",
        show_default=False,
    ),
]


# ---- the Dask engine's options (weights, pws sanitize) -----------------------------------

WorkersOpt = Annotated[
    int, typer.Option("--workers", help="Dask engine: workers of the local cluster.")
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Dask engine: address of a running scheduler, or "
        "synchronous|threads|processes (default: a local cluster).",
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
SummaryJsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the run's summary as JSON (needs --output).")
]


# ---- output files -----------------------------------------------------------------------


def format_from_suffix(path: str | None) -> str | None:
    """``json`` or ``csv`` from an output file's suffix, else None."""
    if path is None:
        return None
    suffix = os.path.splitext(path)[1].lower()
    return {".json": "json", ".csv": "csv"}.get(suffix)


Chunk = str | bytes | memoryview
"""A piece of a command's output: text, or its UTF-8 bytes (large outputs assembled as
bytes are written without being decoded and encoded again)."""


def write_chunk(fh: Any, chunk: Chunk) -> None:
    """Write one chunk to the text stream ``fh``: bytes go straight to its binary buffer
    (after what is pending in the text layer) when the stream writes UTF-8 with no
    newline translation, else as text."""
    if isinstance(chunk, str):
        fh.write(chunk)
        return
    if _writes_utf8(fh):
        fh.flush()
        fh.buffer.write(chunk)
    else:
        fh.write(str(chunk, "utf-8"))


def _writes_utf8(fh: Any) -> bool:
    try:
        encoding = codecs.lookup(fh.encoding).name
    except (AttributeError, LookupError, TypeError):
        return False
    return encoding == "utf-8" and os.linesep == "\n" and hasattr(fh, "buffer")


def write_output(path: str, chunks: Iterable[Chunk], rows: int | None) -> None:
    """Write ``chunks`` to ``path`` atomically and say ``wrote N rows to FILE``.

    An exception while the chunks are made or written (an interrupt included) leaves
    an existing ``path`` as it was: the temporary file is removed, nothing is renamed.
    """

    with atomic_write(path) as fh:
        for chunk in chunks:
            write_chunk(fh, chunk)
    say(wrote_message(path, rows))


def wrote_message(path: str, rows: int | None) -> str:
    if rows is None:
        return f"wrote {show_path(path)}"
    return f"wrote {rows} row{'' if rows == 1 else 's'} to {show_path(path)}"


#: longest message line written to stderr; a longer one (some text of a user's that was
#: not quoted through ``model.errors.quote``) is cut, its length noted
MESSAGE_CHARS = 4000


def say(message: str) -> None:
    """One message on stderr: control and bidirectional characters escaped (a design's
    name reaches the terminal as text, never as a command to it), at most
    ``MESSAGE_CHARS`` characters. A stderr that cannot be written (closed, a full disk)
    loses the message, never the exit code: there is nowhere else to say it."""
    text = message.rstrip("\n")
    if len(text) > MESSAGE_CHARS:
        text = f"{text[:MESSAGE_CHARS]}… ({len(text):,} characters)"
    try:
        sys.stderr.write(printable(text, keep="\n") + "\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        silence_stream(sys.stderr)


def dashboard_note(url: str) -> None:
    """``--dashboard`` of the Dask engine: where the dashboard is (stderr)."""
    say(f"Dask dashboard: {url}")


def silence_stream(stream: Any) -> None:
    """Point ``stream``'s descriptor at the null device (what it still buffers, and
    anything written later, goes nowhere: the interpreter's last flush cannot fail)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


# ---- progress -----------------------------------------------------------------------------


def progress_enabled() -> bool:
    """Progress bars only on a terminal (never in a pipe, a log or CI)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def progress_bar(description: str, total: int | None = None) -> Iterator[Progress | None]:
    """A ``progress(done, total)`` callback drawing a transient bar on stderr, or None
    (nothing drawn, nothing imported) when stderr is not a terminal. A total <= 0 is
    unknown: the bar then counts without an end."""
    if not progress_enabled():
        yield None
        return
    from rich.console import Console  # lazy: start-up (--version)
    from rich.progress import (  # lazy: start-up (--version)
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task(description, total=total)

    def update(done: int, new_total: int) -> None:
        bar.update(task, completed=done, total=new_total if new_total > 0 else None)

    bar.start()
    try:
        yield update
    finally:
        bar.stop()


@contextlib.contextmanager
def lazy_progress_bar(description: str, start_at: int = 1) -> Iterator[Progress | None]:
    """Like ``progress_bar``, but the bar appears only once ``done`` reaches ``start_at``:
    small work (a file read in one chunk) draws nothing."""
    if not progress_enabled():
        yield None
        return
    with contextlib.ExitStack() as stack:
        bar: list[Progress] = []

        def update(done: int, total: int) -> None:
            if not bar and done < start_at:
                return
            if not bar:
                started = stack.enter_context(progress_bar(description))
                assert started is not None
                bar.append(started)
            bar[0](done, total)

        yield update


# ---- errors -------------------------------------------------------------------------------


def json_requested(args: Sequence[str]) -> bool:
    """Whether the command line asks for JSON (``--json``, ``--format json``, ``-f json``)."""
    args = list(args)
    if "--" in args:
        args = args[: args.index("--")]
    for i, a in enumerate(args):
        if a == "--json" or a in ("--format=json", "-fjson"):
            return True
        if a in ("--format", "-f") and i + 1 < len(args) and args[i + 1] == "json":
            return True
    return False


def error_document(
    kind: str, message: str, where: Where | None = None, hint: str | None = None
) -> dict[str, Any]:
    """``{"error": {kind, message, file, line, column, field}}`` (unknown parts null)."""
    w = where or Where()
    text = message if not hint else f"{message} ({hint})"
    return {
        "error": {
            "kind": kind,
            "message": text,
            "file": w.file,
            "line": w.line,
            "column": w.column,
            "field": w.field,
        }
    }


def error_kind(err: AmpcalcError) -> str:
    """``condition`` (a theorem's condition fails), ``input`` (a place in the input is
    wrong) or ``error`` (anything else the user must fix)."""
    if isinstance(err, ConditionError):
        return "condition"
    where = err.where
    if where is not None and (where.file or where.field):
        return "input"
    return "error"


def error_line(err: AmpcalcError) -> str:
    """``file:line:col: field: message`` for an input error, else ``ampcalc: error: ...``."""
    where = err.where
    if where is not None and where.file:
        return str(err)
    return f"ampcalc: error: {err}"


def report_error(
    message_line: str,
    as_json: bool,
    kind: str,
    message: str,
    where: Where | None = None,
    hint: str | None = None,
) -> None:
    """Print ``message_line`` on stderr and, with ``as_json``, the error document on stdout."""
    say(message_line)
    if as_json:
        from ampcalc.output.render import json_escape_controls  # lazy: start-up (--version)

        text = json.dumps(error_document(kind, message, where, hint), ensure_ascii=False)
        text = json_escape_controls(text)
        try:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        except (AttributeError, OSError, ValueError):  # stdout closed or full: stderr said it
            silence_stream(sys.stdout)


def click_message(err: Exception) -> str:
    """A click error's message without its ``Usage:`` block, ``Error:`` prefix or the
    ``Try '... -h' for help`` line."""
    fmt = getattr(err, "format_message", None)
    text = str(fmt()) if callable(fmt) else str(err)
    return " ".join(text.split())


def click_where(err: Exception) -> Where | None:
    """The option or argument a click usage error names, as a ``Where`` field."""
    param = getattr(err, "param", None)
    hint = getattr(err, "param_hint", None)
    if param is not None:
        opts = getattr(param, "opts", None) or []
        longest = max(opts, key=len) if opts else getattr(param, "name", None)
        return Where(field=str(longest)) if longest else None
    if isinstance(hint, str) and hint:
        return Where(field=hint)
    return None


# ---- help -----------------------------------------------------------------------------------

EXAMPLE = "Example"


def _split_example(help_text: str) -> tuple[str, str | None]:
    """A docstring's ``Example:`` paragraphs (to the end) and the text before them."""
    paragraphs = help_text.split("\n\n")
    for i, p in enumerate(paragraphs):
        if p.strip().startswith(EXAMPLE):
            body = "\n\n".join(paragraphs[:i]).rstrip()
            return body, "\n\n".join(q.strip("\n") for q in paragraphs[i:])
    return help_text, None


#: the value an option takes, by its type's name, as the help shows it (never a Python
#: type such as ``<str>`` or ``<list[str]>``)
VALUE_NAMES = {
    "str": "TEXT",
    "text": "TEXT",
    "float": "FLOAT",
    "float range": "FLOAT",
    "int": "INTEGER",
    "integer": "INTEGER",
    "integer range": "INTEGER",
    "path": "PATH",
    "filename": "FILE",
}


def value_name(param: Any) -> str | None:
    """The help's name for an option's value: its long name upper-cased for a choice
    (``--format FORMAT``: the option's help lists the choices), else ``VALUE_NAMES``
    of its type (``TEXT``, ``FLOAT``, ``INTEGER``; a repeatable option's element type);
    None when the type is not known there."""
    click_type = getattr(param, "type", None)  # typer on click: click's parameter type
    described = getattr(param, "type_descriptor", None)  # typer with its own parser
    source = click_type if click_type is not None else described
    if source is None:
        return None
    if getattr(source, "choices", None) is not None:
        longest: str = max(param.opts, key=len)
        return longest.lstrip("-").replace("-", "_").upper()
    if click_type is not None:
        type_name = str(getattr(click_type, "name", ""))
    else:
        assert described is not None  # source is one of the two
        annotation = described.annotation
        if typing.get_origin(annotation) is list and typing.get_args(annotation):
            annotation = typing.get_args(annotation)[0]
        type_name = str(getattr(annotation, "__name__", ""))
    return VALUE_NAMES.get(type_name.lower())


def _no_type(ctx: Any) -> None:
    """An argument's type column in the help: empty (its name says what it takes)."""
    return None


def _fix_params(command: Any) -> None:
    for param in getattr(command, "params", []):
        if isinstance(param, TyperArgument):
            if param.metavar is None and param.name:
                param.metavar = param.name.upper()  # DESIGN, SAMPLE, LEDGER, SHELL
            # the argument's name (DESIGN) is its value's name: no "<list[str]>" beside it
            param.display_type_rich = _no_type  # type: ignore[method-assign]
        elif getattr(param, "is_flag", False) or getattr(param, "count", False):
            param.metavar = ""  # a flag takes no value: no "<bool>" after it
        elif param.metavar is not None:
            continue
        elif param.name == "design":
            param.metavar = "DESIGN"  # `pws ... --design DESIGN`, as the argument
        elif param.name == "output":
            param.metavar = "FILE"  # `-o FILE` everywhere
        else:
            param.metavar = value_name(param)  # FLOAT, TEXT, FORMAT: no Python types


def _flag_help_option(command: Any) -> None:
    """``-h/--help`` is made per context by click: give it no type either."""
    make = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        option = make(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = get_help_option


def conventions(command: Any) -> None:
    """Apply the help conventions to ``command`` and, for a group, to its subcommands."""
    _fix_params(command)
    _flag_help_option(command)
    help_text = getattr(command, "help", None)
    if help_text and not getattr(command, "epilog", None):
        body, example = _split_example(help_text)
        if example is not None:
            command.help = body
            command.epilog = example
    for sub in getattr(command, "commands", {}).values():
        conventions(sub)


class AmpcalcGroup(TyperGroup):
    """The root command group: every command gets the help conventions once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        conventions(self)

    def get_params(self, ctx: Any) -> list[Any]:
        _fix_params(self)  # typer adds --install-completion after __init__
        return list(super().get_params(ctx))


# ---- standard streams the caller closed ------------------------------------------------


class ClosedOutput:
    """Standard output closed by the caller (``>&-``: Python leaves ``sys.stdout``
    None): writing it fails as a closed descriptor does, so a result that cannot be
    written is an error (exit 2), not silently lost."""

    encoding = None

    def write(self, _text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self) -> None:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def isatty(self) -> bool:
        return False


class Discard:
    """Standard error closed by the caller (``2>&-``): messages go nowhere, and the
    exit code still says what happened."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def hold_standard_descriptors() -> None:
    """Open the null device on descriptors 0-2 the caller closed (``>&-``): otherwise
    the next file opened (a design, a temporary output file) takes that number, and
    anything a library writes to "standard error" at the C level lands in it. Python
    has already set the closed streams to None, which ``main`` reports."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
