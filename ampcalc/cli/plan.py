"""``ampcalc plan``: does secret SRSWOR sampling buy accuracy at a fixed privacy target?

A planner design names the *population-level* target (ε, δ) the release must meet, an
SRSWOR sampling frame (population N; a fixed ``sample`` or a grid of ``rates``) and a
``statistic:`` block (``mean`` | ``median`` | ``custom``). For each rate it reports the
sample-spend (ε_n, δ_n) that Hu et al. Theorem 1 allows, the variance (MSE) of the private
estimate from the sample and from the whole population, and whether sampling gains.
Science: Hu et al., §4, spec §9; the computations live in
``ampcalc.math.accuracy``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from ampcalc.cli.app import (
    ExitCode,
    FormatOpt,
    JsonOpt,
    app,
    check_option,
    emit_result,
    resolve_format,
)
from ampcalc.cli.conventions import OutputOpt
from ampcalc.model.references import DERIVATIONS, HU_2023

__all__ = ["sparkline", "table"]

_SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """A one-line chart of log(V_n/V_N) (higher = worse)."""
    logs = [math.log10(v) for v in values if v > 0]
    if not logs:
        return ""
    lo, hi = min(logs), max(logs)
    span = hi - lo or 1.0
    return "".join(_SPARK[round((v - lo) / span * (len(_SPARK) - 1))] for v in logs)


def _g(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    return f"{x:.4g}"


def table(plan: dict[str, Any], rich: bool) -> str:
    """The table of one plan, fitted to the terminal (``render.render_table``)."""
    from ampcalc.output.render import render_table  # lazy: start-up (--help)

    title = (
        f"{plan['name']} — {plan['statistic']}: population target ε = "
        f"{plan['epsilon_population']:g}, δ = {plan['delta_population']:g}, "
        f"N = {plan['population']}"
    )
    lines: list[str] = []
    head = ["rate", "n", "ε_n (sample)", "δ_n", "V_n", "V_N", "V_n/V_N", "r", "share max", "gain"]
    body = []
    for r in plan["rows"]:
        ratio = (
            r["variance_sample"] / r["variance_population"] if r["variance_population"] else None
        )
        body.append(
            [
                _g(r["rate"]),
                _g(r["sample_size"]),
                _g(r["epsilon_sample"]),
                _g(r["delta_sample"]),
                _g(r["variance_sample"]),
                _g(r["variance_population"]),
                _g(ratio),
                _g(r["noise_ratio"]),
                _g(r["variance_share_max"]),
                _g(r["gain"]),
            ]
        )
    if rich and len(plan["rows"]) > 1:
        ratios = [
            r["variance_sample"] / r["variance_population"]
            for r in plan["rows"]
            if r["variance_population"]
        ]
        lines.append(f"V_n/V_N by rate (log scale): {sparkline(ratios)}")
    lines.append(f"best rate: {plan['best_rate']:g}")
    lines.append(f"conclusion: {plan['conclusion']}")
    if "max_rate_for_gain" in plan:
        lines.append(
            f"largest rate at which a sampling-variance share of {plan['variance_share']:g} "
            f"of V_N still allows a gain: {plan['max_rate_for_gain']:.6g} ({HU_2023}, §4.1, "
            "where the share is called q)"
        )
    lines.extend(f"assumption: {a}" for a in plan["assumptions"])
    lines.extend(f"note: {n}" for n in plan["notes"])
    return render_table(head, body, lines, rich_output=rich, title=title)


@app.command(rich_help_panel="Budget and planning")
def plan(
    design: Annotated[
        str | None,
        typer.Argument(
            help="Planner design (YAML); '-' reads standard input.", show_default=False
        ),
    ] = None,
    q: Annotated[
        float | None,
        typer.Option(
            "--variance-share",
            "--q",
            help="Sampling-variance share of V_N (q in Hu et al.; --q is the old name): "
            f"report the largest rate that still allows a gain ({DERIVATIONS}, §2.7).",
            show_default=False,
        ),
    ] = None,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    out: OutputOpt = None,
) -> int:
    """Plan accuracy: does sampling (SRSWOR) buy accuracy at a fixed population target ε?

    Example:  ampcalc plan examples/plans/mean.yaml --variance-share 0.6
    """
    output = resolve_format(fmt, as_json, out)
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.load.fields import Field  # lazy: start-up (--help)

    share = Field(name="q", kind="float", doc="variance share", low=0.0, high=1.0, high_open=True)
    check_option(q, "--variance-share", share)

    # a path (or '-', or nothing: standard input), never YAML text as the API also takes
    source = design if design in (None, "-") else Path(design)
    result = api.plan(source, q).to_dict()
    emit_result(
        output,
        "plan",
        {"results": [result]},
        csv=_csv_records(result),
        table=lambda rich: table(result, rich),
        to=out,
        rows=len(result["rows"]),
    )
    return int(ExitCode.OK)


def _csv_records(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One CSV row per rate: the plan's name, statistic and best rate, then the row."""
    recs = []
    for r in result["rows"]:
        rec = {
            "name": result["name"],
            "statistic": result["statistic"],
            "best_rate": result["best_rate"],
            **r,
        }
        if "max_rate_for_gain" in result:
            rec["variance_share"] = result["variance_share"]
            rec["max_rate_for_gain"] = result["max_rate_for_gain"]
        recs.append(rec)
    return recs
