"""The privacy report: one self-contained HTML page (``ampcalc report``).

``render(reports)`` turns the evaluated designs (``ampcalc.analyses.report``) into a
page a survey team can attach to a data release: per design the mechanism, the
sampling scheme in words, the bounds and their verdict, the ε′-against-ε curve with
the inverse at the target, the conditions checked, warnings, notes and the full
references. Nothing is loaded from the network: the figures are inline SVG drawn by
matplotlib's SVG backend, the style sheet is inline (with print rules).

The page is built with Jinja2 (the optional extra ``ampcalc[report]``) from the
package's ``templates/report.html.j2``, with autoescaping on. Jinja2 and matplotlib are
imported inside the functions, so importing this module (or starting the CLI) loads
neither; without them, ``ReportUnavailable`` names the extra to install.
"""

from __future__ import annotations

import datetime as _dt
import io
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.analyses.report import DesignReport, number, reader_text
from ampcalc.load.files import atomic_write
from ampcalc.model.errors import AmpcalcError
from ampcalc.model.references import REFERENCES, Citation

TEMPLATE = "report.html.j2"
FIGURE_SIZE = (6.6, 3.7)  # inches; the SVG scales to the page width

#: What each verdict means, for the reader of the report.
VERDICTS = {
    "amplifies": "the upper bound on ε′ is below M's own ε: sampling protects the population",
    "no-amplification": "some mechanism loses as much with sampling as without it",
    "degrades": "some mechanism loses more with sampling than without it",
    "no-guarantee": "the theory gives no upper bound on ε′ for this design",
    "inconclusive": "the bounds neither show amplification nor rule it out",
    "calibrated": "the scheme builds its mechanism to meet the target exactly",
}


class ReportUnavailable(AmpcalcError):
    """Jinja2 or matplotlib is not installed."""


# --------------------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------------------


@dataclass
class Reference:
    """One entry of the references block: a cited work, where it is cited, by whom."""

    key: str
    entry: Any = None
    places: list[str] = field(default_factory=list)
    designs: list[str] = field(default_factory=list)


def citation(item: Any) -> tuple[str, str]:
    """One ``basis`` entry as (short reference, where in it).

    The one place the report reads a basis entry: a ``{reference, where}`` object (or a
    ``Citation``) by the work's short form ("Bun et al.") and the place; any other
    value is shown whole.
    """
    key, where = _key_where(item)
    known = REFERENCES.get(key)
    return (known.short if known is not None else key), where


def _key_where(item: Any) -> tuple[str, str]:
    if isinstance(item, Citation):
        return item.reference.key, item.where or ""
    if isinstance(item, Mapping):
        return str(item.get("reference", "")), str(item.get("where") or "")
    return str(item), ""


def references(reports: Sequence[DesignReport]) -> list[Reference]:
    """Every work cited by the designs' bounds and inverses, in order of first citation,
    each with its full entry from the reference list (``model.references``), else from
    the result's own ``references`` map."""
    found: dict[str, Reference] = {}
    for r in reports:
        results = [r.bound, *([r.inverse] if r.inverse else [])]
        for res in results:
            given = res.get("references") or {}
            for item in res.get("basis") or ():
                key, where = _key_where(item)
                known = REFERENCES.get(key)
                short = known.short if known is not None else key
                entry = known.to_dict() if known is not None else given.get(key)
                ref = found.setdefault(short, Reference(key=short, entry=entry))
                if where and where not in ref.places:
                    ref.places.append(where)
                if r.name not in ref.designs:
                    ref.designs.append(r.name)
    return list(found.values())


def entry_text(entry: Any) -> list[tuple[str, str]]:
    """A full reference as (field, text) parts: authors, title, venue, year, identifiers."""
    if entry is None:
        return []
    if not isinstance(entry, Mapping):
        return [("text", str(entry))]
    parts: list[tuple[str, str]] = []
    authors = entry.get("authors")
    if isinstance(authors, (list, tuple)):
        authors = ", ".join(str(a) for a in authors)
    for name, value in (
        ("authors", authors),
        ("title", entry.get("title")),
        ("venue", entry.get("venue")),
        ("year", entry.get("year")),
        ("arxiv", entry.get("arxiv")),
        ("doi", entry.get("doi")),
    ):
        if value not in (None, ""):
            parts.append((name, str(value)))
    return parts


