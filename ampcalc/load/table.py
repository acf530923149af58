"""The one data-file reader: CSV, TSV or whitespace-separated text (Parquet beside it).

Every data file a design names (strata, cluster sizes, size measures, a size pmf, plan
data, importance records, PWS samples and frequency files) is read through this module
(a Parquet file through ``ampcalc.load.parquet``), so they all follow one set of rules:

- Errors say ``FILE:LINE: message``, LINE being the file's own line number (1-based,
  counting the header, blank lines and the lines a quoted cell spans), never a data-row
  index and never numpy's wording. Parquet files have no lines: ``FILE: row N (0-based)``.
- Columns are picked by name (the file needs a header) or by 0-based index; an unknown
  name is refused with the file's column list and a did-you-mean.
- Cells are quoted in messages through ``excerpt`` (a short, escaped quote).

Two ways in: ``read_table`` reads a small file whole into string cells with their
line numbers (the callers validate the values); ``numeric_block`` parses many lines of
numbers at once with numpy's C parser (the record files' fast path) and, only when that
fails, finds the first bad cell and reports it at its line. Large CSV files (PWS
samples, standard input included) stream in chunks through ``stream_rows`` and
``stream_columns`` (split directly when no cell is quoted); ``.npy`` arrays through
``read_npy``.
"""

from __future__ import annotations

import csv
import difflib
import io
import itertools
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.files import (
    excerpt,
    excerpt_names,
    loadtxt,
    not_utf8,
    note_stdin,
    open_input,
    show_path,
    stdin,
)
from ampcalc.model.errors import DesignError
from ampcalc.model.limits import LIMITS

ErrorFn = Callable[[str], Exception]

#: delimiters recognised in a text file's first line, in order (else: whitespace)
DELIMITERS = (",", ";", "\t")


def _default_error(message: str) -> Exception:
    return DesignError(message)


