"""What a scheme family provides: its fields (as data), its analysis, its metadata.

A scheme module defines a frozen ``Params`` dataclass, a tuple of ``Field`` specs
(the loader validates ``sampling:`` against them: types, domains, did-you-mean),
an optional ``check`` for cross-field rules (bad input), and ``analyse``, which
turns validated params and the mechanism into an ``Analysis``: pure, vectorised
closures of the declared mechanism ε.

Rounding is owned where the numbers are made: a family's formulas round each bound
outward themselves (upper up, lower down, through ``numeric``'s outward helpers), and
``schemes.assembly.assemble`` rounds and certifies the closed-form inverses, δ′ and
the mechanism δ for a target δ′. The engine does not round the bounds: it computes
the verdict, raises a lower bound below 0 to 0 and clips δ′ to [0, 1], inverts a bound
numerically where no closed form is given, and checks every certified ε against the
upper bound as evaluated (stepping it down where it fails).

Nothing here prints, reads YAML or exits.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ampcalc.load.fields import Field as Field  # re-exported: schemes declare their fields
from ampcalc.math import numeric
from ampcalc.math.types import FloatArray
from ampcalc.model.design import Neighbours
from ampcalc.model.references import Citation
from ampcalc.schemes._theorem import ClosedForm

BoundFn = Callable[[FloatArray], FloatArray]
"""Declared mechanism ε (array) -> bound on ε′ (array of the same shape)."""

InverseFn = Callable[[FloatArray], FloatArray]
"""Target ε′ (array) -> declared mechanism ε (array)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """A cross-field validation problem found by a scheme's ``check``."""

    field: str
    message: str


@dataclass(frozen=True)
class Bounds:
    """A lower and an upper bound that one formula gives, rounded both ways.

    An analysis's ``lower`` and ``upper`` are this record's two methods, and
    ``Analysis.bounds`` finds it from them (``Bounds.joining``): a copy of the analysis
    that changes either bound no longer has both halves of one record, so the joint
    evaluation cannot go stale.

    Attributes:
        lower_alone: the lower bound alone (ε -> ε′, rounded down).
        upper_alone: the upper bound alone (ε -> ε′, rounded up).
        both: ε -> (lower, upper) from one evaluation, the same values as the two.
    """

    lower_alone: BoundFn
    upper_alone: BoundFn
    both: Callable[[FloatArray], tuple[FloatArray, FloatArray]]

    def lower(self, eps: FloatArray) -> FloatArray:
        """The lower bound at ``eps`` (``lower_alone``)."""
        return self.lower_alone(eps)

    def upper(self, eps: FloatArray) -> FloatArray:
        """The upper bound at ``eps`` (``upper_alone``)."""
        return self.upper_alone(eps)

    @staticmethod
    def joining(lower: BoundFn | None, upper: BoundFn | None) -> Bounds | None:
        """The ``Bounds`` whose two methods ``lower`` and ``upper`` are, else None."""
        joint = getattr(lower, "__self__", None)
        if isinstance(joint, Bounds) and getattr(upper, "__self__", None) is joint:
            return joint
        return None


