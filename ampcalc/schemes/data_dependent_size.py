"""Data-dependent sample size: a deterministic allocation f with sensitivity Δ.

C_f draws f(P) records without replacement, where f depends on the data, with
Δ = max |f(P) − f(P′)| over add-remove neighbours.

Basis: Bun et al., §4.1 (the noisy-count witness: ε′ >= Δε) and
Lemma B.1 (Appendix B, upper bound), read with M ε-DP under add-remove as spec §4.2
explains. Bun et al. 2020, Lemma 2.1/3.1 claim (GS_f·ε)-DP; only its lower
half holds (spec §4.1, §11.20).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import BUN_2020_WP, BUN_2022, DERIVATIONS, cite
from ampcalc.schemes.assembly import (
    OfPair,
    Refusal,
    Refuses,
    Theorem,
    assemble,
    check_refusals,
    epsilons,
)
from ampcalc.schemes.base import Analysis, Field, Problem, Scheme

MAX_EXACT_INT = 2**53
BASIS = (
    cite(BUN_2022, "§4.1"),
    cite(BUN_2022, "Lemma B.1"),
    cite(BUN_2020_WP, "Lemma 2.1, 3.1 (lower half)"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """A sample whose size is a deterministic function f of the data.

    Attributes:
        population: N = |P|, the size of the dataset at hand.
        sample: m = f(P), the number of records drawn (without replacement) from it;
            needed for the upper bound (scalar sensitivity only).
        sensitivity: Δ = max |f(P) − f(P′)| over add-remove neighbours (whole number
            >= 0), for one sample from the whole population.
        sensitivity_l1: alternatively, the L1 sensitivity of a vector allocation
            (strata), for mechanisms releasing every stratum count; lower bound only.
    """

    population: int
    sample: int | None = None
    sensitivity: int | None = None
    sensitivity_l1: int | None = None


FIELDS = (
    Field(
        name="population",
        kind="int",
        doc="population size N = |P|",
        required=True,
        low=1,
        high=MAX_EXACT_INT,
    ),
    Field(
        name="sample",
        kind="int",
        doc="allocated sample size m = f(P), 0 <= m <= N",
        low=0,
        high=MAX_EXACT_INT,
    ),
    Field(
        name="sensitivity",
        kind="int",
        doc="allocation sensitivity Δ = max |f(P) − f(P′)|",
        low=0,
        high=MAX_EXACT_INT,
    ),
    Field(
        name="sensitivity_l1",
        kind="int",
        doc="L1 sensitivity of a vector (per-stratum) allocation; lower bound only",
        low=0,
        high=MAX_EXACT_INT,
    ),
)


def check(params: Params) -> list[Problem]:
    """Exactly one sensitivity; a scalar one needs the sample size m <= N."""
    if (params.sensitivity is None) == (params.sensitivity_l1 is None):
        return [
            Problem(
                field="sensitivity",
                message="give exactly one of `sensitivity` "
                "(scalar allocation) and `sensitivity_l1` (vector allocation)",
            )
        ]
    if params.sensitivity is not None:
        if params.sample is None:
            return [
                Problem(
                    field="sensitivity",
                    message="`sensitivity` needs `sample` (m = f(P), the allocated sample size)",
                )
            ]
        if params.sample > params.population:
            return [
                Problem(
                    field="sample",
                    message=f"sample {params.sample} is larger than "
                    f"population {params.population}; expected 0 <= sample <= "
                    "population",
                )
            ]
    return []


def upper_epsilon(
    eps_add_remove: np.ndarray, *, population: int, sample: int, sensitivity: int
) -> np.ndarray:
    """Upper bound (a guarantee) on ε′ for a deterministic allocation of sensitivity Δ.

    Basis: Bun et al., Lemma B.1 (Appendix B), with M ε-DP under
        add-remove (spec §4.2: the proof's couplings use add/remove distance).
    Neighbours: M ε-DP under add-remove; ε′ holds under add-remove.
    Conditions: one sample, without replacement, from the whole population.
    Formula: the lemma bounds a pair (P, P ∪ {x}) by A(m_s/(|P| + 1), 2ε) + |m − m′|ε,
        with m_s the smaller dataset's sample size. Over both directions (f need not be
        monotone, so the larger sample can sit with the smaller dataset):
        ε′ = A(min(1, (m + Δ)/N), 2ε) + Δε. (N = 14, m = 1, Δ = 1, ε = 1: 1.648528; the
        one-direction 1.354829 of spec §4.2 is beaten by an explicit pair, 1.375941.)
    Tightness: attained when Δ = 0 (a srswor at ε_R = 2ε); otherwise the lower bound
        is ``sample_lower_epsilon`` or Δε.
    Numerics: kernel rounded up, sum rounded up.
    """
    eps = np.asarray(eps_add_remove, dtype=float)
    q = min(1.0, (sample + sensitivity) / population)
    if q == 0.0:
        return np.zeros(eps.shape)  # the sample is always empty: the output ignores the data
    amp = numeric.amplification_upper(q, 2.0 * eps)
    return numeric.round_up(amp + numeric.round_up(sensitivity * eps))


def lower_epsilon(eps_add_remove: np.ndarray, *, sensitivity: int) -> np.ndarray:
    """Lower bound Δ·ε: M(S) = |S| + Lap(1/ε) (ε-DP under add-remove) sees m vs m + Δ.

    ``analyse`` passes the shift a neighbour can realise (``reachable_shift``): with
    N = 2, m = 1 and a stated Δ = 5 the neighbours draw 0..3 records, so 2ε, not 5ε.

    Basis: Bun et al., §4.1; for vector allocations the per-stratum
        counts with independent Lap(1/ε) and the L1 sensitivity (spec §4.1).
    """
    prod = sensitivity * np.asarray(eps_add_remove, dtype=float)
    if sensitivity & (sensitivity - 1) == 0:
        return prod  # Δ = 0 or a power of two: the product is exact
    return numeric.round_down(prod, 1)  # one rounding to nearest: at most half an ulp


def reachable_shift(population: int, sample: int, sensitivity: int) -> int:
    """The largest |m′ − m| <= Δ a neighbour of P can realise: its size is N ± 1, so
    0 <= m′ <= N + 1 (the noisy count needs m′ = m ± that shift)."""
    n, m, d = population, sample, sensitivity
    return min(d, max(n + 1 - m, m))


def _add_sizes(
    population: int, sample: int, sensitivity: int, e_d: np.ndarray, e_r: np.ndarray
) -> list[np.ndarray]:
    """Candidate sizes m′ for P ∪ {x}: the best of max(0, m − Δ)..m, per ε.

    g(m′) = (m − m′)ε_D + A(m′/(N + 1), ε_R) is concave in m′; its steps are >= 0 while
    m′/(N + 1) <= q* = e^{ε_D}/((e^{ε_D} − 1)(N + 1)) − 1/(e^{ε_R} − 1) (from
    e^{ε_D}(1 + (q − h)u) >= 1 + qu, h = 1/(N + 1), u = e^{ε_R} − 1), so the integer
    maximum is at ⌊x⌋ or ⌈x⌉ of x = (N + 1)q*, clipped to the range; the ends are kept
    too (any m′ in the range is a valid witness, the choice only makes it tighter).
    """
    n, m, d = population, sample, sensitivity
    lo, hi = float(max(0, m - d)), float(m)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        x = 1.0 / -np.expm1(-e_d) - (n + 1) / np.expm1(e_r)
    x = np.clip(np.nan_to_num(x, nan=hi, posinf=hi, neginf=lo), lo, hi)
    return [np.full(e_d.shape, lo), np.floor(x), np.ceil(x), np.full(e_d.shape, hi)]


def witness_pairs(population: int, sample: int, sensitivity: int) -> list[tuple[str, int, int]]:
    """The fixed neighbouring pairs of ``sample_lower_epsilon``: (direction, m′, shift).

    ``remove``: P (N records, one of them x, m sampled) vs P − {x} with m′ sampled;
    ``add``: P vs P ∪ {x} with m′ sampled. ``shift`` = |m′ − m|, taken in the
    direction that adds to the loss (see ``sample_lower_epsilon``). The sizes between
    max(0, m − Δ) and m for P ∪ {x} come from ``_add_sizes``.
    """
    n, m, d = population, sample, sensitivity
    out: list[tuple[str, int, int]] = []
    if n >= 1 and m <= n - 1:  # P − {x} can draw m′ = min(N − 1, m + Δ) >= m records
        mp = min(n - 1, m + d)
        out.append(("remove", mp, mp - m))
    return out


def sample_lower_epsilon(
    eps_add_remove: np.ndarray,
    eps_replace_one: np.ndarray,
    *,
    population: int,
    sample: int,
    sensitivity: int,
) -> np.ndarray:
    """Lower bound on ε′ from the sum witness read at a pair where x may be sampled.

    Basis: the simple-random-sample witness (Bun et al., Theorem 2.2 is
        tight) combined with the §4.1 shift of the sample size; docs/random-size.md.
    Witness: values 1 for the other records and 1 − c for x, c = ε_R/ε_D <= 2, and
        M(S) = Σx + Lap(1/ε_D): add-remove sensitivity max(1, |1 − c|) = 1 (ε_D-DP),
        replace-one sensitivity c (ε_R-DP). Below every possible sum the density ratio
        is constant; with the sample S of the dataset holding x (x sampled with
        probability π) and S′ of the other, |S′| − |S ∖ {x}| = k:
        ratio = e^{ε_D·k}(1 + π(e^{ε_R} − 1)), loss kε_D + A(π, ε_R).
        * remove: P (N records, m drawn, π = m/N) vs P − {x} (m′ = min(N − 1, m + Δ)
          drawn; needs m <= N − 1), k = m′ − m;
        * add: P ∪ {x} (N + 1 records, m′ drawn, π = m′/(N + 1)) vs P, k = m − m′,
          for the best m′ in max(0, m − Δ)..m (``_add_sizes``; N = 2, m = 2, Δ = 2,
          ε = 2: m′ = 1 gives 4.937364, the exact value, where m′ = 0 gives 4).
        A deterministic f of sensitivity Δ can take each m′ (it need not be monotone).
        With Δ = 0 (a constant allocation) the design is a srswor and the first pair
        gives A(m/N, ε_R), the upper bound: tight.
    Numerics: kernel and product rounded down, the sum rounded down.
    """
    e_d = np.asarray(eps_add_remove, dtype=float)
    e_r = np.asarray(eps_replace_one, dtype=float)
    e_d, e_r = np.broadcast_arrays(e_d, e_r)
    n, m = population, sample
    best = np.zeros(e_d.shape)
    for _, _, k in witness_pairs(n, m, sensitivity):  # remove: π = m/N
        amp = numeric.amplification_lower(m / n, e_r) if m > 0 else np.zeros(e_d.shape)
        shift = numeric.round_down(k * e_d, 1) if k else np.zeros(e_d.shape)
        best = np.maximum(best, numeric.round_down(amp + shift) if k else amp)
    for mp in _add_sizes(n, m, sensitivity, e_d, e_r):
        pi = mp / (n + 1)
        safe = np.where(pi > 0, pi, 1.0)
        amp = np.where(pi > 0, numeric.amplification_lower(safe, e_r), 0.0)
        drop = m - mp  # k = m − m′ >= 0
        shift = numeric.round_down(drop * e_d, 1)
        best = np.maximum(best, np.where(drop > 0, numeric.round_down(amp + shift), amp))
    return best


def scalar_lower_epsilon(
    eps_add_remove: np.ndarray,
    eps_replace_one: np.ndarray,
    *,
    population: int,
    sample: int,
    sensitivity: int,
) -> np.ndarray:
    """Lower bound on ε′ for a scalar allocation: the larger of the noisy count at the
    shift a neighbour can realise (``lower_epsilon``, ``reachable_shift``) and the sum
    witness (``sample_lower_epsilon``)."""
    count = lower_epsilon(
        eps_add_remove, sensitivity=reachable_shift(population, sample, sensitivity)
    )
    pair = sample_lower_epsilon(
        eps_add_remove,
        eps_replace_one,
        population=population,
        sample=sample,
        sensitivity=sensitivity,
    )
    out: np.ndarray = np.maximum(count, pair)
    return out


def inverse_lower_epsilon(target: np.ndarray, *, sensitivity: int) -> np.ndarray:
    """The ε at which Δ·ε reaches the target (unrounded), +∞ for Δ = 0 (never)."""
    t = np.asarray(target, dtype=float)
    if sensitivity == 0:
        return np.full(t.shape, np.inf)
    out: np.ndarray = t / sensitivity
    return out


def conditions(params: Params) -> tuple[str, ...]:
    """Lemma B.1's condition on the allocation."""
    return ("f is deterministic; Δ bounds |f(P) − f(P′)| over all add-remove neighbours",)


