"""Result objects. ``to_dict()`` *is* the JSON contract (docs/json.md).

Bounds are ``None`` where the theory gives none: never NaN, never infinity standing
in for "unknown". Fields may hold numpy arrays when the engine was called with an
array of ε (the Python API's vectorised use); ``to_dict`` then emits lists.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ampcalc.model.references import Citation


class Verdict(str, enum.Enum):
    """What sampling does to M's privacy, checked in this order (1e-12 relative slack)."""

    DEGRADES = "degrades"  # lower > ε: some mechanism loses more than without sampling
    NO_AMPLIFICATION = "no-amplification"  # lower >= ε
    AMPLIFIES = "amplifies"  # upper < ε
    NO_GUARANTEE = "no-guarantee"  # the theory gives no upper bound
    INCONCLUSIVE = "inconclusive"
    CALIBRATED = "calibrated"  # the scheme builds the mechanism to meet a target exactly

    def __str__(self) -> str:
        return self.value


def plain(value: Any) -> Any:
    """numpy scalars/arrays -> Python floats/lists; NaN -> None (never a number)."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return plain(value.item())
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return None if math.isnan(v) else v
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


#: relative distance within which the two bounds count as meeting (``tightness``)
TIGHT_REL = 1e-9


def tightness(lower: Any, upper: Any) -> Any:
    """How far apart the bounds are: ``{"exact": True}`` when they meet to ``TIGHT_REL``
    relative, else ``{"exact": False, "ratio": upper/lower, "gap_nats": upper − lower}``
    (``ratio`` null when lower is 0); None when either is missing. Arrays (the API's
    vectorised use) give one entry per point."""
    if lower is None or upper is None:
        return None
    lo_arr, up_arr = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if lo_arr.ndim or up_arr.ndim:
        lo_b, up_b = np.broadcast_arrays(lo_arr, up_arr)
        return [tightness(a, b) for a, b in zip(lo_b.tolist(), up_b.tolist(), strict=True)]
    lo, up = float(lo_arr), float(up_arr)
    if math.isnan(lo) or math.isnan(up):
        return None
    if up == lo or (math.isfinite(up) and abs(up - lo) <= TIGHT_REL * max(abs(up), abs(lo))):
        return {"exact": True}
    ratio = up / lo if lo > 0.0 and math.isfinite(up) else None
    gap = up - lo if math.isfinite(up) else None
    return {"exact": False, "ratio": ratio, "gap_nats": gap}


class Interval(NamedTuple):
    """``epsilon_prime`` of a bound: ``lower`` and ``upper`` (``None`` where the theory
    gives none), as the JSON's ``epsilon_prime`` object."""

    lower: Any
    upper: Any


class TargetPair(NamedTuple):
    """``target`` of an inversion: ``epsilon_prime`` and ``delta_prime``."""

    epsilon_prime: Any
    delta_prime: Any


class Certificate(NamedTuple):
    """``epsilon`` of an inversion: ``certified`` and ``impossible_above``."""

    certified: Any
    impossible_above: Any


@dataclass(frozen=True, kw_only=True)
class BoundResult:
    """The answer of ``ampcalc bound`` for one design (fields as in the JSON)."""

    name: str
    scheme: str
    epsilon: Any
    delta: float | None
    lower: Any
    upper: Any
    delta_prime: Any
    verdict: Any
    epsilon_replace_one: Any
    guarantee_neighbours: str | None
    basis: Sequence[Citation] = ()
    conditions: Sequence[str] = ()
    warnings: Sequence[str] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    #: ``warnings``: the user should act or reconsider; ``notes``: context (proof remarks,
    #: relation conversions, corrections to the papers applied, the reading used).
    notes: Sequence[str] = ()

    @property
    def epsilon_prime(self) -> Interval:
        """The JSON's ``epsilon_prime``: ``(lower, upper)``."""
        return Interval(self.lower, self.upper)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "scheme": self.scheme,
            "epsilon": plain(self.epsilon),
            "delta": plain(self.delta),
            "epsilon_prime": {"lower": plain(self.lower), "upper": plain(self.upper)},
            "tightness": tightness(self.lower, self.upper),
            "delta_prime": plain(self.delta_prime),
            "verdict": plain(self.verdict),
            "epsilon_replace_one": plain(self.epsilon_replace_one),
            "guarantee_neighbours": self.guarantee_neighbours,
            "basis": [c.to_dict() for c in self.basis],
            "conditions": list(self.conditions),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "details": plain(dict(self.details)),
        }
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True, kw_only=True)
class InvertResult:
    """The answer of ``ampcalc invert`` for one design (fields as in the JSON)."""

    name: str
    scheme: str
    target_epsilon_prime: Any
    target_delta_prime: float | None
    certified: Any
    impossible_above: Any
    delta: Any
    basis: Sequence[Citation] = ()
    warnings: Sequence[str] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    knob: Mapping[str, Any] | None = None
    notes: Sequence[str] = ()  # context, as ``BoundResult.notes``

    @property
    def target(self) -> TargetPair:
        """The JSON's ``target``: ``(epsilon_prime, delta_prime)``."""
        return TargetPair(self.target_epsilon_prime, self.target_delta_prime)

    @property
    def epsilon(self) -> Certificate:
        """The JSON's ``epsilon``: ``(certified, impossible_above)``."""
        return Certificate(self.certified, self.impossible_above)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "scheme": self.scheme,
            "target": {
                "epsilon_prime": plain(self.target_epsilon_prime),
                "delta_prime": plain(self.target_delta_prime),
            },
            "epsilon": {
                "certified": plain(self.certified),
                "impossible_above": plain(self.impossible_above),
            },
            "delta": plain(self.delta),
            "basis": [c.to_dict() for c in self.basis],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "details": plain(dict(self.details)),
        }
        if self.knob is not None:
            out["knob"] = plain(dict(self.knob))
        if self.error is not None:
            out["error"] = self.error
        return out
