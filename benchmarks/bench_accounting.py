"""Named mechanisms, composition and budgets against Google's dp_accounting (issue 17).

Reproduces the issue's table in one run, side by side with dp_accounting's PLD
accountant, with times: the Poisson-subsampled Gaussian (one release), k Gaussian
releases on one sample (closed form), k independently sampled Gaussian and Laplace
releases (``ampcalc budget``: [lower, upper] through the accountant), and noise
calibration. Run: python benchmarks/bench_accounting.py [--quick]
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

import ampcalc
from ampcalc import engine
from ampcalc.model.design import Neighbours


def best_of(fn: Any, repeat: int = 3) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def poisson_design(mechanism: dict, rate: float = 0.01, delta: float = 1e-6) -> Any:
    return ampcalc.load_designs(
        {
            "name": "b",
            "mechanism": mechanism,
            "sampling": {"scheme": "poisson", "rate": rate},
            "target": {"delta_prime": delta},
        }
    )[0]


def measure(quick: bool = False) -> list[dict]:
    """Rows for ``benchmarks/run.py``."""
    from _rows import row

    rows = []
    d = poisson_design({"gaussian": {"sigma": 1.0}})
    t, r = best_of(lambda: engine.bound(d))
    rows.append(
        row(
            "Poisson Gaussian σ=1, q=0.01, δ′=1e-6: ε′ (dp_accounting PLD 0.3639478398)",
            r.upper,
            "ε′",
            note="exact removal direction",
        )
    )
    rows.append(row("  ... bound time", 1e3 * t, "ms"))
    try:
        from dp_accounting.pld import privacy_loss_distribution as pld
    except ImportError:  # pragma: no cover - the accounting extra is absent
        pld = None
    if pld is not None:
        t, _v = best_of(
            lambda: pld.from_gaussian_mechanism(1.0, sampling_prob=0.01).get_epsilon_for_delta(
                1e-6
            ),
            1,
        )
        rows.append(row("  dp_accounting PLD, same (default interval): time", 1e3 * t, "ms"))

    ks = (10, 100) if quick else (10, 100, 1000)
    for k in ks:
        dk = poisson_design({"releases": [{"gaussian": {"sigma": 1.0}, "count": k}]})
        t, r = best_of(lambda dk=dk: engine.bound(dk))
        issue = {10: 11.498, 100: 81.736, 1000: 612.055}[k]
        rows.append(row(f"k={k} Gaussians on ONE sample: ε′ (issue: {issue})", r.upper, "ε′"))
        rows.append(row("  ... bound time", 1e3 * t, "ms"))

    if pld is None:
        return rows
    from ampcalc.analyses import budget

    for kind, mech, issue_vals in (
        ("Gaussian σ=1", {"gaussian": {"sigma": 1.0}}, {10: 0.5924, 100: 0.9542, 1000: 2.1245}),
        ("Laplace ε=1", {"laplace": {"scale": 1.0}}, {10: 0.1192, 100: 0.3879, 1000: 1.2864}),
    ):
        for k in ks:
            entry = budget.Entry(name="e", design=poisson_design(mech), count=k)
            led = budget.Ledger(
                name="b",
                entries=(entry,),
                delta=1e-6,
                epsilon=None,
                neighbours=Neighbours.ADD_REMOVE,
                discretization=1e-4,
            )
            t, out = best_of(lambda led=led: budget.run(led), 1)
            tot = out["total"]
            rows.append(
                row(
                    f"{kind} ×{k} independent samples: upper (issue ≈ {issue_vals[k]})",
                    tot["upper"],
                    "ε",
                )
            )
            acc = tot["accuracy"]
            rows.append(row("  ... optimistic (accuracy)", acc["optimistic"], "ε"))
            rows.append(row("  ... accuracy width at interval 1e-4", 100 * acc["width"], "%"))
            rows.append(
                row(
                    "  ... budget time",
                    t,
                    "s",
                    at_most=1.0 if k == 1000 else None,
                    issue="17 §5" if k == 1000 else "",
                )
            )
            if k == 1000 and not quick:
                fine = dataclasses.replace(led, discretization=4e-5 if "Gauss" in kind else 1e-5)
                t, out = best_of(lambda fine=fine: budget.run(fine), 1)
                rows.append(
                    row(
                        f"  ... at interval {fine.discretization:g}: width",
                        100 * out["total"]["accuracy"]["width"],
                        "%",
                        at_most=1.0,
                        issue="17 §4",
                    )
                )
                rows.append(row("  ... time", t, "s", at_most=10.0, issue="17 §5"))

    from ampcalc.analyses.calibrate import solve

    t, r = best_of(lambda: solve(d, "sigma", 1.0))
    rows.append(
        row("calibrate σ for ε′ = 1 (Poisson q=0.01, δ′=1e-6): σ", r["knob"]["value"], "σ")
    )
    rows.append(row("  ... time", 1e3 * t, "ms", at_most=100, issue="17 §5"))

    from ampcalc.analyses import budget_solve

    k = 100 if quick else 1000
    led = budget.Ledger(
        name="b",
        entries=(budget.Entry(name="e", design=d, count=k),),
        delta=1e-6,
        epsilon=0.9542 if quick else 2.1245,
        neighbours=Neighbours.ADD_REMOVE,
        discretization=1e-4,
    )
    t, r = best_of(lambda: budget_solve.solve(led, "sigma"), 1)
    rows.append(row(f"budget --solve sigma, {k} releases: σ", r["knob"]["value"], "σ"))
    rows.append(row("  ... certified width", 100 * r["knob"]["width"], "%"))
    rows.append(row("  ... time", t, "s", at_most=1.0, issue="17 §5"))
    return rows


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    from _rows import print_rows

    print_rows(measure(quick="--quick" in sys.argv))
