"""``ampcalc budget --solve sigma|scale``: the common noise scale a ledger needs.

The knob is one **common** noise scale: ``sigma`` sets σ of every entry whose mechanism
is a single named ``gaussian`` or ``discrete-gaussian``, ``scale`` the scale b of every
``laplace`` or ``discrete-laplace`` entry (each keeps its own sensitivity); every other
entry is kept as written. This is what a team running one mechanism across survey waves
or training epochs sets: one noise level for the whole year. The total falls as the
common scale grows (every named profile falls pointwise with its noise scale, and
composition and amplification preserve the order).

The answer, like ``invert --solve``'s:

- ``value``: a scale whose **upper** total (the accountant's pessimistic estimate at the
  ledger's discretisation, rounded up; or the closed form) is at most the target, checked
  as evaluated at exactly that scale;
- ``impossible_below``: a scale whose optimistic total (each release's distribution below
  its exact profile, composed: below the exact composition of the entries' guarantees; or
  the closed form rounded down) is at least the target, checked as evaluated: at or below
  it the exact composition of the entries' guarantees breaks the target;
- ``width``: (value − impossible_below)/value, the certified relative width of the
  bracket around the smallest scale (about 0.01% for 1000 Poisson-sampled Gaussians at
  the default interval: both sides are second order in the interval where the profiles
  are smooth).

Speed: the search runs on the accountant at ten times the ledger's interval (about ten
times cheaper, and its pessimistic estimate is still an upper bound), with a safeguarded
secant method on log(total) against log(scale); at the ledger's own interval the answer is
checked once on each side (and stepped outward if a check fails).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ampcalc.analyses import budget as B
from ampcalc.analyses.calibrate import KNOBS as KNOB_TYPES
from ampcalc.analyses.calibrate import _with_noise, release_knob
from ampcalc.math.search import log_secant_crossing as _crossing
from ampcalc.model.errors import DesignError
from ampcalc.model.limits import LIMITS, limit

KNOBS = {
    "sigma": ("gaussian", "discrete-gaussian"),
    "scale": ("laplace", "discrete-laplace"),
}
#: the scales searched, relative to the first solved entry's sensitivity
RANGE = (1e-6, 1e8)
#: relative margin of the secant steps at the ledger's interval
REL = 1e-5
#: a checked side whose total is within this relative distance of the target stops
CLOSE = 1e-4


def _knob_profile(entry: B.Entry, knob: str) -> Any:
    """The (first) named mechanism of the entry whose noise ``knob`` sets: its one
    mechanism, or its first such release of named releases on one sample."""
    idx = release_knob(entry.design, knob)
    if idx:
        rel = getattr(entry.design.mechanism, "named_releases", None)
        assert rel is not None
        return rel[idx[0]][0]
    return getattr(entry.design.mechanism, "profile", None)


def _knob_entries(ledger: B.Ledger, knob: str) -> list[int]:
    out = []
    for i, e in enumerate(ledger.entries):
        prof = _knob_profile(e, knob)
        if prof is None:
            continue
        name = prof.to_dict()["mechanism"]
        if name in KNOBS[knob] and not (name == "gaussian" and prof.sigma is None):
            out.append(i)
    return out


def _with_value(
    ledger: B.Ledger, idx: list[int], value: float, knob: str | None = None
) -> B.Ledger:
    """The ledger with the noise ``knob`` sets (``None``: the one the entries' own
    mechanism names) at ``value`` in the entries ``idx``."""
    entries = list(ledger.entries)
    for i in idx:
        e = entries[i]
        prof = getattr(e.design.mechanism, "profile", None) if knob is None else None
        if knob is None:
            knob = "sigma" if isinstance(prof, KNOB_TYPES["sigma"]) else "scale"
        entries[i] = dataclasses.replace(
            e, design=_with_noise(e.design, _knob_profile(e, knob), value, knob)
        )
    return dataclasses.replace(ledger, entries=tuple(entries))


def side_total(ledger: B.Ledger, pessimistic: bool, di: float) -> float:
    """The ledger's total ε at its δ: the upper (``pessimistic``) or lower value, as
    ``budget.run`` computes it (``inf`` / ``0`` where there is none)."""
    total_count = sum(e.count for e in ledger.entries)
    pairs: list[tuple[B.Entry, Any, Any]] = []
    for entry in ledger.entries:
        res, composed, native, _ = B.entry_pair(entry, ledger, bound_native=False)
        if native is None and (res.upper is None or not math.isfinite(float(res.upper))):
            return math.inf if pessimistic else 0.0
        pairs.append((entry, composed, native))
    pure = [B._pure_of(r) for _, r, n in pairs if n is None]
    if len(pure) == len(pairs) and None not in pure and len(set(pure)) == 1:
        tot = B._closed_form_pure(float(pure[0]), total_count, ledger.delta)  # type: ignore[arg-type]
        val = tot["upper"] if pessimistic else tot["lower"]
        if val is None:
            return math.inf if pessimistic else 0.0
        return float(val)
    return B.accountant_side(pairs, ledger.delta, di, pessimistic)


def _fine_side(
    f: Any,
    t: float,
    v0: float,
    slope: float,
    *,
    upper: bool,
    hi: float,
    lo: float = 0.0,
    first: tuple[float, float] | None = None,
    evals: int = 4,
) -> tuple[float, float] | None:
    """The side's checked point near the crossing of f with t: for the upper total the
    smallest v seen with f(v) <= t, for the lower total the largest v seen with
    f(v) >= t. Secant steps on log f against log v aim a relative ``REL`` past the
    crossing on the checked side; a failing side is then widened by doubling."""

    def ok(y: float) -> bool:
        return y <= t if upper else y >= t

    pts: list[tuple[float, float]] = []
    y0 = first[1] if first is not None else f(v0)
    pts.append((math.log(v0), y0))
    best: tuple[float, float] | None = (v0, y0) if ok(y0) else None
    sgn = 1.0 if upper else -1.0
    for _ in range(evals):
        meet = [x for x, y in pts if ok(y)]
        fail = [x for x, y in pts if not ok(y)]
        m = (min(meet) if upper else max(meet)) if meet else None
        fl = (max(fail) if upper else min(fail)) if fail else None
        if m is not None and fl is not None and abs(m - fl) <= 3.0 * REL:
            break
        if best is not None and abs(math.log(best[1]) - math.log(t)) <= CLOSE:
            break  # the checked total is within CLOSE of the target: close enough
        (xa, ya), (xb, yb) = (pts[-2], pts[-1]) if len(pts) > 1 else (pts[-1], pts[-1])
        sl = slope
        if len(pts) > 1 and xa != xb and ya > 0 and yb > 0 and ya != yb:
            sl = (math.log(yb) - math.log(ya)) / (xb - xa)
            sl = sl if sl < 0 else slope
        if not (yb > 0 and math.isfinite(yb)):
            break
        x = xb + (math.log(t) - math.log(yb)) / sl + sgn * REL
        if m is not None and fl is not None and not (min(m, fl) < x < max(m, fl)):
            x = 0.5 * (m + fl)
        if not lo < math.exp(x) <= hi:  # a step out of the searched range (e.g. a
            break  # total of 0 on one side: the log-secant has no slope to follow)
        y = f(math.exp(x))
        pts.append((x, y))
        if ok(y) and (best is None or (x < math.log(best[0]) if upper else x > math.log(best[0]))):
            best = (math.exp(x), y)
    if best is not None:
        return best
    # no check passed: widen outward from the last point until one does
    x = pts[-1][0]
    for k in range(40):
        x += sgn * 1e-3 * 2.0**k
        if not lo < math.exp(x) <= hi:
            return None
        y = f(math.exp(x))
        if ok(y):
            return (math.exp(x), y)
    return None


@contextlib.contextmanager
def _refused_over_cost(needs: str, advice: str) -> Iterator[None]:
    """A total the search needs that is over the accountant's limits, refused in words:
    ``needs`` says which total, ``advice`` what to change."""
    try:
        yield
    except B.CostLimit as err:
        raise DesignError(f"{needs}, and there {err.message}{advice}", where=err.where) from None


def _answer(
    ledger: B.Ledger,
    t: float,
    warnings: list[str],
    knob: dict[str, Any],
    search_discretization: float | None = None,
) -> dict[str, Any]:
    """A solved ledger's payload: the ledger, its budget, how it was searched, the notes
    and the solved knob."""
    out: dict[str, Any] = {
        "name": ledger.name,
        "target": {"epsilon": t, "delta": ledger.delta},
        "neighbours": str(ledger.neighbours),
        "discretization": ledger.discretization,
    }
    if search_discretization is not None:
        out["search_discretization"] = search_discretization
    out["warnings"] = warnings
    out["knob"] = knob
    return out


def _noise_target(ledger: B.Ledger, knob: str, target: float | None) -> float:
    """The total ε the common noise is solved for (``target``, else the ledger's
    budget), after checking the knob and that the accountant can resolve the target.

    Raises:
        DesignError: a bad knob, no target, or a target out of range.
    """
    if knob not in KNOBS:
        raise DesignError(f"the noise to solve for is sigma or scale, got {knob!r}")
    t = target if target is not None else ledger.epsilon
    if t is None or not (math.isfinite(t) and t > 0):
        raise DesignError(
            "solving a ledger for its noise needs the ε budget: `target: {epsilon: ..., "
            "delta: ...}` in the ledger, or a `target`"
        )
    if t > limit("epsilon"):
        raise DesignError(f"--solve {knob}: the target ε: " + LIMITS["epsilon"].message(t))
    if t < ledger.discretization:
        # the accountant rounds every loss by up to one interval: a total below it is
        # inside its own rounding, and the search cannot tell the scales apart
        raise DesignError(
            f"--solve {knob}: the target ε = {t:g} is below the accountant's discretization "
            f"interval {ledger.discretization:g} (each privacy loss is rounded by up to one "
            "interval, so totals this small are inside its rounding); solve for a target of "
            f"at least {ledger.discretization:g}, or give a smaller --discretization "
            f"(down to {B.DISCRETIZATION_RANGE[0]:g})"
        )
    return t


@dataclass(frozen=True)
class _ScaleTotals:
    """The ledger's total ε with the common noise ``knob`` of the entries ``idx`` at a
    scale v, the search's function (``target``: for the message when it is too costly)."""

    ledger: B.Ledger
    idx: list[int]
    knob: str
    target: float

    def at(self, v: float, pessimistic: bool, h: float) -> float:
        """The upper (``pessimistic``) or lower total at the scale ``v``, interval ``h``."""
        knob = self.knob
        with _refused_over_cost(
            f"--solve {knob} with the target ε = {self.target:g}: the search needs the total "
            f"at {knob} = {v:.6g}",
            f"; the smaller the {knob}, the longer every entry's grid (a smaller target needs "
            "more noise, and shorter grids)",
        ):
            return side_total(_with_value(self.ledger, self.idx, v, knob), pessimistic, h)


