"""Keys per CPU second of a ``pws sanitize`` worker on a running cluster, beside one process.

Starts a ``dask scheduler`` and ``--workers`` ``dask worker`` processes (one thread each,
with their nannies) on 127.0.0.1, as a cluster is run, and sends the 10⁷-key
``pws sanitize --frequencies`` job of ``bench_dask.py`` to it with ``--scheduler
tcp://127.0.0.1:PORT``, on 8 CSV partitions and on 8 Parquet partitions. The CPU time
(user + system) of every process is read before and after each job (``psutil``), so a
worker's figure is its own: keys it sanitised per CPU second it spent, its share of the
job (the scheduler assigns partitions; the sum over workers is the job). The client's
and the scheduler's CPU are given beside it. Each job runs twice: the first on fresh
workers (they import ampcalc and build their tables), the second on warm ones (what a
long-running cluster sees). One process: the same job on the whole CSV file, CPU of the
command beyond that of a one-key job (the interpreter's start-up and imports).

Outputs are checked to be the one-process rows (CSV parts byte for byte; the Parquet
parts' keys and frequencies). Each job's CPU split and the load average are printed on
stderr: the figures are CPU times, so a busy machine inflates them less than wall times,
but still.

    python benchmarks/bench_dask_worker.py [--rows 10000000] [--workers 2] [--repeat 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_dask import PARTS, _write_sample, rows_hash, run_timed  # noqa: E402


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _cpu(pid: int) -> float:
    """User + system CPU time of a process (s)."""
    return sum(_times(pid))


def _times(pid: int) -> tuple[float, float]:
    import psutil

    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0, 0.0
    return float(t.user), float(t.system)


@contextlib.contextmanager
def cluster(workers: int, d: Path) -> Iterator[tuple[str, int, list[int]]]:
    """(address, scheduler pid, worker pids) of a cluster on 127.0.0.1, ended after."""
    import distributed
    import psutil

    info = d / "scheduler.json"
    procs: list[subprocess.Popen[bytes]] = []

    def start(cmd: list[str]) -> None:
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", *cmd],
                env=_env(),
                cwd=d,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )

    try:
        start(
            ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
             "--scheduler-file", str(info)]
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while not info.exists() or not info.read_text().strip():
            if time.monotonic() > deadline or procs[0].poll() is not None:
                raise RuntimeError("the scheduler did not start")
            time.sleep(0.1)
        time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        for k in range(workers):
            start(
                ["distributed.cli.dask_worker", address, "--host", "127.0.0.1",
                 "--nthreads", "1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
                 "--name", f"w{k}"]
            )  # fmt: skip
        with distributed.Client(address, timeout=120, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=120)
        pids = []
        for nanny in procs[1:]:
            kids = psutil.Process(nanny.pid).children(recursive=True)
            pids += [nanny.pid, *(k.pid for k in kids)]
        yield address, procs[0].pid, pids
    finally:
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _load() -> float:
    with open("/proc/loadavg") as fh:
        return float(fh.read().split()[0])


def measure(
    quick: bool = False, n_rows: int | None = None, workers: int = 2, repeat: int = 1
) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq
    from _rows import row

    n = n_rows or (1_000_000 if quick else 10_000_000)
    exe = [sys.executable, "-m", "ampcalc"]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        _write_sample(d, n)
        p = ["--design", str(d / "pws.yaml"), "--seed", "1", "--frequencies"]
        (d / "tiny.csv").write_text("key,frequency\nk1,1\n")
        one: list[float] = []
        for _ in range(repeat):
            _, cpu0, _ = run_timed([*exe, "pws", "sanitize", str(d / "tiny.csv"), *p, "-o",
                                    str(d / "tiny-out.csv")], cwd=ROOT)  # fmt: skip
            _, cpu, _ = run_timed(
                [*exe, "pws", "sanitize", str(d / "sample.csv"), *p, "-o", str(d / "s.csv")],
                cwd=ROOT,
            )
            one.append(n / max(cpu - cpu0, 1e-9))
            print(f"# one process: CPU {cpu:.2f} s, empty job {cpu0:.2f} s", file=sys.stderr)
        r1 = statistics.median(one)
        rows.append(row(f"pws sanitize {n:.0e} keys, one process: keys per CPU s", r1, "keys/s"))
        want = rows_hash([d / "s.csv"])
        with cluster(workers, d) as (address, sched, pids):
            jobs = [("sample-csv", "csv", "fresh", 1), ("sample-csv", "csv", "warm", repeat)]
            jobs.append(("sample-pq", "parquet", "warm", repeat))
            for src, fmt, state, times in jobs:
                per: list[float] = []
                client: list[float] = []
                for rep in range(times):
                    out = d / f"out-{src}-{state}-{rep}"
                    shutil.rmtree(out, ignore_errors=True)
                    before = {pid: _cpu(pid) for pid in [sched, *pids]}
                    sys0 = sum(_times(pid)[1] for pid in pids)
                    _, cpu_client, _ = run_timed(
                        [*exe, "pws", "sanitize", str(d / src), *p, "--engine", "dask",
                         "--scheduler", address, "-o", str(out), "--output-format", fmt],
                        cwd=ROOT,
                    )  # fmt: skip
                    spent = {pid: _cpu(pid) - t for pid, t in before.items()}
                    work = sum(v for pid, v in spent.items() if pid != sched)
                    system = sum(_times(pid)[1] for pid in pids) - sys0
                    busy = [f"{v:.2f}" for pid, v in spent.items() if pid != sched]
                    per.append(n / max(work, 1e-9))
                    client.append(cpu_client)
                    print(
                        f"# {src} {state}: workers' CPU {work:.2f} s "
                        f"({', '.join(busy)}; system {system:.2f} s)"
                        f", scheduler {spent[sched]:.2f} s, client {cpu_client:.2f} s, "
                        f"load {_load():.1f}",
                        file=sys.stderr,
                    )
                    parts = sorted(out.glob("part-*"))
                    if fmt == "csv":
                        same = rows_hash(parts) == want
                    else:
                        import pyarrow as pa

                        t = pa.concat_tables([pq.read_table(f) for f in parts])
                        text = "".join(
                            f"{k},{v}\n"
                            for k, v in zip(
                                t.column("key").to_pylist(),
                                t.column("frequency").to_pylist(),
                                strict=True,
                            )
                        )
                        import hashlib

                        same = hashlib.sha256(text.encode()).hexdigest() == want
                    if not same:
                        raise RuntimeError(f"{src}: output differs from one process")
                rw = statistics.median(per)
                label = "CSV" if fmt == "csv" else "Parquet"
                rows.append(
                    row(
                        f"  a worker, {PARTS} {label} partitions, {state} workers: keys per CPU s",
                        rw,
                        "keys/s",
                        note=f"{r1 / rw:.2f}x fewer than one process; client CPU "
                        f"{statistics.median(client):.2f} s",
                    )
                )
    return rows


def main() -> int:
    from _rows import print_rows

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print_rows(measure(n_rows=args.rows, workers=args.workers, repeat=args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
