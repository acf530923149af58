"""Randomised allocation: the hypothesis-test lower bound of Proposition 4.1.

Given the distributions of the allocated sample size f̃(P) and f̃(P′) on a pair of
neighbours, a log-Lipschitz test that tells them apart forces ε′ >= log(1 + adv*).

Basis: Bun et al., Proposition 4.1 (proof in Appendix C); the LP is the
procedure of spec §4.3 (derived).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.references import BUN_2022, cite, derivation
from ampcalc.schemes.assembly import Refusal, Refuses, Theorem, assemble, check_refusals
from ampcalc.schemes.base import Analysis, Field, Scheme

BASIS = (cite(BUN_2022, "Proposition 4.1"), derivation("§4.2"))
PMF_SUM_TOL = 1e-9
MAX_SUPPORT = 100_000
LP_EPS_CAP = 20.0


@dataclass(frozen=True, eq=False, kw_only=True)
class Params:
    """The allocated sizes' distributions on one pair of add-remove neighbours.

    Attributes:
        sizes: the integers from the smallest to the largest size in either support.
        p: Pr[f̃(P) = size] over ``sizes``.
        q: Pr[f̃(P′) = size] over ``sizes``.
    """

    sizes: np.ndarray
    p: np.ndarray
    q: np.ndarray


FIELDS = (
    Field(
        name="allocation",
        kind="any",
        doc="distribution of f̃(P): {values: [...], probabilities: [...]}",
        required=True,
    ),
    Field(
        name="neighbour_allocation",
        kind="any",
        doc="distribution of f̃(P′) on a neighbour P′: {values: [...], probabilities: [...]}",
        required=True,
    ),
)

_PMF_FIELDS = (
    Field(name="values", kind="any", doc="sample sizes (whole numbers >= 0)", required=True),
    Field(name="probabilities", kind="any", doc="their probabilities (sum 1)", required=True),
)


def _read_pmf(raw: Any, key: str, reader: Any) -> dict[int, float]:
    path = f"sampling.{key}"
    if not isinstance(raw, dict):
        raise reader.error(path, "expected {values: [...], probabilities: [...]}")
    v = reader.fields(raw, _PMF_FIELDS, path, key)

    def bad(sub: str, msg: str) -> Any:
        return reader.error(f"{path}.{sub}", msg, container=raw, key=sub)

    vals, probs = v["values"], v["probabilities"]
    for sub, lst in (("values", vals), ("probabilities", probs)):
        if not isinstance(lst, list) or not lst:
            raise bad(sub, "expected a non-empty list of numbers")
        for i, x in enumerate(lst):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                raise bad(sub, f"item {i}: expected a number, got {x!r}")
    if len(vals) != len(probs):
        raise bad("values", f"{len(vals)} values but {len(probs)} probabilities")
    out: dict[int, float] = {}
    for i, (s, pr) in enumerate(zip(vals, probs, strict=True)):
        if s != int(s) or s < 0:
            raise bad("values", f"item {i}: {s!r} is not a whole number >= 0")
        if pr < 0:
            raise bad("probabilities", f"item {i}: probability {pr!r} is negative")
        if int(s) in out:
            raise bad("values", f"size {int(s)} appears twice")
        out[int(s)] = float(pr)
    total = math.fsum(out.values())
    if abs(total - 1.0) > PMF_SUM_TOL:
        raise bad(
            "probabilities",
            f"probabilities sum to {total!r}, off from 1 by {total - 1.0:+.3g}; expected a sum "
            f"within {PMF_SUM_TOL:g} of 1",
        )
    return out


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Read both distributions onto one integer grid."""
    a = _read_pmf(values["allocation"], "allocation", reader)
    b = _read_pmf(values["neighbour_allocation"], "neighbour_allocation", reader)
    lo, hi = min(min(a), min(b)), max(max(a), max(b))
    if hi - lo + 1 > MAX_SUPPORT:
        raise reader.error(
            "sampling.allocation",
            f"the sizes span {hi - lo + 1} integers; at most {MAX_SUPPORT} are supported",
        )
    sizes = np.arange(lo, hi + 1)
    p = np.array([a.get(int(s), 0.0) for s in sizes])
    q = np.array([b.get(int(s), 0.0) for s in sizes])
    return Params(sizes=sizes, p=p / p.sum(), q=q / q.sum())


