"""Figures of a sweep (matplotlib, the optional extra ``ampcalc[plot]``).

``figure(sweep, path)`` draws what ``ampcalc sweep --plot`` promises: per design (and
per value of a second varied field) the lower and upper bound on ε′ as a shaded band
(upper solid, lower dashed), the no-sampling line ε′ = ε dotted, labelled axes, the
theorems in the caption; or, with ``heatmap=True`` and two varied fields, the upper
bound (or certified ε) over the grid. The figure has a fixed pixel size
(``size`` × ``dpi``), whatever its content, so a figure can be checked by its size.

matplotlib is imported inside the functions; without it, ``PlotUnavailable``
names the extra to install. ``text_chart`` is the dependency-free terminal chart.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.analyses.sweep import EPSILON_PATH, TARGET_PATH, Sweep
from ampcalc.load.files import atomic_write, refuse_input_as_output
from ampcalc.model.errors import AmpcalcError

FORMATS = (".png", ".svg", ".pdf")
SIZE = (7.0, 4.5)  # inches
DPI = 150  # -> 1050 x 675 pixels

LABELS = {
    EPSILON_PATH: "mechanism ε (M's own privacy parameter)",
    TARGET_PATH: "target ε′ for the population",
    "sampling.rate": "sampling rate q",
    "sampling.sample": "sample size m (records)",
    "sampling.population": "population size N (records)",
    "sampling.size.sd": "sample-size standard deviation σ (records)",
    "sampling.size.mean": "mean sample size (records)",
    "sampling.chosen": "clusters chosen ℓ",
    "sampling.clusters.size": "cluster size (records)",
    "sampling.clusters.chosen": "clusters chosen ℓ",
    "mechanism.delta": "mechanism δ",
}
Y_LABELS = {
    "bound": "population ε′ (amplified by sampling)",
    "invert": "mechanism ε the sample may spend",
    "plan": "q bound (largest Var(g(S)) / V_N for a gain)",
}


class PlotUnavailable(AmpcalcError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable(
            "drawing figures needs matplotlib, which is not installed; install the "
            "extra with: pip install 'ampcalc[plot]' (or leave out --plot for CSV/JSON)"
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def label(path: str) -> str:
    """A readable axis label for a design path (units where they apply)."""
    import re

    rel = re.sub(r"^designs\[\d+\]\.", "", path)
    return LABELS.get(rel, rel)


def check_output(path: str | Path) -> Path:
    """The figure path, checked: a known extension and an existing directory."""
    p = Path(path)
    refuse_input_as_output(p, option="--plot")
    if p.suffix.lower() not in FORMATS:
        raise AmpcalcError(f"--plot {str(path)!r}: expected a file ending in {', '.join(FORMATS)}")
    if not p.parent.exists():
        raise AmpcalcError(f"--plot {str(path)!r}: directory {str(p.parent)!r} does not exist")
    return p


def groups(sweep: Sweep) -> list[tuple[str, dict[str, Any], np.ndarray]]:
    """Row indices of each curve: (label, {design, second value}, indices sorted by x)."""
    cols = sweep.columns
    x = np.asarray(cols[sweep.varies[0].path], dtype=float)
    design = cols["design"]
    second = sweep.varies[1] if len(sweep.varies) > 1 else None
    names = list(dict.fromkeys(design.tolist()))
    out = []
    for name in names:
        in_design = design == name
        values = second.values if second is not None else (None,)
        for val in values:
            sel = in_design.copy()
            if second is not None:
                assert val is not None  # one of second.values
                sel &= np.asarray(cols[second.path], dtype=float) == float(val)
            idx = np.flatnonzero(sel)
            if idx.size == 0:
                continue
            idx = idx[np.argsort(x[idx], kind="stable")]
            parts = [name] if len(names) > 1 or second is None else []
            if second is not None:
                parts.append(f"{_short(second.path)} = {val:g}")
            out.append((", ".join(parts), {"design": name, "second": val}, idx))
    return out


SHORT = {TARGET_PATH: "target ε′", EPSILON_PATH: "mechanism ε"}


def _short(path: str) -> str:
    import re

    key = re.sub(r"^designs\[\d+\]\.", "", path)
    if key in SHORT:
        return SHORT[key]
    rel = label(path)
    return rel.split(" (")[0]


def caption(sweep: Sweep) -> str:
    """The theorems the curves rest on (deduplicated, in design order)."""
    from ampcalc.model.references import describe

    seen: list[str] = []
    for meta in sweep.designs.values():
        for b in meta.get("basis", []):
            if describe(b) not in seen:
                seen.append(describe(b))
    return ("Basis: " + "; ".join(seen)) if seen else ""


def figure(
    sweep: Sweep,
    path: str | Path,
    *,
    log_x: bool | None = None,
    log_y: bool = False,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    x_factor: float = 1.0,
    heatmap: bool = False,
    y_column: str | None = None,
    size: tuple[float, float] = SIZE,
    dpi: int = DPI,
) -> Path:
    """Draw a sweep to ``path`` (.png, .svg or .pdf) and return the path.

    Args:
        sweep: the evaluated sweep.
        path: output file; the extension picks the format.
        log_x: log x axis (default: when the x values were spaced with ``:log``).
        log_y: log y axis.
        title, xlabel, ylabel: override the defaults.
        x_factor: multiply the x values by this for display (e.g. ``1/N`` to show a
            sample size as a sampling rate).
        heatmap: with two varied fields, a heatmap of the upper bound (or certified ε)
            instead of one line per value of the second field.
        y_column: plot this result column as plain lines instead of the bound band.
    Raises:
        PlotUnavailable: matplotlib is not installed.
        AmpcalcError: an unknown extension or column, or nothing finite to draw.
    """
    out = check_output(path)
    plt = _pyplot()
    first = sweep.varies[0]
    if log_x is None:
        log_x = first.log
    fig, ax = plt.subplots(figsize=size, dpi=dpi)
    try:
        if heatmap:
            _heatmap(fig, ax, sweep, x_factor=x_factor, log_x=log_x, log_y=log_y)
        else:
            _lines(ax, sweep, x_factor=x_factor, y_column=y_column)
            if log_x:
                ax.set_xscale("log")
            if log_y:
                ax.set_yscale("log")
            ax.grid(True, which="major", alpha=0.3)
            if ax.get_legend() is None and ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8, loc="best", framealpha=0.85)
        ax.set_xlabel(xlabel or label(first.path))
        if not heatmap:
            ax.set_ylabel(ylabel or (y_column or Y_LABELS[sweep.of]))
        elif ylabel or len(sweep.varies) > 1:
            ax.set_ylabel(ylabel or label(sweep.varies[1].path))
        if title:
            ax.set_title(title, fontsize=11)
        text = caption(sweep)
        bottom = 0.13
        if text:
            wrapped = textwrap.fill(text, width=int(size[0] * 17))
            lines = wrapped.count("\n") + 1
            bottom = 0.13 + 0.035 * lines
            fig.text(0.01, 0.01, wrapped, fontsize=6.5, color="0.3", va="bottom", ha="left")
        fig.subplots_adjust(left=0.1, right=0.97 if not heatmap else 0.9, top=0.92, bottom=bottom)
        with atomic_write(out, binary=True, option="--plot") as fh:
            fig.savefig(fh, dpi=dpi, format=out.suffix[1:].lower())
    finally:
        plt.close(fig)
    return out


def _finite(a: np.ndarray) -> bool:
    return bool(np.any(np.isfinite(a)))


def _lines(ax: Any, sweep: Sweep, *, x_factor: float, y_column: str | None) -> None:
    cols = sweep.columns
    first = sweep.varies[0]
    x_all = np.asarray(cols[first.path], dtype=float) * x_factor
    colours = [f"C{i % 10}" for i in range(64)]
    drawn = False
    references: list[np.ndarray] = []
    for i, (name, _, idx) in enumerate(groups(sweep)):
        c = colours[i % len(colours)]
        x = x_all[idx]
        if y_column is not None or sweep.of == "plan":
            col = y_column or _first_numeric(sweep)
            if col not in cols:
                raise AmpcalcError(
                    f"no result column {col!r}; columns: {', '.join(sweep.column_names())}"
                )
            y = np.asarray(cols[col], dtype=float)[idx]
            if _finite(y):
                ax.plot(x, y, color=c, lw=1.6, label=name or None)
                drawn = True
            continue
        if sweep.of == "bound":
            hi = np.asarray(cols["epsilon_prime.upper"], dtype=float)[idx]
            lo = np.asarray(cols["epsilon_prime.lower"], dtype=float)[idx]
            ref = np.asarray(cols["reference_epsilon"], dtype=float)[idx] * 1.0
        else:
            hi = np.asarray(cols["epsilon.impossible_above"], dtype=float)[idx]
            lo = np.asarray(cols["epsilon.certified"], dtype=float)[idx]
            ref = (
                np.asarray(cols[TARGET_PATH], dtype=float)[idx]
                if first.path == TARGET_PATH
                else None
            )
        if _finite(hi) and _finite(lo):
            ax.fill_between(x, lo, hi, color=c, alpha=0.22, lw=0)
        main, other = (hi, lo) if sweep.of == "bound" else (lo, hi)
        if _finite(main):
            ax.plot(x, main, color=c, lw=1.6, label=name or None)
        if _finite(other):
            ax.plot(x, other, color=c, lw=1.1, ls="--", label=None if _finite(main) else name)
        drawn = drawn or _finite(hi) or _finite(lo)
        if ref is not None and _finite(ref):
            if not any(r.shape == ref.shape and np.allclose(r, ref) for r in references):
                references.append(ref)
                ax.plot(
                    x,
                    ref,
                    color="0.2",
                    lw=1.0,
                    ls=":",
                    label=None,
                )
    from matplotlib.lines import Line2D

    styles = (
        {
            "bound": ("upper bound (guarantee)", "lower bound (some M is this bad)"),
            "invert": ("certified mechanism ε", "ε past which the target surely fails"),
        }[sweep.of]
        if sweep.of in ("bound", "invert") and y_column is None
        else None
    )
    if styles is not None:
        extra = [
            Line2D([], [], color="0.35", lw=1.6, label=styles[0]),
            Line2D([], [], color="0.35", lw=1.1, ls="--", label=styles[1]),
        ]
        if references:
            extra.append(Line2D([], [], color="0.2", lw=1.0, ls=":", label="no sampling (ε′ = ε)"))
        handles = ax.get_legend_handles_labels()[0]
        ax.legend(handles=[*handles, *extra], fontsize=8, loc="best", framealpha=0.85)
    if not drawn:
        raise AmpcalcError(
            "nothing to draw: every point is outside its theorem's conditions "
            "or has no bound (see the CSV/JSON output)"
        )


def _first_numeric(sweep: Sweep) -> str:
    if sweep.of == "plan" and "plan.q_bound" in sweep.columns:
        return "plan.q_bound"
    skip = {v.path for v in sweep.varies} | {"design", "scheme", "error"}
    for name, arr in sweep.columns.items():
        if name not in skip and arr.dtype.kind == "f" and _finite(arr):
            return name
    raise AmpcalcError("the sweep has no numeric result column to draw")


def _heatmap(
    fig: Any, ax: Any, sweep: Sweep, *, x_factor: float, log_x: bool, log_y: bool
) -> None:
    if len(sweep.varies) != 2:
        raise AmpcalcError("--heatmap needs two --vary options")
    cols = sweep.columns
    names = list(dict.fromkeys(cols["design"].tolist()))
    sel = cols["design"] == names[0]
    xv, yv = sweep.varies
    key = "epsilon_prime.upper" if sweep.of == "bound" else "epsilon.certified"
    if sweep.of == "plan":
        key = _first_numeric(sweep)
    xs = np.asarray(xv.values, dtype=float)
    ys = np.asarray(yv.values, dtype=float)
    grid = np.full((len(ys), len(xs)), np.nan)
    x_col = np.asarray(cols[xv.path], dtype=float)[sel]
    y_col = np.asarray(cols[yv.path], dtype=float)[sel]
    z = np.asarray(cols[key], dtype=float)[sel]
    xi = {v: i for i, v in enumerate(xs.tolist())}
    yi = {v: i for i, v in enumerate(ys.tolist())}
    for a, b, c in zip(x_col.tolist(), y_col.tolist(), z.tolist(), strict=True):
        grid[yi[b], xi[a]] = c
    norm = None
    finite = grid[np.isfinite(grid)]
    if finite.size and finite.min() > 0 and finite.max() / finite.min() > 100:
        from matplotlib.colors import LogNorm

        norm = LogNorm(vmin=finite.min(), vmax=finite.max())
    mesh = ax.pcolormesh(xs * x_factor, ys, grid, shading="nearest", cmap="viridis", norm=norm)
    bar = fig.colorbar(mesh, ax=ax)
    bar.set_label(Y_LABELS[sweep.of] if sweep.of != "plan" else key, fontsize=8)
    if log_x:
        ax.set_xscale("log")
    if log_y or yv.log:
        ax.set_yscale("log")
    if len(names) > 1:
        ax.set_title(f"{names[0]} (first design of {len(names)})", fontsize=9)


# ---------------------------------------------------------------------------------------
# terminal chart (no matplotlib)
# ---------------------------------------------------------------------------------------


def text_chart(sweep: Sweep, *, width: int = 60, height: int = 14) -> str:
    """A compact character chart of the upper bound (``bound``) or certified ε
    (``invert``) of the first curve against the x values (log x for ``:log``)."""
    if sweep.of not in ("bound", "invert") or not len(sweep):
        return ""
    key = "epsilon_prime.upper" if sweep.of == "bound" else "epsilon.certified"
    curves = groups(sweep)[:4]
    first = sweep.varies[0]
    xs_all = np.asarray(sweep.columns[first.path], dtype=float)
    ys_all = np.asarray(sweep.columns[key], dtype=float)
    finite = np.isfinite(ys_all)
    if not np.any(finite) or len(first.values) < 2:
        return ""
    use_log = first.log and np.all(xs_all > 0)
    fx = np.log10 if use_log else (lambda v: v)
    x_lo, x_hi = float(np.min(fx(xs_all))), float(np.max(fx(xs_all)))
    y_lo, y_hi = float(np.min(ys_all[finite])), float(np.max(ys_all[finite]))
    if x_hi == x_lo or y_hi == y_lo:
        return ""
    log_y = y_lo > 0 and y_hi / y_lo > 100
    fy = np.log10 if log_y else (lambda v: v)
    y_lo_t, y_hi_t = float(fy(y_lo)), float(fy(y_hi))
    canvas = [[" "] * width for _ in range(height)]
    marks = "*o+x"
    legend = []
    for k, (name, _, idx) in enumerate(curves):
        for xv, yv in zip(xs_all[idx].tolist(), ys_all[idx].tolist(), strict=True):
            if yv != yv:
                continue
            col = round((fx(xv) - x_lo) / (x_hi - x_lo) * (width - 1))
            row = height - 1 - round((fy(yv) - y_lo_t) / (y_hi_t - y_lo_t) * (height - 1))
            canvas[row][col] = marks[k]
        legend.append(f"{marks[k]} {name or key}")
    lines = [(f"{y_hi:>10.4g} |" + "".join(canvas[0])).rstrip()]
    lines += [("           |" + "".join(r)).rstrip() for r in canvas[1:-1]]
    lines.append((f"{y_lo:>10.4g} |" + "".join(canvas[-1])).rstrip())
    lines.append("           +" + "-" * width)
    lo_txt, hi_txt = f"{np.min(xs_all):.4g}", f"{np.max(xs_all):.4g}"
    lines.append(
        "            " + lo_txt + " " * max(1, width - len(lo_txt) - len(hi_txt)) + hi_txt
    )
    axis = label(first.path) + (" (log scale)" if use_log else "")
    lines.append(f"            x: {axis};  y: {key}" + (" (log scale)" if log_y else ""))
    lines.extend("            " + entry for entry in legend)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# tables of a result (e.g. a scheme's per-frequency details)
# ---------------------------------------------------------------------------------------


def table_figure(
    curves: list[dict[str, Any]],
    path: str | Path,
    *,
    xlabel: str,
    ylabel: str,
    title: str | None = None,
    caption_text: str = "",
    log_x: bool = False,
    log_y: bool = False,
    size: tuple[float, float] = SIZE,
    dpi: int = DPI,
) -> Path:
    """Draw curves given as data (``{"x", "y", "label", "colour", "dashed"}``) in the
    house style (same size, caption and legend as ``figure``); for tables a result
    carries in its ``details`` rather than a sweep.

    Raises:
        PlotUnavailable: matplotlib is not installed.
    """
    out = check_output(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=size, dpi=dpi)
    try:
        for c in curves:
            ax.plot(
                np.asarray(c["x"], dtype=float),
                np.asarray(c["y"], dtype=float),
                color=c.get("colour"),
                lw=1.1 if c.get("dashed") else 1.6,
                ls="--" if c.get("dashed") else "-",
                label=c.get("label"),
            )
        if log_x:
            ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="best", framealpha=0.85)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title, fontsize=11)
        bottom = 0.13
        if caption_text:
            wrapped = textwrap.fill(caption_text, width=int(size[0] * 17))
            bottom = 0.13 + 0.035 * (wrapped.count("\n") + 1)
            fig.text(0.01, 0.01, wrapped, fontsize=6.5, color="0.3", va="bottom", ha="left")
        fig.subplots_adjust(left=0.1, right=0.97, top=0.92, bottom=bottom)
        with atomic_write(out, binary=True, option="--plot") as fh:
            fig.savefig(fh, dpi=dpi, format=out.suffix[1:].lower())
    finally:
        plt.close(fig)
    return out