# --------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------


def _reference_label(curve_eps: np.ndarray, reference: np.ndarray) -> str:
    finite = np.isfinite(reference) & (curve_eps > 0)
    if not np.any(finite):
        return "without sampling"
    ratio = float(np.median(reference[finite] / curve_eps[finite]))
    if math.isclose(ratio, 1.0, rel_tol=1e-9):
        return "without sampling (ε′ = ε)"
    if math.isclose(ratio, 2.0, rel_tol=1e-9):
        return "without sampling (ε′ = 2ε, replace-one)"
    return "without sampling"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _power_of_ten(value: float, _pos: Any = None) -> str:
    """A log axis' tick label as plain text: ``0.01``, ``100``, ``10⁻⁵``."""
    if value <= 0 or not math.isfinite(value):
        return ""
    if 1e-3 <= value <= 1e4:
        return f"{value:g}"
    exponent = round(math.log10(value))
    if math.isclose(value, 10.0**exponent, rel_tol=1e-9):
        return "10" + str(exponent).translate(_SUPERSCRIPT)
    return f"{value:.3g}"


def _matplotlib() -> tuple[Any, Any]:
    try:
        import matplotlib  # lazy: matplotlib, an optional extra
        from matplotlib.figure import Figure  # lazy: matplotlib, an optional extra
    except ImportError:
        raise ReportUnavailable(
            "the report's figures need matplotlib, which is not installed; install the "
            "extra with: pip install 'ampcalc[report]'"
        ) from None
    return matplotlib, Figure


def _rc(index: int) -> dict[str, Any]:
    return {"svg.fonttype": "none", "svg.hashsalt": f"ampcalc-report-{index}", "font.size": 9}


def has_band(lower: np.ndarray, upper: np.ndarray) -> bool:
    """A shaded band is drawn: somewhere both bounds are finite and apart."""
    both = np.isfinite(lower) & np.isfinite(upper)
    return bool(np.any(both & (upper > lower * (1.0 + 1e-9))))


def _exact(lower: np.ndarray, upper: np.ndarray) -> bool:
    """Both bounds are drawn and coincide everywhere (the bound is exact)."""
    both = np.isfinite(lower) & np.isfinite(upper)
    return bool(np.any(both)) and not has_band(lower, upper)


