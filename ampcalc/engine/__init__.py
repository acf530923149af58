"""The engine: designs in, results out, for any scheme. Pure: no printing, no YAML.

``core`` bounds and inverts a design whose mechanism is an (ε, δ) pair; ``profiles``
takes a named mechanism's privacy profile through the scheme's theorem point by
point. ``bound`` sends a design to the one that fits. May import ``designs``,
``schemes``, ``accounting``, ``load``, ``model`` and ``math``.
"""

from __future__ import annotations

from typing import Any

from ampcalc.engine import core
from ampcalc.engine.analysis import analyse, with_epsilon
from ampcalc.engine.core import certified_epsilon, impossible_epsilon, invert, verdicts
from ampcalc.model.design import Design
from ampcalc.model.results import BoundResult

__all__ = [
    "analyse",
    "bound",
    "certified_epsilon",
    "impossible_epsilon",
    "invert",
    "verdicts",
    "with_epsilon",
]


def bound(design: Design, epsilon: Any = None) -> BoundResult:
    """Upper and lower bounds on ε′ (and δ′, the verdict) for one design.

    Args:
        design: a validated design.
        epsilon: override M's declared ε: a number, or an array for a vectorised
            sweep (result fields are then arrays of its shape).
    Returns:
        A ``BoundResult``; a design outside its theorem's conditions gives a result
        with ``error`` set and null bounds.
    """
    if getattr(design.mechanism, "profile", None) is not None:
        from ampcalc.engine.profiles import bound_profile  # lazy: > 20 ms

        return bound_profile(design, epsilon)

    return core.bound(design, epsilon)