class _ScaleBracket(NamedTuple):
    """The solved scale's bracket: each side (``None`` where none was found) with the
    total checked there."""

    value: float | None = None
    epsilon_upper_at_value: float | None = None
    impossible_below: float | None = None
    epsilon_lower_at_impossible: float | None = None


def _coarse_slope(totals: _ScaleTotals, v: float, h: float) -> float:
    """The local slope d log ε / d log v of the upper total at ``v`` (at most −0.05; −1
    where it cannot be read)."""
    f0 = totals.at(v, True, h)
    f1 = totals.at(v * 1.01, True, h)
    slope = (math.log(f1) - math.log(f0)) / math.log(1.01) if f0 > 0 and f1 > 0 else -1.0
    return min(slope, -0.05) if math.isfinite(slope) else -1.0


def _bracket_scale(
    totals: _ScaleTotals, lo: float, hi: float, current: float, di: float, coarse: float
) -> _ScaleBracket:
    """The smallest scale in [lo, hi] whose upper total meets the target and the largest
    whose optimistic total breaks it, each checked at the ledger's interval ``di``: the
    crossing of the upper total on the ``coarse`` interval first, then secant steps on
    each side from it (the coarse slope first, then the two latest points)."""
    t = totals.target
    v_c = _crossing(lambda v: totals.at(v, True, coarse), t, lo, hi, current)
    if v_c is None:
        return _ScaleBracket()
    slope = _coarse_slope(totals, v_c, coarse)
    up = _fine_side(lambda v: totals.at(v, True, di), t, v_c, slope, upper=True, hi=hi, lo=lo)
    if up is None:
        return _ScaleBracket()
    certified, up_at = up
    low0 = totals.at(certified, False, di)
    lw = _fine_side(
        lambda v: totals.at(v, False, di),
        t,
        certified,
        slope,
        upper=False,
        hi=hi,
        lo=lo,
        first=(certified, low0),
    )
    if lw is None:
        return _ScaleBracket(certified, up_at)
    return _ScaleBracket(certified, up_at, *lw)


