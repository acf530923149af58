"""Sweep throughput: engine time of a 10⁶-point ε sweep, and what writing it costs.

Run:  python benchmarks/bench_sweep.py
Prints measured figures against the targets (engine: 10⁶ ε points on a closed-form
scheme in under 1 s). Exits nonzero only if something crashes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "examples" / "designs" / "srswor.yaml"


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(quick: bool = False) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: 10⁵ points instead of 10⁶)."""
    from _rows import row

    from ampcalc import engine
    from ampcalc.analyses import sweep as sw
    from ampcalc.designs.document import load_designs, parse_yaml
    from ampcalc.output import columns

    design = load_designs(DESIGN)[0]
    doc = parse_yaml(DESIGN.read_text(), filename=str(DESIGN))
    n = 100_000 if quick else 1_000_000
    size = f"10^{len(str(n)) - 1}"
    vary = sw.parse_vary(f"mechanism.epsilon=1e-6:800:{n}:log")
    eps = vary.array()

    rows: list[dict] = []
    t = best_of(lambda: engine.bound(design, eps))
    rows.append(row(f"engine.bound, {size} ε (srswor)", t, "s", at_most=1.0 * n / 1e6))
    rows.append(
        row(
            "closed-form ε-sweep throughput (srswor)",
            n / t,
            "points/s",
            at_least=1e6,
            issue="sweep",
        )
    )
    pois = load_designs(ROOT / "examples" / "designs" / "poisson.yaml")[0]
    t = best_of(lambda: engine.bound(pois, eps))
    rows.append(row(f"engine.bound, {size} ε (poisson)", t, "s", at_most=1.0 * n / 1e6))
    targets = sw.parse_vary(f"target=1e-6:50:{n}:log").array()
    rows.append(
        row(
            f"engine.invert, {size} targets (srswor)",
            best_of(lambda: engine.invert(design, targets)),
            "s",
        )
    )
    result = sw.evaluate(doc, [vary], filename=str(DESIGN))
    rows.append(
        row(
            f"sweep.evaluate, {size} ε: engine time",
            result.engine_seconds,
            "s",
            at_most=1.0 * n / 1e6,
        )
    )
    rows.append(
        row(f"sweep.evaluate, {size} ε: total", best_of(lambda: sw.evaluate(doc, [vary]), 1), "s")
    )

    def csv_text() -> int:  # the bytes `sweep --format csv` writes, not kept
        return sum(len(c) for c in columns.csv_chunks(result.columns))

    def json_text() -> int:  # the bytes `sweep --json` writes
        chunks = columns.sweep_json_chunks(result, "bench")
        assert chunks is not None
        return sum(len(c) for c in chunks)

    rows.append(row(f"CSV of {size} rows (the command's writer)", best_of(csv_text, 1), "s"))
    rows.append(row(f"JSON of {size} rows (the command's writer)", best_of(json_text, 1), "s"))
    per_point = sw.parse_vary("sampling.sample=1:10000:500")
    rows.append(
        row(
            "per-point grid, 500 sample sizes",
            best_of(lambda: sw.evaluate(doc, [per_point]), 1),
            "s",
        )
    )
    return rows


def main() -> int:
    from _rows import print_rows

    print_rows(measure())
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # a crash is the only failure
        print(f"benchmark crashed: {exc!r}", file=sys.stderr)
        sys.exit(1)
