"""``ampcalc invert --solve sigma|scale``: noise calibration for named mechanisms.

Not a command of its own: ``invert`` calls ``run_solve`` when ``--solve`` is given.
JSON: ``invert``'s, with M's ``epsilon`` null and the calibrated noise under ``knob``:
``{"name": "sigma"|"scale", "mechanism", "sensitivity", "value", "impossible_below",
"epsilon_prime_at_value"}`` (``details.inverse`` says how it was found).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ampcalc.cli.app import ExitCode, Format, emit_result, say


def run_solve(
    designs: Sequence[Any],
    knob: str,
    target: float | None,
    target_delta: float | None,
    output: Format,
) -> int:
    """Calibrate every design's noise to the target and print the results."""
    from ampcalc.accounting.calibrate import solve
    from ampcalc.model.errors import DesignError

    results = []
    for d in designs:
        t = target
        if t is None and d.target is not None:
            t = d.target.epsilon_prime
        if t is None:
            raise DesignError(
                f"design {d.name!r}: no target; give --target T or `target: {{epsilon_prime: T}}`"
            )
        results.append(solve(d, knob, float(t), target_delta))
    code = ExitCode.OK
    for r in results:
        if r["knob"]["value"] is None:
            say(f"{r['name']}: no {knob} meets the target ε′ in the searched range")
    emit_result(
        output,
        "invert",
        {"results": results},
        csv=results,
        table=lambda rich: _table(results, rich),
    )
    return int(code)


def _table(results: list[dict[str, Any]], rich: bool) -> str:
    from ampcalc.output.render import fmt, render_table

    header = ["design", "scheme", "target ε′", "δ′", "solve", "certified", "impossible below"]
    rows = [
        [
            r["name"],
            r["scheme"],
            fmt(r["target"]["epsilon_prime"]),
            fmt(r["target"]["delta_prime"]),
            f"{r['knob']['mechanism']} {r['knob']['name']}",
            fmt(r["knob"]["value"]),
            fmt(r["knob"]["impossible_below"]),
        ]
        for r in results
    ]
    footer = [
        f"{r['name']}: ε′ at the certified {r['knob']['name']}: "
        f"{fmt(r['knob']['epsilon_prime_at_value'])}; " + "; ".join(r["warnings"])
        for r in results
    ]
    return render_table(header, rows, footer, rich_output=rich)
