"""A privacy budget across independently drawn samples: a ledger of releases.

A ledger (``ampcalc.designs.ledger`` reads and validates it into a ``Ledger``) lists
entries, each a design with a ``count`` of identical releases, each release on its own,
independently drawn sample, and the total δ (and optionally the ε budget) to report at.

Composition (``run``):

- identical pure-ε′ entries (every entry's upper bound is pure, and all are equal):
  the optimal composition in closed form (``compose.PureComposition``), no accountant;
- otherwise ampcalc's own privacy-loss-distribution accountant (``accounting.pmf``,
  numpy only). Poisson-sampled Gaussian or Laplace entries (add-remove) enter as their
  exact dominating pair per direction (``fastpld.sampled_pair``; Zhu, Dong and Wang
  2022); every other named mechanism as its design's whole amplified profile
  (``engine.design_profile.entry_profile``: the scheme's theorem on every point of M's
  profile, capped by M's own profile where a coupling holds and by its pure spelling,
  symmetric completion) built into a pessimistic connect-the-dots PMF (Doroshenko et al.
  2022) by ``_pmf_from_points``; a pure ε′ enters as binary randomized response at ε′ (it
  dominates every ε′-DP pair: Kairouz, Oh and Viswanath 2015, Theorem 2.4), an
  (ε′, δ′) guarantee as the four-outcome pair P = (δ′, (1−δ′)e^{ε′}/(1+e^{ε′}),
  (1−δ′)/(1+e^{ε′}), 0), Q = (0, (1−δ′)/(1+e^{ε′}), (1−δ′)e^{ε′}/(1+e^{ε′}), δ′) (same
  theorem: it dominates every (ε′, δ′)-DP pair). The upper total is the least of that
  composition and the other valid totals ``_at_most_the_obvious`` knows (one entry of
  count 1: its own bound; one pure spelling: the closed form; every entry coupled: no
  sampling at all).

The upper total composes the pessimistic distributions; the optimistic estimate of the
same composition is kept as ``accuracy.optimistic``, the upper's accuracy, not a lower
bound. The lower total composes witness pairs (``accounting.witness``, their optimistic
distributions): a lower bound on the exact total, or none with the reason. An entry
without an upper bound makes the total ``no-guarantee``. Nothing here needs dp_accounting
(the tests use its public PLD as the oracle).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ampcalc import engine
from ampcalc.accounting import fastpld, pmf, witness
from ampcalc.accounting.compose import MAX_PURE_RELEASES, CompositionError, PureComposition
from ampcalc.accounting.compose import compose as compose_releases
from ampcalc.accounting.minorant import convex_minorant
from ampcalc.accounting.profiles import (
    Gaussian,
    Laplace,
    Profile,
    RandomizedResponse,
    epsilon_at_delta,
)

# the ledger is read in the designs layer; its names stay importable from here
from ampcalc.designs.ledger import DEFAULT_DISCRETIZATION as DEFAULT_DISCRETIZATION
from ampcalc.designs.ledger import DISCRETIZATION as DISCRETIZATION
from ampcalc.designs.ledger import DISCRETIZATION_RANGE as DISCRETIZATION_RANGE
from ampcalc.designs.ledger import ENTRY_KEYS as ENTRY_KEYS
from ampcalc.designs.ledger import EPSILON_BUDGET as EPSILON_BUDGET
from ampcalc.designs.ledger import LEDGER_KEYS as LEDGER_KEYS
from ampcalc.designs.ledger import Entry as Entry
from ampcalc.designs.ledger import Ledger as Ledger
from ampcalc.designs.ledger import load_ledger as load_ledger
from ampcalc.engine import design_profile
from ampcalc.engine.design_profile import EntryProfile
from ampcalc.math import numeric
from ampcalc.model.design import Neighbours, Target
from ampcalc.model.errors import ConditionError, DesignError, Where
from ampcalc.model.references import DP_ACCOUNTING, KOV15, ZDW22, cite


class CostLimit(DesignError):
    """The ledger's composition is above the accountant's limits (exit 2)."""


def with_discretization(ledger: Ledger, value: float) -> Ledger:
    """The ledger at the accountant's interval ``value`` (``--discretization``).

    Raises:
        DesignError: ``value`` is not a finite number in ``DISCRETIZATION_RANGE``.
    """
    lo, hi = DISCRETIZATION_RANGE
    if not (math.isfinite(value) and lo <= value <= hi):
        raise DesignError(
            f"--discretization: expected the accountant's interval, a number in [{lo:g}, "
            f"{hi:g}], got {value!r} (smaller is tighter and slower: each release's grid "
            "has about its loss range / interval points)"
        )
    return dataclasses.replace(ledger, discretization=float(value))


# --------------------------------------------------------------------------------------
# per-entry amplification
# --------------------------------------------------------------------------------------


def _native(entry: Entry) -> tuple[str, float, float, float] | None:
    """(kind, scale, sensitivity, q) for a Poisson-sampled Gaussian/Laplace (add-remove)."""
    d = entry.design
    mech = d.mechanism
    profile: Profile | None = getattr(mech, "profile", None)
    if d.scheme != "poisson" or profile is None or mech is None:
        return None
    if d.guarantee not in (None, Neighbours.ADD_REMOVE):
        return None
    if mech.neighbours is Neighbours.REPLACE_ONE:
        return None
    q = float(d.params.rate)
    if isinstance(profile, Gaussian):
        if profile.sigma is not None and profile.mu_given is None:
            return ("gaussian", profile.sigma, profile.sensitivity, q)
        return ("gaussian", 1.0, profile.mu, q)  # μ rounded up: a larger loss
    if isinstance(profile, Laplace):
        return ("laplace", profile.scale, profile.sensitivity, q)
    return None


def _entry_bound(entry: Entry, delta_entry: float, *, profile_points: bool = True) -> Any:
    """The entry's bound (a named mechanism at δ′ = ``delta_entry`` unless it has one).

    ``profile_points=False`` leaves out a named mechanism's sampled profile (the row's
    ``profile``): its ε′ and δ′ are the same, in about a quarter of the time."""

    d = entry.design
    if getattr(d.mechanism, "profile", None) is not None:
        dp = entry.delta_prime if entry.delta_prime is not None else delta_entry
        d = dataclasses.replace(d, target=Target(delta_prime=dp))
        if not profile_points:
            from ampcalc.engine.profiles import bound_profile  # lazy: > 20 ms

            return bound_profile(d, profile_points=False)
    return engine.bound(d)


def _rr_log_pmfs(eps: float, delta: float) -> tuple[dict[int, float], dict[int, float]]:
    """(Q, P) log-PMFs of the (ε, δ) dominating pair (δ = 0: randomized response), in
    dp_accounting's ``from_two_probability_mass_functions`` form (the tests' oracle)."""
    a = math.log1p(-delta) - float(np.logaddexp(0.0, -eps))  # log((1−δ)e^ε/(1+e^ε))
    b = math.log1p(-delta) - float(np.logaddexp(0.0, eps))  # log((1−δ)/(1+e^ε))
    p = {1: a, 2: b}
    q = {1: b, 2: a}
    if delta > 0:
        p[0] = math.log(delta)
        q[3] = math.log(delta)
    return q, p


@dataclasses.dataclass(frozen=True)
class ProfileEntry:
    """An entry composed from its amplified privacy profile's points: what the
    accountant's cost check and infinity-mass test read (``upper``: the largest loss
    its PMF has; ``delta_prime``: its mass at an infinite loss), and the profile."""

    profile: EntryProfile
    upper: float
    delta_prime: float


def _profile_entry(prof: EntryProfile) -> ProfileEntry:
    xs = [p[0] for p in prof.points]
    return ProfileEntry(profile=prof, upper=max(xs), delta_prime=float(prof.points[-1][1]))


def _pmf_from_points(
    points: Sequence[tuple[float, float]], h: float, pessimistic: bool
) -> pmf.LossPair:
    """The pair of a symmetric profile's upper ``points`` (ε >= 0) at the interval ``h``.

    Pessimistic: the connect-the-dots PMF (Doroshenko et al. 2022) of the points completed
    to negative losses (``design_profile.completion``), by ``pmf.from_profile_points``
    (their chords onto the grid, then the greatest convex minorant: no mass clipped).
    Optimistic: ``pmf.optimistic_from_profile_points`` of the completed
    points taken as exact, an estimate from below of the same composition (the upper's
    accuracy, not a bound on the design). The one place a ledger builds a PMF from points.
    """
    xs, ds = design_profile.completion(points)
    if pessimistic:
        one = pmf.from_profile_points(xs, ds, h)
    else:
        one = pmf.optimistic_from_profile_points(xs, ds, ds, h)
    return pmf.LossPair(one, None)


def _cite_all(basis: Sequence[Any]) -> str:
    return "; ".join(str(c) for c in basis)


def _entry_row(entry: Entry, res: Any, native: Any, prof: EntryProfile | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": entry.name,
        "scheme": entry.design.scheme,
        "count": entry.count,
        "epsilon_prime": {"lower": res.lower, "upper": res.upper},
        "delta_prime": res.delta_prime,
        "guarantee_neighbours": res.guarantee_neighbours,
        "composed_as": None,
        "basis": [],
        "share": None,
    }
    if res.error is not None:
        row["error"] = res.error
    if "profile" in res.details:
        row["profile"] = res.details["profile"]
    if native is not None:
        row["composed_as"] = f"exact dominating pair per direction (Poisson-sampled {native[0]})"
        row["composition"] = (
            f"a dominating pair per direction: the {native[0]} mechanism's Poisson-sampled "
            f"privacy-loss distributions, remove and add ({ZDW22}; {DP_ACCOUNTING.short})"
        )
        row["basis"] = [cite(ZDW22).to_dict(), cite(DP_ACCOUNTING).to_dict()]
    elif prof is not None:
        row["composed_as"] = PROFILE_COMPOSED_AS
        row["composition"] = f"{prof.composed_as} ({_cite_all(prof.basis)})"
        row["basis"] = [c.to_dict() for c in prof.basis]
        row["composed_profile"] = _thin(prof.points)
        row["coupling"] = {
            "relation": None if prof.cap is None else str(prof.cap),
            "reason": prof.cap_reason,
        }
    elif res.upper is not None:
        dp = float(res.delta_prime or 0.0)
        row["composed_as"] = (
            "randomized response at ε′ (pure)" if dp == 0.0 else "(ε′, δ′) dominating pair"
        )
        row["composition"] = (
            f"pure closed form: binary randomized response at ε′ dominates every ε′-DP "
            f"pair ({KOV15}, Theorem 2.4)"
            if dp == 0.0
            else f"the four-outcome pair dominating every (ε′, δ′)-DP pair ({KOV15}, Theorem 2.4)"
        )
        row["basis"] = [cite(KOV15, "Theorem 2.4").to_dict()]
        row["composed_profile"] = _rr_points(float(res.upper), dp)
    return row


#: ``composed_as`` of an entry composed from its amplified profile's points
PROFILE_COMPOSED_AS = "symmetric completion of the amplified profile"

#: most points of an entry's composed profile written to JSON
PROFILE_POINTS_OUT = 64


def _thin(points: Sequence[tuple[float, float]]) -> list[list[float]]:
    """At most ``PROFILE_POINTS_OUT`` of the profile's convex-minorant vertices (first and
    last kept): dropping a vertex of a convex minorant leaves a chord above it, so the
    points written still bound the profile composed."""
    xs = np.array([p[0] for p in points])
    ds = np.minimum.accumulate(np.array([p[1] for p in points]))
    alpha = np.exp(np.minimum(xs, 700.0))
    first = np.concatenate(([True], np.diff(alpha) > 0))  # one point per distinct e^ε
    xs, ds, alpha = xs[first], ds[first], alpha[first]
    # the minorant anchored at (α = 0, δ = 1), as connect-the-dots puts it
    keep = convex_minorant(np.concatenate(([0.0], alpha)), np.concatenate(([1.0], ds)))
    keep = keep[keep > 0] - 1
    if len(keep) > PROFILE_POINTS_OUT:
        pick = np.unique(np.linspace(0, len(keep) - 1, PROFILE_POINTS_OUT).round().astype(int))
        keep = keep[pick]
    return [[float(xs[i]), float(ds[i])] for i in keep]


def _rr_points(eps: float, dp: float) -> list[list[float]]:
    """The (ε′, δ′) pair's profile: (0, δ′ + (1 − δ′)·tanh(ε′/2)) and (ε′, δ′)."""
    return [[0.0, dp + (1.0 - dp) * math.tanh(eps / 2.0)], [eps, dp]]