def is_number(text: str) -> bool:
    """Whether ``float(text)`` reads ``text``."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def sniff_delimiter(line: str) -> str | None:
    """The delimiter of a text file from its first line (``None``: whitespace)."""
    return next((d for d in DELIMITERS if d in line), None)


def split_line(line: str, delimiter: str | None) -> list[str]:
    """The stripped cells of one unquoted line."""
    return [c.strip() for c in (line.split(delimiter) if delimiter else line.split())]


# --------------------------------------------------------------------------------------
# Columns by name or index
# --------------------------------------------------------------------------------------


#: a column name as a header spells it (letters, digits, spaces, ``_.-()``)
_COLUMN_NAME = re.compile(r"[\w .()-]{1,60}")


def plainly_not_a_header(cells: Sequence[str]) -> bool:
    """Whether a file's first row is plainly no CSV header: binary (a control character
    such as NUL, or an undecodable byte) or a single cell that is no column name (a
    password file's ``root:x:0:0:…``, an ``.env`` file's ``TOKEN=…``). Messages then say
    the file does not look like a CSV file of the expected shape and quote none of it:
    the file may be anything."""
    if any(not c.isprintable() or "\ufffd" in c for c in cells):
        return True
    return len(cells) == 1 and _COLUMN_NAME.fullmatch(cells[0].strip()) is None


NOT_CSV = "does not look like a CSV file of the expected shape"


def did_you_mean(name: str, choices: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the choice closest to ``name`` (case slips
    included), or ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    if not close:  # a case slip: `Size` for `size`
        lower = {c.lower(): c for c in choices}
        close = [lower[name.lower()]] if name.lower() in lower else []
    return f"; did you mean {excerpt(close[0])}?" if close else ""


def missing_column(required: str, header: Sequence[str]) -> str:
    """The message for a column a file must have and lacks: the columns, and the one
    that looks like a misspelling of it."""
    if plainly_not_a_header(header):
        return f"no column {excerpt(required)}: the file {NOT_CSV} (no header of column names)"
    close = did_you_mean(required, header)
    found = close.removeprefix("; did you mean ").removesuffix("?")
    hint = f"; {found} looks like a misspelling of {excerpt(required)}" if close else ""
    return f"no column {excerpt(required)} (columns: {excerpt_names(header)}{hint})"


def unknown_column(spec: str, header: Sequence[str], what: str) -> str:
    """The message for a column name the header does not have: the columns, and the
    closest name when one is close."""
    hint = did_you_mean(spec, header)
    return f"{what}: no column {excerpt(spec)} (columns: {excerpt_names(header)}){hint}"


def pick_column(
    spec: Any,
    header: Sequence[str] | None,
    width: int,
    error: ErrorFn,
    what: str = "column",
) -> int:
    """The 0-based index of column ``spec`` (a header name or a 0-based index)."""
    if isinstance(spec, bool):
        raise error(f"{what}: expected a column name or 0-based index, got {spec!r}")
    if isinstance(spec, int):
        if not 0 <= spec < width:
            raise error(f"{what}: column index {spec} is out of range (the file has {width})")
        return spec
    if isinstance(spec, str):
        if header is None:
            raise error(f"{what}: column {spec!r} named, but the file has no header row")
        if spec not in header:
            raise error(unknown_column(spec, header, what))
        return list(header).index(spec)
    raise error(f"{what}: expected a column name or 0-based index, got {spec!r}")


# --------------------------------------------------------------------------------------
# Small files, whole
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Table:
    """A text data file's rows as stripped string cells, with their file lines.

    Attributes:
        name: the file as shown in messages.
        header: the header row's cells, or ``None`` when the file has none.
        rows: the data rows (blank lines left out).
        lines: the file line (1-based) of each row.
        header_line: the header's file line (0 when there is no header).
    """

    name: str
    header: tuple[str, ...] | None
    rows: list[list[str]]
    lines: list[int]
    header_line: int = 0

    def __len__(self) -> int:
        return len(self.rows)

    def at(self, i: int) -> str:
        """``FILE:LINE`` of row ``i``, for messages."""
        return f"{self.name}:{self.lines[i]}"

    def index(self, spec: Any, error: ErrorFn | None = None, what: str = "column") -> int:
        """The 0-based index of column ``spec`` (name or index; did-you-mean when unknown)."""
        width = len(self.header) if self.header else max((len(r) for r in self.rows), default=0)
        make = error or (lambda m: DesignError(f"{self.name}: {m}"))
        return pick_column(spec, self.header, width, make, what)

    def cells(self, col: int) -> list[str]:
        """Column ``col`` of every row (``""`` where a row is short)."""
        return [r[col] if col < len(r) else "" for r in self.rows]


def read_table(
    path: str | os.PathLike[str],
    *,
    what: str = "data file",
    error: ErrorFn | None = None,
    header: bool | None = None,
    delimiter: str | None = "auto",
    comment: str | None = None,
    encoding: str = "utf-8",
    max_rows: int | None = None,
    too_many: Callable[[int], str] | None = None,
    name: str | None = None,
) -> Table:
    """Read a small text data file whole, keeping each row's file line.

    ``header``: ``True`` the first non-blank row is a header, ``False`` there is none,
    ``None`` (auto) it is one when one of its non-empty cells is not a number. ``delimiter``:
    ``"auto"`` sniffs ``,``/``;``/tab from the first non-blank line (else whitespace),
    ``None`` is whitespace. Quoted cells follow CSV rules (a cell may span lines).
    ``comment`` strips the rest of a line from that character. Reading stops past
    ``max_rows`` data rows with ``too_many(count)`` as the message. Blank rows are
    left out. Errors are ``error(message)`` (default ``DesignError``).
    """
    make = error or _default_error
    shown = name or show_path(path)

    def refuse(lineno: int, count: int) -> Exception:
        return make(f"{shown}:{lineno}: " + (too_many(count) if too_many else "too many rows"))

    if max_rows is not None:
        lines_used = _count_lines(path, what, make, max_rows + 2)
        if lines_used > max_rows + 1:  # refused before parsing (more rows even with a header)
            raise make(f"{shown}: " + (too_many(lines_used) if too_many else "too many rows"))
    try:
        fh = open_input(path, what=what, newline="", encoding=encoding, error=make)
    except OSError as exc:  # pragma: no cover - open_input reports the usual ones
        raise make(f"cannot read {what} {shown!r}: {exc.strerror}") from None
    with fh:
        source: Iterator[str] = _block_lines(fh)
        if comment is not None:
            source = (_uncomment(line, comment) for line in source)
        delim, source = _sniff(source, delimiter)
        cap = max_rows if max_rows is not None else -1
        try:
            head, rows, lines = _keep_rows(_split_rows(source, delim), header, cap, refuse)
        except csv.Error as exc:  # a NUL byte, a field past the csv module's limit
            raise make(f"{shown}: not a CSV file ({excerpt(str(exc))})") from None
        except UnicodeDecodeError:  # pragma: no cover - open_input's wrapper reports it
            raise make(not_utf8(path)) from None
    if header and head is None:
        raise make(f"{shown}: empty file; expected a header row")
    head_line, head_cells = head or (0, None)
    return Table(name=shown, header=head_cells, rows=rows, lines=lines, header_line=head_line)


def _sniff(source: Iterator[str], delimiter: str | None) -> tuple[str | None, Iterator[str]]:
    """(the delimiter, the lines): ``"auto"`` is sniffed from the first non-blank line
    (and stays ``"auto"`` when every line is blank); the lines read to find it come back."""
    if delimiter != "auto":
        return delimiter, source
    buffered: list[str] = []
    for line in source:
        buffered.append(line)
        if line.strip():
            return sniff_delimiter(line), itertools.chain(buffered, source)
    return delimiter, iter(buffered)


def _split_rows(source: Iterator[str], delimiter: str | None) -> Iterator[tuple[int, list[str]]]:
    """(file line, stripped cells) of every row, blank ones too: split on whitespace
    (``None``), or read as CSV, the line being a row's first (a quoted cell may span lines)."""
    if delimiter is None:
        for lineno, line in enumerate(source, 1):
            yield lineno, line.split()
        return
    strip = str.strip
    rd = csv.reader(source, delimiter=delimiter)
    before = 0
    for row in rd:
        lineno, before = before + 1, rd.line_num
        yield lineno, list(map(strip, row))


