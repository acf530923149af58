"""What a privacy report shows for each design, evaluated (``ampcalc report``).

For every design: the mechanism and the sampling scheme in words, the bounds at the
declared ε (``engine.bound``), the inverse at the target (``engine.invert``), and the
ε′-against-ε curve (a ``sweep`` along M's ε, so the curve is checked against
single-point calls exactly as ``ampcalc sweep`` checks it). ``ampcalc.output.report``
turns the result into HTML. Pure: no printing, no exits.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ampcalc import engine, schemes
from ampcalc.model.design import MAX_EPSILON, Design, Mechanism, Neighbours
from ampcalc.model.errors import AmpcalcError

#: Points of the ε′-against-ε curve, spaced geometrically.
CURVE_POINTS = 61
#: The curve spans ε from the smaller of M's ε and the certified ε divided by this
#: factor to the larger one multiplied by it.
CURVE_SPAN = 20.0


@dataclass(frozen=True)
class Curve:
    """ε′ against M's ε: the bounds at every ε of ``epsilon`` (NaN where none)."""

    epsilon: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    reference: np.ndarray


@dataclass(frozen=True)
class DesignReport:
    """One design's part of the report.

    Attributes:
        name, scheme: the design's name and ``sampling.scheme``.
        source: the file (and line) the design comes from, when known.
        scheme_summary: the scheme in one line (``ampcalc schemes``).
        mechanism: M in words, as (label, value) rows.
        sampling: the design's sampling parameters, as (name, meaning, value) rows.
        bound: the ``bound --json`` result at the declared ε.
        inverse: the ``invert --json`` result at ``target``, or ``None``.
        target: the target ε′ the inverse is taken at, or ``None``.
        target_source: where ``target`` comes from (``--target`` or the design).
        curve: the ε′-against-ε curve, or ``None`` (``no_curve`` says why).
        no_curve: why there is no curve, or ``""``.
        notes: the result's notes (context the reader may want), if it has any.
    """

    name: str
    scheme: str
    source: str
    scheme_summary: str
    mechanism: list[tuple[str, str]]
    sampling: list[tuple[str, str, str]]
    bound: dict[str, Any]
    inverse: dict[str, Any] | None
    target: float | None
    target_source: str
    curve: Curve | None
    no_curve: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        """The design's error (outside its theorem's conditions), or ``None``."""
        err = self.bound.get("error")
        return str(err) if err else None


