"""Before/after of ``bench_overhead``'s CLI jobs, interleaved: each repetition runs the
job on a reference checkout (``--base``, e.g. ``git worktree``/``git archive`` of the
commit before) and on this one back to back, so load from other processes hits both;
medians and the median of the per-repetition ratios are printed.

    python benchmarks/bench_overhead_ab.py --base /path/to/old/checkout [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_overhead import PWS_DESIGN, ROOT, run_cli, write_sample  # noqa: E402


def jobs(tmp: Path, quick: bool) -> list[tuple[str, list[str], str | None]]:
    n = 100_000 if quick else 1_000_000
    design = tmp / "pws.yaml"
    design.write_text(PWS_DESIGN)
    big = 1_000_000 if quick else 10_000_000
    for k in (n, big):
        if not (tmp / f"sample-{k}.csv").exists():
            write_sample(tmp / f"sample-{k}.csv", k)
    srswor = str(ROOT / "examples" / "designs" / "srswor.yaml")
    vary = ["--vary", f"mechanism.epsilon=1e-6:800:{n}:log"]
    san = ["--design", str(design), "--seed", "1"]
    return [
        (f"sweep JSON, {n:,} rows", ["sweep", srswor, *vary, "--format", "json"], "sweep.json"),
        (f"sweep CSV, {n:,} rows", ["sweep", srswor, *vary, "--format", "csv"], "sweep.csv"),
        (
            f"pws sanitize, {big:,} keys",
            ["pws", "sanitize", str(tmp / f"sample-{big}.csv"), *san, "-o", str(tmp / "s.csv")],
            None,
        ),
        (
            f"pws sanitize --frequencies, {n:,} keys",
            ["pws", "sanitize", str(tmp / f"sample-{n}.csv"), *san, "--frequencies", "-o",
             str(tmp / "sf.csv")],
            None,
        ),
        (
            f"pws table, {n:,} frequencies, CSV",
            ["pws", "table", str(design), "--max-frequency", str(n), "--format", "csv"],
            "table.csv",
        ),
    ]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tmp", type=Path, required=True, help="inputs and outputs (kept)")
    ap.add_argument("--only", nargs="*", default=None, help="job names starting with these")
    args = ap.parse_args()
    print("| job | before (s) | after (s) | ratio | peak RSS before → after (MB) |")
    print("|---|---|---|---|---|")
    for name, cli, out in jobs(args.tmp, args.quick):
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        before, after, ratios, mb_b, mb_a = [], [], [], 0.0, 0.0
        for _ in range(args.repeat):
            tb, mb = run_cli(args.base, cli, args.tmp / ("b." + out) if out else None)
            ta, ma = run_cli(ROOT, cli, args.tmp / ("a." + out) if out else None)
            before.append(tb)
            after.append(ta)
            ratios.append(tb / ta)
            mb_b, mb_a = max(mb_b, mb), max(mb_a, ma)
        if (
            out
            and (args.tmp / ("b." + out)).read_bytes() != (args.tmp / ("a." + out)).read_bytes()
        ):
            raise RuntimeError(f"{name}: outputs differ")
        print(
            f"| {name} | {statistics.median(before):.3g} | {statistics.median(after):.3g} | "
            f"{statistics.median(ratios):.3g}x | {mb_b:.0f} → {mb_a:.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
