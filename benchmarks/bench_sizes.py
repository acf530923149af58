"""Timings for random-size designs against the targets of the random-size feature.

Plain script: prints a table of measured figures and the targets; exits nonzero only
on a crash. Run: python benchmarks/bench_sizes.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ampcalc
from ampcalc import engine


def design(size: dict, n: int, eps: float = 1.0, neighbours: str = "add-remove", base=None):
    return ampcalc.load_designs(
        {
            "mechanism": {"epsilon": eps, "neighbours": neighbours},
            "sampling": {"scheme": "random-size", "population": n, "size": size},
        }
    )[0]


def best_of(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(quick: bool = False) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: a pmf of 10⁶ support points, not 10⁷)."""
    from _rows import row

    rows = []
    d = design({"distribution": "binomial", "p": 0.01}, 10**9)
    t = best_of(lambda: engine.bound(d))
    rows.append(
        row("random-size binomial, N = 1e9: bound", 1e3 * t, "ms", at_most=50, issue="random-size")
    )
    rows.append(
        row(
            "random-size binomial, N = 1e9: invert",
            1e3 * best_of(lambda: engine.invert(d, 0.5)),
            "ms",
        )
    )

    k = 10**6 if quick else 10**7
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(1)
        p = rng.random(k)
        p /= p.sum()
        np.save(Path(tmp) / "p.npy", p)
        f = Path(tmp) / "d.yaml"
        f.write_text(
            "mechanism: {epsilon: 0.001, neighbours: both}\nsampling:\n  scheme: random-size\n"
            f"  population: {2 * k}\n  size: {{distribution: pmf, file: p.npy}}\n"
        )
        t0 = time.perf_counter()
        dp = ampcalc.load_designs(str(f))[0]
        load = time.perf_counter() - t0
        rows.append(row(f"pmf, {k:.0e} support points: load .npy", load, "s"))
        rows.append(
            row(
                f"pmf, {k:.0e} support points: bound",
                best_of(lambda: engine.bound(dp), 3),
                "s",
                at_most=1.0,
            )
        )

    dn = design({"distribution": "normal", "mean": 5e5, "sd": 1e4}, 10**6, neighbours="both")
    sweep_inside = np.linspace(1e-6, 0.004, 1000)  # tilted centre stays inside [0, N]
    sweep_wide = np.linspace(1e-4, 1.0, 1000)  # mostly past N: window sums at the boundary
    rows.append(
        row(
            "normal N=1e6 sd=1e4: sweep 1000 ε in [1e-6, 4e-3]",
            best_of(lambda: engine.bound(dn, sweep_inside), 3),
            "s",
            at_most=1.0,
        )
    )
    rows.append(
        row(
            "normal N=1e6 sd=1e4: sweep 1000 ε in [1e-4, 1]",
            best_of(lambda: engine.bound(dn, sweep_wide), 1),
            "s",
            at_most=1.0,
        )
    )
    dn1 = design({"distribution": "normal", "mean": 5000, "sd": 800}, 10**4, eps=0.01)
    rows.append(
        row("normal (Figure 2, sd 800): invert", best_of(lambda: engine.invert(dn1, 0.01)), "s")
    )
    dpo = design({"distribution": "poisson", "mean": 5e5}, 10**6, eps=0.01)
    rows.append(row("poisson λ=5e5, N=1e6: bound", best_of(lambda: engine.bound(dpo)), "s"))
    return rows


def main() -> int:
    from _rows import print_rows

    print_rows(measure())
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as err:  # a crash is the only failure
        print(f"crash: {err!r}", file=sys.stderr)
        raise
