"""A privacy budget across independently drawn samples: a ledger of releases.

A ledger lists entries, each a design (a path to a design file, or inline) with a
``count`` of identical releases, each release on its own, independently drawn sample::

    target: {epsilon: 3.0, delta: 1e-6}   # the budget; epsilon is optional
    neighbours: add-remove                # one relation for every entry
    discretization: 1e-4                  # the accountant's interval (optional)
    entries:
      - {name: monthly wave, design: wave.yaml, count: 12}
      - design: {mechanism: {gaussian: {sigma: 1.0}}, sampling: {scheme: poisson, rate: 0.01}}
        count: 1000

Composition (``run``):

- identical pure-ε′ entries (every entry's upper bound is pure, and all are equal):
  the optimal composition in closed form (``compose.PureComposition``), no accountant;
- otherwise Google's ``dp_accounting`` PLD accountant (the optional extra
  ``ampcalc[accounting]``), imported here only. Poisson-sampled Gaussian or Laplace
  entries (add-remove) use its own sampled builders; every other entry passes a
  dominating pair of its amplified guarantee to ``from_two_probability_mass_functions``:
  for a pure ε′ binary randomized response at ε′ (it dominates every ε′-DP pair:
  Kairouz, Oh and Viswanath 2015, Theorem 2.4), for an (ε′, δ′) guarantee the
  four-outcome pair P = (δ′, (1−δ′)e^{ε′}/(1+e^{ε′}), (1−δ′)/(1+e^{ε′}), 0),
  Q = (0, (1−δ′)/(1+e^{ε′}), (1−δ′)e^{ε′}/(1+e^{ε′}), δ′) (same theorem: it dominates
  every (ε′, δ′)-DP pair).

The upper total composes the entries' upper guarantees with the accountant's pessimistic
estimate; the lower total is the accountant's optimistic estimate of the same composition
(``use_connect_dots=False``): an accounting interval, not a worst-case witness. An entry
without an upper bound makes the total ``no-guarantee``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.accounting.profiles import Gaussian, Laplace, Profile, epsilon_at_delta
from ampcalc.math import numeric
from ampcalc.model.design import Design, Neighbours, Target
from ampcalc.model.errors import AmpcalcError, DesignError, Where
from ampcalc.model.references import KOV15
from ampcalc.schemes.base import Field

#: the accountant's default discretisation interval (dp_accounting's default)
DEFAULT_DISCRETIZATION = 1e-4
#: the intervals accepted (the ledger's ``discretization:`` and ``--discretization``)
DISCRETIZATION_RANGE = (1e-7, 0.1)
EXTRA = "ampcalc[accounting]"

LEDGER_KEYS = ("target", "neighbours", "discretization", "entries", "name")
ENTRY_KEYS = ("name", "design", "index", "count", "delta_prime")


class MissingAccountant(AmpcalcError):
    """The ledger needs dp_accounting and it is not installed."""


class CostLimit(DesignError):
    """The ledger's composition is above the accountant's limits (exit 2)."""


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One ledger line: ``count`` releases of ``design``, each on its own sample."""

    name: str
    design: Design
    count: int
    delta_prime: float | None = None
    where: Where | None = None


@dataclass(frozen=True, kw_only=True)
class Ledger:
    """A validated budget file."""

    name: str
    entries: tuple[Entry, ...]
    delta: float
    epsilon: float | None
    neighbours: Neighbours
    discretization: float


# --------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------


#: ``target.epsilon`` (and ``budget --target``): the ε budget
EPSILON_BUDGET = Field(name="epsilon", kind="float", doc="ε budget", low=0.0, low_open=True)
#: ``discretization`` (and ``budget --discretization``): the accountant's interval
DISCRETIZATION = Field(name="discretization", kind="float", doc="interval", low=1e-7, high=0.1)


