"""A theorem as data: the ``Theorem`` record a family states once per result, its typed
parts (``OfPair``, ``InScale``, ``Proportional``, ``Witness``, ``Refusal``,
``ClosedForm``) and the formula types; ``ampcalc.schemes.assembly`` turns it into an
``Analysis``."""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ampcalc.math.types import FloatArray
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.references import Citation

Formula = Callable[[FloatArray], FloatArray]
"""ε of the theorem's relation (array) -> ε′ (array of the same shape)."""

BothFormula = Callable[[FloatArray], tuple[FloatArray, FloatArray]]
"""ε of the theorem's relation -> (lower, upper) bounds on ε′, from one evaluation."""

PairFormula = Callable[[FloatArray, FloatArray], FloatArray]
"""(M's ε under add-remove, its ε under replace-one) (arrays of one shape) -> ε′ (or
details): for results that use M's ε under both relations at once."""

DeltaFormula = Callable[[FloatArray, FloatArray], FloatArray]
"""(ε, δ of the theorem's relation) (arrays) -> δ′, rounded up and capped at 1."""


class ClosedForm(Protocol):
    """A result's formula stated once, as a closed form of the ε of the theorem's
    relation (e.g. ``numeric.Amplification``): the bounds it gives rounded outward, its
    unrounded inverse, and the same evaluated on one float (so a single ε is answered
    without arrays, by the same operations)."""

    def upper(self, eps: FloatArray) -> FloatArray:
        """The formula rounded up."""
        ...

    def lower(self, eps: FloatArray) -> FloatArray:
        """The formula rounded down."""
        ...

    def bounds(self, eps: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(``lower``, ``upper``) from one evaluation."""
        ...

    def inverse(self, target: FloatArray) -> FloatArray:
        """The ε at which the formula reaches ``target``, unrounded."""
        ...

    def at(self, eps: float) -> float | None:
        """The formula of one float, unrounded; None where it is not evaluated one float
        at a time (the array forms answer)."""
        ...

    def inverse_at(self, target: float) -> float:
        """``inverse`` of one float."""
        ...


@dataclass(frozen=True, kw_only=True)
class Witness:
    """A lower bound proved by one witness mechanism, and how the witness reads under
    each relation.

    Attributes:
        bound: witness ε (array) -> the witness's loss ε′, rounded down.
        replace_one_ratio: the witness run at ε is ε-DP under add-remove and
            ``replace_one_ratio``·ε-DP under replace-one (Σx + Lap(1/ε) with a record
            changing the sum by 2 under replacement: 2; randomised response on "x is in
            the sample": 1). ``assemble`` runs it at the largest ε the declared
            mechanism allows under every relation: min(ε_D, ε_R/ratio), ε_D = +∞ when
            M's add-remove ε is unknown (and not refused).
    """

    bound: Formula
    replace_one_ratio: float = 1.0


class Refuses(enum.Enum):
    """What a theorem refuses outright (``Refusal``)."""

    GUARANTEE = "a guarantee under another relation than the theorem's"
    DELTA = "δ > 0 (the theorem is for pure ε)"
    ADD_REMOVE_UNKNOWN = "M declared under replace-one only (its add-remove ε unknown)"


@dataclass(frozen=True)
class Refusal:
    """One refusal of a theorem: what it refuses and the message (a ``ConditionError``)."""

    refuses: Refuses
    message: str


class Scale(enum.Enum):
    """Which of M's ε a closed-form inverse is stated in; the declared ε follows by a
    fixed ratio (``Mechanism.replace_one_ratio``: ε_R/ε, kept fixed while ε varies)."""

    DECLARED = "declared"  # the declared ε itself
    REPLACE_ONE = "replace-one"  # ε_R = ratio·ε
    SMALLER = "smaller"  # min(ε_D, ε_R) = min(1, ratio)·ε

    def ratio(self, mechanism: Mechanism) -> float:
        """ε in this scale / the declared ε."""
        if self is Scale.DECLARED:
            return 1.0
        ratio = mechanism.replace_one_ratio()
        return ratio if self is Scale.REPLACE_ONE else min(1.0, ratio)


@dataclass(frozen=True)
class OfPair:
    """A formula of M's ε under both relations at once: (ε_D, ε_R) -> ε′ (or δ′), for a
    result that uses both (ε_D = +∞ where M's add-remove ε is unknown and not refused).
    The theorem's ``params`` follow by keyword until the assembly binds them.
    """

    formula: Callable[..., FloatArray]


@dataclass(frozen=True)
class InScale:
    """A closed-form inverse stated in a ``Scale`` of M's ε (for a theorem of any
    relation): the declared ε is inv(T)/ratio, rounded outward once and certified
    against the bound as evaluated (the theorem's ``params`` follow the target by keyword
    until the assembly binds them)."""

    scale: Scale
    formula: Callable[..., FloatArray]


@dataclass(frozen=True)
class Proportional:
    """δ′ = factor·δ of the theorem's relation, rounded up and capped at 1; a target δ′
    gives back the mechanism δ that meets it."""

    factor: float


ParamFormula = Callable[..., FloatArray]
"""A family's formula: ε (array) first, then the theorem's ``params`` by keyword."""

Bound = ParamFormula | OfPair
"""A bound of the relation's ε, or of M's (ε_D, ε_R) (``OfPair``)."""

Inverse = ParamFormula | InScale
"""An inverse of the relation's ε, or stated in a ``Scale`` of M's ε (``InScale``)."""

DeltaSpec = Proportional | Callable[..., FloatArray] | OfPair
"""How δ′ follows from M's δ: a multiple of it, δ′(ε, δ) of the relation, or δ′ of M's
(ε_D, ε_R) with M's δ bound in by the family."""


@dataclass(frozen=True, kw_only=True)
class Theorem:
    """A result's formulas under its natural relation, as data.

    Attributes:
        name: how the result is cited in messages, e.g. ``"Theorem 2.2"``.
        basis: the references (``references.cite`` items).
        relation: the relation M's ε must hold under for the theorem; plain ``upper``,
            ``lower``, ``inverse``, ``lower_inverse`` and ``delta_prime`` formulas take
            the ε of it. ``BOTH``: M's ε under each relation enters (only ``OfPair``
            formulas, ``InScale`` inverses and ``witnesses``), the condition stated is
            "ε_D-DP under add-remove and ε_R-DP under replace-one". None: no condition
            on M's relation (e.g. a lower bound by witnesses only, run at whatever ε the
            declared relations allow).
        guarantee: the relation ε′ holds under; the unsampled loss the verdict
            compares with (the reference ε) is M's ε under it.
        upper: ε -> ε′ upper bound, already rounded up (a guarantee); ``OfPair``: of
            (ε_D, ε_R), rounded up, a result that uses M's ε under both relations at
            once; None: a lower-only result (verdict no-guarantee).
        lower: ε -> ε′ lower bound, rounded down (``OfPair``: of (ε_D, ε_R)), or None.
        witnesses: lower bounds by witness mechanisms, each run at min(ε_D, ε_R/c).
            The analysis's lower bound is the largest of ``lower`` and the witnesses.
        inverse: target ε′ -> ε, the unrounded closed-form inverse of ``upper`` (and of
            ``lower`` when they share a formula), or None. ``InScale``: the upper
            bound's inverse in a ``Scale`` of M's ε: the certified declared ε is
            inv(T)/ratio rounded down once and stepped down until ``upper`` <= T; it is
            not used for the lower bound. A plain one is of the ε of ``relation``
            (rounded, divided by the relation's ratio, rounded again).
        lower_inverse: target ε′ -> ε at or just below where ``lower`` (the only lower
            part) reaches it, when it differs from ``upper``'s (+∞: never); the
            assembly rounds it down and steps it up until ``lower`` >= target.
            ``InScale``: the lower bound's own inverse in a ``Scale`` (unrounded, or
            rounded up): inv(T)/ratio rounded up once and stepped up until the lower
            bound >= T; +∞ (never reached) is kept, and when it is +∞ at every target
            the lower bound is not evaluated.
        delta_prime: how δ′ follows from M's δ (``DeltaSpec``), or None when the
            theorem gives no δ′ (pure ε only): ``Proportional(factor)``: δ′ =
            factor·δ of ``relation`` (a target δ′ gives the mechanism δ); a function
            (ε, δ of ``relation``) -> δ′, rounded up (no mechanism δ is derived from a
            target δ′); ``OfPair``: (ε_D, ε_R) -> δ′, rounded up and capped at 1, for a
            result whose δ′ depends on which of its candidates is smallest, with M's δ
            (and its replace-one δ rule) bound in by the family. δ′ = 0 when M's δ is 0.
        conditions: the theorem's conditions, in words, with the design's values.
        tight: the bounds meet (up to rounding); None: ``details`` states nothing
            about tightness.
        pure: the theorem is for pure ε only (the family refuses δ > 0): δ′ = 0, and
            no mechanism δ follows from a target δ′.
        group_size: ε′ protects a group of this many records (the unsampled loss the
            verdict compares with is group_size·ε of the relation).
        relation_words: what follows the relation in the stated condition "M is ε-DP
            under <relation><relation_words>", e.g. " on samples of size m".
        refusals: what the theorem refuses outright, checked in this order before
            anything else (``Refuses``): a requested guarantee other than
            ``guarantee``; δ > 0 (δ′ = 0 then); an unknown add-remove ε. Without an
            ``ADD_REMOVE_UNKNOWN`` refusal a ``BOTH``/None theorem takes ε_D = +∞ there
            (no add-remove constraint).
        relation_condition: the stated condition on M's relation in the family's own
            words (``{declared}``: M's declared relation), in place of the standard one;
            "" states none.
        params: the family's parameters for this design, passed by keyword to every
            formula after its ε (bounds, inverses, δ′ rules; not witnesses), so a family
            names its module-level formulas (``upper=upper_epsilon``, ``params={"rate":
            q}``) instead of closing over them; ``assemble`` binds them once.
        closed_form: the result's one formula as a ``ClosedForm`` of the relation's ε
            (its parameters inside, e.g. ``numeric.Amplification(q)``): ``upper``,
            ``lower`` and ``inverse`` left None are its own; while ``upper`` and
            ``lower`` are, both come from one evaluation (``bounds``), and while all
            three are, the assembly also gives the analysis a ``ScalarForm`` (one ε
            answered on Python floats by the same operations). A family gives it only
            where its notes, details and conditions do not depend on M's ε. A copy
            that drops one of the three sets ``closed_form=None`` too (a copy refills
            what it leaves None from the form).
    """

    name: str
    basis: tuple[Citation, ...]
    relation: Neighbours | None
    guarantee: Neighbours
    upper: Bound | None = None
    lower: Bound | None = None
    witnesses: tuple[Witness, ...] = ()
    inverse: Inverse | None = None
    lower_inverse: Inverse | None = None
    delta_prime: DeltaSpec | None = None
    conditions: tuple[str, ...] = ()
    tight: bool | None = False
    pure: bool = False
    group_size: int = 1
    relation_words: str = ""
    refusals: tuple[Refusal, ...] = ()
    relation_condition: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    closed_form: ClosedForm | None = None

    def __post_init__(self) -> None:
        form = self.closed_form
        if form is not None:
            for name, formula in (
                ("upper", form.upper),
                ("lower", form.lower),
                ("inverse", form.inverse),
            ):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, formula)
        single = (self.upper, self.lower, self.inverse, self.lower_inverse, self.delta_prime)
        if self.relation in (None, Neighbours.BOTH) and any(_plain(f) for f in single):
            raise ValueError(
                f"{self.name}: formulas of one relation's ε need relation add-remove or "
                "replace-one"
            )

    def bind(self) -> Theorem:
        """This theorem with ``params`` bound into its formulas (and none left)."""
        if not self.params:
            return self
        kw = dict(self.params)
        return dataclasses.replace(
            self,
            upper=_bind(self.upper, kw),
            lower=_bind(self.lower, kw),
            inverse=_bind(self.inverse, kw),
            lower_inverse=_bind(self.lower_inverse, kw),
            delta_prime=_bind(self.delta_prime, kw),
            params={},
        )

    @property
    def bounds(self) -> Callable[[FloatArray], tuple[FloatArray, FloatArray]] | None:
        """ε -> (``lower``, ``upper``) from one evaluation of the formula both round (the
        same values as the two; a sweep then evaluates it once): ``closed_form``'s,
        while ``upper`` and ``lower`` are its own; else None. The assembly uses it when
        ``lower`` is the only lower part."""
        form = self.closed_form
        if form is None or self.params or self.upper != form.upper or self.lower != form.lower:
            return None
        return form.bounds

    def formulas_are_closed_form(self) -> bool:
        """``upper``, ``lower`` (so ``bounds``) and ``inverse`` are all ``closed_form``'s."""
        form = self.closed_form
        return form is not None and self.bounds is not None and self.inverse == form.inverse

    def refusal(self, refuses: Refuses) -> str | None:
        """The message of the theorem's refusal of ``refuses``, or None."""
        for r in self.refusals:
            if r.refuses is refuses:
                return r.message
        return None


def _bind(spec: Any, params: dict[str, Any]) -> Any:
    """A formula (plain, ``OfPair`` or ``InScale``) with the family's parameters bound."""
    if spec is None or isinstance(spec, Proportional):
        return spec
    if isinstance(spec, OfPair):
        return OfPair(functools.partial(spec.formula, **params))
    if isinstance(spec, InScale):
        return InScale(spec.scale, functools.partial(spec.formula, **params))
    return functools.partial(spec, **params)


def _plain(spec: object) -> bool:
    """A formula (or δ′ rule) of the ε of the theorem's one relation."""
    return spec is not None and not isinstance(spec, OfPair | InScale)
