"""Figures of a sweep (matplotlib, the optional extra ``ampcalc[plot]``).

``figure(sweep, path)`` draws what ``ampcalc sweep --plot`` promises: per design (and
per value of a second varied field) the lower and upper bound on ε′ as a shaded band
(upper solid, lower dashed), the no-sampling line dotted (ε′ = ε, or 2ε where the
guarantee charges an add-remove mechanism for a replacement; the legend says which),
a curve identical to an earlier one dashed with markers and labelled as such, a log y
axis when the values span more than two decades, axes labelled in words (the y axis
says at which δ′ the ε′ holds), a legend of the lines drawn and no others; or, with
``heatmap=True`` and two varied fields, the upper bound (or certified ε) over the grid,
optionally with the contour of a target ε′. A log axis over at most three decades is
ticked in plain numbers (0.5, 1, 2, 5), a wider one in powers of ten. The theorems
the curves rest on (``caption``) are written into the file's metadata, not drawn. The
figure has a fixed pixel size (``size`` × ``dpi``), whatever its content, so a figure
can be checked by its size.

matplotlib is imported inside the functions; without it, ``PlotUnavailable``
names the extra to install. ``text_chart`` is the dependency-free terminal chart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.analyses.sweep import TARGET_PATH, Sweep
from ampcalc.load.files import atomic_write, refuse_input_as_output
from ampcalc.model.errors import AmpcalcError

# the labels have their own module; these names are still read from here
from ampcalc.output.plot_labels import LABELS as LABELS
from ampcalc.output.plot_labels import (
    _plain_texts,
    _short,
    _spans_decades,
    metadata,
    plain_log_ticks,
    reference_label,
    y_label,
)
from ampcalc.output.plot_labels import caption as caption
from ampcalc.output.plot_labels import check_labels as check_labels
from ampcalc.output.plot_labels import label as label
from ampcalc.output.table import terminal_width, wrap

FORMATS = (".png", ".svg", ".pdf")
SIZE = (7.0, 4.5)  # inches
DPI = 300  # -> 2100 x 1350 pixels (print quality)


class PlotUnavailable(AmpcalcError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib  # lazy: matplotlib, an optional extra
    except ImportError:
        raise PlotUnavailable(
            "drawing figures needs matplotlib, which is not installed; install the "
            "extra with: pip install 'ampcalc[plot]' (or leave out --plot for CSV/JSON)"
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt  # lazy: matplotlib, an optional extra

    return plt


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


def figure(
    sweep: Sweep,
    path: str | Path,
    *,
    log_x: bool | None = None,
    log_y: bool | None = None,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    x_factor: float = 1.0,
    heatmap: bool = False,
    y_column: str | None = None,
    contour: float | None = None,
    size: tuple[float, float] = SIZE,
    dpi: int = DPI,
) -> Path:
    """Draw a sweep to ``path`` (.png, .svg or .pdf) and return the path.

    Args:
        sweep: the evaluated sweep.
        path: output file; the extension picks the format.
        log_x: log x axis (default: when the x values were spaced with ``:log``).
        log_y: log y axis (default: when the drawn values are all positive and span
            more than two decades, ``LOG_Y_SPAN``).
        title, xlabel, ylabel: override the defaults.
        x_factor: multiply the x values by this for display (e.g. ``1/N`` to show a
            sample size as a sampling rate).
        heatmap: with two varied fields, a heatmap of the upper bound (or certified ε)
            instead of one line per value of the second field.
        y_column: plot this result column as plain lines instead of the bound band.
        contour: on a heatmap of bounds, draw the line where the upper bound on ε′
            equals this target.
    Raises:
        PlotUnavailable: matplotlib is not installed.
        AmpcalcError: an unknown extension or column, nothing finite to draw, or a
            contour without a heatmap of bounds.
    """
    out = check_output(path)
    plt = _pyplot()
    fig = draw(
        sweep,
        log_x=log_x,
        log_y=log_y,
        title=title,
        xlabel=xlabel,
        ylabel=ylabel,
        x_factor=x_factor,
        heatmap=heatmap,
        y_column=y_column,
        contour=contour,
        size=size,
        dpi=dpi,
    )
    fmt = out.suffix[1:].lower()
    try:
        with atomic_write(out, binary=True, option="--plot") as fh:
            fig.savefig(
                fh,
                dpi=dpi,
                format=fmt,
                metadata=metadata(fmt, title=title, caption_text=caption(sweep)),
            )
    finally:
        plt.close(fig)
    return out


def draw(
    sweep: Sweep,
    *,
    log_x: bool | None = None,
    log_y: bool | None = None,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    x_factor: float = 1.0,
    heatmap: bool = False,
    y_column: str | None = None,
    contour: float | None = None,
    size: tuple[float, float] = SIZE,
    dpi: int = DPI,
) -> Any:
    """The matplotlib Figure of ``figure`` (same arguments, no file); the caller closes
    it (``matplotlib.pyplot.close``). Titles, labels and legends are drawn as written
    (``_plain_texts``)."""
    check_labels(title, xlabel, ylabel)
    plt = _pyplot()
    if contour is not None and not heatmap:
        raise AmpcalcError("--contour draws on a heatmap: add --heatmap (and two --vary options)")
    if contour is not None and sweep.of != "bound":
        raise AmpcalcError(
            "--contour marks a target ε′ on the upper bound: use it with --of bound"
        )
    first = sweep.varies[0]
    if log_x is None:
        log_x = first.log
    fig, ax = plt.subplots(figsize=size, dpi=dpi)
    try:
        if heatmap:
            _heatmap(
                fig, ax, sweep, x_factor=x_factor, log_x=log_x, log_y=bool(log_y), contour=contour
            )
        else:
            values = _lines(ax, sweep, x_factor=x_factor, y_column=y_column)
            if log_x:
                ax.set_xscale("log")
            if log_y if log_y is not None else _spans_decades(values):
                ax.set_yscale("log")
            ax.grid(True, which="major", alpha=0.3)
            if ax.get_legend() is None and ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8, loc="best", framealpha=0.85)
        ax.set_xlabel(xlabel or label(first.path))
        if not heatmap:
            ax.set_ylabel(ylabel or y_label(sweep, y_column))
        elif ylabel or len(sweep.varies) > 1:
            ax.set_ylabel(ylabel or label(sweep.varies[1].path))
        if title:
            ax.set_title(title, fontsize=11)
        plain_log_ticks(ax)
        fig.subplots_adjust(left=0.1, right=0.97 if not heatmap else 0.9, top=0.92, bottom=0.13)
        _plain_texts(fig)
    except BaseException:
        plt.close(fig)
        raise
    return fig


def _finite(a: np.ndarray) -> bool:
    return bool(np.any(np.isfinite(a)))


def _same_curve(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    """Two curves (x and y arrays) that would be drawn on top of each other."""
    return len(a) == len(b) and all(
        u.shape == v.shape and np.allclose(u, v, rtol=1e-9, atol=0.0, equal_nan=True)
        for u, v in zip(a, b, strict=True)
    )


#: Dot patterns of the no-sampling lines (one per kind: ε′ = ε, ε′ = 2ε, …).
DOTS: tuple[Any, ...] = (":", (0, (1, 4)), (0, (3, 2, 1, 2)))


def _lines(ax: Any, sweep: Sweep, *, x_factor: float, y_column: str | None) -> list[np.ndarray]:
    """Draw the curves; return the y values of the results drawn."""
    cols = sweep.columns
    first = sweep.varies[0]
    x_all = np.asarray(cols[first.path], dtype=float) * x_factor
    colours = [f"C{i % 10}" for i in range(64)]
    drawn = False
    references: list[tuple[np.ndarray, np.ndarray]] = []  # (x, y) of each dotted line
    reference_styles: dict[str, Any] = {}  # legend text -> dot pattern
    values: list[np.ndarray] = []
    curves: list[tuple[str, list[np.ndarray]]] = []  # (label, [x, y...]) drawn so far
    kinds: set[str] = set()  # the kinds of line drawn: "main", "other", "tight"
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
                values.append(y)
                style, shown = _distinct(curves, name, [x, y])
                ax.plot(x, y, color=c, lw=1.6, label=shown or None, **style)
                drawn = True
            continue
        ratio = np.array([])
        if sweep.of == "bound":
            hi = np.asarray(cols["epsilon_prime.upper"], dtype=float)[idx]
            lo = np.asarray(cols["epsilon_prime.lower"], dtype=float)[idx]
            ref = np.asarray(cols["reference_epsilon"], dtype=float)[idx] * 1.0
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = ref / np.asarray(cols["epsilon"], dtype=float)[idx]
        else:
            hi = np.asarray(cols["epsilon.impossible_above"], dtype=float)[idx]
            lo = np.asarray(cols["epsilon.certified"], dtype=float)[idx]
            ref = (
                np.asarray(cols[TARGET_PATH], dtype=float)[idx]
                if first.path == TARGET_PATH
                else None
            )
        main, other = (hi, lo) if sweep.of == "bound" else (lo, hi)
        values.extend((hi, lo))
        style, shown = _distinct(curves, name, [x, hi, lo])
        # the bounds meet (tight): the dashed line would lie under the solid one unseen
        tight = _finite(main) and _same_curve([main], [other])
        if _finite(hi) and _finite(lo) and not style and not tight:
            ax.fill_between(x, lo, hi, color=c, alpha=0.22, lw=0)
        if _finite(main):
            ax.plot(x, main, color=c, lw=1.6, label=shown or None, **style)
            kinds.add("tight" if tight else "main")
        if _finite(other) and not tight:
            ax.plot(
                x,
                other,
                color=c,
                lw=1.1,
                ls="--",
                label=None if _finite(main) else shown,
                **{k: v for k, v in style.items() if k != "ls"},
            )
            kinds.add("other")
        drawn = drawn or _finite(hi) or _finite(lo)
        if ref is not None and _finite(ref):
            if not any(_same_curve([rx, ry], [x, ref]) for rx, ry in references):
                references.append((x, ref))
                text = reference_label(ratio, sweep.of)
                ls = reference_styles.setdefault(text, DOTS[len(reference_styles) % len(DOTS)])
                ax.plot(x, ref, color="0.2", lw=1.0, ls=ls, label=None)
    _legend(ax, sweep, y_column=y_column, kinds=kinds, reference_styles=reference_styles)
    if not drawn:
        raise AmpcalcError(
            "nothing to draw: every point is outside its theorem's conditions "
            "or has no bound (see the CSV/JSON output)"
        )
    return values


def _legend(
    ax: Any,
    sweep: Sweep,
    *,
    y_column: str | None,
    kinds: set[str],
    reference_styles: dict[str, Any],
) -> None:
    """The legend of ``_lines``: the curves' labels, then a key entry for each kind of
    line drawn (``kinds``) and for each no-sampling line (``reference_styles``)."""
    from matplotlib.lines import Line2D  # lazy: matplotlib, an optional extra

    styles = (
        {
            "bound": (
                "upper bound (guarantee)",
                "lower bound (some M is this bad)",
                "upper bound = lower bound (tight)",
            ),
            "invert": (
                "certified mechanism ε",
                "ε past which the target surely fails",
                "certified ε (tight: the target fails above it)",
            ),
        }[sweep.of]
        if sweep.of in ("bound", "invert") and y_column is None
        else None
    )
    if styles is not None:
        # a key entry for each kind of line drawn, and none for a line not drawn
        extra = []
        if "main" in kinds or ("tight" in kinds and "other" in kinds):
            extra.append(Line2D([], [], color="0.35", lw=1.6, label=styles[0]))
        if "other" in kinds:
            extra.append(Line2D([], [], color="0.35", lw=1.1, ls="--", label=styles[1]))
        if "tight" in kinds and "other" not in kinds:
            extra.append(Line2D([], [], color="0.35", lw=1.6, label=styles[2]))
        for text, ls in reference_styles.items():
            extra.append(Line2D([], [], color="0.2", lw=1.0, ls=ls, label=text))
        handles = ax.get_legend_handles_labels()[0]
        ax.legend(handles=[*handles, *extra], fontsize=8, loc="best", framealpha=0.85)


def _distinct(
    curves: list[tuple[str, list[np.ndarray]]], name: str, data: list[np.ndarray]
) -> tuple[dict[str, Any], str]:
    """How to draw a curve so that it does not hide behind an identical one drawn
    before it: then dashed (gaps show the curve under it), with open markers, and its
    label says which curve it equals. Records the curve."""
    twins = [n for n, d in curves if _same_curve(d, data)]
    curves.append((name, data))
    if not twins:
        return {}, name
    twin, k = twins[0], len(twins)  # k-th copy of the first curve
    style: dict[str, Any] = {
        # dashes 4 long every 12, each copy at its own phase: the colours alternate
        "ls": (4 * (1 + (k - 1) % 2), (4, 8)),
        "marker": "osD^v"[(k - 1) % 5],
        "markersize": 4,
        "markerfacecolor": "none",
        "markevery": (0.05 * ((k - 1) % 2), 0.1),
    }
    label = f"{name or 'curve'} (identical to {twin or 'the curve above'})"
    return style, label


def _first_numeric(sweep: Sweep) -> str:
    if sweep.of == "plan" and "plan.variance_share_max" in sweep.columns:
        return "plan.variance_share_max"
    skip = {v.path for v in sweep.varies} | {"design", "scheme", "error"}
    for name, arr in sweep.columns.items():
        if name not in skip and arr.dtype.kind == "f" and _finite(arr):
            return name
    raise AmpcalcError("the sweep has no numeric result column to draw")


def _heatmap(
    fig: Any,
    ax: Any,
    sweep: Sweep,
    *,
    x_factor: float,
    log_x: bool,
    log_y: bool,
    contour: float | None = None,
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
        from matplotlib.colors import LogNorm  # lazy: matplotlib, an optional extra

        norm = LogNorm(vmin=finite.min(), vmax=finite.max())
    mesh = ax.pcolormesh(xs * x_factor, ys, grid, shading="nearest", cmap="viridis", norm=norm)
    bar = fig.colorbar(mesh, ax=ax)
    bar.set_label(y_label(sweep) if sweep.of != "plan" else key, fontsize=8)
    if contour is not None:
        _contour(ax, xs * x_factor, ys, grid, contour)
    if log_x:
        ax.set_xscale("log")
    if log_y or yv.log:
        ax.set_yscale("log")
    if len(names) > 1:
        ax.set_title(f"{names[0]} (first design of {len(names)})", fontsize=9)


CONTOUR_COLOUR = "#ff4040"


def _contour(ax: Any, xs: np.ndarray, ys: np.ndarray, grid: np.ndarray, level: float) -> None:
    """The line where the upper bound on ε′ equals ``level``, with a legend entry (which
    says so when the grid never reaches the level: then no line is drawn)."""
    from matplotlib.lines import Line2D  # lazy: matplotlib, an optional extra

    finite = grid[np.isfinite(grid)]
    text = f"upper bound ε′ = {level:g} (target)"
    reached = finite.size > 0 and finite.min() <= level <= finite.max()
    if reached and min(grid.shape) >= 2:
        ax.contour(
            xs,
            ys,
            np.ma.masked_invalid(grid),
            levels=[level],
            colors=[CONTOUR_COLOUR],
            linewidths=1.8,
        )
    else:
        text += ": not reached on this grid"
    proxy = Line2D([], [], color=CONTOUR_COLOUR, lw=1.8, label=text)
    ax.legend(handles=[proxy], fontsize=8, loc="best", framealpha=0.85)


# ---------------------------------------------------------------------------------------
# terminal chart (no matplotlib)
# ---------------------------------------------------------------------------------------


CHART_WIDTH = 60  # plot columns at most
_MARGIN = 12  # the y labels and the axis before the plot columns


def text_chart(
    sweep: Sweep, *, width: int | None = None, height: int = 14, total: int | None = None
) -> str:
    """A compact character chart of the upper bound (``bound``) or certified ε
    (``invert``) of the first curves against the x values (log x for ``:log``).

    ``width`` plot columns (default: ``CHART_WIDTH``, narrower when the chart with its
    labels would be wider than ``total``, the terminal width by default); the axis
    and legend lines are wrapped to ``total``."""

    if sweep.of not in ("bound", "invert") or not len(sweep):
        return ""
    total = terminal_width() if total is None else total
    if width is None:
        width = max(10, min(CHART_WIDTH, total - _MARGIN - 1))
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
        for lo in range(0, len(idx), 1 << 16):  # a block at a time: no list of 10⁷ floats
            part = idx[lo : lo + (1 << 16)]
            for xv, yv in zip(xs_all[part].tolist(), ys_all[part].tolist(), strict=True):
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
    texts = [f"x: {axis};  y: {key}" + (" (log scale)" if log_y else ""), *legend]
    pad = " " * _MARGIN if total - _MARGIN >= 30 else ""
    for text in texts:
        lines.extend(pad + t for t in wrap(text, total - len(pad)))
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
    carries in its ``details`` rather than a sweep. ``caption_text`` (the basis) goes
    into the file's metadata, as ``figure``'s caption does.

    Raises:
        PlotUnavailable: matplotlib is not installed.
    """
    out = check_output(path)
    check_labels(title, xlabel, ylabel)
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
        plain_log_ticks(ax)
        fig.subplots_adjust(left=0.1, right=0.97, top=0.92, bottom=0.13)
        _plain_texts(fig)
        fmt = out.suffix[1:].lower()
        with atomic_write(out, binary=True, option="--plot") as fh:
            fig.savefig(
                fh,
                dpi=dpi,
                format=fmt,
                metadata=metadata(fmt, title=title, caption_text=caption_text),
            )
    finally:
        plt.close(fig)
    return out
