"""Soundness audit: every closed-form bound and certified inverse against a 60-digit oracle.

For each formula the package evaluates (``INVENTORY``, one entry per formula) a
deterministic grid plus random points over ε in [1e-12, 700] (log-spaced), rates in
[1e-12, 1] and sizes up to 10¹² are evaluated once, vectorised, by the package; then
each point is checked one by one against an mpmath oracle at ``mp.dps = 60`` with the
float inputs taken as exact numbers:

* upper bounds: ``mpf(upper) >= exact``; lower bounds: ``mpf(lower) <= exact``;
* certified inverses: the exact upper bound at the certified ε is <= the target, and
  at the ``impossible above`` ε the exact lower bound is >= the target; their accuracy
  is the smaller of the relative distance to the exact inverse (where an oracle gives
  it) and that of the exact bound at the returned ε to the target;
* relative error ``|value − exact| / exact`` below ``REL_TOL`` (1e-12) where the value is
  not tiny: ``exact > TINY`` (1e-290, clear of the subnormal range) and, for entries
  that say so, outside their documented loose region (e.g. the proven-but-loose
  relaxation of ``srswr`` where the count witness exceeds ε). An entry with a wider
  documented tolerance (an LP solver, a declared enclosure slack) says why.

The default run checks ``FAST_POINTS`` points per formula; ``pytest -m slow`` runs
``SLOW_POINTS`` (>= 10⁴). ``python tests/test_soundness.py --report [--points N]``
prints the worst relative error per formula and writes ``benchmarks/soundness.json``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mpmath as mp
import numpy as np
import oracle
import oracle_groups
import oracle_importance
import oracle_pws
import oracle_soundness as osd
import oracle_stratified as orc_strat
import pytest

import ampcalc
from ampcalc import engine, schemes
from ampcalc.math import importance as importance_kernels
from ampcalc.math import numeric
from ampcalc.math import pws as pws_kernels
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.schemes import (
    _cluster_kernels,
    cluster,
    data_dependent_size,
    general_lower_bound,
    poisson,
    random_size,
    srswor,
    srswr,
    stratified,
    systematic,
)

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy

DPS = 60
FAST_POINTS = 300
SLOW_POINTS = 10_000
REL_TOL = 1e-12
TINY = 1e-290
EPS_LO, EPS_HI = 1e-12, 700.0
RATE_LO = 1e-12
SIZE_HI = 10**12

BOTH = Neighbours.BOTH
ADD_REMOVE = Neighbours.ADD_REMOVE
REPLACE_ONE = Neighbours.REPLACE_ONE


# --------------------------------------------------------------------------------------
# Points
# --------------------------------------------------------------------------------------


def _take(special: list[float], grid: np.ndarray, rand: np.ndarray, n: int) -> np.ndarray:
    out = np.concatenate([np.asarray(special, dtype=float), grid, rand])[:n]
    return out


def log_points(rng: np.random.Generator, n: int, lo: float, hi: float, special=()) -> np.ndarray:
    """``special`` values, then a log-spaced grid (half), then log-uniform random points."""
    special = [s for s in special if lo <= s <= hi]
    k = max(0, n - len(special))
    grid = np.geomspace(lo, hi, k // 2) if k // 2 else np.empty(0)
    rand = np.exp(rng.uniform(math.log(lo), math.log(hi), k - k // 2))
    out = _take(list(special), grid, rand, n)
    return out


def eps_points(rng: np.random.Generator, n: int, lo: float = EPS_LO, hi: float = EPS_HI):
    special = [1e-12, 1e-9, 1e-6, 1e-3, 0.1, 0.5, 1.0, 2.0, 10.0, 50.0, 699.0, 700.0]
    return rng.permutation(log_points(rng, n, lo, hi, special))


def rate_points(rng: np.random.Generator, n: int, lo: float = RATE_LO):
    special = [1.0, 1.0 - 2.0**-53, 1.0 - 1e-9, 0.5, 0.1, 1e-3, 1e-6, 1e-12]
    return rng.permutation(log_points(rng, n, lo, 1.0, special))


def size_points(rng: np.random.Generator, n: int, lo: int = 1, hi: int = SIZE_HI):
    x = log_points(rng, n, lo, hi, [lo, hi, 2, 10, 1000])
    return rng.permutation(np.clip(np.round(x), lo, hi).astype(np.int64))


def one_log(rng: np.random.Generator, lo: float, hi: float) -> float:
    """One log-uniform draw in [lo, hi]."""
    return float(np.exp(rng.uniform(math.log(lo), math.log(hi))))


def one_rate(rng: np.random.Generator, lo: float = RATE_LO) -> float:
    """One rate for a design: an edge value one time in eight, else log-uniform."""
    if rng.random() < 0.125:
        return float(rng.choice([x for x in (1.0, 1.0 - 2.0**-53, 0.5, lo) if x >= lo]))
    return one_log(rng, lo, 1.0)


def one_size(rng: np.random.Generator, lo: int = 1, hi: int = SIZE_HI) -> int:
    """One size for a design: an end of the range one time in eight, else log-uniform."""
    if rng.random() < 0.125:
        return int(rng.choice([lo, hi]))
    return int(np.clip(round(one_log(rng, max(lo, 1), hi)), lo, hi))


def split(n: int, parts: int) -> list[int]:
    """n points over ``parts`` designs (exactly n in all when n >= parts; one each else)."""
    base, extra = divmod(n, parts)
    return [max(1, base + (i < extra)) for i in range(parts)]


def mpf(x: float) -> mp.mpf:
    return mp.mpf(float(x))


# --------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------


@dataclass
class Batch:
    """Package outputs (floats) and the exact inputs of each point."""

    values: np.ndarray
    cases: list[dict[str, Any]]


@dataclass(frozen=True)
class Formula:
    """One formula of the package, its points and its oracle.

    Attributes:
        name: ``module.function`` (and variant) of the package formula.
        scheme: the registered scheme it serves, or ``numeric`` for shared kernels.
        kind: ``upper`` | ``lower`` | ``kernel`` (unrounded, two-sided accuracy only) |
            ``certified`` | ``impossible`` | ``calibrated`` (custom check).
        generate: (n, rng) -> Batch, calling the package once per array of points.
        oracle: (case, value) -> exact value (mpf); for ``certified``: (exact upper
            bound at the value, exact inverse or None); ``impossible``: (exact lower
            bound at the value, exact inverse or None); ``calibrated``: (ok, exact).
        rel_tol: relative error allowed where the value is not tiny.
        loose: case (with the package's ``value``) -> True where the formula is proven
            but not tight (no relative error check there).
        note: why a tolerance differs from REL_TOL.
        max_points: cap on the default (fast) run for formulas whose oracle is slow;
            the slow run and the report always use the full count.
    """

    name: str
    scheme: str
    kind: str
    generate: Callable[[int, np.random.Generator], Batch]
    oracle: Callable[[dict[str, Any], float], Any]
    rel_tol: float = REL_TOL
    loose: Callable[[dict[str, Any]], bool] | None = None
    note: str = ""
    max_points: int | None = None


@dataclass
class Audit:
    name: str
    points: int
    worst_rel: float
    worst_case: dict[str, Any] | None
    violations: list[str]
    seconds: float


def _rel(value: float, exact: mp.mpf) -> float | None:
    if not mp.isfinite(exact) or abs(exact) <= TINY or not math.isfinite(value):
        return None
    return float(abs(mpf(value) - exact) / abs(exact))


def audit(f: Formula, n: int, seed: int = 20261123, *, fast: bool = False) -> Audit:
    """Run one formula over n points (``fast``: at most ``f.max_points``, for formulas
    whose oracle is slow); collect violations and the worst relative error."""
    if fast and f.max_points is not None:
        n = min(n, f.max_points)
    rng = np.random.default_rng([seed, sum(f.name.encode())])
    t0 = time.perf_counter()
    batch = f.generate(n, rng)
    values = np.asarray(batch.values, dtype=float).ravel()
    assert values.size == len(batch.cases), f.name
    worst, worst_case = 0.0, None
    bad: list[str] = []
    with mp.workdps(DPS):
        for v, case in zip(values.tolist(), batch.cases, strict=True):
            out = f.oracle(case, v)
            rel = None
            ok = True
            if f.kind in ("upper", "lower", "kernel"):
                exact = out
                if math.isnan(v):
                    ok = False
                elif f.kind == "upper":
                    ok = mpf(v) >= exact
                elif f.kind == "lower":
                    ok = mpf(v) <= exact
                rel = _rel(v, exact)
            elif f.kind in ("certified", "impossible"):
                at_value, inverse = out
                t = mpf(case["target"])
                if not math.isfinite(v):
                    ok = bool(case.get("allow_inf")) and v == math.inf
                elif f.kind == "certified":
                    ok = at_value <= t
                else:
                    ok = at_value >= t
                # accuracy: the argument within REL of the exact inverse, or the bound at
                # it within REL of the target (an ill-conditioned inverse, e.g. a flat
                # bound, meets the second)
                rels = [_rel(float(at_value), t)] if mp.isfinite(at_value) else []
                if inverse is not None:
                    rels.append(_rel(v, inverse))
                rels = [r for r in rels if r is not None]
                rel = min(rels) if rels else None
            elif f.kind == "calibrated":
                ok, exact = out
                rel = _rel(v, exact)
            else:  # pragma: no cover
                raise ValueError(f.kind)
            if not ok:
                bad.append(f"{f.kind} violated: value {v!r} at {case}: oracle {out}")
            if rel is not None and not (f.loose is not None and f.loose({**case, "value": v})):
                if rel > worst:
                    worst, worst_case = rel, {**case, "value": v}
                if rel > f.rel_tol:
                    bad.append(f"relative error {rel:.3g} > {f.rel_tol:g} at {case}: {v!r}")
    return Audit(f.name, values.size, worst, worst_case, bad, time.perf_counter() - t0)


def check(f: Formula, n: int, *, fast: bool = False) -> Audit:
    result = audit(f, n, fast=fast)
    assert not result.violations, (
        f"{f.name}: {len(result.violations)} of {result.points} points fail (a bound on the "
        "wrong side of the exact value, or further from it than the entry's rel_tol: check "
        "the formula and its outward rounding, and that the oracle states the paper's "
        "formula; docs/contributing.md, step 4); first:\n" + "\n".join(result.violations[:5])
    )
    return result


# --------------------------------------------------------------------------------------
# Shared kernels (ampcalc.numeric, _cluster_kernels)
# --------------------------------------------------------------------------------------


def gen_q_eps(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        q, e = rate_points(rng, n), eps_points(rng, n)
        return Batch(fn(q, e), [{"q": a, "eps": b} for a, b in zip(q, e, strict=True)])

    return gen


def or_amp(c: dict, v: float) -> mp.mpf:
    return oracle.amplification(c["q"], c["eps"])


def gen_inverse_kernel(n: int, rng: np.random.Generator) -> Batch:
    q, t = rate_points(rng, n), eps_points(rng, n)
    return Batch(
        numeric.amplification_inverse(q, t),
        [{"q": a, "target": b} for a, b in zip(q, t, strict=True)],
    )


def gen_ratio(fn: Callable[..., np.ndarray]):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        a = rate_points(rng, n)
        a = np.where(a >= 1.0, 0.5, a)  # A = ℓ/k < 1
        k = size_points(rng, n, 1, 2 * SIZE_HI)
        k[: min(n, 3)] = [0, 1, 2][: min(n, 3)]
        e = eps_points(rng, n)
        return Batch(
            fn(a, k.astype(float), e),
            [{"A": x, "K": int(y), "eps": z} for x, y, z in zip(a, k, e, strict=True)],
        )

    return gen


def or_ratio(c: dict, v: float) -> mp.mpf:
    return osd.ratio(c["A"], c["K"], c["eps"])


# --------------------------------------------------------------------------------------
# Designs and analyses
# --------------------------------------------------------------------------------------


def mech(neighbours: Neighbours = BOTH, *, group: int = 1) -> Mechanism:
    return Mechanism(epsilon=1.0, neighbours=neighbours, group_size=group)


def design(sampling: dict[str, Any], neighbours: str = "both", **top: Any):
    return ampcalc.load_designs(
        {"mechanism": {"epsilon": 1.0, "neighbours": neighbours}, "sampling": sampling, **top}
    )[0]


def per_design(
    n: int,
    rng: np.random.Generator,
    designs: list[dict[str, Any]],
    run: Callable[[dict[str, Any], np.ndarray], np.ndarray],
    *,
    targets: bool = False,
    lo: float = EPS_LO,
    hi: float = EPS_HI,
) -> Batch:
    """Points spread over designs: one vectorised package call per design."""
    values, cases = [], []
    for d, k in zip(designs, split(n, len(designs)), strict=True):
        e = eps_points(rng, k, lo, hi)
        out = np.asarray(run(d, e), dtype=float).ravel()
        values.append(out)
        key = "target" if targets else "eps"
        cases.extend({**d, key: float(x)} for x in e)
    return Batch(np.concatenate(values), cases)


def inverse_oracle(bound: Callable[[dict, mp.mpf], mp.mpf], inv=None):
    """(exact bound at the returned ε, exact inverse) for certified/impossible entries."""

    def f(c: dict, v: float):
        if not math.isfinite(v):
            return (mp.nan, None)
        return (bound(c, mpf(v)), None if inv is None else inv(c))

    return f


def certified_of(analysis) -> Callable[[np.ndarray], np.ndarray]:
    return lambda t: engine.certified_epsilon(analysis, np.asarray(t, dtype=float))[0]


def impossible_of(analysis) -> Callable[[np.ndarray], np.ndarray]:
    return lambda t: engine.impossible_epsilon(analysis, np.asarray(t, dtype=float))[0]


# --- srswor ------------------------------------------------------------------------------


def srswor_designs(rng: np.random.Generator, k: int) -> list[dict[str, Any]]:
    n = size_points(rng, k, 1, SIZE_HI)
    m = np.maximum(1, np.round(n * rate_points(rng, k, 1e-12))).astype(np.int64)
    m = np.minimum(m, n)
    return [{"N": int(a), "m": int(b)} for a, b in zip(n, m, strict=True)]


def gen_srswor(which: str):
    fn = srswor.upper_epsilon if which == "upper" else srswor.lower_epsilon

    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = srswor_designs(rng, n)
        e = eps_points(rng, n)
        nn = np.array([d["N"] for d in ds])
        mm = np.array([d["m"] for d in ds])
        return Batch(
            fn(e, population=nn, sample=mm), [{**d, "eps": x} for d, x in zip(ds, e, strict=True)]
        )

    return gen


def or_srswor(c: dict, v: float) -> mp.mpf:
    return osd.amp(mp.mpf(c["m"]) / c["N"], c["eps"])


def gen_srswor_inverse(kind: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = srswor_designs(rng, 20)
        for i, d in enumerate(ds):
            d["ratio"] = 2 if i % 2 else 1

        def run(d: dict, t: np.ndarray) -> np.ndarray:
            nb = ADD_REMOVE if d["ratio"] == 2 else BOTH
            a = srswor.analyse(
                srswor.Params(population=d["N"], sample=d["m"]), mech(nb), REPLACE_ONE
            )
            return (certified_of if kind == "certified" else impossible_of)(a)(t)

        return per_design(n, rng, ds, run, targets=True)

    return gen


def or_srswor_at(c: dict, x: mp.mpf) -> mp.mpf:
    return osd.amp(mp.mpf(c["m"]) / c["N"], c["ratio"] * x)


def inv_srswor(c: dict) -> mp.mpf:
    return oracle.amplification_inverse(mp.mpf(c["m"]) / c["N"], c["target"]) / c["ratio"]


def delta_designs(rng: np.random.Generator, k: int) -> list[dict[str, Any]]:
    ds = srswor_designs(rng, k)
    for i, d in enumerate(ds):
        d["delta"] = one_log(rng, 1e-15, 0.5)
        d["nb"] = "add-remove" if i % 2 else "both"
        d["q"] = d["m"] / d["N"]
    return ds


def delta_mech(d: dict) -> Mechanism:
    return Mechanism(epsilon=1.0, delta=d["delta"], neighbours=Neighbours(d["nb"]))


def gen_delta(scheme: str, which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = delta_designs(rng, 30)
        for d in ds:
            d["scheme"] = scheme
            if scheme == "poisson":
                d["nb"] = "add-remove"
            if which == "inverse":
                d["target"] = one_log(rng, 1e-15, 0.5)

        def run(d: dict, e: np.ndarray) -> np.ndarray:
            if scheme == "srswor":
                p = srswor.Params(population=d["N"], sample=d["m"])
                a = srswor.analyse(p, delta_mech(d), REPLACE_ONE)
            else:
                a = poisson.analyse(poisson.Params(rate=d["q"]), delta_mech(d), ADD_REMOVE)
            if which == "inverse":
                return a.mechanism_delta(d["target"], e)
            return a.delta_prime(e)

        return per_design(n, rng, ds, run, hi=40.0)

    return gen


def delta_saturated(c: dict) -> bool:
    v = mpf(c["value"])
    return v >= 1 or (c["nb"] == "add-remove" and (1 + mp.exp(mpf(c["eps"]))) * v >= 1)


def exact_delta_prime(c: dict, delta_m: float, eps: float) -> mp.mpf:
    """δ′ = q·δ_R for srswor: δ_R = δ (both), min((1 + e^ε)δ, 1) (add-remove: group
    privacy for a removal and an addition); Poisson, add-remove: q·δ (BBG18)."""
    d = mpf(delta_m)
    if c["scheme"] == "poisson":
        return mpf(c["q"]) * d
    if c["nb"] == "add-remove":
        d = min((1 + mp.exp(mpf(eps))) * d, mp.mpf(1))
    return mp.mpf(c["m"]) / c["N"] * d


# --- poisson -----------------------------------------------------------------------------


def gen_poisson_replace(which: str):
    fn = (
        poisson.upper_epsilon_replace_one
        if which == "upper"
        else poisson.lower_epsilon_replace_one
    )

    def gen(n: int, rng: np.random.Generator) -> Batch:
        q, e = rate_points(rng, n), eps_points(rng, n)
        r = e * rng.choice([0.25, 0.5, 1.0, 1.5, 2.0, 3.0], n)
        return Batch(
            fn(e, r, rate=q),
            [{"q": a, "eps_d": b, "eps_r": c} for a, b, c in zip(q, e, r, strict=True)],
        )

    return gen


def gen_poisson_inverse(kind: str, group: int = 1):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = [{"q": float(q), "g": group} for q in rate_points(rng, 20)]

        def run(d: dict, t: np.ndarray) -> np.ndarray:
            a = poisson.analyse(
                poisson.Params(rate=d["q"]), mech(ADD_REMOVE, group=d["g"]), ADD_REMOVE
            )
            return (certified_of if kind == "certified" else impossible_of)(a)(t)

        return per_design(n, rng, ds, run, targets=True)

    return gen


def gen_poisson_replace_inverse(kind: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = [
            {"q": float(q), "ratio": 2 if i % 2 else 1} for i, q in enumerate(rate_points(rng, 20))
        ]

        def run(d: dict, t: np.ndarray) -> np.ndarray:
            nb = ADD_REMOVE if d["ratio"] == 2 else BOTH
            a = poisson.analyse(poisson.Params(rate=d["q"]), mech(nb), REPLACE_ONE)
            return (certified_of if kind == "certified" else impossible_of)(a)(t)

        return per_design(n, rng, ds, run, targets=True)

    return gen


def gen_poisson_group(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = [
            {"q": float(q), "g": int(g)}
            for q, g in zip(rate_points(rng, 20), rng.integers(2, 50, 20), strict=True)
        ]

        def run(d: dict, e: np.ndarray) -> np.ndarray:
            a = poisson.analyse(
                poisson.Params(rate=d["q"]), mech(ADD_REMOVE, group=d["g"]), ADD_REMOVE
            )
            return (a.upper if which == "upper" else a.lower)(e)

        return per_design(n, rng, ds, run)

    return gen


def or_group_poisson(c: dict, v: float) -> mp.mpf:
    return c["g"] * osd.amp(c["q"], c["eps"])


# --- srswr and groups ---------------------------------------------------------------------

#: above this many draws the relaxation's oracle (an explicit sum over thresholds) is
#: not run; there only the count-witness value V is checked (a proven lower end)
RELAX_ORACLE_MAX = 40


def srswr_designs(rng: np.random.Generator, k: int) -> list[dict[str, Any]]:
    out = []
    for i in range(k):
        if i % 2:  # small: the relaxation region V > ε is reachable and has an oracle
            n = int(rng.integers(1, 60))
            m = int(rng.integers(1, RELAX_ORACLE_MAX + 1))
        else:
            n = int(one_size(rng, 2, SIZE_HI))
            m = int(max(1, round(n * float(one_rate(rng, 1e-12)) * 2)))
            m = min(m, 2**40)
        out.append({"N": n, "m": m})
    return out


def srswr_v(c: dict, eps) -> mp.mpf:
    return oracle_groups.binomial_log_mgf(c["m"], mp.mpf(1) / c["N"], eps)


def srswr_exact_upper(c: dict, eps) -> mp.mpf:
    v = srswr_v(c, eps)
    if v <= mp.mpf(eps) or c["m"] > RELAX_ORACLE_MAX:
        return v
    return oracle_groups.relaxation(oracle_groups.binomial_pmf(c["m"], mp.mpf(1) / c["N"]), eps)


def srswr_loose(c: dict) -> bool:
    return srswr_v(c, c["eps"]) > mp.mpf(c["eps"]) * (1 - mp.mpf(10) ** -9)


def gen_srswr(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, e: np.ndarray) -> np.ndarray:
            fn = srswr.upper_epsilon if which == "upper" else srswr.lower_epsilon
            return fn(e, population=d["N"], sample=d["m"])

        return per_design(n, rng, srswr_designs(rng, 30), run)

    return gen


def gen_srswr_inverse(kind: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = srswr_designs(rng, 20)

        def run(d: dict, t: np.ndarray) -> np.ndarray:
            a = srswr.analyse(srswr.Params(population=d["N"], sample=d["m"]), mech(), REPLACE_ONE)
            return (certified_of if kind == "certified" else impossible_of)(a)(t)

        return per_design(n, rng, ds, run, targets=True, hi=200.0)

    return gen


def hyp_designs(rng: np.random.Generator, k: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(k):
        g = int(rng.integers(2, 13))
        n = int(max(g, one_size(rng, 2, SIZE_HI)))
        m = int(np.clip(round(n * float(one_rate(rng))), 1, n))
        out.append({"N": n, "g": g, "m": m})
    # both ends of the support: g + m > N (no sample avoids the group) and m = N
    out[0] = {"N": 20, "g": 6, "m": 17}
    out[1] = {"N": 7, "g": 3, "m": 7}
    return out


def hyp_pmf(c: dict) -> dict[int, mp.mpf]:
    return oracle_groups.hypergeom_pmf(c["N"], c["g"], c["m"])


def hyp_v(c: dict, eps) -> mp.mpf:
    return oracle_groups.hypergeom_log_mgf(c["N"], c["g"], c["m"], eps)


def hyp_exact_upper(c: dict, eps) -> mp.mpf:
    v = hyp_v(c, eps)
    return v if v <= mp.mpf(eps) else oracle_groups.relaxation(hyp_pmf(c), eps)


def gen_group_srswor(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, e: np.ndarray) -> np.ndarray:
            p = srswor.Params(population=d["N"], sample=d["m"])
            a = srswor.analyse(p, mech(group=d["g"]), REPLACE_ONE)
            return (a.upper if which == "upper" else a.lower)(e)

        return per_design(n, rng, hyp_designs(rng, 30), run)

    return gen


def big_hyp_designs(rng: np.random.Generator, k: int) -> list[dict[str, Any]]:
    """Supports of 10²..10⁵ points: the log-space branch of the log-MGF (k_max·ε > ~680)."""
    out = []
    for _ in range(k):
        g = int(np.exp(rng.uniform(math.log(100), math.log(1e5))))
        m = int(np.exp(rng.uniform(math.log(100), math.log(1e5))))
        n = int(max(g + m, np.exp(rng.uniform(math.log(1e9), math.log(1e12)))))
        out.append({"N": n, "g": g, "m": m})
    # k_max·ε of 690..3000 at ε in [0.0069, 0.03]: the log-space branch with a tiny value
    out[:3] = [
        {"N": 10**12, "g": 10**5, "m": 10**5},
        {"N": 10**11, "g": 30000, "m": 30000},
        {"N": 10**12, "g": 50000, "m": 80000},
    ]
    return out


def hyp_v_truncated(c: dict, eps) -> mp.mpf:
    """log E[e^{Jε}], J ~ Hyp(N, g, m), summing p_k e^{kε} from k = 0 by the exact ratio
    p_{k+1}/p_k until the terms fall below 2^-300 of the sum and keep falling."""
    n, g, m, e = c["N"], c["g"], c["m"], mp.mpf(eps)
    p = mp.binomial(n - g, m) / mp.binomial(n, m)
    s = t = p
    s1 = p
    for k in range(0, min(g, m)):
        p *= mp.mpf(g - k) * (m - k) / ((k + 1) * mp.mpf(n - g - m + k + 1))
        term = p * mp.exp((k + 1) * e)
        s += term
        s1 += p
        if term < s * mp.mpf(2) ** -300 and term < t:
            break
        t = term
    return mp.log(s / s1)


def gen_big_group(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, e: np.ndarray) -> np.ndarray:
            p = srswor.Params(population=d["N"], sample=d["m"])
            a = srswor.analyse(p, mech(group=d["g"]), REPLACE_ONE)
            return (a.upper if which == "upper" else a.lower)(e)

        return per_design(n, rng, big_hyp_designs(rng, 10), run, lo=1e-6, hi=0.05)

    return gen


def gen_group_srswor_inverse(kind: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, t: np.ndarray) -> np.ndarray:
            p = srswor.Params(population=d["N"], sample=d["m"])
            a = srswor.analyse(p, mech(group=d["g"]), REPLACE_ONE)
            return (certified_of if kind == "certified" else impossible_of)(a)(t)

        return per_design(n, rng, hyp_designs(rng, 15), run, targets=True, hi=200.0)

    return gen


# --- random size ---------------------------------------------------------------------------


def rs_params(c: dict) -> random_size.Params:
    kind = c["kind"]
    if kind == "binomial":
        dist = random_size.SizeDistribution(kind="binomial", p=c["p"])
    elif kind == "uniform":
        dist = random_size.SizeDistribution(kind="uniform", low=c["low"], high=c["high"])
    elif kind == "poisson":
        dist = random_size.SizeDistribution(kind="poisson", mean=c["lam"])
    elif kind == "normal":
        dist = random_size.SizeDistribution(kind="normal", mean=c["mu"], sd=c["sd"])
    elif kind == "point":
        dist = random_size.SizeDistribution(kind="point", value=c["value"])
    else:
        sizes = np.asarray(c["sizes"], dtype=np.int64)
        probs = np.asarray(c["probs"], dtype=float)
        dist = random_size.SizeDistribution(
            kind="pmf", sizes=sizes, log_probs=np.log(probs), source="inline"
        )
    return random_size.Params(population=c["N"], size=dist)


def rs_designs(kind: str, rng: np.random.Generator, k: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(k):
        ratio = 2 if i % 2 else 1
        if kind == "binomial":
            n = int(one_size(rng, 1, SIZE_HI))
            d = {"N": n, "p": float(one_rate(rng))}
        elif kind == "uniform":
            n = int(one_size(rng, 1, SIZE_HI))
            lo, hi = sorted(int(x) for x in rng.integers(0, n + 1, 2))
            if i % 3 == 0:
                hi = n
            d = {"N": n, "low": lo, "high": hi}
        elif kind == "poisson":
            n = int(one_size(rng, 1, 10**6))
            d = {"N": n, "lam": float(np.exp(rng.uniform(math.log(0.01), math.log(n + 1.0))))}
        elif kind == "normal":
            n = int(rng.integers(1, 3000))
            d = {"N": n, "mu": float(rng.uniform(-0.2, 1.2) * n), "sd": float(rng.uniform(0.3, 6))}
        elif kind == "point":
            n = int(one_size(rng, 1, SIZE_HI))
            d = {"N": n, "value": int(rng.integers(0, n + 1))}
        else:
            n = int(rng.integers(1, 5000))
            s = np.unique(rng.integers(0, n + 1, int(rng.integers(1, 40))))
            p = rng.dirichlet(np.ones(s.size))
            p = np.maximum(p, 1e-300)
            d = {"N": n, "sizes": s.tolist(), "probs": (p / p.sum()).tolist()}
        out.append({"kind": kind, "ratio": ratio, **d})
    return out


def rs_rate(c: dict, eps) -> tuple[mp.mpf, mp.mpf]:
    """(E_t̃[m]/N, 1 − E_t̃[m]/N), tilt at eps, the second computed directly (the lower
    bound near E = N depends on it)."""
    kind, n, e = c["kind"], c["N"], mp.mpf(eps)
    if kind == "binomial":
        return osd.tilted_binomial(c["p"], e)
    if kind == "point":
        return mp.mpf(c["value"]) / n, mp.mpf(n - c["value"]) / n
    if kind == "uniform":
        mean, gap = osd.tilted_uniform(c["low"], c["high"], n, e)
    elif kind == "poisson":
        mean, gap = osd.tilted_poisson(c["lam"], n, e)
    elif kind == "normal":
        mean, gap = osd.tilted_normal(c["mu"], c["sd"], n, e)
    else:
        mean, gap = osd.tilted_pmf(c["sizes"], c["probs"], n, e)
    return mean / n, gap / n


def rs_upper(c: dict, eps) -> mp.mpf:
    """Corrected Theorem 3.1: A(E_t̃[m]/N, ε_R), tilt at ε_D (spec §3)."""
    e = mp.mpf(eps)
    return osd.amp(rs_rate(c, e)[0], c["ratio"] * e)


def rs_smallest(c: dict) -> int:
    """The smallest size of positive probability."""
    kind = c["kind"]
    if kind == "binomial":
        return c["N"] if c["p"] == 1.0 else 0
    if kind == "uniform":
        return c["low"]
    if kind == "point":
        return c["value"]
    if kind == "pmf":
        return min(c["sizes"])
    return 0  # poisson, normal


def rs_lower(c: dict, eps) -> mp.mpf:
    """The larger of the witness read above every sum, −log(1 − (E_t̃[m]/N)(1 − e^{−ε_R}))
    = −log(g + (1 − g)e^{−ε_R}), g = 1 − E/N, tilt at ε_D = ε, and below every sum,
    A(E_{t(ε_D − ε_R)}[m]/N, ε_R): untilted for ε_R = ε, the smallest size for ε_R = 2ε."""
    e = mp.mpf(eps)
    rate, gap = rs_rate(c, e)
    above = -mp.log(gap + rate * mp.exp(-c["ratio"] * e))
    if c["ratio"] == 2:
        q0 = mp.mpf(rs_smallest(c)) / c["N"]
    elif c["kind"] == "uniform":  # the untilted mean (tilted_uniform divides by 1 − e^0)
        q0 = mp.mpf(c["low"] + c["high"]) / 2 / c["N"]
    else:
        q0 = rs_rate(c, 0)[0]
    below = osd.amp(q0, c["ratio"] * e) if q0 > 0 else mp.mpf(0)
    return max(above, below)


def rs_analysed(c: dict, eps, theorem_3_1) -> mp.mpf:
    """What ``random_size.analyse`` reports: a binomial size (p > 0) is a Poisson sample
    with rate p, whose replace-one value is exact; other sizes, Theorem 3.1's bound."""
    if c["kind"] == "binomial" and c["p"] > 0:
        return osd.poisson_replace_exact(c["p"], eps, c["ratio"] * mp.mpf(eps))
    return theorem_3_1(c, eps)


def gen_random_size(kind: str, which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, e: np.ndarray) -> np.ndarray:
            er = d["ratio"] * e
            fn = random_size.upper_epsilon if which == "upper" else random_size.lower_epsilon
            return fn(e, er, params=rs_params(d))

        k = 30 if kind in ("binomial", "uniform", "point") else 12
        return per_design(n, rng, rs_designs(kind, rng, k), run)

    return gen


def gen_random_size_inverse(kind: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, t: np.ndarray) -> np.ndarray:
            nb = ADD_REMOVE if d["ratio"] == 2 else BOTH
            a = random_size.analyse(rs_params(d), mech(nb), REPLACE_ONE)
            return (certified_of if kind == "certified" else impossible_of)(a)(t)

        ds = rs_designs("binomial", rng, 10)
        return per_design(n, rng, ds, run, targets=True, lo=1e-9, hi=300.0)

    return gen


# --- data-dependent size -------------------------------------------------------------------


def dds_designs(rng: np.random.Generator, k: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(k):
        n = int(one_size(rng, 1, SIZE_HI))
        m = int(np.clip(round(n * float(one_rate(rng))), 0, n))
        out.append({"N": n, "m": m, "sens": int(rng.choice([0, 1, 2, 3, 7, 64, 1000]))})
    return out


def gen_dds(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, e: np.ndarray) -> np.ndarray:
            if which == "upper":
                return data_dependent_size.upper_epsilon(
                    e, population=d["N"], sample=d["m"], sensitivity=d["sens"]
                )
            k = data_dependent_size.reachable_shift(d["N"], d["m"], d["sens"])
            count = data_dependent_size.lower_epsilon(e, sensitivity=k)
            pair = data_dependent_size.sample_lower_epsilon(
                e, 2.0 * e, population=d["N"], sample=d["m"], sensitivity=d["sens"]
            )
            return np.maximum(count, pair)

        return per_design(n, rng, dds_designs(rng, 30), run)

    return gen


def gen_dds_inverse(kind: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = [d for d in dds_designs(rng, 40) if d["sens"] > 0][:15]

        def run(d: dict, t: np.ndarray) -> np.ndarray:
            p = data_dependent_size.Params(population=d["N"], sample=d["m"], sensitivity=d["sens"])
            a = data_dependent_size.analyse(p, mech(ADD_REMOVE), ADD_REMOVE)
            return (certified_of if kind == "certified" else impossible_of)(a)(t)

        return per_design(n, rng, ds, run, targets=True)

    return gen


def or_dds_lower(c: dict, eps) -> mp.mpf:
    """max(Δε, kε + A(π, 2ε)) over the pairs P vs P − {x} (m′ = min(N − 1, m + Δ)) and
    P ∪ {x} (every m′ in max(0, m − Δ)..m) vs P; add-remove M (ε_R = 2ε)."""
    n, m, d, e = c["N"], c["m"], c["sens"], mp.mpf(eps)
    best = min(d, max(n + 1 - m, m)) * e  # neighbours draw 0..N + 1 records
    if m <= n - 1:
        best = max(best, (min(n - 1, m + d) - m) * e + osd.amp(mp.mpf(m) / n, 2 * e))
    lo = max(0, m - d)
    sizes = set(range(lo, m + 1)) if m - lo <= 64 else {lo, m}
    if m - lo > 64:  # g(m′) is concave: its maximum sits next to the stationary point
        x = 1 / -mp.expm1(-e) - (n + 1) / mp.expm1(2 * e)
        sizes |= {min(m, max(lo, int(mp.floor(x)))), min(m, max(lo, int(mp.ceil(x))))}
    for mp_ in sizes:
        best = max(best, (m - mp_) * e + osd.amp(mp.mpf(mp_) / (n + 1), 2 * e))
    return best


def or_dds_upper(c: dict, eps) -> mp.mpf:
    if c["m"] + c["sens"] == 0:
        return mp.mpf(0)
    return osd.data_dependent_upper(c["N"], c["m"], c["sens"], eps)


# --- allocation test -----------------------------------------------------------------------


def gen_allocation(n: int, rng: np.random.Generator) -> Batch:
    from ampcalc.schemes import allocation_test

    ds = [{"d": d, "base": int(rng.integers(0, 1000))} for d in (1, 2, 3, 5)]

    def run(c: dict, e: np.ndarray) -> np.ndarray:
        sizes = np.arange(c["base"], c["base"] + c["d"] + 1)
        p = np.zeros(sizes.size)
        q = np.zeros(sizes.size)
        p[0], q[-1] = 1.0, 1.0
        params = allocation_test.Params(sizes=sizes, p=p, q=q)
        return allocation_test.analyse(params, mech(ADD_REMOVE), ADD_REMOVE).lower(e)

    return per_design(n, rng, ds, run, hi=60.0)


def allocation_loose(c: dict) -> bool:
    # above the LP cap the bound is solved at ε = 20; below an exact value of 1e-6 the
    # LP's absolute tolerance (~1e-9) dominates the value
    return c["eps"] > 20.0 or osd.allocation_point_masses(c["d"], c["eps"]) < 1e-6


# --- cluster family ------------------------------------------------------------------------


def cluster_designs(rng: np.random.Generator, k: int, within: bool = False) -> list[dict]:
    out = []
    for _ in range(k):
        kk = int(one_size(rng, 2, SIZE_HI))
        ell = int(np.clip(round(kk * float(one_rate(rng))), 1, kk - 1))
        n1 = int(one_size(rng, 1, SIZE_HI)) - int(rng.integers(0, 2))
        n2 = int(rng.integers(0, n1 + 1))
        nmin = int(rng.integers(0, n2 + 1))
        d = {"k": kk, "ell": ell, "n1": n1, "n2": n2, "nmin": nmin}
        if within:
            d["r"] = float(one_rate(rng))
        out.append(d)
    return out


def gen_cluster(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = cluster_designs(rng, n)
        e = eps_points(rng, n)
        frac = np.array([d["ell"] / d["k"] for d in ds])
        if which == "upper":
            ks = np.array([d["n1"] + d["n2"] for d in ds], dtype=float)
            v = cluster.upper_epsilon(e, fraction=frac, k_sum=ks)
        else:
            ks = np.array([d["n1"] + d["nmin"] for d in ds], dtype=float)
            v = cluster.lower_epsilon(e, fraction=frac, k_sum=ks)
        return Batch(v, [{**d, "eps": x} for d, x in zip(ds, e, strict=True)])

    return gen


def or_cluster(which: str):
    def f(c: dict, v: float) -> mp.mpf:
        kk = c["n1"] + (c["n2"] if which == "upper" else c["nmin"])
        return osd.ratio(mp.mpf(c["ell"]) / c["k"], kk, c["eps"])

    return f


def cluster_params(d: dict) -> cluster.Params:
    cs = _cluster_kernels.ClusterSizes(
        count=d["k"],
        largest=(d["n1"], d["n2"]),
        smallest=d["nmin"],
        total=d["n1"] + d["n2"] + d["nmin"] * max(0, d["k"] - 2),
        source="audit",
    )
    return cluster.Params(clusters=cs, chosen=d["ell"], within_rate=d.get("r"))


def gen_cluster_within(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, e: np.ndarray) -> np.ndarray:
            a = cluster.analyse(cluster_params(d), mech(ADD_REMOVE), ADD_REMOVE)
            return (a.upper if which == "upper" else a.lower)(e)

        return per_design(n, rng, cluster_designs(rng, 30, within=True), run)

    return gen


def _ratio_d(frac, e1, d) -> mp.mpf:
    """log(1 + A(e^{ε₁} − 1)/(A + (1 − A)e^{−d})) (ampcalc derivations, §6.1), exactly."""
    a = mp.mpf(frac)
    return mp.log1p(a * mp.expm1(mp.mpf(e1)) / (a + (1 - a) * mp.exp(-mp.mpf(d))))


def or_cluster_within(which: str):
    """Derivations §6.2: d = n₁a + n₂b (upper), n₁a + n_min b (count witness, lower, or
    the single-inclusion A(ℓr/k, ε) where larger)."""

    def f(c: dict, v: float) -> mp.mpf:
        frac = mp.mpf(c["ell"]) / c["k"]
        a, b = osd.amp(c["r"], c["eps"]), osd.removal(c["r"], c["eps"])
        if which == "upper":
            return _ratio_d(frac, a, c["n1"] * a + c["n2"] * b)
        count = _ratio_d(frac, a, c["n1"] * a + c["nmin"] * b)
        return max(count, osd.amp(frac * mp.mpf(c["r"]), c["eps"]))

    return f


def cluster_srswor_designs(rng: np.random.Generator, n: int) -> list[dict]:
    out = []
    for _ in range(n):
        k = int(rng.integers(2, 7))
        sizes = [int(x) for x in rng.integers(0, 60, size=k)]
        sizes[0] = max(sizes[0], 1)
        ell = int(rng.integers(1, k))
        m = int(rng.integers(1, 70))
        out.append({"sizes": sizes, "k": k, "ell": ell, "m": m})
    return out


def gen_cluster_srswor(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, e: np.ndarray) -> np.ndarray:
            cs = _cluster_kernels.summarise(np.asarray(d["sizes"], dtype=np.int64), "audit")
            p = cluster.Params(clusters=cs, chosen=d["ell"], within_sample=d["m"])
            a = cluster.analyse(p, mech(ADD_REMOVE), ADD_REMOVE)
            return (a.upper if which == "upper" else a.lower)(e)

        return per_design(n, rng, cluster_srswor_designs(rng, 30), run)

    return gen


def or_cluster_srswor(which: str):
    """Derivations §6.3 for M ε-DP under add-remove (ε_R = 2ε), recomputed from the sizes."""

    def f(c: dict, v: float) -> mp.mpf:
        sizes, m, e = c["sizes"], c["m"], mpf(c["eps"])
        frac = mp.mpf(c["ell"]) / c["k"]
        e_r = 2 * e
        top = sorted(sizes, reverse=True)
        t1, t2 = min(m, top[0]), min(m, top[1])
        nmin = min(sizes)
        tight = [n for n in sizes if n > m] + [m + 1 for n in sizes if n == m]
        whole = any(n <= m for n in sizes)
        if which == "upper":
            d = t1 * e + t2 * (e_r - e)
            best = _ratio_d(frac, e, d) if whole else mp.mpf(0)
            if tight:
                a = mp.mpf(m) / min(tight)
                best = max(best, _ratio_d(frac, osd.amp(a, e_r), d - e_r))
            return best
        best = osd.amp(frac * min(mp.mpf(1), mp.mpf(m) / max(1, nmin)), e)
        if nmin >= m and tight:
            a = mp.mpf(m) / min(tight)
            best = max(best, _ratio_d(frac, osd.amp(a, e_r), (m - 1) * e_r))
        t = min(m, nmin)
        cands = {nmin, top[0]}
        cands |= {min(n for n in sizes if n > m)} if any(n > m for n in sizes) else set()
        cands |= {max(n for n in sizes if n <= m)} if whole else set()
        for s in {x for n in cands for x in (n, n - 1) if x >= 0}:
            if s + 1 <= m:
                best = max(best, _ratio_d(frac, e, e * (t + s)))
                continue
            a = mp.mpf(m) / (s + 1)
            for j in range(-32, 33):
                w = mp.mpf(j) / 32
                best = max(best, _ratio_d(frac, osd.amp(a, e * (1 - w)), e * (t + w * m)))
        return best

    return f


def gen_cluster_certified(n: int, rng: np.random.Generator) -> Batch:
    def run(d: dict, t: np.ndarray) -> np.ndarray:
        return certified_of(cluster.analyse(cluster_params(d), mech(ADD_REMOVE), ADD_REMOVE))(t)

    ds = cluster_designs(rng, 12) + cluster_designs(rng, 4, within=True)
    return per_design(n, rng, ds, run, targets=True)


def or_cluster_at(c: dict, x: mp.mpf) -> mp.mpf:
    # B <= ε exactly (spec §0); the min keeps the oracle's last digit from deciding
    frac = mp.mpf(c["ell"]) / c["k"]
    if "r" in c:  # derivations §6.2
        a = osd.amp(c["r"], x)
        return min(_ratio_d(frac, a, c["n1"] * a + c["n2"] * osd.removal(c["r"], x)), a)
    return min(osd.ratio(frac, c["n1"] + c["n2"], x), x)


def gen_max_k(n: int, rng: np.random.Generator) -> Batch:
    vals, cases = [], []
    while len(cases) < n:
        frac, eps = one_rate(rng), one_log(rng, 1e-9, 700.0)
        frac = 0.5 if frac >= 1.0 else frac
        lo = float(numeric.amplification_upper(frac, eps))
        if not lo < eps:
            continue
        target = float(np.exp(rng.uniform(math.log(lo), math.log(eps))))
        k = cluster._max_k_for(frac, eps, target)
        if k is None or k < 0:
            continue
        vals.append(float(k))
        cases.append({"A": frac, "eps": eps, "target": target})
    return Batch(np.array(vals), cases)


def or_max_k(c: dict, v: float):
    """K is feasible (B(A, K, ε) <= T exactly) and K + 1 is not, unless B(A, K + 1, ε) is
    within 1e-12 of T (the outward rounding may then reject it)."""
    t = mpf(c["target"])
    at_k = min(osd.ratio(c["A"], int(v), c["eps"]), mpf(c["eps"]))
    at_next = min(osd.ratio(c["A"], int(v) + 1, c["eps"]), mpf(c["eps"]))
    ok = at_k <= t and (at_next > t or (t - at_next) <= t * mp.mpf("1e-12"))
    return ok, mpf(v)


def sys_designs(rng: np.random.Generator, k: int, order: str) -> list[dict]:
    out = []
    for _ in range(k):
        n = int(one_size(rng, 2, SIZE_HI))
        kk = int(np.clip(round(n * float(one_rate(rng))), 2, n))
        out.append({"N": n, "k": kk, "order": order})
    return out


def gen_systematic(which: str, order: str = "random"):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        def run(d: dict, e: np.ndarray) -> np.ndarray:
            p = systematic.Params(population=d["N"], interval=d["k"], order=d["order"])
            a = systematic.analyse(p, mech(), REPLACE_ONE)
            fn = {"upper": a.upper, "lower": a.lower, "certified": None}[which]
            return fn(e) if fn is not None else certified_of(a)(e)

        return per_design(n, rng, sys_designs(rng, 30, order), run, targets=which == "certified")

    return gen


def or_sys(c: dict, eps) -> mp.mpf:
    if c["order"] == "fixed":  # the start-class witness (mech(): both, ε_R = ε_D = ε)
        import oracle_cluster

        return oracle_cluster.systematic_fixed(c["N"], c["k"], float(eps), float(eps))
    m_hi = -(-c["N"] // c["k"])
    return osd.amp(mp.mpf(m_hi) / c["N"], eps)


def or_sys_lower(c: dict, eps) -> mp.mpf:
    """Random order, M ε-DP under both relations: k | N is an SRSWOR (tight); k ∤ N is a
    random-size SRSWOR whose size is protected: the larger of the single-inclusion
    witness A(1/k, ε) and the Theorem 3.1 witness −log(1 − (E_t̃[m]/N)(1 − e^{−ε}))."""
    n, k = c["N"], c["k"]
    if c["order"] == "fixed" or n % k == 0:
        return or_sys(c, eps)
    m_lo, m_hi = n // k, -(-n // k)
    f = mp.mpf(n % k) / k
    mean, gap = osd.tilted_pmf([m_lo, m_hi], [1 - f, f], n, eps)
    tilted = -mp.log(gap / n + mean / n * mp.exp(-mpf(eps)))
    return max(osd.amp(mp.mpf(1) / k, eps), tilted)


def pps_designs(rng: np.random.Generator, k: int) -> list[dict]:
    out = []
    for _ in range(k):
        size = int(rng.integers(2, 30))
        r = np.exp(rng.uniform(0, math.log(1e6), size)).round(3) + 0.001
        m = float(rng.uniform(0.01, size * 0.8))
        out.append({"sizes": [float(x) for x in r], "m": m})
    return out


def gen_pps(n: int, rng: np.random.Generator) -> Batch:
    from ampcalc.schemes import pps

    def run(d: dict, e: np.ndarray) -> np.ndarray:
        a, c = _cluster_kernels.capped_inclusion(np.asarray(d["sizes"]), d["m"])
        p = pps.Params(inclusion=a, certainty_units=c, method="pips", sample=d["m"])
        return pps.analyse(p, mech(), REPLACE_ONE).lower(e)

    return per_design(n, rng, pps_designs(rng, 25), run)


def or_pps(c: dict, v: float) -> mp.mpf:
    return osd.amp(osd.capped_inclusion_max(c["sizes"], c["m"]), c["eps"])


def gen_pps_threshold(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        from ampcalc.schemes import pps

        ds = [
            {"tau": float(t), "R": float(r)}
            for t, r in zip(rate_points(rng, 20), np.exp(rng.uniform(0, 30, 20)), strict=True)
        ]

        def run(d: dict, e: np.ndarray) -> np.ndarray:
            p = pps.Params(
                inclusion=None,
                certainty_units=0,
                method="poisson-threshold",
                threshold=d["tau"],
                max_size_measure=d["R"],
            )
            a = pps.analyse(p, mech(ADD_REMOVE), ADD_REMOVE)
            return (a.upper if which == "upper" else a.lower)(e)

        return per_design(n, rng, ds, run)

    return gen


def or_pps_threshold(c: dict, v: float) -> mp.mpf:
    return osd.amp(min(mp.mpf(1), mpf(c["tau"]) * mpf(c["R"])), c["eps"])


def gen_pps_cluster(n: int, rng: np.random.Generator) -> Batch:
    from ampcalc.schemes import pps_cluster

    ds = []
    for _ in range(25):
        sizes = [
            int(x)
            for x in rng.integers(0, 10 ** int(rng.integers(1, 9)), int(rng.integers(2, 20)))
        ]
        sizes[0] = max(sizes[0], 1)
        ds.append({"sizes": sizes, "chosen": int(rng.integers(1, len(sizes)))})

    def run(d: dict, e: np.ndarray) -> np.ndarray:
        cl = _cluster_kernels.summarise(np.asarray(d["sizes"], dtype=np.int64), "audit")
        p = pps_cluster.Params(clusters=cl, chosen=d["chosen"], method="pips")
        return pps_cluster.analyse(p, mech(), REPLACE_ONE).lower(e)

    return per_design(n, rng, ds, run)


def or_pps_cluster(c: dict, v: float) -> mp.mpf:
    s = c["sizes"]
    a = mp.mpf(max(s)) / sum(s) if c["chosen"] == 1 else osd.capped_inclusion_max(s, c["chosen"])
    return osd.amp(a, c["eps"])


def gen_laplace_witness(n: int, rng: np.random.Generator) -> Batch:
    from ampcalc.schemes import pps_cluster

    ds = []
    for _ in range(30):
        k = int(rng.integers(2, 12))
        sizes = [int(x) for x in rng.integers(1, 10 ** int(rng.integers(1, 5)), k)]
        ds.append({"sizes": sizes})

    def run(d: dict, e: np.ndarray) -> np.ndarray:
        sizes = np.asarray(d["sizes"], dtype=np.int64)
        return np.array([pps_cluster.laplace_witness(sizes, float(x)) for x in e])

    return per_design(n, rng, ds, run, hi=50.0)


def gen_theorem_5_3(n: int, rng: np.random.Generator) -> Batch:
    ds = [
        {"A": float(a), "te": float(t)}
        for a, t in zip(rate_points(rng, 30), eps_points(rng, 30), strict=True)
    ]
    ds = [{**d, "A": 0.5 if d["A"] >= 1 else d["A"]} for d in ds]

    def run(d: dict, e: np.ndarray) -> np.ndarray:
        return general_lower_bound.theorem_5_3(e, fraction=d["A"], test_epsilon=d["te"])

    return per_design(n, rng, ds, run)


def gen_prop_6_1(which: int):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        vals, cases = [], []
        for _ in range(n):
            a, ap, p, pp, q, qp = (float(x) for x in rng.uniform(0, 1, 6) ** rng.choice([1, 8], 6))
            b = general_lower_bound.proposition_6_1(a, ap, p, pp, q, qp)
            vals.append(b[which])
            cases.append({"a": a, "ap": ap, "p": p, "pp": pp, "q": q, "qp": qp})
        return Batch(np.array(vals), cases)

    return gen


def or_prop_6_1(which: int):
    def f(c: dict, v: float) -> mp.mpf:
        return osd.proposition_6_1(c["a"], c["ap"], c["p"], c["pp"], c["q"], c["qp"])[which]

    return f


def prop_loose(which: int):
    def f(c: dict) -> bool:
        return abs(or_prop_6_1(which)(c, 0.0)) < mp.mpf("1e-3")

    return f


# --- stratified ------------------------------------------------------------------------------


def gen_thm43(size_aware: bool):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        nh = size_points(rng, n, 1, SIZE_HI)
        r = np.maximum(rate_points(rng, n), 1.0 / nh)  # r·N_h >= 1
        a = r + 1.0 / nh if size_aware else 2.0 * r
        e = eps_points(rng, n)
        cases = [
            {"r": float(x), "Nh": int(y), "eps": float(z), "aware": size_aware}
            for x, y, z in zip(r, nh, e, strict=True)
        ]
        return Batch(stratified.theorem_4_3(a, r, e), cases)

    return gen


def thm43_a(c: dict) -> mp.mpf:
    return mpf(c["r"]) + mp.mpf(1) / c["Nh"] if c["aware"] else 2 * mpf(c["r"])


def or_thm43(c: dict, v: float) -> mp.mpf:
    return osd.thm43_general(thm43_a(c), c["r"], c["eps"])


def gen_thm43_inverse(n: int, rng: np.random.Generator) -> Batch:
    r = rate_points(rng, n)
    a = 2.0 * r
    t = eps_points(rng, n)
    return Batch(
        stratified.theorem_4_3_inverse(a, r, t),
        [{"r": float(x), "target": float(y)} for x, y in zip(r, t, strict=True)],
    )


def or_thm43_inverse(c: dict, v: float) -> mp.mpf:
    return osd.thm43_general_inverse(2 * mpf(c["r"]), c["r"], c["target"])


def strat_designs(rng: np.random.Generator, k: int) -> list[dict]:
    out = []
    for i in range(k):
        sizes = [int(x) for x in size_points(rng, int(rng.integers(1, 6)), 10, 10**9)]
        rate = float(max(one_rate(rng, 1e-6), 1.0 / min(sizes)))
        out.append(
            {
                "sizes": sizes,
                "rate": rate,
                "aware": bool(i % 2),
                "guarantee": "replace-one" if i % 3 == 0 else "add-remove",
            }
        )
    return out


def strat_design(d: dict):
    strata = [{"name": f"s{j}", "size": s, "sd": 1.0} for j, s in enumerate(d["sizes"])]
    sampling = {
        "scheme": "stratified",
        "allocation": "proportional",
        "rounding": "randomized",
        "rate": d["rate"],
        "value_bound": 1.0,
        "size_aware": d["aware"],
        "strata": strata,
    }
    return design(sampling, "add-remove", guarantee=d["guarantee"])


def gen_strat_certified(n: int, rng: np.random.Generator) -> Batch:
    def run(d: dict, t: np.ndarray) -> np.ndarray:
        return certified_of(engine.analyse(strat_design(d)))(t)

    return per_design(n, rng, strat_designs(rng, 12), run, targets=True)


def or_strat_at(c: dict, x: mp.mpf) -> mp.mpf:
    if c["guarantee"] == "replace-one" and len(c["sizes"]) == 1:  # a mixture of srswor
        n = c["sizes"][0]
        return osd.amp(mp.ceil(mpf(c["rate"] * n)) / n, 2 * x)
    # the exact per-stratum loss (docs/derivations.md §10.1; M add-remove only: ε_R = 2ε)
    return strat_rr_exact(c, x, 2 * x, c["guarantee"] == "replace-one")


def strat_rr_exact(c: dict, e: mp.mpf, er: mp.mpf, replace: bool) -> mp.mpf:
    """Randomised rounding, several strata: max_h of each stratum's exact loss, or under
    replace-one max_h removal + max_h addition (``oracle_stratified.rr_exact``)."""
    per = [orc_strat.rr_exact(c["rate"], n, e, er) for n in c["sizes"]]
    if replace:
        return max(p["remove"] for p in per) + max(p["add"] for p in per)
    return max(max(p["add"], p["remove"]) for p in per)


ALLOCATIONS = ("randomized", "nearest", "floor", "poisson", "fixed", "neyman")


def strat_alloc_designs(rng: np.random.Generator, k: int) -> list[dict]:
    out = []
    for i in range(k):
        alloc = ALLOCATIONS[i % len(ALLOCATIONS)]
        sizes = [one_size(rng, 10, 10**9) for _ in range(int(rng.integers(1, 5)))]
        rate = float(max(one_rate(rng, 1e-6), 1.0 / min(sizes)))
        d: dict[str, Any] = {
            "alloc": alloc,
            "sizes": sizes,
            "rate": rate,
            "guarantee": "replace-one" if i % 12 >= 6 or alloc == "fixed" else "add-remove",
            "nb": "both" if i % 2 else "add-remove",
        }
        if alloc == "fixed":
            d["samples"] = [int(np.clip(round(n * one_rate(rng)), 1, n)) for n in sizes]
        if alloc == "neyman":
            m0 = [int(rng.integers(0, 100)) for _ in sizes]
            d["allocs"] = [m0, [m + int(rng.integers(-2, 3)) if m >= 2 else m for m in m0]]
        out.append(d)
    return out


def strat_alloc_design(d: dict):
    strata = [{"name": f"s{j}", "size": n, "sd": 1.0} for j, n in enumerate(d["sizes"])]
    sampling: dict[str, Any] = {"scheme": "stratified", "value_bound": 1.0, "strata": strata}
    alloc = d["alloc"]
    if alloc in ("randomized", "nearest", "floor"):
        sampling.update(allocation="proportional", rounding=alloc, rate=d["rate"])
    elif alloc == "poisson":
        sampling.update(allocation="poisson", rate=d["rate"])
    elif alloc == "fixed":
        sampling["allocation"] = "fixed"
        for st, m in zip(strata, d["samples"], strict=True):
            st["sample"] = m
    else:
        sampling.update(allocation="neyman", total_sample=sum(d["allocs"][0]) or 1)
        sampling["allocations"] = d["allocs"]
    return design(sampling, d["nb"], guarantee=d["guarantee"])


def gen_strat_alloc(which: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        ds = [
            d
            for d in strat_alloc_designs(rng, 36)
            if which == "lower" or d["alloc"] != "neyman"  # neyman: lower bound only
        ]

        def run(d: dict, e: np.ndarray) -> np.ndarray:
            a = engine.analyse(strat_alloc_design(d))
            return (a.upper if which == "upper" else a.lower)(e)

        return per_design(n, rng, ds, run)

    return gen


def strat_boundary(c: dict) -> bool:
    """The float rule ⌊fl(rN) + ½⌋ picks a different m_h than exact arithmetic."""
    if c["alloc"] not in ("nearest", "floor"):
        return False
    from fractions import Fraction

    half = Fraction(1, 2) if c["alloc"] == "nearest" else Fraction(0)
    return any(
        int(Fraction(c["rate"]) * n + half) != int(np.floor(c["rate"] * n + float(half)))
        for n in c["sizes"]
    )


def strat_eps_r(c: dict, e: mp.mpf) -> mp.mpf:
    return e if c["nb"] == "both" else 2 * e


def strat_rounded(c: dict, e: mp.mpf, er: mp.mpf, which: str) -> mp.mpf:
    """Deterministic rounding at the stated sizes (docs/stratified.md), exact rationals:
    each stratum's step to N_h ± 1 costs ε if it moves m_h, else A(m_h/N, ε_R) (N the
    larger size); replace-one: A(m_h/N_h, ε_R) inside a stratum, and every move s -> t."""
    from fractions import Fraction

    half = Fraction(1, 2) if c["alloc"] == "nearest" else Fraction(0)
    rate = Fraction(c["rate"])

    def f(n: int) -> int:
        return int(rate * max(n, 0) + half)

    def amp0(m: int, n: int) -> mp.mpf:
        return mp.mpf(0) if m == 0 else osd.amp(mp.mpf(m) / n, er)

    ns = c["sizes"]
    down = [(f(n) - f(n - 1), amp0(f(n), n)) for n in ns]
    up = [(f(n + 1) - f(n), amp0(f(n), n + 1)) for n in ns]

    def step(d: tuple[int, mp.mpf]) -> mp.mpf:
        return e if d[0] else d[1]

    if c["guarantee"] != "replace-one":
        return max(max(step(a), step(b)) for a, b in zip(down, up, strict=True))
    best = max(amp0(f(n), n) for n in ns)
    for s_, n_s in enumerate(ns):
        for t_, n_t in enumerate(ns):
            if s_ == t_:
                continue
            ds, dt = down[s_][0], up[t_][0]
            if ds and dt:
                v = er
            elif ds or dt or which == "upper":
                v = step(down[s_]) + step(up[t_])
            else:  # the move witness on a 33-point grid of a in [0, ε_R]
                qf, qt = mp.mpf(f(n_s)) / n_s, mp.mpf(f(n_t)) / (n_t + 1)
                v = mp.mpf(0)
                for j in range(33):
                    a = er * j / 32
                    for x, y in ((qf, qt), (qt, qf)):
                        v = max(v, mp.log1p(x * mp.expm1(a)) - mp.log1p(y * mp.expm1(a - er)))
            best = max(best, v)
    return best


def strat_single(c: dict, e: mp.mpf, er: mp.mpf, which: str) -> mp.mpf:
    """One stratum, randomised rounding, replace-one (docs/stratified.md): the sizes
    ⌊rN⌋, ⌈rN⌉ of fl(r·N); upper A(⌈rN⌉/N, ε_R); lower the e^{(ε − ε_R)m}-weighted mean
    of 1 + (m/N)(e^{ε_R} − 1), or A(r, min(ε, ε_R)) if larger."""
    n = c["sizes"][0]
    x = mpf(c["rate"] * n)  # the float product, as the design uses it
    lo = int(mp.floor(x))
    frac = x - lo
    sizes = [(lo, 1 - frac), (lo + 1, frac)] if frac > 0 else [(lo, mp.mpf(1))]
    if which == "upper":
        return osd.amp(mp.mpf(max(m for m, _ in sizes)) / n, er)
    cc = e - er
    num = sum(w * mp.exp(cc * m) * (1 + mp.mpf(m) / n * mp.expm1(er)) for m, w in sizes)
    den = sum(w * mp.exp(cc * m) for m, w in sizes)
    return max(mp.log(num / den), osd.amp(mpf(c["rate"]), min(e, er)))


def or_strat_alloc(which: str):
    def f(c: dict, v: float) -> mp.mpf:
        e = mpf(c["eps"])
        alloc, replace, r = c["alloc"], c["guarantee"] == "replace-one", mpf(c["rate"])
        er = strat_eps_r(c, e)
        if alloc == "fixed":
            q = max(mp.mpf(m) / n for m, n in zip(c["samples"], c["sizes"], strict=True))
            return osd.amp(q, er)
        if alloc == "neyman":  # Δ∞·min(ε_D, ε_R) or Δ₁·min(ε_D, ε_R/2), halved for add-remove
            diff = [abs(a - b) for a, b in zip(*c["allocs"], strict=True)]
            low = max(max(diff) * min(e, er), sum(diff) * min(e, er / 2))
            return low if replace else low / 2
        if alloc == "randomized" and replace and len(c["sizes"]) == 1:
            return strat_single(c, e, er, which)
        if which == "upper":
            if alloc == "randomized":
                return strat_rr_exact(c, e, er, replace)
            if alloc == "poisson":
                ups = [osd.amp(r, e)]
            else:
                return strat_rounded(c, e, er, which)
            worst = max(ups)
            if alloc == "poisson" and replace:  # one rate: the poisson family's exact value
                return osd.poisson_replace_exact(r, e, er)
            return 2 * worst if replace else worst
        if alloc in ("nearest", "floor"):
            return strat_rounded(c, e, er, which)
        if alloc == "poisson" and replace:
            return osd.poisson_replace_lower(r, e, er)
        if alloc == "randomized" and not replace:
            return strat_rr_exact(c, e, er, False)
        return osd.amp(r, min(e, er) if replace else e)

    return f


# --- importance ------------------------------------------------------------------------------


def gen_personalised(linear: bool, rounding: str):
    def gen(n: int, rng: np.random.Generator) -> Batch:
        q = rate_points(rng, n)
        e = eps_points(rng, n)
        a = e * q if linear else e  # ε(1/q, x) = a/q spans [1e-12, 700]
        v = importance_kernels.personalised_epsilon(q, a, linear=linear, rounding=rounding)
        cases = [
            {"q": float(x), "a": float(y), "linear": linear} for x, y in zip(q, a, strict=True)
        ]
        return Batch(v, cases)

    return gen


def or_personalised(c: dict, v: float) -> mp.mpf:
    return oracle_importance.eps_hat_q(c["q"], c["a"], linear=c["linear"])


def gen_weights(n: int, rng: np.random.Generator) -> Batch:
    star = eps_points(rng, n, 1e-9, 700.0)
    a = star * rng.uniform(0, 1, n) ** rng.choice([1, 4, 16], n)
    a = np.maximum(a, 1e-300)
    w = np.concatenate(
        [
            importance_kernels.privacy_constrained_weights(a[i : i + 1], float(star[i]))
            for i in range(n)
        ]
    )
    cases = [{"a": float(x), "target": float(s)} for x, s in zip(a, star, strict=True)]
    return Batch(w, cases)


def or_weights(c: dict, v: float):
    if not math.isfinite(v):
        return (mp.nan, None)
    return (osd.w_constraint(c["a"], v), oracle_importance.w_star(c["a"], c["target"]))


# --- pws ---------------------------------------------------------------------------------------


def gen_pws(n: int, rng: np.random.Generator) -> Batch:
    vals, cases = [], []
    rows = 60
    while len(cases) < n:
        eps = float(one_log(rng, 0.01, 20.0))
        delta = float(np.exp(rng.uniform(math.log(1e-12), math.log(0.5))))
        method = str(rng.choice(["ppswor", "priority", "none"]))
        tau = float(np.exp(rng.uniform(math.log(1e-4), 0)))
        q = pws_kernels.inclusion_probabilities(rows, method=method, threshold=tau)
        pi = pws_kernels.reporting_probabilities(q, eps, delta)
        for i in range(rows):
            vals.append(pi[i])
            cases.append(
                {
                    "eps": eps,
                    "delta": delta,
                    "q": float(q[i]),
                    "prev": float(pi[i - 1]) if i else 0.0,
                    "qs": q[: i + 1],
                }
            )
    vals, cases = vals[:n], cases[:n]
    return Batch(np.array(vals), cases)


def or_pws(c: dict, v: float):
    hi_a, hi_b = osd.pws_step_limits(c["prev"], c["eps"], c["delta"])
    ok = mpf(v) <= mpf(c["q"]) and mpf(v) <= hi_a and mpf(v) <= hi_b and v >= 0
    exact = oracle_pws.pi_alg3(list(map(float, c["qs"])), c["eps"], c["delta"], dps=DPS)[-1]
    return ok, exact


def gen_pws_l(n: int, rng: np.random.Generator) -> Batch:
    e = eps_points(rng, n, 1e-6, 700.0)
    d = np.exp(rng.uniform(math.log(1e-300), math.log(1.0), n))
    v = np.array([pws_kernels.L_eps_delta(float(x), float(y)) for x, y in zip(e, d, strict=True)])
    return Batch(v, [{"eps": float(x), "delta": float(y)} for x, y in zip(e, d, strict=True)])


def or_pws_l(c: dict, v: float) -> mp.mpf:
    e, d = mpf(c["eps"]), mpf(c["delta"])
    return max(mp.mpf(0), mp.log((mp.expm1(e) + 2 * d) / (d * (mp.exp(e) + 1))) / e)


def pws_l_loose(c: dict) -> bool:
    # L(ε, δ) = (log(e^ε − 1 + 2δ) − log(δ(e^ε + 1)))/ε: where the two logs nearly cancel
    # (L far below the logs' size) the float difference keeps only absolute accuracy
    e, d = mpf(c["eps"]), mpf(c["delta"])
    big = abs(mp.log(d)) + e
    return or_pws_l(c, 0.0) * e < big * mp.mpf(10) ** -3


# --------------------------------------------------------------------------------------
# The inventory
# --------------------------------------------------------------------------------------

LP_NOTE = (
    "a scipy/HiGHS LP (feasibility tolerance ~1e-7 on coefficients up to e^20; measured up "
    "to 2e-4 relative below the optimum at d = 5, ε = 8.6) made exactly feasible by "
    "shrinking toward 1/2; "
    "ε above the LP cap of 20 solves at 20 (still a lower bound): the error is checked "
    "for ε <= 20 and values >= 1e-6 (the LP's absolute tolerance)"
)
GROUP_NOTE = (
    "log E[e^{Jε}] from a recurrence for the log pmf, widened by the declared relative "
    "slack 1e-10 (groups.REL_SLACK): sound, 1e-10 relative (not fixed: a computed bound "
    "from the recurrence's length would give ~1e-13)"
)
BIG_GROUP_NOTE = (
    "where log E[e^{Jε}] > ε only upper >= log E[e^{Jε}] is checked (the relaxation's "
    "oracle is out of reach at these supports)"
)
POISSON_NOTE = (
    "poisson size: window sums around the tilted mode with a declared error bound of "
    "ulps·(4·max|log| + 50)·(window size): up to ~1e-9 relative for λe^ε ~ 1e5; sound, "
    "conservative (not fixed)"
)
UNIFORM_NOTE = (
    "uniform sizes: E_t̃[m] by the φ series with a declared absolute slack 1e-12·(k + 1) "
    "(random_size.tilted_mean_bounds; ~300 times the measured error), up to ~5e-12 relative"
)
PMF_NOTE = (
    "explicit pmf, lower bound near E = N: N − E from a streaming logsumexp whose declared "
    "error bound grows with ε·(support span) (4 ulps of each exponent): up to ~2e-9 "
    "relative at ε·span = 3e6; sound, conservative (not fixed: needs per-sum error bounds)"
)
NORMAL_NOTE = (
    "normal size near 0 or N: the enclosure's slack for the rounding of the tilted centre "
    "c = μ + εσ² is 8 ulps of c absolute on E (N·8ulp·c/σ² relative on N − E), up to ~1e-10 "
    "relative where E or N − E is small; sound, conservative (not fixed: a sharper bound "
    "needs the window's span, Var <= E·b)"
)
RS_TOL = {
    ("uniform", "upper"): (1e-11, UNIFORM_NOTE),
    ("uniform", "lower"): (1e-11, UNIFORM_NOTE),
    ("pmf", "lower"): (1e-8, PMF_NOTE),
    ("poisson", "upper"): (1e-8, POISSON_NOTE),
    ("poisson", "lower"): (1e-8, POISSON_NOTE),
    ("normal", "upper"): (1e-9, NORMAL_NOTE),
    ("normal", "lower"): (1e-9, NORMAL_NOTE),
}
PROP_NOTE = (
    "log of a ratio of float products: absolute error floor 8·2^-53 (rounded down by it); "
    "the relative error is checked where |value| >= 1e-3"
)
RELAX_NOTE = "loose region: the count witness V exceeds ε (relaxation proven, not tight)"


INVENTORY: list[Formula] = [
    # shared kernels
    Formula(
        "numeric.amplification_upper",
        "numeric",
        "upper",
        gen_q_eps(numeric.amplification_upper),
        or_amp,
    ),
    Formula(
        "numeric.amplification_lower",
        "numeric",
        "lower",
        gen_q_eps(numeric.amplification_lower),
        or_amp,
    ),
    Formula(
        "numeric.neg_log1m (rounded down)",
        "numeric",
        "lower",
        gen_q_eps(lambda q, e: numeric.round_down(numeric.neg_log1m(q, e))),
        lambda c, v: oracle.removal_kernel(c["q"], c["eps"]),
    ),
    Formula(
        "numeric.amplification_inverse",
        "numeric",
        "kernel",
        gen_inverse_kernel,
        lambda c, v: oracle.amplification_inverse(c["q"], c["target"]),
    ),
    Formula(
        "_cluster_kernels.ratio_upper",
        "numeric",
        "upper",
        gen_ratio(_cluster_kernels.ratio_upper),
        lambda c, v: min(or_ratio(c, v), mpf(c["eps"])),
    ),
    Formula(
        "_cluster_kernels.ratio_lower",
        "numeric",
        "lower",
        gen_ratio(_cluster_kernels.ratio_lower),
        or_ratio,
    ),
    # srswor
    Formula("srswor.upper_epsilon", "srswor", "upper", gen_srswor("upper"), or_srswor),
    Formula("srswor.lower_epsilon", "srswor", "lower", gen_srswor("lower"), or_srswor),
    Formula(
        "srswor certified",
        "srswor",
        "certified",
        gen_srswor_inverse("certified"),
        inverse_oracle(or_srswor_at, inv_srswor),
    ),
    Formula(
        "srswor impossible_above",
        "srswor",
        "impossible",
        gen_srswor_inverse("impossible"),
        inverse_oracle(or_srswor_at, inv_srswor),
    ),
    Formula(
        "srswor group (hypergeometric) upper",
        "srswor",
        "upper",
        gen_group_srswor("upper"),
        lambda c, v: hyp_exact_upper(c, c["eps"]),
        rel_tol=2e-10,
        loose=lambda c: hyp_v(c, c["eps"]) > mpf(c["eps"]),
        note=RELAX_NOTE + "; " + GROUP_NOTE,
    ),
    Formula(
        "srswor group (hypergeometric) lower",
        "srswor",
        "lower",
        gen_group_srswor("lower"),
        lambda c, v: hyp_v(c, c["eps"]),
        rel_tol=2e-10,
        note=GROUP_NOTE,
    ),
    Formula(
        "srswor group upper, supports of 1e2..1e5 (vs log E[e^{Jε}])",
        "srswor",
        "upper",
        gen_big_group("upper"),
        lambda c, v: hyp_v_truncated(c, c["eps"]),
        rel_tol=2e-10,
        loose=lambda c: hyp_v_truncated(c, c["eps"]) > mpf(c["eps"]),
        note=GROUP_NOTE + "; " + BIG_GROUP_NOTE,
        max_points=60,
    ),
    Formula(
        "srswor group lower, supports of 1e2..1e5",
        "srswor",
        "lower",
        gen_big_group("lower"),
        lambda c, v: hyp_v_truncated(c, c["eps"]),
        rel_tol=2e-10,
        note=GROUP_NOTE,
        max_points=60,
    ),
    Formula(
        "srswor group certified",
        "srswor",
        "certified",
        gen_group_srswor_inverse("certified"),
        inverse_oracle(lambda c, x: hyp_exact_upper(c, x)),
        rel_tol=2e-10,
        loose=lambda c: hyp_v(c, c["value"]) > mpf(c["value"]),
        note=RELAX_NOTE + "; " + GROUP_NOTE,
    ),
    Formula(
        "srswor group impossible_above (root-finder)",
        "srswor",
        "impossible",
        gen_group_srswor_inverse("impossible"),
        inverse_oracle(lambda c, x: hyp_v(c, x)),
        rel_tol=2e-10,
        note=GROUP_NOTE,
    ),
    Formula(
        "srswor delta_prime",
        "srswor",
        "upper",
        gen_delta("srswor", "forward"),
        lambda c, v: exact_delta_prime(c, c["delta"], c["eps"]),
    ),
    Formula(
        "srswor mechanism_delta",
        "srswor",
        "certified",
        gen_delta("srswor", "inverse"),
        lambda c, v: (exact_delta_prime(c, v, c["eps"]), None),
        loose=delta_saturated,
        note="no accuracy check where δ_R = min((1 + e^ε)δ, 1) saturates (any δ meets δ′)",
    ),
    Formula(
        "poisson replace-one certified (root-finder)",
        "poisson",
        "certified",
        gen_poisson_replace_inverse("certified"),
        inverse_oracle(lambda c, x: osd.poisson_replace_upper(c["q"], x, c["ratio"] * x)),
    ),
    Formula(
        "poisson replace-one impossible_above (root-finder)",
        "poisson",
        "impossible",
        gen_poisson_replace_inverse("impossible"),
        inverse_oracle(lambda c, x: osd.poisson_replace_lower(c["q"], x, c["ratio"] * x)),
    ),
    Formula(
        "poisson delta_prime",
        "poisson",
        "upper",
        gen_delta("poisson", "forward"),
        lambda c, v: exact_delta_prime(c, c["delta"], c["eps"]),
    ),
    Formula(
        "poisson mechanism_delta",
        "poisson",
        "certified",
        gen_delta("poisson", "inverse"),
        lambda c, v: (exact_delta_prime(c, v, c["eps"]), None),
    ),
    # poisson
    Formula(
        "poisson.upper_epsilon",
        "poisson",
        "upper",
        gen_q_eps(lambda q, e: poisson.upper_epsilon(e, rate=q)),
        or_amp,
    ),
    Formula(
        "poisson.lower_epsilon",
        "poisson",
        "lower",
        gen_q_eps(lambda q, e: poisson.lower_epsilon(e, rate=q)),
        or_amp,
    ),
    Formula(
        "poisson.upper_epsilon_replace_one",
        "poisson",
        "upper",
        gen_poisson_replace("upper"),
        lambda c, v: osd.poisson_replace_upper(c["q"], c["eps_d"], c["eps_r"]),
    ),
    Formula(
        "poisson.lower_epsilon_replace_one",
        "poisson",
        "lower",
        gen_poisson_replace("lower"),
        lambda c, v: osd.poisson_replace_lower(c["q"], c["eps_d"], c["eps_r"]),
    ),
    Formula(
        "poisson certified",
        "poisson",
        "certified",
        gen_poisson_inverse("certified"),
        inverse_oracle(
            lambda c, x: osd.amp(c["q"], x),
            lambda c: oracle.amplification_inverse(c["q"], c["target"]),
        ),
    ),
    Formula(
        "poisson impossible_above",
        "poisson",
        "impossible",
        gen_poisson_inverse("impossible"),
        inverse_oracle(
            lambda c, x: osd.amp(c["q"], x),
            lambda c: oracle.amplification_inverse(c["q"], c["target"]),
        ),
    ),
    Formula(
        "poisson group impossible_above",
        "poisson",
        "impossible",
        gen_poisson_inverse("impossible", group=3),
        inverse_oracle(
            lambda c, x: 3 * osd.amp(c["q"], x),
            lambda c: oracle.amplification_inverse(c["q"], mpf(c["target"]) / 3),
        ),
    ),
    Formula(
        "poisson group upper", "poisson", "upper", gen_poisson_group("upper"), or_group_poisson
    ),
    Formula(
        "poisson group lower", "poisson", "lower", gen_poisson_group("lower"), or_group_poisson
    ),
    Formula(
        "poisson group certified",
        "poisson",
        "certified",
        gen_poisson_inverse("certified", group=3),
        inverse_oracle(
            lambda c, x: 3 * osd.amp(c["q"], x),
            lambda c: oracle.amplification_inverse(c["q"], mpf(c["target"]) / 3),
        ),
    ),
    # srswr
    Formula(
        "srswr.upper_epsilon",
        "srswr",
        "upper",
        gen_srswr("upper"),
        lambda c, v: srswr_exact_upper(c, c["eps"]),
        loose=srswr_loose,
        note=RELAX_NOTE,
    ),
    Formula(
        "srswr.lower_epsilon",
        "srswr",
        "lower",
        gen_srswr("lower"),
        lambda c, v: srswr_v(c, c["eps"]),
    ),
    Formula(
        "srswr certified",
        "srswr",
        "certified",
        gen_srswr_inverse("certified"),
        inverse_oracle(lambda c, x: srswr_exact_upper(c, x)),
        loose=lambda c: srswr_v(c, c["value"]) > mpf(c["value"]) * (1 - mp.mpf(10) ** -9),
        note=RELAX_NOTE,
        max_points=120,
    ),
    Formula(
        "srswr impossible_above",
        "srswr",
        "impossible",
        gen_srswr_inverse("impossible"),
        inverse_oracle(lambda c, x: srswr_v(c, x)),
    ),
    # random size
    *[
        Formula(
            f"random_size.{which}_epsilon ({kind})",
            "random-size",
            which,
            gen_random_size(kind, which),
            (lambda c, v: rs_upper(c, c["eps"]))
            if which == "upper"
            else (lambda c, v: rs_lower(c, c["eps"])),
            rel_tol=RS_TOL.get((kind, which), (REL_TOL, ""))[0],
            note=RS_TOL.get((kind, which), (REL_TOL, ""))[1],
            max_points=None if kind in ("binomial", "uniform", "point") else 120,
        )
        for kind in ("binomial", "uniform", "poisson", "normal", "point", "pmf")
        for which in ("upper", "lower")
    ],
    Formula(
        "random-size certified (root-finder)",
        "random-size",
        "certified",
        gen_random_size_inverse("certified"),
        inverse_oracle(lambda c, x: rs_analysed(c, x, rs_upper)),
        max_points=150,
    ),
    Formula(
        "random-size impossible_above (root-finder)",
        "random-size",
        "impossible",
        gen_random_size_inverse("impossible"),
        inverse_oracle(lambda c, x: rs_analysed(c, x, rs_lower)),
        max_points=150,
    ),
    # data-dependent size
    Formula(
        "data_dependent_size.upper_epsilon",
        "data-dependent-size",
        "upper",
        gen_dds("upper"),
        lambda c, v: or_dds_upper(c, c["eps"]),
    ),
    Formula(
        "data_dependent_size.lower_epsilon",
        "data-dependent-size",
        "lower",
        gen_dds("lower"),
        lambda c, v: or_dds_lower(c, c["eps"]),
    ),
    Formula(
        "data-dependent-size certified (root-finder)",
        "data-dependent-size",
        "certified",
        gen_dds_inverse("certified"),
        inverse_oracle(lambda c, x: or_dds_upper(c, x)),
    ),
    Formula(
        "data-dependent-size impossible_above",
        "data-dependent-size",
        "impossible",
        gen_dds_inverse("impossible"),
        inverse_oracle(lambda c, x: or_dds_lower(c, x)),
    ),
    # allocation test
    Formula(
        "allocation_test lower (Proposition 4.1 LP)",
        "allocation-test",
        "lower",
        gen_allocation,
        lambda c, v: osd.allocation_point_masses(c["d"], c["eps"]),
        rel_tol=1e-3,
        loose=allocation_loose,
        note=LP_NOTE,
        max_points=200,
    ),
    # cluster family
    Formula(
        "cluster.upper_epsilon",
        "cluster",
        "upper",
        gen_cluster("upper"),
        lambda c, v: min(or_cluster("upper")(c, v), mpf(c["eps"])),
    ),
    Formula(
        "cluster.lower_epsilon", "cluster", "lower", gen_cluster("lower"), or_cluster("lower")
    ),
    Formula(
        "cluster two-stage upper",
        "cluster",
        "upper",
        gen_cluster_within("upper"),
        or_cluster_within("upper"),
    ),
    Formula(
        "cluster two-stage lower",
        "cluster",
        "lower",
        gen_cluster_within("lower"),
        or_cluster_within("lower"),
    ),
    Formula(
        "cluster two-stage, fixed size within, upper",
        "cluster",
        "upper",
        gen_cluster_srswor("upper"),
        or_cluster_srswor("upper"),
    ),
    Formula(
        "cluster two-stage, fixed size within, lower",
        "cluster",
        "lower",
        gen_cluster_srswor("lower"),
        or_cluster_srswor("lower"),
        max_points=300,
    ),
    Formula(
        "cluster certified (root-finder)",
        "cluster",
        "certified",
        gen_cluster_certified,
        inverse_oracle(or_cluster_at),
    ),
    Formula(
        "cluster largest K for a target (invert details)",
        "cluster",
        "calibrated",
        gen_max_k,
        or_max_k,
        note="integer inverse: K feasible in exact arithmetic and K + 1 not (or within 1e-12)",
    ),
    Formula(
        "systematic random upper",
        "systematic",
        "upper",
        gen_systematic("upper"),
        lambda c, v: or_sys(c, c["eps"]),
    ),
    Formula(
        "systematic random lower",
        "systematic",
        "lower",
        gen_systematic("lower"),
        lambda c, v: or_sys_lower(c, c["eps"]),
    ),
    Formula(
        "systematic certified",
        "systematic",
        "certified",
        gen_systematic("certified"),
        inverse_oracle(lambda c, x: or_sys(c, x)),
    ),
    Formula(
        "systematic fixed lower",
        "systematic",
        "lower",
        gen_systematic("lower", "fixed"),
        lambda c, v: or_sys(c, c["eps"]),
    ),
    Formula("pps lower (capped inclusion)", "pps", "lower", gen_pps, or_pps),
    Formula(
        "pps poisson-threshold upper", "pps", "upper", gen_pps_threshold("upper"), or_pps_threshold
    ),
    Formula(
        "pps poisson-threshold lower", "pps", "lower", gen_pps_threshold("lower"), or_pps_threshold
    ),
    Formula("pps_cluster lower", "pps-cluster", "lower", gen_pps_cluster, or_pps_cluster),
    Formula(
        "pps_cluster.laplace_witness (details)",
        "pps-cluster",
        "lower",
        gen_laplace_witness,
        lambda c, v: osd.laplace_witness(c["sizes"], c["eps"]),
        rel_tol=1e-9,
        loose=lambda c: c["value"] < 1e-3,
        note=(
            "a figure in details (not the reported lower bound): logsumexp differences "
            "widened by an absolute 64 ulps of ε·(largest size) + log n, so ~1e-14·size "
            "relative, and no relative accuracy for values below 1e-3"
        ),
        max_points=150,
    ),
    Formula(
        "general_lower_bound.theorem_5_3",
        "general-lower-bound",
        "lower",
        gen_theorem_5_3,
        lambda c, v: osd.theorem_5_3(c["A"], c["te"], c["eps"]),
    ),
    Formula(
        "general_lower_bound.proposition_6_1 (4)",
        "general-lower-bound",
        "lower",
        gen_prop_6_1(0),
        or_prop_6_1(0),
        loose=prop_loose(0),
        note=PROP_NOTE,
    ),
    Formula(
        "general_lower_bound.proposition_6_1 (5)",
        "general-lower-bound",
        "lower",
        gen_prop_6_1(1),
        or_prop_6_1(1),
        loose=prop_loose(1),
        note=PROP_NOTE,
    ),
    # stratified
    Formula("stratified.theorem_4_3", "stratified", "upper", gen_thm43(False), or_thm43),
    Formula(
        "stratified.theorem_4_3 (size-aware)", "stratified", "upper", gen_thm43(True), or_thm43
    ),
    Formula(
        "stratified.theorem_4_3_inverse",
        "stratified",
        "kernel",
        gen_thm43_inverse,
        or_thm43_inverse,
    ),
    Formula(
        "stratified.lower_epsilon",
        "stratified",
        "lower",
        gen_q_eps(lambda q, e: stratified.lower_epsilon(q, e)),
        or_amp,
    ),
    Formula(
        "stratified upper (every allocation, both guarantees)",
        "stratified",
        "upper",
        gen_strat_alloc("upper"),
        or_strat_alloc("upper"),
        rel_tol=1e-10,
        loose=strat_boundary,
        note="no accuracy check where r·N_h is within rounding of a rounding boundary "
        "(the float allocation is then the larger one, never the smaller); 1e-10: "
        "randomised rounding's exact value rounds outward by 16 ulps of its terms, which "
        "can cancel by a factor up to frac(rN)/r",
    ),
    Formula(
        "stratified lower (every allocation, both guarantees)",
        "stratified",
        "lower",
        gen_strat_alloc("lower"),
        or_strat_alloc("lower"),
        rel_tol=1e-10,
        loose=strat_boundary,
        note="no accuracy check where r·N_h is within rounding of a rounding boundary; "
        "1e-10 as for the upper bound (randomised rounding's outward allowance)",
    ),
    Formula(
        "stratified randomized certified",
        "stratified",
        "certified",
        gen_strat_certified,
        inverse_oracle(or_strat_at),
    ),
    # importance
    Formula(
        "importance_kernels.personalised_epsilon (linear, up)",
        "importance",
        "upper",
        gen_personalised(True, "up"),
        or_personalised,
    ),
    Formula(
        "importance_kernels.personalised_epsilon (linear, down)",
        "importance",
        "lower",
        gen_personalised(True, "down"),
        or_personalised,
    ),
    Formula(
        "importance_kernels.personalised_epsilon (constant, up)",
        "importance",
        "upper",
        gen_personalised(False, "up"),
        or_personalised,
    ),
    Formula(
        "importance_kernels.privacy_constrained_weights",
        "importance",
        "certified",
        gen_weights,
        or_weights,
        rel_tol=1e-12,
        max_points=100,
    ),
    # pws
    Formula(
        "pws_kernels.reporting_probabilities (Algorithm 3)",
        "pws",
        "calibrated",
        gen_pws,
        or_pws,
    ),
    Formula(
        "pws_kernels.L_eps_delta",
        "pws",
        "kernel",
        gen_pws_l,
        or_pws_l,
        loose=pws_l_loose,
        note="checked where L is not a cancellation of two logs 1000 times its size",
    ),
]

BY_NAME = {f.name: f for f in INVENTORY}
assert len(BY_NAME) == len(INVENTORY), "duplicate inventory names"


# --------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------


#: where a contributor reads how to add inventory entries
_GUIDE = "docs/contributing.md, step 4 (the soundness audit: four `Formula` entries)"

#: an example entry of each kind, for the failure messages ({s}: the scheme, {m}: its module)
_EXAMPLE_ENTRY = {
    "upper": 'Formula("{m}.upper_epsilon", "{s}", "upper", gen_q_eps(...), oracle_fn)',
    "lower": 'Formula("{m}.lower_epsilon", "{s}", "lower", gen_q_eps(...), oracle_fn)',
    "certified": (
        'Formula("{s} certified", "{s}", "certified", gen_{m}_inverse("certified"), '
        "inverse_oracle(exact_upper_at, exact_inverse))"
    ),
}


def _missing_entry(name: str, kind: str, what: str) -> str:
    """The failure message for a scheme whose ``kind`` of formula is not audited."""
    line = _EXAMPLE_ENTRY[kind].format(s=name, m=name.replace("-", "_"))
    return (
        f"{name}: the analysis of its SCHEME.example has {what}, which no INVENTORY entry "
        f'audits: add a Formula(kind="{kind}") for scheme "{name}" to INVENTORY in '
        f"tests/test_soundness.py, e.g.\n    {line}\n(the oracle: an exact mpmath formula "
        f"from tests/oracle*.py; the poisson entries are a model). See {_GUIDE}."
    )


def test_every_registered_scheme_is_audited() -> None:
    covered = {f.scheme for f in INVENTORY}
    missing = [name for name in schemes.names() if name not in covered]
    assert not missing, (
        f"schemes without a soundness-audit entry: {missing}. Add Formula entries for "
        "each (kinds upper, lower, certified and impossible, one per formula the scheme "
        f"evaluates) to INVENTORY in tests/test_soundness.py. See {_GUIDE}."
    )


#: what each scheme's example analysis evaluates, and the inventory kinds that audit it
_NEEDS = {"upper": ("upper",), "lower": ("lower",), "certified": ("certified",)}
#: calibrated schemes: the sanitizer is built to meet the target; their upper/lower are
#: the target itself (audited as ``calibrated``)
_CALIBRATED = {"pws", "importance"}


@pytest.mark.parametrize("name", schemes.names())
def test_each_bound_a_scheme_reports_is_audited(name: str) -> None:
    scheme = schemes.get(name)
    kinds = {f.kind for f in INVENTORY if f.scheme == name}
    if name in _CALIBRATED or scheme.mechanism_form != "epsilon" or not scheme.example:
        assert kinds, (
            f"{name}: no INVENTORY entry in tests/test_soundness.py audits this scheme "
            '(a calibrated scheme is audited as Formula(kind="calibrated"), see the pws '
            f"entries). See {_GUIDE}."
        )
        return
    d = design({"scheme": name, **scheme.example}, "add-remove")
    a = engine.analyse(d)
    if a.upper is not None:
        assert "upper" in kinds, _missing_entry(name, "upper", "an upper bound")
        assert "certified" in kinds, _missing_entry(
            name, "certified", "an upper bound, so `invert` certifies an ε from it"
        )
    if a.lower is not None:
        assert "lower" in kinds, _missing_entry(name, "lower", "a lower bound")


@pytest.mark.parametrize("name", [f.name for f in INVENTORY])
def test_formula_sound_and_accurate(name: str) -> None:
    check(BY_NAME[name], FAST_POINTS, fast=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", [f.name for f in INVENTORY])
def test_formula_sound_and_accurate_full(name: str) -> None:
    check(BY_NAME[name], SLOW_POINTS)


# --------------------------------------------------------------------------------------
# Regressions: points where the audit found a bound on the wrong side or far off
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frac", "k", "eps"),
    [
        (8.189098647209434e-10, 1100322, 1.578959504366667e-05),  # upper was 1 ulp low
        (8.354528058382854e-11, 58781, 0.00034829887098166833),  # lower was 1 ulp high
    ],
)
def test_ratio_bounds_cover_the_rounding_of_k_times_eps(frac: float, k: int, eps: float) -> None:
    # K·ε ≈ 17 is rounded once; e^{−Kε} then carries ~2e-15 relative error, more than
    # the 8 ulps of outward rounding when the e^{−Kε} term dominates A
    with mp.workdps(DPS):
        exact = osd.ratio(frac, k, eps)
        assert mpf(_cluster_kernels.ratio_upper(frac, k, eps)) >= exact
        assert mpf(_cluster_kernels.ratio_lower(frac, k, eps)) <= exact


@pytest.mark.parametrize(
    ("args", "which"),
    [
        (
            (
                0.1602370940453558,
                0.8464803306906993,
                0.8214833572780383,
                0.06369187325396412,
                0.2185164753637273,
                0.44797384771598614,
            ),
            0,
        ),
        (
            (
                3.943586107346304e-06,
                0.02273069865411246,
                0.6993611636180085,
                0.291241542911715,
                0.34412849896193654,
                0.304847822619966,
            ),
            1,
        ),
        (
            (
                1.2094549131800742e-06,
                0.003949871763987125,
                0.5788158527395156,
                0.10545745368916393,
                4.920809284187537e-05,
                0.4927327387666752,
            ),
            0,
        ),
    ],
)
def test_proposition_6_1_is_rounded_down_also_when_small_or_negative(
    args: tuple[float, ...], which: int
) -> None:
    # a small log(ratio) has an absolute error of a few 1e-16 (many ulps of it), and a
    # negative value used to be left unrounded
    value = general_lower_bound.proposition_6_1(*args)[which]
    with mp.workdps(DPS):
        assert mpf(value) <= osd.proposition_6_1(*args)[which]


@pytest.mark.parametrize("neighbours", ["both", "add-remove"])
def test_systematic_lower_bound_respects_theorem_3_1(neighbours: str) -> None:
    # N = 3, k = 2 over a random order is a random-size SRSWOR (1 or 2 records, 1/2 each):
    # with M's add-remove ε known, Theorem 3.1 bounds it by 0.6889 (both, ε = 1), below
    # the A(2/3, ε) = 0.7634 once reported as a tight lower bound (an exact LP over a
    # 3-value universe gives 0.6201 = A(1/2, 1), the single-inclusion witness)
    sys_design = design(
        {"scheme": "systematic", "population": 3, "interval": 2, "order": "random"}, neighbours
    )
    size_design = design(
        {
            "scheme": "random-size",
            "population": 3,
            "size": {"distribution": "pmf", "values": [1, 2], "probabilities": [0.5, 0.5]},
        },
        neighbours,
    )
    eps = np.geomspace(1e-6, 50, 40)
    low = engine.analyse(sys_design).lower(eps)
    assert np.all(low <= engine.analyse(size_design).upper(eps))
    if neighbours == "both":
        assert float(engine.analyse(sys_design).lower(np.array([1.0]))[0]) == pytest.approx(
            float(oracle.amplification(0.5, 1.0)), rel=1e-14
        )


def test_random_size_normal_lower_bound_when_the_mass_sits_at_n() -> None:
    # c = μ + εσ² = 883 far above N = 16: N − E is carried by terms 257 nats below the
    # mode, whose exponents (differences of squares ~7.5e5) err by far more than the few
    # ulps allowed for terms within 50 nats; the lower bound came out 3.7e-13 high
    c = {"kind": "normal", "ratio": 2, "N": 16, "mu": 8.768565677788427}
    c.update(sd=1.8358986761442546)
    eps = np.array([259.4393157073026])
    value = random_size.lower_epsilon(eps, 2 * eps, params=rs_params(c))[0]
    with mp.workdps(DPS):
        assert mpf(value) <= rs_lower(c, eps[0])


def test_group_log_mgf_is_relatively_accurate_when_tiny() -> None:
    # g = 12 of N = 1e12, m = 73, ε = 0.1: V = 9.21e-11 with k_max·ε = 1.2; the logsumexp
    # difference used above k·ε = 1 had an absolute error ~4e-14 (upper 4e-4 high)
    c = {"N": 10**12, "g": 12, "m": 73}
    a = srswor.analyse(srswor.Params(population=10**12, sample=73), mech(group=12), REPLACE_ONE)
    up, low = float(a.upper(np.array([0.1]))[0]), float(a.lower(np.array([0.1]))[0])
    with mp.workdps(DPS):
        exact = hyp_v(c, 0.1)
        assert mpf(low) <= exact <= mpf(up)
        assert (mpf(up) - mpf(low)) / exact < 3e-10


def test_group_log_mgf_is_relatively_accurate_over_a_large_support() -> None:
    # g = m = 10⁵ of N = 10¹², ε = 0.01: V = 1.005e-4 with k_max·ε = 1000; the logsumexp
    # difference with its absolute slack 8·(terms + 8) ulps put the upper bound 1.8e-6 high
    c = {"N": 10**12, "g": 10**5, "m": 10**5}
    p = srswor.Params(population=10**12, sample=10**5)
    a = srswor.analyse(p, mech(group=10**5), REPLACE_ONE)
    up, low = float(a.upper(np.array([0.01]))[0]), float(a.lower(np.array([0.01]))[0])
    with mp.workdps(DPS):
        exact = hyp_v_truncated(c, 0.01)
        assert mpf(low) <= exact <= mpf(up)
        assert (mpf(up) - exact) / exact < 3e-10


@pytest.mark.parametrize(
    "dist",
    [
        random_size.SizeDistribution(kind="binomial", p=1.0),
        random_size.SizeDistribution(kind="uniform", low=1, high=1),
    ],
)
def test_random_size_lower_bound_when_the_whole_population_is_sampled(dist) -> None:
    # m = N surely: the lower bound is ε_R itself; it used to stop at −log(2 ulps) ≈ 36
    # (binomial p = 1) or go through log(0) − inf·0 = nan (uniform on {N})
    params = random_size.Params(population=1, size=dist)
    eps = np.array([1.0, 50.0, 700.0])
    with np.errstate(all="raise"):
        low = random_size.lower_epsilon(eps, eps, params=params)
    assert np.all(low <= eps)
    assert np.all(low >= eps * (1 - 1e-14))


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def report(points: int, out: Path | None, formulas: list[Formula] | None = None) -> int:
    rows = []
    failed = 0
    for f in INVENTORY if formulas is None else formulas:
        r = audit(f, points)
        failed += bool(r.violations)
        rows.append(
            {
                "formula": f.name,
                "scheme": f.scheme,
                "kind": f.kind,
                "points": r.points,
                "worst_relative_error": r.worst_rel,
                "tolerance": f.rel_tol,
                "violations": len(r.violations),
                "first_violation": r.violations[0] if r.violations else None,
                "seconds": round(r.seconds, 3),
                "worst_at": {k: v for k, v in (r.worst_case or {}).items() if k != "qs"},
                "note": f.note,
            }
        )
        print(
            f"{f.name:58s} {f.kind:10s} {r.points:6d}  worst rel {r.worst_rel:9.2e}  "
            f"viol {len(r.violations):4d}  {r.seconds:6.2f}s",
            flush=True,
        )
        if r.violations:
            print("    " + r.violations[0][:400])
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"dps": DPS, "formulas": rows}, indent=1, default=str) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    if "--report" not in sys.argv:
        print(
            "usage: python tests/test_soundness.py --report [--points N] [--no-write] "
            "[--json PATH] [--shard I/N]"
        )
        raise SystemExit(2)

    def _arg(name: str) -> str | None:
        return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None

    n_points = int(_arg("--points") or SLOW_POINTS)
    chosen = INVENTORY
    if _arg("--shard"):  # formulas i, i + n, ... (to spread a full run over processes)
        i, n = (int(x) for x in str(_arg("--shard")).split("/"))
        chosen = INVENTORY[i::n]
    target = Path(_arg("--json") or Path(__file__).parent.parent / "benchmarks" / "soundness.json")
    raise SystemExit(report(n_points, None if "--no-write" in sys.argv else target, chosen))