@dataclass(frozen=True, kw_only=True)
class ScalarForm:
    """An analysis whose formulas are one ``ClosedForm``, evaluated on one float: the
    same operations, rounding and certification as the analysis's array functions, so
    the same bits (the assembly builds it; ``Analysis.scalar_form`` reads it).

    Attributes:
        form: the theorem's closed form, of the ε of its relation.
        ratio: ε of the relation / declared ε (1 or 2: exact in floating point).
        reference_ratio: the reference ε (the verdict's) / declared ε.
        replace_one_ratio: M's ε_R / declared ε.
        delta_prime: δ′ (it does not depend on ε here), or None.
        delta_factor: δ′ = factor·δ: a target δ′ gives M's δ; None: no δ inversion.
        made_for: the analysis's functions it stands for; a copy of the analysis that
            changes any of them no longer uses it.
    """

    form: ClosedForm
    ratio: float
    reference_ratio: float
    replace_one_ratio: float
    delta_prime: float | None
    delta_factor: float | None
    made_for: tuple[Any, ...]

    def upper(self, eps: float) -> float | None:
        """The upper bound at declared ``eps`` (None: the array forms answer)."""
        a = self.form.at(eps * self.ratio)
        return None if a is None else numeric.round_up_float(a)

    def lower(self, eps: float) -> float | None:
        """The lower bound at declared ``eps`` (None: the array forms answer)."""
        a = self.form.at(eps * self.ratio)
        return None if a is None else numeric.round_down_float(a)

    def bounds(self, eps: float) -> tuple[float, float] | None:
        """(``lower``, ``upper``) from one evaluation."""
        a = self.form.at(eps * self.ratio)
        if a is None:
            return None
        return numeric.round_down_float(a), numeric.round_up_float(a)

    def certified(self, target: float) -> float | None:
        """Largest declared ε with ``upper`` <= target: the inverse rounded down (again
        after the division by ``ratio``), stepped down until it holds as evaluated."""
        guess = numeric.round_down_float(self.form.inverse_at(target))
        if self.ratio != 1.0:
            guess = numeric.round_down_float(guess / self.ratio)
        return numeric.certify_down_float(self.upper, guess, target)

    def impossible_above(self, target: float) -> float | None:
        """Smallest declared ε with ``lower`` >= target: the inverse rounded up (again
        after the division by ``ratio``), stepped up until it holds as evaluated."""
        guess = numeric.round_up_float(self.form.inverse_at(target))
        if self.ratio != 1.0:
            guess = numeric.round_up_float(guess / self.ratio)
        return numeric.certify_up_float(self.lower, guess, target)

    def mechanism_delta(self, target_delta: float) -> float | None:
        """M's δ that meets a target δ′ (rounded down), or None: no δ inversion."""
        if self.delta_factor is None:
            return None
        return numeric.round_down_float(target_delta / self.delta_factor)


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """A scheme's answer for one design: bounds as pure functions of the declared ε.

    Attributes:
        guarantee_neighbours: the relation ε′ holds under.
        reference_epsilon: M's ε under that relation (the unsampled loss, for the
            verdict), as a function of the declared ε.
        upper: guarantee on ε′ (rounded up), or ``None``: the theory gives none.
        lower: ε′ of some mechanism and neighbouring pair (rounded down), or ``None``.
        delta_prime: δ′ of the guarantee, or ``None`` where the theory gives none.
        certified: closed-form largest declared ε with upper <= T (rounded down),
            or ``None``: the engine inverts ``upper`` numerically.
        impossible_above: closed-form smallest declared ε with lower >= T (rounded
            up), or ``None``: numeric inversion of ``lower``.
        mechanism_delta: (target δ′, declared ε) -> largest M δ meeting δ′, or
            ``None`` when not available.
        basis: the works and theorems behind the bounds (``references.cite``).
        conditions: the theorem's conditions, as checked (in words).
        warnings: what the user should act on or reconsider (a failed or borderline
            condition, a degraded or missing guarantee, an input to fix).
        notes: context (relation conversions, proof remarks, corrections to the papers
            applied, which reading of a theorem is used).
        details: scheme-specific JSON-able figures (pinned keys per scheme).
        calibrated: the scheme builds its mechanism to meet a target exactly
            (verdict ``calibrated``).
        invert_details: target ε′ -> extra ``details`` for ``invert`` (e.g.
            per-stratum certified ε, the largest cluster size meeting the target).
            A ``notes`` entry (strings) goes to the result's ``notes`` instead.
        details_at: evaluated ε (array) -> the ``details`` entries that depend on ε
            (the engine merges them; arrays of the evaluated ε's shape).
        pointwise: the theorem's conditions depend on M's ε (they were checked at the
            declared ε only), so an array of ε is evaluated one point at a time, each
            point analysed, and checked, at its own ε.
        scalar: the analysis on one float (``ScalarForm``), or None; read through
            ``scalar_form``, which uses it only while the functions it was made for are
            the analysis's own and nothing else depends on ε.
    """

    guarantee_neighbours: Neighbours
    reference_epsilon: BoundFn
    upper: BoundFn | None
    lower: BoundFn | None
    delta_prime: BoundFn | None
    certified: InverseFn | None = None
    impossible_above: InverseFn | None = None
    mechanism_delta: Callable[[float, FloatArray], FloatArray] | None = None
    basis: tuple[Citation, ...] = ()
    conditions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    calibrated: bool = False
    invert_details: Callable[[FloatArray], Mapping[str, Any]] | None = None
    details_at: Callable[[FloatArray], Mapping[str, Any]] | None = None
    notes: tuple[str, ...] = ()
    pointwise: bool = False
    scalar: ScalarForm | None = None

    @property
    def bounds(self) -> Bounds | None:
        """``lower`` and ``upper`` from one evaluation, where they are the two methods of
        one ``Bounds`` (the assembly makes them so when one formula gives both bounds,
        rounded both ways, and the lower bound has no other part), else None. Derived
        from the two bounds, so a copy that changes either has none."""
        return Bounds.joining(self.lower, self.upper)

    def scalar_functions(self) -> tuple[Any, ...]:
        """The functions a ``ScalarForm`` of this analysis stands for."""
        return (
            self.upper,
            self.lower,
            self.certified,
            self.impossible_above,
            self.delta_prime,
            self.reference_epsilon,
            self.mechanism_delta,
        )

    def scalar_form(self) -> ScalarForm | None:
        """``scalar`` while it still stands for this analysis (the functions it was made
        for, no warnings, no ε-dependent or invert details, not calibrated, not
        pointwise), else None."""
        form = self.scalar
        if form is None or self.warnings or self.calibrated or self.pointwise:
            return None
        if self.details_at is not None or self.invert_details is not None:
            return None
        made_for = self.scalar_functions()
        if len(made_for) != len(form.made_for):
            return None
        if any(a is not b for a, b in zip(made_for, form.made_for, strict=True)):
            return None
        return form

    def bounds_at(self, eps: FloatArray) -> tuple[FloatArray | None, FloatArray | None]:
        """``(lower, upper)`` at ``eps`` (``None`` where the theory gives none): one
        evaluation when both round one formula."""
        joint = self.bounds
        if joint is not None:
            return joint.both(eps)
        upper = self.upper(eps) if self.upper is not None else None
        lower = self.lower(eps) if self.lower is not None else None
        return lower, upper


