"""Private weighted sampling (PWS): a sanitiser calibrated to a target (ε, δ).

Basis: Cohen et al. 2021 (Cohen, Geri, Sarlos, Stemmer), Alg. 1-4, Eq. 3,
Lemmas 4.1-4.4, Thm. 5.1, Sec. 7; spec importance-and-weighted-sampling.md Part B
(with its errata: Eq. 4 corrected, Lemma 4.3 with 2⌈L⌉, Lemma 4.4 ppswor only).
Element-level (ε, δ)-DP on key/frequency data: one key's frequency changes by ±1.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ampcalc.math import pws as K
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.limits import LIMITS
from ampcalc.model.references import DERIVATIONS, PWS, cite, derivation
from ampcalc.schemes.base import Analysis, Field, Problem, Scheme

BASIS = (
    cite(PWS, "Algorithm 3 and Lemma 4.1 (optimal reporting probabilities)"),
    cite(PWS, "Algorithm 4 and Theorem 5.1 (sanitised frequencies)"),
    cite(PWS, "Eq. 3 (L(ε, δ)) and Lemma 4.2"),
    derivation("§2.6"),
)

MAX_ROWS = 1 << 22
"""Largest table computed when looking for the row where π_i = q_i for good."""

REPORT_ROWS = LIMITS["pws_rows"].value
"""Largest table ``bound``/``invert`` report (every row goes into the result)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """A weighted sample of keys, sanitised to meet the design's target (ε, δ).

    Each key x with frequency w_x (a whole number >= 1) is sampled independently with
    probability q_{w_x} by threshold sampling (Cohen et al. 2021 Alg. 1), then kept with
    probability p_{w_x} = π_{w_x}/q_{w_x} (keys only) or reported with a sanitised frequency
    (Alg. 4). The end-to-end output is element-level (ε, δ)-DP: neighbouring data
    differ by one element (one key's frequency ±1). The sampling itself is not private;
    q (method, τ, f) is public.

    Attributes:
        method: ``ppswor`` (Exp[1] scores, q_i = 1 − e^{−τ f(i)}), ``priority``
            (Poisson PPS, U[0,1] scores, q_i = min(1, τ f(i))) or ``none`` (q ≡ 1: a
            private histogram of the whole data).
        threshold: τ > 0 (ignored for ``none``).
        weight_power: p, with f(i) = i^p (p > 0 keeps q non-decreasing).
        max_frequency: rows of the table; ``None``: until π_i = q_i for good.
        inclusion: explicit q_1, q_2, … (non-decreasing, in [0, 1]); beyond the list
            q stays at its last value. Replaces method/threshold when given.
        epsilon, delta: the target (ε, δ), from the design's ``target:`` block.
    """

    method: str = "ppswor"
    threshold: float = 1.0
    weight_power: float = 1.0
    max_frequency: int | None = None
    inclusion: tuple[float, ...] | None = None
    epsilon: float | None = None
    delta: float | None = None


FIELDS = (
    Field(
        name="method",
        kind="choice",
        doc="threshold sampling: ppswor (Exp[1]), priority (Poisson PPS) or none",
        default="ppswor",
        choices=K.METHODS,
    ),
    Field(
        name="threshold",
        kind="float",
        doc="τ: q_i = 1 − e^{−τ f(i)} (ppswor) or min(1, τ f(i)) (priority)",
        default=1.0,
        low=0.0,
        low_open=True,
    ),
    Field(
        name="weight_power",
        kind="float",
        doc="p in f(i) = i^p",
        default=1.0,
    ),
    Field(
        name="max_frequency",
        kind="int",
        doc="rows of the table (default: until π_i = q_i for good)",
        low=1,
        high=REPORT_ROWS,
    ),
    Field(
        name="inclusion",
        kind="any",
        doc="explicit non-decreasing inclusion probabilities q_1, q_2, … (a list)",
    ),
)


