"""A seeded random sweep of tiny designs through ``ampcalc verify``: no bound may FAIL.

Every scheme with a verify hook, every relation of M (replace-one, add-remove, both,
with and without an explicit ε_R), every guarantee the scheme offers, pure ε and
(ε, δ). The exact programme (an LP over every ε- or (ε, δ)-DP binary mechanism on the
domain) is the oracle: a FAIL is a bound that is wrong on that instance. INCONCLUSIVE is
allowed (conditions refused by the scheme, a guarantee the hook does not enumerate, a
value below what the programme resolves), but every scheme must have PASS cases.

The full sweep is ``slow``; a small derandomised subset (fixed seeds) runs by default.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import ampcalc
from ampcalc import schemes

HOOKED = sorted(n for n in schemes.names() if schemes.get(n).verify_plan is not None)
LIMIT = 3000

#: open defects (issue 15 and what this sweep found), fixed by other changes; a FAIL
#: matching an entry is an expected failure (xfail) until that fix lands — delete it then
KNOWN_OPEN: dict[str, tuple[str, ...]] = {}


def _eps(rng: random.Random) -> float:
    return rng.choice([1e-3, 0.05, 0.3, 0.7, 1.0, 2.0])


def mechanism(rng: random.Random, scheme: str) -> dict[str, Any]:
    mech: dict[str, Any] = {
        "epsilon": _eps(rng),
        "neighbours": rng.choice(["replace-one", "add-remove", "both"]),
    }
    if rng.random() < 0.5:
        mech["delta"] = rng.choice([1e-4, 1e-3, 0.02])
    if mech["neighbours"] == "add-remove" and rng.random() < 0.3:
        mech["epsilon_replace_one"] = mech["epsilon"] * rng.choice([0.5, 1.0, 1.5])
        if "delta" in mech:
            mech["delta_replace_one"] = mech["delta"] * rng.choice([1.0, 2.0])
    if scheme in ("srswor", "srswr", "poisson") and "delta" not in mech and rng.random() < 0.3:
        mech["group_size"] = rng.randint(2, 3)
    return mech


def sampling(rng: random.Random, scheme: str) -> dict[str, Any]:
    """Tiny parameters of one scheme (populations of at most 8 records)."""
    if scheme == "srswor":
        n = rng.randint(2, 6)
        return {"population": n, "sample": rng.randint(1, n)}
    if scheme == "srswr":
        return {"population": rng.randint(2, 4), "sample": rng.randint(1, 3)}
    if scheme == "poisson":
        return {"rate": rng.choice([0.05, 0.2, 0.5, 0.9])}
    if scheme == "random-size":
        n = rng.randint(1, 6)
        size: dict[str, Any] = rng.choice(
            [
                {"distribution": "point", "value": rng.randint(0, n)},
                {"distribution": "binomial", "p": rng.choice([0.1, 0.5, 0.9])},
                {"distribution": "poisson", "mean": rng.choice([0.5, 2.0])},
                {"distribution": "uniform", "low": 0, "high": n},
            ]
        )
        return {"population": n, "size": size}
    if scheme == "systematic":
        n = rng.randint(2, 7)
        return {
            "population": n,
            "interval": rng.randint(2, n),
            "order": rng.choice(["random", "fixed"]),
        }
    if scheme == "data-dependent-size":
        n = rng.randint(1, 6)
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
        strata = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))]
        named = [{"name": f"s{i}", "size": n} for i, n in enumerate(strata)]
        if rng.random() < 0.5:
            return {"allocation": "poisson", "rate": rng.choice([0.1, 0.4, 0.8]), "strata": named}
        return {
            "allocation": "proportional",
            "rounding": rng.choice(["randomized", "nearest", "floor"]),
            "rate": rng.choice([0.3, 0.5, 0.7]),
            "strata": named,
        }
    if scheme == "pps":
        tau = rng.choice([0.05, 0.2, 0.4])
        out = {"method": "poisson-threshold", "threshold": tau}
        if rng.random() < 0.7:
            out["size_measures"] = [rng.choice([0.5, 1.0, 2.0, 4.0]) for _ in range(3)]
        if rng.random() < 0.7:
            out["max_size_measure"] = rng.choice([2.0, 5.0])
        return out
    raise AssertionError(
        f"no generator for the {scheme} scheme's verify hook: add a branch "
        f'`if scheme == "{scheme}": return {{...}}` with tiny parameters (populations of at '
        "most 8 records) to sampling() in tests/test_verify_sweep.py. See "
        "docs/contributing.md, step 5 (`ampcalc verify` and its sweep)."
    )


def design(seed: int, scheme: str) -> dict[str, Any]:
    rng = random.Random(f"{scheme}/{seed}")
    d: dict[str, Any] = {
        "name": f"{scheme}-{seed}",
        "mechanism": mechanism(rng, scheme),
        "sampling": {"scheme": scheme, **sampling(rng, scheme)},
    }
    offered = [str(g) for g in schemes.get(scheme).guarantees]
    if len(offered) > 1 and rng.random() < 0.5:
        d["guarantee"] = rng.choice(offered)
    return d


def verify_one(seed: int, scheme: str) -> dict[str, Any]:
    d = design(seed, scheme)
    pairs = "all" if random.Random(seed).random() < 0.5 else "default"
    try:
        (row,) = ampcalc.verify(d, pairs=pairs, limit=LIMIT)
    except ampcalc.AmpcalcError as err:  # a design the scheme's validation refuses
        return {"status": "INCONCLUSIVE", "reason": str(err), "design": d}
    row["design"] = d
    return row


def assert_no_fail(row: dict[str, Any], scheme: str) -> None:
    if row["status"] != "FAIL":
        return
    if any(s in (row["reason"] or "") for s in KNOWN_OPEN.get(scheme, ())):
        pytest.xfail(f"known open defect (issue 15): {row['reason']}")
    raise AssertionError(row)


def test_every_hooked_scheme_has_a_generator() -> None:
    assert set(HOOKED) >= {"srswor", "srswr", "poisson", "cluster", "stratified", "pps"}
    for scheme in HOOKED:
        design(0, scheme)  # raises for a scheme without a generator


# the derandomised default-tier subset: fixed seeds, every scheme (< 20 s in all)
FAST = [(s, scheme) for scheme in HOOKED for s in (1, 2)]


@pytest.mark.parametrize(("seed", "scheme"), FAST, ids=[f"{c}-{s}" for s, c in FAST])
def test_sweep_fast(seed: int, scheme: str) -> None:
    assert_no_fail(verify_one(seed, scheme), scheme)


SEEDS = 40


@pytest.mark.slow
@pytest.mark.parametrize("scheme", HOOKED)
def test_sweep(scheme: str) -> None:
    rows = [verify_one(seed, scheme) for seed in range(SEEDS)]
    unexpected = [
        r
        for r in rows
        if r["status"] == "FAIL"
        and not any(s in (r["reason"] or "") for s in KNOWN_OPEN.get(scheme, ()))
    ]
    assert not unexpected, unexpected
    passed = sum(r["status"] == "PASS" for r in rows)
    # not vacuous: relations a scheme refuses and δ > 0 where it gives no bound are
    # INCONCLUSIVE (data-dependent-size: 9 of 40 PASS, the fewest)
    assert passed >= SEEDS // 6, [
        (r["design"], r["reason"]) for r in rows if r["status"] != "PASS"
    ]
    known = [r for r in rows if r["status"] == "FAIL"]
    if known:
        pytest.xfail(f"{len(known)} known open defects (issue 15), e.g. {known[0]['reason']}")