def _keep_rows(
    rows: Iterator[tuple[int, list[str]]],
    header: bool | None,
    cap: int,
    refuse: Callable[[int, int], Exception],
) -> tuple[tuple[int, tuple[str, ...]] | None, list[list[str]], list[int]]:
    """(the header's line and cells or None, the data rows, their lines): blank rows
    left out, the first non-blank row the header when ``header`` says so (``None``: when
    a non-empty cell of it is no number); ``refuse(line, count)`` past ``cap`` rows."""
    head: tuple[int, tuple[str, ...]] | None = None
    kept: list[list[str]] = []
    lines: list[int] = []
    seen = False
    for lineno, cells in rows:
        if not any(cells):
            continue
        if not seen:
            seen = True
            if header or (header is None and not all(is_number(c) for c in cells if c)):
                head = (lineno, tuple(cells))
                continue
        if len(kept) == cap:
            raise refuse(lineno, len(kept) + 1)
        kept.append(cells)
        lines.append(lineno)
    return head, kept, lines


def _count_lines(path: str | os.PathLike[str], what: str, make: ErrorFn, stop: int) -> int:
    """Non-blank lines of a file without a quote character, counted in C up to
    ``stop`` (0 when the file has quotes: a quoted cell may span lines)."""
    count = 0
    rest = b""
    with open_input(path, what=what, binary=True, error=make) as fh:
        while block := fh.read(1 << 20):
            if b'"' in block:
                return 0
            parts = (rest + block).split(b"\n")
            rest = parts.pop()
            count += sum(map(bool, map(bytes.strip, parts)))
            if count >= stop:
                return count
    return count + bool(rest.strip())


def _block_lines(fh: Any) -> Iterator[str]:
    """The lines of a text file (``\n`` kept), read in large blocks: iterating the file
    object line by line costs a Python call per line."""
    rest = ""
    while block := fh.read(1 << 20):
        parts = (rest + block).split("\n")
        rest = parts.pop()
        for part in parts:
            yield part + "\n"
    if rest:
        yield rest


def _uncomment(line: str, comment: str) -> str:
    if comment not in line:
        return line
    return line.split(comment, 1)[0] + ("\n" if line.endswith("\n") else "")


# --------------------------------------------------------------------------------------
# Many numbers at once (the fast path) and the first bad cell
# --------------------------------------------------------------------------------------


def bad_cell(
    name: str,
    lines: Sequence[str],
    first_line: int,
    delimiter: str | None,
    columns: Sequence[int],
    labels: Sequence[str],
    *,
    width: int | None = None,
    whole: bool = False,
    finite: bool = True,
    blank_ok: bool = False,
) -> str | None:
    """The message for the first bad cell of ``lines`` (file lines from ``first_line``),
    or ``None`` when every cell of ``columns`` is a number (a whole number with
    ``whole``; finite with ``finite``)."""
    kind = "a whole number" if whole else "a finite number" if finite else "a number"
    for j, line in enumerate(lines):
        lineno = first_line + j
        if not line.strip():
            if blank_ok:
                continue
            return f"{name}:{lineno}: the line is empty (expected a record)"
        cells = split_line(line.rstrip("\r\n"), delimiter)
        if width is not None and len(cells) != width:
            return f"{name}:{lineno}: {len(cells)} cells, expected {width}"
        for c, label in zip(columns, labels, strict=True):
            if c >= len(cells):
                return f"{name}:{lineno}: column {excerpt(label)} is missing"
            text = cells[c]
            want = None
            if not is_number(text) or (whole and not text.lstrip("+-").isdigit()):
                want = "a whole number" if whole else "a number"
            elif finite and not np.isfinite(float(text)):
                want = kind
            if want is not None:
                got = excerpt(text)
                return f"{name}:{lineno}: column {excerpt(label)}: expected {want}, got {got}"
    return None


