"""Per-record work on Dask: ``--engine dask`` of ``ampcalc weights`` and ``pws sanitize``.

The input is a file, a directory or a glob of partitions (Parquet or CSV; ``.npy`` too
for record files). Each file is one partition, taken in natural name order (``part-2``
before ``part-10``). For ``weights`` the partitions become a ``dask.dataframe``
(``from_map``) and the existing per-record kernels run in ``map_partitions``; for
``pws sanitize`` each partition is one delayed task that runs the one-process byte path
on its file (``pws_stream.sanitise_sample``; Parquet partitions through string
columns). Every task reads its partition with the same parser as the one-process path,
runs the kernel, writes its part file (``part-00000.csv`` … or ``.parquet``) and returns
a one-row summary (``pws sanitize``: with its keys' hashes, for the duplicate check
across partitions). Only the summaries travel back to the client.

Random draws do not depend on the partitioning:

- ``weights --sample``: row i's uniform is the Philox draw keyed by (seed, i), i the
  global 0-based row index. Partition offsets come from the partition lengths (a cheap
  counting pass: Parquet/npy metadata, CSV non-blank lines), so every task knows the
  global index of its first row (``importance_kernels.uniforms``).
- ``pws sanitize``: a key's uniform is a pure function of (seed, key)
  (``pws_kernels.key_uniforms``); no index is needed.

Dask is imported here only, and only when the engine is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import logging
import math
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.load.files import atomic_write, excerpt_names, is_temp_name, open_input, write_text
from ampcalc.model.errors import AmpcalcError, DesignError

#: ``--scheduler`` values that run on dask's local schedulers (no cluster).
LOCAL_SCHEDULERS = ("synchronous", "threads", "processes")
OUTPUT_FORMATS = ("csv", "parquet")
PART_NAME = "part-{:05d}.{}"

_PARQUET_SUFFIXES = (".parquet", ".pq")
_SUMMARY_NAME = "_summary.json"


# --------------------------------------------------------------------------------------
# Engine, input and output
# --------------------------------------------------------------------------------------


def _module(name: str) -> Any:
    """Import an optional dependency (dask, distributed, pyarrow), untyped."""
    import importlib

    return importlib.import_module(name)


def require_dask() -> None:
    """Import dask (and pyarrow); a missing one is bad input (exit 2) naming the extra."""
    try:
        _module("dask.dataframe")
        _module("pyarrow")
    except ImportError as exc:
        raise AmpcalcError(
            f"--engine dask needs Dask, which is not installed ({exc.name or 'dask'}): "
            "install ampcalc[dask] (pip install 'ampcalc[dask]')"
        ) from None


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


_MMAP_THRESHOLD = 1 << 28


@contextlib.contextmanager
def scheduler(
    address: str | None, workers: int, dashboard: Callable[[str], None] | None = None
) -> Iterator[Any]:
    """What ``dask.compute(..., scheduler=...)`` gets.

    ``None``: a ``distributed.LocalCluster`` of ``workers`` processes (one thread each),
    closed afterwards. It listens on the loopback interface only (scheduler, its HTTP
    server, nanny and worker ports) and starts no dashboard unless ``dashboard`` is
    given, which is then called with the dashboard's address (127.0.0.1, a free port);
    without it the scheduler's HTTP server has no routes. Its worker processes
    ignore SIGINT: a Ctrl-C reaches the whole terminal's process group, and only the
    client handles it (stops the run, closes the cluster). ``synchronous``/``threads``/
    ``processes``: dask's local schedulers. Anything else: the address of a running
    scheduler (``dashboard`` gets its dashboard's address, if it has one).
    """
    if address in LOCAL_SCHEDULERS:
        if dashboard is not None:
            raise DesignError(
                f"--dashboard: the {address!r} scheduler has no dashboard (it needs a "
                "cluster: drop --scheduler for a local one)"
            )
        yield address
        return
    try:
        distributed = _module("distributed")
    except ImportError:
        raise AmpcalcError(
            "--engine dask needs dask.distributed for a cluster: install ampcalc[dask] "
            "(pip install 'ampcalc[dask]'), or pass --scheduler synchronous|threads"
        ) from None
    if address:
        try:
            client = distributed.Client(address, timeout="10s", set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise AmpcalcError(
                f"--scheduler: cannot connect to a Dask scheduler at {address!r} ({exc})"
            ) from None
        with client:
            link = getattr(client, "dashboard_link", None)
            if dashboard is not None and link:
                dashboard(str(link))
            yield client
        return
    if workers < 1:
        raise DesignError(f"--workers: expected at least 1, got {workers}")
    try:
        # distributed sets MALLOC_TRIM_THRESHOLD_ in its workers, which pins glibc's mmap
        # threshold at 128 KiB: every large temporary array becomes a fresh mmap and is
        # page-faulted in (pws sanitize at 10⁷ keys: 81 s of system time, twice the wall
        # time). A higher mmap threshold keeps such arrays on the heap.
        settings = {
            "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": _MMAP_THRESHOLD,
            # a worker the nanny restarts later ignores SIGINT too (``dask_setup``)
            "distributed.worker.preload": [__name__],
        }
        if dashboard is None:
            # the scheduler serves HTTP in any case (JSON, metrics): with no routes it
            # answers nothing (and its port, on 127.0.0.1, is a free one, not 8787)
            settings["distributed.scheduler.http.routes"] = []
        with _module("dask").config.set(settings), _sigint_ignored():
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host=LOOPBACK,
                dashboard_address=f"{LOOPBACK}:0" if dashboard is not None else None,
                scheduler_kwargs={"dashboard_address": f"{LOOPBACK}:0"},
                silence_logs=logging.CRITICAL,
            )
    except Exception as exc:
        raise AmpcalcError(
            f"could not start a local Dask cluster of {workers} workers: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    with (
        cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        if dashboard is not None:
            dashboard(str(cluster.dashboard_link))
        yield client


#: the interface the local cluster listens on
LOOPBACK = "127.0.0.1"


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the local cluster starts its worker processes: a signal
    ignored at exec stays ignored in the child (Python installs its KeyboardInterrupt
    handler only where SIGINT is at its default), so a Ctrl-C during the run reaches
    the client alone. A Ctrl-C during the start-up itself (2–3 s) is lost."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def dask_setup(worker: Any) -> None:
    """Worker preload (``distributed.worker.preload``): ignore SIGINT, as the workers
    started with the cluster do (``_sigint_ignored``)."""
    import signal

    with contextlib.suppress(ValueError):  # only the main thread may set it
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _plain_frames() -> Iterator[None]:
    """Keep partitions as the readers build them: no conversion of object columns to
    Arrow strings (the kernels take Python strings; a round trip costs more than the
    kernel)."""
    with _module("dask").config.set({"dataframe.convert-string": False}):
        yield


def _compute(sched: Any, *objs: Any) -> tuple[Any, ...]:
    try:
        return tuple(_module("dask").compute(*objs, scheduler=sched))
    except AmpcalcError:
        raise
    except Exception as exc:
        if _from_dask(exc):
            what = f"{type(exc).__name__}: {exc}"
            raise AmpcalcError(f"the Dask computation failed: {what}") from exc
        raise


def _from_dask(exc: BaseException) -> bool:
    """A failure of the cluster machinery (a lost worker, a timeout), not of ampcalc."""
    root = type(exc).__module__.split(".")[0]
    return root in ("distributed", "dask", "tornado") or isinstance(exc, (OSError, TimeoutError))


def _stats_meta(columns: dict[str, str]) -> Any:
    import pandas as pd

    return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in columns.items()})


def write_summary_text(out: str | Path, text: str) -> None:
    """``_summary.json`` next to the part files (the run's summary, as ``--json`` prints)."""
    write_text(Path(out) / _SUMMARY_NAME, text)


# --------------------------------------------------------------------------------------
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
    from ampcalc.load.records import open_source, select_columns

    def err(msg: str) -> Exception:
        return DesignError(msg)

    if part.kind != "parquet":
        src = open_source(Path(part.path), columns, probability_column, err)
        return _RecordPart(part.path, part.kind, src.names, src)
    from ampcalc.load.table import parquet_columns

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
    from ampcalc.load.table import count_rows, parquet_rows, read_npy

    if rp.kind == "parquet":
        return parquet_rows(rp.path)
    if rp.kind == "npy":
        return int(read_npy(rp.path, what="record file").shape[0])
    return count_rows(rp.path, header=rp.source.header is not None, what="record file")


def _read_records(rp: _RecordPart) -> Any:
    """A record partition as a DataFrame: columns x0..x{d−1} (float) and ``p``."""
    import pandas as pd

    from ampcalc.load.records import iter_chunks

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
    from ampcalc.load.table import parquet_numbers, read_parquet

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


def _csv_block(block: np.ndarray) -> str:
    """Rows as the one-process ``weights`` writes them (row as an integer, %.17g)."""
    from ampcalc.output.columns import savetxt_rows

    return savetxt_rows(block, int_first=True)


def _weights_partition(frame: Any, job: _WeightsJob, partition_info: Any = None) -> Any:
    """Probabilities, weights, ε̂ (and the Poisson draw) of one partition; writes its part."""
    import pandas as pd

    from ampcalc.load.records import RecordNorms, record_norms
    from ampcalc.math.importance import uniforms
    from ampcalc.schemes import importance as imp

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
                fh.write(_csv_block(np.column_stack([c[s : s + _BLOCK] for c in cols])))
    else:
        pa = _module("pyarrow")
        pq = _module("pyarrow.parquet")

        arrays = [pa.array(np.asarray(cols[0], dtype=np.int64))]
        arrays += [pa.array(np.asarray(c, dtype=float)) for c in cols[1:]]
        with atomic_write(path, binary=True) as fh:
            pq.write_table(pa.Table.from_arrays(arrays, names=header), fh)
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
    dd = _module("dask.dataframe")

    parts = anchored(resolve_inputs(inputs, ("csv", "parquet", "npy")), address)
    out_fmt = output_format(output or "", fmt, "csv")
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
    out = prepare_output(output)
    try:
        with scheduler(address, workers, dashboard) as sched, _plain_frames():
            lengths = _compute(sched, *[dask.delayed(_count_records)(rp) for rp in rparts])
            total = int(sum(lengths))
            if total == 0:
                raise DesignError(f"{inputs}: the partitions hold no records")
            m = params.expected_size
            if params.probabilities == "privacy-constrained" and m is not None and m > total:
                raise DesignError(f"expected size {m:g} exceeds the {total} records of the input")
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
            meta = {f"x{j}": "float64" for j in range(len(first.names))}
            if params.probability_column is not None:
                meta["p"] = "float64"
            frame = dd.from_map(
                _read_records, rparts, meta=_stats_meta(meta), enforce_metadata=False
            )
            stats = frame.map_partitions(
                _weights_partition,
                dask.delayed(job),
                meta=_stats_meta(_WEIGHTS_STATS),
                enforce_metadata=False,
                align_dataframes=False,
            )
            (table,) = _compute(sched, stats)
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


# --------------------------------------------------------------------------------------
# Weighted samples (``ampcalc pws sanitize``)
# --------------------------------------------------------------------------------------


def _sample_header(part: Partition) -> list[str]:
    if part.kind == "parquet":
        from ampcalc.load.table import parquet_columns

        header = parquet_columns(part.path)
        if "key" not in header or "frequency" not in header:
            raise DesignError(
                f"{part.path}: expected columns `key` and `frequency` "
                f"(got {excerpt_names(header)})"
            )
        return header
    from ampcalc.records.pws_files import read_columns

    try:
        header, _, _ = next(read_columns(part.path, 1))
    except StopIteration:
        # a header line and no rows: read_columns yields nothing
        from ampcalc.load.table import first_header

        header = first_header(part.path, what="sample file")
    return list(header)


def _read_sample(part: Partition, header: tuple[str, ...], chunk: int) -> Any:
    """A sample partition as a DataFrame of Python objects (strings for CSV, as the
    one-process path reads them) with its line numbers in ``__line__``."""
    import pandas as pd

    cols: list[list[Any]] = [[] for _ in header]
    lines: list[int] = []
    if part.kind == "parquet":
        cols, lines = _read_parquet_sample(part, header)
    else:
        from ampcalc.records.pws_files import read_columns

        for head, lns, chunk_cols in read_columns(part.path, chunk):
            if tuple(head) != header:
                raise DesignError(
                    f"{part.path}:1: columns ({excerpt_names(head)}) differ from the first "
                    f"partition's ({excerpt_names(header)})"
                )
            for c, values in zip(cols, chunk_cols, strict=True):
                c.extend(values)
            lines.extend(lns)
    frame = {
        h: pd.Series(np.array(c, dtype=object), dtype=object)
        for h, c in zip(header, cols, strict=True)
    }
    frame["__line__"] = pd.Series(np.asarray(lines, dtype=np.int64))
    return pd.DataFrame(frame)


def _read_parquet_sample(
    part: Partition, header: tuple[str, ...]
) -> tuple[list[list[Any]], list[int]]:
    from ampcalc.load.table import read_parquet

    pa = _module("pyarrow")
    table = read_parquet(part.path)
    if tuple(table.column_names) != header:
        raise DesignError(
            f"{part.path}: columns ({excerpt_names(table.column_names)}) differ from the "
            f"first partition's ({excerpt_names(header)})"
        )
    cols: list[list[Any]] = []
    for name in header:
        col = table.column(name)
        if col.null_count:
            k = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise DesignError(f"{part.path}:{k + 1}: column {name!r} is empty (null)")
        if name == "key":
            if pa.types.is_integer(col.type):
                values = [str(v) for v in col.to_pylist()]
            elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                values = col.to_pylist()
            else:
                raise DesignError(
                    f"{part.path}: column 'key' is {col.type}; expected strings or integers"
                )
        elif name == "frequency":
            if pa.types.is_integer(col.type):
                values = col.to_numpy().astype(np.int64).tolist()
            elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                values = col.to_pylist()
            else:
                raise DesignError(
                    f"{part.path}: column 'frequency' is {col.type}; expected whole numbers"
                )
        else:
            values = col.to_pylist()
        cols.append(values)
    return cols, list(range(1, table.num_rows + 1))


@dataclass(frozen=True)
class _SanitizeJob:
    token: str
    base: Any  # records.pws_sanitise.PwsSanitiser at the design's table size
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

_SANITIZE_STATS = {
    "keys": "int64",
    "reported": "int64",
    "table": "int64",
    "hashes": "object",
}


def _sanitiser(job: _SanitizeJob, top: int, where: str) -> Any:
    """This process's table for the job, extended to frequency ``top`` if allowed (rows
    depend only on earlier rows: a longer table gives the same rows below ``top``)."""
    import copy

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


def _sanitize_partition(frame: Any, job: _SanitizeJob, partition_info: Any = None) -> Any:
    """Algorithm 2 of 004 on one partition (``pws_kernels.sanitize_keys``); writes its part."""
    import pandas as pd

    from ampcalc.math import pws as K
    from ampcalc.records.pws_files import check_duplicates, check_score, parse_freqs

    i = int(partition_info["number"]) if partition_info else 0
    part = job.parts[i]
    header = list(job.header)
    ki, fi = header.index("key"), header.index("frequency")
    si = header.index("score") if "score" in header else None
    extra = [c for c in range(len(header)) if c not in (ki, fi, si)]
    lines = frame["__line__"].tolist()
    keys = frame["key"].tolist()
    freqs = parse_freqs(frame["frequency"].tolist(), part.path, lines)
    if si is not None:
        for n, v in enumerate(frame["score"].tolist()):
            check_score(v, job.params, int(freqs[n]), part.path, lines[n])
    chunk_keys = dict(zip(keys, lines, strict=True))
    if len(chunk_keys) != len(keys):
        check_duplicates(keys, lines, {}, part.path)
    top = int(freqs.max()) if freqs.size else 0
    san = _sanitiser(job, top, f"{part.path}:{lines[int(np.argmax(freqs))]}" if top else "")
    if freqs.size:
        kept, tokens = K.sanitize_keys(keys, freqs, job.seed, p=san.p, rows=san.rows)
    else:
        kept, tokens = np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    idx = np.flatnonzero(kept)
    out_header = ["key", *(["frequency"] if job.frequencies else []), *[header[c] for c in extra]]
    out_cols: list[list[Any]] = [[keys[n] for n in idx.tolist()]]
    if job.frequencies:
        assert tokens is not None
        out_cols.append(tokens[idx].tolist())
    for c in extra:
        values = frame[header[c]].tolist()
        out_cols.append([values[n] for n in idx.tolist()])
    path = Path(job.out) / PART_NAME.format(i, job.fmt)
    if job.fmt == "csv":
        import csv

        with atomic_write(path, newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(out_header)
            writer.writerows(zip(*out_cols, strict=True))
    else:
        pa = _module("pyarrow")
        pq = _module("pyarrow.parquet")

        arrays = [pa.array(out_cols[0], type=pa.string())]
        if job.frequencies:
            arrays.append(pa.array(out_cols[1], type=pa.int64()))
        arrays += [pa.array(c) for c in out_cols[1 + job.frequencies :]]
        with atomic_write(path, binary=True) as fh:
            pq.write_table(pa.Table.from_arrays(arrays, names=out_header), fh)
    # keys are distinct within the partition (checked above); the client sorts the hashes
    hashes = K.key_hashes(keys) if keys else np.zeros(0, np.uint64)
    return pd.DataFrame(
        {
            "keys": [len(keys)],
            "reported": [int(idx.size)],
            "table": [max(job.base.n, top)],
            "hashes": [hashes],
        }
    )


class _SharedSanitiser:
    """The process's table for a job (``_sanitiser``) as ``pws_stream.sanitise_sample``
    uses it: ``ensure`` extends it under the lock; ``p`` and ``rows`` are read after."""

    def __init__(self, job: _SanitizeJob) -> None:
        self.job = job
        self.san = _sanitiser(job, 0, "")
        self.top = 0

    def ensure(self, top: int, where: str) -> None:
        self.san = _sanitiser(self.job, top, where)
        self.top = max(self.top, top)

    @property
    def p(self) -> Any:
        return self.san.p

    @property
    def rows(self) -> Any:
        return self.san.rows


def _sanitize_task(i: int, job: _SanitizeJob) -> dict[str, Any]:
    """Partition ``i``: a CSV partition is read, checked, hashed and sanitised by the
    one-process byte path (``pws_stream.sanitise_sample``: byte columns, vectorised
    hashes, duplicates by one sort) and written by its writer; a Parquet partition
    through string columns (``_read_sample``, ``_sanitize_partition``)."""
    part = job.parts[i]
    if part.kind != "csv":
        frame = _read_sample(part, job.header, job.chunk)
        stats = _sanitize_partition(frame, job, {"number": i})
        return {c: stats[c].iloc[0] for c in _SANITIZE_STATS}
    import csv

    from ampcalc.records.pws_stream import cells, sanitise_sample, write_chunk

    header = list(job.header)

    def same_header(head: list[str], extra: list[int]) -> None:
        if tuple(head) != job.header:
            raise DesignError(
                f"{part.path}:1: columns ({excerpt_names(head)}) differ from the first "
                f"partition's ({excerpt_names(header)})"
            )

    ki, fi = header.index("key"), header.index("frequency")
    si = header.index("score") if "score" in header else None
    extra = [c for c in range(len(header)) if c not in (ki, fi, si)]
    out_header = ["key", *(["frequency"] if job.frequencies else []), *[header[c] for c in extra]]
    san = _SharedSanitiser(job)
    hashes: list[np.ndarray] = []
    keys = reported = 0
    path = Path(job.out) / PART_NAME.format(i, job.fmt)
    chunks = sanitise_sample(
        part.path, job.chunk, san, job.params, job.seed, on_header=same_header
    )
    if job.fmt == "csv":
        with atomic_write(path, newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(out_header)
            for chunk in chunks:
                write_chunk(fh, writer, chunk, job.frequencies)
                assert chunk.hashes is not None
                hashes.append(chunk.hashes)
                keys, reported = chunk.read, reported + int(chunk.kept.size)
    else:
        pa = _module("pyarrow")
        pq = _module("pyarrow.parquet")
        cols: list[list[Any]] = [[] for _ in out_header]
        for chunk in chunks:
            ids = chunk.kept.tolist()
            kcells = chunk.keys.tolist()
            block = [[kcells[n] for n in ids]]
            if job.frequencies:
                assert chunk.tokens is not None
                block.append(chunk.tokens[chunk.kept].tolist())
            for c in extra:
                values = cells(chunk.columns[c])
                block.append([values[n] for n in ids])
            for col, got in zip(cols, block, strict=True):
                col.extend(got)
            assert chunk.hashes is not None
            hashes.append(chunk.hashes)
            keys, reported = chunk.read, reported + len(ids)
        arrays = [pa.array(cols[0], type=pa.string())]
        if job.frequencies:
            arrays.append(pa.array(cols[1], type=pa.int64()))
        # CSV cells are strings (also in an empty partition: not Arrow's null type)
        arrays += [pa.array(c, type=pa.string()) for c in cols[1 + job.frequencies :]]
        with atomic_write(path, binary=True) as fh:
            pq.write_table(pa.Table.from_arrays(arrays, names=out_header), fh)
    return {
        "keys": keys,
        "reported": reported,
        "table": max(job.base.n, san.top),
        "hashes": np.concatenate(hashes) if hashes else np.zeros(0, np.uint64),
    }


def _hash_hits(i: int, job: _SanitizeJob, wanted: np.ndarray) -> list[tuple[str, int]]:
    """(key, line) of partition ``i``'s keys whose hash is in ``wanted``."""
    from ampcalc.math import pws as K

    part = job.parts[i]
    if part.kind != "csv":
        frame = _read_sample(part, job.header, job.chunk)
        keys = frame["key"].tolist()
        hit = np.isin(K.key_hashes(keys), wanted) if keys else np.zeros(0, dtype=bool)
        lines = frame["__line__"].tolist()
        return [(keys[n], int(lines[n])) for n in np.flatnonzero(hit).tolist()]
    from ampcalc.load.bytecols import ByteColumn
    from ampcalc.records.pws_files import read_sample

    found: list[tuple[str, int]] = []
    for head, lines, cols in read_sample(part.path, job.chunk):
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
        token=uuid.uuid4().hex,
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
