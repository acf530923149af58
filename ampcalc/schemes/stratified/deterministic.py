"""Proportional allocation with deterministic rounding (nearest, floor), judged at
the stated stratum sizes: each stratum's allocation at N_h − 1, N_h, N_h + 1; a step
that keeps it is a simple random sample (Bun et al. Theorem 2.2, A(m/N, ε_R), exact), a step
that moves it costs exactly ε (Bun et al. §4.1 witness)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import (
    BUN_2022,
    STRATIFIED_DOCS,
    cite,
)
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.assembly import (
    OfPair,
    Refusal,
    Refuses,
    Relation,
    Theorem,
    assemble,
    certify_above,
    certify_below,
    check_refusals,
    epsilons,
    relation_of,
)
from ampcalc.schemes.base import Analysis
from ampcalc.schemes.stratified.common import add_remove_refusal, per_stratum, scalar_eps
from ampcalc.schemes.stratified.params import Params
from ampcalc.schemes.stratified.randomized import analyse_randomized

BASIS_DETERMINISTIC = (
    cite(BUN_2022, "§4.1"),
    cite(BUN_2022, "Theorem 2.2 (per stratum)"),
    cite(
        STRATIFIED_DOCS,
        "Replace-one guarantee: one stratum's sample at N_h − 1, N_h, N_h + 1 coupled "
        "record by record",
    ),
)


DETERMINISTIC_REPLACE_NOTE = (
    "replace-one guarantee under deterministic rounding: a replacement inside a stratum "
    "keeps every allocation (a simple random sample per stratum: A(m_h/N_h, ε_R), exact, "
    f"{BUN_2022}, Theorem 2.2); a record moved from stratum s to t is a "
    "removal from s and an addition to t, bounded by the sum of the two exact one-stratum "
    "losses, or by ε_R when both allocations move (the two changes pair into one "
    "replacement of a sampled record)"
)


def _step_values(
    delta: np.ndarray, q: np.ndarray, ed: np.ndarray, er: np.ndarray, up: bool
) -> np.ndarray:
    """Exact loss of one stratum step N ↔ N + 1 with allocations m and m + Δ, Δ ∈ {0, 1}.

    Δ = 1: ε_D (upper: drop x, or a random record, from the larger sample — a coupling
    at add-remove distance 1; lower: Pr[M(S) = 1] ∝ e^{ε_D·|S|}). Δ = 0: A(q, ε_R) with
    q = m/(N + 1) the added record's inclusion (upper: swap x for a random unsampled
    record, Bun et al. Theorem 2.2's coupling; lower: Pr[M(S) = 1] ∝ e^{ε_R·[x ∈ S] − ε_R|S|/2},
    ε_D-DP under add-remove as ε_R <= 2ε_D). Rounded up (``up``) or down.
    """
    out: np.ndarray = np.where(delta > 0, ed, _amp(q, er, up))
    return out


def _amp(q: Any, eps: Any, up: bool) -> np.ndarray:
    """A(q, ε) rounded up or down; exactly 0 where q = 0 (nothing can be sampled)."""
    q = np.asarray(q, dtype=float)
    val = numeric.amplification_upper(q, eps) if up else numeric.amplification_lower(q, eps)
    out: np.ndarray = np.where(q > 0, val, 0.0)
    return out


MOVE_GRID = np.linspace(0.0, 1.0, 33)


def _move_witness(q_from: float, q_to: float, er: np.ndarray) -> np.ndarray:
    """Lower bound for a record x moved from stratum s to t when neither allocation moves.

    Witness: Pr[M(S) = 1] ∝ e^{a·[x ∈ S] − (ε_R − a)·[x′ ∈ S] − c·|S|} with c = a − ε_R/2:
    every record's weight lies in [−ε_R/2, ε_R/2], so M is ε_R/2 <= ε-DP under
    add-remove and ε_R-DP under replace-one. x is in P's sample with probability
    q_from = m_s/N_s, x′ in P′'s with q_to = m_t/(N_t + 1), the sample sizes agree:
    loss log(1 + q_from(e^a − 1)) − log(1 + q_to(e^{a − ε_R} − 1)) (and the same with
    the roles swapped for the other direction), maximised over a on a grid of [0, ε_R].
    a = ε_R is the within-stratum value A(q_from, ε_R). Rounded down.
    """
    e = np.asarray(er, dtype=float)[..., None]
    a = MOVE_GRID * e
    with np.errstate(over="ignore", invalid="ignore"):
        one = numeric.amplification(q_from, a) + numeric.neg_log1m(q_to, e - a)
        two = numeric.amplification(q_to, a) + numeric.neg_log1m(q_from, e - a)
    best = np.maximum(np.nanmax(one, axis=-1), np.nanmax(two, axis=-1))
    down = numeric.round_down(np.maximum(best, 0.0) - 8.0 * np.spacing(e[..., 0]))
    out: np.ndarray = np.maximum(down, 0.0)
    return out


@dataclass(frozen=True)
class _RoundedAllocations:
    """Deterministic allocations at the stated sizes and at every neighbour's sizes."""

    steps: alloc.RoundedSteps
    size: np.ndarray
    q_down: np.ndarray  # m_h/N_h: a record of the stated stratum h is sampled
    q_up: np.ndarray  # m_h/(N_h + 1): a record added to stratum h is sampled
    cross: tuple[tuple[int, int], ...]  # candidate (from s, to t) moves, s != t

    @classmethod
    def of(cls, p: Params) -> _RoundedAllocations:
        size = p.strata.size
        steps = alloc.proportional_steps(p.rates(), size, p.rounding or "nearest")
        down, up = steps.down, steps.up
        # r in (0, 1]: ⌊rN⌉ and ⌊rN⌋ are nondecreasing in N with steps of at most 1
        assert ((down >= 0) & (down <= 1) & (up >= 0) & (up <= 1)).all()
        n = size.astype(float)
        q_down = steps.at / n
        q_up = steps.at / (n + 1.0)
        return cls(steps, size, q_down, q_up, _cross_candidates(down, up, q_down, q_up))

    def cross_jumps(self, s: int, t: int) -> tuple[int, int]:
        return int(self.steps.down[s]), int(self.steps.up[t])


