"""The exact verifier's data: plans, instances and outcomes, M's relations, and the exact
sample distributions of srswor, srswr and Poisson samples of a population given as
symbol counts (see ``ampcalc.schemes.exact`` for the programme and the hook interface)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ampcalc.model.design import Mechanism, Neighbours

#: ``progress(done, total)``: instances solved so far
Progress = Callable[[int, int], None]

DEFAULT_LIMIT = 5000

#: every refusal of a too large instance starts with this
TOO_LARGE = "too large to verify"
#: seconds of one exact solve per (distinct samples)², plus a fixed second: measured on a
#: shared 2-core machine (srswr N = 10, m = 5: 3003 samples in 7 s; N = 12, m = 5: 6188
#: samples in 40 s). An order of magnitude, for refusing before hours of work.
SECONDS_PER_SAMPLE_SQUARED = 1.0e-6


def estimated_log10_seconds(log10_samples: float) -> float:
    """log10 of the estimated time to solve an instance of 10^log10_samples samples."""
    squared = math.log10(SECONDS_PER_SAMPLE_SQUARED) + 2.0 * log10_samples
    return math.log10(1.0 + 10.0 ** min(squared, 300.0)) if squared < 300.0 else squared


def duration(log10_seconds: float) -> str:
    """A rough duration for a message: ``about 40 s``, ``about 3 h``, ``about 10^12 years``."""
    if log10_seconds < 2.0:
        return f"about {max(1, round(10.0**log10_seconds))} s"
    seconds = 10.0 ** min(log10_seconds, 300.0)
    for unit, size in (("min", 60.0), ("h", 3600.0), ("days", 86400.0)):
        if seconds < size * (60.0 if unit == "min" else 24.0 if unit == "h" else 365.0):
            return f"about {seconds / size:.2g} {unit}"
    years = log10_seconds - math.log10(365.25 * 86400.0)
    if years < 6.0:
        return f"about {10.0**years:,.0f} years"
    return f"about 10^{int(years)} years"


def _estimate(log10_samples: float) -> str:
    return f"an exact solve would take {duration(estimated_log10_seconds(log10_samples))}"


SOLVER_TOL = 1e-7  # absolute tolerance on OPT (≈ 1 + ε′); HiGHS' feasibility tolerances
RESOLVE_FLOOR = 1e-6  # ε′ below this cannot be told apart from 0 by the programme

Counts = tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class Instance:
    """One neighbouring pair of populations with its exact sample distributions."""

    label: str
    symbols: tuple[str, ...]
    caps: tuple[int, ...]
    p: Mapping[Counts, float]
    p_prime: Mapping[Counts, float]
    symmetric: bool = False  # a relabelling swaps P and P′: one direction suffices
    # the relation between P and P′ (None: not stated, checked against any guarantee);
    # the driver keeps only the instances of the guarantee the bounds are reported for
    relation: Neighbours | None = None


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a scheme's verify hook returns."""

    instances: tuple[Instance, ...]
    sizes: tuple[int, ...]
    relations: Mapping[Neighbours, float]
    notes: tuple[str, ...] = field(default_factory=tuple)
    # M's δ per relation (missing: 0). Hooks leave it empty: the driver fills it from M
    # (``deltas_of``) after calling the hook with M's pure part.
    deltas: Mapping[Neighbours, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The exact worst case over a plan's instances."""

    epsilon_prime: float | None
    worst_pair: str | None
    samples: int
    status: str | None  # None: solved; "INCONCLUSIVE" with a reason in ``reason``
    reason: str | None = None
    # certified ends of ε′_exact (``run``, ``judge``): a mechanism made exactly ε-DP
    # attains ``epsilon_low``; the solver's multipliers prove ``epsilon_high``
    epsilon_low: float | None = None
    epsilon_high: float | None = None


# --- relations ------------------------------------------------------------------------


def relations_of(mechanism: Mechanism) -> dict[Neighbours, float]:
    """The relations M's declared ε holds under, with their ε (ε_D, ε_R)."""
    rel: dict[Neighbours, float] = {
        Neighbours.REPLACE_ONE: float(mechanism.effective_epsilon_replace_one())
    }
    if mechanism.epsilon_add_remove_known():
        rel[Neighbours.ADD_REMOVE] = float(mechanism.epsilon)
    return rel


def deltas_of(mechanism: Mechanism) -> dict[Neighbours, float]:
    """M's δ per relation of ``relations_of``: δ under add-remove, δ_R under replace-one.

    δ_R is ``delta_replace_one`` when stated, else δ for ``replace-one``/``both`` and
    (1 + e^ε)δ for add-remove (group privacy over the remove-then-add path,
    ``Mechanism.delta_replace_one_of``), capped at 1.
    """
    rel: dict[Neighbours, float] = {
        Neighbours.REPLACE_ONE: float(mechanism.delta_replace_one_of(mechanism.epsilon))
    }
    if mechanism.epsilon_add_remove_known():
        rel[Neighbours.ADD_REMOVE] = float(mechanism.delta)
    return rel


def pure_part(mechanism: Mechanism) -> Mechanism:
    """M with δ = 0: what a verify hook is given.

    A plan (sample distributions, relations and their ε) never depends on δ; the driver
    adds each relation's δ (``deltas_of``) to the plan the hook returns, so hooks written
    for pure ε serve the (ε, δ) programme unchanged.
    """
    return dataclasses.replace(mechanism, delta=0.0, delta_replace_one=None, releases=None)


def sizes_for(relations: Mapping[Neighbours, float], used: Iterable[int]) -> tuple[int, ...]:
    """Sample sizes of a domain closed under the relations (0..max with add-remove)."""
    used = sorted(set(used))
    if Neighbours.ADD_REMOVE in relations:
        return tuple(range(0, max(used) + 1))
    return tuple(used)


# --- exact sample distributions of a population given as symbol counts ---------------


def _compositions(caps: tuple[int, ...], total: int) -> Iterable[Counts]:
    if not caps:
        if total == 0:
            yield ()
        return
    head, rest = caps[0], caps[1:]
    room = sum(rest)
    for k in range(max(0, total - room), min(head, total) + 1):
        for tail in _compositions(rest, total - k):
            yield (k, *tail)


def srswor_distribution(counts: tuple[int, ...], m: int) -> dict[Counts, float]:
    """m drawn without replacement from a population with ``counts`` of each symbol."""
    n = sum(counts)
    denom = math.comb(n, m)
    return {
        k: math.prod(math.comb(c, j) for c, j in zip(counts, k, strict=True)) / denom
        for k in _compositions(tuple(counts), m)
    }


def srswr_distribution(counts: tuple[int, ...], m: int) -> dict[Counts, float]:
    """m i.i.d. uniform draws (with replacement) from a population."""
    n = sum(counts)
    caps = tuple(m if c > 0 else 0 for c in counts)
    out = {}
    for k in _compositions(caps, m):
        coef = math.factorial(m)
        for j in k:
            coef //= math.factorial(j)
        out[k] = coef * math.prod((c / n) ** j for c, j in zip(counts, k, strict=True))
    return out


def poisson_distribution(counts: tuple[int, ...], q: float) -> dict[Counts, float]:
    """Each record kept independently with probability q."""
    out = {}
    for k in itertools.product(*(range(c + 1) for c in counts)):
        out[k] = math.prod(
            math.comb(c, j) * q**j * (1.0 - q) ** (c - j) for c, j in zip(counts, k, strict=True)
        )
    return out