@dataclass(frozen=True)
class ExactRemoval:
    """A scheme's (ε, δ) theorem that carries a named mechanism's privacy profile through
    exactly: each add-remove point (ε, δ_M(ε)) of M goes to (A(q, ε), q·δ_M(ε)), and the
    removal direction attains it (H_{e^{ε′}}((1 − q)Q + qP ‖ Q) = q·H_{e^ε}(P ‖ Q) for
    e^{ε′} = 1 + q(e^ε − 1); Balle, Barthe and Gaboardi 2018, Theorem 8's tightness).

    The profile path reads it for a first guess of M's point that meets a target δ′, and
    for a lower bound on ε′ at δ′ from M's lower profile (``Scheme.exact_profile``).

    Attributes:
        rate: q, the probability that the differing record is in the sample.
    """

    rate: float

    def guess_delta(self, target_delta: float) -> float | None:
        """M's δ whose point meets ``target_delta`` exactly: δ′/q, unrounded (a first
        guess, checked as evaluated); None for δ′ = 0 or δ′ >= q."""
        q = float(self.rate)
        if 0.0 < q <= 1.0 and 0.0 < target_delta < q:
            return target_delta / q
        return None

    def lower_delta(self, target_delta: float) -> float:
        """M's δ for the lower bound at ``target_delta``: δ′/q rounded up (0 at δ′ = 0)."""
        q = float(self.rate)
        return float(numeric.round_up(target_delta / q)) if target_delta > 0 else 0.0

    def lower(self, eps_lower: Any) -> float:
        """The lower bound on ε′ from M's lower-profile ε at ``lower_delta``: A(q, ε)
        rounded down, at least 0."""
        return max(float(numeric.amplification_lower(float(self.rate), eps_lower)), 0.0)


