"""Frozen data shared by every layer: relations, mechanisms, targets and designs.

A design states everything a bound needs (the ``dp_accounting`` rule: events are
plain data; the engine interprets them). Nothing here computes a bound. ``check_epsilon``
is the one rule for a valid ε, called wherever an ε enters; ``check_epsilon_limit`` holds
an ε derived from others (a sum, a composition) to the same limit.
"""

from __future__ import annotations

import enum
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ampcalc.model.errors import DesignError, Where, describe
from ampcalc.model.limits import LIMITS, limit

#: The largest ε accepted anywhere (``limits.LIMITS["epsilon"]``).
MAX_EPSILON = float(limit("epsilon"))
#: M's ε in words, as error messages give it.
EPSILON_DOMAIN = f"a number in (0, {limit('epsilon')}]"


def check_epsilon(value: Any, *, where: Where | None = None, array: bool = False) -> Any:
    """M's ε checked by the one rule every entry point uses: a finite number in (0, 10⁶].

    The design loader (``mechanism.epsilon``, each release's ε), the engine's ε override
    (``bound(design, epsilon)``, ``--epsilon``) and ``sweep``'s varied
    ``mechanism.epsilon`` all call this, so they accept and refuse the same values with
    the same message.

    Args:
        value: the ε: a number, or with ``array`` an array of numbers (each is checked).
        where: the place in the input it came from (file and line, or the option).
        array: accept an array (the engine's vectorised ε); otherwise a single number.
    Returns:
        ``value`` as a float, or with ``array`` as a float array.
    Raises:
        DesignError: ``expected a number in (0, 1000000], got -1.0`` (a non-finite value:
            ``expected a finite number (a number in (0, 1000000]), got nan``) at ``where``.
    """
    if not array or np.ndim(value) == 0:
        if isinstance(value, np.ndarray):
            value = value.item()
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise DesignError(f"expected {EPSILON_DOMAIN}, got {describe(value)}", where=where)
        try:
            num = float(value)
        except OverflowError:  # an int beyond the float range
            num = math.inf
        _check_epsilon_value(num, value, where)
        return np.asarray(num, dtype=float) if array else num
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise DesignError(
            f"expected {EPSILON_DOMAIN}, got {describe(value)}", where=where
        ) from None
    if arr.size and 0.0 < arr.min() and arr.max() <= MAX_EPSILON:
        return arr  # every value in (0, 10⁶] (a NaN fails both tests): two passes, not six
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr > MAX_EPSILON)
    if np.any(bad):
        first = float(arr[bad].flat[0])
        _check_epsilon_value(first, first, where)
    return arr


def _check_epsilon_value(num: float, given: Any, where: Where | None) -> None:
    if not math.isfinite(num):
        shown = given if isinstance(given, float) else describe(given)
        raise DesignError(f"expected a finite number ({EPSILON_DOMAIN}), got {shown}", where=where)
    if not 0.0 < num <= MAX_EPSILON:
        raise DesignError(f"expected {EPSILON_DOMAIN}, got {describe(num)}", where=where)


def check_epsilon_limit(
    value: float, *, where: Where | None = None, what: str = "", slack: float = 0.0
) -> None:
    """An ε derived from others held to the same limit as ``check_epsilon``'s: the sum of
    a mechanism's releases' ε, a composition's ε, a Laplace mechanism's ε₀ = Δ/b.

    Every loader that derives an ε calls this, so each refuses the same values with the
    limit's own message (``LIMITS["epsilon"]``).

    Args:
        value: the derived ε (NaN and ∞ fail).
        where: the place in the input it comes from.
        what: how it was derived, said before the limit (``"the releases' composed ε
            (...)"``); empty: the limit's message alone.
        slack: relative allowance for a value rounded up a few ulps (a composition's).
    Raises:
        DesignError: ``[what: ]an ε (...): 2e+06 is above the limit of 1,000,000; ...``.
    """
    if not value <= MAX_EPSILON * (1.0 + slack):
        prefix = f"{what}: " if what else ""
        raise DesignError(prefix + LIMITS["epsilon"].message(value), where=where)


