"""Start-up cost: median wall time of ``ampcalc bound examples/designs/srswor.yaml --json``
next to a minimal typer command with the same stack (``baseline_cli.py``), alternating
the two over several runs. Target (core): ratio <= 1.2.
Measure with a regular install (``pip install .``): an editable install's import hook adds
about 20 ms to ampcalc's own imports.

Usage: python benchmarks/bench_startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "examples" / "designs" / "srswor.yaml"


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def interleaved_medians(first: list[str], second: list[str], runs: int) -> tuple[float, float]:
    """The median wall times of two commands over ``runs`` runs each, alternating them
    (after one warm-up run each for the file cache), so that a burst of load on a shared
    machine falls on both sides rather than on one."""
    timed(first), timed(second)
    t_first, t_second = [], []
    for _ in range(runs):
        t_first.append(timed(first))
        t_second.append(timed(second))
    return statistics.median(t_first), statistics.median(t_second)


def timings(runs: int) -> dict[str, float]:
    exe = shutil.which("ampcalc")
    tool = [exe] if exe else [sys.executable, "-m", "ampcalc"]
    tool += ["bound", str(DESIGN), "--json"]
    base = [sys.executable, str(ROOT / "benchmarks" / "baseline_cli.py"), str(DESIGN)]
    med_tool, med_base = interleaved_medians(tool, base, runs)
    return {
        "ampcalc_bound_json_s": med_tool,
        "baseline_stack_s": med_base,
        "ratio": med_tool / med_base,
        "target_ratio": 1.2,
        "runs": runs,
    }


def measure(quick: bool = False, runs: int | None = None) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: 5 runs instead of 21)."""
    from _rows import row

    res = timings(runs or (5 if quick else 21))
    n = f"median of {res['runs']}"
    return [
        row("start-up: ampcalc bound --json", res["ampcalc_bound_json_s"], "s", note=n),
        row("start-up: minimal typer CLI, same stack", res["baseline_stack_s"], "s", note=n),
        row(
            "start-up ratio vs minimal typer CLI",
            res["ratio"],
            "x",
            at_most=res["target_ratio"],
            issue="core",
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    res = timings(args.runs)
    print(f"{'figure':32} {'measured':>10}  target")
    print(f"{'ampcalc bound --json (median)':32} {res['ampcalc_bound_json_s']:>9.3f}s")
    print(f"{'typer+numpy+yaml+rich (median)':32} {res['baseline_stack_s']:>9.3f}s")
    met = "met" if res["ratio"] <= res["target_ratio"] else "NOT met"
    print(f"{'ratio':32} {res['ratio']:>10.2f}  <= 1.2 ({met})")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