def check(params: Params) -> list[Problem]:
    """Cross-field rules: q must be non-decreasing (Cohen et al. 2021 Sec. 3, spec B1)."""
    if params.inclusion is None and params.weight_power <= 0:
        return [
            Problem(
                field="weight_power",
                message=(
                    f"weight_power = {params.weight_power:g} makes q_i = q(τ·i^p) "
                    f"non-increasing; PWS ({PWS}, Sec. 3) needs a "
                    "non-decreasing q: use weight_power > 0"
                ),
            )
        ]
    return []


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Build Params; validate ``inclusion`` (a non-decreasing list in [0, 1])."""
    inc = values.pop("inclusion", None)
    inclusion = None
    if inc is not None:
        if not isinstance(inc, (list, tuple)) or not inc:
            raise reader.error(
                "sampling.inclusion",
                "expected a non-empty list of inclusion probabilities q_1, q_2, …",
            )
        vals: list[float] = []
        for k, v in enumerate(inc):
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
            if not ok or not 0.0 <= float(v) <= 1.0 or math.isnan(float(v)):
                raise reader.error(
                    f"sampling.inclusion[{k}]",
                    f"expected a probability in [0, 1] (q_{k + 1}), got {v!r}",
                    container=inc,
                    key=k,
                )
            if vals and float(v) < vals[-1]:
                raise reader.error(
                    f"sampling.inclusion[{k}]",
                    f"q must be non-decreasing ({PWS}, Sec. 3): "
                    f"q_{k + 1} = {float(v):g} < q_{k} = {vals[-1]:g}",
                    container=inc,
                    key=k,
                )
            vals.append(float(v))
        inclusion = tuple(vals)
    return Params(**values, inclusion=inclusion)


def check_target(target: Any, reader: Any, raw: Any) -> None:
    """PWS needs 0 < δ <= 1: with δ = 0 every π_i = 0 (spec B1)."""
    d = getattr(target, "delta_prime", None)
    if d is None or d == 0.0:
        key = "delta_prime" if d is not None else None
        raise reader.error(
            "target.delta_prime" if key else "target",
            "PWS needs target.delta_prime in (0, 1]"
            + (" (missing; it defaults to 0)" if d is None else "")
            + ": with δ = 0 Algorithm 3 gives "
            "π_i = min(q_i, e^ε·π_{i−1}, …) = 0 for every i (π_0 = 0), so no key can "
            f"ever be reported ({PWS}, Sec. 4; {DERIVATIONS}, §4.8)",
            container=raw,
            key=key,
        )


def bind_target(params: Params, target: Any) -> Params:
    """The params with the design's target (ε, δ) attached."""
    eps = getattr(target, "epsilon_prime", None)
    delta = getattr(target, "delta_prime", None)
    return dataclasses.replace(params, epsilon=eps, delta=delta)


def q_of(params: Params, n: int) -> np.ndarray:
    """q_1..q_n for the params (explicit list extended by its last value)."""
    if params.inclusion is not None:
        inc = np.asarray(params.inclusion, dtype=float)
        if n <= inc.size:
            head: np.ndarray = inc[:n].copy()
            return head
        return np.concatenate((inc, np.full(n - inc.size, inc[-1])))
    return K.inclusion_probabilities(
        n, method=params.method, threshold=params.threshold, weight_power=params.weight_power
    )


def exact_q(params: Params) -> Callable[[int], Fraction | None] | None:
    """The exact q_i (1-based) as a rational where the float q_i rounds it: priority
    sampling with a whole-number weight power p <= 64, q_i = min(1, τ·i^p) with τ the
    float given (Cohen et al. 2021 Alg. 1, Eq. 1). None where the floats are the exact values
    (an explicit ``inclusion`` list, ``none``) or q has no rational form (ppswor)."""
    if params.inclusion is not None or params.method != "priority":
        return None
    power = params.weight_power
    if not 1 <= power <= 64 or power != int(power):
        return None  # i^p irrational, or too large a whole number to be worth it
    tau = Fraction(params.threshold)
    k = int(power)

    def q(i: int) -> Fraction:
        return min(Fraction(1), tau * Fraction(i) ** k)

    return q


def reporting(params: Params, q: np.ndarray) -> np.ndarray:
    """Algorithm 3 (``pws_kernels.reporting_probabilities``) for the params' q, with
    the exact q where it is known (so π_i = q_i = 1 is exact at τ = δ, i = 1/τ)."""
    eps, delta = params.epsilon, params.delta
    assert eps is not None and delta is not None
    return K.reporting_probabilities(q, eps, delta, exact=exact_q(params))


def _stays_settled(
    params: Params, q: np.ndarray, pi: np.ndarray, eps: float, delta: float
) -> bool:
    """A certificate that π_i = q_i for every i past the computed rows."""
    if pi[-1] != q[-1]:
        return False
    if q[-1] == 1.0:
        return True  # π = 1 = q from here on: g(1) >= 1
    if params.inclusion is not None:
        return True  # q constant past the list: π_i = q_i stays (g(x) >= x)
    if params.method == "ppswor" and params.weight_power <= 1.0:
        # increments (1 − x)c_k shrink, the room g(x) − x grows or stays (see docs)
        n = q.size
        x = float(q[-1])
        c = -math.expm1(
            -params.threshold * ((n + 1) ** params.weight_power - n**params.weight_power)
        )
        # e^ε − 1 capped at ε = 700 (a smaller right side only makes the check stricter)
        ok1 = (1 - x) * c <= math.expm1(min(eps, 700.0)) * x + delta
        ok2 = (1 - x) * (c + math.expm1(-eps)) <= math.exp(-eps) * delta
        return ok1 and ok2
    return False


