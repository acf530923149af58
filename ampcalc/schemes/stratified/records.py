"""Stratified results as records, and the small assembly that turns one into an Analysis.

A record states one result under one guarantee: its formulas of M's two ε — ε_D
(add-remove) and ε_R (replace-one) — the closed-form inverses it has, and what it says
(basis, conditions, notes). ``build`` does the rest once for every record: it reads the
declared mechanism under both relations (ε_D = the declared ε, or +inf when
``neighbours: replace-one`` leaves it unknown; ε_R by ``Mechanism.epsilon_replace_one_of``),
picks the reference ε of the record's guarantee, and rounds and certifies the inverses.
The guarantee (and so the relation) is chosen once, by choosing the record.

Kept here rather than in ``schemes.assembly`` because stratified results need what its
``Theorem`` does not state yet:

* two-relation formulas (a bound of ε_D and ε_R together: randomised rounding under
  replace-one, deterministic rounding, Neyman allocation);
* a guarantee derived from another relation's result (replace-one ε′ <= 2·max_s ε′_s);
* lower-only results (Neyman; deterministic rounding with δ > 0: no upper bound);
* an inverse of the lower bound that is not the upper bound's (``impossible``), and
  inverses stated in ε_D, ε_R or min(ε_D, ε_R) (``Scale``).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.math.types import FloatArray
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.references import Citation
from ampcalc.schemes.base import Analysis

TwoRelations = Callable[[FloatArray, FloatArray], FloatArray]
"""(ε_D, ε_R) arrays -> a bound on ε′, already rounded outward."""


class Scale(enum.Enum):
    """Which of M's ε an inverse is stated in (the declared ε follows by a fixed ratio)."""

    DECLARED = "declared"  # ε_D, the declared ε itself
    REPLACE_ONE = "replace-one"  # ε_R = ratio·ε
    SMALLER = "smaller"  # min(ε_D, ε_R) = min(1, ratio)·ε

    def ratio(self, mechanism: Mechanism) -> float:
        if self is Scale.DECLARED:
            return 1.0
        ratio = mechanism.replace_one_ratio()
        return ratio if self is Scale.REPLACE_ONE else min(1.0, ratio)


@dataclass(frozen=True)
class Inverse:
    """A closed-form inverse: target ε′ -> M's ε in ``scale`` (unrounded, or as the
    result's own derivation rounds it); ``build`` divides by the scale's ratio, rounds
    outward once and certifies against the bound as evaluated."""

    formula: Callable[[FloatArray], FloatArray]
    scale: Scale = Scale.DECLARED


@dataclass(frozen=True, kw_only=True)
class Result:
    """One stratified result under one guarantee.

    Attributes:
        guarantee: the relation ε′ holds under (the verdict compares with M's ε there).
        upper: (ε_D, ε_R) -> guarantee on ε′, or None (no upper bound).
        lower: (ε_D, ε_R) -> ε′ of a witness, or None.
        certified: the upper bound's closed-form inverse, or None (numeric inversion).
        impossible: the lower bound's closed-form inverse, or None.
        pure: δ′ = 0 (a pure-ε result); otherwise no δ′ is given.
        invert_details: (the built analysis, target ε′) -> extra ``invert`` details
            (they may use the analysis's own certified inverse and bounds).
    """

    guarantee: Neighbours
    upper: TwoRelations | None
    lower: TwoRelations | None
    certified: Inverse | None = None
    impossible: Inverse | None = None
    pure: bool = True
    basis: tuple[Citation, ...] = ()
    conditions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    details_at: Callable[[FloatArray], Mapping[str, Any]] | None = None
    invert_details: Callable[[Analysis, FloatArray], Mapping[str, Any]] | None = None


def relations(mechanism: Mechanism) -> Callable[[FloatArray], tuple[FloatArray, FloatArray]]:
    """Declared ε -> (ε_D, ε_R): M's ε under add-remove (+inf when unknown) and
    under replace-one."""
    known = mechanism.epsilon_add_remove_known()
    eps_r = mechanism.epsilon_replace_one_of

    def both(eps: FloatArray) -> tuple[FloatArray, FloatArray]:
        e = np.asarray(eps, dtype=float)
        return (e if known else np.full(e.shape, np.inf)), eps_r(e)

    return both


def reference(mechanism: Mechanism, guarantee: Neighbours) -> Callable[[FloatArray], FloatArray]:
    """Declared ε -> M's ε under ``guarantee`` (the unsampled loss of the verdict)."""
    if guarantee is Neighbours.REPLACE_ONE:
        eps_r = mechanism.epsilon_replace_one_of
        return lambda e: eps_r(e)
    return lambda e: np.asarray(e, float)


def build(result: Result, mechanism: Mechanism) -> Analysis:
    """The analysis of ``result`` for the declared ``mechanism``."""
    both = relations(mechanism)
    upper = None if result.upper is None else _of_declared(result.upper, both)
    lower = None if result.lower is None else _of_declared(result.lower, both)
    certified = None
    if result.certified is not None and upper is not None:
        certified = _certified(result.certified, upper, result.certified.scale.ratio(mechanism))
    impossible = None
    if result.impossible is not None and lower is not None:
        impossible = _impossible(
            result.impossible, lower, result.impossible.scale.ratio(mechanism)
        )
    analysis = Analysis(
        guarantee_neighbours=result.guarantee,
        reference_epsilon=reference(mechanism, result.guarantee),
        upper=upper,
        lower=lower,
        delta_prime=(lambda e: np.zeros(np.shape(e))) if result.pure else None,
        certified=certified,
        impossible_above=impossible,
        basis=result.basis,
        conditions=result.conditions,
        warnings=result.warnings,
        notes=result.notes,
        details=result.details,
        details_at=result.details_at,
    )
    more = result.invert_details
    if more is None:
        return analysis
    return dataclasses.replace(analysis, invert_details=lambda t: more(analysis, t))


def _of_declared(
    formula: TwoRelations, both: Callable[[FloatArray], tuple[FloatArray, FloatArray]]
) -> Callable[[FloatArray], FloatArray]:
    def bound(eps: FloatArray) -> FloatArray:
        return formula(*both(eps))

    return bound


def _certified(
    inverse: Inverse, upper: Callable[[FloatArray], FloatArray], ratio: float
) -> Callable[[FloatArray], FloatArray]:
    formula = inverse.formula

    def certified(target: FloatArray) -> FloatArray:
        t = np.asarray(target, dtype=float)
        guess = formula(t) if ratio == 1.0 else formula(t) / ratio
        return numeric.certify_down(upper, numeric.round_down(guess), t)

    return certified


def _impossible(
    inverse: Inverse, lower: Callable[[FloatArray], FloatArray], ratio: float
) -> Callable[[FloatArray], FloatArray]:
    formula = inverse.formula

    def impossible_above(target: FloatArray) -> FloatArray:
        t = np.asarray(target, dtype=float)
        guess = formula(t) if ratio == 1.0 else formula(t) / ratio
        if np.all(np.isposinf(guess)):  # the lower bound never reaches the target
            return guess
        return numeric.certify_up(lower, numeric.round_up(guess), t)

    return impossible_above
