"""``ampcalc verify``: the exact worst case of a tiny design next to the tool's bounds.

For each design, the scheme's verify hook (``ampcalc.verify``) gives exact sample
distributions for neighbouring tiny populations; an exact linear programme over all
ε-DP binary mechanisms gives ε′_exact, and the tool's own bounds must satisfy
lower <= exact <= upper. With δ > 0 the programme runs over all (ε, δ)-DP binary
mechanisms: the worst divergence at the upper ε′ must be at most the reported δ′, and
the exact ε′ at δ′ at least the lower bound. Exit 0 PASS or INCONCLUSIVE (nothing was
found wrong; the verdict is in the output), 3 FAIL (our bound is wrong), 2 bad input or
a design outside its theorem's conditions (highest wins).
"""

from __future__ import annotations

import enum
from typing import Annotated, Any

import typer

from ampcalc.cli.app import (
    DesignArg,
    EpsilonOpt,
    ExitCode,
    FormatOpt,
    JsonOpt,
    SetOpt,
    app,
    emit_result,
    load,
    resolve_format,
)
from ampcalc.cli.conventions import OutputOpt, Progress, progress_bar, say
from ampcalc.model.errors import printable


class Pairs(str, enum.Enum):
    default = "default"
    all = "all"


def verify_design(
    design: Any,
    pairs: str,
    limit: int,
    epsilon: float | None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """One row of ``verify --json`` for a loaded design (``api.verify_design``)."""
    from ampcalc import api  # lazy: start-up (--help)

    return api.verify_design(design, pairs, limit, epsilon, progress)


def too_large(row: dict[str, Any]) -> bool:
    """The row was refused before solving: its domain is beyond ``--limit``."""
    from ampcalc.schemes.exact import TOO_LARGE  # lazy: start-up (--help)

    return row["status"] == "INCONCLUSIVE" and str(row.get("reason") or "").startswith(TOO_LARGE)


def _line(r: dict[str, Any]) -> str:
    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.10g}"

    lo, up = r["epsilon_prime"]["lower"], r["epsilon_prime"]["upper"]
    text = (
        f"{r['status']} {r['name']} ({r['scheme']}): exact {f(r['epsilon_prime_exact'])}, "
        f"bounds [{f(lo)}, {f(up)}]"
    )
    solved = r.get("epsilon_prime_exact") is not None or r.get("delta_prime_exact") is not None
    if solved and (r.get("delta") or r.get("delta_prime")):
        # (ε, δ): ε′_exact is read at the reported δ′; the divergence at the upper ε′
        text += f" at δ′ {f(r.get('delta_prime'))}"
        if up is not None:
            text += f"; exact δ {f(r.get('delta_prime_exact'))} at the upper ε′"
    if r.get("samples"):
        text += f", {r['samples']} samples"
    if r.get("worst_pair"):
        text += f"; worst pair: {r['worst_pair']}"
    if r.get("reason"):
        text += f"; {r['reason']}"
    return text


@app.command(rich_help_panel="Checks and reference")
def verify(
    design: DesignArg = None,
    exact: Annotated[
        bool,
        typer.Option(
            "--exact",
            help="Solve the exact programme (the only mode; accepted for explicit scripts).",
        ),
    ] = True,
    pairs: Annotated[
        Pairs,
        typer.Option(
            "--pairs",
            help="default: the neighbouring populations the theorems use; all: also every "
            "pair over a two-value universe that differs in one record or one group.",
        ),
    ] = Pairs.default,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            help="Largest number of distinct samples to enumerate; a larger design is "
            "refused up front with the time an exact solve would take (roughly 1 s + "
            "(samples/1000)² s).",
            min=1,
        ),
    ] = 5000,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    set_: SetOpt = None,
    epsilon: EpsilonOpt = None,
    out: OutputOpt = None,
) -> int:
    """Exact worst case of a tiny design (LP over all ε- or (ε, δ)-DP mechanisms) vs bounds.

    Example:  ampcalc verify examples/designs/group-verify-tiny.yaml --pairs all
    """
    output = resolve_format(fmt, as_json, out)

    designs = load(design, set_)
    rows = []
    for d in designs:
        with progress_bar(f"verifying {d.name}") as progress:
            rows.append(verify_design(d, pairs.value, limit, epsilon, progress))
    code = ExitCode.OK
    for d, r in zip(designs, rows, strict=True):
        if too_large(r):
            # not attempted, the estimate in the reason: INCONCLUSIVE (nothing was found
            # wrong), said at the design's place with the way to run it anyway
            where = getattr(d, "where", None)
            at = where.prefix() if where is not None and where.file else ""
            say(
                f"{at}{r['name']}: INCONCLUSIVE: {r['reason']}; raise --limit (now {limit}) "
                "to run it anyway"
            )
        elif r["status"] == "FAIL":
            say(f"{r['name']}: FAIL: {r['reason']}")
            code = max(code, ExitCode.SELF_CHECK_FAILED)
        elif r["status"] == "INCONCLUSIVE":
            say(f"{r['name']}: INCONCLUSIVE: {r['reason']}")
            if r.get("error"):  # the design is outside its theorem's conditions
                code = max(code, ExitCode.BAD_INPUT)
    emit_result(
        output,
        "verify",
        {"results": rows},
        csv=rows,
        table=lambda _rich: "".join(printable(_line(r)) + "\n" for r in rows),
        to=out,
        rows=len(rows),
    )
    return int(code)