def solve(ledger: B.Ledger, knob: str, target: float | None = None) -> dict[str, Any]:
    """Calibrate the ledger's common noise scale to the total ε target.

    Raises:
        DesignError: no target, no entry with that knob, or a bad knob.
    """
    t = _noise_target(ledger, knob, target)
    idx = _knob_entries(ledger, knob)
    if not idx:
        raise DesignError(
            f"solving the ledger for {knob}: no entry has a single named "
            + " or ".join(KNOBS[knob])
            + " mechanism to calibrate"
        )
    first: Any = _knob_profile(ledger.entries[idx[0]], knob)
    sens = float(first.sensitivity)
    current = float(first.sigma if knob == "sigma" else first.scale)
    lo, hi = sens * RANGE[0], sens * RANGE[1]
    di = ledger.discretization
    coarse = min(10.0 * di, 1e-2)
    found = _bracket_scale(_ScaleTotals(ledger, idx, knob, t), lo, hi, current, di, coarse)
    names = [ledger.entries[i].name for i in idx]
    warnings = [
        f"solved for one common {knob} of the entries {', '.join(names)} (the others kept as "
        f"written): knob.value is a {knob} whose upper total meets ε = {t:g} at δ = "
        f"{ledger.delta:g}, checked at the discretisation {di:g}; at or below "
        "knob.impossible_below the optimistic total (below the exact composition of the "
        "entries' guarantees) reaches it"
    ]
    if found.value is None:
        warnings.append(f"no {knob} in [{lo:g}, {hi:g}] meets the target")
    knob_out = {
        "name": knob,
        "mechanism": first.to_dict()["mechanism"],
        "entries": names,
        "sensitivity": sens,
        "value": found.value,
        "impossible_below": found.impossible_below,
        "width": None
        if found.value is None or found.impossible_below is None
        else (found.value - found.impossible_below) / found.value,
        "epsilon_upper_at_value": found.epsilon_upper_at_value,
        "epsilon_lower_at_impossible": found.epsilon_lower_at_impossible,
    }
    return _answer(ledger, t, warnings, knob_out, search_discretization=coarse)


