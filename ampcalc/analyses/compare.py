"""``ampcalc compare``: the certified ε at a target ε′ and each family's accuracy figures.

The engine inverts each design at the target; a family that knows its estimator
(``Scheme.compare``) adds accuracy columns computed from that inversion. Pure: no
printing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ampcalc import engine, schemes
from ampcalc.model.design import Design
from ampcalc.model.errors import ConditionError, DesignError


def compare_designs(
    designs: Sequence[Design], target: float | None = None
) -> list[dict[str, Any]]:
    """Certified ε at a target ε′ and each scheme's accuracy figures (``ampcalc compare``).

    Returns:
        One dict per design, the ``results`` entries of ``compare --json``:
        ``name``, ``scheme``, ``target``, ``epsilon: {certified, impossible_above}``,
        ``accuracy`` (and ``error`` for a design outside its conditions).
    Raises:
        DesignError: a design without a target (give ``target`` or a ``target:`` block).
    """
    results: list[dict[str, Any]] = []
    for d in designs:
        t = target
        if t is None and d.target is not None:
            t = d.target.epsilon_prime
        if t is None:
            raise DesignError(
                f"design {d.name!r}: no target ε′: give a `target` or a `target: "
                "{epsilon_prime: T}` block in the design"
            )
        inverted = engine.invert(d, t)
        inv = inverted.to_dict()
        row: dict[str, Any] = {
            "name": d.name,
            "scheme": d.scheme,
            "target": t,
            "epsilon": dict(inv["epsilon"]),
            "accuracy": {},
        }
        error = inv.get("error")
        hook = schemes.get(d.scheme).compare
        if error is None and hook is not None:
            try:
                acc = dict(hook(d, float(t), inverted))
            except ConditionError as err:
                acc = {"error": err.message}
            error = acc.pop("error", None)
            row["accuracy"] = acc
        if error is not None:
            row["error"] = error
        results.append(row)
    return results
