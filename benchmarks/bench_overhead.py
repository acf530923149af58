"""Python overhead: single calls, big outputs, PWS and per-record work (one row each).

Each figure is the median of ``--repeat`` runs; the ratios (one ``api.bound`` call
against the formula with ``math``, a vectorised ``bound`` against the raw numpy
formula) are taken interleaved in the same loop, so load from other processes hits
both sides alike. CLI jobs run as fresh processes (start-up included); their peak
memory is the child's own maximum RSS (``os.wait4``), and their output goes to a file.

    python benchmarks/bench_overhead.py [--quick] [--repeat 3] [--only api sweep-json ...]
    python benchmarks/bench_overhead.py --root /path/to/another/checkout   # same figures there
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REPEAT = 3


def run_cli(root: Path, args: list[str], stdout: Path | None = None) -> tuple[float, float]:
    """Wall time (s) and peak RSS (MB) of ``python -m ampcalc ARGS``.

    The peak is the child's ``VmHWM`` (high-water RSS of its own address space, so not
    the parent's RSS a fork starts from), read from ``/proc`` every 20 ms until it exits.
    """
    if stdout is not None:
        # the previous run's file (up to 431 MB) is written back first, then overwritten
        # as `ampcalc ... > FILE` does: otherwise its writeback runs during this run
        # (0.4-1 s of noise). A new file after deleting the old one measures 0.3-0.5 s
        # slower on this disk (see README.md, "Third pass").
        os.sync()
        time.sleep(0.3)
    out = open(stdout, "wb") if stdout is not None else subprocess.DEVNULL
    errf = tempfile.TemporaryFile()
    peak = 0.0
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "ampcalc", *args],
            cwd=root,
            stdout=out,
            stderr=errf,
        )
        status = Path(f"/proc/{proc.pid}/status")
        while proc.poll() is None:
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        t = time.perf_counter() - t0
        errf.seek(0)
        err = errf.read()
    finally:
        if stdout is not None:
            out.close()  # type: ignore[union-attr]
        errf.close()
    if proc.returncode != 0:
        raise RuntimeError(f"ampcalc {' '.join(args)} exited {proc.returncode}:\n{err.decode()}")
    return t, peak


def _median_cli(root: Path, args: list[str], repeat: int, stdout: Path | None = None):
    runs = [run_cli(root, args, stdout) for _ in range(repeat)]
    return statistics.median(t for t, _ in runs), max(m for _, m in runs)


def _per_call(fn: Callable[[], Any], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def bench_api(root: Path, quick: bool, repeat: int) -> list[dict]:
    from _rows import row

    from ampcalc import api

    design = api.load_design(root / "examples" / "designs" / "srswor.yaml")
    q = design.params.sample / design.params.population
    number = 500 if quick else 2000

    def floor() -> float:
        return math.log1p(q * math.expm1(0.5))

    bound_t, inv_t, floor_t, vec_ratio, vec_t = [], [], [], [], []
    eps = np.geomspace(1e-6, 10.0, 100_000)
    api.bound(design, 0.5)
    api.invert(design, 0.1)
    for _ in range(max(repeat, 7)):
        bound_t.append(_per_call(lambda: api.bound(design, 0.5), number))
        inv_t.append(_per_call(lambda: api.invert(design, 0.1), number))
        floor_t.append(_per_call(floor, number))
        a = _per_call(lambda: api.bound(design, eps), 3)
        b = _per_call(lambda: np.log1p(q * np.expm1(eps)), 3)
        vec_t.append(a)
        vec_ratio.append(a / b)
    med = statistics.median
    return [
        row("api.bound, one ε, srswor design", med(bound_t) * 1e6, "µs", at_most=10.0),
        row("api.invert, one target, srswor design", med(inv_t) * 1e6, "µs", at_most=10.0),
        row("the formula with math (floor)", med(floor_t) * 1e6, "µs"),
        row("api.bound over 10^5 ε", med(vec_t) * 1e3, "ms"),
        row("  ratio to raw log1p(q·expm1(ε))", med(vec_ratio), "x", at_most=10.0),
    ]


def bench_sweep(root: Path, quick: bool, repeat: int, tmp: Path, fmt: str) -> list[dict]:
    from _rows import row

    n = 100_000 if quick else 1_000_000
    args = [
        "sweep",
        str(root / "examples" / "designs" / "srswor.yaml"),
        "--vary",
        f"mechanism.epsilon=1e-6:800:{n}:log",
        "--format",
        fmt,
    ]
    t, rss = _median_cli(root, args, repeat, stdout=tmp / f"sweep.{fmt}")
    size = f"10^{len(str(n)) - 1}"
    limit = 1.5 * n / 1e6
    return [
        row(f"sweep {fmt.upper()} of {size} rows (CLI)", t, "s", at_most=limit),
        row(f"  peak RSS, sweep {fmt.upper()}", rss, "MB", at_most=500 if fmt == "json" else None),
    ]


def write_sample(path: Path, n: int) -> None:
    """``key,frequency`` CSV: n distinct keys (zero-padded), Zipf frequencies, seed 1."""
    rng = np.random.default_rng(1)
    with open(path, "w") as f:
        f.write("key,frequency\n")
        step = 1_000_000
        for start in range(0, n, step):
            m = min(step, n - start)
            w = rng.zipf(1.5, m).clip(1, 10_000)
            keys = np.char.zfill(np.char.add("k", np.arange(start, start + m).astype(str)), 9)
            f.write("".join(f"{k},{v}\n" for k, v in zip(keys.tolist(), w.tolist(), strict=True)))


PWS_DESIGN = (
    "target: {epsilon_prime: 0.1, delta_prime: 0.001}\n"
    "sampling: {scheme: pws, method: ppswor, threshold: 0.01, weight_power: 1}\n"
)


def bench_pws(root: Path, quick: bool, repeat: int, tmp: Path, which: str) -> list[dict]:
    from _rows import row

    design = tmp / "pws.yaml"
    design.write_text(PWS_DESIGN)
    rows = []
    if which == "sanitize":
        n = 1_000_000 if quick else 10_000_000
        sample = tmp / f"sample-{n}.csv"
        if not sample.exists():
            write_sample(sample, n)
        args = ["pws", "sanitize", str(sample), "--design", str(design), "--seed", "1"]
        t, rss = _median_cli(root, [*args, "-o", str(tmp / "san.csv")], repeat)
        rows.append(row(f"pws sanitize, {n:,} keys (CLI)", t, "s", at_most=5.0 * n / 1e7))
        rows.append(row("  peak RSS, pws sanitize", rss, "MB", at_most=1000 * n / 1e7))
        n2 = 100_000 if quick else 1_000_000
        sample2 = tmp / f"sample-{n2}.csv"
        if not sample2.exists():
            write_sample(sample2, n2)
        args = ["pws", "sanitize", str(sample2), "--design", str(design), "--seed", "1"]
        t, rss = _median_cli(root, [*args, "--frequencies", "-o", str(tmp / "sanf.csv")], repeat)
        rows.append(row(f"pws sanitize --frequencies, {n2:,} keys (CLI)", t, "s"))
    else:
        n = 100_000 if quick else 1_000_000
        args = ["pws", "table", str(design), "--max-frequency", str(n), "--format", "csv"]
        t, rss = _median_cli(root, args, repeat, stdout=tmp / "table.csv")
        rows.append(row(f"pws table, {n:,} frequencies, CSV (CLI)", t, "s", at_most=2.2 * n / 1e6))
        rows.append(row("  peak RSS, pws table", rss, "MB"))
    return rows


def bench_weights(root: Path, quick: bool, repeat: int, tmp: Path, parquet: bool) -> list[dict]:
    """``weights`` to CSV (and, with ``parquet``, to Parquet: a checkout that has it)."""
    from _rows import row

    rows = []
    sizes = [100_000, 1_000_000] if quick else [1_000_000, 10_000_000]
    for n in sizes:
        d = tmp / f"w{n}"
        if not d.exists():
            d.mkdir()
            rng = np.random.default_rng(0)
            x = np.lib.format.open_memmap(d / "records.npy", mode="w+", dtype=float, shape=(n, 4))
            step = 1_000_000
            for s in range(0, n, step):
                m = min(step, n - s)
                x[s : s + m] = rng.normal(scale=0.3, size=(m, 4))
            x.flush()
            del x
            (d / "weights.yaml").write_text(
                "mechanism: {profile: laplace-sum, scale: 20.0}\n"
                "sampling: {scheme: importance, records: records.npy, "
                "probabilities: privacy-constrained, radius: 15.0}\n"
                "target: {epsilon_prime: 1.0}\n"
            )
        limit = 10.0 if n == 10_000_000 else None
        for suffix, what in (("csv", "CSV"), ("parquet", "Parquet")):
            if suffix == "parquet" and not parquet:
                continue
            args = ["weights", str(d / "weights.yaml"), "-o", str(d / f"out.{suffix}")]
            t, rss = _median_cli(root, args, repeat if n < 10_000_000 else 1)
            rows.append(row(f"weights, {n:,} × 4 records, {what} (CLI)", t, "s", at_most=limit))
            rows.append(row(f"  peak RSS, weights {n:,} {what}", rss, "MB"))
    return rows


JOBS = ("api", "sweep-json", "sweep-csv", "sanitize", "table", "weights")
#: the jobs of the figures before Parquet output existed (``--only weights-csv``)
OLD_JOBS = ("weights-csv",)


def measure(
    quick: bool = False,
    root: Path = ROOT,
    repeat: int = REPEAT,
    only: tuple[str, ...] = JOBS,
    tmp: Path | None = None,
    parquet: bool = True,
) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: 10× smaller jobs)."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as own:
        work = tmp or Path(own)
        for job in only:
            if job == "api":
                rows += bench_api(root, quick, repeat)
            elif job.startswith("sweep-"):
                rows += bench_sweep(root, quick, repeat, work, job.split("-")[1])
            elif job in ("sanitize", "table"):
                rows += bench_pws(root, quick, repeat, work, job)
            elif job == "weights":
                rows += bench_weights(root, quick, repeat, work, parquet)
            elif job == "weights-csv":
                rows += bench_weights(root, quick, repeat, work, False)
    return rows


def main() -> int:
    sys.path.insert(0, str(HERE))
    from _rows import print_rows

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=REPEAT)
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose ampcalc to run")
    ap.add_argument("--only", nargs="*", default=list(JOBS), choices=JOBS + OLD_JOBS)
    ap.add_argument("--tmp", type=Path, default=None, help="keep generated inputs here")
    args = ap.parse_args()
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    print_rows(measure(args.quick, root, args.repeat, tuple(args.only), args.tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