def load_ledger(path: str, overrides: Sequence[str] = ()) -> Ledger:
    """Read and validate a budget file (errors: ``DesignError`` at file and line)."""
    from ampcalc.designs import document as design_mod
    from ampcalc.load.fields import Reader, check_keys, field_value, mapping, number
    from ampcalc.load.files import nul_in_name

    text, name = design_mod.read_source(path)
    doc = design_mod.parse_yaml(text, filename=name)
    ctx = Reader(name, "", {})
    doc = mapping(doc, ctx, "", None, None, "a budget ledger (`entries:` and `target:`)")
    check_keys(doc, LEDGER_KEYS, ctx, "", "a budget ledger")
    if "target" not in doc:
        raise DesignError(
            "missing required key 'target' ({delta: ..., epsilon: ...}: the total δ, and "
            "optionally the ε budget)",
            where=ctx.where("", doc),
        )
    tgt = mapping(doc["target"], ctx, "target", doc, "target", "the budget target")
    check_keys(tgt, ("epsilon", "delta"), ctx, "target", "the budget target")
    if "delta" not in tgt:
        raise DesignError(
            "missing required key 'delta' (the total δ the ε is reported at)",
            where=ctx.where("target", doc, "target"),
        )
    delta = float(
        number(
            tgt["delta"],
            Field(name="delta", kind="float", doc="total δ", low=0.0, high=1.0, high_open=True),
            ctx.where("target.delta", tgt, "delta"),
        )
    )
    eps_budget = None
    if "epsilon" in tgt:
        eps_budget = float(
            number(
                tgt["epsilon"],
                EPSILON_BUDGET,
                ctx.where("target.epsilon", tgt, "epsilon"),
            )
        )
    neighbours = Neighbours.ADD_REMOVE
    if "neighbours" in doc:
        neighbours = Neighbours(
            field_value(
                Field(
                    name="neighbours",
                    kind="choice",
                    doc="relation of the total",
                    choices=("add-remove", "replace-one"),
                ),
                doc["neighbours"],
                ctx.where("neighbours", doc, "neighbours"),
            )
        )
    disc = DEFAULT_DISCRETIZATION
    if "discretization" in doc:
        disc = float(
            number(
                doc["discretization"],
                DISCRETIZATION,
                ctx.where("discretization", doc, "discretization"),
            )
        )
    items = doc.get("entries")
    if not isinstance(items, list) or not items:
        raise DesignError(
            "expected `entries:`, a non-empty list of {design: ..., count: k}",
            where=ctx.where("entries", doc, "entries"),
        )
    entries: list[Entry] = []
    base = Path(name).parent if not name.startswith("<") else Path(".")
    for i, item in enumerate(items):
        ipath = f"entries[{i}]"
        item = mapping(item, ctx, ipath, items, i, "a ledger entry ({design: ..., count: k})")
        check_keys(item, ENTRY_KEYS, ctx, ipath, "a ledger entry")
        if "design" not in item:
            raise DesignError(
                "missing required key 'design' (a design file's path, or a design inline)",
                where=ctx.where(ipath, items, i),
            )
        raw = item["design"]
        dwhere = ctx.where(f"{ipath}.design", item, "design")
        if isinstance(raw, str):
            if (nul := nul_in_name(raw, "design file")) is not None:
                raise DesignError(nul, where=dwhere)
            p = Path(raw)
            p = p if p.is_absolute() else base / p
            designs = design_mod.load_designs(str(p), overrides=overrides)
        elif isinstance(raw, Mapping):
            designs = design_mod.load_document(raw, filename=name, overrides=overrides)
        else:
            raise DesignError(
                "expected a design file's path or an inline design mapping", where=dwhere
            )
        if "index" in item:
            k = int(
                number(
                    item["index"],
                    Field(
                        name="index", kind="int", doc="design index", low=0, high=len(designs) - 1
                    ),
                    ctx.where(f"{ipath}.index", item, "index"),
                )
            )
            designs = (designs[k],)
        if len(designs) != 1:
            raise DesignError(
                f"an entry holds one design; this file holds {len(designs)}: choose one "
                "with `index:` (0 for the first)",
                where=dwhere,
            )
        count = 1
        if "count" in item:
            count = int(
                number(
                    item["count"],
                    Field(name="count", kind="int", doc="releases", low=1, high=10**7),
                    ctx.where(f"{ipath}.count", item, "count"),
                )
            )
        dp = None
        if "delta_prime" in item:
            dp = float(
                number(
                    item["delta_prime"],
                    Field(name="delta_prime", kind="float", doc="δ′", low=0.0, high=1.0),
                    ctx.where(f"{ipath}.delta_prime", item, "delta_prime"),
                )
            )
        nm = str(item.get("name", designs[0].name))
        entries.append(
            Entry(name=nm, design=designs[0], count=count, delta_prime=dp, where=dwhere)
        )
    return Ledger(
        name=str(doc.get("name", Path(name).stem)),
        entries=tuple(entries),
        delta=delta,
        epsilon=eps_budget,
        neighbours=neighbours,
        discretization=disc,
    )


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


def _entry_bound(entry: Entry, delta_entry: float) -> Any:
    """The entry's bound (a named mechanism at δ′ = ``delta_entry`` unless it has one)."""
    from ampcalc import engine

    d = entry.design
    if getattr(d.mechanism, "profile", None) is not None:
        dp = entry.delta_prime if entry.delta_prime is not None else delta_entry
        d = dataclasses.replace(d, target=Target(delta_prime=dp))
    return engine.bound(d)


def _import_pld() -> Any:
    try:
        from dp_accounting.pld import privacy_loss_distribution as pld
    except ImportError:
        raise MissingAccountant(
            "this ledger is composed with Google's dp_accounting PLD accountant, which is not "
            f"installed; install the optional extra: pip install '{EXTRA}'"
        ) from None
    return pld


