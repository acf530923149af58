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


def measure(quick: bool = False) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: a size file of 10⁶ rows, not 10⁷)."""
    from _rows import row

    from ampcalc import engine
    from ampcalc.designs.document import load_designs

    k = 10**6 if quick else 10**7
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        sizes = np.random.default_rng(0).integers(1, 5000, k)
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
        rows.append(
            row(
                f"cluster: CLI bound, {k:.0e}-row size file",
                time.perf_counter() - t0,
                "s",
                at_most=2.0,
                issue="cluster",
            )
        )
        t0 = time.perf_counter()
        (design,) = load_designs(d / "design.yaml")
        rows.append(
            row(
                f"cluster: load (read + top two), {k:.0e} rows",
                time.perf_counter() - t0,
                "s",
                at_most=2.0,
            )
        )

    (design,) = load_designs(
        "name: s\nmechanism: {epsilon: 1, neighbours: add-remove}\n"
        "sampling: {scheme: cluster, clusters: {count: 500, size: 2000}, chosen: 20}\n"
    )
    eps = np.linspace(1e-6, 10, 10_000)
    t0 = time.perf_counter()
    res = engine.bound(design, eps)
    rows.append(
        row(
            "cluster: bound, ε sweep of 10^4 (one call)",
            time.perf_counter() - t0,
            "s",
            at_most=0.5,
        )
    )
    assert np.shape(res.upper) == (10_000,)
    t0 = time.perf_counter()
    engine.invert(design, 0.5, None)
    rows.append(row("cluster: invert (root finder)", time.perf_counter() - t0, "s", at_most=0.5))
    return rows


def main() -> int:
    from _rows import print_rows

    print_rows(measure())
    return 0


if __name__ == "__main__":
    sys.exit(main())
