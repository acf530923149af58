"""Parquet files, through pyarrow (the optional ``ampcalc[parquet]`` extra).

A Parquet file has a schema instead of a header line and typed columns instead of
text cells, so it has its own reader beside the text one (``ampcalc.load.table``):
its column names (``parquet_columns``) and row count (``parquet_rows``) from its
metadata, its columns as a ``pyarrow.Table`` (``read_parquet``), and numeric columns
as float arrays (``parquet_numbers``). Errors name the file (a Parquet file has no
lines). pyarrow is imported only when a Parquet file is read; without it the error
says which extra to install.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ampcalc.model.errors import DesignError


def _pyarrow(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise DesignError(
            "reading Parquet needs pyarrow: install ampcalc[parquet] "
            "(pip install 'ampcalc[parquet]') or use CSV"
        ) from None


def parquet_columns(path: str | os.PathLike[str]) -> list[str]:
    """The column names of a Parquet file (its schema; no data read)."""
    pq = _pyarrow("pyarrow.parquet")
    try:
        return list(pq.read_schema(os.fspath(path)).names)
    except Exception as exc:
        raise DesignError(f"{os.fspath(path)}: not a readable Parquet file ({exc})") from None


def parquet_rows(path: str | os.PathLike[str]) -> int:
    """The number of rows of a Parquet file (from its metadata)."""
    pq = _pyarrow("pyarrow.parquet")
    return int(pq.ParquetFile(os.fspath(path)).metadata.num_rows)


def read_parquet(path: str | os.PathLike[str], columns: Sequence[str] | None = None) -> Any:
    """A Parquet file (or some of its columns) as a ``pyarrow.Table``."""
    pq = _pyarrow("pyarrow.parquet")
    return pq.read_table(os.fspath(path), columns=None if columns is None else list(columns))


def parquet_numbers(
    path: str | os.PathLike[str], table: Any, names: Sequence[str]
) -> list[np.ndarray]:
    """Columns ``names`` of a ``pyarrow.Table`` as float arrays (refusing non-numbers)."""
    pa = _pyarrow("pyarrow")
    out: list[np.ndarray] = []
    for name in names:
        col = table.column(name)
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise DesignError(
                f"{os.fspath(path)}: column {name!r} is {col.type}, expected numbers"
            )
        out.append(np.asarray(col.to_numpy(zero_copy_only=False), dtype=float))
    return out


__all__ = ["parquet_columns", "parquet_numbers", "parquet_rows", "read_parquet"]
