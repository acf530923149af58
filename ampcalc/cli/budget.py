"""``ampcalc budget``: total ε of a ledger of releases, each on its own sample.

The computation is ``ampcalc.api.budget`` (``ampcalc.analyses.budget`` documents the
ledger format and how it is composed).

JSON: ``{"ampcalc_version", "command": "budget", "name", "target": {"epsilon",
"delta"}, "neighbours", "entries": [{"name", "scheme", "count", "epsilon_prime":
{"lower", "upper"}, "delta_prime", "guarantee_neighbours", "composed_as", "profile"?}],
"total": {"lower", "upper", "upper_from"?, "delta", "accountant", "discretization",
"width"?, "accuracy"?: {"optimistic", "width", "meaning"}, "lower_meaning",
"lower_witness"?, "lower_reason"?}, "remaining", "overrun"}`` (``overrun``: the upper
total less the budget when it is above it, else null; a warning line on stderr says it
too).
"""

from __future__ import annotations

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
from ampcalc.cli.conventions import OutputOpt, progress_bar, say
from ampcalc.model.errors import DesignError
from ampcalc.output.terms import (
    GLOSSARY_LINE,
    NOISE_CERTIFIED,
    NOISE_IMPOSSIBLE,
    composed_as,
    plain_references,
)

LedgerArg = Annotated[str, typer.Argument(help="Budget ledger (YAML).", show_default=False)]
LedgerSetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override a field of the ledger or of an entry's design (repeatable; "
        "value read as YAML): target.epsilon=2, entries[0].count=6, "
        "entries[0].design.FIELD=V (a design file is read, then "
        "overridden); mechanism.FIELD or sampling.FIELD reach every entry's design.",
        metavar="PATH=VALUE",
        show_default=False,
    ),
]
FailAboveOpt = Annotated[
    float | None,
    typer.Option(
        "--fail-above",
        help="Exit 1 when the total's upper ε is above this value or missing.",
        show_default=False,
    ),
]
SolveOpt = Annotated[
    str | None,
    typer.Option(
        "--solve",
        help="Solve instead, against the ledger's target ε (or --target): sigma "
        "(one common σ of the Gaussian entries), scale (of the Laplace entries), or "
        "count (how many waves of the --entry fit the budget).",
        show_default=False,
    ),
]
EntryOpt = Annotated[
    str | None,
    typer.Option(
        "--entry",
        help="The entry --solve count counts: its index from 0 (as in "
        "--set entries[0].count=6) or its name; optional with one entry.",
        show_default=False,
    ),
]
TargetOpt = Annotated[
    float | None,
    typer.Option("--target", "-t", help="The ε budget for --solve.", show_default=False),
]
DiscretizationOpt = Annotated[
    float | None,
    typer.Option(
        "--discretization",
        help="The accountant's step in privacy loss (default: the ledger's "
        "`discretization`, else 1e-4); smaller is tighter and slower.",
        show_default=False,
    ),
]


@app.command(rich_help_panel="Budget and planning")
def budget(
    ledger: LedgerArg,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: LedgerSetOpt = None,
    fail_above: FailAboveOpt = None,
    solve: SolveOpt = None,
    entry: EntryOpt = None,
    target: TargetOpt = None,
    discretization: DiscretizationOpt = None,
    out: OutputOpt = None,
) -> int:
    """Total ε at the ledger's δ over releases on independently drawn samples.

    Example:  ampcalc budget examples/budget/year.yaml --fail-above 3

    Example:  ampcalc budget examples/budget/year.yaml --set target.epsilon=1

    Example:  ampcalc budget examples/budget/year.yaml --solve count --entry 2
    """
    from ampcalc import api  # lazy: start-up (--help)

    output = resolve_format(fmt, as_json, out)
    check_option(fail_above, "--fail-above", "gate")
    check_option(target, "--target", api.EPSILON_BUDGET)
    check_option(discretization, "--discretization", api.DISCRETIZATION)
    led = api.load_ledger(ledger, overrides=set_ or (), discretization=discretization)
    if entry is not None and solve != "count":
        raise DesignError("--entry names the entry --solve count counts; add --solve count")
    if solve == "count":
        return _run_count(led, entry, target, output, out)
    if solve is not None:
        return _run_solve(led, solve, target, output, out)
    return _run_total(led, fail_above, output, out)


