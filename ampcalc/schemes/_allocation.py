"""Allocation arithmetic for stratified designs (no privacy maths here).

Neyman allocation with capping and largest-remainder apportionment, the exact
one-record update of a stratum's size, mean and standard deviation, deterministic
proportional rounding, and the Pareto front used to take a maximum over strata of
a bound that increases in two per-stratum parameters.

Basis: Bun et al., §7.2 and Appendix E.1 (Neyman allocation, the
worst neighbour); spec ``bun-drechsler-hu-formulas.md`` §8.3 (the apportionment is
unspecified in the paper: the rule used here is documented in ``neyman``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


def neyman(size: np.ndarray, sd: np.ndarray, total: int) -> np.ndarray:
    """Neyman allocation m_h ∝ N_h·S_h of ``total`` sample records, capped at m_h <= N_h.

    Procedure (Bun et al., §7.2 gives the proportionality only):
      1. shares m·N_h·S_h / Σ N_j·S_j over the strata not yet capped; every stratum
         whose share exceeds N_h takes its whole stratum (m_h = N_h, a census) and the
         remaining total is shared again among the rest, until no share exceeds N_h;
      2. largest remainder (Hamilton) apportionment: each stratum gets ⌊share⌋, and the
         records still missing go one each to the largest fractional parts (ties to the
         earlier stratum), never beyond N_h.
    If every remaining stratum has S_h = 0, the rest is shared in proportion to N_h.

    Args:
        size: N_h (integers >= 0). sd: S_h >= 0. total: m, 0 <= m <= Σ N_h.
    Returns:
        integer allocation (int64) summing to ``total``.
    """
    n = np.asarray(size, dtype=np.int64)
    s = np.asarray(sd, dtype=float)
    k = n.size
    capped = np.zeros(k, dtype=bool)
    share = np.zeros(k, dtype=float)
    for _ in range(k + 1):
        rest = total - int(n[capped].sum())
        free = ~capped
        w = n[free] * s[free]
        if w.sum() <= 0:
            w = n[free].astype(float)
        tot = w.sum()
        share = np.zeros(k, dtype=float)
        share[capped] = n[capped]
        if tot > 0:
            share[free] = rest * w / tot
        over = free & (share > n)
        if not over.any():
            break
        capped |= over
    base = np.minimum(np.floor(share).astype(np.int64), n)
    missing = total - int(base.sum())
    if missing > 0:
        frac = share - base
        frac[base >= n] = -1.0
        order = np.lexsort((np.arange(k), -frac))
        give = order[:missing]
        base[give] += 1
    return base


@dataclass(frozen=True, slots=True)
class StratumStats:
    """A stratum's size, mean and standard deviation S (divisor N − 1)."""

    size: int
    mean: float
    sd: float


def remove_record(stats: StratumStats, value: float) -> StratumStats:
    """The stratum after removing one record of ``value`` (exact one-record update).

    Sum of squares SS = (N − 1)S²; removing x: μ′ = (Nμ − x)/(N − 1),
    SS′ = SS − (x − μ)(x − μ′), S′² = SS′/(N − 2). A stratum left with fewer than
    two records has S′ = 0.
    """
    n = stats.size
    if n <= 1:
        return StratumStats(0, 0.0, 0.0)
    mu2 = (n * stats.mean - value) / (n - 1)
    ss = (n - 1) * stats.sd**2 - (value - stats.mean) * (value - mu2)
    sd2 = float(np.sqrt(max(ss, 0.0) / (n - 2))) if n - 1 >= 2 else 0.0
    return StratumStats(n - 1, mu2, sd2)


def add_record(stats: StratumStats, value: float) -> StratumStats:
    """The stratum after adding one record of ``value``: μ′ = (Nμ + x)/(N + 1),
    SS′ = SS + (x − μ)(x − μ′), S′² = SS′/N."""
    n = stats.size
    mu2 = (n * stats.mean + value) / (n + 1)
    ss = max(n - 1, 0) * stats.sd**2 + (value - stats.mean) * (value - mu2)
    return StratumStats(n + 1, mu2, float(np.sqrt(max(ss, 0.0) / n)) if n >= 1 else 0.0)


