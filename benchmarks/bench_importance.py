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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--csv-rows", type=int, default=1_000_000)
    args = ap.parse_args()
    from ampcalc import engine
    from ampcalc.design import load_designs

    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        rng = np.random.default_rng(0)
        x = np.empty((args.rows, 10))
        step = 1_000_000
        for s in range(0, args.rows, step):
            n = min(step, args.rows - s)
            x[s : s + n] = rng.normal(scale=0.3, size=(n, 10))
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
            (
                f"privacy-constrained .npy {args.rows:.0e}x10 (load + bound)",
                f"{t2 - t0:.2f} s (load {t1 - t0:.2f}, bound {t2 - t1:.2f})",
                f"{peak_mb():.0f} MB peak RSS (before: {base_mb:.0f})",
                "< 10 s, < 4 GB",
            )
        )
        assert r.details["quantiles"]["max"] <= 1.0
        # the same design through the CLI in a fresh process: its own peak memory
        import subprocess

        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ampcalc", "bound", str(d / "pc.yaml"), "--json"],
            check=True,
            capture_output=True,
        )
        t1 = time.perf_counter()
        child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        rows.append(
            (
                "same, `ampcalc bound` in a fresh process",
                f"{t1 - t0:.2f} s",
                f"{child_mb:.0f} MB peak RSS",
                "< 10 s, < 4 GB",
            )
        )
        body = """
mechanism: {profile: dp-lloyd, iterations: 10, noise_constant: 0.01}
sampling: {scheme: importance, records: big.npy, probabilities: coreset, radius: 3.0,
           expected_size: 100000, population: 10000000, mean_sq_norm: 0.9}
"""
        (d / "core.yaml").write_text(body)
        t0 = time.perf_counter()
        r = engine.bound(load_designs(d / "core.yaml")[0])
        t1 = time.perf_counter()
        rows.append(("coreset DP-Lloyd .npy (load + bound)", f"{t1 - t0:.2f} s", "-", "-"))
        xs = np.random.default_rng(1).normal(scale=0.3, size=(args.csv_rows, 10))
        np.savetxt(d / "big.csv", xs, delimiter=",", fmt="%.6f")
        (d / "csv.yaml").write_text(body.replace("big.npy", "big.csv"))
        t0 = time.perf_counter()
        engine.bound(load_designs(d / "csv.yaml")[0])
        t1 = time.perf_counter()
        rows.append(
            (f"coreset CSV {args.csv_rows:.0e}x10, streamed", f"{t1 - t0:.2f} s", "-", "-")
        )
    w = max(len(r[0]) for r in rows)
    print(f"{'case':<{w}}  time  |  memory  |  target")
    for name, tm, mem, target in rows:
        print(f"{name:<{w}}  {tm}  |  {mem}  |  {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