def data_line(path: str | os.PathLike[str], skip: int, index: int) -> int:
    """The file line (1-based) of data row ``index`` (0-based) of a text file whose first
    ``skip`` lines are a header, blank lines not counting as rows (the error path)."""
    row = -1
    with open_input(path, errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if lineno > skip and line.strip():
                row += 1
                if row == index:
                    return lineno
    return skip + index + 1  # pragma: no cover - the row was read from this file


def numeric_block(
    lines: Sequence[str] | str | os.PathLike[str],
    *,
    name: str,
    first_line: int,
    delimiter: str | None,
    columns: Sequence[int],
    labels: Sequence[str],
    dtype: Any = float,
    skip: int = 0,
    width: int | None = None,
    error: ErrorFn | None = None,
    blank_ok: bool = False,
) -> np.ndarray:
    """Columns ``columns`` of ``lines`` (or of the file at that path, after ``skip``
    lines) as a 2-D array, parsed by numpy's C parser; on any failure the first bad
    cell is reported at its file line (``first_line`` is the line of the first row).
    Non-finite values are refused (whole numbers only with an integer ``dtype``)."""
    make = error or _default_error
    whole = np.issubdtype(np.dtype(dtype), np.integer)
    try:
        block = loadtxt(
            lines, delimiter=delimiter, usecols=list(columns), ndmin=2, dtype=dtype, skiprows=skip
        )
        n_lines = None if isinstance(lines, (str, os.PathLike)) else len(lines)
        if (n_lines is None or block.shape[0] == n_lines) and (
            whole or bool(np.isfinite(block).all())
        ):
            return block
    except UnicodeDecodeError:
        raise make(not_utf8(lines if isinstance(lines, (str, os.PathLike)) else name)) from None
    except ValueError:
        pass
    if isinstance(lines, (str, os.PathLike)):
        with open_input(lines, errors="replace", error=make) as fh:
            text = fh.read().splitlines()[skip:]
    else:
        text = list(lines)
    msg = bad_cell(
        name,
        text,
        first_line,
        delimiter,
        columns,
        labels,
        width=width,
        whole=whole,
        blank_ok=blank_ok,
    )
    raise make(msg or f"{name}: unreadable rows from line {first_line}")


# --------------------------------------------------------------------------------------
# .npy arrays, a CSV file's header, its rows counted
# --------------------------------------------------------------------------------------


def read_npy(
    path: str | os.PathLike[str],
    *,
    what: str,
    error: ErrorFn = _default_error,
    ndims: tuple[int, ...] = (1, 2),
    mmap: bool = True,
) -> np.ndarray:
    """A ``.npy`` file's numeric array (memory-mapped by default), never a pickle.

    ``what`` names the file in messages (e.g. ``"record file"``); ``ndims`` lists the
    numbers of dimensions accepted. Errors: ``FILE: not a readable .npy array (...)`` and
    ``FILE: expected a 1-D array of numbers, got shape (...) of <dtype>``.
    """
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if magic != b"\x93NUMPY":
        raise error(f"{path}: not a .npy file (no NumPy header); the {what} must be a .npy array")
    try:
        arr: np.ndarray = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc) or "Python objects" in str(exc):
            raise error(
                f"{path}: the array holds Python objects, which are not loaded; the {what} "
                "must be numbers"
            ) from None
        raise error(f"{path}: not a readable .npy array ({exc})") from None
    except Exception as exc:  # a truncated or corrupt file: OSError, EOFError, ...
        raise error(f"{path}: not a readable .npy array ({exc})") from None
    if arr.ndim not in ndims or arr.dtype.kind not in "fiu":
        dims = " or ".join(f"{d}-D" for d in ndims)
        raise error(
            f"{path}: expected a {dims} array of numbers, got shape {arr.shape} of {arr.dtype}"
        )
    return arr