@dataclass(frozen=True)
class _StrataSteps:
    """Some strata's steps, for per-stratum inversion (one ε per stratum)."""

    down: np.ndarray
    up: np.ndarray
    q_down: np.ndarray
    q_up: np.ndarray

    def __init__(
        self, steps: alloc.RoundedSteps, rd: _RoundedAllocations, mask: np.ndarray
    ) -> None:
        object.__setattr__(self, "down", steps.down[mask])
        object.__setattr__(self, "up", steps.up[mask])
        object.__setattr__(self, "q_down", rd.q_down[mask])
        object.__setattr__(self, "q_up", rd.q_up[mask])

    def values(self, eps: Any, eps_r: Callable[[Any], np.ndarray], up: bool) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        er = eps_r(e)
        out: np.ndarray = np.maximum(
            _step_values(self.down, self.q_down, e, er, up),
            _step_values(self.up, self.q_up, e, er, up),
        )
        return out


def _cross_candidates(
    down: np.ndarray, up: np.ndarray, q_down: np.ndarray, q_up: np.ndarray
) -> tuple[tuple[int, int], ...]:
    """Ordered pairs (s, t), s != t, holding the worst move of a record from s to t.

    The loss of a move depends on (Δ_s, Δ_t) and increases in q_down[s] and q_up[t];
    within each of the four (Δ_s, Δ_t) classes the worst pair with s != t is among the
    two largest of each side, so at most 16 pairs are kept (none for one stratum).
    """
    if down.size < 2:
        return ()
    out: set[tuple[int, int]] = set()
    for a in (0, 1):
        s_idx = np.flatnonzero(down == a)
        s_top = s_idx[np.argsort(-q_down[s_idx], kind="stable")[:2]]
        for b in (0, 1):
            t_idx = np.flatnonzero(up == b)
            t_top = t_idx[np.argsort(-q_up[t_idx], kind="stable")[:2]]
            out.update((int(s), int(t)) for s in s_top for t in t_top if s != t)
    return tuple(sorted(out))


