"""Proportional allocation of a fixed total sample: apportionment and its sensitivity.

A design fixes the total sample size n and gives stratum h the share n·N_h/N, made an
integer by a deterministic rule (001_4ef689e3bef19c3a.txt §3, §3.1):

  - ``nearest``: ⌊n·N_h/N + ½⌋ (round half up, spec §11 item 12); the total can drift;
  - ``floor``: ⌊n·N_h/N⌋; the total can fall short;
  - ``largest-remainder`` (Hamilton): ⌊n·N_h/N⌋, then the records still missing one each
    to the largest remainders, ties to the earlier stratum; the total is exactly n;
  - ``huntington-hill``: every non-empty stratum gets one record, the others go one at a
    time to the largest priority N_h/√(s(s + 1)) (s = the records it has), ties to the
    earlier stratum (the US House apportionment); the total is exactly n.

All arithmetic is exact (Python integers and fractions). The allocation is a function of
every stratum's size, so it is data-dependent: one record added, removed or moved
between strata can change several strata's allocations at once (001 Lemma 3.1: the
lower bound GS_f·ε; its upper-bound half does not hold, spec §4.1).

The allocation is what the rule gives; a stratum is sampled whole when its allocation
exceeds its size (the sample drawn from stratum h has min(m_h, N_h) records), and the
privacy witness sees the drawn sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import numeric
from ..errors import ConditionError
from ..model import Mechanism, Neighbours
from ..papers import BUN_2020_WP, BUN_2022, cite
from .base import Analysis

RULES = ("nearest", "floor", "largest-remainder", "huntington-hill")
"""Deterministic apportionment rules for a fixed total (``rounding:``)."""

BASIS = (
    cite(BUN_2020_WP, "§3"),
    cite(BUN_2020_WP, "Lemma 3.1"),
    cite(BUN_2020_WP, "§3.1"),
    cite(BUN_2022, "§4.1"),
)


def apportion(size: Sequence[int], total: int, rule: str) -> list[int]:
    """The allocation m_h of ``total`` records over strata of sizes ``size`` by ``rule``.

    Exact integer arithmetic throughout. Strata of size 0 get 0 (every rule). For
    ``huntington-hill`` every non-empty stratum gets at least one record, so the total
    must be at least their number (``ConditionError`` otherwise).
    """
    sizes = [int(x) for x in size]
    n = int(total)
    pop = sum(sizes)
    if pop <= 0:
        return [0] * len(sizes)
    if rule == "nearest":  # ⌊n·N_h/N + 1/2⌋ = ⌊(2n·N_h + N) / 2N⌋
        return [(2 * n * s + pop) // (2 * pop) for s in sizes]
    if rule == "floor":
        return [n * s // pop for s in sizes]
    if rule == "largest-remainder":
        base = [n * s // pop for s in sizes]
        rem = [n * s % pop for s in sizes]
        missing = n - sum(base)
        order = sorted(range(len(sizes)), key=lambda h: (-rem[h], h))
        for h in order[:missing]:
            base[h] += 1
        return base
    if rule == "huntington-hill":
        return _huntington_hill(sizes, n)
    raise ValueError(f"unknown apportionment rule {rule!r}")


def _priority(size: int, seats: int) -> Fraction:
    """Squared Huntington–Hill priority of a stratum's next record: N²/(s(s + 1))."""
    return Fraction(size * size, seats * (seats + 1))


