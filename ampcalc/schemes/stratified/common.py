"""Small helpers shared by the stratified allocation modules."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ampcalc.math.types import FloatArray
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import Citation
from ampcalc.schemes import _allocation as alloc
from ampcalc.schemes.assembly import InScale, OfPair, Refusal, Refuses, Scale, Theorem, epsilons
from ampcalc.schemes.base import Analysis


def _needs_add_remove(theorem: str) -> str:
    return (
        f"{theorem} needs M's add-remove ε, and `neighbours: replace-one` leaves it "
        "unknown (stratum sample sizes change with the population). Declare "
        "`neighbours: add-remove` or `both`."
    )


def add_remove_refusal(theorem: str) -> Refusal:
    """A theorem's refusal of a mechanism declared under replace-one only: ``theorem``
    needs its add-remove ε (stratum sample sizes change with the population)."""
    return Refusal(Refuses.ADD_REMOVE_UNKNOWN, _needs_add_remove(theorem))


def need_add_remove(mechanism: Mechanism, theorem: str) -> None:
    """Raise ``add_remove_refusal(theorem)`` for a mechanism declared under replace-one
    only."""
    if not mechanism.epsilon_add_remove_known():
        raise ConditionError(_needs_add_remove(theorem))


def linear_inverse(
    formula: Callable[[FloatArray, FloatArray], FloatArray],
    mechanism: Mechanism,
    target: FloatArray,
) -> FloatArray:
    """The declared ε where a lower bound linear in it (``formula`` of (ε_D, ε_R)) reaches
    ``target``: T over its value at declared ε = 1, unrounded; +inf where it stays 0."""
    slope = float(formula(*epsilons(mechanism, 1.0)))
    if slope <= 0:
        return np.full(np.shape(target), np.inf)
    out: FloatArray = np.asarray(target, dtype=float) / slope
    return out


def linear_lower_theorem(
    name: str,
    basis: tuple[Citation, ...],
    guarantee: Neighbours,
    mechanism: Mechanism,
    lower: Callable[[FloatArray, FloatArray], FloatArray],
    *,
    subject: str,
) -> Theorem:
    """A lower bound of (ε_D, ε_R), linear in M's ε, with no upper bound (Neyman
    allocation, a fixed total): its inverse is T over its value at declared ε = 1; an
    add-remove guarantee refuses a mechanism whose add-remove ε is unknown (``subject``
    names the design in that message)."""
    refusals: tuple[Refusal, ...] = ()
    if guarantee is Neighbours.ADD_REMOVE:
        refusals = (
            Refusal(
                Refuses.ADD_REMOVE_UNKNOWN,
                f"{subject} with an add-remove guarantee needs M's add-remove ε; "
                "`neighbours: replace-one` leaves it unknown. Use `guarantee: replace-one`.",
            ),
        )
    return Theorem(
        name=name,
        basis=basis,
        relation=None,
        guarantee=guarantee,
        lower=OfPair(lower),
        lower_inverse=InScale(Scale.DECLARED, functools.partial(linear_inverse, lower, mechanism)),
        tight=None,
        refusals=refusals,
    )


def scalar_eps(mechanism: Mechanism) -> float:
    """The declared ε, for messages and details stated at it."""
    return float(mechanism.epsilon)


def per_stratum(values: Any, eps: Any) -> np.ndarray:
    """Per-stratum values against an evaluated ε of any shape: shape (k, *eps.shape)."""
    return np.asarray(values, dtype=float).reshape((-1,) + (1,) * np.ndim(eps))


def lower_bound_invert_rows(
    p: Any, m0: np.ndarray, an: Analysis, target: np.ndarray
) -> dict[str, Any]:
    """Per-stratum rows of ``invert`` for a design whose result is a linear lower bound
    (``linear_lower_theorem``: Neyman, the fixed total): the ε past which the lower bound
    exceeds T, beside each stratum's allocation ``m0`` (one target only)."""
    t = np.asarray(target, dtype=float)
    if t.ndim:
        return {}
    assert an.impossible_above is not None
    imp = an.impossible_above(t)
    return {"strata": alloc.invert_rows(p, m0 / np.maximum(p.strata.size, 1), m0, None, imp)}