# --- formulas: M's two ε as arrays, the rounded allocations as keywords -------------------


def add_remove_epsilon(
    ed: np.ndarray, er: np.ndarray, *, rd: _RoundedAllocations, up: bool
) -> np.ndarray:
    """Stratified add-remove ε′ at the stated sizes: ε_D where a step moves an
    allocation (the count witness, exact), A(q, ε_R) at the largest inclusion among the
    steps that keep it (a simple random sample, exact). Rounded up (``up``) or down."""
    steps = rd.steps
    flat = np.concatenate([rd.q_down[steps.down == 0], rd.q_up[steps.up == 0]])
    jump = bool((steps.down > 0).any() or (steps.up > 0).any())
    parts = [ed.copy()] if jump else []
    if flat.size:
        parts.append(_amp(float(flat.max()), er, up))
    out: np.ndarray = functools.reduce(np.maximum, parts)
    return out


def cross_epsilon(
    s: int, t: int, ed: np.ndarray, er: np.ndarray, *, rd: _RoundedAllocations, up: bool
) -> np.ndarray:
    """A record moved from stratum s to t: the loss bound (``up``) or witness."""
    ds, dt = rd.cross_jumps(s, t)
    if ds and dt:  # both allocations move: the two changes pair into one replacement
        both: np.ndarray = np.array(er, dtype=float)
        return both
    if not up and not (ds or dt):
        return _move_witness(float(rd.q_down[s]), float(rd.q_up[t]), er)
    first = _step_values(np.asarray(ds), np.asarray(rd.q_down[s]), ed, er, up)
    second = _step_values(np.asarray(dt), np.asarray(rd.q_up[t]), ed, er, up)
    # one allocation moves: the sum is attained (docs/stratified.md), so it is both
    return numeric.round_up(first + second) if up else numeric.round_down(first + second)


def replace_one_epsilon(
    ed: np.ndarray, er: np.ndarray, *, rd: _RoundedAllocations, up: bool
) -> np.ndarray:
    """Replace-one ε′ at the stated sizes: a replacement inside a stratum keeps every
    allocation (A(max_h m_h/N_h, ε_R)); a record moved across strata, ``cross_epsilon``."""
    out = _amp(float(np.max(rd.q_down)), er, up)
    for s, t in rd.cross:
        out = np.maximum(out, cross_epsilon(s, t, ed, er, rd=rd, up=up))
    return out


def stratum_epsilon(ed: Any, er: Any, *, rd: _RoundedAllocations, up: bool) -> np.ndarray:
    """Stratified add-remove ε′_h: the worse of removing and adding a record of h, shape
    (k, *ε.shape)."""
    steps = rd.steps
    e = np.asarray(ed)
    down = _step_values(per_stratum(steps.down, e), per_stratum(rd.q_down, e), ed, er, up)
    add = _step_values(per_stratum(steps.up, e), per_stratum(rd.q_up, e), ed, er, up)
    out: np.ndarray = np.maximum(down, add)
    return out


# --- results, one theorem record per guarantee -------------------------------------------


