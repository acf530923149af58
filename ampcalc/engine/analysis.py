"""A design's analysis: the scheme's theorem applied to the design's mechanism.

The step every engine path starts from (``core`` for arrays and for one ε through
an analysis's scalar form, ``profiles`` for named mechanisms): look the scheme up, check
the group size, bind a calibrated scheme's target, call its ``analyse``. Also the
ε override (``with_epsilon``) and where its errors point.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ampcalc import schemes
from ampcalc.model.design import Design, Mechanism, check_epsilon
from ampcalc.model.errors import ConditionError, Where
from ampcalc.schemes.base import Analysis

#: where an ε override's error points: the ``epsilon`` argument.
_EPSILON_WHERE = Where(field="epsilon")
_TARGET_WHERE = Where(field="target")


def with_epsilon(mechanism: Mechanism, epsilon: float) -> tuple[Mechanism, list[str]]:
    """M with its declared ε replaced (an explicit ε_R keeps its ratio to ε).

    Raises:
        DesignError: ``epsilon`` breaks ``model.design.check_epsilon``'s rule.
    """
    epsilon = check_epsilon(epsilon, where=_EPSILON_WHERE)
    notes: list[str] = []
    changes: dict[str, Any] = {"epsilon": float(epsilon)}
    if mechanism.releases is not None:
        changes["releases"] = None
        notes.append(
            f"ε = {epsilon:g} replaces the total of the design's "
            f"{len(mechanism.releases)} releases"
        )
    if mechanism.epsilon_replace_one is not None:
        changes["epsilon_replace_one"] = (
            mechanism.epsilon_replace_one / mechanism.epsilon * epsilon
        )
    return dataclasses.replace(mechanism, **changes), notes


def analyse(design: Design, mechanism: Mechanism | None = None) -> Analysis:
    """The scheme's analysis of a design (raises ``ConditionError`` on failed conditions)."""
    scheme = schemes.get(design.scheme)
    mech = mechanism if mechanism is not None else design.mechanism
    if getattr(mech, "profile", None) is not None:
        raise ConditionError(
            "a named mechanism (a privacy profile) is evaluated by `ampcalc bound`; this "
            "analysis takes M as an (epsilon, delta) pair"
        )
    guarantee = design.guarantee or scheme.guarantees[0]
    group = getattr(mech, "group_size", 1)
    if group > 1 and not scheme.supports_group_size:
        supported = [n for n in schemes.names() if _supports_group(n)]
        raise ConditionError(
            f"group privacy (mechanism.group_size = {group}) has no verified "
            f"formula for the {design.scheme} scheme; schemes that support group_size: "
            + ", ".join(supported)
        )
    params = design.params
    bind = scheme.bind_target
    if bind is not None:
        # schemes calibrated to the design's `target:` block see it with their params
        params = bind(params, design.target)
    return scheme.analyse(params, mech, guarantee)


def _supports_group(name: str) -> bool:
    try:
        return bool(schemes.get(name).supports_group_size)
    except Exception:  # a family that fails to import does not support it either
        return False
