"""Accuracy planner timings against the targets of the feature (plain script).

Prints measured seconds vs targets for the smooth-sensitivity median (002 eq. 4):
a population of N = 10⁵ (target < 1 s) and 1,000 simulated samples at n = 1,001 of a
population of 10,001 (target < 10 s), plus the worst relative error of 1 − r(ε, ρ)
against the mpmath oracle on a grid. Exits nonzero only on a crash.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from ampcalc.math import accuracy as planner


def measure(quick: bool = False) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: one ε per figure)."""
    from _rows import row

    rows = []
    for eps in (0.1,) if quick else (0.01, 0.1, 1.0):
        y = np.sort(np.random.default_rng(1).lognormal(5, 0.5, 100_001))
        t0 = time.perf_counter()
        planner.smooth_sensitivity(y, planner.beta(eps, 1 / (2 * y.size)), 0.0, 2 * y.max())
        rows.append(
            row(
                f"median smooth sensitivity, N = 100,001, ε = {eps:g}",
                time.perf_counter() - t0,
                "s",
                at_most=1.0,
                issue="plan",
            )
        )
    pop = np.random.default_rng(2).lognormal(5, 0.5, 10_001)
    for eps in (0.1,) if quick else (0.1, 1.0):
        t0 = time.perf_counter()
        planner.plan_median("b", eps, 1 / 20002, pop, [0.1], 0.0, 1500.0, 1000, 1)
        rows.append(
            row(
                f"1,000 simulations at n = 1,001, ε = {eps:g}",
                time.perf_counter() - t0,
                "s",
                at_most=10.0,
            )
        )
    try:
        import oracle_plan

        worst = 0.0
        for eps in np.logspace(-12, 1.5, 28):
            for rho in (1e-4, 1e-3, 0.01, 0.1, 0.5, 0.9, 0.99):
                got = float(planner.one_minus_noise_ratio(eps, rho))
                ref = float(oracle_plan.one_minus_noise_ratio(float(eps), rho))
                worst = max(worst, abs(got - ref) / ref)
        rows.append(row("1 − r vs mpmath, worst relative error (196 points)", worst, "rel"))
    except ImportError:
        pass
    return rows


def main() -> int:
    from _rows import print_rows

    print_rows(measure())
    return 0


if __name__ == "__main__":
    sys.exit(main())
