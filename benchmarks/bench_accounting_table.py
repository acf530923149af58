"""Issue 17's tables, ampcalc side by side with Google's dp_accounting, in one run.

Prints markdown tables (paste them into benchmarks/README.md, "Accounting"):

1. total ε at δ = 1e-6 for k releases on a Poisson q = 0.01 sample each (Laplace ε = 1,
   Gaussian σ = 1) and for k Gaussian releases on ONE sample: dp_accounting's PLD
   accountant (pessimistic estimate, its default interval 1e-4) against ampcalc (the
   budget's [lower, upper], the one-sample bound);
2. the [lower, upper] at k = 1000 at an interval fine enough for a 1% width;
3. noise calibration: ``invert --solve`` on one release and ``budget --solve`` on a
   1000-release ledger, against ``dp_accounting.mechanism_calibration``.

Each time is the median wall-clock time of ``--repeat`` runs (default 3; the slow
dp_accounting figures once) in this process, after a warm-up, with the CPU time of the
same runs in parentheses (the machine is shared: CPU time is the steadier figure).

Run: python benchmarks/bench_accounting_table.py [--repeat N] [--quick]
"""

from __future__ import annotations

import dataclasses
import logging
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ampcalc
from ampcalc import engine
from ampcalc.analyses import budget, budget_solve
from ampcalc.analyses.calibrate import solve
from ampcalc.model.design import Neighbours

logging.getLogger().setLevel(logging.ERROR)

Q, DELTA = 0.01, 1e-6