# ---- budget --solve count: how many waves of one entry fit the budget -----------------

#: the largest count searched: the ledger's own limit on an entry's ``count``
MAX_COUNT = 10**7


def find_entry(ledger: B.Ledger, spec: str | None) -> int:
    """The index of the entry ``spec`` names: its 0-based index (as in ``entries[0]``),
    or its ``name:``; ``None`` when the ledger has one entry.

    Raises:
        DesignError: no such entry, or several entries and none named.
    """
    listing = "; ".join(f"{i}: {e.name!r}" for i, e in enumerate(ledger.entries))
    if spec is None:
        if len(ledger.entries) == 1:
            return 0
        raise DesignError(
            "--solve count: name the entry whose waves to count with --entry (its index "
            f"from 0, or its name): the ledger's entries are {listing}"
        )
    s = spec.strip()
    if s.isdigit():
        i = int(s)
        if i < len(ledger.entries):
            return i
        raise DesignError(
            f"--entry {s}: the ledger has {len(ledger.entries)} entries, indexed from 0: "
            + listing
        )
    names = [e.name for e in ledger.entries]
    found = [i for i, n in enumerate(names) if n == s]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise DesignError(
            f"--entry {s!r}: entries {', '.join(map(str, found))} share that name; give the "
            "index instead"
        )
    close = difflib.get_close_matches(s[:100], names, n=1)
    raise DesignError(
        f"--entry {s!r}: no entry of that name; the ledger's entries are {listing}",
        hint=f"did you mean {close[0]!r}?" if close else None,
    )


def _with_count(ledger: B.Ledger, i: int, count: int) -> B.Ledger:
    """The ledger with entry ``i`` run ``count`` times (0: without it)."""
    entries = list(ledger.entries)
    if count == 0:
        del entries[i]
    else:
        entries[i] = dataclasses.replace(entries[i], count=count)
    return dataclasses.replace(ledger, entries=tuple(entries))


def upper_total(ledger: B.Ledger) -> float:
    """The ledger's upper total ε at its δ and discretisation, as ``ampcalc budget``
    reports it (``inf`` without a guarantee; 0 for a ledger without entries)."""
    if not ledger.entries:
        return 0.0
    return side_total(ledger, True, ledger.discretization)