def _run_total(led: Any, fail_above: float | None, output: Any, out: str | None) -> int:
    """The ledger's total: entries without a bound and an overrun said on stderr, the
    ``--fail-above`` gate, then the table, JSON or CSV."""
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.output.render import fmt as num  # lazy: start-up (--help)

    with progress_bar("composing the budget") as progress:
        payload = api.budget(led, progress)
    code = ExitCode.OK
    for row, item in zip(payload["entries"], led.entries, strict=True):
        if row.get("error"):  # said once, at the entry's place in the ledger
            where = getattr(item, "where", None)
            at = where.prefix() if where is not None and where.file else ""
            say(f"{at}{row['name']}: {row['error']}")
    up = payload["total"]["upper"]
    if payload.get("overrun") is not None:
        say(
            f"warning: the upper total {num(up)} is {num(payload['overrun'])} over the "
            f"budget ε = {num(payload['target']['epsilon'])}"
        )
    if fail_above is not None and (up is None or up > fail_above):
        code = ExitCode.GATE_FAILED
    emit_result(
        output,
        "budget",
        payload,
        csv=_csv(payload),
        table=lambda rich: _table(payload, rich),
        to=out,
        rows=len(payload["entries"]) + 1,
    )
    return int(code)


def _csv(payload: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for r in payload["entries"]:
        rows.append(
            {
                "entry": r["name"],
                "scheme": r["scheme"],
                "count": r["count"],
                "epsilon_prime_lower": r["epsilon_prime"]["lower"],
                "epsilon_prime_upper": r["epsilon_prime"]["upper"],
                "delta_prime": r["delta_prime"],
                "composed_as": r["composed_as"],
            }
        )
    t = payload["total"]
    rows.append(
        {
            "entry": "TOTAL",
            "scheme": "",
            "count": sum(r["count"] for r in payload["entries"]),
            "epsilon_prime_lower": t["lower"],
            "epsilon_prime_upper": t["upper"],
            "delta_prime": t["delta"],
            "composed_as": t["accountant"],
        }
    )
    return rows


def _table(payload: dict[str, Any], rich: bool) -> str:
    from ampcalc.output.render import fmt, render_table  # lazy: start-up (--help)

    header = ["entry", "scheme", "count", "ε′ lower", "ε′ upper", "δ′", "composed as"]
    rows = [
        [
            r["name"],
            r["scheme"],
            str(r["count"]),
            fmt(r["epsilon_prime"]["lower"]),
            fmt(r["epsilon_prime"]["upper"]),
            fmt(r["delta_prime"]),
            composed_as(r["composed_as"]) or "-",
        ]
        for r in payload["entries"]
    ]
    t = payload["total"]
    rows.append(
        [
            "TOTAL",
            "",
            str(sum(r["count"] for r in payload["entries"])),
            fmt(t["lower"]),
            fmt(t["upper"]),
            fmt(t["delta"]),
            "no-guarantee" if t["upper"] is None else "see below",
        ]
    )
    # an entry without a bound says why (also on stderr, at its place in the ledger)
    footer = [f"{r['name']}: no bound: {r['error']}" for r in payload["entries"] if r.get("error")]
    if t.get("accountant"):
        footer.append(f"total: composed {composed_as(t['accountant'])}")
    else:
        footer.append("total:")
    if t.get("discretization") is not None:
        footer.append(
            f"  accountant's step in privacy loss {t['discretization']:g}"
            + (f"; [lower, upper] is {100 * t['width']:.3g}% wide" if t.get("width") else "")
        )
    acc = t.get("accuracy") or {}
    if acc.get("width") is not None:
        footer.append(
            f"  upper's accuracy: the optimistic estimate of the same composition is "
            f"{fmt(acc['optimistic'])}, {100 * acc['width']:.3g}% below it (discretisation, "
            "not a lower bound)"
        )
    if t.get("upper_from") not in (None, "accountant"):
        footer.append(f"  upper: {composed_as(t['upper_from'])}")
    if t.get("lower_meaning"):
        footer.append(f"  lower: {composed_as(t['lower_meaning'])}")
    if t.get("lower_reason"):
        footer.append(f"  no lower total: {composed_as(t['lower_reason'])}")
    if t.get("note"):
        footer.append(f"  {t['note']}")
    tgt = payload["target"]
    if tgt["epsilon"] is not None:
        rem = payload["remaining"]
        footer.append(
            f"budget ε = {fmt(tgt['epsilon'])} at δ = {fmt(tgt['delta'])}: remaining "
            + ("unknown (no guarantee)" if rem is None else fmt(rem))
        )
    footer.append(GLOSSARY_LINE)
    return render_table(header, rows, footer, rich_output=rich)


# ---- budget --solve: one common noise scale for the ledger ----------------------------
# JSON: ``{"ampcalc_version", "command": "budget", "name", "target": {"epsilon", "delta"},
# "neighbours", "discretization", "search_discretization", "warnings", "knob": {"name",
# "mechanism", "entries", "sensitivity", "value", "impossible_below", "width",
# "epsilon_upper_at_value", "epsilon_lower_at_impossible"}}`` (see
# ``ampcalc.api.budget_solve``). Exit 0, as ``invert --solve``; a note on stderr when
# no value meets the target.


def _run_solve(led: Any, knob: str, target: float | None, output: Any, out: str | None) -> int:
    from ampcalc import api  # lazy: start-up (--help)

    payload = api.budget_solve(led, knob, target)
    k = payload["knob"]
    if k["value"] is None:
        say(f"{payload['name']}: no {knob} meets the target ε in the searched range")
    emit_result(
        output,
        "budget",
        payload,
        csv=[dict(k, entries=", ".join(k["entries"]), target=payload["target"]["epsilon"])],
        table=lambda rich: _solve_table(payload, rich),
        to=out,
        rows=1,
    )
    return int(ExitCode.OK)


def _solve_table(payload: dict[str, Any], rich: bool) -> str:
    from ampcalc.output.render import fmt, render_table  # lazy: start-up (--help)

    k = payload["knob"]
    header = ["ledger", "target ε", "δ", "solve", NOISE_CERTIFIED, NOISE_IMPOSSIBLE, "width"]
    rows = [
        [
            payload["name"],
            fmt(payload["target"]["epsilon"]),
            fmt(payload["target"]["delta"]),
            f"{k['mechanism']} {k['name']}",
            fmt(k["value"]),
            fmt(k["impossible_below"]),
            "-" if k["width"] is None else f"{100 * k['width']:.3g}%",
        ]
    ]
    footer = [
        f"upper total at the certified {k['name']}: {fmt(k['epsilon_upper_at_value'])}; "
        f"lower total at the {k['name']} below which the target is impossible: "
        f"{fmt(k['epsilon_lower_at_impossible'])} "
        f"(accountant's step in privacy loss {payload['discretization']:g})",
        *(plain_references(w) for w in payload["warnings"]),
        GLOSSARY_LINE,
    ]
    return render_table(header, rows, footer, rich_output=rich)


# ---- budget --solve count: how many waves of one entry fit ----------------------------
# JSON: ``{"ampcalc_version", "command": "budget", "name", "target": {"epsilon", "delta"},
# "neighbours", "discretization", "warnings", "knob": {"name": "count", "entry", "index",
# "current", "value", "more", "fits", "epsilon_upper_at_current", "epsilon_upper_at_value",
# "epsilon_upper_at_next"}}`` (see ``ampcalc.api.budget_count``). Exit 0 when the ledger
# as written fits its budget (``more`` >= 0), 1 when it does not (``more`` < 0, or no
# count fits: a note on stderr), 2 on bad input.


def _run_count(
    led: Any, entry: str | None, target: float | None, output: Any, out: str | None
) -> int:
    from ampcalc import api  # lazy: start-up (--help)
    from ampcalc.output.render import fmt  # lazy: start-up (--help)

    payload = api.budget_count(led, entry, target)
    k = payload["knob"]
    eps = fmt(payload["target"]["epsilon"])
    if k["value"] is None:
        say(
            f"warning: {payload['name']}: no count of {k['entry']!r} fits the budget ε = "
            f"{eps}: the other entries alone are above it"
        )
    elif not k["fits"]:
        say(
            f"warning: {payload['name']}: the ledger is over the budget ε = {eps} (upper "
            f"total {fmt(k['epsilon_upper_at_current'])}): at most {k['value']} waves of "
            f"{k['entry']!r} fit, {-k['more']} fewer than its {k['current']}"
        )
    emit_result(
        output,
        "budget",
        payload,
        csv=[dict(k, target=payload["target"]["epsilon"], delta=payload["target"]["delta"])],
        table=lambda rich: _count_table(payload, rich),
        to=out,
        rows=1,
    )
    return int(ExitCode.OK if k["fits"] else ExitCode.GATE_FAILED)


def _count_table(payload: dict[str, Any], rich: bool) -> str:
    from ampcalc.output.render import fmt, render_table  # lazy: start-up (--help)

    k = payload["knob"]
    header = ["ledger", "target ε", "δ", "entry", "count", "largest count", "more"]
    rows = [
        [
            payload["name"],
            fmt(payload["target"]["epsilon"]),
            fmt(payload["target"]["delta"]),
            f"{k['index']}: {k['entry']}",
            str(k["current"]),
            "none" if k["value"] is None else str(k["value"]),
            "-" if k["more"] is None else f"{k['more']:+d}",
        ]
    ]
    footer = [
        f"upper total: {fmt(k['epsilon_upper_at_current'])} now, "
        f"{fmt(k['epsilon_upper_at_value'])} at the count that fits, "
        f"{fmt(k['epsilon_upper_at_next'])} at one more "
        f"(accountant's step in privacy loss {payload['discretization']:g})",
        *(plain_references(w) for w in payload["warnings"]),
        GLOSSARY_LINE,
    ]
    return render_table(header, rows, footer, rich_output=rich)