def add_remove_theorem(rd: _RoundedAllocations, pure: bool) -> Theorem:
    """Stratified add-remove DP at the stated sizes (exact; no upper bound with δ > 0)."""
    return Theorem(
        name="deterministic rounding (add-remove)",
        basis=BASIS_DETERMINISTIC,
        relation=Neighbours.BOTH,
        guarantee=Neighbours.ADD_REMOVE,
        upper=OfPair(functools.partial(add_remove_epsilon, rd=rd, up=True)) if pure else None,
        lower=OfPair(functools.partial(add_remove_epsilon, rd=rd, up=False)),
        pure=pure,
        tight=None,
        refusals=(add_remove_refusal("an add-remove guarantee under deterministic rounding"),),
        relation_condition="M is ε-DP under add-remove (declared: {declared})",
    )


def replace_one_theorem(rd: _RoundedAllocations, p: Params, pure: bool) -> Theorem:
    """Replace-one at the stated sizes: within a stratum and across strata (derived,
    docs/stratified.md). A move that changes one allocation only needs M's add-remove
    ε (refused when it is unknown); otherwise ε_D = +inf."""
    one_sided = [(s, t) for s, t in rd.cross if rd.cross_jumps(s, t) in ((1, 0), (0, 1))]
    refusals: tuple[Refusal, ...] = ()
    if one_sided:
        s, t = one_sided[0]
        names = p.strata.names
        refusals = (
            Refusal(
                Refuses.ADD_REMOVE_UNKNOWN,
                f"moving a record from stratum {names[s]!r} to {names[t]!r} changes the "
                "total sample size (deterministic rounding), so M's add-remove ε is needed, "
                "and `neighbours: replace-one` leaves it unknown. Declare `neighbours: "
                "add-remove` or `both`.",
            ),
        )
    return Theorem(
        name="deterministic rounding (replace-one)",
        basis=BASIS_DETERMINISTIC,
        relation=Neighbours.BOTH,
        guarantee=Neighbours.REPLACE_ONE,
        upper=OfPair(functools.partial(replace_one_epsilon, rd=rd, up=True)) if pure else None,
        lower=OfPair(functools.partial(replace_one_epsilon, rd=rd, up=False)),
        pure=pure,
        tight=None,
        refusals=refusals,
        relation_condition="M's replace-one ε_R (declared: {declared})",
    )


def _searched_rows(
    p: Params, rd: _RoundedAllocations, pure: bool, an: Analysis, target: np.ndarray
) -> dict[str, Any]:
    """Replace-one ``invert`` rows: the design's own bounds inverted by search (none
    with δ > 0: no upper bound)."""
    t = np.asarray(target, dtype=float)
    if t.ndim or not pure:
        return {}
    assert an.upper is not None and an.lower is not None
    tt = float(t)
    cert = numeric.largest_feasible(an.upper, tt, tt / 4, tt)
    imp = numeric.smallest_reaching(an.lower, tt, tt / 4, tt)
    return {"strata": alloc.invert_rows(p, p.rates(), rd.steps.at, cert, imp)}


def _stratum_rows(
    p: Params,
    rd: _RoundedAllocations,
    rel: Relation,
    pure: bool,
    an: Analysis,
    target: np.ndarray,
) -> dict[str, Any]:
    """Add-remove ``invert`` rows: per stratum, a step that moves the allocation needs
    ε <= T, one that keeps it A(q, ε_R) <= T (ε_R = ratio·ε as the assembly reads M's
    replace-one ε; closed form, then certified as the assembly certifies)."""
    steps, k = rd.steps, len(p.strata)
    eps_r, ratio = rel.replace_one, rel.ratio
    t = np.asarray(target, dtype=float)
    if t.ndim or not pure:
        return {}
    tt = float(t)
    tk = np.full(k, tt)
    keep = np.maximum(
        np.where(steps.down == 0, rd.q_down, 0.0), np.where(steps.up == 0, rd.q_up, 0.0)
    )
    moves = (steps.down > 0) | (steps.up > 0)
    with np.errstate(divide="ignore"):
        inv = np.where(keep > 0, numeric.amplification_inverse(keep, tk) / ratio, np.inf)
    guess = np.where(moves, np.minimum(tk, inv), inv)
    finite = np.isfinite(guess)
    cert = np.full(k, np.inf)
    imp = np.full(k, np.inf)
    if finite.any():
        g, t_f = guess[finite], tk[finite]
        sub = _StrataSteps(steps, rd, finite)
        cert[finite] = certify_below(functools.partial(sub.values, eps_r=eps_r, up=True), g, t_f)
        imp[finite] = certify_above(functools.partial(sub.values, eps_r=eps_r, up=False), g, t_f)
    return {"strata": alloc.invert_rows(p, p.rates(), steps.at, cert, imp)}