class Neighbours(str, enum.Enum):
    """The one neighbouring-relation enum. Values are the YAML/JSON spellings."""

    ADD_REMOVE = "add-remove"
    REPLACE_ONE = "replace-one"
    BOTH = "both"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Release:
    """One analysis run on the sample (an element of ``mechanism.releases``)."""

    epsilon: float
    delta: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Mechanism:
    """The mechanism M that runs on the sample.

    Attributes:
        epsilon: M's ε as declared (> 0). With ``releases`` it is their sum
            (basic composition: everything run on one sample is amplified once).
        delta: M's δ as declared (the sum of the releases' δ).
        neighbours: the relation under which ``epsilon`` holds. ``both`` states
            M is (ε, δ)-DP under add-remove and under replace-one (e.g. a count).
        epsilon_replace_one: add-remove only: M's ε under replace-one when known
            from the mechanism's own analysis; by default 2ε (Bun et al. §2.2).
        delta_replace_one: add-remove only: M's δ under replace-one; needed
            with an explicit ``epsilon_replace_one`` when δ > 0.
        releases: the individual releases, when declared that way.
        group_size: g >= 1 records of one unit (a household) that may all change
            together; only schemes with ``supports_group_size`` accept g > 1.
        profile: a named mechanism's privacy profile δ_M(ε) under ``neighbours``
            (``ampcalc.accounting``; composed when given as ``releases``), or ``None``
            for the (ε, δ) form. ``epsilon`` is then its pure ε (NaN if it has none).
        profile_releases: the number of named releases composed into ``profile``.
        named_releases: the named releases composed into ``profile`` as (profile,
            count), in file order, when given as ``releases`` (``invert --solve`` sets
            one common noise scale in them and composes them again).
    """

    epsilon: float
    delta: float = 0.0
    neighbours: Neighbours = Neighbours.ADD_REMOVE
    epsilon_replace_one: float | None = None
    delta_replace_one: float | None = None
    releases: tuple[Release, ...] | None = None
    group_size: int = 1
    profile: Any = None
    profile_releases: int | None = None
    named_releases: tuple[tuple[Any, int], ...] | None = None

    # --- derived parameters, as functions of the declared ε (vectorised) -------
    def replace_one_ratio(self) -> float:
        """ε_R / ε, kept fixed while inversions and sweeps vary the declared ε.

        ``replace-one``/``both``: 1. ``add-remove``: ``epsilon_replace_one / epsilon``
        capped at 2 (an ε-DP add-remove mechanism is 2ε-DP under replace-one, so a
        larger stated value is never binding), else 2.
        """
        if self.neighbours is not Neighbours.ADD_REMOVE:
            return 1.0
        if self.epsilon_replace_one is None:
            return 2.0
        return min(self.epsilon_replace_one / self.epsilon, 2.0)

    def epsilon_replace_one_of(self, eps: Any) -> np.ndarray:
        """M's replace-one ε_R for declared ε (array in, array out): ε_R scales with ε at
        the fixed ratio of the declared pair, (ε/ε_declared)·ε_R, which is ε_R itself
        at the declared ε (ε/ε is exactly 1), with no test on the value."""
        e: np.ndarray = np.asarray(eps, dtype=float)
        if self.neighbours is not Neighbours.ADD_REMOVE:
            return e
        stated = self.epsilon_replace_one
        if stated is None or stated >= 2.0 * self.epsilon:
            return 2.0 * e  # exact in binary floating point
        scaled: np.ndarray = e / self.epsilon * stated
        return scaled

    def effective_epsilon_replace_one(self) -> float:
        """ε_R at the declared ε."""
        if self.neighbours is not Neighbours.ADD_REMOVE:
            return self.epsilon
        if self.epsilon_replace_one is None:
            return 2.0 * self.epsilon
        return min(self.epsilon_replace_one, 2.0 * self.epsilon)

    def epsilon_add_remove_known(self) -> bool:
        """False for ``replace-one``: M's add-remove ε is then unknown."""
        return self.neighbours is not Neighbours.REPLACE_ONE

    def delta_replace_one_of(self, eps: Any) -> np.ndarray:
        """M's replace-one δ_R for declared ε.

        ``replace-one``/``both``: δ. ``add-remove`` with the default ε_R = 2ε: group
        privacy for two records gives δ_R = (1 + e^ε)δ. With an explicit
        ``epsilon_replace_one``, ``delta_replace_one`` (validated to be given when
        δ > 0).
        """
        eps = np.asarray(eps, dtype=float)
        if self.neighbours is not Neighbours.ADD_REMOVE or self.delta == 0.0:
            return np.full_like(eps, self.delta)
        if self.epsilon_replace_one is not None and self.delta_replace_one is not None:
            return np.full_like(eps, self.delta_replace_one)
        with np.errstate(over="ignore"):
            delta_r: np.ndarray = np.minimum((1.0 + np.exp(eps)) * self.delta, 1.0)
        return delta_r


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """A population-level privacy target: ε′ and optionally δ′."""

    epsilon_prime: float | None = None
    delta_prime: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Design:
    """One validated design: a mechanism run on a sample drawn by a scheme.

    Attributes:
        name: display name (defaults to the file stem, or ``stem[i]`` in a list).
        scheme: the ``sampling.scheme`` name, a key of ``schemes.REGISTRY``.
        params: the scheme's own frozen ``Params`` dataclass.
        mechanism: M, or ``None`` for schemes calibrated to a ``target``.
        guarantee: the relation the user asked the guarantee for (``None``: the
            scheme's natural one).
        target: the top-level ``target`` block, when given.
        where: where the design starts in its file.
        field_where: dotted field path (relative to the design) -> place in the file.
    """

    name: str
    scheme: str
    params: Any
    mechanism: Mechanism | None
    guarantee: Neighbours | None = None
    target: Target | None = None
    where: Where | None = None
    field_where: dict[str, Where] = field(default_factory=dict, compare=False, repr=False)
