"""Per-record work on Dask: ``--engine dask`` of ``ampcalc weights`` and ``pws sanitize``.

The input is a file, a directory or a glob of partitions (Parquet or CSV; ``.npy`` too
for record files). Each file is one partition, taken in natural name order (``part-2``
before ``part-10``). For ``weights`` the partitions become a ``dask.dataframe``
(``from_map``) and the existing per-record kernels run in ``map_partitions``; for
``pws sanitize`` each partition is one delayed task that runs the one-process byte path
on its file (``pws_stream.sanitize_sample``; Parquet partitions from Arrow's buffers,
``_parquet_chunk``). Every task reads its partition with the same parser as the one-process path,
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


_TUNED: list[bool] = []


def _tune_worker_malloc() -> None:
    """In a Dask worker (a local cluster's, or one of ``--scheduler ADDRESS``), once:
    the mmap threshold the local cluster sets through ``MALLOC_MMAP_THRESHOLD_``, here
    with glibc's ``mallopt`` (distributed's nannies set ``MALLOC_TRIM_THRESHOLD_``,
    which pins the threshold at 128 KiB, so every large temporary array is a fresh
    mmap, page-faulted in: about half a worker's CPU time on ``pws sanitize``), and
    freed heap kept up to twice that (the 64 KiB trim threshold returns every freed page
    after a task, and the next task faults them in again).
    glibc caps the value at 32 MiB (64-bit); other C libraries: nothing is done."""
    if _TUNED:
        return
    _TUNED.append(True)
    import sys

    if "distributed" not in sys.modules or not sys.platform.startswith("linux"):
        return
    try:
        sys.modules["distributed"].get_worker()
    except ValueError:
        return  # not in a worker (dask's local schedulers run in the client)
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError, TypeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        for value in (_MMAP_THRESHOLD, 1 << 25):  # the second: glibc's cap
            if libc.mallopt(m_mmap_threshold, value) == 1:
                # and keep up to twice that of freed heap for the next task, as glibc's
                # own adjustment does (distributed's 64 KiB returns every page)
                libc.mallopt(m_trim_threshold, 2 * value)
                break


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


@dataclass(frozen=True)
class _SanitizeJob:
    token: str  # names the job's tables in a worker (``_sanitiser``; ``table_token``)
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
    of a running cluster keeps the tables it extended (``_sanitiser``, the last 4) for
    the next job of the design instead of computing the rows again. Rows depend only on
    the design (and earlier rows), so tables extended by another job give the same
    rows."""
    import hashlib
    import pickle

    try:
        blob = pickle.dumps((params, bool(frequencies), bool(extend)), protocol=4)
    except Exception:  # a design that does not pickle alike: no sharing
        return uuid.uuid4().hex
    return hashlib.sha256(blob).hexdigest()


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


class _SharedSanitiser:
    """The process's table for a job (``_sanitiser``) as ``pws_stream.sanitize_sample``
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


def _arrow_bytes(arr: Any) -> Any:
    """A ``pyarrow`` string (or large string) array, without nulls, as a
    ``load.bytecols.ByteColumn`` over its own data buffer (no str per cell)."""
    from ampcalc.load.bytecols import ByteColumn

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
    from ampcalc.load.table import read_parquet

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
    from ampcalc.load.keyset import KeyLog
    from ampcalc.math import pws as K
    from ampcalc.records.pws_files import check_score, duplicate_message, parse_freqs
    from ampcalc.records.pws_stream import SanitizedChunk

    header = list(job.header)
    cols = _parquet_columns(part, job.header)
    ki, fi = header.index("key"), header.index("frequency")
    si = header.index("score") if "score" in header else None
    extra = [c for c in range(len(header)) if c not in (ki, fi, si)]
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
    from ampcalc.output.keys_csv import gather_rows as gather  # rows of pieces of one buffer

    pa = _module("pyarrow")
    start = kcol.start[idx]
    size = kcol.end[idx] - start
    offsets = np.zeros(idx.size + 1, dtype=np.int32 if size.sum() < 2**31 else np.int64)
    np.cumsum(size, out=offsets[1:])
    data = gather([(kcol.buf, start, size)]) if idx.size else np.zeros(0, np.uint8)
    kind = pa.string() if offsets.dtype == np.int32 else pa.large_string()
    arr = pa.Array.from_buffers(kind, idx.size, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return arr.cast(pa.string()) if kind != pa.string() else arr


def _sanitize_task(i: int, job: _SanitizeJob) -> dict[str, Any]:
    """Partition ``i``, read, checked, hashed and sanitised as in one process: a CSV
    partition by the one-process byte path (``pws_stream.sanitize_sample``: byte
    columns, vectorised hashes, duplicates by one sort), a Parquet partition from
    Arrow's buffers (``_parquet_chunk``: the same checks and draws); its part written
    by the one-process CSV writer or from the key bytes (Parquet)."""
    _tune_worker_malloc()
    import csv

    from ampcalc.records.pws_stream import cells, sanitize_sample, write_chunk

    part = job.parts[i]
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
    if part.kind == "csv":
        chunks: Any = sanitize_sample(
            part.path, job.chunk, san, job.params, job.seed, on_header=same_header
        )
    else:
        chunks = iter([_parquet_chunk(part, job, san)])
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
        blocks: list[list[Any]] = [[] for _ in out_header]
        for chunk in chunks:
            ids = chunk.kept.tolist()
            block: list[Any] = [_arrow_keys(chunk.keys, chunk.kept)]
            if job.frequencies:
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
        n_fixed = 1 + job.frequencies
        arrays = [
            pa.concat_arrays(blocks[0]) if blocks[0] else pa.array([], type=pa.string()),
            *([pa.concat_arrays(blocks[1]) if blocks[1] else pa.array([], pa.int64())]
              if job.frequencies else []),
        ]  # fmt: skip
        for col in blocks[n_fixed:]:
            values = [v for got in col for v in got]
            # CSV cells are strings (also in an empty partition: not Arrow's null type);
            # Parquet columns pass through with the types Arrow infers from their values
            arrays.append(pa.array(values, type=pa.string() if part.kind == "csv" else None))
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
    from ampcalc.load.bytecols import ByteColumn
    from ampcalc.math import pws as K
    from ampcalc.records.pws_files import read_sample

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
