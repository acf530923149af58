"""``ampcalc budget`` on 1000 releases: ampcalc's own privacy-loss distributions against
dp_accounting's PLD, in one run, times in process after imports.

Measured: the upper total, its accuracy (the optimistic estimate of the same
composition and the relative width) and the wall time of ``budget.run`` for
(a) one Poisson-sampled Gaussian entry of count 1000 (σ = 1, q = 0.01),
(b) one Poisson-sampled Laplace entry of count 1000 (b = 1, q = 0.01),
(c) a mixed ledger of four Gaussian and Laplace entries totalling 1000 releases;
``budget --solve sigma`` on (a) at ε = 1 and on (c) at ε = 2 (value, impossible_below,
bracket width, time); and beside them dp_accounting's own figures and times in the same
run: its PLD of (a) and (b) at the same interval, and its calibration
(``calibrate_dp_mechanism`` with its PLD accountant and
``PoissonSampledDpEvent(q, GaussianDpEvent(σ))`` composed 1000 times, target ε = 1,
δ = 1e-6).

``--distinct``: instead, a ledger of 1000 *distinct* entries (none grouped: alternately a
Gaussian and a Laplace, σ and b drawn from [0.8, 3], rates from [0.005, 0.02], seed 1),
``budget.run`` and each of its parts (the entries' own bounds, the accountant's two sides,
the witness) against dp_accounting's PLD accountant composing the same 1000
``PoissonSampledDpEvent`` events at the same interval, in the same run.

Run: python benchmarks/bench_budget_engine.py [--distinct] [--quick]  (--quick skips
dp_accounting's calibration, or with --distinct its accountant: the slowest lines)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import scipy.fft
import scipy.signal  # noqa: F401

from ampcalc.analyses import budget, budget_solve

GAUSS = "{mechanism: {gaussian: {sigma: %s}}, sampling: {scheme: poisson, rate: %s}}"
LAP = "{mechanism: {laplace: {scale: %s}}, sampling: {scheme: poisson, rate: %s}}"


def ledger(entries: list[tuple[str, int]], eps: float, d: Path, name: str) -> budget.Ledger:
    lines = [f"name: {name}", f"target: {{epsilon: {eps}, delta: 1.0e-6}}", "entries:"]
    for i, (design, count) in enumerate(entries):
        lines += [f"  - name: e{i}", f"    design: {design}", f"    count: {count}"]
    p = d / f"{name}.yaml"
    p.write_text("\n".join(lines) + "\n")
    return budget.load_ledger(str(p))


def timed(fn: Any, repeat: int = 3) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(quick: bool = False) -> None:
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.pld import privacy_loss_distribution as pld

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        led_g = ledger([(GAUSS % (1.0, 0.01), 1000)], 1.0, d, "gaussian")
        led_l = ledger([(LAP % (1.0, 0.01), 1000)], 1.0, d, "laplace")
        led_m = ledger(
            [
                (GAUSS % (1.0, 0.01), 400),
                (GAUSS % (2.0, 0.05), 200),
                (LAP % (1.0, 0.01), 300),
                (LAP % (4.0, 0.02), 100),
            ],
            2.0,
            d,
            "mixed",
        )
        budget.run(led_g)  # warm-up (scipy's FFT plans)
        print("| ledger (δ = 1e-6, interval 1e-4) | upper | optimistic | width | time |")
        print("|---|---|---|---|---|")
        for name, led in (("(a) Gaussian", led_g), ("(b) Laplace", led_l), ("(c) mixed", led_m)):
            t, out = timed(lambda led=led: budget.run(led))
            tot = out["total"]
            acc = tot["accuracy"]
            print(
                f"| {name} | {tot['upper']:.7f} | {acc['optimistic']:.7f} | "
                f"{100 * acc['width']:.4f}% | {t:.3f} s |"
            )
        print()
        print("| solve sigma | value | impossible_below | width | time |")
        print("|---|---|---|---|---|")
        for name, led in (("(a) ε = 1", led_g), ("(c) ε = 2", led_m)):
            t, out = timed(lambda led=led: budget_solve.solve(led, "sigma"), repeat=1)
            k = out["knob"]
            print(
                f"| {name} | {k['value']:.7f} | {k['impossible_below']:.7f} | "
                f"{100 * k['width']:.4f}% | {t:.3f} s |"
            )
        print()
        print("| dp_accounting 0.6 (same run) | value | time |")
        print("|---|---|---|")
        t, e = timed(
            lambda: (
                pld.from_gaussian_mechanism(1.0, sampling_prob=0.01)
                .self_compose(1000)
                .get_epsilon_for_delta(1e-6)
            ),
            repeat=1,
        )
        print(f"| PLD (a), pessimistic, interval 1e-4 | {e:.7f} | {t:.3f} s |")
        t, e = timed(
            lambda: (
                pld.from_laplace_mechanism(1.0, sampling_prob=0.01)
                .self_compose(1000)
                .get_epsilon_for_delta(1e-6)
            ),
            repeat=1,
        )
        print(f"| PLD (b), pessimistic, interval 1e-4 | {e:.7f} | {t:.3f} s |")
        if not quick:
            t, s = timed(
                lambda: dp_accounting.calibrate_dp_mechanism(
                    pld_privacy_accountant.PLDAccountant,
                    lambda sg: dp_accounting.SelfComposedDpEvent(
                        dp_accounting.PoissonSampledDpEvent(
                            0.01, dp_accounting.GaussianDpEvent(sg)
                        ),
                        1000,
                    ),
                    target_epsilon=1.0,
                    target_delta=1e-6,
                ),
                repeat=1,
            )
            print(f"| calibrate_dp_mechanism σ for (a) at ε = 1 | {s:.7f} | {t:.3f} s |")


def distinct_ledger(
    d: Path, n: int = 1000
) -> tuple[budget.Ledger, list[tuple[str, float, float]]]:
    """The seeded ledger of n distinct Poisson-sampled entries, and (kind, scale, rate)."""
    import random

    rng = random.Random(1)
    spec = []
    for i in range(n):
        kind = "gaussian" if i % 2 == 0 else "laplace"
        spec.append((kind, round(rng.uniform(0.8, 3.0), 3), round(rng.uniform(0.005, 0.02), 4)))
    designs = [(GAUSS if k == "gaussian" else LAP) % (s, q) for k, s, q in spec]
    return ledger([(x, 1) for x in designs], 5.0, d, "distinct"), spec


def main_distinct(quick: bool = False) -> None:
    import ampcalc.analyses.budget as B

    parts: dict[str, float] = {}

    def timed_part(name: str, fn: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                parts[name] = parts.get(name, 0.0) + time.perf_counter() - t0

        return run

    with tempfile.TemporaryDirectory() as tmp:
        led, spec = distinct_ledger(Path(tmp))
        budget.run(ledger([(GAUSS % (1.0, 0.01), 1)], 1.0, Path(tmp), "warm"))
        B.check_cost = timed_part(
            "the cost check (each entry's loss ranges, searched once)", B.check_cost
        )
        B.entry_pair = timed_part("the entries' own bounds (one `bound` each)", B.entry_pair)
        B._accountant = timed_part("the accountant's two sides (upper, accuracy)", B._accountant)
        B.lower_total = timed_part("the witness (lower total)", B.lower_total)
        t0 = time.perf_counter()
        out = budget.run(led)
        wall = time.perf_counter() - t0
        tot = out["total"]
        ref, ref_t = (None, None) if quick else reference_distinct(spec)
    print("| 1000 distinct entries, δ = 1e-6, interval 1e-4 | total ε | time |")
    print("|---|---|---|")
    print(
        f"| ampcalc `budget` [lower, upper] | [{tot['lower']:.6f}, {tot['upper']:.6f}] "
        f"| {wall:.1f} s |"
    )
    for name, t in parts.items():
        print(f"| of which {name} | | {t:.1f} s |")
    if ref is not None:
        print(
            f"| dp_accounting PLD accountant, the same events (same run) | {ref:.6f} "
            f"| {ref_t:.1f} s |"
        )


def reference_distinct(spec: list[tuple[str, float, float]]) -> tuple[float, float]:
    """dp_accounting's PLD accountant on the distinct entries' events: (ε, seconds)."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    t0 = time.perf_counter()
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    for kind, scale, q in spec:
        ev = (
            dp_accounting.GaussianDpEvent(scale)
            if kind == "gaussian"
            else dp_accounting.LaplaceDpEvent(scale)
        )
        acc.compose(dp_accounting.PoissonSampledDpEvent(q, ev))
    return float(acc.get_epsilon(1e-6)), time.perf_counter() - t0


if __name__ == "__main__":
    if "--distinct" in sys.argv:
        main_distinct("--quick" in sys.argv)
    else:
        main("--quick" in sys.argv)
