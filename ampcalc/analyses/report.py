"""What a privacy report shows for each design, evaluated (``ampcalc report``).

For every design: the mechanism and every sampling stage in words, the bounds
(``engine.bound``) with a label in words for every number, and the figure that fits the
mechanism:

- M given as (ε, δ): the inverse at the target (``engine.invert``) and the ε′-against-ε
  curve (a ``sweep`` along M's ε, so the curve is checked against single-point calls
  exactly as ``ampcalc sweep`` checks it);
- a named mechanism (a privacy profile): the noise calibrated to the target
  (``analyses.calibrate.solve``, as ``ampcalc invert --solve``), ε′ against the noise scale
  (the bound recomputed at every scale, as the calibration does) and δ′ against ε′ (the
  sampled profile of ``engine.bound``, with M's own profile
  (``accounting.profiles``) when it holds under the guarantee's relation).

``ampcalc.output.report`` turns the result into HTML. Pure: no printing, no exits.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ampcalc import engine, schemes
from ampcalc.accounting.profiles import MAX_DISCRETE_SIGMA
from ampcalc.analyses.sweep import EPSILON_PATH, Vary, evaluate_designs
from ampcalc.engine.profiles import bound_profile
from ampcalc.model.design import MAX_EPSILON, Design, Mechanism, Neighbours
from ampcalc.model.errors import AmpcalcError

#: Points of the ε′-against-ε curve, spaced geometrically.
CURVE_POINTS = 61
#: Points of the ε′-against-noise curve (each is a full bound, about 0.1 s on a cluster
#: design), spaced geometrically from the smaller of the design's and the calibrated
#: noise divided by ``NOISE_SPAN`` to the larger one multiplied by it.
NOISE_POINTS = 25
NOISE_SPAN = 4.0
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
class NoiseCurve:
    """ε′ against a named mechanism's noise scale (σ, or the Laplace scale b).

    Attributes:
        knob: ``sigma`` or ``scale`` (as ``invert --solve``).
        symbol: the scale's symbol for the reader (``σ`` or ``b``).
        values: the noise scales, increasing.
        lower, upper: the bounds on ε′ at each scale (NaN where none).
        at: the design's own scale.
        calibrated: the smallest scale that meets the target, or ``None``.
    """

    knob: str
    symbol: str
    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    at: float
    calibrated: float | None = None


@dataclass(frozen=True)
class ProfileCurve:
    """δ′ against ε′: the sampled mechanism's privacy profile (``details.profile``).

    Attributes:
        epsilon_prime, delta_prime: the sampled profile's points, ε′ increasing.
        alone: M's own δ at each ε′ (no sampling), or ``None`` when M's profile is not
            stated under the guarantee's relation.
        target_delta: the target δ′ the bound is read at.
        upper: the bound's ε′ at that δ′.
        reference: M's own ε at that δ′ (``details.reference_epsilon``), or ``None``.
    """

    epsilon_prime: np.ndarray
    delta_prime: np.ndarray
    alone: np.ndarray | None
    target_delta: float | None
    upper: float | None
    reference: float | None


@dataclass(frozen=True)
class Calibration:
    """The noise calibrated to the target (``analyses.calibrate.solve``), or why not.

    Attributes:
        result: ``solve``'s result (``knob.value``, ``knob.impossible_below``,
            ``knob.epsilon_prime_at_value``), or ``None``.
        symbol: the scale's symbol (``σ`` or ``b``), or ``""``.
        why: why there is no calibration, in words, or ``""``.
    """

    result: dict[str, Any] | None
    symbol: str = ""
    why: str = ""


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
        target_source: where ``target`` comes from, in words (given for this report,
            or the design's target).
        curve: the ε′-against-ε curve, or ``None`` (``no_curve`` says why).
        no_curve: why there is no curve, or ``""``.
        notes: the result's notes (context the reader may want), if it has any.
        bounds: the bounds as (label in words, value) rows, in page order.
        named: M is a named mechanism (a privacy profile).
        noise_curve: ε′ against the noise scale (named mechanisms with one), or ``None``.
        profile_curve: δ′ against ε′ (named mechanisms), or ``None``.
        calibration: the noise calibrated to the target (named mechanisms), or ``None``.
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
    bounds: list[tuple[str, Any]] = field(default_factory=list)
    named: bool = False
    noise_curve: NoiseCurve | None = None
    profile_curve: ProfileCurve | None = None
    calibration: Calibration | None = None

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


def _entries(n: int) -> str:
    return f"{n:,} entry" if n == 1 else f"{n:,} entries"


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
        return _entries(len(value))
    if isinstance(value, (list, tuple)):
        if len(value) <= 6 and all(isinstance(v, (str, numbers.Real)) for v in value):
            return ", ".join(number(v) for v in value)
        return _entries(len(value))
    names = getattr(value, "names", None)
    if isinstance(names, (list, tuple)):
        return _entries(len(names))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = [
            f"{f.name} {_value_text(getattr(value, f.name))}"
            for f in dataclasses.fields(value)
            if _value_text(getattr(value, f.name)) is not None
            and not isinstance(getattr(value, f.name), (np.ndarray, Mapping, list, tuple))
        ]
        return ", ".join(parts[:4]) if parts else "given"
    return "given"


#: The sampling fields in a reader's words, where the scheme's own help (written for the
#: design file) would show file syntax: (scheme, field) -> (label, meaning).
FIELD_WORDS: dict[tuple[str, str], tuple[str, str]] = {
    ("cluster", "clusters"): (
        "clusters",
        "the clusters (schools, households, areas) and how many records each holds",
    ),
    ("cluster", "chosen"): (
        "stage 1: clusters chosen",
        "ℓ clusters chosen at random without replacement; which ones is secret",
    ),
    ("cluster", "within"): (
        "stage 2: within each chosen cluster",
        "each record of a chosen cluster is kept independently with this probability "
        "(Poisson sampling); which records is secret",
    ),
    ("pps-cluster", "clusters"): (
        "clusters",
        "the clusters and how many records each holds",
    ),
    ("pps-cluster", "chosen"): (
        "clusters drawn",
        "ℓ, clusters drawn with probability proportional to their size",
    ),
    ("srswor", "sample"): ("sample", "sample size m, at most N"),
    ("data-dependent-size", "sample"): (
        "sample",
        "allocated sample size m = f(P), between 0 and N",
    ),
    ("allocation-test", "allocation"): (
        "allocation",
        "the distribution of the allocated sample size on the population",
    ),
    ("allocation-test", "neighbour_allocation"): (
        "neighbour's allocation",
        "the distribution of the allocated sample size on a neighbouring population",
    ),
    ("pps", "size_measures"): ("size measures", "r_i, each record's size measure"),
    ("pps", "inclusion_probabilities"): (
        "inclusion probabilities",
        "a_i, each record's inclusion probability, given directly",
    ),
    ("random-size", "size"): ("sample size", "the distribution of the sample size"),
    ("stratified", "strata"): ("strata", "the strata and their sizes"),
    ("stratified", "rounding"): (
        "rounding",
        "how each stratum's share of the sample is rounded to a whole number",
    ),
    ("stratified", "value_bound"): (
        "value bound",
        "top-code U of the study variable (values between 0 and U)",
    ),
    ("stratified", "allocations"): (
        "allocations",
        "the allocation on the population and on a neighbouring one (Neyman)",
    ),
    ("pws", "method"): (
        "method",
        "threshold sampling: ppswor (exponential priorities), priority (Poisson PPS) or none",
    ),
    ("pws", "threshold"): (
        "threshold",
        "τ: record i is kept with probability 1 − e^(−τ·f(i)) (ppswor) or min(1, τ·f(i)) "
        "(priority)",
    ),
    ("general-lower-bound", "conditional_epsilon"): (
        "conditional ε″",
        "the test event's log-ratio between P and P′ given that the cluster is sampled "
        "(between 0 and ε)",
    ),
    ("general-lower-bound", "reading"): (
        "reading",
        "statement: the theorem as stated; proof: the direction its proof uses",
    ),
}


def reader_text(text: str) -> str:
    """Engine text as a report's reader wants it: no references to result fields
    (``(details.x)``), no code quotes, ≤ and ≥ for ``<=`` and ``>=``, exponents in
    parentheses rather than braces."""
    text = re.sub(r"\s*\((?:details|knob)\.[A-Za-z_.]+\)", "", text)
    text = text.replace("`", "").replace("<=", "≤").replace(">=", "≥")
    # exponents as plain text: e^{−Kε} reads e^(−Kε)
    return re.sub(r"\^\{([^{}]*)\}", r"^(\1)", text)


def _clusters_text(value: Any, design: Design) -> str | None:
    """A cluster-size summary (``ClusterSizes``) in words, or ``None`` if it is not one."""
    needed = ("count", "largest", "smallest", "total", "source")
    if not all(hasattr(value, n) for n in needed):
        return None
    count, total = int(value.count), int(value.total)
    small, large = int(value.smallest), int(value.largest[0])
    if small == large:
        text = f"{number(count)} clusters of {number(small)} records each"
    else:
        text = f"{number(count)} clusters of {number(small)} to {number(large)} records"
    text += f", {number(total)} records in all"
    source = str(value.source)
    if source not in ("inline",) and not re.fullmatch(r"\d+ x \d+", source):
        text += f" (sizes from the file {source})"
    return text


def _plain_doc(doc: str) -> str:
    """A field's help without design-file syntax: what follows a ``{`` or ``[`` is file
    syntax, so the help stops before it."""
    cut = re.split(r"[:;(]?\s*[{\[]", doc, maxsplit=1)[0]
    return reader_text(cut.rstrip(" ,:;")) or doc


def sampling_rows(design: Design) -> list[tuple[str, str, str]]:
    """The design's sampling parameters in words: (label, meaning, value), in the scheme's
    order, every stage included (e.g. a cluster design's second stage)."""
    rows: list[tuple[str, str, str]] = []
    params = design.params
    for spec in schemes.get(design.scheme).fields:
        label, meaning = FIELD_WORDS.get(
            (design.scheme, spec.name), (spec.name.replace("_", " "), _plain_doc(spec.doc))
        )
        value = getattr(params, spec.name, None)
        if value is None:
            # a block stored under another name (``within: {rate}`` as ``within_rate``)
            value = getattr(params, f"{spec.name}_rate", None)
            if value is not None:
                rows.append((label, meaning, f"probability {number(value)}"))
            continue
        text = _clusters_text(value, design) or _value_text(value)
        if text is not None:
            rows.append((label, meaning, text))
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
    if m.profile is not None:
        rows.extend(named_rows(m.profile))
        if m.profile_releases:
            rows.append(("releases", f"{m.profile_releases} releases composed into one profile"))
    else:
        rows.append(("ε (M's privacy parameter)", number(m.epsilon)))
        rows.append(("δ (the chance M's ε may fail)", number(m.delta)))
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


#: A named mechanism in words: its kind, then each parameter's label.
NAMED_WORDS = {
    "gaussian": "Gaussian noise added to the released statistics",
    "discrete-gaussian": "discrete Gaussian noise added to the released counts",
    "laplace": "Laplace noise added to the released statistics",
    "discrete-laplace": "discrete Laplace (two-sided geometric) noise added to released counts",
    "randomized-response": "randomized response: each answer is reported truthfully or replaced",
    "zcdp": "a mechanism stated as ρ-zero-concentrated differentially private",
}
PARAMETER_WORDS = {
    "sigma": "noise standard deviation σ",
    "scale": "noise scale b",
    "sensitivity": "sensitivity Δ: how far one record can move the statistic",
    "mu": "μ = Δ/σ: the noise's privacy in one number (smaller is more private)",
    "epsilon": "ε₀ of each answer",
    "categories": "number of answer categories",
    "rho": "ρ: its zero-concentrated privacy parameter",
}
#: The noise scale of each named mechanism that has one: (``--solve`` knob, symbol).
NOISE_KNOBS = {
    "gaussian": ("sigma", "σ"),
    "discrete-gaussian": ("sigma", "σ"),
    "laplace": ("scale", "b"),
    "discrete-laplace": ("scale", "b"),
}


def named_rows(profile: Any) -> list[tuple[str, str]]:
    """A named mechanism (a privacy profile) in words: what it is, then every
    parameter with its label."""
    described = profile.to_dict()
    kind = str(described.get("mechanism", "named"))
    rows = [("mechanism", NAMED_WORDS.get(kind, kind))]
    for key, value in described.items():
        if key != "mechanism" and value is not None:
            rows.append((PARAMETER_WORDS.get(key, key.replace("_", " ")), number(value)))
    return rows


def bound_rows(design: Design, bound: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The bounds as (label in words, value) rows: every number the Bounds table shows."""
    details = bound.get("details") or {}
    eps_prime = bound.get("epsilon_prime") or {}
    m = design.mechanism
    named = m is not None and getattr(m, "profile", None) is not None
    rows: list[tuple[str, Any]] = []
    if named:
        rows.append(("target δ′ (the chance the ε′ guarantee may fail)", bound.get("delta_prime")))
        rows.append(("ε′ upper bound (the guarantee)", eps_prime.get("upper")))
        rows.append(
            ("ε′ lower bound (this mechanism loses at least this)", eps_prime.get("lower"))
        )
        if details.get("reference_epsilon") is not None:
            rows.append(
                (
                    "ε without sampling (the noise alone, at the same δ′)",
                    details["reference_epsilon"],
                )
            )
        rows.append(("M's ε at the point of its profile the bound uses", bound.get("epsilon")))
        rows.append(("M's δ at that point (M is (ε, δ)-private there)", bound.get("delta")))
        return rows
    rows.append(("M's ε (declared)", bound.get("epsilon")))
    rows.append(("M's δ (declared)", bound.get("delta")))
    rows.append(("ε′ upper bound (the guarantee)", eps_prime.get("upper")))
    rows.append(("ε′ lower bound (some M is this bad)", eps_prime.get("lower")))
    rows.append(("δ′ (the chance the ε′ guarantee may fail)", bound.get("delta_prime")))
    if details.get("reference_epsilon") is not None:
        rows.append(
            (
                "ε′ without sampling (M's own ε, under the relation the guarantee uses)",
                details["reference_epsilon"],
            )
        )
    return rows


def noise_curve(design: Design, calibrated: float | None) -> tuple[NoiseCurve | None, str]:
    """ε′ against the named mechanism's noise scale, around the design's scale and the
    calibrated one: the bound recomputed at every scale, as ``invert --solve`` does."""
    from ampcalc.analyses.calibrate import RANGE, with_noise  # lazy: > 20 ms

    m = design.mechanism
    profile: Any = getattr(m, "profile", None)
    kind = profile.to_dict().get("mechanism") if profile is not None else None
    if kind not in NOISE_KNOBS or m is None or m.profile_releases:
        return None, "this mechanism has no single noise scale to vary"
    knob, symbol = NOISE_KNOBS[kind]
    at = getattr(profile, knob, None)
    if not isinstance(at, numbers.Real) or not float(at) > 0:
        return None, "this mechanism has no single noise scale to vary"
    through = [float(at)] + ([float(calibrated)] if calibrated else [])
    lo_cap = float(profile.sensitivity) * RANGE[0]
    hi_cap = float(profile.sensitivity) * RANGE[1]
    if kind == "discrete-gaussian":
        hi_cap = min(hi_cap, MAX_DISCRETE_SIGMA)
    lo = max(min(through) / NOISE_SPAN, lo_cap)
    hi = min(max(through) * NOISE_SPAN, hi_cap)
    grid = np.unique(np.concatenate([np.geomspace(lo, hi, NOISE_POINTS), through]))
    lower = np.full(grid.size, np.nan)
    upper = np.full(grid.size, np.nan)
    for i, value in enumerate(grid):
        try:
            res = bound_profile(with_noise(design, float(value)), profile_points=False)
        except AmpcalcError:
            continue
        if res.upper is not None:
            upper[i] = float(res.upper)
        if res.lower is not None:
            lower[i] = float(res.lower)
    if not (np.any(np.isfinite(lower)) or np.any(np.isfinite(upper))):
        return None, f"no bound at any {symbol} of the curve"
    return (
        NoiseCurve(
            knob=knob,
            symbol=symbol,
            values=grid,
            lower=lower,
            upper=upper,
            at=float(at),
            calibrated=calibrated,
        ),
        "",
    )


def profile_curve(design: Design, bound: Mapping[str, Any]) -> ProfileCurve | None:
    """δ′ against ε′ from the bound's sampled profile, with M's own profile (no sampling)
    where M's profile holds under the relation the guarantee uses."""
    details = bound.get("details") or {}
    points = [
        (float(e), float(d))
        for e, d in details.get("profile") or ()
        if e is not None and d is not None and math.isfinite(e) and d > 0
    ]
    if len(points) < 2:
        return None
    points.sort()
    eps = np.array([e for e, _ in points])
    delta = np.array([d for _, d in points])
    m = design.mechanism
    alone = None
    guarantee = bound.get("guarantee_neighbours")
    if m is not None and m.profile is not None:
        relation = Neighbours(m.neighbours)
        if relation is Neighbours.BOTH or relation.value == guarantee:
            alone = np.asarray(m.profile.delta(eps), dtype=float)
    upper = (bound.get("epsilon_prime") or {}).get("upper")
    return ProfileCurve(
        epsilon_prime=eps,
        delta_prime=delta,
        alone=alone,
        target_delta=bound.get("delta_prime"),
        upper=upper,
        reference=details.get("reference_epsilon"),
    )


def calibration(design: Design, target: float | None, target_delta: float | None) -> Calibration:
    """The named mechanism's noise calibrated to the target ε′ (``invert --solve``)."""
    from ampcalc.analyses.calibrate import solve  # lazy: > 20 ms

    m = design.mechanism
    profile: Any = getattr(m, "profile", None)
    kind = profile.to_dict().get("mechanism") if profile is not None else None
    if kind not in NOISE_KNOBS or m is None or m.profile_releases:
        return Calibration(
            None, why="this mechanism has no single noise scale to calibrate to a target"
        )
    knob, symbol = NOISE_KNOBS[kind]
    if target is None:
        return Calibration(None, symbol, "no target ε′ was given for this report or in the design")
    try:
        return Calibration(solve(design, knob, target, target_delta), symbol)
    except AmpcalcError as err:
        return Calibration(None, symbol, reader_text(str(err)))


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

    m = design.mechanism
    if m is None:
        return None, "the scheme builds its mechanism for the target: there is no M's ε to vary"
    if getattr(m, "profile", None) is not None:
        return None, (
            "a named mechanism fixes its own privacy profile: its noise scale is varied "
            "instead of M's ε"
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
        t, source, t_delta = _report_target(d, target, target_delta)
        m = d.mechanism
        named = m is not None and getattr(m, "profile", None) is not None
        if bound.get("error"):
            shown = _Figures(why="the design is outside its theorem's conditions")
        elif named:
            shown = _named_figures(d, bound, t, t_delta)
        else:
            shown = _epsilon_figures(d, bound, t, t_delta)
        out.append(
            DesignReport(
                name=d.name,
                scheme=d.scheme,
                source=_source_text(d),
                scheme_summary=schemes.get(d.scheme).summary,
                mechanism=mechanism_rows(d, bound),
                sampling=sampling_rows(d),
                bound=bound,
                inverse=shown.inverse,
                target=t,
                target_source=source if t is not None else "",
                curve=shown.curve,
                no_curve=shown.why,
                notes=[reader_text(str(n)) for n in getattr(res, "notes", None) or ()],
                bounds=bound_rows(d, bound),
                named=named,
                noise_curve=shown.noise,
                profile_curve=shown.profile,
                calibration=shown.calibration,
            )
        )
    return out


def _report_target(
    design: Design, target: float | None, target_delta: float | None
) -> tuple[float | None, str, float | None]:
    """(target ε′, where it comes from in words, target δ′): those given for the report,
    else the design's ``target:`` (its δ′ only when no target ε′ is given)."""
    t, source = target, "given for this report"
    if t is None and design.target is not None and design.target.epsilon_prime is not None:
        t, source = float(design.target.epsilon_prime), "the design's target"
    t_delta = target_delta
    if t_delta is None and target is None and design.target is not None:
        t_delta = design.target.delta_prime
    return t, source, t_delta


def _source_text(design: Design) -> str:
    """``file:line`` the design comes from (``file`` without a line), or ``""``."""
    where = design.where
    if where is not None and where.file:
        return where.file + (f":{where.line}" if where.line else "")
    return ""


@dataclass(frozen=True)
class _Figures:
    """What a design's report shows past its bounds: the inverse or the calibration,
    and the curves (``why``: why there is no curve, or ``""``)."""

    inverse: dict[str, Any] | None = None
    curve: Curve | None = None
    why: str = ""
    noise: NoiseCurve | None = None
    profile: ProfileCurve | None = None
    calibration: Calibration | None = None


def _named_figures(
    design: Design, bound: dict[str, Any], t: float | None, t_delta: float | None
) -> _Figures:
    """A named mechanism fixes its profile: its noise calibrated to the target (not M's
    ε), ε′ against the noise scale, and its privacy profile."""
    calibrated = calibration(design, t, t_delta)
    value = ((calibrated.result or {}).get("knob") or {}).get("value")
    noise, why = noise_curve(design, value)
    return _Figures(
        why=why,
        noise=noise,
        profile=profile_curve(design, bound),
        calibration=calibrated,
    )


def _epsilon_figures(
    design: Design, bound: dict[str, Any], t: float | None, t_delta: float | None
) -> _Figures:
    """M given as (ε, δ): the inverse at the target, and ε′ against M's ε through M's ε
    and the certified ε (none for a scheme calibrated to its target)."""
    inverse = None
    if t is not None:
        try:
            inverse = engine.invert(design, t, t_delta).to_dict()
        except AmpcalcError as err:
            inverse = {"error": reader_text(str(err)), "target": {"epsilon_prime": t}}
    if bound.get("verdict") == "calibrated":
        why = (
            "the scheme calibrates its mechanism to the target ε′, which it meets "
            "exactly, so ε′ does not follow M's ε"
        )
        return _Figures(inverse=inverse, why=why)
    m = design.mechanism
    through = [getattr(m, "epsilon", math.nan) if m is not None else math.nan]
    if inverse is not None:
        through.append((inverse.get("epsilon") or {}).get("certified") or math.nan)
    graph, why = curve(design, [float(x) for x in through])
    return _Figures(inverse=inverse, curve=graph, why=why)