REFUSES_GUARANTEE = (
    f"Lemma B.1 ({BUN_2022}) bounds add-remove "
    "neighbours only (the sample size follows the population)"
)
REFUSES_REPLACE_ONE_ONLY = (
    f"Lemma B.1 ({BUN_2022}) needs M to be ε-DP under add-remove (the "
    "sample size changes with the data); `neighbours: replace-one` leaves it unknown. "
    "Declare `neighbours: add-remove` or `both`."
)
REFUSES_DELTA = f"Lemma B.1 ({BUN_2022}) is stated for pure ε-DP mechanisms (δ = 0)"
REFUSALS = (
    Refusal(Refuses.GUARANTEE, REFUSES_GUARANTEE),
    Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY),
    Refusal(Refuses.DELTA, REFUSES_DELTA),
)


RELATION = Neighbours.ADD_REMOVE
"""The relation the family's theorems take M's ε under."""


def theorem(params: Params) -> Theorem:
    """Lemma B.1 (upper) and the §4.1 witnesses (lower) for this design, as data.

    A scalar allocation: the upper bound in ε_D, the lower bound in (ε_D, ε_R) (the sum
    witness is ε_R-DP under replace-one). A vector allocation (``sensitivity_l1``): the
    lower bound Δ₁ε_D only, with its closed-form inverse.
    """
    n, m = params.population, params.sample
    if params.sensitivity_l1 is not None:
        d1 = params.sensitivity_l1
        return Theorem(
            name="Lemma B.1",
            basis=BASIS,
            relation=Neighbours.ADD_REMOVE,
            guarantee=Neighbours.ADD_REMOVE,
            lower=lower_epsilon,
            lower_inverse=inverse_lower_epsilon,
            params={"sensitivity": d1},
            conditions=conditions(params),
            tight=None,
            refusals=REFUSALS,
        )
    d = params.sensitivity
    assert d is not None and m is not None  # check(): a scalar sensitivity needs m
    return Theorem(
        name="Lemma B.1",
        basis=BASIS,
        relation=RELATION,
        guarantee=Neighbours.ADD_REMOVE,
        upper=upper_epsilon,
        lower=OfPair(scalar_lower_epsilon),
        params={"population": n, "sample": m, "sensitivity": d},
        conditions=conditions(params),
        tight=None,
        refusals=REFUSALS,
    )