def timed(fn: Any, repeat: int) -> tuple[float, float, Any]:
    """(median wall s, median CPU s, result) over ``repeat`` runs."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), out


def ts(wall: float, cpu: float) -> str:
    def one(x: float) -> str:
        return f"{1e3 * x:.0f} ms" if x < 1 else f"{x:.2f} s"

    return f"{one(wall)} ({one(cpu)})"


def design(mech: dict[str, Any]) -> Any:
    return ampcalc.load_designs(
        {
            "name": "d",
            "mechanism": mech,
            "sampling": {"scheme": "poisson", "rate": Q},
            "target": {"delta_prime": DELTA},
        }
    )[0]


def ledger(mech: dict[str, Any], k: int, di: float = 1e-4, eps: float | None = None) -> Any:
    return budget.Ledger(
        name="b",
        entries=(budget.Entry(name="e", design=design(mech), count=k),),
        delta=DELTA,
        epsilon=eps,
        neighbours=Neighbours.ADD_REMOVE,
        discretization=di,
    )


def lib_independent(kind: str, k: int, di: float = 1e-4) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld

    if kind == "laplace":
        one = pld.from_laplace_mechanism(1.0, sampling_prob=Q, value_discretization_interval=di)
    else:
        one = pld.from_gaussian_mechanism(1.0, sampling_prob=Q, value_discretization_interval=di)
    return float(one.self_compose(k).get_epsilon_for_delta(DELTA))


def lib_one_sample(k: int) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld

    # k Gaussians σ = 1 on one sample: one Gaussian of sensitivity √k, then sampled (its
    # losses reach ε ≈ 600 at k = 1000: 6·10⁶ grid points at 1e-4, so 1e-3 there)
    di = 1e-3 if k >= 1000 else 1e-4
    one = pld.from_gaussian_mechanism(
        1.0, sensitivity=math.sqrt(k), sampling_prob=Q, value_discretization_interval=di
    )
    return float(one.get_epsilon_for_delta(DELTA))


def lib_calibrate(event: Any, target: float, lo: float, hi: float, di: float = 1e-4) -> float:
    import dp_accounting
    from dp_accounting import mechanism_calibration as mc
    from dp_accounting.pld import pld_privacy_accountant as pa

    del dp_accounting
    return float(
        mc.calibrate_dp_mechanism(
            lambda: pa.PLDAccountant(value_discretization_interval=di),
            event,
            target,
            DELTA,
            bracket_interval=mc.ExplicitBracketInterval(lo, hi),
            tol=1e-4 * lo,
        )
    )


def main(repeat: int = 3, quick: bool = False) -> None:
    import dp_accounting

    ks = (10, 100) if quick else (10, 100, 1000)
    # warm-up: imports and first-call costs out of the timings
    budget.run(ledger({"gaussian": {"sigma": 1.0}}, 2))
    lib_independent("gaussian", 2, 1e-3)
    lines = [
        f"total ε at δ = {DELTA:g}, q = {Q} (Poisson), k releases | "
        + " | ".join(f"k = {k}" for k in ks),
        " | ".join(["---"] * (len(ks) + 1)),
    ]
    cells: list[tuple[str, list[str]]] = []
    for kind, mech in (
        ("laplace", {"laplace": {"scale": 1.0}}),
        ("gaussian", {"gaussian": {"sigma": 1.0}}),
    ):
        label = "Laplace ε = 1" if kind == "laplace" else "Gaussian σ = 1"
        lib_row, amp_row = [], []
        for k in ks:
            w, c, v = timed(lambda k=k, kind=kind: lib_independent(kind, k), 1)
            lib_row.append(f"{v:.4f} — {ts(w, c)}")
            w, c, out = timed(lambda k=k, mech=mech: budget.run(ledger(mech, k)), repeat)
            t = out["total"]
            acc = t["accuracy"]
            amp_row.append(
                f"{t['upper']:.4f} (optimistic {acc['optimistic']:.4f}, "
                f"{100 * acc['width']:.2g}%) — {ts(w, c)}"
            )
        cells.append((f"{label}, each on its own sample: dp_accounting PLD", lib_row))
        cells.append(("same, ampcalc `budget` upper (accuracy)", amp_row))
    lib_row, amp_row = [], []
    for k in ks:
        w, c, v = timed(lambda k=k: lib_one_sample(k), 1)
        lib_row.append(f"{v:.3f} — {ts(w, c)}")
        d = design({"releases": [{"gaussian": {"sigma": 1.0}, "count": k}]})
        w, c, r = timed(lambda d=d: engine.bound(d), repeat)
        amp_row.append(f"[{r.lower:.3f}, {r.upper:.3f}] — {ts(w, c)}")
    cells.append(
        (
            "Gaussian σ = 1, all k on ONE sample: dp_accounting PLD (σ/√k, then sampled; "
            "k = 1000 at interval 1e-3)",
            lib_row,
        )
    )
    cells.append(("same, ampcalc `bound` with `releases` [lower, upper]", amp_row))
    for name, row in cells:
        lines.append(f"{name} | " + " | ".join(row))
    print("| " + " |\n| ".join(lines) + " |")
    print()

    if not quick:
        print(
            "| k = 1000, δ = 1e-6 | interval | ampcalc `budget` [optimistic, upper] | width | "
            "time | dp_accounting PLD at the same interval | time |"
        )
        print("|---|---|---|---|---|---|---|")
        for kind, mech, di in (
            ("gaussian", {"gaussian": {"sigma": 1.0}}, 4e-5),
            ("laplace", {"laplace": {"scale": 1.0}}, 1e-5),
        ):
            w, c, out = timed(lambda mech=mech, di=di: budget.run(ledger(mech, 1000, di)), repeat)
            t = out["total"]
            acc = t["accuracy"]
            wl, cl, v = timed(lambda kind=kind, di=di: lib_independent(kind, 1000, di), 1)
            label = "Laplace ε = 1" if kind == "laplace" else "Gaussian σ = 1"
            print(
                f"| {label} | {di:g} | [{acc['optimistic']:.5f}, {t['upper']:.5f}] | "
                f"{100 * acc['width']:.2f}% | {ts(w, c)} | {v:.5f} | {ts(wl, cl)} |"
            )
        print()

    print(
        "| calibration (δ = 1e-6, q = 0.01) | ampcalc: certified (impossible below) | time "
        "| dp_accounting `calibrate_dp_mechanism` (PLD) | time |"
    )
    print("|---|---|---|---|---|")
    dg = design({"gaussian": {"sigma": 1.0}})
    w, c, r = timed(lambda: solve(dg, "sigma", 1.0), repeat)
    wl, cl, v = timed(
        lambda: lib_calibrate(
            lambda s: dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(s)),
            1.0,
            0.3,
            3.0,
        ),
        1,
    )
    print(
        f"| one Gaussian release, σ for ε′ = 1 (`invert --solve sigma`) | "
        f"{r['knob']['value']:.10g} ({r['knob']['impossible_below']:.10g}) | {ts(w, c)} | "
        f"{v:.6g} | {ts(wl, cl)} |"
    )
    dl = design({"laplace": {"scale": 1.0}})
    w, c, r = timed(lambda: solve(dl, "scale", 0.5), repeat)
    wl, cl, v = timed(
        lambda: lib_calibrate(
            lambda b: dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.LaplaceDpEvent(b)),
            0.5,
            0.05,
            3.0,
        ),
        1,
    )
    print(
        f"| one Laplace release, scale for ε′ = 0.5 (`invert --solve scale`) | "
        f"{r['knob']['value']:.10g} ({r['knob']['impossible_below']:.10g}) | {ts(w, c)} | "
        f"{v:.6g} | {ts(wl, cl)} |"
    )
    k = 100 if quick else 1000
    target = 0.9542 if quick else 2.1245
    led = ledger({"gaussian": {"sigma": 1.0}}, k, 1e-4, target)
    w, c, r = timed(lambda: budget_solve.solve(led, "sigma"), repeat)
    kn = r["knob"]
    wl, cl, v = timed(
        lambda: lib_calibrate(
            lambda s: dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(s)), k
            ),
            target,
            0.9,
            1.1,
        ),
        1,
    )
    print(
        f"| {k} Gaussian releases, σ for ε = {target} (`budget --solve sigma`, interval 1e-4) "
        f"| {kn['value']:.6g} ({kn['impossible_below']:.6g}; {100 * kn['width']:.2g}% wide) | "
        f"{ts(w, c)} | {v:.6g} | {ts(wl, cl)} |"
    )
    fine = dataclasses.replace(led, discretization=4e-5)
    w, c, r = timed(lambda: budget_solve.solve(fine, "sigma"), 1)
    kn = r["knob"]
    print(
        f"| same at interval 4e-5 | {kn['value']:.6g} ({kn['impossible_below']:.6g}; "
        f"{100 * kn['width']:.2g}% wide) | {ts(w, c)} | | |"
    )


if __name__ == "__main__":
    rep = 3
    if "--repeat" in sys.argv:
        rep = int(sys.argv[sys.argv.index("--repeat") + 1])
    main(repeat=rep, quick="--quick" in sys.argv)
