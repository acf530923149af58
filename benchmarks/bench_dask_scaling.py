"""Dask scaling: the same 10⁷-key ``pws sanitize --frequencies`` job in one process and
on local clusters of 1 and 2 workers, with per-partition throughput.

The two-core machine the figures come from cannot show a 2-worker speed-up over one
process (the cluster's start-up, its scheduler and the client share the same two
cores); this measures the curve instead: wall time, CPU time (user + system of the
command and the processes it waited for: the workers included), throughput (keys/s)
and keys/s per partition (``PARTS`` CSV partitions, worker time = wall time minus the
cluster start-up, measured on an empty job). Outputs of every run are checked to be
the same rows as one process. ``--root`` runs the same jobs on other checkouts too,
alternating with this one per repetition (medians of ``--repeat``).

    python benchmarks/bench_dask_scaling.py [--rows 10000000] [--workers 1 2]
        [--repeat 3] [--root /path/to/another/checkout] [--tmp DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_dask import PARTS, _write_sample, rows_hash, run_timed  # noqa: E402


def _load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def measure(
    quick: bool = False,
    n_rows: int | None = None,
    workers: tuple[int, ...] = (1, 2),
    roots: tuple[Path, ...] = (ROOT,),
    repeat: int = 1,
    tmp: Path | None = None,
) -> list[dict[str, Any]]:
    from _rows import row

    n = n_rows or (1_000_000 if quick else 10_000_000)
    exe = [sys.executable, "-m", "ampcalc"]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as own:
        d = tmp or Path(own)
        if not (d / "sample.csv").exists():
            _write_sample(d, n)
        p = ["--design", str(d / "pws.yaml"), "--seed", "1", "--frequencies"]
        tiny = d / "tiny"
        if not tiny.exists():
            tiny.mkdir()
            (tiny / "part-0.csv").write_text("key,frequency\nk1,1\n")
        # (root, job) -> list of (wall, cpu, peak)
        runs: dict[tuple[int, str], list[tuple[float, float, float]]] = {}
        want = None
        for rep in range(repeat):
            for r, root in enumerate(roots):
                out1 = d / f"s{r}.csv"
                one = [*exe, "pws", "sanitize", str(d / "sample.csv"), *p, "-o", str(out1)]
                runs.setdefault((r, "one"), []).append(run_timed(one, cwd=root))
                print(
                    f"# rep {rep} root {root}: one process {runs[(r, 'one')][-1]} load {_load()}",
                    file=sys.stderr,
                )
                got = rows_hash([out1])
                want = want or got
                if got != want:
                    raise RuntimeError(f"{root}: one-process output differs")
                for w in workers:
                    dask = ["--engine", "dask", "--workers", str(w)]
                    t_out = d / f"t{r}-{w}-{rep}"
                    out = d / f"s-dask-{r}-{w}-{rep}"
                    for old in (t_out, out):  # a kept --tmp from an earlier run
                        shutil.rmtree(old, ignore_errors=True)
                    empty = [*exe, "pws", "sanitize", str(tiny), *p, *dask, "-o", str(t_out)]
                    runs.setdefault((r, f"empty{w}"), []).append(run_timed(empty, cwd=root))
                    job = [*exe, "pws", "sanitize", str(d / "sample-csv"), *p, *dask]
                    runs.setdefault((r, f"dask{w}"), []).append(
                        run_timed([*job, "-o", str(out)], cwd=root)
                    )
                    print(
                        f"# rep {rep} root {root}: {w} worker(s) {runs[(r, f'dask{w}')][-1]}"
                        f" (empty job {runs[(r, f'empty{w}')][-1]}) load {_load()}",
                        file=sys.stderr,
                    )
                    if rows_hash(sorted(out.glob("part-*"))) != want:
                        raise RuntimeError(f"{root}, {w} workers: output differs from one process")

        def med(key: tuple[int, str], i: int) -> float:
            return statistics.median(x[i] for x in runs[key])

        for r, root in enumerate(roots):
            tag = "" if len(roots) == 1 else f" [{root}]"
            t1 = med((r, "one"), 0)
            rows.append(row(f"pws sanitize {n:.0e} keys: one process (CSV){tag}", t1, "s"))
            rows.append(row("  CPU, one process", med((r, "one"), 1), "s"))
            rows.append(row("  throughput, one process", n / t1, "keys/s"))
            for w in workers:
                t, cpu, mb = (med((r, f"dask{w}"), i) for i in range(3))
                t0, cpu0 = med((r, f"empty{w}"), 0), med((r, f"empty{w}"), 1)
                work = max(t - t0, 1e-9)
                rows.append(
                    row(
                        f"pws sanitize {n:.0e} keys: Dask {w} worker(s), {PARTS} CSV parts{tag}",
                        t,
                        "s",
                    )
                )
                rows.append(row(f"  CPU, {w} worker(s)", cpu, "s"))
                rows.append(
                    row(f"  cluster start-up + imports ({w} worker(s), empty job)", t0, "s")
                )
                rows.append(row(f"  CPU of the empty job, {w} worker(s)", cpu0, "s"))
                rows.append(row(f"  throughput, {w} worker(s)", n / t, "keys/s"))
                rows.append(
                    row(
                        f"  per worker while working ({PARTS} partitions), {w} worker(s)",
                        n / PARTS / (work * w / PARTS),
                        "keys/s",
                    )
                )
                rows.append(
                    row(
                        f"  keys per CPU second beyond the empty job, {w} worker(s)",
                        n / max(cpu - cpu0, 1e-9),
                        "keys/s",
                    )
                )
                rows.append(row(f"  speed-up over one process, {w} worker(s)", t1 / t, "x"))
                rows.append(row(f"  peak RSS (process tree), {w} worker(s)", mb, "MB"))
    return rows


def main() -> int:
    from _rows import print_rows

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--root", type=Path, action="append", default=[])
    ap.add_argument("--tmp", type=Path, default=None)
    args = ap.parse_args()
    roots = (*args.root, ROOT)
    print_rows(
        measure(
            n_rows=args.rows,
            workers=tuple(args.workers),
            roots=roots,
            repeat=args.repeat,
            tmp=args.tmp,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