def _huntington_hill(sizes: list[int], n: int) -> list[int]:
    """Huntington–Hill: the records after the first of each stratum are the n − k
    highest-ranked pairs (h, s), s >= 1, ranked by N_h/√(s(s + 1)) and then by h.

    Computed from a proportional first guess and repaired by exchanges: an allocation is
    the Huntington–Hill one exactly when every held pair ranks above every unheld pair
    (the sequential method's result for any n), so moving a record from the stratum with
    the worst held pair to the one with the best unheld pair while they are out of order
    ends there (each exchange moves a record to a strictly better-ranked pair).
    """
    k_nonempty = sum(1 for s in sizes if s > 0)
    if n < k_nonempty:
        raise ConditionError(
            f"Huntington–Hill gives every non-empty stratum at least one record: the total "
            f"{n} is below the number of non-empty strata ({k_nonempty})"
        )
    pop = sum(sizes)
    seats = [0] * len(sizes)
    for h, s in enumerate(sizes):
        if s > 0:
            seats[h] = max(1, n * s // pop)
    # trim or top up to n along the ranking, then exchange until in order
    while sum(seats) > n:
        drop = _worst_held(sizes, seats)
        assert drop is not None
        seats[drop] -= 1
    while sum(seats) < n:
        seats[_best_unheld(sizes, seats)] += 1
    while True:
        lo = _worst_held(sizes, seats)
        hi = _best_unheld(sizes, seats)
        if lo is None or lo == hi:
            return seats
        key_lo = (-_priority(sizes[lo], seats[lo] - 1), lo)
        key_hi = (-_priority(sizes[hi], seats[hi]), hi)
        if key_hi >= key_lo:  # the best unheld pair ranks below the worst held: done
            return seats
        seats[lo] -= 1
        seats[hi] += 1


def _best_unheld(sizes: list[int], seats: list[int]) -> int:
    """The stratum whose next record ranks highest (largest priority, then earliest)."""
    best = -1
    best_key: tuple[Fraction, int] | None = None
    for h, s in enumerate(sizes):
        if s <= 0:
            continue
        key = (-_priority(s, seats[h]), h)
        if best_key is None or key < best_key:
            best, best_key = h, key
    return best


def _worst_held(sizes: list[int], seats: list[int]) -> int | None:
    """The stratum holding the lowest-ranked record beyond its first (None if none)."""
    worst: int | None = None
    worst_key: tuple[Fraction, int] | None = None
    for h, s in enumerate(sizes):
        if s <= 0 or seats[h] < 2:
            continue
        key = (-_priority(s, seats[h] - 1), h)
        if worst_key is None or key > worst_key:
            worst, worst_key = h, key
    return worst


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One neighbour of the stated strata and its allocation.

    ``kind`` is ``add`` (a record added to stratum ``to``), ``remove`` (a record of
    stratum ``source`` removed) or ``move`` (a record moved from ``source`` to ``to``: a
    replacement that changes its stratum).
    """

    kind: str
    source: int | None
    to: int | None
    sizes: tuple[int, ...]
    allocation: tuple[int, ...]
    drawn: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Sensitivity:
    """How far the allocation moves between the stated strata and their neighbours.

    ``l1``/``linf``: of the drawn sizes min(m_h, N_h) (what a mechanism sees), maximised
    over the neighbours of each kind; ``gs_add``: 001's GS_f at the stated P,
    max_x ‖f(P) − f(P ∪ {x})‖₁ of the allocation itself.
    """

    stated: tuple[int, ...]
    drawn: tuple[int, ...]
    neighbours: tuple[Neighbour, ...]

    def of_kind(self, kinds: Sequence[str]) -> list[Neighbour]:
        return [nb for nb in self.neighbours if nb.kind in kinds]

    def l1(self, nb: Neighbour) -> int:
        return sum(abs(a - b) for a, b in zip(nb.drawn, self.drawn, strict=True))

    def linf(self, nb: Neighbour) -> int:
        return max((abs(a - b) for a, b in zip(nb.drawn, self.drawn, strict=True)), default=0)

    def gs(self, nb: Neighbour) -> int:
        """‖f(P′) − f(P)‖₁ of the allocation (not capped at the stratum sizes)."""
        return sum(abs(a - b) for a, b in zip(nb.allocation, self.stated, strict=True))

    def worst(self, kinds: Sequence[str], measure: str) -> tuple[int, Neighbour | None]:
        """The largest ``measure`` (``l1``, ``linf`` or ``gs``) over neighbours of ``kinds``
        and the first neighbour attaining it."""
        best, arg = 0, None
        for nb in self.of_kind(kinds):
            v = getattr(self, measure)(nb)
            if v > best:
                best, arg = v, nb
        return best, arg


def _drawn(sizes: Sequence[int], alloc: Sequence[int]) -> tuple[int, ...]:
    return tuple(min(int(m), int(s)) for m, s in zip(alloc, sizes, strict=True))


def sensitivity(size: Sequence[int], total: int, rule: str) -> Sensitivity:
    """The allocation at the stated sizes and at every neighbour's sizes.

    Neighbours: a record added to any stratum, one removed from any stratum (while the
    population stays non-empty), and one moved from stratum s to t != s. A replacement
    inside a stratum keeps every size, so it keeps the allocation.
    """
    sizes = tuple(int(x) for x in size)
    k = len(sizes)
    stated = tuple(apportion(sizes, total, rule))
    out: list[Neighbour] = []

    def add(kind: str, source: int | None, to: int | None) -> None:
        new = list(sizes)
        if source is not None:
            new[source] -= 1
        if to is not None:
            new[to] += 1
        if sum(new) <= 0:
            return
        try:
            m = tuple(apportion(new, total, rule))
        except ConditionError:  # Huntington–Hill: more non-empty strata than records
            return
        out.append(Neighbour(kind, source, to, tuple(new), m, _drawn(new, m)))

    for h in range(k):
        add("add", None, h)
    for h in range(k):
        add("remove", h, None)
    for s in range(k):
        for t in range(k):
            if s != t:
                add("move", s, t)
    return Sensitivity(stated=stated, drawn=_drawn(sizes, stated), neighbours=tuple(out))


def describe(nb: Neighbour | None, names: Sequence[str]) -> str | None:
    if nb is None:
        return None
    if nb.kind == "add":
        assert nb.to is not None
        return f"a record added to stratum {names[nb.to]!r}"
    if nb.kind == "remove":
        assert nb.source is not None
        return f"a record removed from stratum {names[nb.source]!r}"
    assert nb.source is not None and nb.to is not None
    return f"a record moved from stratum {names[nb.source]!r} to {names[nb.to]!r}"


def _count_witness(linf: int, l1: int, ed: np.ndarray, er: np.ndarray) -> np.ndarray:
    """Loss of the count witness on a pair whose drawn sizes differ by (Δ∞, Δ₁).

    One stratum's sample count + Lap(1/c) is c-DP under add-remove and under replace-one,
    so c = min(ε_D, ε_R) is allowed and it loses Δ∞·c; every stratum's count + Lap(1/c)
    is c-DP add-remove and 2c-DP replace-one, so c = min(ε_D, ε_R/2), loss Δ₁·c
    (000_97a39a4c524f603f.txt §4.1, 001_4ef689e3bef19c3a.txt Lemma 3.1).
    """
    one = linf * np.minimum(ed, er)
    every = l1 * np.minimum(ed, er / 2.0)
    out: np.ndarray = np.maximum(one, every)
    return out


def analyse_fixed_total(p: Any, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Lower bound (no upper bound) for proportional allocation of a fixed total.

    ``p`` is the stratified ``Params`` (``total_sample`` and ``rounding`` set).
    """
    from . import stratified as st

    assert p.total_sample is not None and p.rounding is not None
    strata = p.strata
    names = strata.names
    n_total = int(p.total_sample)
    sens = sensitivity(strata.size.tolist(), n_total, p.rounding)
    replace = guarantee is Neighbours.REPLACE_ONE
    e_d_known = mechanism.epsilon_add_remove_known()
    eps_r = mechanism.epsilon_replace_one_of
    if not e_d_known and not replace:
        raise ConditionError(
            "a fixed-total allocation with an add-remove guarantee needs M's add-remove ε; "
            "`neighbours: replace-one` leaves it unknown. Use `guarantee: replace-one`."
        )
    ar_kinds = ("add", "remove")
    mv_kinds = ("move",)
    ar_l1, ar_l1_nb = sens.worst(ar_kinds, "l1")
    ar_linf, _ = sens.worst(ar_kinds, "linf")
    mv_l1, mv_l1_nb = sens.worst(mv_kinds, "l1")
    mv_linf, _ = sens.worst(mv_kinds, "linf")

    def lower_replace(e: np.ndarray) -> np.ndarray:
        er = eps_r(e)
        ed = e if e_d_known else np.full(e.shape, np.inf)
        return _count_witness(mv_linf, mv_l1, ed, er)

    def lower(eps: np.ndarray) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        if replace:
            return numeric.round_down(lower_replace(e))
        er = eps_r(e)
        # add/remove pairs directly; a move is a replacement, which an add-remove
        # guarantee ε′ covers with 2ε′, so ε′ >= half its loss
        direct = _count_witness(ar_linf, ar_l1, e, er)
        return numeric.round_down(np.maximum(direct, lower_replace(e) / 2.0))

    def impossible_above(target: np.ndarray) -> np.ndarray:
        t = np.asarray(target, dtype=float)
        slope = float(lower(np.asarray(1.0)))  # the lower bound is linear in ε
        if slope <= 0:
            return np.full(t.shape, np.inf)
        return numeric.certify_up(lower, numeric.round_up(t / slope), t)

    size = strata.size
    m0 = np.asarray(sens.drawn, dtype=float)

    def invert_details(target: np.ndarray) -> dict[str, Any]:
        t = np.asarray(target, dtype=float)
        if t.ndim:
            return {}
        imp = impossible_above(t)
        return {"strata": st._invert_rows(p, m0 / np.maximum(size, 1), m0, None, imp)}

    eps0 = float(mechanism.epsilon)
    lo0 = float(lower(np.asarray(eps0)))
    rows = st._strata_rows(p, m0 / np.maximum(size, 1), m0, np.full(len(strata), np.nan), None)
    for row in rows:
        row["epsilon_prime"]["lower"] = None
    gs_add, gs_nb = sens.worst(("add",), "gs")
    gs_all, gs_all_nb = sens.worst(("add", "remove", "move"), "gs")
    pop = int(size.sum())
    rule = p.rounding
    witness_nb = mv_l1_nb if replace else (ar_l1_nb if ar_l1 >= mv_l1 / 2 else mv_l1_nb)
    warnings: list[str] = []
    if max(ar_l1, mv_l1) > 0:
        warnings.append(
            "degradation: no amplification guarantee exists. A proportional allocation of a "
            f"fixed total with `rounding: {rule}` is a deterministic function of the stratum "
            f"sizes; at these sizes {describe(witness_nb, names)} changes the drawn sample "
            f"sizes by Δ₁ = {sens.l1(witness_nb) if witness_nb else 0}, so a "
            "mechanism releasing the sample counts with Laplace noise loses at least Δ·ε "
            "(001_4ef689e3bef19c3a.txt Lemma 3.1, 000_97a39a4c524f603f.txt §4.1)."
        )
    else:
        warnings.append(
            "no neighbour of these stratum sizes moves the allocation, so the count witness "
            "gives no lower bound here; the allocation still depends on the data, and no "
            "upper bound is known for it (001_4ef689e3bef19c3a.txt Lemma 3.1's upper half "
            "does not hold, spec §4.1)"
        )
    if not replace and mv_l1 > 0:
        warnings.append(
            "a record moved across strata is a replacement; under an add-remove guarantee ε′ "
            "its loss is at most 2ε′, so ε′ >= half the replace-one lower bound"
        )
    over = [
        names[h] for h, (m, s) in enumerate(zip(sens.stated, size.tolist(), strict=True)) if m > s
    ]
    if over:
        warnings.append(
            f"total_sample {n_total} gives stratum {over[0]!r}"
            + (f" (and {len(over) - 1} more)" if len(over) > 1 else "")
            + " more records than it has: it is sampled whole (min(m_h, N_h) records); "
            "the sensitivity of the allocation itself (`apportionment_sensitivity`) counts "
            "the apportioned sizes"
        )
    if rule == "huntington-hill" and gs_all > 2:
        warnings.append(
            f"001_4ef689e3bef19c3a.txt §3.1 says Huntington–Hill has global sensitivity at most "
            f"2 'under some mild assumptions'; at these sizes {describe(gs_all_nb, names)} "
            f"moves it by {gs_all} (the assumptions are not stated; docs/stratified.md)"
        )
    details: dict[str, Any] = {
        "allocation": "proportional",
        "rounding": rule,
        "total_sample": n_total,
        "population": pop,
        "allocations": list(sens.stated),
        "allocation_sum": int(sum(sens.stated)),
        "drawn": list(sens.drawn),
        "apportionment_sensitivity": {
            "add": gs_add,
            "add_witness": describe(gs_nb, names),
            "any": gs_all,
            "any_witness": describe(gs_all_nb, names),
        },
        "allocation_sensitivity": {
            "add_remove": {"linf": ar_linf, "l1": ar_l1, "witness": describe(ar_l1_nb, names)},
            "move": {"linf": mv_linf, "l1": mv_l1, "witness": describe(mv_l1_nb, names)},
        },
        "lower_bound": lo0,
        "strata_count": len(strata),
        "strata": rows,
    }
    return Analysis(
        guarantee_neighbours=guarantee,
        reference_epsilon=(lambda e: eps_r(e)) if replace else (lambda e: np.asarray(e, float)),
        upper=None,
        lower=lower,
        delta_prime=None,
        basis=BASIS,
        conditions=(
            f"proportional allocation of a fixed total n = {n_total} over the stratum sizes "
            f"(N = {pop}), rounding `{rule}`: deterministic and data-dependent",
            f"lower bound at ε = {eps0:g}: {lo0:.6g}",
        ),
        warnings=tuple(warnings),
        details=details,
        impossible_above=impossible_above,
        invert_details=invert_details,
    )