@dataclass(frozen=True, kw_only=True)
class Scheme:
    """A registry entry: plain data plus pure functions (style guide §2.3).

    The relation M's ε must hold under is not repeated here: the family module states
    it once as ``RELATION``, for its ``Theorem`` records and for the catalogue
    (``schemes.mechanism_relation``).

    Attributes:
        name: the YAML ``scheme:`` value.
        summary: one line for ``ampcalc schemes``.
        params: the frozen ``Params`` dataclass built from ``sampling:``.
        fields: the keys of ``sampling:`` (besides ``scheme``).
        guarantees: relations a guarantee can be asked for; the first is natural.
        basis: the papers and theorems behind it.
        analyse: (params, mechanism, guarantee) -> Analysis; raises
            ``ConditionError`` naming the theorem and the failed condition. The
            mechanism is a ``Mechanism``, the scheme's own object (``parse_mechanism``)
            or ``None`` (``mechanism_form="none"``).
        check: cross-field validation (bad input), returns problems.
        example: parameters for contract tests and ``ampcalc schemes``.
        mechanism_form: which ``mechanism:`` form the loader accepts
            (``epsilon``: ``epsilon``/``releases`` with ``delta``, ``neighbours``).
        parse_params: (validated top-level field values, ``validate.Reader``) ->
            Params, for schemes with nested blocks or files (``kind="any"`` fields are
            passed through raw, with marks, for it to validate); default
            ``params(**values)``.
        parse_mechanism: with ``mechanism_form="custom"``: (raw ``mechanism:``
            block, Reader, the design's parsed ``Params``) -> the scheme's own mechanism
            object (e.g. a per-record ε whose domain depends on the sampling block).
            ``mechanism_form="none"``: no mechanism; the scheme is calibrated to the
            ``target:`` block (``needs_target``).
        supports_group_size: the scheme handles ``mechanism.group_size > 1``.
        bind_target: (params, target) -> params, for schemes calibrated to the
            design's ``target:`` block (the engine binds it before ``analyse``).
        check_target: (target, reader, raw target block) -> None; raises
            ``DesignError`` at the target's YAML line when the scheme cannot be
            calibrated to it (called while loading).
        verify_plan: (params, mechanism, pairs, *, limit[, guarantee]) -> ``exact.Plan``,
            the tiny instance ``ampcalc verify`` solves exactly; a hook with a
            ``guarantee`` parameter lists the pairs of that relation
            (``verify_plan_takes_guarantee``), otherwise its pairs are of the natural
            relation.
        compare: (design, target, inverted result) -> accuracy columns for
            ``ampcalc compare`` (``{"error": ...}`` when none can be given).
        exact_profile: (params, guarantee) -> ``ExactRemoval`` where the scheme's
            (ε, δ) theorem maps a named mechanism's privacy profile exactly under that
            guarantee (Poisson sampling under add-remove), else None; without it no
            lower bound is claimed for a named mechanism.
    """

    name: str
    summary: str
    params: type
    fields: tuple[Field, ...]
    guarantees: tuple[Neighbours, ...]
    basis: tuple[Citation, ...]
    analyse: Callable[[Any, Any, Neighbours], Analysis]
    check: Callable[[Any], list[Problem]] = lambda params: []
    example: Mapping[str, Any] = field(default_factory=dict)
    mechanism_form: str = "epsilon"
    parse_params: Callable[[dict[str, Any], Any], Any] | None = None
    parse_mechanism: Callable[[Any, Any, Any], Any] | None = None
    supports_group_size: bool = False
    bind_target: Callable[[Any, Any], Any] | None = None
    check_target: Callable[[Any, Any, Any], None] | None = None
    verify_plan: Callable[..., Any] | None = None
    compare: Callable[[Any, float, Any], Mapping[str, Any]] | None = None
    exact_profile: Callable[[Any, Neighbours], ExactRemoval | None] | None = None

    @property
    def needs_target(self) -> bool:
        """The design must carry ``target: {epsilon_prime, ...}``: the scheme has no
        mechanism of its own (``mechanism_form="none"``) and is calibrated to it."""
        return self.mechanism_form == "none"

    @property
    def verify_plan_takes_guarantee(self) -> bool:
        """``verify_plan`` takes ``guarantee`` (read from its signature) and lists the
        pairs of that relation; otherwise its pairs are of the natural relation."""
        hook = self.verify_plan
        return hook is not None and "guarantee" in inspect.signature(hook).parameters