def round_proportional(rate: np.ndarray, size: np.ndarray, rule: str) -> np.ndarray:
    """Deterministic r·N_h rounded by ``rule``: ``nearest`` = round half up ⌊rN + ½⌋
    (spec §11 item 12: not Python's banker's rounding), ``floor`` = ⌊rN⌋."""
    x = np.asarray(rate, dtype=float) * np.asarray(size, dtype=float)
    rounded: np.ndarray = np.floor(x + 0.5) if rule == "nearest" else np.floor(x)
    return rounded.astype(np.int64)


@dataclass(frozen=True, slots=True)
class RoundedSteps:
    """Deterministic allocations of every stratum at N_h − 1, N_h and N_h + 1.

    A neighbour of the stated population (one record added to or removed from a
    stratum, or moved between strata) changes the sizes of at most two strata by one
    each; an allocation that depends only on the stratum sizes moves only there.
    """

    removed: np.ndarray  # f(N_h − 1): a record of stratum h removed
    at: np.ndarray  # f(N_h): the stated sizes
    added: np.ndarray  # f(N_h + 1): a record added to stratum h

    @property
    def down(self) -> np.ndarray:
        """Δ of removing one record of stratum h: f(N_h) − f(N_h − 1)."""
        out: np.ndarray = self.at - self.removed
        return out

    @property
    def up(self) -> np.ndarray:
        """Δ of adding one record to stratum h: f(N_h + 1) − f(N_h)."""
        out: np.ndarray = self.added - self.at
        return out


def proportional_steps(rate: np.ndarray, size: np.ndarray, rule: str) -> RoundedSteps:
    """``round_proportional`` at N_h − 1 (never below 0), N_h and N_h + 1."""
    n = np.asarray(size, dtype=np.int64)
    return RoundedSteps(
        removed=round_proportional(rate, np.maximum(n - 1, 0), rule),
        at=round_proportional(rate, n, rule),
        added=round_proportional(rate, n + 1, rule),
    )


def pareto_front(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (a, b) not dominated by another pair (both coordinates >=).

    A bound increasing in a and in b takes its maximum over all pairs on this front,
    which is usually a handful of points even for 10⁵ strata.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    order = np.lexsort((-b, -a))
    a_s, b_s = a[order], b[order]
    run = np.maximum.accumulate(b_s)
    keep = np.ones(a_s.size, dtype=bool)
    keep[1:] = b_s[1:] > run[:-1]
    return a_s[keep], b_s[keep]


# --- per-stratum rows of results (the stratified family's details) ------------------------


def _rows(
    p: Any,
    rate: np.ndarray,
    sample: np.ndarray,
    key: str,
    names: tuple[str, str],
    first: list[Any],
    second: list[Any],
) -> list[dict[str, Any]]:
    """One dict per stratum: name, size, rate, sample and ``key: {names: values}``."""
    k = len(p.strata)
    known = p.strata.sizes_known
    return [
        {"name": name, "size": size, "rate": r, "sample": m, key: {names[0]: a, names[1]: b}}
        for name, size, r, m, a, b in zip(
            p.strata.names,
            p.strata.size.tolist() if known else [None] * k,
            np.asarray(rate, dtype=float).tolist() if known else [None] * k,
            np.asarray(sample).tolist(),
            first,
            second,
            strict=True,
        )
    ]


def strata_rows(
    p: Any, rate: np.ndarray, sample: np.ndarray, lower: Any, upper: Any
) -> list[dict[str, Any]]:
    k = len(p.strata)
    lo = [None] * k if lower is None else np.asarray(lower, dtype=float).tolist()
    up = [None] * k if upper is None else np.asarray(upper, dtype=float).tolist()
    return _rows(p, rate, sample, "epsilon_prime", ("lower", "upper"), lo, up)


def invert_rows(
    p: Any, rate: np.ndarray, sample: np.ndarray, certified: Any, impossible: Any
) -> list[dict[str, Any]]:
    k = len(p.strata)

    def clean(v: Any) -> list[Any]:
        if v is None:
            return [None] * k
        arr = np.broadcast_to(np.asarray(v, dtype=float), (k,))
        return [x if math.isfinite(x) else None for x in arr.tolist()]

    names = ("certified", "impossible_above")
    return _rows(p, rate, sample, "epsilon", names, clean(certified), clean(impossible))
