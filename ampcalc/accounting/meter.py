"""The accountant's cost, checked before each array is allocated."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ampcalc.model.limits import LIMITS


class CostLimitError(ValueError):
    """An accountant step above one of the documented limits (the message names it)."""


def _count(points: float) -> int | float:
    return int(points) if math.isfinite(points) else math.inf


@dataclass(slots=True)
class Meter:
    """The grid points the accountant handles for one total.

    Every distribution built, self-composed or composed is charged *before* its arrays
    are allocated: one array above the ``pld_points`` limit, or a running total above
    the ``accountant_work`` limit, raises ``CostLimitError`` (both in
    ``ampcalc/model/limits.py``), so a run stops before the memory or the time is spent.
    """

    used: int = 0

    def charge(self, points: float, what: str) -> None:
        cap = LIMITS["pld_points"]
        if not points <= cap.value:  # NaN and inf too
            raise CostLimitError(f"{what}: {cap.message(_count(points))}")
        self.used += int(points)
        work = LIMITS["accountant_work"]
        if self.used > work.value:
            raise CostLimitError(f"{what}: {work.message(self.used)}")


def grid_points(lower: float, upper: float, h: float) -> float:
    """Points of the grid h·⌊lower/h⌋, ..., h·⌈upper/h⌉ (``inf`` when not finite)."""
    with np.errstate(over="ignore", invalid="ignore"):
        a, b = float(lower) / h, float(upper) / h
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return float(math.ceil(b) - math.floor(a) + 1)
