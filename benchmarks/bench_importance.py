"""Benchmark: importance sampling on a large record file (targets from the issue).

Target: 10⁷ records × 10 columns from .npy — privacy-constrained probabilities and the
per-record bound in under 10 s and under 4 GB peak memory. Also a CSV (streamed in
chunks) and a coreset design. Prints a table; returns nonzero only on a crash.

    python benchmarks/bench_importance.py [--rows N]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(
    quick: bool = False, n_rows: int | None = None, csv_rows: int | None = None
) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: 10⁶ records, CSV 10⁵)."""
    import subprocess

    from _rows import row

    from ampcalc import engine
    from ampcalc.designs.document import load_designs

    n = n_rows or (1_000_000 if quick else 10_000_000)
    n_csv = csv_rows or (100_000 if quick else 1_000_000)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        rng = np.random.default_rng(0)
        x = np.empty((n, 10))
        step = 1_000_000
        for s in range(0, n, step):
            m = min(step, n - s)
            x[s : s + m] = rng.normal(scale=0.3, size=(m, 10))
        np.save(d / "big.npy", x)
        del x
        base_mb = peak_mb()
        body = """
mechanism: {profile: laplace-sum, scale: 20.0}
sampling: {scheme: importance, records: big.npy, probabilities: privacy-constrained,
           radius: 15.0}
target: {epsilon_prime: 1.0}
"""
        (d / "pc.yaml").write_text(body)
        t0 = time.perf_counter()
        design = load_designs(d / "pc.yaml")[0]
        t1 = time.perf_counter()
        r = engine.bound(design)
        t2 = time.perf_counter()
        rows.append(
            row(
                f"importance {n:.0e}x10 .npy, privacy-constrained: load + bound",
                t2 - t0,
                "s",
                at_most=10.0,
                issue="importance",
                note=f"load {t1 - t0:.2f} s, bound {t2 - t1:.2f} s; peak RSS {peak_mb():.0f} MB "
                f"(before: {base_mb:.0f})",
            )
        )
        assert r.details["quantiles"]["max"] <= 1.0
        # the same design through the CLI in a fresh process: its own peak memory
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ampcalc", "bound", str(d / "pc.yaml"), "--json"],
            check=True,
            capture_output=True,
        )
        t1 = time.perf_counter()
        child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        rows.append(
            row(
                "same, `ampcalc bound` in a fresh process",
                t1 - t0,
                "s",
                at_most=10.0,
                issue="importance",
            )
        )
        rows.append(row("same, peak RSS of that process", child_mb, "MB", at_most=4096.0))
        body = """
mechanism: {profile: dp-lloyd, iterations: 10, noise_constant: 0.01}
sampling: {scheme: importance, records: big.npy, probabilities: coreset, radius: 3.0,
           expected_size: 100000, population: 10000000, mean_sq_norm: 0.9}
"""
        (d / "core.yaml").write_text(body)
        t0 = time.perf_counter()
        r = engine.bound(load_designs(d / "core.yaml")[0])
        t1 = time.perf_counter()
        rows.append(row("importance coreset DP-Lloyd .npy: load + bound", t1 - t0, "s"))
        xs = np.random.default_rng(1).normal(scale=0.3, size=(n_csv, 10))
        np.savetxt(d / "big.csv", xs, delimiter=",", fmt="%.6f")
        (d / "csv.yaml").write_text(body.replace("big.npy", "big.csv"))
        t0 = time.perf_counter()
        engine.bound(load_designs(d / "csv.yaml")[0])
        t1 = time.perf_counter()
        rows.append(row(f"importance coreset CSV {n_csv:.0e}x10, streamed", t1 - t0, "s"))
    return rows


def main() -> int:
    from _rows import print_rows

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--csv-rows", type=int, default=1_000_000)
    args = ap.parse_args()
    print_rows(measure(n_rows=args.rows, csv_rows=args.csv_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
