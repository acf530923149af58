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
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.analyses.report import DesignReport, number
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


def figure_svg(report: DesignReport, index: int) -> str:
    """The ε′-against-ε figure of one design as an inline ``<svg>`` element.

    Upper bound solid, lower bound dashed, the band between them shaded, ε′ without
    sampling dotted, M's declared ε marked; with a target, the target ε′ and the
    certified ε. Element ids carry the prefix ``f{index}-`` so that several figures
    can share one page.
    """
    curve = report.curve
    if curve is None:
        raise ValueError(f"design {report.name!r} has no curve")
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        raise ReportUnavailable(
            "the report's figures need matplotlib, which is not installed; install the "
            "extra with: pip install 'ampcalc[report]'"
        ) from None
    eps, lo, hi, ref = curve.epsilon, curve.lower, curve.upper, curve.reference
    rc: Any = {"svg.fonttype": "none", "svg.hashsalt": f"ampcalc-report-{index}", "font.size": 9}
    with matplotlib.rc_context(rc):
        fig = Figure(figsize=FIGURE_SIZE)
        ax = fig.add_subplot()
        both = np.isfinite(lo) & np.isfinite(hi)
        if np.any(both):
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
        ys = np.concatenate([v[np.isfinite(v)] for v in (lo, hi)])
        if report.target is not None:
            ys = np.append(ys, report.target)
        ys = ys[ys > 0]
        if ys.size and ys.max() / ys.min() > 100:
            ax.set_yscale("log")
        from matplotlib.ticker import FuncFormatter, NullLocator

        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                # plain-text labels and no minor ticks: mathtext and minor ticks would
                # cost most of the drawing time
                axis.set_minor_locator(NullLocator())
                axis.set_major_formatter(FuncFormatter(_power_of_ten))
        ax.set_xlabel("M's ε (the mechanism run on the sample)")
        ax.set_ylabel("population ε′")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7.5, loc="upper left", framealpha=0.9)
        fig.subplots_adjust(left=0.1, right=0.98, top=0.97, bottom=0.13)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return inline_svg(buf.getvalue(), prefix=f"f{index}-", label=f"ε′ against ε for {report.name}")


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
    from html import escape

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
        import jinja2
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


def render(
    reports: Sequence[DesignReport],
    *,
    title: str = "Privacy report",
    sources: Iterable[str] = (),
    version: str = "",
) -> str:
    """The report page for the evaluated designs, as HTML text.

    Args:
        reports: the designs, as ``ampcalc.analyses.report.evaluate`` returns them.
        title: the page's title.
        sources: the design files the report was made from (shown in the header).
        version: the ampcalc version (shown in the header).
    Raises:
        ReportUnavailable: Jinja2 or matplotlib is not installed.
    """
    env = _environment()
    from markupsafe import Markup

    sections = []
    figures = 0
    for i, r in enumerate(reports, start=1):
        svg = None
        if r.curve is not None:
            figures += 1
            svg = Markup(figure_svg(r, i))  # matplotlib's own SVG, ids rewritten
        basis = [citation(item) for item in r.bound.get("basis") or ()]
        sections.append({"r": r, "anchor": f"design-{i}", "svg": svg, "basis": basis})
    refs = references(reports)
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
        )
    )


def write(path: str | os.PathLike[str], html: str, *, inputs: Iterable[str] = ()) -> Path:
    """Write the page atomically (a temporary file renamed into place)."""
    with atomic_write(path, inputs=inputs, option="--output") as fh:
        fh.write(html)
    return Path(os.fspath(path))
