"""``ampcalc pws sanitize --engine dask``: each sample partition is one delayed task that
runs the one-process byte path on its file (``pws_stream.sanitize_sample``; Parquet
partitions from Arrow's buffers, ``_parquet_chunk``), writes its part file and returns a
one-row summary with its keys' hashes, for the duplicate check across partitions.

A key's uniform is a pure function of (seed, key) (``pws_kernels.key_uniforms``), so the
draws do not depend on the partitioning.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import pickle
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.load.bytecols import ByteColumn
from ampcalc.load.files import atomic_write, excerpt_names
from ampcalc.load.keyset import KeyLog
from ampcalc.load.parquet import parquet_columns, read_parquet
from ampcalc.load.table import first_header
from ampcalc.math import pws as K
from ampcalc.model.errors import DesignError
from ampcalc.output.keys_csv import gather_rows as gather  # rows of pieces of one buffer
from ampcalc.records.dask_cluster import (
    _compute,
    _module,
    _tune_worker_malloc,
    require_dask,
    scheduler,
)
from ampcalc.records.dask_parts import (
    PART_NAME,
    Partition,
    _remove_parts,
    anchored,
    output_format,
    prepare_output,
    resolve_inputs,
)
from ampcalc.records.pws_files import (
    check_score,
    duplicate_message,
    parse_freqs,
    read_columns,
    read_sample,
)
from ampcalc.records.pws_stream import SanitizedChunk, cells, sanitize_sample, write_chunk

# --------------------------------------------------------------------------------------
# Weighted samples (``ampcalc pws sanitize``)
# --------------------------------------------------------------------------------------


def _sample_header(part: Partition) -> list[str]:
    if part.kind == "parquet":
        header = parquet_columns(part.path)
        if "key" not in header or "frequency" not in header:
            raise DesignError(
                f"{part.path}: expected columns `key` and `frequency` "
                f"(got {excerpt_names(header)})"
            )
        return header
    try:
        header, _, _ = next(read_columns(part.path, 1))
    except StopIteration:
        # a header line and no rows: read_columns yields nothing
        header = first_header(part.path, what="sample file")
    return list(header)


@dataclass(frozen=True)
class _SanitizeJob:
    token: str  # names the job's tables in a worker (``_sanitizer``; ``table_token``)
    base: Any  # records.pws_sanitize.PwsSanitiser at the design's table size
    params: Any
    seed: int
    frequencies: bool
    extend: bool
    out: str
    fmt: str
    header: tuple[str, ...]
    parts: tuple[Partition, ...]
    chunk: int = 1 << 20


_SANITISERS: dict[str, Any] = {}
_SANITISER_LOCK = threading.Lock()


def table_token(params: Any, frequencies: bool, extend: bool) -> str:
    """A name for a design's pws tables, the same in every run of that design: a worker
    of a running cluster keeps the tables it extended (``_sanitizer``, the last 4) for
    the next job of the design instead of computing the rows again. Rows depend only on
    the design (and earlier rows), so tables extended by another job give the same
    rows."""
    try:
        blob = pickle.dumps((params, bool(frequencies), bool(extend)), protocol=4)
    except Exception:  # a design that does not pickle alike: no sharing
        return uuid.uuid4().hex
    return hashlib.sha256(blob).hexdigest()


def _sanitizer(job: _SanitizeJob, top: int, where: str) -> Any:
    """This process's table for the job, extended to frequency ``top`` if allowed (rows
    depend only on earlier rows: a longer table gives the same rows below ``top``)."""
    with _SANITISER_LOCK:
        san = _SANITISERS.get(job.token)
        if san is None:
            while len(_SANITISERS) >= 4:
                _SANITISERS.pop(next(iter(_SANITISERS)))
            san = _SANITISERS[job.token] = copy.deepcopy(job.base)
        if top > job.base.n and not job.extend:
            job.base.ensure(top, where)  # raises: the row was not computed
        san.ensure(top, where)
        return san


class _SharedSanitiser:
    """The process's table for a job (``_sanitizer``) as ``pws_stream.sanitize_sample``
    uses it: ``ensure`` extends it under the lock; ``p`` and ``rows`` are read after."""

    def __init__(self, job: _SanitizeJob) -> None:
        self.job = job
        self.san = _sanitizer(job, 0, "")
        self.top = 0

    def ensure(self, top: int, where: str) -> None:
        self.san = _sanitizer(self.job, top, where)
        self.top = max(self.top, top)

    @property
    def p(self) -> Any:
        return self.san.p

    @property
    def rows(self) -> Any:
        return self.san.rows


def _arrow_bytes(arr: Any) -> Any:
    """A ``pyarrow`` string (or large string) array, without nulls, as a
    ``load.bytecols.ByteColumn`` over its own data buffer (no str per cell)."""
    n = len(arr)
    _, offsets, data = arr.buffers()
    wide = np.int64 if _module("pyarrow").types.is_large_string(arr.type) else np.int32
    if n == 0 or offsets is None:
        empty = np.zeros(0, dtype=np.int64)
        return ByteColumn(np.zeros(0, dtype=np.uint8), empty, empty, plain=True)
    at = np.frombuffer(offsets, dtype=wide)[arr.offset : arr.offset + n + 1].astype(np.int64)
    buf = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    used = buf[int(at[0]) : int(at[-1])]
    # no comma, quote or line break: csv.writer writes each cell as it is
    plain = not bool(((used == 44) | (used == 34) | (used == 13) | (used == 10)).any())
    return ByteColumn(buf, at[:-1], at[1:], plain=plain)


def _parquet_columns(part: Partition, header: tuple[str, ...]) -> list[Any]:
    """A Parquet sample partition's columns: ``key`` (integers as their decimal strings)
    and a string ``frequency`` as ``load.bytecols.ByteColumn`` s over Arrow's buffers, an
    integer ``frequency`` as int64, other columns as Python values. Nulls, a column of
    another type, and columns that differ from the first partition's are errors."""
    pa = _module("pyarrow")
    table = read_parquet(part.path)
    if tuple(table.column_names) != header:
        raise DesignError(
            f"{part.path}: columns ({excerpt_names(table.column_names)}) differ from the "
            f"first partition's ({excerpt_names(header)})"
        )
    cols: list[Any] = []
    for name in header:
        col = table.column(name)
        if col.null_count:
            k = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise DesignError(f"{part.path}:{k + 1}: column {name!r} is empty (null)")
        text = pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
        if name == "key":
            if pa.types.is_integer(col.type):
                col = col.cast(pa.string())  # its decimal string, as str(int)
            elif not text:
                raise DesignError(
                    f"{part.path}: column 'key' is {col.type}; expected strings or integers"
                )
            cols.append(_arrow_bytes(col.combine_chunks()))
        elif name == "frequency":
            if pa.types.is_integer(col.type):
                cols.append(col.to_numpy().astype(np.int64))
            elif text:
                cols.append(_arrow_bytes(col.combine_chunks()))
            else:
                raise DesignError(
                    f"{part.path}: column 'frequency' is {col.type}; expected whole numbers"
                )
        else:
            cols.append(col.to_pylist())
    return cols


