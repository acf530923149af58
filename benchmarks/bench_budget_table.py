"""``ampcalc budget`` for k = 1, 10, 100, 1000 fresh-sample releases of six designs, beside
dp_accounting's PLD and RDP accountants and the same releases with no sampling, in one run.

Designs (δ = 1e-6 throughout; each release on its own, independently drawn sample):

- Poisson Gaussian: rate 0.01, σ = 1 (add-remove);
- Poisson Laplace: rate 0.01, b = 1 (add-remove);
- simple random Gaussian: 1,000 of 100,000 records, σ = 1, sensitivity 1 under replace-one;
- cluster Gaussian: 2 of 20 clusters of 5 (``cluster-equal.yaml``), σ = 1 (add-remove);
- stratified: ``stratified-business-survey.yaml``'s randomised rounding, Gaussian σ = 1;
- two-stage: 20 of 200 schools, 20% of the pupils within (``cluster-two-stage-gaussian.yaml``),
  σ = 2.

Columns: ampcalc's [lower, upper] (the lower a witness composition, the upper the composed
profiles), its time in process; dp_accounting's PLD (``PLDAccountant``, pessimistic, its
default interval 1e-4) and RDP (``RdpAccountant``) where the library has the design's
event (Poisson sampling; sampling without replacement in RDP), "–" where it has none; the
unsampled composition (the k releases of M on the whole population: Gaussian closed form,
Laplace through dp_accounting's PLD).

Run: python benchmarks/bench_budget_table.py [--ks 1,10,100,1000]
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ampcalc import api
from ampcalc.accounting.profiles import Gaussian, epsilon_at_delta

DELTA = 1e-6
ROOT = Path(__file__).resolve().parent.parent
DESIGNS = ROOT / "examples" / "designs"

CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "Poisson Gaussian",
        "add-remove",
        "{mechanism: {gaussian: {sigma: 1.0}}, sampling: {scheme: poisson, rate: 0.01}}",
        {"kind": "gaussian", "sigma": 1.0, "poisson": 0.01},
    ),
    (
        "Poisson Laplace",
        "add-remove",
        "{mechanism: {laplace: {scale: 1.0}}, sampling: {scheme: poisson, rate: 0.01}}",
        {"kind": "laplace", "scale": 1.0, "poisson": 0.01},
    ),
    (
        "simple random Gaussian",
        "replace-one",
        "{mechanism: {gaussian: {sigma: 1.0, sensitivity: 1.0}, neighbours: replace-one}, "
        "sampling: {scheme: srswor, population: 100000, sample: 1000}}",
        {"kind": "gaussian", "sigma": 1.0, "without_replacement": (1000, 100000)},
    ),
    (
        "cluster Gaussian",
        "add-remove",
        "{mechanism: {gaussian: {sigma: 1.0}}, sampling: {scheme: cluster, "
        "clusters: {count: 20, size: 5}, chosen: 2}}",
        {"kind": "gaussian", "sigma": 1.0},
    ),
    (
        "stratified Gaussian",
        "add-remove",
        f"{DESIGNS / 'stratified-business-survey.yaml'}",
        {"kind": "gaussian", "sigma": 1.0, "set_gaussian": True, "index": 0},
    ),
    (
        "two-stage Gaussian",
        "add-remove",
        f"{DESIGNS / 'cluster-two-stage-gaussian.yaml'}",
        {"kind": "gaussian", "sigma": 2.0},
    ),
]


def _ledger(d: Path, name: str, rel: str, design: str, k: int, extra: dict[str, Any]) -> Path:
    lines = [
        f"name: {name}",
        f"target: {{delta: {DELTA}}}",
        f"neighbours: {rel}",
        "entries:",
        f"  - name: {name}",
        f"    design: {design}",
        f"    count: {k}",
    ]
    if "index" in extra:
        lines.append(f"    index: {extra['index']}")
    path = d / f"{name.replace(' ', '-')}-{k}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def ampcalc_total(path: Path, extra: dict[str, Any]) -> tuple[Any, Any, float, str | None]:
    overrides: list[str] = []
    if extra.get("set_gaussian"):
        overrides = [
            "entries[0].design.mechanism={gaussian: {sigma: 1.0, sensitivity: 1.0}}",
        ]
    t0 = time.perf_counter()
    try:
        led = api.load_ledger(str(path), overrides=overrides)
        out = api.budget(led)
    except Exception as err:  # a refusal is a result of this table
        return None, None, time.perf_counter() - t0, str(err).splitlines()[0][:60]
    t = out["total"]
    return t["lower"], t["upper"], time.perf_counter() - t0, t.get("lower_reason")


def dp_pld(extra: dict[str, Any], k: int) -> float | None:
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    q = extra.get("poisson")
    if q is None:
        return None
    if extra["kind"] == "gaussian":
        ev: Any = dp_accounting.GaussianDpEvent(extra["sigma"])
    else:
        ev = dp_accounting.LaplaceDpEvent(extra["scale"])
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, ev), k)
    return float(acc.get_epsilon(DELTA))


def dp_rdp(extra: dict[str, Any], k: int) -> float | None:
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    if extra["kind"] != "gaussian":
        return None
    ev: Any = dp_accounting.GaussianDpEvent(extra["sigma"])
    if extra.get("poisson") is not None:
        acc = rdp.RdpAccountant()
        acc.compose(dp_accounting.PoissonSampledDpEvent(extra["poisson"], ev), k)
        return float(acc.get_epsilon(DELTA))
    if extra.get("without_replacement") is not None:
        m, n = extra["without_replacement"]
        acc = rdp.RdpAccountant(neighboring_relation=rdp.NeighborRel.REPLACE_ONE)
        acc.compose(dp_accounting.SampledWithoutReplacementDpEvent(n, m, ev), k)
        return float(acc.get_epsilon(DELTA))
    return None


def unsampled(extra: dict[str, Any], k: int) -> float:
    if extra["kind"] == "gaussian":
        g = Gaussian(sigma=extra["sigma"] / math.sqrt(k), sensitivity=1.0)
        return float(epsilon_at_delta(g, DELTA))
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.LaplaceDpEvent(extra["scale"]), k)
    return float(acc.get_epsilon(DELTA))


def fmt(x: Any, digits: int = 6) -> str:
    if x is None:
        return "–"
    return f"{float(x):.{digits}g}"


def main(argv: list[str]) -> int:
    ks = [1, 10, 100, 1000]
    if "--ks" in argv:
        ks = [int(v) for v in argv[argv.index("--ks") + 1].split(",")]
    print(
        "| design | k | ampcalc [lower, upper] | time (s) | dp_accounting PLD | RDP "
        "| no sampling |"
    )
    print("|---|---|---|---|---|---|---|")
    notes: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name, rel, design, extra in CASES:
            for k in ks:
                path = _ledger(d, name, rel, design, k, extra)
                lo, up, secs, why = ampcalc_total(path, extra)
                if why and lo is None:
                    notes[name] = why
                pld = dp_pld(extra, k)
                rdp_eps = dp_rdp(extra, k)
                none = unsampled(extra, k)
                print(
                    f"| {name} | {k} | [{fmt(lo)}, {fmt(up)}] | {secs:.2f} | {fmt(pld)} | "
                    f"{fmt(rdp_eps, 4)} | {fmt(none)} |"
                )
    for name, why in notes.items():
        print(f"\n{name}: no lower total: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