def _count_budget(ledger: B.Ledger, target: float | None) -> float:
    """The ε budget the count is solved for: ``target``, else the ledger's.

    Raises:
        DesignError: no budget, or not a number > 0.
    """
    t = target if target is not None else ledger.epsilon
    if t is None:
        raise DesignError(
            "--solve count needs the ε budget: `target: {epsilon: ..., delta: ...}` in the "
            "ledger (or --set target.epsilon=E, or --target E)"
        )
    if not (math.isfinite(t) and t > 0):
        raise DesignError(f"--solve count: the ε budget must be a number > 0, got {t!r}")
    return t


@dataclass
class _CountTotals:
    """The ledger's upper total with entry ``i`` run c times, each count evaluated once."""

    ledger: B.Ledger
    i: int
    memo: dict[int, float] = field(default_factory=dict)

    def __call__(self, c: int) -> float:
        if c not in self.memo:
            name = self.ledger.entries[self.i].name
            with _refused_over_cost(
                f"--solve count: the search needs the total at {c} waves of {name!r}",
                " (a smaller budget, or a coarser --discretization)",
            ):
                self.memo[c] = upper_total(_with_count(self.ledger, self.i, c))
        return self.memo[c]


def _count_bracket(total: _CountTotals, current: int, t: float) -> tuple[int | None, int | None]:
    """Counts lo, hi with total(lo) <= t < total(hi) (``None``: no such count up to
    ``MAX_COUNT``, or down to 0), by doubling up from the current count where it fits,
    else halving down."""
    lo: int | None
    hi: int | None
    if total(current) <= t:
        lo, hi = current, None
        c = current
        while c < MAX_COUNT:
            c = min(2 * c, MAX_COUNT)
            if total(c) > t:
                hi = c
                break
            lo = c
    else:
        lo, hi = None, current
        c = current
        while c > 0:
            c //= 2
            if total(c) <= t:
                lo = c
                break
            hi = c
    return lo, hi


def _largest_count(total: _CountTotals, current: int, t: float) -> int | None:
    """The largest count whose upper total is at most t (the total grows with the
    count): bracketed, then bisected."""
    lo, hi = _count_bracket(total, current, t)
    if lo is not None and hi is not None:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if total(mid) <= t:
                lo = mid
            else:
                hi = mid
    return lo


def solve_count(
    ledger: B.Ledger, entry: str | None, target: float | None = None
) -> dict[str, Any]:
    """The largest count of one entry whose ledger's upper total stays within the ε
    budget (the ledger's ``target.epsilon``, or ``target``), the other entries as written.

    The upper total grows with the count (one more release composes one more pair of
    distributions: dropping its output is post-processing), so the count is bracketed by
    doubling from the current one, then bisected; ``value`` is checked as evaluated:
    ``epsilon_upper_at_value`` <= the budget < ``epsilon_upper_at_next``.

    Raises:
        DesignError: no budget, no such entry, or a count whose composition is above
            the accountant's limits.
    """
    t = _count_budget(ledger, target)
    i = find_entry(ledger, entry)
    name = ledger.entries[i].name
    current = ledger.entries[i].count
    total = _CountTotals(ledger, i)
    value = _largest_count(total, current, t)
    warnings = [
        f"counted the waves of entry {i} ({name!r}), the other entries kept as written: "
        f"the count reported is the largest whose upper total meets ε = {t:g} at δ = "
        f"{ledger.delta:g} (the accountant's step in privacy loss {ledger.discretization:g})"
    ]
    if value is None:
        warnings.append(
            f"no count fits: without {name!r} the other entries' upper total "
            f"{total(0):.6g} is already above the budget"
        )
    elif value >= MAX_COUNT:
        warnings.append(f"every count up to the limit {MAX_COUNT:,} fits")
    knob = {
        "name": "count",
        "entry": name,
        "index": i,
        "current": current,
        "value": value,
        "more": None if value is None else value - current,
        "fits": value is not None and value >= current,
        "epsilon_upper_at_current": _finite(total(current)),
        "epsilon_upper_at_value": None if value is None else _finite(total(value)),
        "epsilon_upper_at_next": None
        if value is None or value >= MAX_COUNT
        else _finite(total(value + 1)),
    }
    return _answer(ledger, t, warnings, knob)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def overrun(payload: dict[str, Any]) -> float | None:
    """How far ``ampcalc budget``'s upper total is above the ledger's ε budget (upper −
    budget), or ``None`` when it is within it or there is no budget or no upper total."""
    eps = payload["target"]["epsilon"]
    up = payload["total"]["upper"]
    if eps is None or up is None or float(up) <= float(eps):
        return None
    return float(up) - float(eps)
