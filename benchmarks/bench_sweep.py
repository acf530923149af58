"""Sweep throughput: engine time of a 10⁶-point ε sweep, and what writing it costs.

Run:  python benchmarks/bench_sweep.py
Prints measured figures against the targets (engine: 10⁶ ε points on a closed-form
scheme in under 1 s). Exits nonzero only if something crashes.
"""

from __future__ import annotations

import io
import json
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


def main() -> int:
    from ampcalc import engine, render
    from ampcalc import sweep as sw
    from ampcalc.design import load_designs, parse_yaml

    design = load_designs(DESIGN)[0]
    doc = parse_yaml(DESIGN.read_text(), filename=str(DESIGN))
    n = 1_000_000
    vary = sw.parse_vary(f"mechanism.epsilon=1e-6:800:{n}:log")
    eps = vary.array()

    rows: list[tuple[str, float, str]] = []
    rows.append(
        ("engine.bound, 10⁶ ε (srswor)", best_of(lambda: engine.bound(design, eps)), "< 1 s")
    )
    pois = load_designs(ROOT / "examples" / "designs" / "poisson.yaml")[0]
    rows.append(
        ("engine.bound, 10⁶ ε (poisson)", best_of(lambda: engine.bound(pois, eps)), "< 1 s")
    )
    targets = sw.parse_vary(f"target=1e-6:50:{n}:log").array()
    rows.append(
        (
            "engine.invert, 10⁶ targets (srswor)",
            best_of(lambda: engine.invert(design, targets)),
            "-",
        )
    )
    result = sw.evaluate(doc, [vary], filename=str(DESIGN))
    rows.append(("sweep.evaluate, 10⁶ ε: engine time", result.engine_seconds, "< 1 s"))
    rows.append(
        ("sweep.evaluate, 10⁶ ε: total", best_of(lambda: sw.evaluate(doc, [vary]), 1), "-")
    )
    rows.append(("CSV of 10⁶ rows", best_of(lambda: sw.write_csv(result, io.StringIO()), 1), "-"))
    rows.append(
        (
            "JSON of 10⁶ rows",
            best_of(
                lambda: json.dumps(
                    render.envelope("sweep", "bench", sw.document(result)), allow_nan=False
                ),
                1,
            ),
            "-",
        )
    )
    per_point = sw.parse_vary("sampling.sample=1:10000:500")
    rows.append(
        (
            "per-point grid, 500 sample sizes",
            best_of(lambda: sw.evaluate(doc, [per_point]), 1),
            "-",
        )
    )

    width = max(len(r[0]) for r in rows)
    print(f"{'measurement'.ljust(width)}  seconds   target")
    print("-" * (width + 20))
    for name, secs, target in rows:
        print(f"{name.ljust(width)}  {secs:7.3f}   {target}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # a crash is the only failure
        print(f"benchmark crashed: {exc!r}", file=sys.stderr)
        sys.exit(1)
