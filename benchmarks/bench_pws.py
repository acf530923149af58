"""PWS benchmarks: Algorithm 3 (10^6 rows), Algorithm 4 (10^4 rows), sanitising a large
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

from ampcalc import pws_kernels as K


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows of the sample file")
    args = ap.parse_args()
    lines = []
    for label, method, tau, eps, delta in [
        ("q ≡ 1, ε=0.01, δ=1e-6", "none", 1.0, 0.01, 1e-6),
        ("priority τ=1e-5, ε=0.1, δ=2^-20", "priority", 1e-5, 0.1, 2**-20),
        ("ppswor τ=1e-4, ε=0.25, δ=2^-20", "ppswor", 1e-4, 0.25, 2**-20),
        ("q ≡ 1, ε=1e-5, δ=1e-9 (L ≈ 10^6)", "none", 1.0, 1e-5, 1e-9),
    ]:
        q = K.inclusion_probabilities(1_000_000, method=method, threshold=tau)
        t, _ = timed(lambda q=q, eps=eps, delta=delta: K.reporting_probabilities(q, eps, delta))
        lines.append(("Algorithm 3, N = 10^6, " + label, t, 1.0))
    for label, method, tau, eps, delta in [
        ("q ≡ 1, ε=0.1, δ=1e-3", "none", 1.0, 0.1, 1e-3),
        ("priority τ=1e-3, ε=0.25, δ=2^-20", "priority", 1e-3, 0.25, 2**-20),
    ]:
        q = K.inclusion_probabilities(10_000, method=method, threshold=tau)
        t, _ = timed(lambda q=q, eps=eps, delta=delta: K.frequency_rows(q, eps, delta))
        lines.append(("Algorithm 4, N = 10^4, " + label, t, 5.0))

    with tempfile.TemporaryDirectory() as tmp:
        sample = os.path.join(tmp, "sample.csv")
        rng = np.random.default_rng(1)
        with open(sample, "w") as f:
            f.write("key,frequency\n")
            step = 1_000_000
            for start in range(0, args.rows, step):
                n = min(step, args.rows - start)
                w = rng.zipf(1.5, n).clip(1, 10_000)
                keys = np.char.add("k", np.arange(start, start + n).astype(str))
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
            print(proc.stderr)
            return 1
        lines.append((f"sanitise {args.rows:,} rows (--stream), peak RSS {rss:.0f} MB", t, 30.0))
    width = max(len(x[0]) for x in lines)
    print(f"{'benchmark':<{width}}  {'seconds':>8}  {'target':>6}")
    for name, t, target in lines:
        print(f"{name:<{width}}  {t:8.3f}  {target:6.1f}{'' if t <= target else '  (over)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