def _witness_text(m: int, n: int, d: int, e_d: np.ndarray, e_r: np.ndarray) -> str:
    """Which neighbouring pair realises the lower bound at one ε (ε_D, ε_R scalars)."""
    k = reachable_shift(n, m, d)
    best = float(lower_epsilon(e_d, sensitivity=k))
    text = f"noisy count |S| + Lap(1/ε): sample sizes {m} vs {m} ± {k}"
    values = []
    for direction, mp, k in witness_pairs(n, m, d):
        amp = float(numeric.amplification(m / n, e_r)) if m > 0 else 0.0
        values.append((k * float(e_d) + amp, direction, mp))
    for size in _add_sizes(n, m, d, e_d, e_r):
        mp = int(size)
        amp = float(numeric.amplification(mp / (n + 1), e_r)) if mp > 0 else 0.0
        values.append(((m - mp) * float(e_d) + amp, "add", mp))
    top, direction, mp = max(values)
    if top > best:
        if direction == "remove":
            text = (
                f"Σx + Lap(1/ε_D): P ({n} records, {m} drawn) vs P − {{x}} ({n - 1} records, "
                f"{mp} drawn)"
            )
        else:
            text = (
                f"Σx + Lap(1/ε_D): P ({n} records, {m} drawn) vs P ∪ {{x}} ({n + 1} "
                f"records, {mp} drawn)"
            )
    return text


