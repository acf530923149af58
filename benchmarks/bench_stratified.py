"""Benchmark: stratified designs with many strata (target from the issue).

Target: a file with 10⁵ strata evaluates in under 1 s. Measures, for 10⁵ strata read
from CSV: loading, ``bound`` (every stratum's ε′), ``invert`` (every stratum's
certified ε), the JSON document, and the whole CLI run; also the worst relative
error of the closed-form Theorem 4.3 inverse against mpmath. Prints a table; returns
nonzero only on a crash.

    python benchmarks/bench_stratified.py [--strata K]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def measure(quick: bool = False, strata: int | None = None) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: 10⁴ strata instead of 10⁵)."""
    import mpmath as mp
    from _rows import row

    from ampcalc import engine
    from ampcalc.designs.document import load_designs
    from ampcalc.schemes import stratified as strat

    rows: list[dict] = []
    k = strata or (10_000 if quick else 100_000)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        rng = np.random.default_rng(0)
        sizes = rng.integers(200, 50_000, size=k)
        lines = ["name,size,sd,rate"] + [
            f"s{i},{n},{1 + i % 7},{0.005 + 0.001 * (i % 5)}" for i, n in enumerate(sizes)
        ]
        (d / "s.csv").write_text("\n".join(lines) + "\n")
        for label, extra in (
            ("proportional, size-aware", "  size_aware: true\n"),
            ("stratified Poisson", "  allocation: poisson\n"),
        ):
            f = d / "d.yaml"
            f.write_text(
                "mechanism: {epsilon: 1.0}\nsampling:\n  scheme: stratified\n"
                + extra
                + "  value_bound: 100\n  strata: {file: s.csv}\n"
            )
            t0 = time.perf_counter()
            design = load_designs(str(f))[0]
            t1 = time.perf_counter()
            res = engine.bound(design)
            t2 = time.perf_counter()
            inv = engine.invert(design, 1.0)
            t3 = time.perf_counter()
            res.to_dict()
            t4 = time.perf_counter()
            cli = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "ampcalc", "bound", str(f), "--json"],
                check=True,
                capture_output=True,
            )
            cli = time.perf_counter() - cli
            assert len(inv.details["strata"]) == k
            rows += [
                row(f"{k} strata ({label}): load CSV", t1 - t0, "s"),
                row(
                    f"{k} strata ({label}): load + bound",
                    t2 - t0,
                    "s",
                    at_most=1.0,
                    issue="stratified",
                ),
                row(f"{k} strata ({label}): invert, per-stratum ε", t3 - t2, "s"),
                row(f"{k} strata ({label}): result to dict", t4 - t3, "s"),
                row(f"{k} strata ({label}): CLI bound --json", cli, "s"),
            ]
    mp.mp.dps = 60
    worst = 0.0
    for r in (1e-5, 1e-3, 0.01, 0.1, 0.5):
        for t in np.geomspace(1e-12, 650, 40):
            e = float(strat.theorem_4_3_inverse(2 * r, r, t))
            x = 2 * mp.mpf(e)
            back = mp.log(1 + 2 * r * mp.expm1(x)) + mp.log(1 + r * mp.expm1(x))
            worst = max(worst, abs(float(back / mp.mpf(t) - 1)))
    rows.append(row("Theorem 4.3 inverse: worst relative round trip (mpmath)", worst, "rel"))
    return rows


def main() -> int:
    from _rows import print_rows

    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", type=int, default=100_000)
    args = ap.parse_args()
    print_rows(measure(strata=args.strata))
    return 0


if __name__ == "__main__":
    sys.exit(main())
