"""Proportional allocation with randomised rounding: Bun et al., Theorem 7.2 (one stratum: Theorem
4.3; proof in Appendices C and E), its exact
inverse (spec §5.1), the census case (rate 1) and one stratum under replace-one (a
mixture of simple random samples)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import (
    BUN_2022,
    DERIVATIONS,
    cite,
    derivation,
)
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.assembly import (
    InScale,
    OfPair,
    Refusal,
    Refuses,
    Scale,
    Theorem,
    Witness,
    assemble,
    certify_above,
    check_refusals,
    epsilons,
)
from ampcalc.schemes.base import Analysis
from ampcalc.schemes.stratified.common import add_remove_refusal, per_stratum, scalar_eps
from ampcalc.schemes.stratified.params import Params
from ampcalc.schemes.stratified.rounding_exact import stratum_exact
from ampcalc.schemes.stratified.size_mixture import SizeMixture, size_mixture

BASIS_RANDOMIZED = (
    cite(BUN_2022, "Theorem 7.2"),
    cite(BUN_2022, "Theorem 4.3"),
    cite(BUN_2022, "Appendix E"),
)

EXACT_BASIS = derivation("§10.1")
"""The exact per-stratum loss at the stated sizes (``rounding_exact``)."""


REPLACE_ONE_BASIS = derivation("§1.3")


REPLACE_ONE_NOTE = (
    f"replace-one guarantee: derived ({DERIVATIONS}, §1.3), not proved by the papers: a "
    "replacement "
    "is a deletion in one stratum plus an addition in the same or another stratum, so "
    "ε′ <= ε′_s + ε′_{s′} <= 2·max_s ε′_s. Definition 7.1's max{ε′_s, ε′_{s′}} does not "
    "follow (stratified Poisson with rates 0.5 and 0.01: a replacement inside the 0.5 "
    "stratum exceeds the sum of the two largest per-stratum values)."
)


def _kernel(q: Any, x: Any) -> np.ndarray:
    """log(1 + q(e^x − 1)) for any q > 0 (also q > 1, as Theorem 4.3's A(2r, ·) needs).

    ``log1p(q·expm1(x))`` for x <= 700; above, the overflow-free
    ``x + log q + log1p((1 − q)/q · e^{−x})``.
    """
    q, x = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(x, dtype=float))
    out = np.empty(q.shape, dtype=float)
    small = x <= numeric.LOG_SPACE_FROM
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out[small] = np.log1p(q[small] * np.expm1(x[small]))
        big = ~small
        if np.any(big):
            qb, xb = q[big], x[big]
            out[big] = xb + np.log(qb) + np.log1p((1.0 - qb) / qb * np.exp(-xb))
    return out


def _slack(q: Any, x: Any) -> np.ndarray:
    q, x = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(x, dtype=float))
    scale = np.maximum(np.abs(x), np.abs(np.log(q)))
    return np.where(x > numeric.LOG_SPACE_FROM, 8.0 * np.spacing(scale), 0.0)


def theorem_4_3(a: Any, b: Any, eps: Any) -> np.ndarray:
    """Upper bound (a guarantee) on one stratum's ε′ under proportional allocation with
    randomised rounding.

    Basis: Bun et al., Theorem 4.3 (one stratum), Theorem 7.2 (strata,
        proof in Appendix E); the tighter form is from the proof of Theorem 4.3 (App. C).
    Neighbours: M is ε-DP under add-remove; ε′ holds for adding or removing one record
        in the stratum (stratified add-remove DP, Definition 7.1).
    Conditions: r·N_h >= 1 (checked by ``analyse``); M pure ε-DP.
    Formula: ε′ = log(1 + a(e^{2ε} − 1)) + log(1 + b(e^{2ε} − 1)), with a = 2r, b = r
        (Theorem 4.3) or a = r + 1/N_h, b = r (size-aware, from the proof: |P| + 1 = N_h
        for the smaller dataset of the worst pair). a may exceed 1: read as the formula.
    Tightness: not tight (a lower bound is A(r, ε), see ``lower_epsilon``).
    Numerics: log1p/expm1 up to 2ε = 700, then log-space (``_kernel``); rounded up.
    """
    x = 2.0 * np.asarray(eps, dtype=float)
    raw = _kernel(a, x) + _kernel(b, x) + _slack(a, x) + _slack(b, x)
    return numeric.round_up(raw)


def theorem_4_3_inverse(a: Any, b: Any, target: Any) -> np.ndarray:
    """The ε with (1 + a·u)(1 + b·u) = e^{T}, u = e^{2ε} − 1: exact closed form (spec §5.1).

    u = 2(e^T − 1) / ((a + b) + √((a + b)² + 4ab(e^T − 1))) (the stable root of
    ab·u² + (a + b)u + 1 − e^T = 0), ε = ½·log1p(u); for T > 700 the same in logs.
    Not rounded: callers round down and certify against ``theorem_4_3``.
    """
    a, b, t = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, target)))
    s, p = a + b, a * b
    out = np.empty(t.shape, dtype=float)
    small = t <= numeric.LOG_SPACE_FROM
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        em = np.expm1(t[small])
        ss, ps = s[small], p[small]
        u = 2.0 * em / (ss + np.sqrt(ss * ss + 4.0 * ps * em))
        out[small] = 0.5 * np.log1p(u)
        big = ~small
        if np.any(big):
            tb, sb, pb = t[big], s[big], p[big]
            et = np.exp(-tb)
            log_den = 0.5 * tb + np.log(
                sb * np.exp(-0.5 * tb) + np.sqrt(sb * sb * et + 4.0 * pb * (-np.expm1(-tb)))
            )
            log_u = np.log(2.0) + tb + np.log1p(-et) - log_den
            out[big] = 0.5 * (log_u + np.log1p(np.exp(-log_u)))
    return out


def lower_epsilon(rate: Any, eps: Any) -> np.ndarray:
    """Lower bound on one stratum's ε′ (randomised rounding or Poisson): A(r, ε).

    Witness (derived): M = randomised response (ε) on "the added record x is in the
    sample", ε-DP under add-remove and under replace-one. Under randomised rounding x
    is sampled with probability exactly E[m′]/(N + 1) = r; under Poisson with r. So
    ε′ >= log(1 + r(e^ε − 1)) for the pair (P, P ∪ {x}). Tight for Poisson (Bun et al. 2020
    Lemma 3.3). Rounded down.
    """
    return numeric.amplification_lower(rate, eps)


def _check_rate_condition(p: Params, rates: np.ndarray) -> None:
    bad = rates * p.strata.size < 1.0
    if bad.any():
        idx = np.flatnonzero(bad)
        i = int(idx[0])
        more = f" (and {idx.size - 1} more strata)" if idx.size > 1 else ""
        raise ConditionError(
            f"Theorem 7.2 ({BUN_2022}): needs r·|S_h| >= 1 in every stratum; "
            f"stratum {p.strata.names[i]!r} has r·N_h = {rates[i]:g}·{int(p.strata.size[i])} "
            f"= {rates[i] * p.strata.size[i]:.6g} < 1{more}. Raise the rate or merge the "
            "small strata."
        )


@dataclass(eq=False)
class Rates:
    """What every randomised-rounding result reads from the design.

    Attributes:
        rate: r_h per stratum. size: N_h (float).
        a: Theorem 4.3's first coefficient per stratum: 2r_h, or r_h + 1/N_h (size-aware).
        census: r_h = 1: the stratum is sampled whole (its ε′_h is M's ε exactly).
        front_a, front_b: the Pareto front of (a, r) over the other strata (the largest
            per-stratum bound is attained there).
        r_max: the largest rate.
    """

    rate: np.ndarray
    size: np.ndarray
    a: np.ndarray
    census: np.ndarray
    front_a: np.ndarray
    front_b: np.ndarray
    r_max: float
    ratio: float = 2.0  # M's ε_R / ε (Mechanism.replace_one_ratio), for per-stratum rows

    @classmethod
    def of(cls, p: Params) -> Rates:
        r = p.rates()
        n = p.strata.size.astype(float)
        a = r + 1.0 / n if p.size_aware else 2.0 * r
        census = r >= 1.0
        fa, fb = alloc.pareto_front(a[~census], r[~census])
        return cls(r, n, a, census, fa, fb, float(r.max()))

    @functools.cached_property
    def distinct(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distinct (rate, size) pairs and each stratum's index among them."""
        pairs = np.stack([self.rate, self.size], axis=1)
        uniq, back = np.unique(pairs, axis=0, return_inverse=True)
        return uniq[:, 0], uniq[:, 1], np.asarray(back).reshape(-1)

    @property
    def all_census(self) -> bool:
        return bool(self.census.all())

    @property
    def any_census(self) -> bool:
        return bool(self.census.any())


# --- formulas (M's ε as the array argument, the design as keywords) ---------------------


def exact_strata(ed: Any, er: Any, *, d: Rates) -> dict[str, np.ndarray]:
    """Each stratum's exact loss at the stated sizes (``rounding_exact.stratum_exact``;
    M's ε_D exactly in a census stratum), shape (k, *ε.shape): ``lower``/``upper`` the
    worse direction, ``add``/``remove`` the upper bound of each direction."""
    e_d = np.asarray(ed, dtype=float)
    e_r = np.broadcast_to(np.asarray(er, dtype=float), e_d.shape)
    # strata of one rate and size have one value: evaluate each pair once
    rate, size, back = d.distinct
    res = stratum_exact(per_stratum(rate, e_d), per_stratum(size, e_d), e_d, e_r)
    cc = per_stratum(d.census, e_d) > 0
    return {
        "lower": np.where(cc, e_d, res["lower"][back]),
        "upper": np.where(cc, e_d, res["upper"][back]),
        "add": np.where(cc, e_d, res["add"][1][back]),
        "remove": np.where(cc, e_d, res["remove"][1][back]),
    }


def stratum_upper(eps: Any, *, d: Rates) -> np.ndarray:
    """Each stratum's exact ε′_h at declared ε (ε_R = ratio·ε), shape (k, *ε.shape)."""
    e = np.asarray(eps, dtype=float)
    return exact_strata(e, d.ratio * e, d=d)["upper"]


def exact_upper(ed: Any, er: Any, *, d: Rates) -> np.ndarray:
    """The stratified add-remove ε′ = max_h of each stratum's exact loss."""
    out: np.ndarray = exact_strata(ed, er, d=d)["upper"].max(axis=0)
    return out


def exact_lower(ed: Any, er: Any, *, d: Rates) -> np.ndarray:
    """The same value rounded down (the maximising mechanism attains it)."""
    out: np.ndarray = exact_strata(ed, er, d=d)["lower"].max(axis=0)
    return out


def exact_replace_one(ed: Any, er: Any, *, d: Rates) -> np.ndarray:
    """Replace-one: a removal from one stratum and an addition to one (the same or
    another), each at most its exact loss: max_h remove_h + max_h add_h."""
    s = exact_strata(ed, er, d=d)
    out: np.ndarray = numeric.round_up(s["remove"].max(axis=0) + s["add"].max(axis=0))
    return out


def upper_epsilon(eps: Any, *, d: Rates) -> np.ndarray:
    """Theorem 7.2: the stratified add-remove ε′ = max_h ε′_h (over the Pareto front)."""
    e = np.asarray(eps, dtype=float)
    parts = [e.copy()] if d.any_census else []
    if d.front_a.size:
        shape = (-1,) + (1,) * e.ndim
        parts.append(
            theorem_4_3(d.front_a.reshape(shape), d.front_b.reshape(shape), e).max(axis=0)
        )
    worst: np.ndarray = functools.reduce(np.maximum, parts)
    return worst


def upper_inverse(target: Any, *, d: Rates) -> np.ndarray:
    """The ε with ``upper_epsilon(ε) = target``: the smallest per-stratum closed form
    (spec §5.1); not rounded."""
    t = np.asarray(target, dtype=float)
    shape = (-1,) + (1,) * t.ndim
    guess: np.ndarray = t.copy()
    if d.front_a.size:
        inv = theorem_4_3_inverse(d.front_a.reshape(shape), d.front_b.reshape(shape), t).min(
            axis=0
        )
        guess = np.minimum(guess, inv) if d.any_census else inv
    return guess


def lower_inverse(target: Any, *, d: Rates) -> np.ndarray:
    """The ε with A(r_max, ε) = target, rounded up (the witness's inverse)."""
    return numeric.round_up(numeric.amplification_inverse(d.r_max, target))


# --- results, one theorem record per (result, guarantee) ----------------------------------


def _add_remove_eps(ed: np.ndarray, er: np.ndarray) -> np.ndarray:
    """M's own ε under add-remove (a census under an add-remove guarantee)."""
    out: np.ndarray = ed.copy()
    return out


def _replace_one_eps(ed: np.ndarray, er: np.ndarray) -> np.ndarray:
    """M's own ε under replace-one (a census under a replace-one guarantee)."""
    return er


def _identity(target: np.ndarray) -> np.ndarray:
    return target


def census_theorem(d: Rates, guarantee: Neighbours) -> Theorem:
    """Rate 1 everywhere: the sample is the population, M∘C = M, so ε′ is M's own ε under
    the guarantee's relation, exactly."""
    if guarantee is Neighbours.REPLACE_ONE:
        return Theorem(
            name="a census",
            basis=BASIS_RANDOMIZED,
            relation=Neighbours.BOTH,
            guarantee=guarantee,
            upper=OfPair(_replace_one_eps),
            lower=OfPair(_replace_one_eps),
            inverse=InScale(Scale.REPLACE_ONE, _identity),
            tight=None,
        )
    return Theorem(
        name="a census",
        basis=BASIS_RANDOMIZED,
        relation=Neighbours.BOTH,
        guarantee=guarantee,
        upper=OfPair(_add_remove_eps),
        lower=OfPair(_add_remove_eps),
        inverse=InScale(Scale.DECLARED, _identity),
        lower_inverse=InScale(Scale.DECLARED, functools.partial(lower_inverse, d=d)),
        tight=None,
    )


def exact_inverse(target: Any, *, d: Rates) -> np.ndarray:
    """The declared ε where the exact upper bound reaches ``target`` (bisection between
    Theorem 7.2's closed-form inverse and the randomised-response witness's); the
    assembly certifies it."""
    t = np.asarray(target, dtype=float)
    lo = np.maximum(numeric.round_down(upper_inverse(t, d=d)) * 0.5, 1e-300)
    hi = np.maximum(numeric.amplification_inverse(d.r_max, t), lo)

    def f(e: np.ndarray) -> np.ndarray:
        return exact_upper(e, d.ratio * e, d=d)

    return numeric.largest_feasible(f, t, lo, hi)


def exact_lower_inverse(target: Any, *, d: Rates) -> np.ndarray:
    """The declared ε where the exact lower bound reaches ``target``."""
    t = np.asarray(target, dtype=float)
    lo = np.maximum(numeric.round_down(upper_inverse(t, d=d)) * 0.5, 1e-300)
    hi = np.maximum(numeric.amplification_inverse(d.r_max, t), lo)

    def f(e: np.ndarray) -> np.ndarray:
        return exact_lower(e, d.ratio * e, d=d)

    return numeric.smallest_reaching(f, t, lo, hi)


def _exact_replace_one_inverse(target: Any, *, d: Rates) -> np.ndarray:
    t = np.asarray(target, dtype=float)
    lo = np.maximum(numeric.round_down(upper_inverse(0.5 * t, d=d)) * 0.5, 1e-300)
    hi = np.maximum(numeric.amplification_inverse(d.r_max, t), lo)

    def f(e: np.ndarray) -> np.ndarray:
        return exact_replace_one(e, d.ratio * e, d=d)

    return numeric.largest_feasible(f, t, lo, hi)


def theorem_7_2(d: Rates) -> Theorem:
    """Stratified add-remove DP under randomised rounding: each stratum's exact loss at
    the stated sizes (derived, ``rounding_exact``; below Theorem 7.2's bound), the
    maximum over strata; the maximising mechanism attains it."""
    return Theorem(
        name="Theorem 7.2",
        basis=(*BASIS_RANDOMIZED, EXACT_BASIS),
        relation=Neighbours.BOTH,
        guarantee=Neighbours.ADD_REMOVE,
        upper=OfPair(exact_upper),
        lower=OfPair(exact_lower),
        inverse=InScale(Scale.DECLARED, exact_inverse),
        lower_inverse=InScale(Scale.DECLARED, exact_lower_inverse),
        params={"d": d},
        tight=None,
    )


def replace_one_doubled(d: Rates) -> Theorem:
    """Replace-one (derived): a replacement is a removal from one stratum plus an
    addition to one, ε′ <= max_h remove_h + max_h add_h (each stratum's exact loss in
    that direction); witness A(r_max, min(ε_D, ε_R)) (randomised response on "x is in
    the sample" is as private under both relations; ε_R itself when a census stratum
    takes the replacement)."""
    return Theorem(
        name="Theorem 7.2",
        basis=(*BASIS_RANDOMIZED, EXACT_BASIS, REPLACE_ONE_BASIS),
        relation=Neighbours.BOTH,
        guarantee=Neighbours.REPLACE_ONE,
        upper=OfPair(exact_replace_one),
        lower=OfPair(_replace_one_eps) if d.any_census else None,
        witnesses=(Witness(bound=functools.partial(lower_epsilon, d.r_max)),),
        inverse=InScale(Scale.DECLARED, _exact_replace_one_inverse),
        lower_inverse=(
            None if d.any_census else InScale(Scale.SMALLER, functools.partial(lower_inverse, d=d))
        ),
        params={"d": d},
        tight=None,
    )


REPLACE_ONE_MIXTURE_NOTE = (
    "replace-one with one stratum: a replacement keeps the stratum size, so the "
    "design is a mixture of simple random samples of ⌊rN⌋ or ⌈rN⌉ records: ε′ <= "
    f"A(⌈rN⌉/N, ε_R) ({BUN_2022}, Theorem 2.2 at the larger size; "
    "exact when rN is a whole number, the srswor value)"
)


def replace_one_mixture(d: Rates, mix: SizeMixture) -> Theorem:
    """One stratum under replace-one: a replacement keeps the size distribution, so the
    design is a mixture of simple random samples of ⌊rN⌋ or ⌈rN⌉ records."""
    return Theorem(
        name="Theorem 2.2 (one stratum)",
        basis=(*BASIS_RANDOMIZED, cite(BUN_2022, "Theorem 2.2 (one stratum)")),
        relation=Neighbours.BOTH,
        guarantee=Neighbours.REPLACE_ONE,
        upper=OfPair(mix.upper_both),
        lower=OfPair(mix.lower),
        witnesses=(Witness(bound=functools.partial(lower_epsilon, d.r_max)),),
        inverse=InScale(
            Scale.REPLACE_ONE, functools.partial(numeric.amplification_inverse, mix.q_hi)
        ),
        tight=None,
    )


@dataclass(frozen=True)
class _ChosenTheorem:
    """The theorem for the requested guarantee, its notes and its ``invert`` rows."""

    theorem: Theorem
    notes: tuple[str, ...]
    invert_details: Callable[[Analysis, np.ndarray], Mapping[str, Any]]


def _pick(p: Params, d: Rates, mechanism: Mechanism, guarantee: Neighbours) -> _ChosenTheorem:
    """The theorem for ``guarantee`` (the one place the guarantee is read), with its
    per-stratum ``invert`` details."""
    if len(p.strata) == 1 and not d.all_census and guarantee is Neighbours.REPLACE_ONE:
        mix = size_mixture(float(d.rate[0]), int(p.strata.size[0]))
        return _ChosenTheorem(
            replace_one_mixture(d, mix),
            (REPLACE_ONE_MIXTURE_NOTE,),
            functools.partial(_mixture_rows, p, d),
        )
    # per-stratum invert details: the stratum target is T over ``up`` and the witness's
    # inverse is in ε over ``lo`` (both 1 under add-remove)
    up = lo = 1.0
    notes: tuple[str, ...] = ()
    if d.all_census:
        theorem = census_theorem(d, guarantee)
        if guarantee is Neighbours.REPLACE_ONE:
            up, lo = Scale.REPLACE_ONE.ratio(mechanism), Scale.SMALLER.ratio(mechanism)
    elif guarantee is Neighbours.ADD_REMOVE:
        theorem = theorem_7_2(d)
    else:
        theorem = replace_one_doubled(d)
        notes = (REPLACE_ONE_NOTE,)
        up, lo = 2.0, Scale.SMALLER.ratio(mechanism)
    rows = functools.partial(_strata_rows, p, d, up, lo)
    return _ChosenTheorem(theorem, notes, functools.partial(_inverted_by, theorem, rows))


#: ``invert``'s ``details.inverse`` (and ``inverse_lower``) where the theorem's inverse is
#: one of this module's bisections between closed forms (``exact_inverse`` and the like)
BISECTED = "root-finder"
_BISECTIONS = (exact_inverse, exact_lower_inverse, _exact_replace_one_inverse)


def _inverted_by(
    theorem: Theorem,
    rows: Callable[[Analysis, np.ndarray], Mapping[str, Any]],
    an: Analysis,
    target: np.ndarray,
) -> dict[str, Any]:
    """The per-stratum ``invert`` rows, and how the certified and impossible-above ε were
    found where the theorem's inverse is a bisection (the assembly says "closed-form" of
    every inverse a theorem states)."""
    out = dict(rows(an, target))
    for key, inverse in (("inverse", theorem.inverse), ("inverse_lower", theorem.lower_inverse)):
        if isinstance(inverse, InScale) and inverse.formula in _BISECTIONS:
            out[key] = BISECTED
    return out


def _mixture_rows(p: Params, d: Rates, an: Analysis, target: np.ndarray) -> dict[str, Any]:
    t = np.asarray(target, dtype=float)
    if t.ndim:
        return {}
    assert an.certified is not None and an.lower is not None
    one = float(an.certified(t))
    imp1 = float(numeric.smallest_reaching(an.lower, float(t), one, 2.0 * one + 1.0))
    return {"strata": alloc.invert_rows(p, d.rate, d.rate * d.size, one, imp1)}


def _strata_rows(
    p: Params, d: Rates, up: float, lo: float, an: Analysis, target: np.ndarray
) -> dict[str, Any]:
    """Per-stratum certified ε (each stratum's exact bound reaching T; under replace-one
    a replacement inside the stratum) and the ε past which its lower bound reaches T (the
    exact value under add-remove, the witness A(r_h, lo·ε) under replace-one)."""
    r = d.rate
    t = np.asarray(target, dtype=float)
    if t.ndim:
        return {}
    replace = up != 1.0
    cert = _stratum_certified(float(t), d, replace)
    shortcut = _shortcut_note(d.r_max, float(t), float(np.min(cert)))
    if replace:
        guess = numeric.amplification_inverse(r, float(t)) / lo
        imp = certify_above(functools.partial(_scaled_lower, r, lo), guess, float(t))
    else:
        rate, _, back = d.distinct
        every = np.arange(rate.size)
        start = np.maximum(cert[np.unique(back, return_index=True)[1]] * 0.5, 1e-300)
        imp = numeric.smallest_reaching(
            lambda e: _diag(e, d, "lower", False, every),
            np.full(rate.shape, float(t)),
            start,
            np.maximum(numeric.amplification_inverse(rate, float(t)), start),
        )[back]
    return {
        "strata": alloc.invert_rows(p, r, r * d.size, cert, imp),
        "shortcut": shortcut,
        "notes": (shortcut_note(shortcut, d.r_max, float(t)),),
    }


def _scaled_lower(rate: np.ndarray, lo: float, eps: np.ndarray) -> np.ndarray:
    """Each stratum's witness A(r_h, lo·ε)."""
    return lower_epsilon(rate, eps * lo)


def _diag(
    e: np.ndarray, d: Rates, key: str, replace: bool, strata: np.ndarray | None = None
) -> np.ndarray:
    """Stratum h's exact bound at declared ε e[h] (``key``: "upper" or "lower"; under
    replace-one the upper bound of a replacement inside the stratum); ``strata``: the
    distinct (rate, size) pairs' indices, one element each, in place of all strata."""
    e = np.asarray(e, dtype=float)
    rate, size, _ = d.distinct
    census = rate >= 1.0
    if strata is None:
        rate, size, census = d.rate, d.size, d.census
    res = stratum_exact(rate, size, e, d.ratio * e)
    if replace:
        val = numeric.round_up(res["remove"][1] + res["add"][1])
    else:
        val = res[key] if key == "upper" else res["lower"]
    out: np.ndarray = np.where(census, e * (d.ratio if replace else 1.0), val)
    return out


def _stratum_certified(t: Any, d: Rates, replace: bool = False) -> np.ndarray:
    """Each stratum's certified ε at the stratum target ``t`` (bisection on its exact
    bound as evaluated, one stratum per element)."""
    rate, _, back = d.distinct
    t = np.broadcast_to(np.asarray(t, dtype=float), rate.shape)
    lo = np.maximum(numeric.round_down(theorem_4_3_inverse(2.0 * rate, rate, t)) * 0.25, 1e-300)
    hi = np.maximum(numeric.amplification_inverse(rate, t), lo)
    every = np.arange(rate.size)
    out: np.ndarray = numeric.largest_feasible(
        lambda e: _diag(e, d, "upper", replace, every), t, lo, hi
    )[back]
    return out


def _refusals(mechanism: Mechanism) -> tuple[Refusal, ...]:
    """Theorem 7.2 needs M's add-remove ε, and is proved for pure ε only."""
    return (
        add_remove_refusal(f"Theorem 7.2 ({BUN_2022})"),
        Refusal(
            Refuses.DELTA,
            f"Theorem 7.2 ({BUN_2022}) and the exact per-stratum loss under randomised "
            f"rounding ({DERIVATIONS}, §10.1) are for pure ε-DP mechanisms (delta = 0): "
            "with δ > 0 the two sample sizes' outputs are no longer within e^ε of each "
            f"other, and no δ′ is derived; the declared delta = {mechanism.delta:g} has no "
            "proved δ′",
        ),
    )


def _upper_at_declared(theorem: Theorem, mechanism: Mechanism) -> float:
    """The theorem's upper bound (a formula of (ε_D, ε_R)) at M's declared ε."""
    upper = theorem.bind().upper
    assert isinstance(upper, OfPair)
    return float(upper.formula(*epsilons(mechanism)))


def _randomized_theorem(p: Params, d: Rates, picked: Theorem, mechanism: Mechanism) -> Theorem:
    """The picked theorem with randomised rounding's refusals (pure ε, add-remove ε
    known) and conditions."""
    smallest = float(np.min(d.rate * d.size))
    return dataclasses.replace(
        picked,
        refusals=_refusals(mechanism),
        pure=True,
        conditions=(
            f"r·N_h >= 1 in every stratum: smallest r·N_h = {smallest:.6g}",
            "strata fixed in advance and public; within each stratum r·N_h is rounded up "
            "with probability equal to its fractional part, then a simple random sample of "
            "that size is drawn without replacement, independently across strata; the "
            "sample is secret",
        ),
        relation_condition="M is ε-DP under add-remove (declared: {declared}), pure ε",
    )


def _census_note(p: Params, d: Rates, eps0: float) -> str:
    """Strata at rate 1 are sampled whole: M's own ε there, exactly."""
    if d.all_census:
        return (
            "rate 1: the sample is the whole population, M's own ε under the guarantee's "
            "relation, exactly (Theorem 7.2 would give "
            f"{float(theorem_4_3(2.0, 1.0, eps0)):.6g} at ε = {eps0:g})"
        )
    which = [nm for nm, c in zip(p.strata.names, d.census.tolist(), strict=True) if c]
    shown = ", ".join(repr(x) for x in which[:3]) + (" …" if len(which) > 3 else "")
    return (
        f"rate 1 in {len(which)} strata ({shown}): each is sampled whole, so its "
        "ε′_h is M's ε exactly (Theorem 7.2 is not used there)"
    )


def _randomized_notes(
    p: Params, d: Rates, picked_notes: tuple[str, ...], eps0: float, up0: float
) -> tuple[str, ...]:
    """Which form of the bound, per-stratum rates, the picked theorem's notes, census
    strata, and the paper's 6rε approximation beside the exact bound."""
    notes: list[str] = []
    form = "size-aware form from the proof of Theorem 4.3 (r + 1/N_h in place of 2r)"
    if p.size_aware:
        notes.append(f"upper bound: the {form}; labelled 'from proof', not a stated theorem")
    if p.per_stratum_rates:
        notes.append(
            f"per-stratum rates: derived extension of Theorem 7.2 ({DERIVATIONS}, §4.1; the "
            "proof is "
            "per stratum, the paper states one common r)"
        )
    notes += picked_notes
    if d.any_census:
        notes.append(_census_note(p, d, eps0))
    if not d.all_census:
        r_max = d.r_max
        notes.append(
            f"{cite(BUN_2022, '§4.3')} and {cite(BUN_2022, '§7.3')} approximate this bound as "
            f"ε′ ≈ 6rε ({6.0 * r_max * eps0:.6g} at ε = {eps0:g}, r = {r_max:g}; the bound "
            f"here is {up0:.6g}) and its inverse as λ ≈ ε′/(6r), which hold only for rε ≪ 1; "
            "ampcalc evaluates and inverts the bound exactly (details.approx_6re; on "
            "invert, details.shortcut)."
        )
    return tuple(notes)


NO_AMPLIFICATION_WARNING = (
    "no amplification is guaranteed at this ε: Theorem 7.2's bound is not below M's ε "
    "(the randomised-rounding bound exceeds ε for r above about 0.07–0.17; "
    f"{DERIVATIONS}, §4.1)"
)


def analyse_randomized(p: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Proportional allocation with randomised rounding (Theorem 7.2 and its derived
    replace-one forms)."""
    d = dataclasses.replace(Rates.of(p), ratio=float(mechanism.replace_one_ratio()))
    picked = _pick(p, d, mechanism, guarantee)
    theorem = _randomized_theorem(p, d, picked.theorem, mechanism)
    check_refusals(theorem, mechanism)
    _check_rate_condition(p, p.rates())
    eps0 = scalar_eps(mechanism)
    up0 = _upper_at_declared(theorem, mechanism)
    replace = theorem.guarantee is Neighbours.REPLACE_ONE
    ratio = (Scale.REPLACE_ONE if replace else Scale.DECLARED).ratio(mechanism)
    no_amplification = not d.all_census and up0 >= eps0 * ratio
    return assemble(
        theorem,
        mechanism,
        details={
            "allocation": "proportional",
            "rounding": "randomized",
            "form": "size-aware (from proof)" if p.size_aware else "Theorem 7.2",
            "rate_max": d.r_max,
            "strata_count": len(p.strata),
        },
        details_at=functools.partial(_details_at, p, d, replace),
        warnings=(NO_AMPLIFICATION_WARNING,) if no_amplification else (),
        notes=_randomized_notes(p, d, picked.notes, eps0, up0),
        invert_details_from=picked.invert_details,
    )


def _details_at(p: Params, d: Rates, replace: bool, eps: np.ndarray) -> dict[str, Any]:
    """Per-stratum exact bounds (under replace-one: a replacement inside the stratum,
    upper the sum of its two directions, lower the randomised-response witness) and the
    paper's 6rε approximation at each evaluated ε."""
    r, n = d.rate, d.size
    e = np.asarray(eps, dtype=float)
    ex = exact_strata(e, d.ratio * e, d=d)
    if replace:
        rr, cc = per_stratum(r, e), per_stratum(d.census, e) > 0
        er = d.ratio * e
        lower = np.where(cc, er, lower_epsilon(rr, np.minimum(e, er)))
        upper = np.where(cc, er, numeric.round_up(ex["remove"] + ex["add"]))
    else:
        lower, upper = ex["lower"], ex["upper"]
    rows = alloc.strata_rows(p, r, r * n, lower, upper)
    approx = 6.0 * d.r_max * e
    exact = np.asarray(ex["upper"].max(axis=0), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(exact > 0, (approx - exact) / np.where(exact > 0, exact, 1.0), np.nan)
    return {
        "approx_6re": approx,
        "approx_6re_relative_error": rel if rel.ndim else (None if np.isnan(rel) else rel),
        "census_strata": int(d.census.sum()),
        "strata": rows,
    }


def shortcut_note(shortcut: Mapping[str, Any], r_max: float, target: float) -> str:
    """The erratum of Bun et al. §7.3 on ``invert``: λ ≈ ε′/(6r) against the exact inverse."""
    approx, exact = shortcut["epsilon"], shortcut["exact"]
    over = (
        f": the shortcut would spend {approx / exact:.3g} times the certified ε"
        if exact > 0 and approx > exact
        else ""
    )
    return (
        f"{cite(BUN_2022, '§7.3')}'s shortcut λ ≈ ε′/(6r) gives ε = {approx:.6g} at ε′ = "
        f"{target:g}, r = {r_max:g}; the inverse used here (each stratum's exact loss, "
        f"{DERIVATIONS}, §10.1) certifies ε = {exact:.6g}{over} (details.shortcut)."
    )


def _shortcut_note(r_max: float, target: float, exact: float) -> dict[str, Any]:
    """The paper's shortcut λ ≈ ε′/(6r) (Bun et al. §7.3) against the exact inverse (spec §5.1)."""
    approx = target / (6.0 * r_max)
    return {
        "formula": f"ε ≈ ε′/(6r) ({BUN_2022}, §7.3)",
        "epsilon": approx,
        "exact": exact,
        "relative_error": (approx - exact) / exact if exact > 0 else None,
    }
