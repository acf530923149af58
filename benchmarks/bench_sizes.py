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


def main() -> int:
    rows = []
    d = design({"distribution": "binomial", "p": 0.01}, 10**9)
    rows.append(("binomial, N = 1e9: bound", best_of(lambda: engine.bound(d)), 0.050))
    rows.append(("binomial, N = 1e9: invert", best_of(lambda: engine.invert(d, 0.5)), None))

    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(1)
        p = rng.random(10**7)
        p /= p.sum()
        np.save(Path(tmp) / "p.npy", p)
        f = Path(tmp) / "d.yaml"
        f.write_text(
            "mechanism: {epsilon: 0.001, neighbours: both}\nsampling:\n  scheme: random-size\n"
            "  population: 20000000\n  size: {distribution: pmf, file: p.npy}\n"
        )
        t0 = time.perf_counter()
        dp = ampcalc.load_designs(str(f))[0]
        load = time.perf_counter() - t0
        rows.append(("pmf, 1e7 support points: load .npy", load, None))
        rows.append(("pmf, 1e7 support points: bound", best_of(lambda: engine.bound(dp), 3), 1.0))

    dn = design({"distribution": "normal", "mean": 5e5, "sd": 1e4}, 10**6, neighbours="both")
    sweep_inside = np.linspace(1e-6, 0.004, 1000)  # tilted centre stays inside [0, N]
    sweep_wide = np.linspace(1e-4, 1.0, 1000)  # mostly past N: window sums at the boundary
    rows.append(
        (
            "normal N=1e6 sd=1e4: sweep 1000 ε in [1e-6, 4e-3]",
            best_of(lambda: engine.bound(dn, sweep_inside), 3),
            1.0,
        )
    )
    rows.append(
        (
            "normal N=1e6 sd=1e4: sweep 1000 ε in [1e-4, 1]",
            best_of(lambda: engine.bound(dn, sweep_wide), 1),
            1.0,
        )
    )
    dn1 = design({"distribution": "normal", "mean": 5000, "sd": 800}, 10**4, eps=0.01)
    rows.append(
        ("normal (Figure 2, sd 800): invert", best_of(lambda: engine.invert(dn1, 0.01)), None)
    )
    dpo = design({"distribution": "poisson", "mean": 5e5}, 10**6, eps=0.01)
    rows.append(("poisson λ=5e5, N=1e6: bound", best_of(lambda: engine.bound(dpo)), None))

    print(f"{'case':55s} {'seconds':>10s} {'target':>8s}  ok")
    for name, sec, target in rows:
        tgt = "-" if target is None else f"{target:g}"
        ok = "" if target is None else ("yes" if sec < target else "NO")
        print(f"{name:55s} {sec:10.4f} {tgt:>8s}  {ok}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as err:  # a crash is the only failure
        print(f"crash: {err!r}", file=sys.stderr)
        raise