def _shown(line: Any, ax: Any) -> bool:
    """The line (or marker) has a finite point inside the axes' limits."""
    x0, x1 = sorted(ax.get_xlim())
    y0, y1 = sorted(ax.get_ylim())
    x = np.asarray(line.get_xdata(), dtype=float)
    y = np.asarray(line.get_ydata(), dtype=float)
    trans = line.get_transform()
    if trans == ax.get_yaxis_transform(which="grid"):  # axhline: x in axes units
        return bool(np.any(np.isfinite(y) & (y >= y0) & (y <= y1)))
    if trans == ax.get_xaxis_transform(which="grid"):  # axvline
        return bool(np.any(np.isfinite(x) & (x >= x0) & (x <= x1)))
    inside = np.isfinite(x) & np.isfinite(y) & (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
    return bool(np.any(inside))


def _finish(fig: Any, ax: Any, *, index: int, label: str, legend: str) -> str:
    """Plain-text log ticks, a legend of the drawn lines only, the figure as inline SVG."""
    from matplotlib.ticker import (  # lazy: matplotlib, an optional extra
        FuncFormatter,
        LogLocator,
        NullLocator,
    )

    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            # plain-text labels and no minor ticks: mathtext and minor ticks would
            # cost most of the drawing time
            axis.set_minor_locator(NullLocator())
            axis.set_major_formatter(FuncFormatter(_power_of_ten))
            low, high = sorted(axis.get_view_interval())
            if low > 0 and high / low < 100:
                # less than two decades: label 1, 2 and 5 of each decade too
                axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.grid(True, which="major", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    kept = [(h, lab) for h, lab in zip(handles, labels, strict=True) if _shown(h, ax)]
    if kept:
        ax.legend(
            [h for h, _ in kept],
            [lab for _, lab in kept],
            fontsize=7.5,
            loc=legend,
            framealpha=0.9,
        )
    fig.subplots_adjust(left=0.1, right=0.98, top=0.97, bottom=0.13)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return inline_svg(buf.getvalue(), prefix=f"f{index}-", label=label)


def _y_scale(ax: Any, *series: np.ndarray) -> None:
    """A log y axis when the drawn values span more than a factor 100."""
    ys = np.concatenate([np.asarray(v, dtype=float).ravel() for v in series])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if ys.size and ys.max() / ys.min() > 100:
        ax.set_yscale("log")


def figure_svg(report: DesignReport, index: int) -> str:
    """The ε′-against-ε figure of one design as an inline ``<svg>`` element.

    Upper bound solid, lower bound dashed, the band between them shaded, ε′ without
    sampling dotted, M's declared ε marked; with a target, the target ε′ and the
    certified ε. Element ids carry the prefix ``f{index}-`` so that several figures
    can share one page; the legend lists the lines drawn.
    """
    curve = report.curve
    if curve is None:
        raise ValueError(f"design {report.name!r} has no curve")
    matplotlib, Figure = _matplotlib()
    eps, lo, hi, ref = curve.epsilon, curve.lower, curve.upper, curve.reference
    with matplotlib.rc_context(_rc(index)):
        fig = Figure(figsize=FIGURE_SIZE)
        ax = fig.add_subplot()
        both = np.isfinite(lo) & np.isfinite(hi)
        if has_band(lo, hi):
            ax.fill_between(eps, lo, hi, where=both, color="C0", alpha=0.18, lw=0)
        if np.any(np.isfinite(hi)):
            ax.plot(eps, hi, color="C0", lw=1.8, label="upper bound on ε′ (the guarantee)")
        if np.any(np.isfinite(lo)):
            ax.plot(eps, lo, color="C0", lw=1.2, ls="--", label="lower bound (some M is this bad)")
        if np.any(np.isfinite(ref)):
            ax.plot(eps, ref, color="0.35", lw=1.0, ls=":", label=_reference_label(eps, ref))
        declared = report.bound.get("epsilon")
        bounds = report.bound.get("epsilon_prime") or {}
        y = bounds.get("upper") if bounds.get("upper") is not None else bounds.get("lower")
        if isinstance(declared, (int, float)) and isinstance(y, (int, float)):
            ax.plot(
                [declared],
                [y],
                "o",
                color="C3",
                ms=6,
                label=f"this design: ε = {number(declared)}",
            )
        certified = ((report.inverse or {}).get("epsilon") or {}).get("certified")
        if report.target is not None:
            ax.axhline(
                report.target,
                color="C2",
                lw=1.0,
                ls="-.",
                label=f"target ε′ = {number(report.target)}",
            )
            if certified is not None:
                ax.axvline(certified, color="C2", lw=1.0, ls=(0, (1, 1)))
                ax.plot(
                    [certified],
                    [report.target],
                    "s",
                    color="C2",
                    ms=5,
                    label=f"certified ε = {number(certified)}",
                )
        ax.set_xscale("log")
        _y_scale(ax, lo, hi, *([np.array([report.target])] if report.target else []))
        ax.set_xlabel("M's ε (the mechanism run on the sample)")
        ax.set_ylabel("population ε′")
        return _finish(
            fig, ax, index=index, label=f"ε′ against ε for {report.name}", legend="upper left"
        )


def noise_figure_svg(report: DesignReport, index: int) -> str:
    """ε′ against a named mechanism's noise scale (σ or b) as an inline ``<svg>``.

    Upper bound solid, lower bound dashed (the band between them shaded where both are
    drawn and apart), the design's own scale marked; with a target, the target ε′ and
    the calibrated scale."""
    curve = report.noise_curve
    if curve is None:
        raise ValueError(f"design {report.name!r} has no noise curve")
    matplotlib, Figure = _matplotlib()
    x, lo, hi, sym = curve.values, curve.lower, curve.upper, curve.symbol
    with matplotlib.rc_context(_rc(index)):
        fig = Figure(figsize=FIGURE_SIZE)
        ax = fig.add_subplot()
        if has_band(lo, hi):
            both = np.isfinite(lo) & np.isfinite(hi)
            ax.fill_between(x, lo, hi, where=both, color="C0", alpha=0.18, lw=0)
        if np.any(np.isfinite(hi)):
            ax.plot(x, hi, color="C0", lw=1.8, label="upper bound on ε′ (the guarantee)")
        if np.any(np.isfinite(lo)):
            ax.plot(x, lo, color="C0", lw=1.2, ls="--", label="lower bound on ε′")
        at = np.flatnonzero(x == curve.at)
        if at.size and math.isfinite(hi[at[0]]):
            ax.plot(
                [curve.at],
                [hi[at[0]]],
                "o",
                color="C3",
                ms=6,
                label=f"this design: {sym} = {number(curve.at)}",
            )
        if report.target is not None:
            ax.axhline(
                report.target,
                color="C2",
                lw=1.0,
                ls="-.",
                label=f"target ε′ = {number(report.target)}",
            )
            if curve.calibrated is not None:
                ax.axvline(curve.calibrated, color="C2", lw=1.0, ls=(0, (1, 1)))
                ax.plot(
                    [curve.calibrated],
                    [report.target],
                    "s",
                    color="C2",
                    ms=5,
                    label=f"smallest {sym} meeting the target = {number(curve.calibrated)}",
                )
        ax.set_xscale("log")
        _y_scale(ax, lo, hi, *([np.array([report.target])] if report.target else []))
        ax.set_xlabel(f"noise {sym} of M ({'standard deviation' if sym == 'σ' else 'scale'})")
        ax.set_ylabel("population ε′")
        return _finish(
            fig,
            ax,
            index=index,
            label=f"ε′ against the noise {sym} for {report.name}",
            legend="upper right",
        )


def profile_figure_svg(report: DesignReport, index: int) -> str:
    """δ′ against ε′ (the privacy profile) as an inline ``<svg>``: with sampling (solid),
    the noise alone without sampling (dotted, where stated under the guarantee's
    relation), the target δ′ and the design's (ε′, δ′) point."""
    curve = report.profile_curve
    if curve is None:
        raise ValueError(f"design {report.name!r} has no profile curve")
    matplotlib, Figure = _matplotlib()
    eps, dp = curve.epsilon_prime, curve.delta_prime
    with matplotlib.rc_context(_rc(index)):
        fig = Figure(figsize=FIGURE_SIZE)
        ax = fig.add_subplot()
        ax.plot(eps, dp, color="C0", lw=1.8, marker=".", ms=4, label="with sampling")
        if curve.alone is not None:
            alone = np.where(curve.alone > 0, curve.alone, np.nan)
            if np.any(np.isfinite(alone)):
                ax.plot(
                    eps, alone, color="0.35", lw=1.0, ls=":", label="the noise alone (no sampling)"
                )
        if curve.target_delta:
            ax.axhline(
                curve.target_delta,
                color="C2",
                lw=1.0,
                ls="-.",
                label=f"target δ′ = {number(curve.target_delta)}",
            )
            if curve.upper is not None:
                ax.plot(
                    [curve.upper],
                    [curve.target_delta],
                    "o",
                    color="C3",
                    ms=6,
                    label=f"this design: ε′ = {number(curve.upper)}",
                )
            if curve.reference is not None:
                ax.plot(
                    [curve.reference],
                    [curve.target_delta],
                    "D",
                    color="0.35",
                    ms=4,
                    label=f"without sampling: ε = {number(curve.reference)}",
                )
        ax.set_yscale("log")
        ax.set_xlabel("population ε′")
        ax.set_ylabel("δ′ (the chance the ε′ guarantee fails)")
        return _finish(
            fig,
            ax,
            index=index,
            label=f"δ′ against ε′ for {report.name}",
            legend="lower left",
        )


_ID = re.compile(r'\bid="([^"]+)"')


def inline_svg(text: str, *, prefix: str, label: str) -> str:
    """An SVG document as an element for an HTML page.

    Drops the XML prolog, doctype and metadata, makes the figure scale to its box,
    and prefixes every id (and every reference to one) with ``prefix``.
    """
    start = text.find("<svg")
    if start < 0:
        raise ValueError("not an SVG document")
    svg = text[start:]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    ids = set(_ID.findall(svg))
    svg = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', svg)
    svg = re.sub(
        r"url\(#([^)]+)\)",
        lambda m: f"url(#{prefix}{m.group(1)})" if m.group(1) in ids else m.group(0),
        svg,
    )
    svg = re.sub(
        r'href="#([^"]+)"',
        lambda m: f'href="#{prefix}{m.group(1)}"' if m.group(1) in ids else m.group(0),
        svg,
    )

    head_end = svg.index(">")
    head = svg[:head_end]
    head = re.sub(r'\s(width|height)="[^"]*"', "", head)
    head += f' class="figure" role="img" aria-label="{escape(label)}"'
    return head + svg[head_end:].rstrip() + "\n"


# --------------------------------------------------------------------------------------
# the page
# --------------------------------------------------------------------------------------


def _environment() -> Any:
    try:
        import jinja2  # lazy: jinja2, an optional extra
    except ImportError:
        raise ReportUnavailable(
            "the report needs Jinja2, which is not installed; install the extra with: "
            "pip install 'ampcalc[report]'"
        ) from None
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ampcalc.output", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["num"] = number
    env.filters["plain"] = reader_text
    return env


def _generated() -> str:
    """The date of the report (UTC; ``SOURCE_DATE_EPOCH`` fixes it for reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (
        _dt.datetime.fromtimestamp(int(epoch), tz=_dt.timezone.utc)
        if epoch and epoch.isdigit()
        else _dt.datetime.now(tz=_dt.timezone.utc)
    )
    return when.strftime("%Y-%m-%d %H:%M UTC")


def _epsilon_caption(r: DesignReport) -> str:
    curve = r.curve
    assert curve is not None
    text = "Population ε′ as M's ε varies (log scale), for this design's sampling."
    upper = (r.bound.get("epsilon_prime") or {}).get("upper")
    if upper is None:
        text += " The theory gives no upper bound here: only the lower bound is drawn."
    elif has_band(curve.lower, curve.upper):
        text += (
            " The shaded band lies between the lower and the upper bound: the true worst "
            "case lies inside it."
        )
    elif _exact(curve.lower, curve.upper):
        text += " The lower and the upper bound coincide: the bound is exact."
    else:
        text += " The theory gives no lower bound here: only the upper bound is drawn."
    certified = ((r.inverse or {}).get("epsilon") or {}).get("certified")
    if r.target is not None and certified is not None:
        text += (
            " The target line crosses the upper bound at the certified ε: any M with a "
            "smaller ε meets the target."
        )
    return text


def _noise_caption(r: DesignReport) -> str:
    curve = r.noise_curve
    assert curve is not None
    sym = curve.symbol
    delta = r.bound.get("delta_prime")
    text = (
        f"Population ε′ as the noise {sym} of M varies (log scale), for this design's "
        f"sampling, at δ′ = {number(delta)}: more noise, smaller ε′."
    )
    if has_band(curve.lower, curve.upper):
        text += " The shaded band lies between the lower and the upper bound."
    elif _exact(curve.lower, curve.upper):
        text += " The lower and the upper bound coincide: the bound is exact."
    elif np.any(np.isfinite(curve.upper)) and not np.any(np.isfinite(curve.lower)):
        text += " Only the upper bound is drawn: there is no lower bound for this mechanism here."
    if r.target is not None and curve.calibrated is not None:
        text += (
            f" The target line crosses the upper bound at the smallest {sym} that meets the "
            f"target: any larger {sym} meets it too."
        )
    return text


def _profile_caption(r: DesignReport) -> str:
    curve = r.profile_curve
    assert curve is not None
    text = (
        "The privacy profile: for each population ε′, the chance δ′ that the ε′ guarantee "
        "fails, with sampling"
    )
    text += " and for the noise alone (no sampling)." if curve.alone is not None else "."
    if curve.target_delta and curve.upper is not None:
        text += (
            f" The bound reads ε′ where the profile crosses the target δ′ = "
            f"{number(curve.target_delta)}."
        )
    return text


def figures_of(r: DesignReport, index: int, first: int) -> list[dict[str, Any]]:
    """The design's figures as {svg, title, caption} (numbered from ``first``); the
    title names the design, so every printed figure says whose it is."""
    from markupsafe import Markup  # lazy: comes with jinja2 (the report extra)

    out: list[dict[str, Any]] = []

    def add(svg: str, what: str, caption: str) -> None:
        n = first + len(out)
        out.append(
            {
                "svg": Markup(svg),  # matplotlib's own SVG, ids rewritten
                "title": f"Figure {n}. {r.name}: {what}",
                "caption": caption,
            }
        )

    if r.curve is not None:
        add(figure_svg(r, index), "ε′ against M's ε", _epsilon_caption(r))
    if r.noise_curve is not None:
        sym = r.noise_curve.symbol
        add(
            noise_figure_svg(r, index * 10 + 1),
            f"ε′ against the noise {sym}",
            _noise_caption(r),
        )
    if r.profile_curve is not None:
        add(profile_figure_svg(r, index * 10 + 2), "δ′ against ε′", _profile_caption(r))
    return out


def css_string(text: str) -> str:
    """``text`` as a CSS string literal, safe inside a ``<style>`` element."""
    out = ['"']
    for ch in text:
        if (ch.isalnum() and ch.isascii()) or ch in " .,:;-_()'/&":
            out.append(ch)
        else:
            out.append(f"\\{ord(ch):06x} ")  # the space ends the escape
    out.append('"')
    return "".join(out)


def render(
    reports: Sequence[DesignReport],
    *,
    title: str = "Privacy report",
    sources: Iterable[str] = (),
    version: str = "",
    organisation: str | None = None,
    dataset: str | None = None,
    release: str | None = None,
) -> str:
    """The report page for the evaluated designs, as HTML text.

    Args:
        reports: the designs, as ``ampcalc.analyses.report.evaluate`` returns them.
        title: the page's title.
        sources: the design files the report was made from (shown in the header).
        version: the ampcalc version (shown in the header).
        organisation, dataset, release: who publishes, which data, which release
            (shown in the header, and the first on every printed page); optional.
    Raises:
        ReportUnavailable: Jinja2 or matplotlib is not installed.
    """
    env = _environment()
    from markupsafe import Markup  # lazy: comes with jinja2 (the report extra)

    sections = []
    figures = 0
    for i, r in enumerate(reports, start=1):
        drawn = figures_of(r, i, figures + 1)
        figures += len(drawn)
        basis = [citation(item) for item in r.bound.get("basis") or ()]
        sections.append({"r": r, "anchor": f"design-{i}", "figures": drawn, "basis": basis})
    refs = references(reports)
    running = " · ".join(x for x in (organisation, title) if x)
    return str(
        env.get_template(TEMPLATE).render(
            title=title,
            sections=sections,
            figures=figures,
            references=[{"ref": ref, "parts": entry_text(ref.entry)} for ref in refs],
            verdicts=VERDICTS,
            sources=list(sources),
            version=version,
            generated=_generated(),
            about=[
                (label, value)
                for label, value in (
                    ("Organisation", organisation),
                    ("Dataset", dataset),
                    ("Release", release),
                )
                if value
            ],
            running_head=Markup(css_string(running)),
        )
    )


def write(path: str | os.PathLike[str], html: str, *, inputs: Iterable[str] = ()) -> Path:
    """Write the page atomically (a temporary file renamed into place)."""
    with atomic_write(path, inputs=inputs, option="--output") as fh:
        fh.write(html)
    return Path(os.fspath(path))
