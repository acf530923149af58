"""``ampcalc weights``: per-record inclusion probabilities and weights of an importance design.

Writes q(x), w(x) = 1/q(x) and ε̂(x) for every record (003_e3b635228222e4e2.txt
Theorem 6 / Theorem 10), draws the Poisson sample reproducibly (``--sample --seed``:
row i's coin is a Philox draw keyed by (seed, i), so chunked or distributed runs agree),
or suggests planning values (``--suggest``) computed from the data.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..cli import DesignArg, ExitCode, SetOpt, app, emit, load, say


@app.command()
def weights(
    design: DesignArg = None,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write CSV here (default: standard output)."),
    ] = None,
    sample: Annotated[
        bool, typer.Option("--sample", help="Draw the Poisson sample (records with weights).")
    ] = False,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed of the sample draw (needed with --sample).")
    ] = None,
    suggest: Annotated[
        bool,
        typer.Option("--suggest", help="Print planning values computed from the data."),
    ] = False,
    overrides: SetOpt = None,
) -> int:
    """Per-record probabilities q*(x) and weights w*(x) of an importance design (CSV)."""
    import numpy as np

    from ..errors import ConditionError, DesignError
    from ..importance_kernels import uniforms
    from ..importance_records import iter_chunks
    from ..schemes import importance as imp

    designs = [d for d in load(design, overrides) if d.scheme == "importance"]
    if not designs:
        raise DesignError("`ampcalc weights` needs a design with `scheme: importance`")
    if len(designs) > 1:
        raise DesignError(
            f"the file holds {len(designs)} importance designs; `ampcalc weights` takes one "
            "(select it with a file of its own)"
        )
    d = designs[0]
    params: Any = imp.bind_target(d.params, d.target)
    profile = d.mechanism
    if suggest:
        l1 = params.data.l1
        l2 = np.sqrt(params.data.sq_l2)
        lines = [
            f"records: {params.data.count}",
            f"dimension: {params.data.dimension}",
            f"mean_sq_norm (x̃ = mean ‖x‖₂²): {float(np.mean(params.data.sq_l2)):.10g}",
            f"max ‖x‖₁: {float(np.max(l1)):.10g}",
            f"max ‖x‖₂: {float(np.max(l2)):.10g}",
        ]
        emit("\n".join(lines) + "\n")
        say(
            "warning: these values come from the data. Using them as `mean_sq_norm:` or "
            "`radius:` makes q(·) data-dependent and breaks the guarantee (spec A4): use "
            "them for planning only, and fix the public values from other sources."
        )
        return int(ExitCode.OK)
    if sample and seed is None:
        raise DesignError("--sample needs --seed S (the draw must be reproducible)")
    try:
        analysis_mode = params.probabilities
        eps_star = None
        if analysis_mode == "privacy-constrained":
            eps_star = imp._target_of(params)
            if profile.epsilon > eps_star:
                # the same refusal as `bound` (names the largest feasible radius)
                imp.analyse(params, profile, d.guarantee or imp.Neighbours.ADD_REMOVE)
        k0 = profile.epsilon / profile.natural
        fig = imp.record_figures(params, profile, k0, eps_star)
    except ConditionError as err:
        say(f"ampcalc: {d.name}: {err.message}")
        return int(ExitCode.BAD_INPUT)
    if fig.outside.any():
        rows = ", ".join(str(int(i)) for i in np.flatnonzero(fig.outside)[:10])
        say(
            f"warning: {int(fig.outside.sum())} record(s) outside the domain or infeasible "
            f"(first rows, 0-based: {rows}); written with q = 1 (privacy-constrained) or "
            "their q, not clipped"
        )
    fh = open(output, "w", encoding="utf-8") if output else None
    try:
        write = fh.write if fh else emit
        if not sample:
            write("row,probability,weight,epsilon_hat\n")
            step = 1 << 18
            for start in range(0, fig.q.size, step):
                stop = min(start + step, fig.q.size)
                block = np.column_stack(
                    [
                        np.arange(start, stop),
                        fig.q[start:stop],
                        fig.w[start:stop],
                        fig.eps_hat[start:stop],
                    ]
                )
                write(_rows(block, int_first=True))
            return int(ExitCode.OK)
        src = params.data.source

        def err(msg: str) -> Exception:
            return DesignError(msg)

        write("row," + ",".join(src.names) + ",probability,weight\n")
        kept = 0
        for start, x, _ in iter_chunks(src, err):
            n = x.shape[0]
            q = fig.q[start : start + n]
            take = uniforms(int(seed), start, n) < q
            if take.any():
                idx = np.flatnonzero(take)
                block = np.column_stack(
                    [start + idx, x[idx], q[idx], fig.w[start : start + n][idx]]
                )
                write(_rows(block, int_first=True))
                kept += idx.size
        say(f"sampled {kept} of {fig.q.size} records (expected {float(np.sum(fig.q)):.6g})")
        return int(ExitCode.OK)
    finally:
        if fh:
            fh.close()


def _rows(block: Any, *, int_first: bool) -> str:
    import io

    import numpy as np

    buf = io.StringIO()
    fmt = ["%d"] + ["%.17g"] * (block.shape[1] - 1) if int_first else "%.17g"
    np.savetxt(buf, block, delimiter=",", fmt=fmt)
    return buf.getvalue()