def _rr_log_pmfs(eps: float, delta: float) -> tuple[dict[int, float], dict[int, float]]:
    """(Q, P) log-PMFs of the (ε, δ) dominating pair (δ = 0: randomized response)."""
    a = math.log1p(-delta) - float(np.logaddexp(0.0, -eps))  # log((1−δ)e^ε/(1+e^ε))
    b = math.log1p(-delta) - float(np.logaddexp(0.0, eps))  # log((1−δ)/(1+e^ε))
    p = {1: a, 2: b}
    q = {1: b, 2: a}
    if delta > 0:
        p[0] = math.log(delta)
        q[3] = math.log(delta)
    return q, p


def run(ledger: Ledger, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Compose the ledger; the JSON payload of ``ampcalc budget``.

    ``progress(done, total)`` is called as the work advances: one step per entry's bound,
    then one per entry in each of the accountant's two compositions (upper and lower).
    """
    steps = 3 * len(ledger.entries)
    done = 0

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
    # δ′ at which named mechanisms off the native path are taken: a tenth of the
    # total δ spread over every release (the accountant adds them up)
    delta_entry = ledger.delta / (10.0 * total_count) if ledger.delta > 0 else 0.0
    rows: list[dict[str, Any]] = []
    pairs: list[tuple[Entry, Any, tuple[str, float, float, float] | None]] = []
    no_guarantee: list[str] = []
    for entry in ledger.entries:
        native = _native(entry)
        res = _entry_bound(entry, ledger.delta if native else delta_entry)
        row: dict[str, Any] = {
            "name": entry.name,
            "scheme": entry.design.scheme,
            "count": entry.count,
            "epsilon_prime": {"lower": res.lower, "upper": res.upper},
            "delta_prime": res.delta_prime,
            "guarantee_neighbours": res.guarantee_neighbours,
            "composed_as": None,
        }
        if res.error is not None:
            row["error"] = res.error
        if "profile" in res.details:
            row["profile"] = res.details["profile"]
        if res.upper is None or not math.isfinite(float(res.upper)):
            no_guarantee.append(entry.name)
        elif res.guarantee_neighbours != str(ledger.neighbours):
            raise DesignError(
                f"entry {entry.name!r} gives its guarantee under {res.guarantee_neighbours}, "
                f"the ledger under {ledger.neighbours}: every entry must hold under one "
                "relation (set the design's `guarantee:` to match, where the scheme allows it)",
                where=entry.where,
            )
        if native is not None:
            row["composed_as"] = f"dp_accounting sampled {native[0]} PLD"
        elif res.upper is not None:
            dp = float(res.delta_prime or 0.0)
            row["composed_as"] = (
                "randomized response at ε′ (pure)" if dp == 0.0 else "(ε′, δ′) dominating pair"
            )
        rows.append(row)
        pairs.append((entry, res, native))
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
        return out
    pure = [float(r.upper) for _, r, n in pairs if n is None and float(r.delta_prime or 0) == 0]
    if len(pure) == len(pairs) and len(set(pure)) == 1:
        total = _closed_form_pure(pure[0], total_count, ledger.delta)
    else:
        total = _accountant(pairs, ledger, step)
    if progress is not None:
        progress(steps, steps)
    out["total"] = total
    up = total["upper"]
    out["remaining"] = None if ledger.epsilon is None or up is None else ledger.epsilon - float(up)
    return out


def _closed_form_pure(eps: float, k: int, delta: float) -> dict[str, Any]:
    from ampcalc.accounting.compose import MAX_PURE_RELEASES, PureComposition
    from ampcalc.accounting.profiles import RandomizedResponse

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
#: + noise (``fastpld.fft_noise``). The composed δ moves by about 1e-7 relative at
#: δ = 1e-6 (1000 releases, interval 1e-4) when the inputs move by 1e-11 relative, so
#: reading ε at δ itself could land a few 1e-9 below the exact composition's
FFT_DELTA = 1e-5


def _laplace_losses(scale: float, sens: float, q: float) -> Any:
    from dp_accounting.pld import privacy_loss_mechanism as plm

    return [
        plm.LaplacePrivacyLoss(scale, sensitivity=sens, sampling_prob=q, adjacency_type=kind)
        for kind in (plm.AdjacencyType.REMOVE, plm.AdjacencyType.ADD)
    ]


def _entry_points(res: Any, native: tuple[str, float, float, float] | None, di: float) -> float:
    """Grid points of one entry's PLD before self-composition, from its loss bounds alone
    (nothing is built): what the accountant allocates for it at the interval ``di``."""
    from ampcalc.accounting import fastpld

    _import_pld()
    if native is not None:
        kind, scale, sens, q = native
        if kind == "gaussian":
            pls = fastpld._privacy_loss_objects(scale, sens, q, True).values()
        else:
            pls = _laplace_losses(scale, sens, q)
        return fastpld.loss_points(pls, di)
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
    from ampcalc.accounting import fastpld

    pre = fastpld.Meter()
    for entry, res, native in pairs:
        try:
            pre.charge(_entry_points(res, native, di), f"entry {entry.name!r}")
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
    native: tuple[str, float, float, float] | None,
    di: float,
    pessimistic: bool,
    meter: Any = None,
) -> Any:
    """One entry's PLD, self-composed ``count`` times (each step charged to ``meter``, a
    ``fastpld.Meter``, before it is computed)."""
    from ampcalc.accounting import fastpld

    pld = _import_pld()
    if meter is not None and not (native is not None and native[0] == "gaussian"):
        meter.charge(_entry_points(res, native, di), f"entry {entry.name!r}")
    if native is not None:
        kind, scale, sens, q = native
        if kind == "gaussian":
            # the library's construction, vectorised (accounting.fastpld)
            one = fastpld.sampled_gaussian_pld(
                scale, sens, q, di, pessimistic=pessimistic, meter=meter
            )
        else:
            one = pld.from_laplace_mechanism(
                scale,
                sensitivity=sens,
                pessimistic_estimate=pessimistic,
                value_discretization_interval=di,
                sampling_prob=q,
                use_connect_dots=pessimistic,
            )
    else:
        q_pmf, p_pmf = _rr_log_pmfs(float(res.upper), float(res.delta_prime or 0.0))
        one = pld.from_two_probability_mass_functions(
            q_pmf, p_pmf, pessimistic_estimate=pessimistic, value_discretization_interval=di
        )
    return fastpld.self_compose(one, entry.count, meter=meter)


def accountant_side(
    pairs: Sequence[tuple[Entry, Any, Any]],
    delta: float,
    di: float,
    pessimistic: bool,
    step: Callable[[], None] = lambda: None,
) -> float:
    """The composed ledger's ε at ``delta``: the pessimistic estimate rounded up (read at
    δ less the FFT allowance), or the optimistic one rounded down (at δ plus it); ``inf``
    when none is finite.

    Every step is charged to a ``fastpld.Meter`` before it is computed: a composition
    above the accountant's limits (``pld_points``, ``accountant_work``) is refused
    (``DesignError``, exit 2) before its memory or time is spent. When the pairs' mass
    at an infinite loss alone is above the δ read, ε is ``inf`` without composing.

    Raises:
        CostLimit: the composition is above the accountant's limits.
    """
    from ampcalc.accounting import fastpld

    at = delta * (1.0 - FFT_DELTA) if pessimistic else delta * (1.0 + FFT_DELTA)
    if _pairs_infinity_mass(pairs) > at:
        return math.inf  # δ(ε) >= the infinity mass > δ at every ε, as composed below
    check_cost(pairs, di)
    meter = fastpld.Meter()
    total = None
    for entry, res, native in pairs:
        try:
            one = _entry_pld(entry, res, native, di, pessimistic, meter)
            total = fastpld.compose(total, one, meter)
        except fastpld.CostLimitError as err:
            raise _refuse(err, entry.where) from None
        step()
    noise = fastpld.fft_noise(total)
    if pessimistic:
        at = delta * (1.0 - FFT_DELTA) - noise
        if at <= 0.0:
            return math.inf
        eps = float(fastpld.epsilon_for_delta(total, at))
        return float(numeric.round_up(eps)) if math.isfinite(eps) else math.inf
    eps = float(fastpld.epsilon_for_delta(total, delta * (1.0 + FFT_DELTA) + noise))
    if not math.isfinite(eps):
        return math.inf
    return max(float(numeric.round_down(eps)), 0.0)


def _accountant(
    pairs: list[tuple[Entry, Any, Any]], ledger: Ledger, step: Callable[[], None] = lambda: None
) -> dict[str, Any]:
    di = ledger.discretization
    up_f = accountant_side(pairs, ledger.delta, di, True, step)
    lo = accountant_side(pairs, ledger.delta, di, False, step)
    up = up_f if math.isfinite(up_f) else None
    lo = min(lo, up if up is not None else math.inf)
    lo_out = lo if math.isfinite(lo) else None  # no finite ε at δ: JSON has no inf
    return {
        "lower": lo_out,
        "upper": up,
        "delta": ledger.delta,
        "verdict": None if up is not None else "no-guarantee",
        "accountant": "dp_accounting PLD (pessimistic estimate for the upper, optimistic "
        "with use_connect_dots=False for the lower)",
        "discretization": di,
        "width": None if up is None or up == 0 else (up - lo) / up,
        "lower_meaning": "the accountant's optimistic estimate of the same composition: an "
        "accounting interval, not a worst-case witness",
    }
