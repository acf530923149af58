"""Tightness: how far ampcalc's bounds are from the exact worst case on tiny instances.

For every scheme with a verify hook, a fixed, seeded set of tiny designs (pure ε and
(ε, δ), every relation of M, the scheme's guarantees) goes through ``ampcalc verify``
(``--pairs all`` where the domain allows, else ``default``). Per scheme the table gives
the verdict counts, the largest (upper − exact) and (exact − lower) with the instance
that attains each, and for (ε, δ) designs the largest (δ′ − δ′_exact). "exact" is the
exact worst-case ε′ (for δ > 0: the exact ε′ at the reported δ′).

    python benchmarks/bench_tightness.py              # writes tightness.json, README table
    python benchmarks/bench_tightness.py --no-readme  # JSON and stdout only

Deterministic: the instances depend only on ``SEED`` and ``PER_SCHEME``; a design the
scheme refuses (or no longer accepts) is counted, not fatal. A few minutes on 2 cores.
Exit code 1 when some bound FAILs (the table is written all the same).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

SEED = 20261125
PER_SCHEME = 24
LIMIT = 3000
README = HERE / "README.md"
OUT = HERE / "tightness.json"
BEGIN, END = "<!-- tightness: begin -->", "<!-- tightness: end -->"


# --- the instances ---------------------------------------------------------------------


def _mechanism(rng: random.Random, relations: list[str]) -> dict[str, Any]:
    mech: dict[str, Any] = {
        "epsilon": rng.choice([0.1, 0.5, 1.0, 2.0]),
        "neighbours": rng.choice(relations),
    }
    if rng.random() < 1 / 3:
        mech["delta"] = rng.choice([1e-4, 1e-3, 1e-2])
    return mech


def _sampling(rng: random.Random, scheme: str) -> dict[str, Any]:
    if scheme == "srswor":
        n = rng.randint(2, 7)
        return {"population": n, "sample": rng.randint(1, n)}
    if scheme == "srswr":
        return {"population": rng.randint(2, 4), "sample": rng.randint(1, 4)}
    if scheme == "poisson":
        return {"rate": rng.choice([0.05, 0.2, 0.5, 0.9])}
    if scheme == "random-size":
        n = rng.randint(2, 6)
        return {
            "population": n,
            "size": rng.choice(
                [
                    {"distribution": "point", "value": rng.randint(1, n)},
                    {"distribution": "binomial", "p": rng.choice([0.2, 0.5, 0.8])},
                    {"distribution": "poisson", "mean": rng.choice([0.5, 2.0])},
                    {"distribution": "uniform", "low": 0, "high": n},
                ]
            ),
        }
    if scheme == "systematic":
        n = rng.randint(3, 7)
        return {
            "population": n,
            "interval": rng.randint(2, n - 1),
            "order": rng.choice(["random", "fixed"]),
        }
    if scheme == "data-dependent-size":
        n = rng.randint(2, 6)
        return {"population": n, "sample": rng.randint(0, n), "sensitivity": rng.randint(0, 2)}
    if scheme == "cluster":
        k = rng.randint(2, 4)
        sizes = [rng.randint(1, 3) for _ in range(k)]
        while sum(sizes) > 7:
            sizes[sizes.index(max(sizes))] -= 1
        out: dict[str, Any] = {"clusters": {"sizes": sizes}, "chosen": rng.randint(1, k - 1)}
        if rng.random() < 0.3:
            out["within"] = {"scheme": "poisson", "rate": rng.choice([0.3, 0.7])}
        return out
    if scheme == "stratified":
        kind = rng.choice(["poisson", "randomized", "nearest", "floor"])
        low = 1 if kind == "poisson" else 2  # r·N_h >= 1 (Theorem 7.2) at r >= 1/2
        strata = [{"name": f"s{i}", "size": rng.randint(low, 4)} for i in range(rng.randint(1, 2))]
        if kind == "poisson":
            return {"allocation": "poisson", "rate": rng.choice([0.1, 0.4, 0.8]), "strata": strata}
        return {
            "allocation": "proportional",
            "rounding": kind,
            "rate": rng.choice([0.5, 0.7]),
            "strata": strata,
        }
    if scheme == "pps":
        measures = [rng.choice([1.0, 2.0, 5.0]) for _ in range(rng.randint(2, 4))]
        method = rng.choice(["poisson-threshold", "pps", "pips", "successive"])
        if method == "poisson-threshold":
            return {
                "method": method,
                "threshold": rng.choice([0.05, 0.1, 0.2]),
                "size_measures": measures,
                "max_size_measure": max(measures),
            }
        return {"method": method, "size_measures": measures, "sample": rng.randint(1, 2)}
    raise ValueError(f"no tiny instances for the {scheme} scheme")


RELATIONS = {
    # the relations of M each scheme accepts (others are refused by its conditions)
    "srswor": ["replace-one", "both", "add-remove"],
    "srswr": ["replace-one", "both", "add-remove"],
    "poisson": ["add-remove", "both"],
    "random-size": ["both", "add-remove"],
    "systematic": ["replace-one", "both", "add-remove"],
    "data-dependent-size": ["add-remove", "both"],
    "cluster": ["add-remove", "both"],
    "stratified": ["add-remove", "both"],
    "pps": ["replace-one", "add-remove", "both"],
}


def instances(scheme: str) -> list[dict[str, Any]]:
    """The fixed tiny designs of one scheme."""
    from ampcalc import schemes

    rng = random.Random(f"{SEED}/{scheme}")
    offered = [str(g) for g in schemes.get(scheme).guarantees]
    out = []
    for i in range(PER_SCHEME):
        d: dict[str, Any] = {
            "name": f"{scheme}-{i}",
            "mechanism": _mechanism(rng, RELATIONS.get(scheme, ["add-remove", "both"])),
            "sampling": {"scheme": scheme, **_sampling(rng, scheme)},
        }
        guarantee = rng.choice(offered)
        if len(offered) > 1:
            d["guarantee"] = guarantee
        out.append(d)
    return out


# --- running the oracle ----------------------------------------------------------------


def describe(d: dict[str, Any]) -> str:
    """A compact, self-contained statement of one instance."""
    s = {k: v for k, v in d["sampling"].items() if k != "scheme"}
    text = json.dumps(s, separators=(",", ":")).replace('"', "")
    m = d["mechanism"]
    mech = f"ε={m['epsilon']:g} {m['neighbours']}"
    if m.get("delta"):
        mech += f" δ={m['delta']:g}"
    if d.get("guarantee"):
        mech += f", guarantee {d['guarantee']}"
    return f"{text}; {mech}"


def verify_one(d: dict[str, Any]) -> dict[str, Any]:
    import ampcalc

    row: dict[str, Any] = {"name": d["name"], "instance": describe(d)}
    try:
        design = ampcalc.load_designs(d)[0]
    except ampcalc.AmpcalcError as err:
        return {**row, "status": "INCONCLUSIVE", "reason": f"design refused: {err}"}
    result: dict[str, Any] | None = None
    for pairs in ("all", "default"):
        (result,) = ampcalc.verify(design, pairs=pairs, limit=LIMIT)
        if "too large to verify" not in (result.get("reason") or ""):
            result["pairs"] = pairs
            break
    assert result is not None
    keep = ("status", "epsilon_prime_exact", "epsilon_prime", "delta_prime")
    keep += ("delta_prime_exact", "reason", "samples", "pairs")
    return {**row, **{k: result.get(k) for k in keep}}


def _worst(rows: list[dict[str, Any]], gap: Any) -> dict[str, Any] | None:
    best: tuple[float, dict[str, Any]] | None = None
    for r in rows:
        g = gap(r)
        if g is not None and (best is None or g > best[0]):
            best = (g, r)
    if best is None:
        return None
    return {"gap": best[0], "instance": best[1]["instance"], "name": best[1]["name"]}


def summarise(scheme: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    decided = [r for r in rows if r["status"] == "PASS"]

    def up_gap(r: dict[str, Any]) -> float | None:
        e, u = r["epsilon_prime_exact"], r["epsilon_prime"]["upper"]
        return None if e is None or u is None else max(0.0, u - e)

    def low_gap(r: dict[str, Any]) -> float | None:
        e, lo = r["epsilon_prime_exact"], r["epsilon_prime"]["lower"]
        return None if e is None or lo is None else max(0.0, e - lo)

    def delta_gap(r: dict[str, Any]) -> float | None:
        dp, de = r.get("delta_prime"), r.get("delta_prime_exact")
        return None if not dp or de is None else max(0.0, dp - de)

    return {
        "scheme": scheme,
        "instances": len(rows),
        "pass": len(decided),
        "fail": sum(r["status"] == "FAIL" for r in rows),
        "inconclusive": sum(r["status"] == "INCONCLUSIVE" for r in rows),
        "no_upper": sum(r["status"] == "PASS" and up_gap(r) is None for r in rows),
        "upper_minus_exact": _worst(decided, up_gap),
        "exact_minus_lower": _worst(decided, low_gap),
        "delta_prime_minus_exact": _worst(decided, delta_gap),
        "fails": [
            {"instance": r["instance"], "reason": r["reason"]}
            for r in rows
            if r["status"] == "FAIL"
        ],
        "inconclusive_reasons": dict(
            sorted(
                collections.Counter(
                    (r["reason"] or "")[:100] for r in rows if r["status"] == "INCONCLUSIVE"
                ).items()
            )
        ),
    }


# --- output ----------------------------------------------------------------------------


def _gap(w: dict[str, Any] | None) -> str:
    if w is None:
        return "-"
    return f"{w['gap']:.4g} (`{w['name']}`: {w['instance']})"


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        f"Measured {doc['date']} (commit {doc['commit']}) by `python "
        f"benchmarks/bench_tightness.py`: {doc['per_scheme']} seeded tiny designs per scheme "
        f"(seed {doc['seed']}), {doc['seconds']:.0f} s. Gaps are in nats of ε′ (δ′ for the "
        "last column), over the PASS instances; the instance that attains each is named.",
        "",
        "| scheme | PASS / FAIL / INC. | no upper | max upper − exact | max exact − lower "
        "| max δ′ − δ′_exact |",
        "|---|---|---|---|---|---|",
    ]
    for s in doc["schemes"]:
        lines.append(
            f"| `{s['scheme']}` | {s['pass']} / {s['fail']} / {s['inconclusive']} | "
            f"{s['no_upper']} | {_gap(s['upper_minus_exact'])} | "
            f"{_gap(s['exact_minus_lower'])} | {_gap(s['delta_prime_minus_exact'])} |"
        )
    lines += ["", "INCONCLUSIVE, by reason (first 100 characters):", ""]
    for s in doc["schemes"]:
        for why, n in s["inconclusive_reasons"].items():
            lines.append(f"- `{s['scheme']}` ×{n}: {why}")
    fails = [(s["scheme"], f) for s in doc["schemes"] for f in s["fails"]]
    if fails:
        lines += ["", "FAIL (a bound wrong on the instance):", ""]
        lines += [f"- `{sc}` {f['instance']}: {f['reason']}" for sc, f in fails]
    return "\n".join(lines)


def write_readme(doc: dict[str, Any]) -> bool:
    """Replace the Tightness table between its markers in ``benchmarks/README.md``."""
    from _rows import replace_between

    return replace_between(README, BEGIN, END, markdown(doc))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help="where to write the JSON")
    ap.add_argument("--no-readme", action="store_true", help="leave benchmarks/README.md alone")
    ap.add_argument("--only", nargs="+", metavar="SCHEME", help="run only these schemes")
    args = ap.parse_args(argv)

    from ampcalc import schemes

    hooked = sorted(n for n in schemes.names() if schemes.get(n).verify_plan is not None)
    t0 = time.perf_counter()
    summary, every = [], []
    for scheme in args.only or hooked:
        ts = time.perf_counter()
        rows = [verify_one(d) for d in instances(scheme)]
        every += rows
        s = summarise(scheme, rows)
        summary.append(s)
        print(
            f"{scheme}: {s['pass']} PASS, {s['fail']} FAIL, {s['inconclusive']} INCONCLUSIVE "
            f"({time.perf_counter() - ts:.1f} s)",
            flush=True,
        )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    doc = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit or None,
        "seed": SEED,
        "per_scheme": PER_SCHEME,
        "limit": LIMIT,
        "seconds": time.perf_counter() - t0,
        "schemes": summary,
        "instances": every,
    }
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(markdown(doc))
    if not args.no_readme and not args.only:
        print("rewrote the Tightness table in benchmarks/README.md" if write_readme(doc) else "")
    return 1 if any(s["fail"] for s in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
