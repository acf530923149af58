"""PWS sample files: reading keys, frequencies and scores, with errors at file lines.

Used by ``ampcalc pws sanitize`` and ``pws estimate`` in one process and by the Dask
engine (``records.distributed``) on each partition, so both read and refuse the same
files the same way. No printing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

from ampcalc.load.files import excerpt, excerpt_names
from ampcalc.model.limits import LIMITS


def read_rows(
    path: str, chunk: int, need_freq: bool = True
) -> Iterator[tuple[list[str], Sequence[int], list[list[str]]]]:
    """CSV rows in chunks: yields (header, line numbers, rows)."""
    import csv
    import itertools

    from ampcalc.load.files import not_utf8, note_stdin, open_input
    from ampcalc.model.errors import DesignError

    start = 1
    if path == "-":
        note_stdin()
    fh = sys.stdin if path == "-" else open_input(path, what="sample file", newline="")
    cap = LIMITS["line_chars"].value

    def lines() -> Iterator[str]:
        while text := bounded_line(fh, cap, path, start):
            yield text

    try:
        reader = csv.reader(lines())
        first = next(reader, None)
        if first is None:
            raise DesignError(f"{path}: empty file (expected rows key,frequency[,score])")
        header = [c.strip() for c in first]
        pending: list[list[str]] = []
        start = 2
        if len(first) >= 2 and first[1].strip().lstrip("-").isdigit():
            header = ["key", "frequency", "score"][: len(first)]
            pending.append(first)
            start = 1
        if "key" not in header or (need_freq and "frequency" not in header):
            raise DesignError(
                f"{path}:1: expected a header with columns `key` and `frequency` "
                f"(got {excerpt_names(header)})"
            )
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


def read_columns(
    path: str, chunk: int
) -> Iterator[tuple[list[str], Sequence[int], list[list[str]]]]:
    """The sample CSV in chunks of about ``chunk`` rows, as columns: yields (header,
    line numbers, list of columns). Chunks without quotes are split directly (fast);
    quoted chunks go through the csv module. Every row must have the header's width."""
    import csv
    import io

    from ampcalc.load.files import not_utf8, note_stdin, open_input
    from ampcalc.model.errors import DesignError

    start = 1
    if path == "-":
        note_stdin()
    fh = sys.stdin if path == "-" else open_input(path, what="sample file")
    try:
        cap = LIMITS["line_chars"].value
        first = bounded_line(fh, cap, path, 1)
        if not first.strip():
            raise DesignError(f"{path}: empty file (expected rows key,frequency[,score])")
        parsed = next(csv.reader([first]))
        header = [c.strip() for c in parsed]
        pending, start = "", 2
        if len(parsed) >= 2 and parsed[1].strip().lstrip("-").isdigit():
            header = ["key", "frequency", "score"][: len(parsed)]
            pending, start = first, 1
        if "key" not in header or "frequency" not in header:
            raise DesignError(
                f"{path}:1: expected a header with columns `key` and `frequency` "
                f"(got {excerpt_names(header)})"
            )
        width = len(header)
        size = max(1, chunk) * 24
        while True:
            text = pending + fh.read(size)
            pending = ""
            if not text:
                break
            if not text.endswith("\n"):
                text += bounded_line(fh, cap, path, start + text.count("\n"))
            while text.count('"') % 2:
                more = bounded_line(fh, cap, path, start + text.count("\n"))
                if not more:
                    break
                text += more
            text = text[:-1] if text.endswith("\n") else text
            if '"' in text or "\n\n" in text or text.startswith("\n") or not text:
                # slow path: quotes or blank lines (skipped); line numbers from csv
                rdr = csv.reader(io.StringIO(text))
                rows, lns = [], []
                for r in rdr:
                    if not r:
                        continue
                    if len(r) != width:
                        raise DesignError(
                            f"{path}:{start + rdr.line_num - 1}: expected {width} fields "
                            f"({excerpt_names(header)}), got {len(r)}"
                        )
                    rows.append(r)
                    lns.append(start + rdr.line_num - 1)
                start += text.count("\n") + 1
                if rows:
                    yield header, lns, [list(c) for c in zip(*rows, strict=True)]
                continue
            lines = text.split("\n")
            n = len(lines)
            flat = text.replace("\n", ",").split(",")
            if len(flat) != n * width:
                for k, line in enumerate(lines):
                    got = line.count(",") + 1
                    if got != width:
                        raise DesignError(
                            f"{path}:{start + k}: expected {width} fields "
                            f"({excerpt_names(header)}), got {got}"
                        )
            cols = [flat[c::width] for c in range(width)]
            yield header, range(start, start + n), cols
            start += n
    except UnicodeDecodeError:
        raise DesignError(not_utf8(path, start)) from None
    finally:
        if fh is not sys.stdin:
            fh.close()


def bounded_line(fh: Any, cap: int, path: str, line: int) -> str:
    """One line, refused past ``cap`` characters (standard input can be endless)."""
    from ampcalc.model.errors import DesignError

    text: str = fh.readline(cap + 1)
    if len(text) > cap:
        shown = "<stdin>" if path == "-" else path
        raise DesignError(f"{shown}:{line}: " + LIMITS["line_chars"].message(len(text)))
    return text


def parse_freq(value: str, path: str, line: int, what: str = "frequency") -> int:
    from ampcalc.model.errors import DesignError

    try:
        v = int(value)
    except ValueError:
        v = None
    if v is None or v < 1:
        raise DesignError(
            f"{path}:{line}: {what} {excerpt(value)} is not a whole number >= 1 (keys with "
            "frequency 0 are not in the data; frequencies count elements)"
        )
    return v


def parse_freqs(col: Any, path: str, lines: Sequence[int]) -> Any:
    """The frequency column as int64; the first bad cell is an error naming its line."""
    import numpy as np

    try:
        fast = np.array(col, dtype=np.int64)
        if fast.size == 0 or fast.min() >= 1:
            return fast
    except (ValueError, OverflowError):
        pass
    arr = np.array(col, dtype=str)
    arr = np.char.strip(arr)
    ok = np.char.isdigit(arr)
    if ok.all():
        out = arr.astype(np.int64)
        if (out >= 1).all():
            return out
        n = int(np.flatnonzero(out < 1)[0])
    else:
        n = int(np.flatnonzero(~ok)[0])
    return parse_freq(str(arr[n]), path, lines[n])


def check_duplicates(
    keys: list[str], lines: Sequence[int], seen: dict[str, int], path: str
) -> None:
    from ampcalc.model.errors import DesignError

    first: dict[str, int] = {}
    for k, ln in zip(keys, lines, strict=True):
        earlier = seen.get(k, first.get(k))
        if earlier is not None:
            raise DesignError(duplicate_message(path, k, ln, earlier))
        first[k] = ln


def duplicate_message(path: str, key: str, line: int, earlier: int) -> str:
    return (
        f"{path}:{line}: duplicate key {excerpt(key)} (first on line {earlier}); "
        "a weighted sample lists each key once with its frequency"
    )


def check_score(value: str, params: Any, w: int, path: str, line: int) -> None:
    from ampcalc.model.errors import DesignError

    try:
        s = float(value)
    except ValueError:
        raise DesignError(f"{path}:{line}: score {excerpt(value)} is not a number") from None
    if params.inclusion is None and params.method != "none" and not s < params.threshold:
        raise DesignError(
            f"{path}:{line}: score {s:g} >= τ = {params.threshold:g}: this key is not in a "
            f"{params.method} sample with threshold τ (scores below τ are sampled)"
        )
