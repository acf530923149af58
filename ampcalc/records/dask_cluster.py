"""The Dask engine's machinery: importing Dask, the scheduler a run computes on, and the
local cluster's settings.

``scheduler`` gives what ``dask.compute`` gets: one of dask's local schedulers, a client
of a running scheduler (``--scheduler ADDRESS``), or a ``distributed.LocalCluster`` it
starts and closes. The local cluster listens on the loopback interface only, starts no
dashboard unless asked, and its worker processes ignore SIGINT (only the client handles a
Ctrl-C). Its workers keep large temporary arrays on the heap (``_tune_worker_malloc``).

This module is also the workers' preload (``dask_setup``). Dask is imported here only
when the engine is used.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ampcalc.model.errors import AmpcalcError, DesignError

#: ``--scheduler`` values that run on dask's local schedulers (no cluster).
LOCAL_SCHEDULERS = ("synchronous", "threads", "processes")


def _module(name: str) -> Any:
    """Import an optional dependency (dask, distributed, pyarrow), untyped."""
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
    cluster = _local_cluster(distributed, workers, dashboard is not None)
    with (
        cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        if dashboard is not None:
            dashboard(str(cluster.dashboard_link))
        yield client


def _local_cluster(distributed: Any, workers: int, with_dashboard: bool) -> Any:
    """A ``LocalCluster`` of ``workers`` one-thread processes on the loopback interface,
    started with SIGINT ignored (its workers inherit that) and, unless
    ``with_dashboard``, with no HTTP routes."""
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
        if not with_dashboard:
            # the scheduler serves HTTP in any case (JSON, metrics): with no routes it
            # answers nothing (and its port, on 127.0.0.1, is a free one, not 8787)
            settings["distributed.scheduler.http.routes"] = []
        with _module("dask").config.set(settings), _sigint_ignored():
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host=LOOPBACK,
                dashboard_address=f"{LOOPBACK}:0" if with_dashboard else None,
                scheduler_kwargs={"dashboard_address": f"{LOOPBACK}:0"},
                silence_logs=logging.CRITICAL,
            )
    except Exception as exc:
        raise AmpcalcError(
            f"could not start a local Dask cluster of {workers} workers: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return cluster


#: the interface the local cluster listens on
LOOPBACK = "127.0.0.1"


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the local cluster starts its worker processes: a signal
    ignored at exec stays ignored in the child (Python installs its KeyboardInterrupt
    handler only where SIGINT is at its default), so a Ctrl-C during the run reaches
    the client alone. A Ctrl-C during the start-up itself (2–3 s) is lost."""
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
    if "distributed" not in sys.modules or not sys.platform.startswith("linux"):
        return
    try:
        sys.modules["distributed"].get_worker()
    except ValueError:
        return  # not in a worker (dask's local schedulers run in the client)
    import ctypes  # lazy: ctypes, platform-specific
    import ctypes.util  # lazy: ctypes, platform-specific

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
