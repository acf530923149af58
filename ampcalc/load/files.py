"""Files in and out: one place that opens data files and writes output files.

- ``open_input``: every data file (cluster sizes, size measures, strata, pmf, plan data,
  importance records, pws samples, design files) is opened here. Anything that is not
  a regular file (a directory, a FIFO, a device such as ``/dev/zero``) is refused before
  a byte is read, a size limit from ``ampcalc.model.limits`` is checked from the file's size,
  and the file is remembered as an input of the run.
- ``atomic_write``: every output file is written to a temporary file in the same
  directory and renamed over the target only when the writing finished; an output that
  is the same file as an input (same device and inode: links and relative paths
  included) is refused before anything is written.
- ``interruptible``: SIGINT and SIGTERM raise ``Interrupted`` (a ``BaseException``, so
  the temporary files are removed on the way out); the command line reports it in one
  line and exits 128 + the signal number.
- ``excerpt``: a short, escaped quote of text taken from a user's file, for messages.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numpy.typing import NDArray

import warnings

import numpy as np

from ampcalc.model.errors import QUOTE_CHARS, AmpcalcError, DesignError, printable, quote

ErrorFn = Callable[[str], Exception]

#: longest excerpt of a file's content quoted in a message (characters, before escaping)
EXCERPT_CHARS = QUOTE_CHARS
#: longest path shown whole in a message; longer ones keep their head and tail
PATH_CHARS = 160

TEMP_SUFFIX = ".tmp"
_WRITE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EIO, getattr(errno, "EDQUOT", errno.ENOSPC)}


# --------------------------------------------------------------------------------------
# Quoting user text
# --------------------------------------------------------------------------------------


def excerpt(text: str | bytes, limit: int = EXCERPT_CHARS) -> str:
    """At most ``limit`` characters of ``text``, escaped, with the full length noted when
    cut (``model.errors.quote``, the one way a message quotes a user's text).

    Content from a user's file (a header line, a cell) goes through this before it is
    quoted in a message, so naming the wrong file never pastes its contents into a log.
    """
    return quote(text, limit)


def excerpt_names(names: Iterable[str], limit: int = EXCERPT_CHARS) -> str:
    """Column names for a message: ``a, b, c`` as they are when short and printable,
    else an ``excerpt`` of the list."""
    joined = ", ".join(names)
    if len(joined) <= limit and joined.isprintable():
        return joined
    return excerpt(joined, limit)


def show_path(path: str | os.PathLike[str]) -> str:
    """A path for a message (control characters escaped): whole up to ``PATH_CHARS``
    characters, else head…tail."""
    text = os.fspath(path)
    text = printable(text.encode("utf-8", "backslashreplace").decode("utf-8"))
    if len(text) <= PATH_CHARS:
        return text
    half = PATH_CHARS // 2 - 1
    return f"{text[:half]}…{text[-half:]}"


def _default_error(message: str) -> Exception:
    return DesignError(message)


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------

_INPUTS: dict[tuple[int, int], str] = {}
_INPUTS_LOCK = threading.Lock()


def reset_inputs() -> None:
    """Forget the inputs of an earlier run (the command line calls this per run)."""
    with _INPUTS_LOCK:
        _INPUTS.clear()


def note_input(st: os.stat_result, name: str) -> None:
    """Remember a file the run reads (by device and inode)."""
    if stat.S_ISREG(st.st_mode):
        with _INPUTS_LOCK:
            _INPUTS.setdefault((st.st_dev, st.st_ino), name)


def note_stdin() -> None:
    """Remember standard input when it is a regular file (``- < file``)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        note_input(os.fstat(sys.stdin.fileno()), "<stdin>")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def write_failed(name: str, exc: OSError) -> str:
    """``cannot write NAME: no space left on device`` (the system's reason, lower case;
    a descriptor closed or opened for reading only says so)."""
    if exc.errno == errno.EBADF:
        reason = "it is closed or not open for writing"
    else:
        reason = _os_reason(exc)
        reason = reason[:1].lower() + reason[1:]
    return f"cannot write {name}: {reason}"


def nul_in_name(path: str | bytes | os.PathLike[Any], what: str) -> str | None:
    """The message for a file name holding a NUL byte (no system call takes one), else
    None."""
    text = os.fspath(path)
    if (b"\0" if isinstance(text, bytes) else "\0") not in text:
        return None
    return f"{what} name {excerpt(text)} contains a NUL byte; no file name can hold one"


def stdin_unreadable(exc: BaseException | None = None) -> str:
    """The message for standard input closed by the caller (``<&-``) or failing."""
    if exc is None or (isinstance(exc, OSError) and exc.errno == errno.EBADF):
        return "cannot read standard input: it is closed"
    reason = _os_reason(exc) if isinstance(exc, OSError) else str(exc)
    return f"cannot read standard input: {reason[:1].lower() + reason[1:]}"


def stdin() -> Any:
    """``sys.stdin``, or an input error when the caller closed it (``<&-``: Python then
    leaves ``sys.stdin`` None)."""
    if sys.stdin is None:
        raise DesignError(stdin_unreadable())
    return sys.stdin


def open_input(
    path: str | os.PathLike[str],
    *,
    what: str = "data file",
    binary: bool = False,
    encoding: str = "utf-8",
    errors: str = "strict",
    newline: str | None = None,
    max_bytes: int | None = None,
    error: ErrorFn | None = None,
) -> IO[Any]:
    """Open a data file for reading, refusing anything that is not a regular file.

    The file is opened without blocking (a FIFO with no writer does not hang), checked
    with ``fstat`` on the open descriptor (no race with a rename), and refused unless it
    is a regular file. ``max_bytes`` (a cap from ``ampcalc.model.limits``) is checked from its
    size before reading. ``error(message)`` builds the exception (default
    ``DesignError``); messages name the file and the problem.
    """
    make = error or _default_error
    if (nul := nul_in_name(path, what)) is not None:
        raise make(nul)
    name = show_path(path)
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise make(f"cannot read {what} {name!r}: no such file") from None
    except IsADirectoryError:
        raise make(f"{what} {name!r} is a directory; expected a regular file") from None
    except OSError as exc:
        raise make(f"cannot read {what} {name!r}: {_os_reason(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise make(
                f"{what} {name!r} is {_kind(st.st_mode)}; expected a regular file"
                + (" (give '-' to read standard input)" if what == "design file" else "")
            )
        if max_bytes is not None and st.st_size > max_bytes:
            raise make(
                f"{what} {name!r} is {st.st_size:,} bytes, above the limit of {max_bytes:,}"
            )
        if hasattr(os, "O_NONBLOCK"):
            import fcntl  # lazy: POSIX only

            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        note_input(st, name)
        if binary:
            return os.fdopen(fd, "rb")
        if errors != "strict":
            return os.fdopen(fd, "r", encoding=encoding, errors=errors, newline=newline)
        raw = io.BufferedReader(io.FileIO(fd, "r"))
        return _CheckedText(raw, path, make, encoding=encoding, newline=newline)
    except BaseException:
        os.close(fd)
        raise


class _CheckedText(io.TextIOWrapper):
    """A text file whose decoding errors are input errors naming the file and line."""

    def __init__(
        self,
        raw: Any,
        path: str | os.PathLike[str],
        make: ErrorFn,
        *,
        encoding: str,
        newline: str | None,
    ) -> None:
        super().__init__(raw, encoding=encoding, newline=newline)
        self._path = path
        self._make = make

    def _failed(self) -> Exception:
        return self._make(not_utf8(self._path))

    def read(self, size: int | None = -1) -> str:
        try:
            return super().read(size)
        except UnicodeDecodeError:
            raise self._failed() from None

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        try:
            return super().readline(-1 if size is None else size)
        except UnicodeDecodeError:
            raise self._failed() from None

    def __next__(self) -> str:  # type: ignore[override]
        try:
            return super().__next__()
        except UnicodeDecodeError:
            raise self._failed() from None


def utf8_error(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(1-based line, byte value) of the first byte of ``path`` that is not UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with contextlib.suppress(OSError), open(os.fspath(path), "rb") as fh:
        while block := fh.read(1 << 20):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                data = exc.object
                return line + bytes(data[: exc.start]).count(b"\n"), data[exc.start]
            line += block.count(b"\n")
    return None


def not_utf8(path: str | os.PathLike[str], where_line: int | None = None) -> str:
    """The message for a text file that is not UTF-8 (with the line, when it can be found)."""
    found = utf8_error(path) if os.fspath(path) != "-" else None
    name = show_path(path) if os.fspath(path) != "-" else "<stdin>"
    if found is not None:
        line, byte = found
        return f"{name}:{line}: not UTF-8 text (byte 0x{byte:02x}); save the file as UTF-8"
    at = f":{where_line}" if where_line is not None else ""
    return f"{name}{at}: not UTF-8 text; save the file as UTF-8"


def loadtxt(*args: Any, **kwargs: Any) -> NDArray[Any]:
    """``numpy.loadtxt`` without its "input contained no data" warning: callers check
    for an empty result and say so in their own words."""

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "loadtxt: input contained no data", UserWarning)
        data: NDArray[Any] = np.loadtxt(*args, **kwargs)
        return data


# --------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------


def _stat(path: str | os.PathLike[str]) -> os.stat_result | None:
    try:
        return os.stat(os.fspath(path))
    except (OSError, ValueError):
        return None


def refuse_input_as_output(
    output: str | os.PathLike[str] | None,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    *,
    option: str = "--output",
) -> None:
    """Refuse (``AmpcalcError``) an output that is the same file as an input of the run.

    Compared by device and inode, so hard links, symbolic links and relative paths are
    caught. ``inputs`` are checked as well as every file opened by ``open_input`` so far.
    """
    if output is None or os.fspath(output) == "-":
        return
    st = _stat(output)
    if st is None or not stat.S_ISREG(st.st_mode):
        return
    key = (st.st_dev, st.st_ino)
    named: str | None = None
    for p in inputs:
        if p is None:
            continue
        sp: os.stat_result | None
        if os.fspath(p) == "-":
            try:
                sp = os.fstat(sys.stdin.fileno())
            except (OSError, ValueError, AttributeError):
                continue
            p = "<stdin>"
        else:
            sp = _stat(p)
        if sp is not None and (sp.st_dev, sp.st_ino) == key:
            named = show_path(p)
            break
    if named is None:
        with _INPUTS_LOCK:
            named = _INPUTS.get(key)
    if named is not None:
        out = show_path(output)
        same = "" if named == out else f" (as {named!r})"
        raise AmpcalcError(
            f"{option} {out!r} is an input of this run{same}: writing it would destroy the "
            "input; choose another output file"
        )


def _temp_path(target: Path) -> Path:
    stem = target.name[:200]
    return target.with_name(f".{stem}.{os.urandom(6).hex()}{TEMP_SUFFIX}")


def is_temp_name(name: str, target_name: str) -> bool:
    """Whether ``name`` is one of ``atomic_write``'s temporary names for ``target_name``."""
    return name.startswith(f".{target_name[:200]}.") and name.endswith(TEMP_SUFFIX)


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str],
    *,
    binary: bool = False,
    encoding: str = "utf-8",
    newline: str | None = None,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    option: str = "--output",
) -> Iterator[IO[Any]]:
    """Write ``path`` through a temporary file in its directory, renamed into place
    (``os.replace``) only when the block finishes without an exception.

    On any exception (including ``Interrupted`` and ``KeyboardInterrupt``) the temporary
    file is removed and an existing ``path`` is left untouched. An existing output that
    is not a regular file (``/dev/null``, a FIFO) is written directly; a directory is
    refused. A symbolic link keeps pointing where it did: its target is replaced.
    """
    shown = show_path(path)
    if (nul := nul_in_name(path, f"{option} file")) is not None:
        raise AmpcalcError(nul)
    refuse_input_as_output(path, inputs, option=option)
    target = Path(os.fspath(path))
    st = _stat(target)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise AmpcalcError(f"{option} {shown!r} is a directory; expected a file name")
    mode = "wb" if binary else "w"
    text_args: dict[str, Any] = {} if binary else {"encoding": encoding, "newline": newline}
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            direct = open(target, mode, **text_args)
        except OSError as exc:
            raise AmpcalcError(write_failed(repr(shown), exc)) from None
        try:
            with direct:  # closing flushes: a full device (/dev/full) fails here
                yield direct
        except OSError as exc:
            if exc.errno in _WRITE_ERRNOS:
                raise AmpcalcError(write_failed(repr(shown), exc)) from None
            raise
        return
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    tmp = _temp_path(target)
    perms = stat.S_IMODE(st.st_mode) if st is not None else 0o666
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, perms)
    except OSError as exc:
        raise AmpcalcError(write_failed(repr(shown), exc)) from None
    try:
        if st is not None:
            with contextlib.suppress(OSError):
                os.fchmod(fd, perms)
        fh = os.fdopen(fd, mode, **text_args)
    except BaseException:
        os.close(fd)
        _unlink(tmp)
        raise
    try:
        try:
            yield fh
        except OSError as exc:
            if exc.errno in _WRITE_ERRNOS:  # the disk filled up under the writes
                raise AmpcalcError(write_failed(repr(shown), exc)) from None
            raise
        try:
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            # inputs opened while writing (a streamed sample) count too
            refuse_input_as_output(path, inputs, option=option)
            os.replace(tmp, target)
        except OSError as exc:
            raise AmpcalcError(write_failed(repr(shown), exc)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            fh.close()
        _unlink(tmp)
        raise


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def write_text(
    path: str | os.PathLike[str],
    text: str,
    *,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    option: str = "--output",
) -> None:
    """``atomic_write`` of one string."""
    with atomic_write(path, inputs=inputs, option=option) as fh:
        fh.write(text)


# --------------------------------------------------------------------------------------
# Signals
# --------------------------------------------------------------------------------------

_SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None)) if s is not None)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: unwind (removing temporary files) and exit 128 + signum.

    A ``BaseException``, like ``KeyboardInterrupt``, so ``except Exception`` blocks do
    not swallow it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = int(signum)

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:  # pragma: no cover - only SIGINT/SIGTERM are handled
            return f"signal {self.signum}"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def message(self) -> str:
        return (
            f"ampcalc: interrupted by {self.name}; the run stopped before finishing and no "
            "output file was written or replaced"
        )


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT/SIGTERM raise ``Interrupted`` in the block (main thread only; a signal the
    caller ignores stays ignored). A second signal while unwinding is ignored, so the
    cleanup finishes. The previous handlers are restored afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}

    def handler(signum: int, _frame: Any) -> None:
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    for s in _SIGNALS:
        old = signal.getsignal(s)
        if old is signal.SIG_IGN:
            continue
        previous[s] = old
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old if old is not None else signal.SIG_DFL)