def first_header(
    path: str | os.PathLike[str], *, what: str = "data file", error: ErrorFn | None = None
) -> list[str]:
    """The stripped cells of a CSV file's first line (its header)."""
    make = error or _default_error
    with open_input(path, what=what, error=make) as fh:
        first = fh.readline().removeprefix(_BOM)
        return [c.strip() for c in next(csv.reader([first]), [])]


def count_rows(path: str | os.PathLike[str], *, header: bool, what: str = "data file") -> int:
    """Data rows of a text file without parsing them: its non-blank lines, less the
    header (the parser agrees whenever it succeeds)."""
    count = 0
    with open_input(path, what=what, binary=True) as fh:
        for line in fh:
            if line.strip():
                count += 1
    return count - (1 if header else 0)


# --------------------------------------------------------------------------------------
# Large CSV files in chunks (PWS samples: the streaming fast path)
# --------------------------------------------------------------------------------------

Rows = Iterator[tuple[list[str], Sequence[int], list[list[str]]]]

_BOM = "\ufeff"  # a UTF-8 byte-order mark, as decoded


def bounded_line(fh: Any, cap: int, path: str, line: int) -> str:
    """One line, refused past ``cap`` characters (standard input can be endless)."""
    text: str = fh.readline(cap + 1)
    if len(text) > cap:
        shown = "<stdin>" if path == "-" else path
        raise DesignError(f"{shown}:{line}: " + LIMITS["line_chars"].message(len(text)))
    return text


def _open_stream(path: str, what: str, newline: str | None) -> Any:
    if path == "-":
        note_stdin()
        return stdin()
    return open_input(path, what=what, newline=newline)


def _header(
    path: str,
    cells: list[str],
    implied: Sequence[str],
    headerless: Callable[[Sequence[str]], bool],
    required: Sequence[str],
) -> tuple[list[str], bool]:
    """(header, whether the first row is data) with the required columns checked."""
    header = [c.strip() for c in cells]
    data = headerless(cells)
    if data:
        header = list(implied[: len(cells)])
    if any(c not in header for c in required):
        want = " and ".join(f"`{c}`" for c in required)
        if plainly_not_a_header(cells):
            raise DesignError(f"{path}:1: {NOT_CSV}: expected a header with columns {want}")
        raise DesignError(
            f"{path}:1: expected a header with columns {want} (got {excerpt_names(header)})"
        )
    return header, data


def stream_rows(
    path: str,
    chunk: int,
    *,
    what: str,
    expected: str,
    implied: Sequence[str],
    headerless: Callable[[Sequence[str]], bool],
    required: Sequence[str],
) -> Rows:
    """CSV rows in chunks of ``chunk``: yields (header, file lines, rows). ``-`` is
    standard input; a first row that ``headerless`` accepts is data under the
    ``implied`` column names; ``required`` columns must be there."""
    start = 1
    fh = _open_stream(path, what, "")
    cap = LIMITS["line_chars"].value

    def lines() -> Iterator[str]:
        text = bounded_line(fh, cap, path, start).removeprefix(_BOM)
        while text:
            yield text
            text = bounded_line(fh, cap, path, start)

    try:
        reader = csv.reader(lines())
        first = next(reader, None)
        if first is None:
            raise DesignError(f"{path}: empty file (expected {expected})")
        header, data = _header(path, first, implied, headerless, required)
        pending: list[list[str]] = [first] if data else []
        start = 1 if data else 2
        while True:
            rows = pending + list(itertools.islice(reader, chunk - len(pending)))
            pending = []
            if not rows:
                break
            # line numbers of records (one line per record; quoted newlines shift them)
            yield header, range(start, start + len(rows)), rows
            start += len(rows)
    except UnicodeDecodeError:
        raise DesignError(not_utf8(path, start)) from None
    except csv.Error as exc:  # a NUL byte, a field past the csv module's limit
        shown = "<stdin>" if path == "-" else path
        raise DesignError(f"{shown}:{start}: not a CSV file ({excerpt(str(exc))})") from None
    finally:
        if fh is not sys.stdin:
            fh.close()