def _capped_pure(entry: Entry, res: Any) -> Any:
    """A pure entry's bound, capped by M's own ε where the coupling holds (item: never
    looser than no sampling)."""
    if res.upper is None or float(res.delta_prime or 0.0) != 0.0:
        return res
    rel, _ = design_profile.coupling(entry.design)
    own = design_profile.own_pure_epsilon(entry.design.mechanism, rel)
    if own is not None and own < float(res.upper):
        return dataclasses.replace(res, upper=own)
    return res


def entry_pair(
    entry: Entry, ledger: Ledger, *, bound_native: bool = True, profile_points: bool = True
) -> tuple[Any, Any, Any, EntryProfile | None]:
    """How one entry is bounded and composed: (its bound at the ledger's δ, what the
    accountant composes, its native Poisson parameters or ``None``, its profile or
    ``None``).

    A named mechanism off the native path is composed from its amplified profile,
    followed down to a δ′ whose sum over every release is a millionth of the total δ
    (the rest is composed as an infinite loss); should no profile be built, from its
    (ε′, δ′) at a tenth of the total δ spread over every release. A pure M is capped by
    its own ε where a coupling holds. ``bound_native=False`` skips a native entry's bound
    (``None``): the accountant builds it from the design alone. ``profile_points=False``
    leaves the sampled profile out of a named mechanism's bound (``_entry_bound``).
    """
    total_count = sum(e.count for e in ledger.entries)
    native = _native(entry)
    if native is not None and not bound_native:
        return None, None, native, None
    res = _entry_bound(entry, ledger.delta, profile_points=profile_points)
    named = getattr(entry.design.mechanism, "profile", None) is not None
    if native is not None:
        return res, res, native, None
    if not named:
        res = _capped_pure(entry, res)
        return res, res, None, None
    prof: EntryProfile | None = None
    if res.upper is not None:
        floor = ledger.delta * 1e-6 / total_count if ledger.delta > 0 else 1e-300
        try:
            prof = design_profile.entry_profile(entry.design, floor=floor)
            # the points must give a distribution (``pmf.from_profile_points`` checks
            # them; its convex minorant clips no mass)
            _pmf_from_points(prof.points, ledger.discretization, True)
        except (ConditionError, ValueError):
            prof = None
    if prof is not None:
        return res, _profile_entry(prof), None, prof
    delta_entry = ledger.delta / (10.0 * total_count) if ledger.delta > 0 else 0.0
    return res, _entry_bound(entry, delta_entry), None, None


