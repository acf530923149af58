"""Every benchmark in one run: prints one table and writes ``benchmarks/results.json``.

Each ``bench_*.py`` module exposes ``measure(quick) -> list[row]`` (see ``_rows.py``); this
script runs each module in a fresh interpreter, one after the other (so start-up, memory
and import costs of one benchmark do not leak into the next), and collects the rows: the
figure, the measured value, its unit, the target from the feature's issue and whether it
is met. Rows without a target are supporting figures.

    python benchmarks/run.py            # the full sizes (about 5-10 minutes on 2 cores)
    python benchmarks/run.py --quick    # smaller sizes, fewer repetitions (about 1 minute)
    python benchmarks/run.py --only startup sweep
    python benchmarks/run.py --readme-only  # re-render README.md's table from results.json

The full run also rewrites the table in ``benchmarks/README.md`` (between its markers).

Exit code: 0 when every benchmark ran (targets missed are reported, not errors), 1 when
a benchmark crashed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _rows import print_rows  # noqa: E402

# (name, module, what it covers); run in this order
BENCHES: list[tuple[str, str, str]] = [
    ("startup", "bench_startup", "CLI start-up vs a minimal typer CLI (core)"),
    ("sweep", "bench_sweep", "closed-form ε sweeps (sweep)"),
    ("sizes", "bench_sizes", "random-size designs"),
    ("cluster", "bench_cluster", "cluster sizes from a large file"),
    ("stratified", "bench_stratified", "many strata"),
    ("importance", "bench_importance", "importance sampling of a large record file"),
    ("pws", "bench_pws", "private weighted sampling: Algorithms 3 and 4, sanitise"),
    ("plan", "bench_plan", "median smooth sensitivity and planner simulations"),
    ("verify", "bench_verify", "verify programmes and group kernels"),
    ("dask", "bench_dask", "Dask-backed record files (optional)"),
    ("accounting", "bench_accounting", "named mechanisms, composition, budgets vs dp_accounting"),
    ("overhead", "bench_overhead", "Python overhead: one call, big outputs, PWS, weights"),
    ("dask-scaling", "bench_dask_scaling", "Dask: 1 and 2 workers against one process"),
    ("dask-worker", "bench_dask_worker", "Dask: keys per CPU second of a worker (a cluster)"),
]
MARK = "@@ampcalc-bench-rows@@"
CHILD = (
    "import json, sys\n"
    "sys.path.insert(0, {here!r})\n"
    "import {module} as m\n"
    "rows = m.measure(quick={quick})\n"
    "print({mark!r} + json.dumps(rows))\n"
)


def run_one(module: str, quick: bool) -> tuple[list[dict[str, Any]] | None, float, str]:
    """Rows of one module measured in a fresh interpreter; (None, ..., stderr) on a crash."""
    code = CHILD.format(here=str(HERE), module=module, quick=quick, mark=MARK)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - t0
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK) and proc.returncode == 0:
            return json.loads(line[len(MARK) :]), seconds, proc.stderr
    return None, seconds, proc.stderr or proc.stdout


def machine() -> dict[str, Any]:
    import numpy

    from ampcalc import __version__

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "ampcalc": __version__,
        "commit": commit or None,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


README = HERE / "README.md"
BEGIN, END = "<!-- results: begin -->", "<!-- results: end -->"


def _cell(r: dict[str, Any]) -> list[str]:
    from _rows import fmt_value

    met = "-" if r["met"] is None else ("yes" if r["met"] else "**no**")
    return [r["figure"], fmt_value(r["value"]), r["unit"], r["target"] or "-", met]


def markdown(doc: dict[str, Any]) -> str:
    """The results as Markdown: machine line, then one table per benchmark module."""
    m = doc["machine"]
    lines = [
        f"Measured {m['date']} (commit {m['commit']}, ampcalc {m['ampcalc']}) on "
        f"{m['cpu_count']} CPUs ({m['machine']}), Python {m['python']}, numpy {m['numpy']}"
        f"{', quick sizes' if m.get('quick') else ''}; load average {m['load_average_start']} "
        f"at start, {m['load_average_end']} at end; {m['total_seconds']} s in all.",
        "",
    ]
    for b in doc["benchmarks"]:
        lines.append(f"**{b['bench']}** ({b['seconds']:.0f} s)")
        lines.append("")
        if b.get("error"):
            lines += ["```", b["error"], "```", ""]
            continue
        lines.append("| figure | measured | unit | target | met? |")
        lines.append("|---|---|---|---|---|")
        for r in b["rows"]:
            cells = [c.replace("|", "\\|") for c in _cell(r)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def write_readme(doc: dict[str, Any]) -> bool:
    """Replace the table between the markers of ``benchmarks/README.md`` (False: none)."""
    from _rows import replace_between

    return replace_between(README, BEGIN, END, markdown(doc))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these benchmarks")
    ap.add_argument(
        "--out", type=Path, default=HERE / "results.json", help="where to write the results"
    )
    ap.add_argument(
        "--readme-only",
        action="store_true",
        help="measure nothing: re-render benchmarks/README.md's table from --out",
    )
    args = ap.parse_args(argv)
    if args.readme_only:
        ok = write_readme(json.loads(args.out.read_text(encoding="utf-8")))
        print("README table rewritten" if ok else "benchmarks/README.md has no table markers")
        return 0 if ok else 1
    known = {name for name, _, _ in BENCHES}
    if args.only and not set(args.only) <= known:
        ap.error(f"unknown benchmark(s): {sorted(set(args.only) - known)}; known: {sorted(known)}")

    info = machine()
    info["quick"] = args.quick
    results: list[dict[str, Any]] = []
    crashed: list[str] = []
    t_all = time.perf_counter()
    for name, module, what in BENCHES:
        if args.only and name not in args.only:
            continue
        if not (HERE / f"{module}.py").exists():
            print(f"[{name}] skipped: benchmarks/{module}.py does not exist", file=sys.stderr)
            continue
        print(f"[{name}] {what} ...", file=sys.stderr, flush=True)
        rows, seconds, err = run_one(module, args.quick)
        if rows is None:
            crashed.append(name)
            tail = "\n".join(err.strip().splitlines()[-5:])
            print(f"[{name}] CRASHED after {seconds:.1f} s:\n{tail}", file=sys.stderr)
            results.append({"bench": name, "seconds": seconds, "error": tail, "rows": []})
            continue
        print(f"[{name}] done in {seconds:.1f} s", file=sys.stderr, flush=True)
        results.append({"bench": name, "seconds": seconds, "rows": rows})
    info["total_seconds"] = round(time.perf_counter() - t_all, 1)
    info["load_average_end"] = [round(x, 2) for x in os.getloadavg()]

    rows = [r for b in results for r in b["rows"]]
    headline = [r for r in rows if r["target"] is not None]
    print("\nFigures with a target (from the feature's issue)")
    print_rows(headline)
    print("\nSupporting figures")
    print_rows([r for r in rows if r["target"] is None])
    missed = [r["figure"] for r in headline if r["met"] is False]
    print(
        f"\n{sum(r['met'] is True for r in headline)} of {len(headline)} targets met"
        + (f"; missed: {'; '.join(missed)}" if missed else "")
        + f". {info['cpu_count']} CPUs, load average {info['load_average_start']} at start, "
        f"{info['load_average_end']} at end; {info['total_seconds']} s in all."
    )
    if crashed:
        print(f"crashed: {', '.join(crashed)}")
    doc = {"machine": info, "benchmarks": results}
    args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    if args.out == HERE / "results.json" and not args.only and write_readme(doc):
        print("rewrote the table in benchmarks/README.md")
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main())