def stream_columns(
    path: str,
    chunk: int,
    *,
    what: str,
    expected: str,
    implied: Sequence[str],
    headerless: Callable[[Sequence[str]], bool],
    required: Sequence[str],
    split: Callable[[str, int], list[Any] | None] | None = None,
) -> Rows:
    """A CSV file in chunks of about ``chunk`` rows, as columns: yields (header, file
    lines, list of columns). Chunks without quotes are split directly (fast); quoted
    chunks go through the csv module; blank lines are skipped. Every row must have the
    header's width. ``split(text, width)``: the columns of a chunk without quotes in
    another form, one entry a line (``load.bytecols.split_bytes``), or ``None`` to
    split it here (it must for blank lines). A UTF-8 byte-order mark before the first
    line is dropped. A header and no rows yields one chunk of no rows (the caller learns
    the header: ``pws sanitize`` writes it)."""
    start = 1
    yielded = 0
    fh = _open_stream(path, what, None)
    try:
        cap = LIMITS["line_chars"].value
        first = bounded_line(fh, cap, path, 1).removeprefix(_BOM)
        if not first.strip():
            raise DesignError(f"{path}: empty file (expected {expected})")
        parsed = next(csv.reader([first]))
        header, data = _header(path, parsed, implied, headerless, required)
        pending, start = (first, 1) if data else ("", 2)
        width = len(header)
        size = max(1, chunk) * 24
        while text := pending + fh.read(size):
            pending = ""
            text = _whole_lines(fh, text, cap, path, start)
            if split is not None and text and '"' not in text:
                if (parts := split(text, width)) is not None:
                    n = len(parts[0])
                    yielded += n
                    yield header, range(start, start + n), parts
                    start += n
                    continue
            if '"' in text or "\n\n" in text or text.startswith("\n") or not text:
                # slow path: quotes or blank lines (skipped); line numbers from csv
                lines, cols = _csv_chunk(text, start, header, path)
                start += text.count("\n") + 1
                if lines:
                    yielded += len(lines)
                    yield header, lines, cols
                continue
            n, cols = _plain_chunk(text, start, header, path)
            yielded += n
            yield header, range(start, start + n), cols
            start += n
        if not yielded:
            yield header, range(start, start), [[] for _ in header]
    except UnicodeDecodeError:
        raise DesignError(not_utf8(path, start)) from None
    finally:
        if fh is not sys.stdin:
            fh.close()


def _whole_lines(fh: Any, text: str, cap: int, path: str, start: int) -> str:
    """``text`` (a chunk from file line ``start``) read on to the end of its last line
    and of a quoted cell left open, without the final newline."""
    if not text.endswith("\n"):
        more = fh.readline(cap + 1)
        if len(more) > cap:  # the line's number is counted only for the error
            bounded_line(io.StringIO(more), cap, path, start + text.count("\n"))
        text += more
    while '"' in text and text.count('"') % 2:
        more = bounded_line(fh, cap, path, start + text.count("\n"))
        if not more:
            break
        text += more
    return text[:-1] if text.endswith("\n") else text


def _width_error(path: str, line: int, header: Sequence[str], got: int) -> DesignError:
    """A row at ``line`` whose number of fields is not the header's."""
    return DesignError(
        f"{path}:{line}: expected {len(header)} fields ({excerpt_names(header)}), got {got}"
    )


def _csv_chunk(
    text: str, start: int, header: Sequence[str], path: str
) -> tuple[list[int], list[list[str]]]:
    """(file lines, columns) of a chunk read as CSV, blank lines skipped."""
    rdr = csv.reader(io.StringIO(text))
    rows, lines = [], []
    for r in rdr:
        if not r:
            continue
        if len(r) != len(header):
            raise _width_error(path, start + rdr.line_num - 1, header, len(r))
        rows.append(r)
        lines.append(start + rdr.line_num - 1)
    return lines, [list(c) for c in zip(*rows, strict=True)]


def _plain_chunk(
    text: str, start: int, header: Sequence[str], path: str
) -> tuple[int, list[list[str]]]:
    """(rows, columns) of a chunk without quotes or blank lines, split on commas."""
    width = len(header)
    lines = text.split("\n")
    flat = text.replace("\n", ",").split(",")
    if len(flat) != len(lines) * width:
        for k, line in enumerate(lines):
            got = line.count(",") + 1
            if got != width:
                raise _width_error(path, start + k, header, got)
    return len(lines), [flat[c::width] for c in range(width)]


__all__ = [
    "Table",
    "bad_cell",
    "bounded_line",
    "count_rows",
    "data_line",
    "did_you_mean",
    "first_header",
    "is_number",
    "missing_column",
    "numeric_block",
    "pick_column",
    "read_npy",
    "read_table",
    "sniff_delimiter",
    "split_line",
    "stream_columns",
    "stream_rows",
    "unknown_column",
]