def best_advantage(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """max_h Σ (p − q)h over h: grid -> [0, 1] with h and 1 − h e^ε-Lipschitz between
    neighbouring sizes, certified feasible (rounded down).

    Basis: spec §4.3. The LP (scipy.optimize.linprog, HiGHS) gives h; h is then clipped to
    [0, 1] and shrunk towards 1/2 by η = v/(e^ε − 1), v its largest constraint violation,
    which makes it exactly feasible; the returned value is that h's objective, rounded down.
    """
    from scipy.optimize import linprog  # lazy: scipy, > 20 ms

    k = p.size
    d = p - q
    if k == 1:
        return 0.0
    # adv* is nondecreasing in ε (the constraints loosen), so solving at min(ε, 20) is a
    # valid lower bound; it keeps the LP's coefficients <= e^20
    eps = min(eps, LP_EPS_CAP)
    r = math.exp(eps)
    rows, rhs = [], []
    for i in range(k - 1):
        for a, b in ((i, i + 1), (i + 1, i)):
            # h(b) <= r h(a)  and  (1 − h(b)) <= r (1 − h(a))
            row = np.zeros(k)
            row[b], row[a] = 1.0, -r
            rows.append(row)
            rhs.append(0.0)
            row = np.zeros(k)
            row[b], row[a] = -1.0, r
            rows.append(row)
            rhs.append(r - 1.0)
    res = linprog(
        -d, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[(0.0, 1.0)] * k, method="highs"
    )
    if not res.success:  # pragma: no cover - the LP is always feasible (h = 1/2)
        return 0.0
    h = np.clip(res.x, 0.0, 1.0)
    viol = 0.0
    for a, b in zip(range(k - 1), range(1, k), strict=True):
        for x, y in ((a, b), (b, a)):
            viol = max(viol, h[y] - r * h[x], (1 - h[y]) - r * (1 - h[x]))
    v = viol + 4e-16 * r
    eta = min(0.5, v / math.expm1(eps) * (1 + 1e-9)) if v > 0 else 0.0
    h = (1 - 2 * eta) * h + eta
    value = math.fsum((d * h).tolist())
    value -= 4e-16 * k
    return max(0.0, value)


def lower_epsilon(eps_add_remove: np.ndarray, *, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Lower bound of Proposition 4.1: ε′ >= log(1 + adv*(ε)), adv* the certified best
    advantage (``best_advantage``) of an e^ε-log-Lipschitz test of the sizes, at each
    add-remove ε (one LP per point); rounded down."""
    e = np.asarray(eps_add_remove, dtype=float)
    out = np.array([best_advantage(p, q, float(x)) for x in e.ravel()])
    return numeric.round_down(np.log1p(out)).reshape(e.shape)


REFUSES_REPLACE_ONE_ONLY = (
    f"Proposition 4.1 ({BUN_2022}) is about mechanisms that are ε-DP "
    "under add-remove; `neighbours: replace-one` leaves that unknown."
)


RELATION = Neighbours.ADD_REMOVE
"""The relation the family's theorems take M's ε under."""


def theorem(params: Params) -> Theorem:
    """Proposition 4.1 for this pair of allocation distributions, as data (lower bound
    only, in M's add-remove ε: a test of the sample size, which a replacement keeps)."""
    p, q = params.p, params.q
    return Theorem(
        name="Proposition 4.1",
        basis=BASIS,
        relation=RELATION,
        guarantee=Neighbours.ADD_REMOVE,
        lower=lower_epsilon,
        params={"p": p, "q": q},
        conditions=(
            "the two distributions are those of the allocated size on add-remove neighbours",
        ),
        tight=None,
        refusals=(Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY),),
    )


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Lower bound of Proposition 4.1 for one pair of allocation distributions."""
    thm = theorem(params)
    check_refusals(thm, mechanism)
    adv = best_advantage(params.p, params.q, mechanism.epsilon)
    tv = 0.5 * float(np.abs(params.p - params.q).sum())
    return assemble(
        thm,
        mechanism,
        warnings=(
            "lower bound only: some ε-DP mechanism loses at least log(1 + adv*) on this pair; "
            "Proposition 4.1 gives no guarantee",
        ),
        details={"advantage": adv, "total_variation": tv, "grid_size": int(params.p.size)},
    )


SCHEME = Scheme(
    name="allocation-test",
    summary="randomised allocation: hypothesis-test lower bound (Proposition 4.1) from the "
    "sample-size distributions on two neighbours",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.ADD_REMOVE,),
    basis=BASIS,
    analyse=analyse,
    example={
        "allocation": {"values": [1], "probabilities": [1.0]},
        "neighbour_allocation": {"values": [2], "probabilities": [1.0]},
    },
    parse_params=parse_params,
)
