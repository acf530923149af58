"""Dask scaling: the same 10⁷-key ``pws sanitize --frequencies`` job in one process and
on local clusters of 1 and 2 workers, with per-partition throughput.

The two-core machine the figures come from cannot show a 2-worker speed-up over one
process (the cluster's start-up, its scheduler and the client share the same two
cores); this measures the curve instead: wall time, throughput (keys/s) and keys/s per
partition (``PARTS`` Parquet partitions, worker time = wall time minus the cluster
start-up, measured on an empty job). Outputs of every run are checked to be the same
rows as one process.

    python benchmarks/bench_dask_scaling.py [--rows 10000000] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_dask import PARTS, _write_sample, rows_hash, run_measured  # noqa: E402


def measure(
    quick: bool = False, n_rows: int | None = None, workers=(1, 2)
) -> list[dict[str, Any]]:
    from _rows import row

    n = n_rows or (1_000_000 if quick else 10_000_000)
    exe = [sys.executable, "-m", "ampcalc"]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        _write_sample(d, n)
        p = ["--design", str(d / "pws.yaml"), "--seed", "1", "--frequencies"]
        t1, _ = run_measured(
            [*exe, "pws", "sanitize", str(d / "sample.csv"), *p, "-o", str(d / "s.csv")]
        )
        rows.append(row(f"pws sanitize {n:.0e} keys: one process (CSV)", t1, "s"))
        rows.append(row("  throughput, one process", n / t1, "keys/s"))
        want = rows_hash([d / "s.csv"])
        # cluster start-up and imports: the same command on one tiny partition
        tiny = d / "tiny"
        tiny.mkdir()
        (tiny / "part-0.csv").write_text("key,frequency\nk1,1\n")
        for w in workers:
            dask = ["--engine", "dask", "--workers", str(w)]
            t0, _ = run_measured(
                [*exe, "pws", "sanitize", str(tiny), *p, *dask, "-o", str(d / f"t{w}")]
            )
            out = d / f"s-dask-{w}"
            t, mb = run_measured(
                [*exe, "pws", "sanitize", str(d / "sample-csv"), *p, *dask, "-o", str(out)]
            )
            if rows_hash(sorted(out.glob("part-*"))) != want:
                raise RuntimeError(f"{w} workers: output differs from one process")
            work = max(t - t0, 1e-9)
            rows.append(
                row(f"pws sanitize {n:.0e} keys: Dask {w} worker(s), {PARTS} CSV parts", t, "s")
            )
            rows.append(row(f"  cluster start-up + imports ({w} worker(s), empty job)", t0, "s"))
            rows.append(row(f"  throughput, {w} worker(s)", n / t, "keys/s"))
            rows.append(
                row(
                    f"  per worker while working ({PARTS} partitions), {w} worker(s)",
                    n / PARTS / (work * w / PARTS),
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
    args = ap.parse_args()
    print_rows(measure(n_rows=args.rows, workers=tuple(args.workers)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