def number(value: Any) -> str:
    """A number as a reader wants it: six significant digits, ``—`` for none."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            return "—"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == int(v) and abs(v) < 1e15:
            return number(int(v))
        return f"{v:.6g}"
    return str(value)


def _value_text(value: Any) -> str | None:
    """A sampling parameter in a few words, or ``None`` to leave it out."""
    if value is None:
        return None
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, (str, bool, numbers.Real)):
        return number(value)
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return number(value.item())
        return f"{value.size:,} values"
    if isinstance(value, Mapping):
        return f"{len(value):,} entries"
    if isinstance(value, (list, tuple)):
        if len(value) <= 6 and all(isinstance(v, (str, numbers.Real)) for v in value):
            return ", ".join(number(v) for v in value)
        return f"{len(value):,} entries"
    names = getattr(value, "names", None)
    if isinstance(names, (list, tuple)):
        return f"{len(names):,} entries"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = [
            f"{f.name} {_value_text(getattr(value, f.name))}"
            for f in dataclasses.fields(value)
            if _value_text(getattr(value, f.name)) is not None
            and not isinstance(getattr(value, f.name), (np.ndarray, Mapping, list, tuple))
        ]
        return ", ".join(parts[:4]) if parts else "given"
    return "given"


def sampling_rows(design: Design) -> list[tuple[str, str, str]]:
    """The design's sampling parameters: (name, meaning, value), in the scheme's order."""
    rows: list[tuple[str, str, str]] = []
    for spec in schemes.get(design.scheme).fields:
        text = _value_text(getattr(design.params, spec.name, None))
        if text is not None:
            rows.append((spec.name, spec.doc, text))
    return rows


_RELATION = {
    Neighbours.ADD_REMOVE: "add-remove (one record added or removed)",
    Neighbours.REPLACE_ONE: "replace-one (one record's value changed)",
    Neighbours.BOTH: "both add-remove and replace-one",
}


def mechanism_rows(design: Design, bound: Mapping[str, Any]) -> list[tuple[str, str]]:
    """M in words: its ε and δ, the relation they hold under, releases, named noise."""
    m = design.mechanism
    if m is None:
        return [
            (
                "mechanism",
                "built by the scheme itself, calibrated to the target "
                f"(ε′ = {number(design.target.epsilon_prime if design.target else None)}, "
                f"δ′ = {number(design.target.delta_prime if design.target else None)})",
            )
        ]
    if not isinstance(m, Mechanism):
        kind = getattr(m, "kind", None)
        rows = [
            ("mechanism", f"{kind} (the scheme's own form)" if kind else "the scheme's own form")
        ]
        eps = getattr(m, "epsilon", None)
        if isinstance(eps, numbers.Real):
            rows.append(("ε (declared, without sampling)", number(eps)))
        return rows
    rows = []
    named = (bound.get("details") or {}).get("mechanism")
    if m.profile is not None and isinstance(named, Mapping):
        kind = named.get("mechanism", "named")
        params = ", ".join(
            f"{k} = {number(v)}" for k, v in named.items() if k != "mechanism" and v is not None
        )
        rows.append(("mechanism", f"{kind} ({params})" if params else str(kind)))
        if m.profile_releases:
            rows.append(("releases", f"{m.profile_releases} composed"))
    else:
        rows.append(("ε", number(m.epsilon)))
        rows.append(("δ", number(m.delta)))
    rows.append(("holds under", _RELATION[Neighbours(m.neighbours)]))
    if m.epsilon_replace_one is not None:
        rows.append(("ε under replace-one", number(m.epsilon_replace_one)))
    if m.releases is not None:
        rows.append(
            (
                "releases",
                "; ".join(f"ε = {number(r.epsilon)}, δ = {number(r.delta)}" for r in m.releases)
                + " (added up: basic composition)",
            )
        )
    if m.group_size != 1:
        rows.append(("group size", f"{m.group_size} records of one unit change together"))
    return rows


def _curve_grid(points: Sequence[float]) -> np.ndarray:
    finite = [p for p in points if p is not None and math.isfinite(p) and p > 0]
    lo = min(finite) / CURVE_SPAN
    hi = min(max(finite) * CURVE_SPAN, MAX_EPSILON)
    grid = np.geomspace(lo, hi, CURVE_POINTS)
    return np.unique(np.concatenate([grid, np.asarray(finite, dtype=float)]))


def curve(design: Design, through: Sequence[float]) -> tuple[Curve | None, str]:
    """ε′ against M's ε around the values ``through`` (M's ε, the certified ε).

    Returns the curve, or ``None`` and the reason there is none (a scheme calibrated
    to its target, a named mechanism, no bound anywhere on the grid).
    """
    from ampcalc.analyses.sweep import EPSILON_PATH, Vary, evaluate_designs

    m = design.mechanism
    if m is None:
        return None, "the scheme builds its mechanism for the target: there is no M's ε to vary"
    if getattr(m, "profile", None) is not None:
        return None, (
            "a named mechanism fixes its own privacy profile; vary its noise scale "
            "(ampcalc sweep --vary) rather than M's ε"
        )
    if not any(p is not None and math.isfinite(p) and p > 0 for p in through):
        return None, "M's ε is not a finite number"
    grid = _curve_grid(through)
    vary = Vary(EPSILON_PATH, tuple(grid.tolist()), log=True, text="report")
    swept = evaluate_designs([design], [vary], of="bound")
    cols = swept.columns
    lower = np.asarray(cols["epsilon_prime.lower"], dtype=float)
    upper = np.asarray(cols["epsilon_prime.upper"], dtype=float)
    if not (np.any(np.isfinite(lower)) or np.any(np.isfinite(upper))):
        errors = swept.errors()
        return None, errors[0] if errors else "no bound at any ε of the curve"
    return (
        Curve(
            epsilon=np.asarray(cols["epsilon"], dtype=float),
            lower=lower,
            upper=upper,
            reference=np.asarray(cols["reference_epsilon"], dtype=float),
        ),
        "",
    )


def evaluate(
    designs: Sequence[Design],
    *,
    target: float | None = None,
    target_delta: float | None = None,
) -> list[DesignReport]:
    """Everything the report shows, design by design.

    Args:
        designs: the validated designs.
        target: the target ε′ for the inverse (default: each design's ``target:``).
        target_delta: the target δ′ for the inverse.
    Returns:
        One ``DesignReport`` per design. A design outside its theorem's conditions
        carries the error in ``bound`` and has no curve.
    """
    out: list[DesignReport] = []
    for d in designs:
        res = engine.bound(d)
        bound = res.to_dict()
        notes = [str(n) for n in getattr(res, "notes", None) or ()]
        t, source = target, "--target"
        if t is None and d.target is not None and d.target.epsilon_prime is not None:
            t, source = float(d.target.epsilon_prime), "the design's target"
        t_delta = target_delta
        if t_delta is None and target is None and d.target is not None:
            t_delta = d.target.delta_prime
        inverse = None
        if t is not None and not bound.get("error"):
            try:
                inverse = engine.invert(d, t, t_delta).to_dict()
            except AmpcalcError as err:
                inverse = {"error": str(err), "target": {"epsilon_prime": t}}
        graph: Curve | None = None
        why = ""
        if bound.get("error"):
            why = "the design is outside its theorem's conditions"
        elif bound.get("verdict") == "calibrated":
            why = (
                "the scheme calibrates its mechanism to the target ε′, which it meets "
                "exactly, so ε′ does not follow M's ε"
            )
        else:
            m = d.mechanism
            through = [getattr(m, "epsilon", math.nan) if m is not None else math.nan]
            if inverse is not None:
                through.append((inverse.get("epsilon") or {}).get("certified") or math.nan)
            graph, why = curve(d, [float(x) for x in through])
        where = d.where
        src = ""
        if where is not None and where.file:
            src = where.file + (f":{where.line}" if where.line else "")
        out.append(
            DesignReport(
                name=d.name,
                scheme=d.scheme,
                source=src,
                scheme_summary=schemes.get(d.scheme).summary,
                mechanism=mechanism_rows(d, bound),
                sampling=sampling_rows(d),
                bound=bound,
                inverse=inverse,
                target=t,
                target_source=source if t is not None else "",
                curve=graph,
                no_curve=why,
                notes=notes,
            )
        )
    return out
