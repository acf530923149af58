"""``ampcalc pws keys``: the expected number of keys a pws design reports for a frequency
distribution (a CSV, or a Zipf law), against sampled-SbH and the non-private sample
(Cohen et al. 2021, §8.1, Fig. 2 and 4: "20–300 % more keys")."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ampcalc.cli.app import ExitCode, FormatOpt, JsonOpt, SetOpt, emit_result, resolve_format
from ampcalc.cli.conventions import OutputOpt
from ampcalc.cli.pws import _design, pws_app


@pws_app.command("keys")
def keys_cmd(
    design: Annotated[str | None, typer.Argument(help="The pws design (YAML).")] = None,
    frequencies: Annotated[
        str | None,
        typer.Option(
            "--frequencies",
            help="CSV with a `frequency` column and an optional `count` column (keys with "
            "that frequency; default 1 per row).",
        ),
    ] = None,
    zipf: Annotated[
        float | None,
        typer.Option("--zipf", help="α of a Zipf law: key k has frequency ⌊(N/(k+1))^α⌋."),
    ] = None,
    support: Annotated[
        int, typer.Option("--support", help="N, the number of keys of the Zipf law.")
    ] = 100_000,
    fmt: FormatOpt = None,
    as_json: JsonOpt = False,
    overrides: SetOpt = None,
    out: OutputOpt = None,
) -> int:
    """Expected number of reported keys: PWS, sampled-SbH and the non-private sample.

    Example:  ampcalc pws keys examples/designs/pws.yaml --zipf 1.2
    """
    from ampcalc import api  # lazy: start-up (--help)

    if (frequencies is None) == (zipf is None):
        raise typer.BadParameter("give --frequencies FILE or --zipf ALPHA (one of them)")
    if zipf is not None and (not zipf > 0 or support < 1):
        raise typer.BadParameter("expected α > 0 and --support >= 1", param_hint="--zipf")
    out_format = resolve_format(fmt, as_json, out)
    d, params = _design(design, overrides)
    res: dict[str, Any] = {"design": d.name, "epsilon": params.epsilon, "delta": params.delta}
    res.update(api.pws_expected_keys(d, zipf=zipf, support=support, frequencies=frequencies))
    if zipf is not None:
        res.update({"zipf_alpha": zipf, "support": support})

    def table(rich: bool) -> str:
        from ampcalc.output.render import fmt as f6  # lazy: start-up (--help)
        from ampcalc.output.render import render_table  # lazy: start-up (--help)

        keys = res["keys"]
        body = [
            ["non-private sample", f6(res["sampled_keys"]), f6(res["sampled_keys"] / keys)],
            ["PWS", f6(res["pws_keys"]), f6(res["pws_fraction"])],
            [
                "sampled-SbH",
                f6(res["sbh_keys"]) if res["sbh_keys"] is not None else "-",
                f6(res["sbh_fraction"]) if res["sbh_fraction"] is not None else "-",
            ],
        ]
        ratio = res["ratio"]
        foot = [
            f"{d.name}: (ε, δ) = ({params.epsilon:g}, {params.delta:g}); {res['distribution']}: "
            f"{keys:.6g} keys, frequencies up to {res['max_frequency']}",
            (
                f"PWS reports {ratio:.4g}× as many keys as sampled-SbH "
                f"({100 * (ratio - 1):+.3g} %)"
                if ratio is not None
                else res["sbh_note"]
            ),
        ]
        return render_table(
            ["method", "expected keys reported", "fraction"], body, foot, rich_output=rich
        )

    emit_result(out_format, "pws keys", res, csv=[res], table=table, to=out, rows=1)
    return int(ExitCode.OK)


__all__ = ["keys_cmd"]