@dataclass
class Table:
    """Everything ``bound``/``pws table`` report for one design."""

    q: np.ndarray
    pi: np.ndarray
    L: float
    settled: int | None  # first row from which π_i = q_i for good (None: unknown)
    n: int


def compute_table(params: Params, n: int | None = None, *, max_rows: int = MAX_ROWS) -> Table:
    """Algorithm 3 for the design, up to ``n`` rows (default: max_frequency, else until
    π_i = q_i for good, looking at most ``max_rows`` rows far)."""
    eps, delta = params.epsilon, params.delta
    assert eps is not None and delta is not None
    L = K.L_eps_delta(eps, delta)
    probe = max(16, 2 * math.ceil(min(L, max_rows)) + 2, n or 0, params.max_frequency or 0)
    if params.method == "priority" and params.inclusion is None:
        try:
            top = (1.0 / params.threshold) ** (1.0 / params.weight_power)
        except OverflowError:
            top = math.inf
        probe = max(probe, int(min(top, max_rows)) + 2)
    settled = None
    while True:
        probe = min(probe, max_rows)
        q = q_of(params, probe)
        pi = reporting(params, q)
        if _stays_settled(params, q, pi, eps, delta):
            settled = K.settled_index(q, pi)
            break
        if probe >= max_rows:
            break
        probe *= 2
    rows = n or params.max_frequency or (settled if settled is not None else probe)
    rows = max(1, rows)
    if rows > q.size:
        q = q_of(params, rows)
        pi = reporting(params, q)
    return Table(q=q[:rows], pi=pi[:rows], L=L, settled=settled, n=rows)


def _target_of(params: Params) -> tuple[float, float]:
    """The design's target (ε, δ); refused unless 0 < δ."""
    eps, delta = params.epsilon, params.delta
    if eps is None or delta is None or delta == 0.0:
        raise ConditionError(
            f"PWS ({PWS}, Alg. 3) needs a target (ε, δ) with 0 < δ <= 1: "
            "with δ = 0 no key can be reported"
        )
    return eps, delta


def _sampled_sbh(params: Params, t: Table) -> bool:
    """Whether the stability-based histogram is compared on the same threshold sample
    (q < 1 somewhere, from method and τ: an explicit list has no SbH counterpart)."""
    return bool(np.any(t.q < 1.0)) and params.inclusion is None


def _frequency_rows(params: Params, t: Table, eps: float, delta: float) -> list[dict[str, Any]]:
    """One row per frequency i: q_i, π_i, p_i = π_i/q_i, the stability-based histogram's
    φ_i (on the same sample where there is one) and π_i/φ_i."""
    n, q, pi = t.n, t.q, t.pi
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(q > 0, pi / q, 0.0)
    phi = K.sbh_phi(
        n,
        eps,
        delta,
        method=params.method if _sampled_sbh(params, t) else "none",
        threshold=params.threshold,
        weight_power=params.weight_power,
    )
    if params.inclusion is not None and np.any(q < 1.0):
        phi = np.full(n, np.nan)
    return [
        {
            "frequency": i + 1,
            "q": float(q[i]),
            "pi": float(pi[i]),
            "p": float(p[i]),
            "phi_sbh": None if math.isnan(phi[i]) else float(phi[i]),
            "ratio": None if math.isnan(phi[i]) or phi[i] == 0 else float(pi[i] / phi[i]),
        }
        for i in range(n)
    ]


