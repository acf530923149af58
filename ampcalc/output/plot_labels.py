"""The words and numbers on a sweep's figure: axis and curve labels, the caption and
file metadata, and the plain-number ticks of a log axis.

An axis is labelled in words (``LABELS``: what the field is, in which unit); the y
axis says at which δ′ the ε′ holds; a log axis over at most three decades is ticked in
plain numbers (0.5, 1, 2, 5). The figure itself is drawn by ``ampcalc/output/plot.py``.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ampcalc._version import __version__
from ampcalc.analyses.sweep import EPSILON_PATH, TARGET_PATH, Sweep
from ampcalc.model.errors import AmpcalcError
from ampcalc.model.limits import LIMITS
from ampcalc.model.references import describe

#: Axis labels of the design paths a sweep varies (without a ``designs[i].`` prefix);
#: the words before `` (`` also head the sweep's table. A path not listed is shown as
#: written.
LABELS = {
    EPSILON_PATH: "mechanism ε (M's own privacy parameter)",
    "mechanism.delta": "mechanism δ",
    "mechanism.epsilon_replace_one": "mechanism ε under replace-one (ε_R)",
    "mechanism.delta_replace_one": "mechanism δ under replace-one",
    "mechanism.gaussian.sigma": "noise scale σ of the Gaussian mechanism",
    "mechanism.gaussian.sensitivity": "sensitivity Δ of the Gaussian mechanism",
    "mechanism.laplace.scale": "noise scale b of the Laplace mechanism",
    "mechanism.laplace.sensitivity": "sensitivity Δ of the Laplace mechanism",
    "mechanism.discrete-gaussian.sigma": "noise scale σ of the discrete Gaussian mechanism",
    "mechanism.discrete-gaussian.sensitivity": "sensitivity Δ of the discrete Gaussian mechanism",
    "mechanism.discrete-laplace.scale": "noise scale b of the discrete Laplace mechanism",
    "mechanism.discrete-laplace.sensitivity": "sensitivity Δ of the discrete Laplace mechanism",
    "mechanism.randomized-response.epsilon": "ε of randomized response",
    "mechanism.randomized-response.categories": "categories of randomized response",
    "mechanism.zcdp.rho": "zCDP parameter ρ of the mechanism",
    TARGET_PATH: "target ε′ for the population",
    "target.delta_prime": "target δ′ for the population",
    "sampling.rate": "sampling rate q",
    "sampling.sample": "sample size m (records)",
    "sampling.population": "population size N (records)",
    "sampling.size.sd": "standard deviation of the sample size (records)",
    "sampling.size.mean": "mean sample size (records)",
    "sampling.chosen": "clusters chosen ℓ",
    "sampling.clusters.size": "cluster size (records)",
    "sampling.clusters.count": "number of clusters k",
    "sampling.clusters.chosen": "clusters chosen ℓ",
}
#: y axis labels of a result column drawn with ``--y``.
COLUMN_LABELS = {
    "epsilon_prime.upper": "upper bound on the population ε′",
    "epsilon_prime.lower": "lower bound on the population ε′",
    "delta_prime": "population δ′",
    "epsilon": "mechanism ε",
    "reference_epsilon": "ε′ without sampling",
    "epsilon.certified": "certified mechanism ε",
    "epsilon.impossible_above": "mechanism ε past which the target fails",
    "plan.variance_share_max": "variance share max (largest Var(g(S)) / V_N for a gain)",
}
Y_LABELS = {
    "bound": "population ε′",
    "invert": "mechanism ε the sample may spend",
    "plan": "variance share max (largest Var(g(S)) / V_N for a gain)",
}


def label(path: str) -> str:
    """A readable axis label for a design path (units where they apply)."""

    rel = re.sub(r"^designs\[\d+\]\.", "", path)
    return LABELS.get(rel, rel)


def check_labels(
    title: str | None = None, xlabel: str | None = None, ylabel: str | None = None
) -> None:
    """Refuse a title or axis label longer than ``LIMITS["plot_text"]`` characters (a
    figure shows one line; laying out 10⁵ characters takes matplotlib many seconds)."""
    cap = LIMITS["plot_text"]
    for option, text in (("--title", title), ("--xlabel", xlabel), ("--ylabel", ylabel)):
        if text is not None and len(text) > cap.value:
            raise AmpcalcError(f"{option}: {cap.message(len(text))}")


SHORT = {TARGET_PATH: "target ε′", EPSILON_PATH: "mechanism ε"}


def _short(path: str) -> str:
    key = re.sub(r"^designs\[\d+\]\.", "", path)
    if key in SHORT:
        return SHORT[key]
    rel = label(path)
    return rel.split(" (")[0]


def caption(sweep: Sweep) -> str:
    """The theorems the curves rest on (deduplicated, in design order)."""

    seen: list[str] = []
    for meta in sweep.designs.values():
        for b in meta.get("basis", []):
            if describe(b) not in seen:
                seen.append(describe(b))
    return ("Basis: " + "; ".join(seen)) if seen else ""


def metadata(fmt: str, *, title: str | None = None, caption_text: str = "") -> dict[str, str]:
    """What a figure file says about itself (``savefig(metadata=...)``): the title and
    the caption (the theorems behind the curves), in the keys of the format: PNG text
    chunks ``Title``, ``Description``, ``Source``; PDF ``Title``, ``Subject``,
    ``Creator``; SVG ``Title``, ``Description``, ``Source``."""

    source = f"ampcalc {__version__}"
    keys = {
        "png": ("Title", "Description", "Source"),
        "svg": ("Title", "Description", "Source"),
        "pdf": ("Title", "Subject", "Creator"),
    }[fmt]
    out = {keys[2]: source}
    if title:
        out[keys[0]] = title
    if caption_text:
        out[keys[1]] = caption_text
    return out


def _number(v: float) -> str:
    """``v`` for a label: 0, 0.05, 10⁻⁶, 2.5×10⁻⁸."""
    text = f"{v:.4g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = "10" + str(int(exponent)).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return power if mantissa == "1" else f"{mantissa}×{power}"


def y_label(sweep: Sweep, y_column: str | None = None) -> str:
    """The y axis label: what is drawn, and for ε′ the δ′ it holds at (one value, or
    the range when the curves hold at several)."""
    key = y_column or ("epsilon_prime.upper" if sweep.of == "bound" else None)
    if y_column is not None:
        text = COLUMN_LABELS.get(y_column, y_column)
    else:
        text = Y_LABELS[sweep.of]
    if key in ("epsilon_prime.upper", "epsilon_prime.lower") and "delta_prime" in sweep.columns:
        values = np.asarray(sweep.columns[key], dtype=float)
        delta = np.asarray(sweep.columns["delta_prime"], dtype=float)[np.isfinite(values)]
        delta = delta[np.isfinite(delta)]
        if delta.size and delta.min() == delta.max():
            text += f" at δ′ = {_number(float(delta[0]))}"
        elif delta.size:
            text += f" at δ′ = {_number(float(delta.min()))} … {_number(float(delta.max()))}"
    return text


#: ``log_y=None`` picks a log y axis when the drawn values span more than this factor.
LOG_Y_SPAN = 100.0


#: A log axis whose values span at most this many decades is ticked in plain numbers.
PLAIN_DECADES = 3.0


def plain_log_ticks(ax: Any) -> None:
    """Tick each log axis of ``ax`` that spans at most ``PLAIN_DECADES`` decades in
    plain numbers: 0.5, 1, 2, 5 (1-2-5 in each decade; 1-3 over more than two
    decades, finer below one, evenly spaced over a narrow range such as 0.9 to 1.1),
    no minor labels such as ``6×10⁻¹``. A wider axis keeps
    matplotlib's powers of ten, and so does one with ticks below 10⁻⁴ or from 10⁶ on
    (too long written out)."""
    from matplotlib.ticker import (  # lazy: matplotlib, an optional extra
        FixedLocator,
        FuncFormatter,
        MaxNLocator,
        NullFormatter,
    )

    for axis, limits, margin in (
        (ax.xaxis, ax.get_xlim(), ax.margins()[0]),
        (ax.yaxis, ax.get_ylim(), ax.margins()[1]),
    ):
        if axis.get_scale() != "log":
            continue
        lo, hi = sorted(limits)
        if not (lo > 0 and math.isfinite(hi) and hi > lo):
            continue
        span = math.log10(hi / lo) / (1 + 2 * margin)  # the data's span, without margins
        if span > PLAIN_DECADES + 1e-9:
            continue
        subs: tuple[str, ...] = ("1", "2", "5")
        if span < 0.6:
            subs = ("1", "1.5", "2", "3", "4", "5", "6", "8")
        elif span > 2.2:
            subs = ("1", "3")
        first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        ticks = [
            t
            for k in range(first, last + 1)
            for t in (float(f"{m}e{k}") for m in subs)
            if lo <= t <= hi
        ]
        if len(ticks) < 3:  # a narrow axis (0.9 to 1.1): evenly spaced round numbers
            ticks = [
                float(t)
                for t in MaxNLocator(nbins=5, steps=[1, 2, 5, 10]).tick_values(lo, hi)
                if lo <= t <= hi
            ]
        if len(ticks) < 2 or ticks[0] < 1e-4 or ticks[-1] >= 1e6:
            continue
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.6g}"))
        axis.set_minor_formatter(NullFormatter())


def _plain_texts(fig: Any) -> None:
    """Draw the title, axis labels, legends and captions as written: a title, label or
    design name such as ``$x^$`` or ``cost in $`` is not parsed as mathtext (which
    refuses some and typesets others). Tick labels keep it (a log axis writes its
    powers of ten in mathtext)."""
    texts = list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
        legend = ax.get_legend()
        if legend is not None:
            texts += [legend.get_title(), *legend.get_texts()]
    for text in texts:
        text.set_parse_math(False)


def _spans_decades(ys: list[np.ndarray]) -> bool:
    """The results drawn (not the no-sampling lines) are all positive and span more
    than ``LOG_Y_SPAN``."""
    values = np.concatenate([y[np.isfinite(y)] for y in ys]) if ys else np.array([])
    if values.size == 0 or np.any(values <= 0):
        return False
    return bool(values.max() / values.min() > LOG_Y_SPAN)


def reference_label(ratio: np.ndarray, of: str) -> str:
    """The legend text of a no-sampling line: what it is, from ``ratio`` = the line's
    value over M's ε (bound: ``reference_epsilon / ε``, 1 or 2 for a replace-one
    guarantee of an add-remove mechanism)."""
    if of != "bound":
        return "no sampling (ε = target ε′)"
    r = ratio[np.isfinite(ratio)]
    if r.size and np.allclose(r, 1.0, rtol=1e-9):
        return "no sampling (ε′ = ε)"
    if r.size and np.allclose(r, 2.0, rtol=1e-9):
        return "no sampling, replace-one charge (ε′ = 2ε)"
    if r.size and np.allclose(r, r[0], rtol=1e-9):
        return f"no sampling (ε′ = {r[0]:.4g}ε)"
    return "no sampling (M's own charge under the guarantee)"