def run(ledger: Ledger, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Compose the ledger; the JSON payload of ``ampcalc budget``.

    ``progress(done, total)`` is called as the work advances: one step per entry's bound,
    then one per entry in each of the accountant's two compositions (upper and lower).
    """
    steps = 3 * len(ledger.entries)
    done = 0
    kept = fastpld.Kept()  # the accuracy side's REMOVE directions, read again by the witness

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, steps)

    total_count = sum(e.count for e in ledger.entries)
    # the sampled Gaussian and Laplace entries' grids are known from the design alone:
    # a ledger whose accountant would exceed its limits is refused before any bound
    natives = [(e, None, _native(e)) for e in ledger.entries]
    check_cost([p for p in natives if p[2] is not None], ledger.discretization)
    rows: list[dict[str, Any]] = []
    pairs: list[tuple[Entry, Any, tuple[str, float, float, float] | None]] = []
    singles: list[float | None] = []  # each entry's `bound` at the ledger's δ
    no_guarantee: list[str] = []
    # above MAX_SHARE_ENTRIES a row carries no sampled profile (as it carries no share)
    profile_points = len(ledger.entries) <= MAX_SHARE_ENTRIES
    for entry in ledger.entries:
        res, composed, native, prof = entry_pair(entry, ledger, profile_points=profile_points)
        row = _entry_row(entry, res, native, prof)
        if not profile_points:
            row.pop("profile", None)
        if res.upper is None or not math.isfinite(float(res.upper)):
            no_guarantee.append(entry.name)
        elif res.guarantee_neighbours != str(ledger.neighbours):
            raise DesignError(
                f"entry {entry.name!r} gives its guarantee under {res.guarantee_neighbours}, "
                f"the ledger under {ledger.neighbours}: every entry must hold under one "
                "relation (set the design's `guarantee:` to match, where the scheme allows it)",
                where=entry.where,
            )
        rows.append(row)
        singles.append(None if res.upper is None else float(res.upper))
        pairs.append((entry, composed, native))
        step()
    out: dict[str, Any] = {
        "name": ledger.name,
        "target": {"epsilon": ledger.epsilon, "delta": ledger.delta},
        "neighbours": str(ledger.neighbours),
        "entries": rows,
    }
    if no_guarantee:
        out["total"] = {
            "lower": None,
            "upper": None,
            "delta": ledger.delta,
            "verdict": "no-guarantee",
            "accountant": None,
            "note": "no upper bound for: " + ", ".join(no_guarantee),
        }
        out["remaining"] = None
        out["total"].update(lower_total(ledger, out["total"]))
        return out
    pure = [_pure_of(r) for _, r, n in pairs if n is None]
    if len(pure) == len(pairs) and None not in pure and len(set(pure)) == 1:
        total = _closed_form_pure(float(pure[0]), total_count, ledger.delta)  # type: ignore[arg-type]
    else:
        total = _accountant(pairs, ledger, step, kept)
        total = _at_most_the_obvious(total, pairs, singles, ledger)
    if progress is not None:
        progress(steps, steps)
    _shares(rows, pairs, ledger)
    out["total"] = total
    out["total"].update(lower_total(ledger, out["total"], kept))
    up = total["upper"]
    out["remaining"] = None if ledger.epsilon is None or up is None else ledger.epsilon - float(up)
    return out


def _pure_of(res: Any) -> float | None:
    """The entry's pure ε′ when it is composed as k copies of one pure release."""
    if isinstance(res, ProfileEntry):
        return None
    if res.upper is None or float(res.delta_prime or 0.0) != 0.0:
        return None
    return float(res.upper)


def _at_most_the_obvious(
    total: dict[str, Any],
    pairs: Sequence[tuple[Entry, Any, Any]],
    singles: Sequence[float | None],
    ledger: Ledger,
) -> dict[str, Any]:
    """The accountant's upper total, or a smaller valid one (the least is reported):

    - one entry of count 1: its own bound at the ledger's δ (``ampcalc bound``);
    - every entry's pure spelling the same ε′: their optimal composition in closed form;
    - every entry capped by M's own profile (a coupling, docs/budget.md): M's releases
      composed with no sampling at all.
    """
    up = total["upper"]
    candidates: list[tuple[float, str]] = []
    if up is not None:
        candidates.append((float(up), "accountant"))
    if len(pairs) == 1 and pairs[0][0].count == 1 and singles[0] is not None:
        candidates.append((float(singles[0]), "one release: its own bound (ampcalc bound)"))
    spelled = [_pure_spelled(r) for _, r, n in pairs]
    if None not in spelled and len(set(spelled)) == 1 and all(n is None for _, _, n in pairs):
        k = sum(e.count for e, _, _ in pairs)
        closed = _closed_form_pure(float(spelled[0]), k, ledger.delta)["upper"]  # type: ignore[arg-type]
        if closed is not None:
            candidates.append((float(closed), f"pure spelling in closed form ({KOV15})"))
    own = _unsampled(pairs, ledger.delta)
    if own is not None:
        candidates.append((own, "no sampling: M's own releases composed"))
    if not candidates:
        return total
    best, how = min(candidates)
    total = dict(total)
    total["upper"] = best
    total["upper_from"] = how
    acc = total.get("accuracy")
    if acc is not None and acc.get("optimistic") is not None and best < float(up or math.inf):
        # the accountant's optimistic estimate measures its own composition: above a
        # smaller valid total it says nothing, so it is held to it
        opt = min(float(acc["optimistic"]), best)
        total["accuracy"] = {
            **acc,
            "optimistic": opt,
            "width": (best - opt) / best if best else None,
        }
    return total


def _pure_spelled(res: Any) -> float | None:
    if isinstance(res, ProfileEntry):
        return res.profile.pure_epsilon_spelled
    return _pure_of(res)


def _unsampled(pairs: Sequence[tuple[Entry, Any, Any]], delta: float) -> float | None:
    """ε at δ of every entry's M composed with no sampling, when every entry is capped by
    its M's own profile (``None`` otherwise, or when no closed form composes them)."""
    releases = []
    for entry, res, _ in pairs:
        if not isinstance(res, ProfileEntry) or res.profile.cap is None:
            return None
        own = design_profile.own_profile(entry.design, res.profile.cap)
        if own is None:
            return None
        releases.append((own, entry.count))
    try:
        comp = compose_releases(releases)
    except (CompositionError, ConditionError, ValueError):
        return None
    eps = float(epsilon_at_delta(comp, delta))
    return eps if math.isfinite(eps) else None


#: ledgers with more entries than this get no per-entry share (each is composed alone)
#: nor sampled profile (``profile``: each entry's bound at 35 points of M's profile)
MAX_SHARE_ENTRIES = 32


def _shares(
    rows: list[dict[str, Any]], pairs: Sequence[tuple[Entry, Any, Any]], ledger: Ledger
) -> None:
    """Each entry's share: its releases composed alone (upper, at the ledger's δ) over
    the sum of those (docs/budget.md)."""
    if len(pairs) == 1:
        rows[0]["share"] = 1.0
        return
    if len(pairs) > MAX_SHARE_ENTRIES:
        return
    alone: list[float] = []
    for pair in pairs:
        pure = _pure_of(pair[1]) if pair[2] is None else None
        if pure is not None:
            e = _closed_form_pure(pure, pair[0].count, ledger.delta)["upper"]
        else:
            e = accountant_side([pair], ledger.delta, ledger.discretization, True)
        if e is None or not math.isfinite(float(e)):
            return
        alone.append(float(e))
    s = math.fsum(alone)
    if s > 0:
        for row, a in zip(rows, alone, strict=True):
            row["share"] = a / s


def lower_total(
    ledger: Ledger, total: dict[str, Any], kept: fastpld.Kept | None = None
) -> dict[str, Any]:
    """The fields of ``total`` about its lower side: ``lower`` from witness pairs
    (``accounting.witness``: a lower bound on the exact total) with ``lower_meaning``
    and ``lower_witness``, or ``lower: None`` and ``lower_reason`` naming the entry
    without a witness; ``width`` the relative gap between the two bounds. (The
    accountant's optimistic estimate of the upper composition is the upper's accuracy,
    ``total["accuracy"]``, never a lower total.)"""
    out: dict[str, Any] = {}
    out.update(
        witness.lower_total(
            [(e.name, e.design, e.count) for e in ledger.entries],
            ledger.delta,
            ledger.discretization,
            kept,
        )
    )
    up, lo = total.get("upper"), out["lower"]
    out["width"] = None if up is None or lo is None or up == 0 else (float(up) - lo) / float(up)
    return out


def _closed_form_pure(eps: float, k: int, delta: float) -> dict[str, Any]:
    if k > MAX_PURE_RELEASES:
        up = float(numeric.round_up(k * eps))
        return {
            "lower": None,
            "upper": up,
            "delta": delta,
            "accountant": "basic composition (too many releases for the closed form)",
            "discretization": None,
        }
    comp = PureComposition(epsilon=eps, count=k, single=RandomizedResponse(epsilon=eps))
    up = float(epsilon_at_delta(comp, delta))
    lo = float(epsilon_at_delta(comp, delta, lower=True))
    return {
        "lower": lo,
        "upper": up,
        "delta": delta,
        "accountant": f"closed form: optimal composition of identical pure-ε′ releases ({KOV15})",
        "discretization": None,
        "lower_meaning": "the same composition rounded down (exact up to rounding)",
    }


#: relative allowance in δ for the float error of the FFT composition (both sides): the
#: pessimistic ε is read at δ·(1 − FFT_DELTA) − noise, the optimistic at δ·(1 + FFT_DELTA)
#: + noise (``pmf.fft_noise``). The composed δ moves by about 1e-7 relative at
#: δ = 1e-6 (1000 releases, interval 1e-4) when the inputs move by 1e-11 relative, so
#: reading ε at δ itself could land a few 1e-9 below the exact composition's
FFT_DELTA = 1e-5


@dataclasses.dataclass(frozen=True, slots=True)
class ProfileSource:
    """An entry composed from its design's own privacy-loss distributions (the third item
    of a ``(entry, result, how)`` pair, in place of ``_native``'s tuple): ``build(h,
    pessimistic)`` returns one release's ``pmf.LossPair`` at the interval h (e.g.
    ``pmf.pair_from_profiles`` of the design's profile points), ``points(h)`` the grid
    points it will have, known before anything is built (for ``check_cost``)."""

    build: Callable[[float, bool], pmf.LossPair]
    points: Callable[[float], float]
    composed_as: str = "the design's privacy profile, connect-the-dots"


def _native_profile(native: tuple[str, float, float, float]) -> Profile:
    kind, scale, sens, _ = native
    if kind == "gaussian":
        return Gaussian(sigma=scale, sensitivity=sens)
    return Laplace(scale=scale, sensitivity=sens)


def _entry_points(
    res: Any, native: tuple[str, float, float, float] | ProfileSource | None, di: float
) -> float:
    """Grid points of one entry's distributions before self-composition, from its loss
    range alone (nothing is built): what the accountant allocates for it at ``di``."""

    if isinstance(native, ProfileSource):
        return native.points(di)
    if native is not None:
        return fastpld.sampled_points(_native_profile(native), native[3], di)
    eps = float(res.upper)
    return fastpld.grid_points(-eps, eps, di)


def _refuse(err: Exception, where: Where | None = None) -> CostLimit:
    """A cost limit met while composing the ledger, as an input error (exit 2)."""
    return CostLimit(f"the ledger's composition is too large to compute: {err}", where=where)


def check_cost(pairs: Sequence[tuple[Entry, Any, Any]], di: float) -> None:
    """Refuse a ledger whose entries' distributions alone exceed the accountant's limits
    (before anything is built: the limits in ``ampcalc/model/limits.py``).

    Raises:
        CostLimit: the cost is above ``pld_points`` or ``accountant_work``.
    """

    pre = fastpld.Meter()
    for i, (entry, res, native) in enumerate(pairs):
        try:
            # what the accountant charges at least, per side: the entry's grid built, its
            # self-composition (never shorter than the grid) and its composition into the
            # running total (at least the entry's length)
            pts = _entry_points(res, native, di)
            pre.charge(pts, f"entry {entry.name!r}")
            if entry.count > 1:
                pre.charge(pts, f"entry {entry.name!r} self-composed")
            if i > 0:
                pre.charge(pts, f"entry {entry.name!r} composed into the running total")
        except fastpld.CostLimitError as err:
            raise _refuse(err, entry.where) from None


def _pairs_infinity_mass(pairs: Sequence[tuple[Entry, Any, Any]]) -> float:
    """1 − Π(1 − δ′ᵢ)^{countᵢ} over the entries composed as (ε′, δ′) pairs: a lower bound
    on the composed PLD's mass at an infinite loss (each pair puts δ′ there), so on its δ
    at every ε (rounded down)."""
    s = math.fsum(
        e.count * math.log1p(-float(r.delta_prime or 0.0)) for e, r, n in pairs if n is None
    )
    return -math.expm1(s) * (1.0 - 1e-12)


def _entry_pld(
    entry: Entry,
    res: Any,
    native: tuple[str, float, float, float] | ProfileSource | None,
    di: float,
    pessimistic: bool,
    meter: Any = None,
    kept: fastpld.Kept | None = None,
) -> pmf.LossPair:
    """One entry's pair of privacy-loss distributions, self-composed ``count`` times
    (each step charged to ``meter``, a ``fastpld.Meter``, before it is computed; a
    native entry's optimistic REMOVE direction from ``kept`` when given).

    A Poisson-sampled Gaussian or Laplace (add-remove) is its exact dominating pair per
    direction (``fastpld.sampled_pair``); an entry with an amplified profile its
    symmetric completion (``_pmf_from_points``); any other entry the dominating pair of
    its (ε′, δ′) guarantee (``pmf.epsilon_delta_pair``)."""

    if isinstance(native, ProfileSource):
        if meter is not None:
            meter.charge(native.points(di), f"entry {entry.name!r}")
        one = native.build(di, pessimistic)
    elif native is not None:
        one = fastpld.sampled_pair(
            _native_profile(native),
            native[3],
            di,
            pessimistic=pessimistic,
            meter=meter,
            kept=kept,
        )
    elif isinstance(res, ProfileEntry):
        if meter is not None:
            meter.charge(_entry_points(res, native, di), f"entry {entry.name!r}")
        one = _pmf_from_points(res.profile.points, di, pessimistic)
    else:
        if meter is not None:
            meter.charge(_entry_points(res, native, di), f"entry {entry.name!r}")
        one = pmf.epsilon_delta_pair(
            float(res.upper), float(res.delta_prime or 0.0), di, pessimistic=pessimistic
        )
    return pmf.self_compose_pair(one, entry.count, meter=meter)


def accountant_side(
    pairs: Sequence[tuple[Entry, Any, Any]],
    delta: float,
    di: float,
    pessimistic: bool,
    step: Callable[[], None] = lambda: None,
    kept: fastpld.Kept | None = None,
) -> float:
    """The composed ledger's ε at ``delta``: the pessimistic estimate rounded up (read at
    δ less the FFT allowance), or the optimistic one rounded down (at δ plus it); ``inf``
    when none is finite. ``kept``: where the native entries' optimistic REMOVE
    directions are built once (``fastpld.Kept``; the witness reads them again).

    Every step is charged to a ``fastpld.Meter`` before it is computed: a composition
    above the accountant's limits (``pld_points``, ``accountant_work``) is refused
    (``DesignError``, exit 2) before its memory or time is spent. When the pairs' mass
    at an infinite loss alone is above the δ read, ε is ``inf`` without composing.

    Raises:
        CostLimit: the composition is above the accountant's limits.
    """

    at = delta * (1.0 - FFT_DELTA) if pessimistic else delta * (1.0 + FFT_DELTA)
    if _pairs_infinity_mass(pairs) > at:
        return math.inf  # δ(ε) >= the infinity mass > δ at every ε, as composed below
    check_cost(pairs, di)
    meter = fastpld.Meter()
    built: list[pmf.LossPair] = []
    for entry, res, native in pairs:
        try:
            built.append(_entry_pld(entry, res, native, di, pessimistic, meter, kept))
        except fastpld.CostLimitError as err:
            raise _refuse(err, entry.where) from None
        step()
    try:
        total = compose_smallest_first(built, meter)
    except fastpld.CostLimitError as err:
        raise _refuse(err) from None
    noise = pmf.fft_noise(total)
    if pessimistic:
        at = delta * (1.0 - FFT_DELTA) - noise
        if at <= 0.0:
            return math.inf
        eps = float(pmf.epsilon_for_delta(total, at))
        return float(numeric.round_up(eps)) if math.isfinite(eps) else math.inf
    eps = float(pmf.epsilon_for_delta(total, delta * (1.0 + FFT_DELTA) + noise))
    if not math.isfinite(eps):
        return math.inf
    return max(float(numeric.round_down(eps)), 0.0)


def compose_smallest_first(pairs: Sequence[pmf.LossPair], meter: Any = None) -> pmf.LossPair:
    """The entries' pairs composed the two smallest first (``pmf.smallest_first``), each
    composition charged to ``meter`` before it is computed.

    Raises:
        fastpld.CostLimitError: a composition is above the accountant's limits."""
    return pmf.smallest_first(pairs, lambda a, b: pmf.compose_pairs(a, b, meter), lambda p: p.size)


#: how the total is composed (JSON ``total.accountant``; the table prints "composed " + it)
ACCOUNTANT = (
    "by privacy-loss distributions: connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar "
    "and Manurangsi 2022), Poisson-sampled entries as exact pairs (Zhu, Dong and Wang 2022)"
)
#: what the accuracy fields mean, in the JSON and the table
ACCURACY_MEANING = (
    "the optimistic estimate of the same composition (each release's distribution below "
    "its exact privacy profile, composed): the upper total is within `width` of the exact "
    "composition of the entries' guarantees; a measure of the accountant's "
    "discretisation, not a lower bound on the privacy loss of the releases"
)


def _accountant(
    pairs: list[tuple[Entry, Any, Any]],
    ledger: Ledger,
    step: Callable[[], None] = lambda: None,
    kept: fastpld.Kept | None = None,
) -> dict[str, Any]:
    """The upper total and its accuracy. ``lower`` is left ``None`` here: a lower total
    needs a witness composition, not the accountant's optimistic estimate."""
    di = ledger.discretization
    up_f = accountant_side(pairs, ledger.delta, di, True, step)
    opt = accountant_side(pairs, ledger.delta, di, False, step, kept)
    up = up_f if math.isfinite(up_f) else None
    opt = min(opt, up if up is not None else math.inf)
    opt_out = opt if math.isfinite(opt) else None  # no finite ε at δ: JSON has no inf
    return {
        "lower": None,
        "upper": up,
        "delta": ledger.delta,
        "verdict": None if up is not None else "no-guarantee",
        "accountant": ACCOUNTANT,
        "discretization": di,
        "accuracy": {
            "optimistic": opt_out,
            "width": None if up is None or up == 0 or opt_out is None else (up - opt) / up,
            "meaning": ACCURACY_MEANING,
        },
    }
