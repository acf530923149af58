"""PWS benchmarks: Algorithm 3 (10^6 rows), Algorithm 4 (10^4 rows), sanitizing a large
sample file (streamed). Prints measured figures vs the targets; nonzero only on a crash.

Usage: python benchmarks/bench_pws.py [--rows 10000000]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from ampcalc.math import pws as K


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def measure(quick: bool = False, n_rows: int | None = None) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: sanitize 10⁶ rows instead of 10⁷)."""
    from _rows import row

    n = n_rows or (1_000_000 if quick else 10_000_000)
    rows = []
    for label, method, tau, eps, delta in [
        ("q ≡ 1, ε=0.01, δ=1e-6", "none", 1.0, 0.01, 1e-6),
        ("priority τ=1e-5, ε=0.1, δ=2^-20", "priority", 1e-5, 0.1, 2**-20),
        ("ppswor τ=1e-4, ε=0.25, δ=2^-20", "ppswor", 1e-4, 0.25, 2**-20),
        ("q ≡ 1, ε=1e-5, δ=1e-9 (L ≈ 10^6)", "none", 1.0, 1e-5, 1e-9),
    ]:
        q = K.inclusion_probabilities(1_000_000, method=method, threshold=tau)
        t, _ = timed(lambda q=q, eps=eps, delta=delta: K.reporting_probabilities(q, eps, delta))
        rows.append(row("PWS Algorithm 3, N = 10^6, " + label, t, "s", at_most=1.0, issue="pws"))
    for label, method, tau, eps, delta in [
        ("q ≡ 1, ε=0.1, δ=1e-3", "none", 1.0, 0.1, 1e-3),
        ("priority τ=1e-3, ε=0.25, δ=2^-20", "priority", 1e-3, 0.25, 2**-20),
    ]:
        q = K.inclusion_probabilities(10_000, method=method, threshold=tau)
        t, _ = timed(lambda q=q, eps=eps, delta=delta: K.frequency_rows(q, eps, delta))
        rows.append(row("PWS Algorithm 4, N = 10^4, " + label, t, "s", at_most=5.0))

    with tempfile.TemporaryDirectory() as tmp:
        sample = os.path.join(tmp, "sample.csv")
        rng = np.random.default_rng(1)
        with open(sample, "w") as f:
            f.write("key,frequency\n")
            step = 1_000_000
            for start in range(0, n, step):
                m = min(step, n - start)
                w = rng.zipf(1.5, m).clip(1, 10_000)
                keys = np.char.add("k", np.arange(start, start + m).astype(str))
                keys = np.char.zfill(keys, 9)
                f.write(
                    "".join(f"{k},{v}\n" for k, v in zip(keys.tolist(), w.tolist(), strict=False))
                )
        design = os.path.join(tmp, "d.yaml")
        with open(design, "w") as f:
            f.write(
                "target: {epsilon_prime: 0.1, delta_prime: 0.001}\n"
                "sampling: {scheme: pws, method: ppswor, threshold: 0.01}\n"
            )
        cmd = [
            sys.executable,
            "-m",
            "ampcalc",
            "pws",
            "sanitize",
            sample,
            "--design",
            design,
            "--seed",
            "1",
            "--stream",
            "-o",
            os.path.join(tmp, "out.csv"),
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        t = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr)
        rows.append(
            row(
                f"PWS sanitise {n:,} rows (--stream, CLI)",
                t,
                "s",
                at_most=30.0,
                issue="pws",
                note=f"peak RSS {rss:.0f} MB",
            )
        )
    return rows


def main() -> int:
    from _rows import print_rows

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows of the sample file")
    args = ap.parse_args()
    print_rows(measure(n_rows=args.rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
