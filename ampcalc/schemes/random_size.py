"""Random, data-independent sample size: m ~ t on {0..N}, then m records without replacement.

The size distribution and its ``sampling.size`` block live in ``_size_distribution``, the
tilted mean E_t̃[m] and its enclosure in ``_size_tilting``; this module states the theorem.

Basis: Bun et al., Theorem 3.1 (proof in Appendix B), with the
correction of spec §3 (bun-drechsler-hu-formulas.md): the tilt uses M's add-remove
ε_D and the amplification its replace-one ε_R (default 2ε_D). The paper's formula is
the special case ε_D = ε_R = ε (``neighbours: both``, e.g. a count query).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.references import BUN_2022, DERIVATIONS, cite, derivation
from ampcalc.schemes import poisson
from ampcalc.schemes._size_distribution import (
    KINDS as KINDS,
)
from ampcalc.schemes._size_distribution import (
    MAX_EXACT_INT,
    ULP,
    parse_size,
    size_pmf,
    size_support,
)
from ampcalc.schemes._size_distribution import (
    SizeDistribution as SizeDistribution,
)
from ampcalc.schemes._size_tilting import tilted_mean_bounds as tilted_mean_bounds
from ampcalc.schemes.assembly import OfPair, Refusal, Refuses, Theorem, assemble
from ampcalc.schemes.base import Analysis, Field, Scheme

BASIS = (cite(BUN_2022, "Theorem 3.1"), derivation("§2.1"))


@dataclass(frozen=True, eq=False, kw_only=True)
class Params:
    """A sample of random size: draw m ~ t (independent of the data), then m of N
    records uniformly without replacement. N is fixed and public; m and the sample
    are secret (only M's output on the sample is released).

    Attributes:
        population: N >= 1.
        size: the distribution t of m on {0..N}.
    """

    population: int
    size: SizeDistribution


FIELDS = (
    Field(
        name="population",
        kind="int",
        doc="population size N (public)",
        required=True,
        low=1,
        high=MAX_EXACT_INT,
    ),
    Field(
        name="size",
        kind="any",
        doc="distribution of the sample size: {distribution: point|binomial|poisson|"
        "uniform|normal|pmf, ...}",
        required=True,
    ),
)


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Build ``Params``, validating the nested ``size`` block."""
    n = values["population"]
    return Params(population=n, size=parse_size(values["size"], n, reader))


# --------------------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------------------


def upper_epsilon(
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, params: Params
) -> np.ndarray:
    """Upper bound (a guarantee) on ε′ for a random, data-independent sample size.

    Basis: Bun et al., Theorem 3.1 (Appendix B), corrected per spec §3.
    Neighbours: M is ε_D-DP under add-remove (so that the secret size is protected)
        and ε_R-DP under replace-one; the bound holds under replace-one on populations
        of fixed, public size N.
    Conditions: t does not depend on the data; ε_R <= 2ε_D (default ε_R = 2ε_D).
    Formula: ε′ = A(E_t̃[m]/N, ε_R) = log(1 + (E_t̃[m]/N)(e^{ε_R} − 1)), t̃(m) ∝ e^{ε_D m}t(m).
        The printed theorem uses ε for both; with M only ε-DP under add-remove that is
        unsound (spec §3 counterexample: 1.4338 > 0.6201).
    Tightness: equal to ``lower_epsilon`` for a point mass (a srswor), in every relation;
        otherwise within the e^ε − 1 vs 1 − e^{−ε} gap when ε_R = ε_D.
    Numerics: the enclosure's upper end of E_t̃[m]; kernel rounded up.
    """
    _, _, e_hi, _ = tilted_mean_bounds(params.size, params.population, eps_add_remove)
    q = np.minimum(e_hi / params.population, 1.0)
    # q = 0 (the sample is always empty): the output ignores the data, ε′ = 0
    safe = np.where(q > 0, q, 1.0)
    return np.where(q > 0, numeric.amplification_upper(safe, eps_replace_one), 0.0)


def _smallest_size(dist: SizeDistribution, n: int) -> float:
    """The smallest size of positive probability: a lower bound on E[m] under any tilt."""
    if dist.kind == "point":
        assert dist.value is not None
        return float(dist.value)
    if dist.kind == "binomial":
        assert dist.p is not None
        return float(n) if dist.p == 1.0 else 0.0
    if dist.kind == "uniform":
        assert dist.low is not None
        return float(dist.low)
    if dist.kind == "pmf":
        assert dist.sizes is not None
        return float(dist.sizes[0])  # sorted by parse_size
    return 0.0  # poisson, normal: every size has positive weight


def lower_epsilon(
    eps_add_remove: np.ndarray,
    eps_replace_one: np.ndarray,
    *,
    params: Params,
    untilted_lo: float | None = None,
) -> np.ndarray:
    """Lower bound on ε′: some M and replace-one pair lose at least this much.

    Basis: Bun et al., Theorem 3.1 (lower half), generalised to ε_D ≠ ε_R,
        and the same witness read at its other tail (docs/random-size.md).
    Witness: P = N records of value a, P′ replaces one with a − c, c = ε_R/ε_D (<= 2),
        M(S) = Σx + Lap(1/ε_D) with a ∈ [c − 1, 1]: its add-remove sensitivity is
        max(|a|, |a − c|) <= 1 and its replace-one sensitivity c, so M is ε_D-DP under
        add-remove and ε_R-DP under replace-one. Below every possible sum the density
        ratio is constant and exact:
        * a = 1, outputs above every sum: −log(1 − (E_{t(ε_D)}[m]/N)(1 − e^{−ε_R}));
        * a = c − 1, outputs below every sum: A(E_{t(ε_D − ε_R)}[m]/N, ε_R),
        with t(s)(m) ∝ e^{sm} t(m). The bound is the larger of the two. The second is
        the simple-random-sample witness: for a point mass it equals the upper bound
        A(m/N, ε_R) in every relation (tight). A negative tilt (ε_R > ε_D, e.g. the
        default ε_R = 2ε_D) is bounded below by the smallest size of positive
        probability (exact for a point mass), which keeps the bound increasing in ε.
    Numerics: the enclosures' lower ends of the tilted means; kernels rounded down.
        ``untilted_lo``: the lower end of E_t[m] when the caller has it (``analyse``
        computes it once for the details). ε_D = +∞ (M's add-remove ε unknown) is
        accepted for a point mass, whose tilted means do not depend on it.
    """
    e_d = np.asarray(eps_add_remove, dtype=float)
    e_r = np.asarray(eps_replace_one, dtype=float)
    e_d, e_r = np.broadcast_arrays(e_d, e_r)
    _, e_lo, _, log_gap_hi = tilted_mean_bounds(params.size, params.population, e_d)
    n = params.population
    q = np.minimum(e_lo / n, 1.0)
    # 1 − q(1 − e^{−ε_R}) = g(1 − e^{−ε_R}) + e^{−ε_R}, g = (N − E)/N: no cancellation
    # when E is near N (the q-form would lose the gap to rounding); in log space
    log_g = np.minimum(log_gap_hi - math.log(n), 0.0)
    with np.errstate(divide="ignore"):
        log_x = np.logaddexp(log_g + np.log(-np.expm1(-e_r)), -e_r)
    gap_form = -(log_x + 4 * ULP * np.abs(log_x))
    near = q * -np.expm1(-e_r) > 0.5  # x < 1/2: −log(x) is well conditioned
    upper_tail = numeric.round_down(np.where(near, gap_form, numeric.neg_log1m(q, e_r)))
    # the other tail: tilt at ε_D − ε_R (untilted under `both`: computed once by analyse)
    tilt = e_d - e_r
    e_lo2 = np.empty(tilt.shape)
    zero = tilt == 0.0
    if np.any(zero):
        if untilted_lo is None:
            untilted_lo = float(tilted_mean_bounds(params.size, n, 0.0)[1])
        e_lo2[zero] = untilted_lo
    pos = tilt > 0.0
    if np.any(pos):
        e_lo2[pos] = tilted_mean_bounds(params.size, n, tilt[pos])[1]
    # a negative tilt: the smallest size. Not the tilted mean itself: E_{t(ε_D − ε_R)}
    # falls as ε grows and the loss read at it can then fall too (a pmf on 0..12 at
    # ε ≈ 3.6 with ε_R = 1.79ε), while a bound must not; A(m_min/N, ε_R) rises with ε
    neg = tilt < 0.0
    if np.any(neg):
        e_lo2[neg] = _smallest_size(params.size, n)
    q2 = np.minimum(e_lo2 / n, 1.0)
    safe = np.where(q2 > 0, q2, 1.0)
    lower_tail = np.where(q2 > 0, numeric.amplification_lower(safe, e_r), 0.0)
    out: np.ndarray = np.maximum(upper_tail, lower_tail)
    return out


def random_size_conditions(params: Params) -> tuple[str, ...]:
    """Theorem 3.1's conditions on the design, with its values."""
    return (
        "the size distribution t does not depend on the data; m and the sample are secret",
        f"the population size N = {params.population} is fixed and public",
    )


REFUSES_GUARANTEE = (
    f"Theorem 3.1 ({BUN_2022}) holds for replace-one neighbours of a "
    "population of fixed, public size N; no theorem covers an add-remove guarantee."
)
REFUSES_DELTA = (
    f"Theorem 3.1 ({BUN_2022}) is stated for pure ε-DP mechanisms "
    "(δ = 0); no δ′ follows from it for δ > 0."
)
REFUSES_REPLACE_ONE_ONLY = (
    f"Theorem 3.1 ({BUN_2022}, footnote 1) needs M to be ε-DP under "
    "add-remove so that the secret sample size is protected; `neighbours: "
    "replace-one` leaves M's add-remove ε unknown. Declare `neighbours: add-remove` "
    "or `both`."
)


def theorem(params: Params, *, untilted_lo: float | None = None) -> Theorem:
    """Theorem 3.1 (corrected) for this design, as data: tilt at ε_D, amplify at ε_R.

    A point mass hides nothing in its size (the design is a srswor), so M's add-remove ε
    is not needed there: where it is unknown ε_D = +∞ enters, which a point mass
    ignores. ``untilted_lo``: the lower end of E_t[m] (``lower_epsilon``).
    """
    refusals = [
        Refusal(Refuses.GUARANTEE, REFUSES_GUARANTEE),
        Refusal(Refuses.DELTA, REFUSES_DELTA),
    ]
    if params.size.kind != "point":
        refusals.append(Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY))
    lo = untilted_lo
    return Theorem(
        name="Theorem 3.1",
        basis=BASIS,
        relation=Neighbours.BOTH,
        guarantee=Neighbours.REPLACE_ONE,
        upper=OfPair(lambda e_d, e_r: upper_epsilon(e_d, e_r, params=params)),
        lower=OfPair(lambda e_d, e_r: lower_epsilon(e_d, e_r, params=params, untilted_lo=lo)),
        conditions=random_size_conditions(params),
        tight=None,
        refusals=tuple(refusals),
    )


