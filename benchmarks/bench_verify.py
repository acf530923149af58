"""Benchmark: ``ampcalc verify`` on the largest programmes it accepts (target: 5,000 samples
in under 30 s), and the closed-form/log-sum-exp group kernels vectorised in ε.

Plain script: prints a table; returns nonzero only on a crash.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def measure(quick: bool = False) -> list[dict]:
    """Rows for ``benchmarks/run.py`` (``quick``: the two smallest programmes)."""
    from _rows import row

    from ampcalc.math import groups as _groups
    from ampcalc.model.design import Mechanism, Neighbours
    from ampcalc.schemes import exact as verify
    from ampcalc.schemes import srswr

    class P:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    rows = []
    cases = [
        ("srswor N=13 m=7 g=1 replace-one", verify.srswor_instance, P(population=13, sample=7), 1),
        ("srswor N=12 m=6 g=2 replace-one", verify.srswor_instance, P(population=12, sample=6), 2),
        ("srswr N=5 m=11 replace-one", verify.srswr_instance, P(population=5, sample=11), 1),
        ("poisson q=0.3 g=10 add-remove", verify.poisson_instance, P(rate=0.3), 10),
    ]
    for label, hook, params, g in cases[:2] if quick else cases:
        nb = Neighbours.BOTH if "poisson" in label else Neighbours.REPLACE_ONE
        mech = Mechanism(epsilon=1.0, neighbours=nb, group_size=g)
        t = time.perf_counter()
        out = verify.run(hook(params, mech, "default"))
        dt = time.perf_counter() - t
        rows.append(
            row(
                f"verify {label} ({out.samples} samples)",
                dt,
                "s",
                at_most=30.0,
                issue="verify",
                note=f"exact ε′ = {out.epsilon_prime:.8f}",
            )
        )
    eps = np.linspace(1e-3, 10, 10_000)
    t = time.perf_counter()
    srswr.upper_epsilon(eps, population=10_000, sample=10_000)
    rows.append(row("srswr upper, N=m=1e4, 10^4 ε values", time.perf_counter() - t, "s"))
    t = time.perf_counter()
    k0, lp = _groups.hypergeom_logpmf(10**12, 10**4, 10**6)
    _groups.log_mgf(k0, lp, eps)
    rows.append(row("srswor group g=1e4, N=1e12, 10^4 ε values", time.perf_counter() - t, "s"))
    return rows


def main() -> int:
    from _rows import print_rows

    print_rows(measure())
    return 0


if __name__ == "__main__":
    sys.exit(main())