def _pws_notes(eps: float, delta: float, t: Table, rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """The guarantee is the target by construction; the paper's errata; on a q ≡ 1 table
    the SbH ratio's erratum; and how far the table reaches π_i = q_i for good."""
    n = t.n
    notes = [
        "the end-to-end guarantee is exactly the target (ε, δ) = "
        f"({eps:g}, {delta:g}), element-level (one key's frequency ±1), tight by "
        f"Algorithm 3's construction ({PWS}, Lemma 4.1): the sanitiser is calibrated to it.",
        f"{PWS} prints Eq. 4 (the q ≡ 1 closed form) off by one (2L+2−i; correct: 2L+1−i) "
        "and Lemma 4.3 as 2L+1 rows with π_i < q_i (correct for non-integral L: 2⌈L⌉); "
        f"Lemma 4.4 holds for ppswor only: ampcalc always runs Algorithm 3 ({DERIVATIONS}, §2.6).",
    ]
    if not np.any(t.q < 1.0):
        note = sbh_ratio_note(eps, t.L, rows)
        if note is not None:
            notes.append(note)
    if t.settled is None:
        notes.append(
            f"π_i = q_i was not reached for good within {n} rows; rows above are computed "
            "when a sample needs them"
        )
    elif n < t.settled:
        notes.append(
            f"max_frequency = {n} stops before π_i = q_i holds for good (from i = "
            f"{t.settled}); `pws sanitize`/`estimate` extend the table to the largest "
            "frequency in the sample"
        )
    return tuple(notes)


def _pws_details(params: Params, t: Table, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``details``: q's source, L, the first frequency reported at least half the time,
    the rows that pay for privacy (π_i < q_i) and the table itself."""
    half = np.flatnonzero(t.pi >= 0.5)
    cost = np.flatnonzero(t.pi < t.q)
    return {
        "method": params.method if params.inclusion is None else "explicit",
        "threshold": params.threshold if params.inclusion is None else None,
        "L": t.L,
        "first_frequency_half": int(half[0]) + 1 if half.size else None,
        "privacy_cost_rows": int(cost.size),
        "privacy_cost_frequencies": _ranges(cost + 1) if cost.size else "none",
        "settled_from": t.settled,
        "max_frequency": t.n,
        "sampled_sbh": _sampled_sbh(params, t),
        "frequencies": rows,
    }


@dataclass(frozen=True, slots=True)
class _Constant:
    """The same value at every evaluated ε (the sanitiser meets its target exactly)."""

    value: float

    def __call__(self, eps: np.ndarray) -> np.ndarray:
        return np.full(np.shape(eps), self.value)


def analyse(params: Params, mechanism: Mechanism | None, guarantee: Neighbours) -> Analysis:
    """The PWS sanitiser for the target (ε, δ): tight by construction (Alg. 3).

    Built here, not by ``assembly.assemble``: the sanitiser is calibrated to the target
    (ε, δ), so there is no declared mechanism ε to convert between relations, no formula
    of ε to round or invert, and ε′ = ε at every point.
    """
    eps, delta = _target_of(params)
    t = compute_table(params, max_rows=REPORT_ROWS)
    rows = _frequency_rows(params, t, eps, delta)
    return Analysis(
        guarantee_neighbours=Neighbours.ADD_REMOVE,
        reference_epsilon=_Constant(eps),
        upper=_Constant(eps),
        lower=_Constant(eps),
        delta_prime=_Constant(delta),
        basis=BASIS,
        conditions=(
            f"target ε = {eps:g} > 0 and 0 < δ = {delta:g} <= 1",
            "q non-decreasing, public (method, τ, f); the sample itself is secret",
            "keys sampled and sanitised independently; element-level neighbours "
            "(‖w − w′‖₁ = 1, including 0 ↔ 1)",
        ),
        warnings=(),
        notes=_pws_notes(eps, delta, t, rows),
        details=_pws_details(params, t, rows),
        calibrated=True,
    )


def sbh_ratio_note(eps: float, big_l: float, rows: list[dict[str, Any]]) -> str | None:
    """The erratum of Cohen et al. 2021 §8.1 on a q ≡ 1 table: π*_i/φ_i ∈ [2, 2/ε] for i <= L
    has the top end 2/(1 − e^{−ε}) (spec B9, B10), with the table's own largest ratio there."""
    top = 2.0 / -math.expm1(-eps)
    ratios = [
        (r["ratio"], r["frequency"])
        for r in rows
        if r["ratio"] is not None and r["frequency"] <= big_l
    ]
    if not ratios:
        return None
    worst, at = max(ratios)
    return (
        f"{cite(PWS, '§8.1')} puts π*_i/φ_i in [2, 2/ε] for i <= L; the top end is "
        f"2/(1 − e^{{−ε}}) = {top:.6g}, above 2/ε = {2.0 / eps:.6g}: here the ratio "
        f"reaches {worst:.6g} at i = {at} (L = {big_l:.6g}; details.frequencies)."
    )


def _ranges(idx: np.ndarray) -> str:
    parts = []
    start = prev = int(idx[0])
    for v in [*idx[1:].tolist(), None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(parts)


RELATION = "none (the sanitiser is built for the design's target)"
"""In words: the scheme has no mechanism of its own (``mechanism_form="none"``)."""


SCHEME = Scheme(
    name="pws",
    summary="private weighted sampling: key/frequency sanitiser calibrated to a target (ε, δ)",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.ADD_REMOVE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={"method": "ppswor", "threshold": 0.01, "max_frequency": 100},
    mechanism_form="none",
    parse_params=parse_params,
    bind_target=bind_target,
    check_target=check_target,
)