def _size_details(e_d: np.ndarray, e_r: np.ndarray, *, params: Params) -> Mapping[str, Any]:
    """The ε-dependent details: the tilted mean size at ε_D, and ε_R."""
    return {
        "tilted_mean_size": tilted_mean_bounds(params.size, params.population, e_d)[0],
        "epsilon_replace_one": e_r,
    }


def binomial_as_poisson(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """A binomial size m ~ Binomial(N, p) over the N records the sample is drawn from,
    then m of them without replacement, is Poisson sampling with rate p: the
    probability of a given sample S is C(N, |S|)p^{|S|}(1 − p)^{N − |S|}/C(N, |S|) =
    p^{|S|}(1 − p)^{N − |S|}, each record kept independently with probability p. So the
    Poisson family's replace-one results hold: exact for pure ε
    (``poisson.replace_one_exact``), and δ > 0 is covered too."""
    p = params.size.p
    assert p is not None and p > 0.0  # ``analyse`` routes only p > 0 here
    conditions = (
        *random_size_conditions(params),
        f"the binomial's n is the population N = {params.population} the sample is drawn "
        "from, so the sample is a Poisson sample with rate p",
    )
    base = poisson.replace_one_analysis(p, mechanism, conditions=conditions)
    note = (
        f"binomial size m ~ Binomial(N, p) with N the population, then m of the N records "
        f"without replacement, is Poisson sampling with rate p = {p:g} (each sample S has "
        "probability p^|S|(1 − p)^(N − |S|)): the Poisson replace-one results apply "
        "instead of Theorem 3.1."
    )
    return dataclasses.replace(
        base,
        notes=(note, *base.notes),
        warnings=(*base.warnings, SIZE_WARNING),
        details={
            **base.details,
            "distribution": "binomial",
            "population": params.population,
            "mean_size": float(p * params.population),
        },
    )


#: where the bounds of a random size do not meet (``tightness`` in the JSON says by how much)
GAP_NOTE = (
    "no bound is known that meets the lower one for a random size in general (the upper is "
    "Theorem 3.1's tilted mean, the lower its witnesses; `tightness` gives the gap): on the "
    "exact programme's tiny instances the lower bound met the exact value of every pure-ε "
    "design and the upper exceeded it by up to 2.64 nats (benchmarks/README.md, "
    "Tightness); `ampcalc verify` gives the exact value of a tiny design."
)

SIZE_WARNING = (
    "the size distribution must not depend on the data (nor may it be chosen after "
    "seeing it); a data-dependent size is the `data-dependent-size` scheme"
)


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one random-size design (see ``upper_epsilon`` for the theorem)."""
    dist = params.size
    n = params.population
    if (
        dist.kind == "binomial"
        and dist.p is not None
        and dist.p > 0.0
        and mechanism.epsilon_add_remove_known()
    ):
        return binomial_as_poisson(params, mechanism, guarantee)
    est0, lo0, _, _ = tilted_mean_bounds(dist, n, 0.0)
    warnings = [SIZE_WARNING]
    notes: list[str] = []
    if mechanism.neighbours is Neighbours.ADD_REMOVE:
        notes.append(
            f"correction to {BUN_2022}, Theorem 3.1 ({DERIVATIONS}, §2.1): the printed bound "
            "A(E_t̃[m]/N, ε) is unsound when M is ε-DP only under add-remove (counterexample: "
            "Σx with x ∈ {−1, 1}, point mass at N/2, ε = 1 loses 1.4338 > 0.6201). The tilt "
            f"uses ε_D = ε and the amplification M's replace-one ε_R = "
            f"{mechanism.effective_epsilon_replace_one():g}"
            + (" (default 2ε)" if mechanism.epsilon_replace_one is None else "")
            + ". If M is ε-DP under both relations (e.g. a count query), declare "
            "`neighbours: both` to recover the paper's formula."
        )
    elif mechanism.neighbours is Neighbours.BOTH:
        notes.append(
            "M is declared ε-DP under both relations: the paper's formula A(E_t̃[m]/N, ε) "
            "applies (tilt and amplification at ε)."
        )
    if dist.kind == "normal":
        notes.append(
            "normal size: t(m) ∝ exp(−(m − μ)²/(2σ²)) at the integers 0..N (normal density "
            "at the integers, truncated to [0, N]; not CDF differences over unit intervals)."
        )
    if dist.kind == "poisson":
        notes.append("poisson size: Poisson(λ) truncated to [0, N] and renormalised.")
    if dist.kind != "point":
        notes.append(GAP_NOTE)
    details: dict[str, Any] = {
        "distribution": dist.kind,
        "population": n,
        "mean_size": float(est0),  # E_t[m]
    }
    if dist.kind == "pmf":
        assert dist.sizes is not None  # parse_size sets the support of a pmf
        details["pmf_support"] = int(dist.sizes.size)
        details["pmf_source"] = dist.source
    return assemble(
        theorem(params, untilted_lo=float(lo0)),
        mechanism,
        guarantee=guarantee,
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
        details_both=partial(_size_details, params=params),
    )


# --------------------------------------------------------------------------------------
# ``ampcalc verify``: exact sample distributions of tiny instances
# --------------------------------------------------------------------------------------


def size_mixture_plan(
    n: int, probs: dict[int, float], mechanism: Mechanism, pairs: str, limit: int
) -> Any:
    """Plan of a srswor sample of N records whose size is drawn from ``probs`` first.

    ``default``: P = {N − 1 others, x} vs P′ = {N − 1 others, x′} (replace-one, fixed N;
    symmetric under x ↔ x′). ``all``: also {a×(N − j), b×j} vs {a×(N − j − 1), b×(j + 1)}
    for j = 0..N − 1, samples as value multisets.
    """
    from ampcalc.schemes.exact import (  # lazy: start-up (bound)
        Instance,
        Plan,
        check_distinct_sizes,
        relations_of,
        sizes_for,
        srswor_size_mixture,
    )

    rel = relations_of(mechanism)
    sizes = sizes_for(rel, probs)
    check_distinct_sizes(n + 1, sizes, limit)
    syms = (*(f"o{i + 1}" for i in range(n - 1)), "x", "x'")
    others = (1,) * (n - 1)
    insts = [
        Instance(
            label=f"P = {{{n - 1} others, x}} vs P′ = {{{n - 1} others, x′}}",
            symbols=syms,
            caps=(1,) * len(syms),
            p=srswor_size_mixture((*others, 1, 0), probs),
            p_prime=srswor_size_mixture((*others, 0, 1), probs),
            symmetric=True,
        )
    ]
    if pairs == "all":
        top = max(sizes)
        for j in range(n):
            insts.append(
                Instance(
                    label=f"{{a×{n - j}, b×{j}}} vs {{a×{n - j - 1}, b×{j + 1}}}",
                    symbols=("a", "b"),
                    caps=(top, top),
                    p=srswor_size_mixture((n - j, j), probs),
                    p_prime=srswor_size_mixture((n - j - 1, j + 1), probs),
                )
            )
    return Plan(instances=tuple(insts), sizes=sizes, relations=rel)


def _verify_hook(
    params: Params, mechanism: Mechanism, pairs: str = "default", limit: int = 5000
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify``: a mixture of srswor over sizes."""
    from ampcalc.schemes.exact import (  # lazy: start-up (bound)
        check_distinct_sizes,
        relations_of,
        sizes_for,
    )

    support = size_support(params.size, params.population)
    # refuse a huge domain before listing sizes or computing the pmf: one size s >= 1
    # among N + 1 records already gives C(N + 1, s) >= N + 1 samples
    check_distinct_sizes(params.population + 1, [support[-1]], limit)  # sorted
    check_distinct_sizes(params.population + 1, sizes_for(relations_of(mechanism), support), limit)
    return size_mixture_plan(
        params.population, size_pmf(params.size, params.population), mechanism, pairs, limit
    )


RELATION = (
    "add-remove (ε_D, tilt) and replace-one (ε_R = epsilon_replace_one or 2ε, "
    "amplification); `both` gives the paper's formula"
)
"""In words: the theorem takes M's ε under both relations, each for its own part."""


SCHEME = Scheme(
    name="random-size",
    summary="sample size m drawn from a data-independent distribution, then m of N "
    "without replacement",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.REPLACE_ONE,),
    basis=BASIS,
    analyse=analyse,
    example={"population": 10000, "size": {"distribution": "normal", "mean": 5000, "sd": 800}},
    parse_params=parse_params,
    verify_plan=_verify_hook,
)