def _parquet_chunk(part: Partition, job: _SanitizeJob, san: Any) -> Any:
    """A Parquet partition as one ``pws_stream.SanitizedChunk``: the checks, coins and
    draws of ``pws_stream.sanitize_sample`` (one chunk), the key (and a string
    frequency) read from Arrow's buffers. Integer keys are their decimal strings;
    other columns are passed through as Python values (as the one-process CSV reader
    gives them, strings there)."""
    header = list(job.header)
    cols = _parquet_columns(part, job.header)
    ki, fi, si, extra = _sample_columns(header)
    kcol = cols[ki]
    lines = range(1, len(kcol) + 1)
    freqs = parse_freqs(cols[fi], part.path, lines)
    if si is not None:
        for n, v in enumerate(cols[si]):
            check_score(v, job.params, int(freqs[n]), part.path, int(lines[n]))
    hashes = K.byte_key_hashes(kcol.buf, kcol.start, kcol.end)
    dup = KeyLog().add(hashes, kcol.buf, kcol.start, kcol.end, lines)
    if dup is not None:
        raise DesignError(duplicate_message(part.path, *dup))
    top = int(freqs.max()) if freqs.size else 0
    if freqs.size:
        san.ensure(top, f"{part.path}:{lines[int(np.argmax(freqs))]}")
    kept, tokens = K.sanitize_hashes(hashes, freqs, job.seed, p=san.p, rows=san.rows)
    return SanitizedChunk(
        header=header,
        extra=extra,
        keys=kcol,
        columns=cols,
        kept=np.flatnonzero(kept),
        tokens=tokens,
        read=len(kcol),
        hashes=hashes,
        top=top,
    )


