"""Proportional allocation of a fixed total sample: apportionment and its sensitivity.

A design fixes the total sample size n and gives stratum h the share n·N_h/N, made an
integer by a deterministic rule (Bun et al. 2020, §3, §3.1):

  - ``nearest``: ⌊n·N_h/N + ½⌋ (round half up, spec §11 item 12); the total can drift;
  - ``floor``: ⌊n·N_h/N⌋; the total can fall short;
  - ``largest-remainder`` (Hamilton): ⌊n·N_h/N⌋, then the records still missing one each
    to the largest remainders, ties to the earlier stratum; the total is exactly n;
  - ``huntington-hill``: every non-empty stratum gets one record, the others go one at a
    time to the largest priority N_h/√(s(s + 1)) (s = the records it has), ties to the
    earlier stratum (the US House apportionment); the total is exactly n.

All arithmetic is exact (Python integers and fractions). The allocation is a function of
every stratum's size, so it is data-dependent: one record added, removed or moved
between strata can change several strata's allocations at once (Bun et al. 2020 Lemma 3.1: the
lower bound GS_f·ε; its upper-bound half does not hold, spec §4.1).

The allocation is what the rule gives; a stratum is sampled whole when its allocation
exceeds its size (the sample drawn from stratum h has min(m_h, N_h) records), and the
privacy witness sees the drawn sizes.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BUN_2020_WP, BUN_2022, DERIVATIONS, STRATIFIED_DOCS, cite
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.assembly import (
    OfPair,
    Theorem,
    assemble,
    check_refusals,
    epsilons,
)
from ampcalc.schemes.base import Analysis
from ampcalc.schemes.stratified.common import linear_lower_theorem, lower_bound_invert_rows

RULES = ("nearest", "floor", "largest-remainder", "huntington-hill")
"""Deterministic apportionment rules for a fixed total (``rounding:``)."""

BASIS = (
    cite(BUN_2020_WP, "§3"),
    cite(BUN_2020_WP, "Lemma 3.1"),
    cite(BUN_2020_WP, "§3.1"),
    cite(BUN_2022, "§4.1"),
)


def apportion(
    size: Sequence[int], total: int, rule: str, start: Sequence[int] | None = None
) -> list[int]:
    """The allocation m_h of ``total`` records over strata of sizes ``size`` by ``rule``.

    Exact integer arithmetic throughout. Strata of size 0 get 0 (every rule). For
    ``huntington-hill`` every non-empty stratum gets at least one record, so the total
    must be at least their number (``ConditionError`` otherwise); ``start`` is a first
    guess (e.g. a neighbour's allocation), which changes the work, not the result.
    """
    sizes = [int(x) for x in size]
    n = int(total)
    pop = sum(sizes)
    if pop <= 0:
        return [0] * len(sizes)
    if rule != "huntington-hill" and 2 * n * max(sizes) + pop < 2**62:
        return _apportion_int64(np.array(sizes, dtype=np.int64), n, pop, rule)
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
        return _huntington_hill(sizes, n, start)
    raise ValueError(f"unknown apportionment rule {rule!r}")


def _apportion_int64(sizes: np.ndarray, n: int, pop: int, rule: str) -> list[int]:
    """``apportion`` for nearest/floor/largest-remainder in int64 (exact: every product
    is below 2^62)."""
    if rule == "nearest":
        out: list[int] = ((2 * n * sizes + pop) // (2 * pop)).tolist()
        return out
    base = n * sizes // pop
    if rule == "floor":
        out = base.tolist()
        return out
    if rule != "largest-remainder":
        raise ValueError(f"unknown apportionment rule {rule!r}")
    rem = n * sizes % pop
    missing = n - int(base.sum())
    order = np.lexsort((np.arange(sizes.size), -rem))
    base[order[:missing]] += 1
    out = base.tolist()
    return out


def _ranks_above(size_a: int, s_a: int, a: int, size_b: int, s_b: int, b: int) -> bool:
    """Whether the pair (a, s_a) ranks above (b, s_b): a larger Huntington–Hill priority
    N/√(s(s + 1)), compared exactly as N_a²·s_b(s_b + 1) vs N_b²·s_a(s_a + 1); ties to the
    earlier stratum."""
    lhs = size_a * size_a * s_b * (s_b + 1)
    rhs = size_b * size_b * s_a * (s_a + 1)
    return lhs > rhs or (lhs == rhs and a < b)


def _pick(sizes: list[int], seats: list[int], pri: np.ndarray, held: bool) -> int | None:
    """The best unheld pair (``held`` False: largest priority of the next record) or the
    worst held pair (True: smallest priority of the last record beyond the first). Float
    priorities find the candidates; near-ties are settled exactly."""
    ok = np.isfinite(pri)
    if not ok.any():
        return None
    ext = float(np.min(pri[ok])) if held else float(np.max(pri[ok]))
    near = np.flatnonzero(ok & (np.abs(pri - ext) <= 1e-9 * abs(ext)))
    best = int(near[0])
    for h in near[1:].tolist():
        sh = seats[h] - 1 if held else seats[h]
        sb = seats[best] - 1 if held else seats[best]
        above = _ranks_above(sizes[h], sh, h, sizes[best], sb, best)
        if above != held:  # unheld: keep the higher; held: keep the lower
            best = h
    return best


def _huntington_hill(sizes: list[int], n: int, start: Sequence[int] | None = None) -> list[int]:
    """Huntington–Hill: the records after the first of each stratum are the n − k
    highest-ranked pairs (h, s), s >= 1, ranked by N_h/√(s(s + 1)) and then by h.

    Computed from a first guess (proportional, or ``start``) and repaired by exchanges:
    an allocation is the Huntington–Hill one exactly when every held pair ranks above
    every unheld pair (the sequential method's result for any n), so moving a record
    from the stratum with the worst held pair to the one with the best unheld pair while
    they are out of order ends there (each exchange moves a record to a strictly
    better-ranked pair).
    """
    k_nonempty = sum(1 for s in sizes if s > 0)
    if n < k_nonempty:
        raise ConditionError(
            f"Huntington–Hill gives every non-empty stratum at least one record: the total "
            f"{n} is below the number of non-empty strata ({k_nonempty})"
        )
    pop = sum(sizes)
    guess = [n * s // pop for s in sizes] if start is None else [int(x) for x in start]
    seats = [max(1, g) if s > 0 else 0 for s, g in zip(sizes, guess, strict=True)]
    nz = np.array(sizes, dtype=float)
    live = nz > 0

    def next_pri() -> np.ndarray:
        st = np.array(seats, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            out: np.ndarray = np.where(live, nz / np.sqrt(st * (st + 1.0)), -np.inf)
        return out

    def last_pri() -> np.ndarray:
        st = np.array(seats, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            out: np.ndarray = np.where(live & (st >= 2), nz / np.sqrt((st - 1.0) * st), np.inf)
        return out

    while sum(seats) > n:
        drop = _pick(sizes, seats, last_pri(), held=True)
        assert drop is not None
        seats[drop] -= 1
    while sum(seats) < n:
        grow = _pick(sizes, seats, next_pri(), held=False)
        assert grow is not None
        seats[grow] += 1
    while True:
        lo = _pick(sizes, seats, last_pri(), held=True)
        hi = _pick(sizes, seats, next_pri(), held=False)
        if lo is None or hi is None or lo == hi:
            return seats
        if not _ranks_above(sizes[hi], seats[hi], hi, sizes[lo], seats[lo] - 1, lo):
            return seats
        seats[lo] -= 1
        seats[hi] += 1


MAX_STRATA = 1000
"""Strata a fixed-total design may have (the search recomputes the allocation for each
of 2k neighbours, O(k) each)."""
MOVE_STRATA = 40
"""Above this many strata, moves are searched among the MOVE_STRATA strata whose added or
removed record moves the drawn sizes most (a lower bound from fewer neighbours is still a
lower bound)."""


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One neighbour of the stated strata and how far its allocation moves.

    ``kind`` is ``add`` (a record added to stratum ``to``), ``remove`` (a record of
    stratum ``source`` removed) or ``move`` (a record moved from ``source`` to ``to``: a
    replacement that changes its stratum). ``l1``/``linf``: change of the drawn sizes
    min(m_h, N_h); ``gs``: ‖f(P′) − f(P)‖₁ of the allocation itself (not capped).
    """

    kind: str
    source: int | None
    to: int | None
    l1: int
    linf: int
    gs: int


@dataclass(frozen=True, slots=True)
class Sensitivity:
    """How far the allocation moves between the stated strata and their neighbours
    (``moves_searched``: False when moves were searched among some strata only)."""

    stated: tuple[int, ...]
    drawn: tuple[int, ...]
    neighbours: tuple[Neighbour, ...]
    moves_searched: bool = True

    def of_kind(self, kinds: Sequence[str]) -> list[Neighbour]:
        return [nb for nb in self.neighbours if nb.kind in kinds]

    def worst(self, kinds: Sequence[str], measure: str) -> tuple[int, Neighbour | None]:
        """The largest ``measure`` (``l1``, ``linf`` or ``gs``) over neighbours of ``kinds``
        and the first neighbour attaining it."""
        best, arg = 0, None
        for nb in self.of_kind(kinds):
            v = int(getattr(nb, measure))
            if v > best:
                best, arg = v, nb
        return best, arg


def _drawn(sizes: Sequence[int], alloc: Any) -> np.ndarray:
    out: np.ndarray = np.minimum(np.asarray(alloc, dtype=np.int64), np.asarray(sizes, np.int64))
    return out


def sensitivity(size: Sequence[int], total: int, rule: str) -> Sensitivity:
    """The allocation at the stated sizes and at every neighbour's sizes.

    Neighbours: a record added to any stratum, one removed from any stratum (while the
    population stays non-empty), and one moved from stratum s to t != s (above
    ``MOVE_STRATA`` strata: among the strata whose own add/remove moves the drawn sizes
    most). A replacement inside a stratum keeps every size, so it keeps the allocation.
    """
    sizes = tuple(int(x) for x in size)
    k = len(sizes)
    if k > MAX_STRATA:
        raise ConditionError(
            f"a fixed-total allocation over {k} strata: the neighbour search is limited to "
            f"{MAX_STRATA} strata"
        )
    stated = tuple(apportion(sizes, total, rule))
    m0 = np.asarray(stated, dtype=np.int64)
    d0 = _drawn(sizes, stated)
    out: list[Neighbour] = []
    own = np.zeros(k, dtype=np.int64)  # per stratum: its add/remove's drawn change

    def add(kind: str, source: int | None, to: int | None) -> None:
        new = list(sizes)
        if source is not None:
            new[source] -= 1
        if to is not None:
            new[to] += 1
        if sum(new) <= 0:
            return
        try:
            m = np.asarray(apportion(new, total, rule, start=stated), dtype=np.int64)
        except ConditionError:  # Huntington–Hill: more non-empty strata than records
            return
        diff = np.abs(_drawn(new, m) - d0)
        l1, linf = int(diff.sum()), int(diff.max(initial=0))
        out.append(Neighbour(kind, source, to, l1, linf, int(np.abs(m - m0).sum())))
        h = source if source is not None else to
        if kind != "move" and h is not None:
            own[h] = max(own[h], l1)

    for h in range(k):
        add("add", None, h)
    for h in range(k):
        add("remove", h, None)
    searched = k <= MOVE_STRATA
    cand: list[int] = (
        list(range(k))
        if searched
        else sorted(int(h) for h in np.argsort(-own, kind="stable")[:MOVE_STRATA])
    )
    for s_ in cand:
        for t in cand:
            if s_ != t:
                add("move", s_, t)
    return Sensitivity(
        stated=stated,
        drawn=tuple(int(x) for x in d0),
        neighbours=tuple(out),
        moves_searched=searched,
    )


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
    (Bun et al., §4.1, Bun et al. 2020, Lemma 3.1).
    """
    one = linf * np.minimum(ed, er)
    every = l1 * np.minimum(ed, er / 2.0)
    out: np.ndarray = np.maximum(one, every)
    return out


# --- formulas: M's two ε as arrays, the allocation changes as keywords -------------------


def replace_one_lower(ed: np.ndarray, er: np.ndarray, *, move: tuple[int, int]) -> np.ndarray:
    """Lower bound under replace-one: the count witness on the worst move (Δ∞, Δ₁) of a
    record across strata (a replacement inside a stratum keeps every size). Rounded
    down."""
    return numeric.round_down(_count_witness(*move, ed, er))


def add_remove_lower(
    ed: np.ndarray, er: np.ndarray, *, add_remove: tuple[int, int], move: tuple[int, int]
) -> np.ndarray:
    """Lower bound under add-remove: the count witness on an added or removed record;
    a move is a replacement, which an add-remove guarantee ε′ covers with 2ε′, so ε′ >=
    half its loss. Rounded down."""
    direct = _count_witness(*add_remove, ed, er)
    return numeric.round_down(np.maximum(direct, _count_witness(*move, ed, er) / 2.0))


# --- results, one theorem record per guarantee (lower bounds only) -----------------------


def fixed_total_theorem(
    guarantee: Neighbours,
    mechanism: Mechanism,
    *,
    add_remove: tuple[int, int],
    move: tuple[int, int],
) -> Theorem:
    """A fixed total's lower bound under ``guarantee`` (no upper bound is known); linear
    in M's ε, so its inverse is T over its value at ε = 1."""
    if guarantee is Neighbours.REPLACE_ONE:
        lower = functools.partial(replace_one_lower, move=move)
    else:
        lower = functools.partial(add_remove_lower, add_remove=add_remove, move=move)
    return linear_lower_theorem(
        "a fixed total", BASIS, guarantee, mechanism, lower, subject="a fixed-total allocation"
    )


ADD_REMOVE_KINDS = ("add", "remove")
"""Neighbours an add-remove change gives: a record added to or removed from a stratum."""
MOVE_KINDS = ("move",)
"""Neighbours a replacement across strata gives."""


def _worst_change(sens: Sensitivity, kinds: Sequence[str]) -> tuple[int, int]:
    """(Δ∞, Δ₁): the largest change of the drawn sizes over neighbours of ``kinds``."""
    return sens.worst(kinds, "linf")[0], sens.worst(kinds, "l1")[0]


def _witness_neighbour(sens: Sensitivity, replace: bool) -> Neighbour | None:
    """The neighbour whose Δ₁ gives the lower bound: the worst move under replace-one;
    under add-remove the worst added or removed record, or the worst move where half its
    Δ₁ is larger."""
    ar_l1, ar_nb = sens.worst(ADD_REMOVE_KINDS, "l1")
    mv_l1, mv_nb = sens.worst(MOVE_KINDS, "l1")
    if replace:
        return mv_nb
    return ar_nb if ar_l1 >= mv_l1 / 2 else mv_nb


def _fixed_total_warnings(p: Any, sens: Sensitivity, replace: bool) -> tuple[str, ...]:
    """No guarantee exists (and the neighbour that degrades it), and strata the total
    samples whole."""
    names, rule = p.strata.names, p.rounding
    witness = _witness_neighbour(sens, replace)
    warnings: list[str] = []
    if max(sens.worst(ADD_REMOVE_KINDS, "l1")[0], sens.worst(MOVE_KINDS, "l1")[0]) > 0:
        warnings.append(
            "degradation: no amplification guarantee exists. A proportional allocation of a "
            f"fixed total with `rounding: {rule}` is a deterministic function of the stratum "
            f"sizes; at these sizes {describe(witness, names)} changes the drawn sample "
            f"sizes by Δ₁ = {witness.l1 if witness else 0}, so a "
            "mechanism releasing the sample counts with Laplace noise loses at least Δ·ε "
            f"({BUN_2020_WP}, Lemma 3.1; {BUN_2022}, §4.1)."
        )
    else:
        warnings.append(
            "no neighbour of these stratum sizes moves the allocation, so the count witness "
            "gives no lower bound here; the allocation still depends on the data, and no "
            f"upper bound is known for it ({BUN_2020_WP}, Lemma 3.1's upper half "
            f"does not hold, {DERIVATIONS}, §2.2)"
        )
    sizes = p.strata.size.tolist()
    over = [names[h] for h, (m, s) in enumerate(zip(sens.stated, sizes, strict=True)) if m > s]
    if over:
        warnings.append(
            f"total_sample {int(p.total_sample)} gives stratum {over[0]!r}"
            + (f" (and {len(over) - 1} more)" if len(over) > 1 else "")
            + " more records than it has: it is sampled whole (min(m_h, N_h) records); "
            "the sensitivity of the allocation itself (`apportionment_sensitivity`) counts "
            "the apportioned sizes"
        )
    return tuple(warnings)


def _fixed_total_notes(p: Any, sens: Sensitivity, replace: bool) -> tuple[str, ...]:
    """How a move reads under add-remove, a partial search of moves, and Huntington–Hill's
    sensitivity beyond the paper's 2."""
    notes: list[str] = []
    if not replace and sens.worst(MOVE_KINDS, "l1")[0] > 0:
        notes.append(
            "a record moved across strata is a replacement; under an add-remove guarantee ε′ "
            "its loss is at most 2ε′, so ε′ >= half the replace-one lower bound"
        )
    if not sens.moves_searched:
        notes.append(
            f"{len(p.strata)} strata: records moved between strata were tried among the "
            f"{MOVE_STRATA} strata whose own added or removed record moves the sample sizes "
            "most (a lower bound from fewer neighbours is still a lower bound)"
        )
    gs_all, gs_all_nb = sens.worst(("add", "remove", "move"), "gs")
    if p.rounding == "huntington-hill" and gs_all > 2:
        notes.append(
            f"{BUN_2020_WP}, §3.1 says Huntington–Hill has global sensitivity at most "
            f"2 'under some mild assumptions'; at these sizes "
            f"{describe(gs_all_nb, p.strata.names)} moves it by {gs_all} (the assumptions "
            f"are not stated; {STRATIFIED_DOCS})"
        )
    return tuple(notes)


def _sensitivity_details(sens: Sensitivity, names: Sequence[str]) -> dict[str, Any]:
    """How far the apportioned sizes (``apportionment_sensitivity``) and the drawn sizes
    (``allocation_sensitivity``) move, with the neighbours that move them most."""
    gs_add, gs_nb = sens.worst(("add",), "gs")
    gs_all, gs_all_nb = sens.worst(("add", "remove", "move"), "gs")
    ar_linf, ar_l1 = _worst_change(sens, ADD_REMOVE_KINDS)
    mv_linf, mv_l1 = _worst_change(sens, MOVE_KINDS)
    ar_nb = sens.worst(ADD_REMOVE_KINDS, "l1")[1]
    mv_nb = sens.worst(MOVE_KINDS, "l1")[1]
    return {
        "apportionment_sensitivity": {
            "add": gs_add,
            "add_witness": describe(gs_nb, names),
            "any": gs_all,
            "any_witness": describe(gs_all_nb, names),
        },
        "allocation_sensitivity": {
            "add_remove": {"linf": ar_linf, "l1": ar_l1, "witness": describe(ar_nb, names)},
            "move": {"linf": mv_linf, "l1": mv_l1, "witness": describe(mv_nb, names)},
        },
    }


def _fixed_total_details(
    p: Any, sens: Sensitivity, m0: np.ndarray, lower_bound: float
) -> dict[str, Any]:
    """``details``: the allocation, its sensitivity and the per-stratum rows (no upper
    bound, so no ε′ per stratum). ``lower_bound`` is at the declared ε (for readers of the
    analysis that evaluate no ε); the engine replaces it by its value at each evaluated ε."""
    size = p.strata.size
    rows = alloc.strata_rows(p, m0 / np.maximum(size, 1), m0, np.full(len(p.strata), np.nan), None)
    for row in rows:
        row["epsilon_prime"]["lower"] = None
    return {
        "allocation": "proportional",
        "rounding": p.rounding,
        "total_sample": int(p.total_sample),
        "population": int(size.sum()),
        "allocations": list(sens.stated),
        "allocation_sum": int(sum(sens.stated)),
        "drawn": list(sens.drawn),
        **_sensitivity_details(sens, p.strata.names),
        "lower_bound": lower_bound,
        "strata_count": len(p.strata),
        "strata": rows,
    }


@dataclass(frozen=True, slots=True)
class _LowerBoundAt:
    """``details.lower_bound`` at M's (ε_D, ε_R) of each evaluated ε."""

    lower: Callable[[np.ndarray, np.ndarray], np.ndarray]

    def __call__(self, ed: np.ndarray, er: np.ndarray) -> dict[str, Any]:
        return {"lower_bound": self.lower(ed, er)}


def analyse_fixed_total(p: Any, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Lower bound (no upper bound) for proportional allocation of a fixed total.

    ``p`` is the stratified ``Params`` (``total_sample`` and ``rounding`` set).
    """
    assert p.total_sample is not None and p.rounding is not None
    sens = sensitivity(p.strata.size.tolist(), int(p.total_sample), p.rounding)
    theorem = fixed_total_theorem(
        guarantee,
        mechanism,
        add_remove=_worst_change(sens, ADD_REMOVE_KINDS),
        move=_worst_change(sens, MOVE_KINDS),
    )
    check_refusals(theorem, mechanism)
    replace = theorem.guarantee is Neighbours.REPLACE_ONE
    assert isinstance(theorem.lower, OfPair)
    at = _LowerBoundAt(theorem.lower.formula)
    m0 = np.asarray(sens.drawn, dtype=float)
    lo0 = float(at(*epsilons(mechanism))["lower_bound"])
    conditions = (
        f"proportional allocation of a fixed total n = {int(p.total_sample)} over the "
        f"stratum sizes (N = {int(p.strata.size.sum())}), rounding `{p.rounding}`: "
        "deterministic and data-dependent",
        f"lower bound at ε = {float(mechanism.epsilon):g}: {lo0:.6g}",
    )
    return assemble(
        dataclasses.replace(theorem, conditions=conditions),
        mechanism,
        details=_fixed_total_details(p, sens, m0, lo0),
        details_both=at,
        warnings=_fixed_total_warnings(p, sens, replace),
        notes=_fixed_total_notes(p, sens, replace),
        invert_details_from=functools.partial(lower_bound_invert_rows, p, m0),
    )
