"""Cluster-sampling timings against the targets of the cluster-type designs.

Targets: cluster sizes from a file of 10⁷ rows evaluate in under 2 s end to end (CLI,
read with numpy, O(k) top two); an ε sweep of 10⁴ values costs one vectorised call.
Plain script: prints a table; exits nonzero only on a crash.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> int:
    from ampcalc import engine
    from ampcalc.design import load_designs

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        sizes = np.random.default_rng(0).integers(1, 5000, 10_000_000)
        np.savetxt(d / "sizes.csv", sizes, fmt="%d", header="size", comments="")
        (d / "design.yaml").write_text(
            "name: bench\nmechanism: {epsilon: 0.5, neighbours: add-remove}\n"
            "sampling:\n  scheme: cluster\n  clusters: {file: sizes.csv}\n  chosen: 1000\n"
        )
        exe = shutil.which("ampcalc") or sys.executable
        args = [exe] if exe.endswith("ampcalc") else [exe, "-m", "ampcalc"]
        t0 = time.perf_counter()
        subprocess.run(
            [*args, "bound", str(d / "design.yaml"), "--json"], check=True, capture_output=True
        )
        rows.append(("CLI bound, 10^7-row size file", time.perf_counter() - t0, 2.0))
        t0 = time.perf_counter()
        (design,) = load_designs(d / "design.yaml")
        rows.append(("load (read + top two), 10^7 rows", time.perf_counter() - t0, 2.0))

    (design,) = load_designs(
        "name: s\nmechanism: {epsilon: 1, neighbours: add-remove}\n"
        "sampling: {scheme: cluster, clusters: {count: 500, size: 2000}, chosen: 20}\n"
    )
    eps = np.linspace(1e-6, 10, 10_000)
    t0 = time.perf_counter()
    res = engine.bound(design, eps)
    rows.append(("bound, ε sweep of 10^4 (one call)", time.perf_counter() - t0, 0.5))
    assert np.shape(res.upper) == (10_000,)
    t0 = time.perf_counter()
    engine.invert(design, 0.5, None)
    rows.append(("invert (root finder)", time.perf_counter() - t0, 0.5))

    print(f"{'what':40s} {'seconds':>9s} {'target':>8s}")
    for name, sec, target in rows:
        flag = "ok" if sec <= target else "SLOW"
        print(f"{name:40s} {sec:9.3f} {target:8.2f}  {flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