def _arrow_keys(kcol: Any, idx: np.ndarray) -> Any:
    """The keys ``idx`` of a ``ByteColumn`` as an Arrow string array, from the bytes."""
    pa = _module("pyarrow")
    start = kcol.start[idx]
    size = kcol.end[idx] - start
    offsets = np.zeros(idx.size + 1, dtype=np.int32 if size.sum() < 2**31 else np.int64)
    np.cumsum(size, out=offsets[1:])
    data = gather([(kcol.buf, start, size)]) if idx.size else np.zeros(0, np.uint8)
    kind = pa.string() if offsets.dtype == np.int32 else pa.large_string()
    arr = pa.Array.from_buffers(kind, idx.size, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return arr.cast(pa.string()) if kind != pa.string() else arr


def _sample_columns(header: list[str]) -> tuple[int, int, int | None, list[int]]:
    """Indices in a sample's ``header`` of the key, the frequency, the score (None:
    none) and the other columns (passed through to the output)."""
    ki, fi = header.index("key"), header.index("frequency")
    si = header.index("score") if "score" in header else None
    extra = [c for c in range(len(header)) if c not in (ki, fi, si)]
    return ki, fi, si, extra


def _sanitize_task(i: int, job: _SanitizeJob) -> dict[str, Any]:
    """Partition ``i``, read, checked, hashed and sanitised as in one process: a CSV
    partition by the one-process byte path (``pws_stream.sanitize_sample``: byte
    columns, vectorised hashes, duplicates by one sort), a Parquet partition from
    Arrow's buffers (``_parquet_chunk``: the same checks and draws); its part written
    by the one-process CSV writer or from the key bytes (Parquet)."""
    _tune_worker_malloc()
    part = job.parts[i]
    header = list(job.header)

    def same_header(head: list[str], extra: list[int]) -> None:
        if tuple(head) != job.header:
            raise DesignError(
                f"{part.path}:1: columns ({excerpt_names(head)}) differ from the first "
                f"partition's ({excerpt_names(header)})"
            )

    *_, extra = _sample_columns(header)
    out_header = ["key", *(["frequency"] if job.frequencies else []), *[header[c] for c in extra]]
    san = _SharedSanitiser(job)
    path = Path(job.out) / PART_NAME.format(i, job.fmt)
    if part.kind == "csv":
        chunks: Any = sanitize_sample(
            part.path, job.chunk, san, job.params, job.seed, on_header=same_header
        )
    else:
        chunks = iter([_parquet_chunk(part, job, san)])
    if job.fmt == "csv":
        keys, reported, hashes = _write_csv_part(path, out_header, chunks, job.frequencies)
    else:
        keys, reported, hashes = _write_parquet_part(
            path, out_header, chunks, job.frequencies, extra, csv_input=part.kind == "csv"
        )
    return {
        "keys": keys,
        "reported": reported,
        "table": max(job.base.n, san.top),
        "hashes": np.concatenate(hashes) if hashes else np.zeros(0, np.uint64),
    }


def _write_csv_part(
    path: Path, out_header: list[str], chunks: Any, frequencies: bool
) -> tuple[int, int, list[np.ndarray]]:
    """The sanitised ``chunks`` written to the CSV part file ``path`` by the one-process
    writer; returns (keys read, keys reported, the keys' hashes per chunk)."""
    hashes: list[np.ndarray] = []
    keys = reported = 0
    with atomic_write(path, newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(out_header)
        for chunk in chunks:
            write_chunk(fh, writer, chunk, frequencies)
            assert chunk.hashes is not None
            hashes.append(chunk.hashes)
            keys, reported = chunk.read, reported + int(chunk.kept.size)
    return keys, reported, hashes


def _write_parquet_part(
    path: Path,
    out_header: list[str],
    chunks: Any,
    frequencies: bool,
    extra: list[int],
    *,
    csv_input: bool,
) -> tuple[int, int, list[np.ndarray]]:
    """The sanitised ``chunks`` written to the Parquet part file ``path``: the keys from
    their bytes, the sanitised frequencies (``frequencies``), the ``extra`` columns
    (strings when read from CSV); returns (keys read, keys reported, the keys' hashes
    per chunk)."""
    pa = _module("pyarrow")
    pq = _module("pyarrow.parquet")
    hashes: list[np.ndarray] = []
    keys = reported = 0
    blocks: list[list[Any]] = [[] for _ in out_header]
    for chunk in chunks:
        ids = chunk.kept.tolist()
        block: list[Any] = [_arrow_keys(chunk.keys, chunk.kept)]
        if frequencies:
            assert chunk.tokens is not None
            block.append(pa.array(chunk.tokens[chunk.kept], type=pa.int64()))
        for c in extra:
            values = cells(chunk.columns[c])
            block.append([values[n] for n in ids])
        for col, got in zip(blocks, block, strict=True):
            col.append(got)
        assert chunk.hashes is not None
        hashes.append(chunk.hashes)
        keys, reported = chunk.read, reported + len(ids)
    n_fixed = 1 + frequencies
    arrays = [
        pa.concat_arrays(blocks[0]) if blocks[0] else pa.array([], type=pa.string()),
        *([pa.concat_arrays(blocks[1]) if blocks[1] else pa.array([], pa.int64())]
          if frequencies else []),
    ]  # fmt: skip
    for col in blocks[n_fixed:]:
        values = [v for got in col for v in got]
        # CSV cells are strings (also in an empty partition: not Arrow's null type);
        # Parquet columns pass through with the types Arrow infers from their values
        arrays.append(pa.array(values, type=pa.string() if csv_input else None))
    with atomic_write(path, binary=True) as fh:
        pq.write_table(pa.Table.from_arrays(arrays, names=out_header), fh)
    return keys, reported, hashes


def _hash_hits(i: int, job: _SanitizeJob, wanted: np.ndarray) -> list[tuple[str, int]]:
    """(key, line) of partition ``i``'s keys whose hash is in ``wanted``."""
    part = job.parts[i]
    if part.kind != "csv":
        cols = _parquet_columns(part, job.header)
        chunks: Any = [(list(job.header), range(1, len(cols[0]) + 1), cols)]
    else:
        chunks = read_sample(part.path, job.chunk)
    found: list[tuple[str, int]] = []
    for head, lines, cols in chunks:
        kcol = cols[list(head).index("key")]
        if not isinstance(kcol, ByteColumn):
            kcol = ByteColumn.from_strings(kcol)
        hit = np.isin(K.byte_key_hashes(kcol.buf, kcol.start, kcol.end), wanted)
        idx = np.flatnonzero(hit).tolist()
        if idx:
            cells = kcol.tolist()
            found += [(cells[n], int(lines[n])) for n in idx]
    return found


def run_sanitize(
    params: Any,
    base: Any,
    *,
    sample: str,
    output: str | None,
    fmt: str | None,
    seed: int,
    frequencies: bool,
    extend: bool,
    chunk: int,
    address: str | None,
    workers: int,
    dashboard: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """``ampcalc pws sanitize --engine dask``: part files in ``output`` and the totals
    (keys, reported keys, the table size the run needed)."""
    require_dask()
    dask = _module("dask")

    parts = anchored(resolve_inputs(sample, ("csv", "parquet")), address)
    out_fmt = output_format(output or "", fmt, parts[0].kind)
    header = tuple(_sample_header(parts[0]))
    for p in parts[1:]:
        h = tuple(_sample_header(p))
        if h != header:
            raise DesignError(
                f"{p.path}: columns ({excerpt_names(h)}) differ from those of "
                f"{parts[0].path} ({excerpt_names(header)})"
            )
    out = prepare_output(output)
    job = _SanitizeJob(
        token=table_token(params, frequencies, extend),
        base=base,
        params=params,
        seed=int(seed),
        frequencies=frequencies,
        extend=extend,
        out=str(out.resolve()),  # a cluster's workers have their own working directory
        fmt=out_fmt,
        header=header,
        parts=tuple(parts),
        chunk=chunk,
    )
    try:
        with scheduler(address, workers, dashboard) as sched:
            shipped = dask.delayed(job, pure=False)
            tasks = [
                dask.delayed(_sanitize_task, pure=False)(i, shipped) for i in range(len(parts))
            ]
            stats = _compute(sched, *tasks)
            hashes = np.sort(np.concatenate([np.asarray(t["hashes"], np.uint64) for t in stats]))
            same = np.flatnonzero(hashes[1:] == hashes[:-1])
            if same.size:
                _cross_duplicates(job, np.unique(hashes[same]), sched)
    except BaseException:
        _remove_parts(out, len(parts), out_fmt)
        raise
    return {
        "keys": sum(int(t["keys"]) for t in stats),
        "reported": sum(int(t["reported"]) for t in stats),
        "rows_computed_up_to": max(int(t["table"]) for t in stats),
        "partitions": len(parts),
        "output_format": out_fmt,
        "output": str(out),
    }


def _cross_duplicates(job: _SanitizeJob, wanted: np.ndarray, sched: Any) -> None:
    """Name a key listed in two partitions (keys whose 64-bit hashes collide but differ
    are not duplicates)."""
    dask = _module("dask")
    shipped = dask.delayed(job, pure=False)
    found = _compute(
        sched,
        *[dask.delayed(_hash_hits, pure=False)(i, shipped, wanted) for i in range(len(job.parts))],
    )
    first: dict[str, str] = {}
    for part, hits in zip(job.parts, found, strict=True):
        for key, line in hits:
            where = f"{part.path}:{int(line)}"
            if key in first:
                raise DesignError(
                    f"{where}: duplicate key {key!r} (first on {first[key]}); a weighted "
                    "sample lists each key once with its frequency"
                )
            first[key] = where
