"""Benchmark: the same 10⁷-row job in one process and on a local Dask cluster (2 workers).

Jobs (each a fresh CLI process, so start-up and, for Dask, the cluster's start are
included):

- ``weights``: privacy-constrained probabilities, weights and ε̂ of 10⁷ records × 4
  columns, written as CSV. One process reads one ``.npy``; Dask reads the same rows as
  8 ``.npy`` partitions (same parser) and writes 8 CSV parts; also Parquet in and out.
- ``pws sanitize --frequencies``: 10⁷ keys with Zipf frequencies. One process reads one
  CSV; Dask reads 8 CSV partitions (and 8 Parquet partitions) and writes part files.

Peak memory is the largest sum of RSS over the process tree (client, scheduler and
workers), sampled every 50 ms. The CSV outputs of both engines are checked to be
identical (hash of the rows). Prints a table; nonzero only on a crash.

    python benchmarks/bench_dask.py [--rows N] [--workers 2]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

PARTS = 8


def run_measured(cmd: list[str]) -> tuple[float, float]:
    """Wall time (s) and peak RSS summed over the process tree (MB) of a command."""
    t, _, peak = run_timed(cmd)
    return t, peak


def run_timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, float]:
    """Wall time (s), CPU time (user + system of the process and the children it
    waited for: a local cluster's workers included, s) and peak RSS summed over the
    process tree (MB) of a command."""
    import os

    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd
    )
    peak = 0.0
    done = threading.Event()

    def poll() -> None:
        nonlocal peak
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not done.is_set():
            total = 0
            try:
                for p in [root, *root.children(recursive=True)]:
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            peak = max(peak, total / 2**20)
            time.sleep(0.05)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    t = time.perf_counter() - t0
    done.set()
    th.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{err}")
    return t, usage.ru_utime + usage.ru_stime, peak


def rows_hash(files: list[Path]) -> str:
    """Hash of the data rows of CSV files read in order (each file's header skipped)."""
    h = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            fh.readline()
            for block in iter(lambda fh=fh: fh.read(1 << 24), b""):
                h.update(block)
    return h.hexdigest()


def _write_records(d: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    x = np.lib.format.open_memmap(d / "records.npy", mode="w+", dtype=float, shape=(n, 4))
    step = 1_000_000
    for s in range(0, n, step):
        m = min(step, n - s)
        x[s : s + m] = rng.normal(scale=0.3, size=(m, 4))
    x.flush()
    import pyarrow as pa
    import pyarrow.parquet as pq

    (d / "records-npy").mkdir()
    (d / "records-pq").mkdir()
    bounds = np.linspace(0, n, PARTS + 1).astype(int)
    for i in range(PARTS):
        block = np.asarray(x[bounds[i] : bounds[i + 1]])
        np.save(d / "records-npy" / f"part-{i}.npy", block)
        table = pa.table({f"c{j}": block[:, j] for j in range(4)})
        pq.write_table(table, d / "records-pq" / f"part-{i}.parquet")
    del x
    (d / "weights.yaml").write_text(
        "mechanism: {profile: laplace-sum, scale: 20.0}\n"
        "sampling: {scheme: importance, records: records.npy, "
        "probabilities: privacy-constrained, radius: 15.0}\n"
        "target: {epsilon_prime: 1.0}\n"
    )


def _write_sample(d: Path, n: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    (d / "sample-csv").mkdir()
    (d / "sample-pq").mkdir()
    bounds = np.linspace(0, n, PARTS + 1).astype(int)
    with open(d / "sample.csv", "w") as whole:
        whole.write("key,frequency\n")
        for i in range(PARTS):
            a, b = bounds[i], bounds[i + 1]
            w = rng.zipf(1.5, b - a).clip(1, 10_000)
            keys = np.char.zfill(np.char.add("k", np.arange(a, b).astype(str)), 9)
            text = "".join(f"{k},{v}\n" for k, v in zip(keys.tolist(), w.tolist(), strict=True))
            whole.write(text)
            (d / "sample-csv" / f"part-{i}.csv").write_text("key,frequency\n" + text)
            table = pa.table({"key": keys.tolist(), "frequency": w.astype(np.int64)})
            pq.write_table(table, d / "sample-pq" / f"part-{i}.parquet")
    (d / "pws.yaml").write_text(
        "target: {epsilon_prime: 0.1, delta_prime: 0.001}\n"
        "sampling: {scheme: pws, method: ppswor, threshold: 0.01}\n"
    )


def measure(
    quick: bool = False, n_rows: int | None = None, workers: int = 2
) -> list[dict[str, Any]]:
    """Rows for ``benchmarks/run.py`` (``quick``: 10⁶ rows)."""
    from _rows import row

    n = n_rows or (1_000_000 if quick else 10_000_000)
    exe = [sys.executable, "-m", "ampcalc"]
    dask = ["--engine", "dask", "--workers", str(workers)]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        t0 = time.perf_counter()
        _write_records(d, n)
        _write_sample(d, n)
        prep = time.perf_counter() - t0
        w = str(d / "weights.yaml")
        jobs = [
            ("weights", "one process, .npy -> CSV", [*exe, "weights", w, "-o", str(d / "w.csv")]),
            (
                "weights",
                f"Dask {workers} workers, {PARTS} .npy -> CSV parts",
                [*exe, "weights", w, *dask, "--input", str(d / "records-npy"), "-o",
                 str(d / "w-dask")],
            ),
            (
                "weights",
                f"Dask {workers} workers, {PARTS} Parquet -> Parquet parts",
                [*exe, "weights", w, *dask, "--input", str(d / "records-pq"), "-o",
                 str(d / "w-dask.parquet")],
            ),
        ]  # fmt: skip
        p = ["--design", str(d / "pws.yaml"), "--seed", "1", "--frequencies"]
        jobs += [
            (
                "pws sanitize",
                "one process, CSV -> CSV",
                [*exe, "pws", "sanitize", str(d / "sample.csv"), *p, "-o", str(d / "s.csv")],
            ),
            (
                "pws sanitize",
                f"Dask {workers} workers, {PARTS} CSV -> CSV parts",
                [*exe, "pws", "sanitize", str(d / "sample-csv"), *p, *dask, "-o",
                 str(d / "s-dask")],
            ),
            (
                "pws sanitize",
                f"Dask {workers} workers, {PARTS} Parquet -> Parquet parts",
                [*exe, "pws", "sanitize", str(d / "sample-pq"), *p, *dask, "-o",
                 str(d / "s-dask.parquet")],
            ),
        ]  # fmt: skip
        one: dict[str, float] = {}
        for job, how, cmd in jobs:
            t, mb = run_measured(cmd)
            rows.append(row(f"{job} {n:.0e} rows: {how}", t, "s"))
            rows.append(row(f"  peak RSS (process tree): {how}", mb, "MB"))
            if job in one:
                rows.append(row(f"  speed-up over one process: {how}", one[job] / t, "x"))
            one.setdefault(job, t)
        same_w = rows_hash([d / "w.csv"]) == rows_hash(sorted((d / "w-dask").glob("part-*")))
        same_s = rows_hash([d / "s.csv"]) == rows_hash(sorted((d / "s-dask").glob("part-*")))
        if not (same_w and same_s):
            raise RuntimeError(f"outputs differ: weights {same_w}, pws sanitize {same_s}")
        rows.append(
            row(
                "Dask CSV parts identical to the one-process output (weights, pws)",
                1.0,
                "",
                note=f"input generation {prep:.0f} s",
            )
        )
    return rows


def main() -> int:
    from _rows import print_rows

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000, help="records / keys")
    ap.add_argument("--workers", type=int, default=2, help="workers of the local cluster")
    args = ap.parse_args()
    print_rows(measure(n_rows=args.rows, workers=args.workers))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
