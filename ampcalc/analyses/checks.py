"""The three checks of a design: its theorem's conditions, a budget, the exact worst case.

``validate_designs`` (``ampcalc validate``): syntax, fields and theorem conditions,
without bounds. ``check_designs`` (``ampcalc check``): PASS/FAIL of each design's
upper bound on ε′ (and δ′) against a privacy budget. ``verify_designs`` (``ampcalc
verify``): a tiny design's bounds against the exact worst case (``verify.verify_row``).
Each takes any design source (``ampcalc.designs.sources.as_designs``) and returns the
``results`` entries of the command's ``--json`` output. Pure: no printing, no exits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ampcalc import engine
from ampcalc.model.design import Design
from ampcalc.model.errors import AmpcalcError, ConditionError


def validate_designs(designs: Any) -> list[dict[str, Any]]:
    """Check designs (syntax, fields, theorem conditions) without computing bounds.

    Returns the ``results`` entries of ``ampcalc validate --json``: ``name``,
    ``scheme``, ``valid`` and the checked ``conditions``, ``warnings`` and ``notes``, or
    ``error`` naming the failed condition. Invalid input raises ``DesignError`` as the CLI
    does.
    """
    from ampcalc.designs.sources import as_designs  # lazy: > 20 ms

    out: list[dict[str, Any]] = []
    for d in as_designs(designs):
        entry: dict[str, Any] = {"name": d.name, "scheme": d.scheme, "valid": True}
        if getattr(d.mechanism, "profile", None) is not None:
            # a named mechanism: its profile goes through the scheme at the target δ′
            res = engine.bound(d)
            entry.update(
                conditions=list(res.conditions),
                warnings=list(res.warnings),
                notes=list(res.notes),
            )
            if res.error is not None:
                entry.update(valid=False, error=res.error)
            out.append(entry)
            continue
        try:
            analysis = engine.analyse(d)
            entry["conditions"] = list(analysis.conditions)
            entry["warnings"] = list(analysis.warnings)
            entry["notes"] = list(analysis.notes)
        except ConditionError as err:
            entry.update(valid=False, error=err.message)
        out.append(entry)
    return out


def check_verdict(
    result: Mapping[str, Any], max_epsilon: float, max_delta: float | None
) -> dict[str, Any]:
    """PASS/FAIL of one bound result (a ``BoundResult.to_dict()``) against the budget."""
    upper = result["epsilon_prime"]["upper"]
    delta_prime = result.get("delta_prime")
    reasons: list[str] = []
    if result.get("error"):
        reasons.append(f"outside the theorem's conditions: {result['error']}")
    elif upper is None:
        reasons.append("the theory gives no upper bound on ε′ for this design")
    elif upper > max_epsilon:
        reasons.append("ε′ bound above the budget")
    if max_delta is not None and not result.get("error"):
        if delta_prime is None:
            reasons.append("no bound on δ′ for this design")
        elif delta_prime > max_delta:
            reasons.append("δ′ above the budget")
    return {
        "name": result["name"],
        "scheme": result["scheme"],
        "passed": not reasons,
        "epsilon": result.get("epsilon"),
        "epsilon_prime_upper": upper,
        "max_epsilon": max_epsilon,
        "delta_prime": delta_prime,
        "max_delta": max_delta,
        "reasons": reasons,
        "error": result.get("error"),
    }


def check_designs(
    designs: Any,
    max_epsilon: float,
    max_delta: float | None = None,
    *,
    epsilon: float | None = None,
) -> list[dict[str, Any]]:
    """``ampcalc.api.check`` (its arguments, returns and errors are documented there)."""
    from ampcalc.designs.sources import as_designs  # lazy: > 20 ms

    if not (isinstance(max_epsilon, (int, float)) and math.isfinite(max_epsilon)) or (
        max_epsilon <= 0
    ):
        raise AmpcalcError(f"max_epsilon: expected a finite number > 0, got {max_epsilon!r}")
    if max_delta is not None and not 0 <= max_delta <= 1:
        raise AmpcalcError(f"max_delta: expected a number in [0, 1], got {max_delta!r}")
    return [
        check_verdict(engine.bound(d, epsilon=epsilon).to_dict(), max_epsilon, max_delta)
        for d in as_designs(designs)
    ]


def verify_design(
    design: Design,
    pairs: str = "default",
    limit: int = 5000,
    epsilon: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """One row of ``verify --json``: the exact ε′ of a tiny design against our bounds
    (``progress(done, total)`` is called as its instances are solved)."""
    from ampcalc.analyses.verify import verify_row  # lazy: check and validate don't use it

    if getattr(design.mechanism, "profile", None) is not None:
        raise AmpcalcError(
            f"design {design.name!r}: verify takes M as an (epsilon, delta) pair; a named "
            "mechanism's profile is checked against mpmath oracles in the test suite"
        )

    return verify_row(design, pairs, limit, epsilon, progress)


def verify_designs(
    designs: Any,
    *,
    pairs: str = "default",
    limit: int = 5000,
    epsilon: float | None = None,
) -> list[dict[str, Any]]:
    """``ampcalc.api.verify`` (documented there)."""
    from ampcalc.designs.sources import as_designs  # lazy: > 20 ms

    if pairs not in ("default", "all"):
        raise AmpcalcError(f"pairs: expected 'default' or 'all', got {pairs!r}")
    if limit < 1:
        raise AmpcalcError(f"limit: expected a whole number >= 1, got {limit!r}")
    return [verify_design(d, pairs, limit, epsilon) for d in as_designs(designs)]
