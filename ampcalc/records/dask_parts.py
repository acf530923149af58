"""The Dask engine's partitions and part files: which input files a run reads (a file, a
directory or a glob, in natural name order), where it writes (a new or empty output
directory of ``part-00000.csv`` … files and ``_summary.json``), and the clean-up after a
failed run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ampcalc.load.files import is_temp_name, open_input, write_text
from ampcalc.model.errors import DesignError
from ampcalc.records.dask_cluster import LOCAL_SCHEDULERS

OUTPUT_FORMATS = ("csv", "parquet")
PART_NAME = "part-{:05d}.{}"

_PARQUET_SUFFIXES = (".parquet", ".pq")
_SUMMARY_NAME = "_summary.json"


@dataclass(frozen=True)
class Partition:
    """One input file: its path and format (``csv``, ``parquet`` or ``npy``)."""

    path: str
    kind: str


def _natural(path: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def _kind(path: str, allowed: Sequence[str]) -> str:
    suffix = Path(path).suffix.lower()
    kind = "parquet" if suffix in _PARQUET_SUFFIXES else "npy" if suffix == ".npy" else "csv"
    if kind not in allowed:
        raise DesignError(f"{path}: .{kind} partitions are not read here (CSV or Parquet)")
    return kind


def resolve_inputs(spec: str, allowed: Sequence[str] = ("csv", "parquet")) -> list[Partition]:
    """The partitions named by a file, a directory or a glob, in natural name order.

    A directory contributes its ``.csv``, ``.parquet``/``.pq`` (and, if allowed,
    ``.npy``) files; a glob or a file may name other CSV suffixes (``.txt``, ``.tsv``).
    All partitions must have one format.
    """
    if spec == "-":
        raise DesignError("--engine dask reads files, not standard input ('-')")
    path = Path(spec)
    if glob.has_magic(spec):
        files = [f for f in glob.glob(spec, recursive=True) if Path(f).is_file()]
        if not files:
            raise DesignError(f"no file matches {spec!r} (expected CSV or Parquet partitions)")
    elif path.is_dir():
        suffixes = {".csv", *_PARQUET_SUFFIXES, *((".npy",) if "npy" in allowed else ())}
        files = [
            str(f)
            for f in path.iterdir()
            if f.is_file() and f.suffix.lower() in suffixes and not f.name.startswith((".", "_"))
        ]
        if not files:
            raise DesignError(
                f"directory {spec!r} holds no partitions (files ending in "
                f"{', '.join(sorted(suffixes))})"
            )
    elif path.is_file():
        files = [spec]
    elif path.exists():
        with open_input(spec, what="input"):
            pass  # refuses a FIFO, a device or a socket, naming it
        files = [spec]
    else:
        raise DesignError(f"input {spec!r} not found (a file, a directory or a glob)")
    files.sort(key=_natural)
    parts = [Partition(f, _kind(f, allowed)) for f in files]
    kinds = sorted({p.kind for p in parts})
    if len(kinds) > 1:
        raise DesignError(f"{spec!r} mixes {' and '.join(kinds)} partitions; use one format")
    return parts


def anchored(parts: list[Partition], address: str | None) -> list[Partition]:
    """For a running scheduler (``--scheduler ADDRESS``): the partitions' absolute paths,
    since the workers resolve a relative path against their own working directory."""
    if not address or address in LOCAL_SCHEDULERS:
        return parts
    return [dataclasses.replace(p, path=str(Path(p.path).absolute())) for p in parts]


def output_format(output: str, fmt: str | None, default: str) -> str:
    """``--output-format``, else the output directory's suffix, else ``default``."""
    if fmt is not None:
        fmt = fmt.lower()
        if fmt not in OUTPUT_FORMATS:
            raise DesignError(f"--output-format: expected csv or parquet, got {fmt!r}")
        return fmt
    suffix = Path(output).suffix.lower()
    if suffix in _PARQUET_SUFFIXES:
        return "parquet"
    if suffix == ".csv":
        return "csv"
    return default if default in OUTPUT_FORMATS else "csv"


def prepare_output(output: str | None) -> Path:
    """The output directory, created; it must be new or empty (part files are not
    mixed with an earlier run's)."""
    if not output:
        raise DesignError("--engine dask writes part files: give an output directory (-o DIR)")
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise DesignError(f"--output {output!r} is a file; --engine dask writes a directory")
    if out.is_dir() and any(out.iterdir()):
        raise DesignError(f"--output directory {output!r} is not empty")
    if not out.is_dir():
        out.mkdir(parents=True)
        _CREATED.add(str(out.resolve()))
    return out


_CREATED: set[str] = set()


def _remove_parts(out: Path, count: int, fmt: str) -> None:
    """After a failed run: its part files (and temporary files of parts being written
    when it stopped), and the directory if this run created it."""
    names = [PART_NAME.format(i, fmt) for i in range(count)]
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            (out / name).unlink()
    with contextlib.suppress(OSError):
        for f in out.iterdir():
            if any(is_temp_name(f.name, name) for name in names):
                with contextlib.suppress(OSError):
                    f.unlink()
    if str(out.resolve()) in _CREATED:
        _CREATED.discard(str(out.resolve()))
        with contextlib.suppress(OSError):
            out.rmdir()


def _stats_meta(columns: dict[str, str]) -> Any:
    import pandas as pd  # lazy: pandas, > 20 ms

    return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in columns.items()})


def write_summary_text(out: str | Path, text: str) -> None:
    """``_summary.json`` next to the part files (the run's summary, as ``--json`` prints)."""
    write_text(Path(out) / _SUMMARY_NAME, text)