def _sensitivity(rd: _RoundedAllocations, guarantee: Neighbours) -> tuple[int, int]:
    """(Δ∞, Δ₁): the largest change of the allocations over the guarantee's pairs."""
    if guarantee is Neighbours.REPLACE_ONE:
        pairs = [rd.cross_jumps(s, t) for s, t in rd.cross]
        linf = max((max(a, b) for a, b in pairs), default=0)
        l1 = max((a + b for a, b in pairs), default=0)
        return linf, l1
    both = int(max(rd.steps.down.max(), rd.steps.up.max()))
    return both, both


def analyse_deterministic(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Proportional allocation with deterministic rounding, at the stated sizes."""
    rule = p.rounding or "nearest"
    rd = _RoundedAllocations.of(p)
    k = len(p.strata)
    pure = mechanism.delta == 0.0
    if guarantee is Neighbours.REPLACE_ONE:
        theorem = replace_one_theorem(rd, p, pure)
        notes_of: tuple[str, ...] = (DETERMINISTIC_REPLACE_NOTE,)
    else:
        theorem = add_remove_theorem(rd, pure)
        notes_of = ()
    theorem = dataclasses.replace(
        theorem,
        conditions=(
            "each stratum samples ⌊r·N_h⌉ (or ⌊r·N_h⌋) records without replacement: a "
            "deterministic function of the stratum size",
            "bounds at the stated stratum sizes: the pairs are the stated population and "
            "each of its neighbours",
        ),
    )
    check_refusals(theorem, mechanism)
    replace = theorem.guarantee is Neighbours.REPLACE_ONE
    if replace:
        rows_at = functools.partial(_searched_rows, p, rd, pure)
    else:
        rows_at = functools.partial(_stratum_rows, p, rd, relation_of(mechanism, theorem), pure)
    eps0 = scalar_eps(mechanism)
    at_both = functools.partial(_details_both, p=p, rd=rd, replace=replace, pure=pure)
    declared = at_both(*epsilons(mechanism))
    witness = declared["witness"]
    linf, l1 = _sensitivity(rd, theorem.guarantee)
    warnings: list[str] = []
    notes: list[str] = []
    # a rounded allocation that moves is a failed guarantee; one that stays is context
    (warnings if linf else notes).append(_deterministic_note(rule, witness, linf, replace))
    side = _randomized_analysis(p, mechanism, guarantee)
    side_at = None
    if isinstance(side, ConditionError):
        side_declared = None
        notes.append(f"randomised rounding would not be covered either: {side.message}")
    else:
        side_at = functools.partial(_randomized_at, side)
        side_declared = {
            key: float(v) for key, v in side_at(np.asarray(eps0))["randomized_rounding"].items()
        }
        notes.append(
            f"with randomised rounding the same rates give ε′ in [{side_declared['lower']:.6g}, "
            f"{side_declared['upper']:.6g}] at ε = {eps0:g}"
        )
    # the ε-dependent entries at the declared ε (for readers of the analysis that evaluate
    # no ε); the engine replaces them by their values at each evaluated ε
    details: dict[str, Any] = {
        "allocation": "proportional",
        "rounding": rule,
        "allocation_sensitivity": {"linf": linf, "l1": l1},
        "witness": witness,
        "strata_count": k,
        "strata": declared["strata"],
        "randomized_rounding": side_declared,
    }
    if not pure:
        warnings.append(
            "the upper bound is for pure ε-DP mechanisms: no upper bound with delta > 0"
        )
    return assemble(
        theorem,
        mechanism,
        details=details,
        details_at=side_at,
        details_both=at_both,
        warnings=tuple(warnings),
        notes=(*notes, *notes_of),
        invert_details_from=rows_at,
    )


def _details_both(
    ed: np.ndarray,
    er: np.ndarray,
    *,
    p: Params,
    rd: _RoundedAllocations,
    replace: bool,
    pure: bool,
) -> dict[str, Any]:
    """The witness and the per-stratum rows at M's (ε_D, ε_R) of each evaluated ε (a
    stratum's add-remove ε′_h only where ε_D is known, i.e. finite). At an array of ε
    the witness is an array (nested lists) of the witness at each ε."""
    steps = rd.steps
    known = bool(np.all(np.isfinite(ed)))
    rows = alloc.strata_rows(
        p,
        p.rates(),
        steps.at,
        stratum_epsilon(ed, er, rd=rd, up=False) if known else None,
        stratum_epsilon(ed, er, rd=rd, up=True) if known and pure else None,
    )
    for row, removed, added in zip(
        rows, steps.removed.tolist(), steps.added.tolist(), strict=True
    ):
        row["sample_neighbours"] = {"record_removed": removed, "record_added": added}
    witness: Any
    if np.ndim(ed) == 0:
        witness = _deterministic_witness(p, rd, replace, ed, er)
    else:
        each = np.empty(np.shape(ed), dtype=object)
        for i in np.ndindex(each.shape):
            each[i] = _deterministic_witness(p, rd, replace, ed[i], er[i])
        witness = each.tolist()
    return {"witness": witness, "strata": rows}


def _deterministic_witness(
    p: Params, rd: _RoundedAllocations, replace: bool, ed: Any, er: Any
) -> dict[str, Any]:
    """The neighbour of the stated sizes whose witness gives the lower bound at M's
    (ε_D, ε_R) (one ε)."""
    names, size, steps = p.strata.names, rd.size, rd.steps
    e_d = np.asarray(ed, dtype=float)
    e_r = np.asarray(er, dtype=float)

    def stratum(h: int, dn: int) -> dict[str, Any]:
        after = {-1: steps.removed, 0: steps.at, 1: steps.added}[dn]
        return {
            "name": names[h],
            "size": [int(size[h]), int(size[h]) + dn],
            "sample": [int(steps.at[h]), int(after[h])],
        }

    srs = (
        "Pr[M(S) = 1] ∝ e^{ε_R·[x ∈ S] − ε_R·|S|/2}, x the differing record (ε_R-DP under "
        "replace-one, ε-DP under add-remove as ε_R <= 2ε): loss A(m/N, ε_R), exact "
        f"(a simple random sample, {BUN_2022}, Theorem 2.2)"
    )
    empty = "none: the differing record is never sampled (m_h = 0), every M has loss 0"
    count = f"M(S) = |S| + Lap(1/ε) ({BUN_2022}, §4.1): loss Δ·ε, exact"
    best: dict[str, Any]
    if replace:
        h = int(np.argmax(rd.q_down))
        best = {
            "relation": "replace-one",
            "neighbour": f"a record of stratum {names[h]!r} replaced by another of the same "
            "stratum (every allocation unchanged)",
            "strata": [stratum(h, 0)],
            "mechanism": srs if steps.at[h] else empty,
            "epsilon_prime": float(_amp(rd.q_down[h], e_r, False)),
        }
        for s, t in rd.cross:
            v = float(cross_epsilon(s, t, e_d, e_r, rd=rd, up=False))
            if v <= best["epsilon_prime"]:
                continue
            ds, dt = rd.cross_jumps(s, t)
            how = (
                "(|S_t| − |S_s|)/2 + Lap(1/ε_R) over the two strata's sample counts: the "
                "two allocation changes add up, loss ε_R, exact"
                if ds and dt
                else f"the changed stratum's sample count + Lap(1/min(ε, ε_R)) ({BUN_2022}, §4.1)"
            )
            best = {
                "relation": "replace-one",
                "neighbour": f"a record moved from stratum {names[s]!r} to {names[t]!r}",
                "strata": [stratum(s, -1), stratum(t, 1)],
                "mechanism": how,
                "epsilon_prime": v,
            }
        return best
    vals = np.stack(
        [
            _step_values(steps.down, rd.q_down, e_d, e_r, False),
            _step_values(steps.up, rd.q_up, e_d, e_r, False),
        ]
    )  # (removed, added) x strata
    moves = np.stack([steps.down, steps.up])
    # the worst step; among equals, one that moves an allocation, then the first
    order = np.lexsort((np.arange(vals.size), -moves.ravel(), -vals.ravel()))
    side, h = divmod(int(order[0]), len(names))
    v, delta, dn = float(vals[side, h]), int(moves[side, h]), (-1 if side == 0 else 1)
    verb = "removed from" if dn < 0 else "added to"
    return {
        "relation": "add-remove",
        "neighbour": f"a record {verb} stratum {names[h]!r}",
        "strata": [stratum(h, dn)],
        "mechanism": count if delta else (srs if steps.at[h] else empty),
        "epsilon_prime": v,
    }


def _deterministic_note(rule: str, witness: dict[str, Any], linf: int, replace: bool) -> str:
    how = "round half up" if rule == "nearest" else "floor"
    if linf:
        moved = [s for s in witness["strata"] if s["sample"][0] != s["sample"][1]]
        if moved:
            s = moved[0]
            where = (
                f"{witness['neighbour']} takes stratum {s['name']!r} from N = {s['size'][0]} "
                f"to {s['size'][1]} and its sample from {s['sample'][0]} to {s['sample'][1]}"
            )
        else:
            where = "a neighbour of these sizes moves a stratum's rounded allocation by one"
        return (
            f"deterministic rounding ({how}): {where}, so a mechanism releasing a "
            f"stratum's sample count with Lap(1/ε) loses ε′ >= ε ({BUN_2022}, "
            "§4.1): no amplification. Randomised rounding (`rounding: randomized`, "
            "Theorem 7.2) fixes this."
        )
    rel = "replacement" if replace else "added or removed record"
    return (
        f"deterministic rounding ({how}): at these stratum sizes no {rel} changes a "
        "rounded allocation, so the design is a simple random sample without replacement "
        "in each stratum and the bounds are exact. Other sizes can move it "
        f"({BUN_2022}, §4.3: N = 14 → 15 at r = 0.1 takes ⌊rN⌉ from 1 to 2, "
        "and then ε′ >= ε)."
    )


def _randomized_analysis(
    p: Params, mechanism: Mechanism, guarantee: Neighbours
) -> Analysis | ConditionError:
    """The same rates with randomised rounding, for comparison (``randomized_rounding``),
    or why it would not be covered."""
    try:
        return analyse_randomized(
            Params(allocation="proportional", rounding="randomized", rate=p.rate, strata=p.strata),
            Mechanism(
                epsilon=mechanism.epsilon,
                neighbours=mechanism.neighbours,
                epsilon_replace_one=mechanism.epsilon_replace_one,
            ),
            guarantee,
        )
    except ConditionError as err:
        return err


def _randomized_at(side: Analysis, eps: np.ndarray) -> dict[str, Any]:
    """Randomised rounding's bounds at each evaluated ε."""
    assert side.upper is not None and side.lower is not None
    return {"randomized_rounding": {"lower": side.lower(eps), "upper": side.upper(eps)}}
