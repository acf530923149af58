"""The names of the named mechanisms, and whether a ``mechanism:`` block uses one.

Kept apart from the profiles so that reading a design with a plain (ε, δ) mechanism does
not import them (start-up).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MECHANISM_NAMES = (
    "laplace",
    "gaussian",
    "discrete-laplace",
    "discrete-gaussian",
    "randomized-response",
    "zcdp",
)


def is_named(data: Any) -> bool:
    """True for a ``mechanism:`` mapping in a named form (a named mechanism or named
    releases)."""
    if not isinstance(data, Mapping):
        return False
    if any(k in data for k in MECHANISM_NAMES):
        return True
    rel = data.get("releases")
    if isinstance(rel, Sequence) and not isinstance(rel, (str, bytes)):
        return any(isinstance(r, Mapping) and any(k in r for k in MECHANISM_NAMES) for r in rel)
    return False