def _witness_details(
    e_d: np.ndarray, e_r: np.ndarray, *, population: int, sample: int, sensitivity: int
) -> Mapping[str, Any]:
    """The pair that realises the lower bound, at each evaluated (ε_D, ε_R)."""
    texts = [
        _witness_text(sample, population, sensitivity, np.asarray(x), np.asarray(y))
        for x, y in zip(np.ravel(e_d), np.ravel(e_r), strict=True)
    ]
    return {"lower_witness": texts[0] if np.ndim(e_d) == 0 else texts}


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one data-dependent-size design."""
    thm = theorem(params)
    check_refusals(thm, mechanism, guarantee)  # before the remarks about the declared ε
    n = params.population
    vector = params.sensitivity_l1 is not None
    delta_f = params.sensitivity_l1 if vector else params.sensitivity
    assert delta_f is not None
    warnings = [
        "Δ must bound the allocation's change over every neighbouring pair (both "
        "directions), not only for the data at hand; a deterministic allocation with Δ >= 1 "
        f"gives no amplification ({BUN_2022}, §4.1)",
    ]
    notes = [
        f"{BUN_2020_WP}, Lemma 2.1/3.1 claim the composition is (Δ·ε)-DP; only "
        "that lower bound holds (a constant allocation has Δ = 0 and is not 0-DP); the upper "
        f"bound is {BUN_2022}, Lemma B.1, read with M ε-DP under add-remove "
        f"(the printed 'replacement' is a slip; {DERIVATIONS}, §2.2).",
    ]
    details: dict[str, Any] = {"sensitivity": delta_f, "population": n}
    more_conditions: tuple[str, ...] = ()
    details_both = None
    if vector:
        details["sensitivity_kind"] = "l1"
        warnings.append(
            "vector allocation: the lower bound Δ₁ε is for a mechanism releasing every "
            "stratum count with independent Lap(1/ε); no upper bound is given (Lemma B.1 "
            "assumes one sample from the whole population; a small stratum can cost far "
            "more)."
        )
    else:
        m = params.sample
        assert m is not None  # check(): a scalar sensitivity needs the sample
        details["sample"] = m
        details["upper_rate"] = min(1.0, (m + delta_f) / n)
        details["sensitivity_kind"] = "scalar"
        # the note describes the declared design, at the declared ε
        e_d, e_r = epsilons(mechanism)
        lower0 = float(scalar_lower_epsilon(e_d, e_r, population=n, sample=m, sensitivity=delta_f))
        flat = sample_lower_epsilon(e_d, e_r, population=n, sample=m, sensitivity=0)
        count = lower_epsilon(e_d, sensitivity=reachable_shift(n, m, delta_f))
        mono = float(np.maximum(count, flat))  # the pairs a non-decreasing f can realise
        if delta_f > 0 and mono < lower0:
            notes.append(
                "the lower bound's pair needs an allocation that moves against the data "
                f"size ({_witness_text(m, n, delta_f, e_d, e_r)}); an allocation that never "
                "falls when a record is added (e.g. rounding rN) leaves the pairs with m′ = m "
                f"or the noisy count, whose lower bound is {mono:.6g}"
            )
        notes.append(
            "no bound is known that meets the lower one (`tightness` gives the gap): on the "
            "exact programme's tiny instances the lower bound met the exact value and Lemma "
            "B.1's upper exceeded it by up to 3.33 nats (benchmarks/README.md, Tightness); "
            "`ampcalc verify` gives the exact value of a tiny design."
        )
        more_conditions = (f"0 <= sample <= population: 0 <= {m} <= {n}",)
        details_both = partial(_witness_details, population=n, sample=m, sensitivity=delta_f)
    return assemble(
        thm,
        mechanism,
        guarantee=guarantee,
        conditions=more_conditions,
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
        details_both=details_both,
    )


def _record_pairs(n: int, m: int, add: range, remove: range) -> list[Any]:
    """Distinct records: P = {o1..oN} vs P ∪ {x} with m′ in ``add``, and
    P = {o1..oN−1, x} vs P − {x} with m′ in ``remove`` (m sampled from P)."""
    from ampcalc.schemes.exact import (  # lazy: start-up (bound)
        distinct_instance,
        srswor_distribution,
    )

    syms = (*(f"o{i + 1}" for i in range(n)), "x")
    insts = [
        distinct_instance(
            f"P = {{o1..o{n}}} (m = {m}) vs P ∪ {{x}} (m′ = {mp})",
            syms,
            srswor_distribution((1,) * n + (0,), m),
            srswor_distribution((1,) * (n + 1), mp),
        )
        for mp in add
    ]
    if n >= 1:
        insts += [
            distinct_instance(
                f"P = {{o1..o{n - 1}, x}} (m = {m}) vs P − {{x}} (m′ = {mp})",
                syms[1:],
                srswor_distribution((1,) * n, m),
                srswor_distribution((1,) * (n - 1) + (0,), mp),
            )
            for mp in remove
        ]
    return insts


def _value_pairs(n: int, m: int, d: int, top: int) -> list[Any]:
    """P = {a×(N − j), b×j} vs P with an a or a b added or removed, for every m′ within
    Δ of m the neighbour can draw; samples as value multisets."""
    from ampcalc.schemes.exact import (  # lazy: start-up (bound)
        srswor_distribution,
        two_value_instance,
    )

    moves = [("add a", (1, 0)), ("add b", (0, 1)), ("remove a", (-1, 0)), ("remove b", (0, -1))]
    insts = []
    for j in range(n + 1):
        base = (n - j, j)
        for what, (da, db) in moves:
            other = (base[0] + da, base[1] + db)
            if min(other) < 0:
                continue
            for mp in range(max(0, m - d), min(sum(other), m + d) + 1):
                insts.append(
                    two_value_instance(
                        f"{{a×{base[0]}, b×{base[1]}}} (m = {m}) vs {what} (m′ = {mp})",
                        srswor_distribution(base, m),
                        srswor_distribution(other, mp),
                        top,
                    )
                )
    return insts


def _verify_hook(
    params: Params, mechanism: Mechanism, pairs: str = "default", limit: int = 5000
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify`` (add-remove neighbours).

    The dataset at hand P has N records and sample size m = f(P); a neighbour P′ (one
    record added or removed) has any sample size m′ with |m′ − m| <= Δ and
    0 <= m′ <= |P′| (a deterministic f of sensitivity Δ can take any of them there).
    ``default``: P = {o1..oN} vs P ∪ {x}, and P = {o1..oN−1, x} vs P − {x}, for every m′;
    ``all``: also P = {a×(N − j), b×j} with an a or a b added or removed, samples as
    value multisets.
    """
    from ampcalc.schemes.exact import (  # lazy: start-up (bound)
        Plan,
        check_distinct_sizes,
        relations_of,
        sizes_for,
    )

    n, m, d = params.population, params.sample, params.sensitivity
    if d is None or m is None:
        raise ConditionError(
            "a vector allocation (sensitivity_l1) has no upper bound to verify; the "
            "tiny-instance enumeration covers one sample from the whole population"
        )
    if m + d > n + 1 and m - d < 0:
        raise ConditionError(
            f"a population of N = {n} cannot realise sensitivity Δ = {d} at m = {m}: a "
            f"neighbour's sample size lies in 0..{n + 1}, so neither m + Δ nor m − Δ is "
            "reachable (the lower bound Δε needs one of them); use a larger population"
        )
    check_distinct_sizes(n + 1, [min(m + d, n + 1)], limit)  # before listing sizes
    rel = relations_of(mechanism)
    add = range(max(0, m - d), min(n + 1, m + d) + 1)  # m′ for P ∪ {x}
    remove = range(max(0, m - d), min(n - 1, m + d) + 1)  # m′ for P − {x}
    sizes = sizes_for(rel, [m, *add, *remove])
    check_distinct_sizes(n + 1, sizes, limit)
    insts = _record_pairs(n, m, add, remove)
    if pairs == "all":
        insts += _value_pairs(n, m, d, max(sizes))
    return Plan(instances=tuple(insts), sizes=sizes, relations=rel)


SCHEME = Scheme(
    name="data-dependent-size",
    summary="sample of a data-dependent size f(P) (deterministic allocation, sensitivity Δ)",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.ADD_REMOVE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={"population": 14, "sample": 1, "sensitivity": 1},
    verify_plan=_verify_hook,
)
