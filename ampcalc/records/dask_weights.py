"""``ampcalc weights --engine dask``: record partitions into a ``dask.dataframe``
(``from_map``), the one-process per-record kernels in ``map_partitions``.

Each task reads its partition with the one-process parser, writes its part file and
returns a one-row summary. Row i's uniform (``--sample``) is the Philox draw keyed by
(seed, i), i the global 0-based row index: partition offsets come from a cheap counting
pass over the partitions (Parquet/npy metadata, CSV non-blank lines), so the draws do not
depend on the partitioning.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.load.files import atomic_write, excerpt_names
from ampcalc.load.parquet import parquet_columns, parquet_numbers, parquet_rows, read_parquet
from ampcalc.load.records import (
    RecordNorms,
    iter_chunks,
    open_source,
    record_norms,
    select_columns,
)
from ampcalc.load.table import count_rows, read_npy
from ampcalc.math.importance import uniforms
from ampcalc.model.errors import DesignError
from ampcalc.output.records_csv import rows_text
from ampcalc.output.weights_rows import arrow_table, write_parquet
from ampcalc.records.dask_cluster import (
    _compute,
    _module,
    _plain_frames,
    _tune_worker_malloc,
    require_dask,
    scheduler,
)
from ampcalc.records.dask_parts import (
    PART_NAME,
    Partition,
    _remove_parts,
    _stats_meta,
    anchored,
    output_format,
    prepare_output,
    resolve_inputs,
)
from ampcalc.schemes import importance as imp

# Record files (``ampcalc weights``)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RecordPart:
    """A record partition with its columns resolved (``names`` as in the one-process
    output; ``columns``/``probability`` are indices into the file's columns)."""

    path: str
    kind: str
    names: tuple[str, ...]
    source: Any  # importance_records.RecordSource (csv, npy) or None (parquet)
    fields: tuple[str, ...] = ()  # parquet column names of the record
    probability_field: str | None = None


def _record_part(part: Partition, columns: Any, probability_column: Any) -> _RecordPart:
    def err(msg: str) -> Exception:
        return DesignError(msg)

    if part.kind != "parquet":
        src = open_source(Path(part.path), columns, probability_column, err)
        return _RecordPart(part.path, part.kind, src.names, src)
    header = tuple(parquet_columns(part.path))
    width = len(header)
    cols, pcol = select_columns(header, width, columns, probability_column, err, part.path)
    names = tuple(header[i] for i in cols)
    return _RecordPart(
        part.path,
        "parquet",
        names,
        None,
        fields=names,
        probability_field=header[pcol] if pcol is not None else None,
    )


def _count_records(rp: _RecordPart) -> int:
    """Rows of a record partition without parsing it (the parser agrees when it succeeds:
    non-blank lines, less the header)."""
    if rp.kind == "parquet":
        return parquet_rows(rp.path)
    if rp.kind == "npy":
        return int(read_npy(rp.path, what="record file").shape[0])
    return count_rows(rp.path, header=rp.source.header is not None, what="record file")


def _read_records(rp: _RecordPart) -> Any:
    """A record partition as a DataFrame: columns x0..x{d−1} (float) and ``p``."""
    import pandas as pd  # lazy: pandas, > 20 ms

    d = len(rp.names)
    if rp.kind != "parquet":
        xs: list[np.ndarray] = []
        ps: list[np.ndarray] = []
        for _, x, p in iter_chunks(rp.source, DesignError):
            xs.append(x)
            if p is not None:
                ps.append(p)
        x = np.concatenate(xs) if xs else np.zeros((0, d))
        prob = None
        if rp.source.probability_column is not None:
            prob = np.concatenate(ps) if ps else np.zeros(0)
    else:
        x, prob = _read_parquet_records(rp)
    frame = {f"x{j}": x[:, j] for j in range(d)}
    if prob is not None:
        frame["p"] = prob
    return pd.DataFrame(frame)


def _read_parquet_records(rp: _RecordPart) -> tuple[np.ndarray, np.ndarray | None]:
    want = [*rp.fields, *([rp.probability_field] if rp.probability_field else [])]
    arrays = parquet_numbers(rp.path, read_parquet(rp.path, want), want)
    x = np.ascontiguousarray(np.column_stack(arrays[: len(rp.fields)]))
    bad = ~np.isfinite(x)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise DesignError(
            f"{rp.path}: row {i} (0-based), column {rp.names[j]!r}: expected a finite number, "
            f"got {float(x[i, j])!r}"
        )
    prob = arrays[-1] if rp.probability_field else None
    if prob is not None and not np.isfinite(prob).all():
        i = int(np.argmax(~np.isfinite(prob)))
        raise DesignError(f"{rp.path}: row {i} (0-based): probability is {float(prob[i])!r}")
    return x, prob


@dataclass(frozen=True)
class _WeightsJob:
    params: Any
    profile: Any
    k0: float
    eps_star: float | None
    sample: bool
    seed: int
    out: str
    fmt: str
    parts: tuple[_RecordPart, ...]
    offsets: tuple[int, ...]
    lengths: tuple[int, ...]


_WEIGHTS_STATS = {
    "records": "int64",
    "kept": "int64",
    "sum_q": "float64",
    "outside": "int64",
    "outside_rows": "object",
}
_BLOCK = 1 << 18


def _weights_partition(frame: Any, job: _WeightsJob, partition_info: Any = None) -> Any:
    """Probabilities, weights, ε̂ (and the Poisson draw) of one partition; writes its part."""
    import pandas as pd  # lazy: pandas, > 20 ms

    _tune_worker_malloc()
    i = int(partition_info["number"]) if partition_info else 0
    rp, start = job.parts[i], job.offsets[i]
    d = len(rp.names)
    n = len(frame)
    if n != job.lengths[i]:
        raise DesignError(f"{rp.path}: read {n} records, counted {job.lengths[i]}")
    x = np.ascontiguousarray(frame[[f"x{j}" for j in range(d)]].to_numpy(dtype=float))
    prob = frame["p"].to_numpy(dtype=float) if "p" in frame.columns else None
    params = job.params
    if params.probabilities == "column":
        assert prob is not None
        floor = params.min_probability
        bad = (prob <= 0) | (prob > 1)
        if floor is not None:
            bad |= prob < floor
        if bad.any():
            k = int(np.argmax(bad))
            what = f"[{floor:g}, 1]" if floor is not None else "(0, 1]"
            raise DesignError(
                f"{rp.path}: record {k} (0-based; row {start + k} overall) has probability "
                f"{float(prob[k])!r}; expected {what}"
            )
    l1, sq = record_norms(x)
    norms = RecordNorms(l1=l1, sq_l2=sq, probability=prob, dimension=d, source=params.data.source)
    fig = imp.record_figures(
        dataclasses.replace(params, data=norms), job.profile, job.k0, job.eps_star
    )
    outside = np.flatnonzero(fig.outside)
    rows = np.arange(start, start + n)
    if job.sample:
        take = np.zeros(n, dtype=bool)
        for s in range(0, n, 1 << 20):
            m = min(n - s, 1 << 20)
            take[s : s + m] = uniforms(int(job.seed), start + s, m) < fig.q[s : s + m]
        idx = np.flatnonzero(take)
        cols = [rows[idx], *(x[idx, j] for j in range(d)), fig.q[idx], fig.w[idx]]
        header = ["row", *rp.names, "probability", "weight"]
    else:
        idx = np.arange(n)
        cols = [rows, fig.q, fig.w, fig.eps_hat]
        header = ["row", "probability", "weight", "epsilon_hat"]
    path = Path(job.out) / PART_NAME.format(i, job.fmt)
    if job.fmt == "csv":
        with atomic_write(path) as fh:
            fh.write(",".join(header) + "\n")
            for s in range(0, idx.size, _BLOCK):
                block = [c[s : s + _BLOCK] for c in cols]
                fh.write(rows_text(block, int_first=True).decode("ascii"))
    else:
        table = arrow_table(header, cols)
        with atomic_write(path, binary=True) as fh:
            write_parquet(table, fh)
    return pd.DataFrame(
        {
            "records": [n],
            "kept": [int(idx.size)],
            "sum_q": [math.fsum(fig.q.tolist())],
            "outside": [int(outside.size)],
            "outside_rows": [[int(start + k) for k in outside[:10]]],
        }
    )


def run_weights(
    params: Any,
    profile: Any,
    k0: float,
    eps_star: float | None,
    *,
    inputs: str,
    output: str | None,
    fmt: str | None,
    sample: bool,
    seed: int | None,
    address: str | None,
    workers: int,
    dashboard: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """``ampcalc weights --engine dask``: part files in ``output`` and the run's totals
    (records, kept, expected size, outside records and their first rows)."""
    require_dask()
    dask = _module("dask")

    parts = anchored(resolve_inputs(inputs, ("csv", "parquet", "npy")), address)
    out_fmt = output_format(output or "", fmt, "csv")
    rparts = _record_parts(parts, params)
    out = prepare_output(output)
    try:
        with scheduler(address, workers, dashboard) as sched, _plain_frames():
            lengths = _compute(sched, *[dask.delayed(_count_records)(rp) for rp in rparts])
            total = _checked_total(lengths, inputs, params)
            offsets = tuple(int(v) for v in np.concatenate(([0], np.cumsum(lengths)[:-1])))
            job = _WeightsJob(
                params=params,
                profile=profile,
                k0=k0,
                eps_star=eps_star,
                sample=sample,
                seed=int(seed or 0),
                out=str(out.resolve()),  # a cluster's workers have their own working directory
                fmt=out_fmt,
                parts=tuple(rparts),
                offsets=offsets,
                lengths=tuple(int(v) for v in lengths),
            )
            (table,) = _compute(sched, _partition_stats(rparts, job))
    except BaseException:
        _remove_parts(out, len(parts), out_fmt)
        raise
    first_rows: list[int] = []
    for rows in table["outside_rows"]:
        first_rows.extend(rows)
    return {
        "records": total,
        "kept": int(table["kept"].sum()) if sample else None,
        "expected_size": math.fsum(table["sum_q"].tolist()),
        "outside": int(table["outside"].sum()),
        "outside_rows": first_rows[:10],
        "partitions": len(parts),
        "output_format": out_fmt,
        "output": str(out),
    }


def _record_parts(parts: list[Partition], params: Any) -> list[_RecordPart]:
    """The partitions with the design's record columns resolved in each.

    Raises:
        DesignError: a partition's record columns differ from the first's, or their
            number from the design's records.
    """
    rparts = [_record_part(p, params.columns, params.probability_column) for p in parts]
    first = rparts[0]
    for rp in rparts[1:]:
        if rp.names != first.names:
            raise DesignError(
                f"{rp.path}: record columns ({excerpt_names(rp.names)}) differ from those of "
                f"{first.path} ({excerpt_names(first.names)})"
            )
    dim = params.data.dimension
    if dim and len(first.names) != dim:
        raise DesignError(
            f"{first.path}: {len(first.names)} record columns ({excerpt_names(first.names)}); "
            f"the design's records have {dim}"
        )
    return rparts


def _checked_total(lengths: Any, inputs: str, params: Any) -> int:
    """The number of records over the partitions (their counted ``lengths``).

    Raises:
        DesignError: no records, or fewer than a privacy-constrained design's expected
            sample size.
    """
    total = int(sum(lengths))
    if total == 0:
        raise DesignError(f"{inputs}: the partitions hold no records")
    m = params.expected_size
    if params.probabilities == "privacy-constrained" and m is not None and m > total:
        raise DesignError(f"expected size {m:g} exceeds the {total} records of the input")
    return total


def _partition_stats(rparts: list[_RecordPart], job: _WeightsJob) -> Any:
    """The lazy table of one summary row per partition: each partition read into a
    ``dask.dataframe`` (``_read_records``), its weights written by ``_weights_partition``."""
    dask = _module("dask")
    dd = _module("dask.dataframe")
    meta = {f"x{j}": "float64" for j in range(len(rparts[0].names))}
    if job.params.probability_column is not None:
        meta["p"] = "float64"
    frame = dd.from_map(_read_records, rparts, meta=_stats_meta(meta), enforce_metadata=False)
    return frame.map_partitions(
        _weights_partition,
        dask.delayed(job),
        meta=_stats_meta(_WEIGHTS_STATS),
        enforce_metadata=False,
        align_dataframes=False,
    )
