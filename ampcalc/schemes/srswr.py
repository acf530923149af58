"""Sampling with replacement (bootstrap): m i.i.d. uniform draws from N records; pure ε.

Basis: the count-witness lower bound and the group-privacy relaxation upper bound
(ampcalc._groups), checked by exact LPs on 100 tiny instances in
shared/spec/exact-lp-checks.md (Conjecture 1: the LP equals V to 2e-15, also where
V > ε). This supersedes the spec's §2/§11.22 caution for pure ε; the (ε, δ) caution
stands, so δ > 0 is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ampcalc.math import groups as _groups
from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import DERIVATIONS, derivation
from ampcalc.schemes.assembly import OfPair, Theorem, assemble, relation_of
from ampcalc.schemes.base import Analysis, Field, Scheme

if TYPE_CHECKING:
    from ampcalc.schemes.exact import Plan

MAX_EXACT_INT = 2**53
BASIS = (derivation("§3.2"), derivation("§3.5"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """m records drawn independently and uniformly, with replacement, from N.

    A record may appear several times (a bootstrap resample: m = N). N is fixed and
    public; which records were drawn (and how often) is secret.

    Attributes:
        population: N >= 1.
        sample: m >= 1 draws (may exceed N).
    """

    population: int
    sample: int


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
        name="sample",
        kind="int",
        doc="number of draws m (with replacement; may exceed N)",
        required=True,
        low=1,
        high=MAX_EXACT_INT,
    ),
)


def lower_epsilon(
    eps_r: np.ndarray, *, population: int, sample: int, group: int = 1
) -> np.ndarray:
    """Lower bound on ε′ for sampling with replacement (proven; conjectured tight).

    Basis: count witness f(S) = c·e^{ε·#x(S)}; exact-lp-checks.md Conjecture 1.
    Neighbours: M ε-DP under replace-one; ε′ under replace-one of the population (a
        unit of g records replaced).
    Conditions: 1 <= g <= N, δ = 0.
    Formula: V = log E[e^{Jε}] = m·log(1 + (g/N)(e^ε − 1)), J ~ Binomial(m, g/N).
    Tightness: the exact LP equals it on every tested instance (to 2e-15).
    Numerics: m·amplification(g/N, ε), log1p/expm1; rounded down.
    """
    return numeric.round_down(sample * numeric.amplification_lower(group / population, eps_r))


def upper_epsilon(
    eps_r: np.ndarray, *, population: int, sample: int, group: int = 1
) -> np.ndarray:
    """Upper bound (a guarantee) on ε′ for sampling with replacement.

    Basis: group-privacy relaxation (ampcalc._groups module docstring): with h_k, g_k
        the acceptance probabilities averaged over the other draws given k copies of
        the differing record, h_k <= e^{kε}g_k, h_k <= e^{kε}g_0 and
        g_0e^{−kε} <= g_k <= g_0e^{kε}; g_k > g_0 never helps, so the box is
        g_k ∈ [g_0e^{−kε}, g_0] and the worst ratio Σp_k h_k / Σp_k g_k is a weighted mean
        of e^{kε}. Dinkelbach: weight e^{−kε} where e^{kε} < ratio, full weight above.
        If V <= ε every k >= 1 term is >= e^ε >= e^V, full weight everywhere is optimal
        and the ratio is E[e^{Jε}] = e^V.
    Neighbours: as ``lower_epsilon``.
    Conditions: 1 <= g <= N, δ = 0.
    Formula: V when V <= ε; else max over thresholds k* of
        [Σ_{k<k*} p_k + Σ_{k>=k*} p_k e^{kε}] / [Σ_{k<k*} p_k e^{−kε} + Σ_{k>=k*} p_k].
    Tightness: tight when V <= ε; above, proven but loose (exact LPs equal V).
    Numerics: window [0, tilted mode + 40 sd + 40] of the log pmf, log-concave tail
        bound added outward; relative slack 1e-10; rounded up.
    """
    eps_r = np.asarray(eps_r, dtype=float)
    shape = eps_r.shape
    eps_r = eps_r.reshape(-1)
    v = np.asarray(
        numeric.round_up(sample * numeric.amplification_upper(group / population, eps_r))
    )
    need = v > eps_r
    out = v.copy()
    if np.any(need):
        relax = _groups.binomial_relaxation_upper(sample, group / population, eps_r[need])
        out[need] = np.maximum(relax, v[need])
    shaped: np.ndarray = out.reshape(shape)
    return shaped


def inverse_epsilon(
    target: np.ndarray, *, population: int, sample: int, group: int = 1
) -> np.ndarray:
    """The ε_R at which the count-witness value V = m·log(1 + (g/N)(e^ε − 1)) equals T.

    Unrounded closed form: ε_R = log(1 + (e^{T/m} − 1)·N/g). Where it returns ε_R >= T
    (then V <= ε_R and V is the proven upper bound) it inverts ``upper_epsilon``;
    otherwise the certification root-finds the relaxation's bound.
    """
    t = np.asarray(target, dtype=float)
    with np.errstate(over="ignore"):
        out: np.ndarray = np.log1p(np.expm1(t / sample) / (group / population))
    return out


def without_replacement_same_rate(
    eps_r: np.ndarray, *, population: int, sample: int
) -> np.ndarray | None:
    """The srswor bound at the same m/N (for comparison; None when m > N)."""
    if sample > population:
        return None
    return numeric.amplification_upper(sample / population, eps_r)


RELATION = Neighbours.REPLACE_ONE
"""The relation the family's theorems take M's ε under (an add-remove M is
read under it by the assembly)."""


def theorem(params: Params, group: int = 1) -> Theorem:
    """The count-witness / relaxation result for this design, as data (in ε_R)."""
    n, m, g = params.population, params.sample, group
    return Theorem(
        name="sampling with replacement",
        basis=BASIS,
        relation=RELATION,
        guarantee=Neighbours.REPLACE_ONE,
        upper=upper_epsilon,
        lower=lower_epsilon,
        inverse=inverse_epsilon,
        params={"population": n, "sample": m, "group": g},
        conditions=(
            f"1 <= group_size <= population: 1 <= {g} <= {n}",
            f"{m} independent uniform draws with replacement; N = {n} fixed and public; the "
            "sample is secret",
        ),
        tight=None,
        pure=True,
        group_size=g,
        relation_words=" on samples of m draws",
    )


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one with-replacement design (see the bound functions)."""
    n, m = params.population, params.sample
    g = mechanism.group_size
    if guarantee is not Neighbours.REPLACE_ONE:
        raise ConditionError(
            "sampling with replacement: the guarantee holds for replace-one neighbours of a "
            "population of fixed, public size N; use `guarantee: replace-one`."
        )
    if mechanism.delta > 0:
        raise ConditionError(
            "srswr: M has δ > 0, and no verified (ε, δ) bound exists for sampling with "
            "replacement — log(1 + (1 − (1 − 1/N)^m)(e^ε − 1)) is not one (exact LPs exceed "
            f"it for every m >= 2, {DERIVATIONS}, §3). Use a pure ε-DP mechanism (δ = 0)."
        )
    if g > n:
        raise ConditionError(
            f"group_size {g} is larger than population {n}; expected 1 <= group_size <= population"
        )
    thm = theorem(params, g)
    rel = relation_of(mechanism, thm)
    # the warnings describe the declared design, at the declared ε
    er0 = rel.epsilon(np.asarray(mechanism.epsilon, dtype=float))
    lower = thm.bind().lower
    assert not isinstance(lower, OfPair)  # a formula of ε_R
    v0 = float(lower(er0)) if lower is not None else 0.0
    warnings: list[str] = []
    notes: list[str] = []
    details: dict[str, Any] = {"population": n, "sample": m, "group_size": g}
    details_at: Callable[[np.ndarray], Mapping[str, Any]] | None = None
    if g > 1:
        details["conservative_rule"] = None  # no valid simpler rule with replacement
    if g == 1:
        wor = without_replacement_same_rate(er0, population=n, sample=m)
        if wor is not None and v0 > float(wor):
            warnings.append(
                f"the without-replacement formula at the same m/N gives {float(wor):.6g}, "
                f"below this design's proven lower bound {v0:.6g}: a record drawn twice "
                "counts twice, so accounting a bootstrap sample as `srswor` is unsound."
            )
        eps_of = rel.epsilon

        def details_at(eps: np.ndarray) -> Mapping[str, Any]:
            return {
                "without_replacement_same_rate": without_replacement_same_rate(
                    eps_of(eps), population=n, sample=m
                )
            }

    if v0 > float(er0):
        notes.append(
            "E[e^{Jε}] exceeds M's own ε here: the upper bound is the group-privacy "
            "relaxation (proven, may be loose); it is conjectured tight at the lower bound "
            "(exact LPs on tiny instances equal the lower bound to 2e-15)."
        )
        if g == 1:
            warnings.append("sampling with replacement at this size degrades privacy.")
    if g > 1:
        notes.append(
            f"group of {g} records: ε′ = log E[e^{{Jε}}], J ~ Binomial(m, g/N) — the count "
            "witness proves it as a lower bound and the relaxation bounds it above; "
            "verified with `ampcalc verify` on tiny instances, not in a paper."
        )
    return assemble(
        thm,
        mechanism,
        details=details,
        details_at=details_at,
        warnings=tuple(warnings),
        notes=tuple(notes),
    )


def _verify_hook(*args: Any, **kwargs: Any) -> Plan:
    from ampcalc.schemes.exact import srswr_instance  # lazy: start-up (bound)

    return srswr_instance(*args, **kwargs)


SCHEME = Scheme(
    name="srswr",
    summary="m draws with replacement from N records (bootstrap); pure ε only",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.REPLACE_ONE,),
    basis=BASIS,
    analyse=analyse,
    example={"population": 10000, "sample": 100},
    supports_group_size=True,
    verify_plan=_verify_hook,
)
