"""Small helpers shared by the stratified allocation modules."""

from __future__ import annotations

from typing import Any

import numpy as np

from ampcalc.model.design import Mechanism
from ampcalc.model.errors import ConditionError


def need_add_remove(mechanism: Mechanism, theorem: str) -> None:
    """Refuse a mechanism declared under replace-one only: ``theorem`` needs its
    add-remove ε (stratum sample sizes change with the population)."""
    if not mechanism.epsilon_add_remove_known():
        raise ConditionError(
            f"{theorem} needs M's add-remove ε, and `neighbours: replace-one` leaves it "
            "unknown (stratum sample sizes change with the population). Declare "
            "`neighbours: add-remove` or `both`."
        )


def scalar_eps(mechanism: Mechanism) -> float:
    """The declared ε, for messages and details stated at it."""
    return float(mechanism.epsilon)


def per_stratum(values: Any, eps: Any) -> np.ndarray:
    """Per-stratum values against an evaluated ε of any shape: shape (k, *eps.shape)."""
    return np.asarray(values, dtype=float).reshape((-1,) + (1,) * np.ndim(eps))
