"""Probability-proportional-to-size (PPS) sampling at the element level.

Basis: 000_97a39a4c524f603f.txt §6.1 and Proposition 6.1 (lower bound A(max a_i, ε));
spec §7.2 (inclusion probabilities with iterative capping). No upper bound exists for
PPS in general (it depends on the implementation); the exception is a Poisson
threshold design with a public, data-independent threshold (003_e3b635228222e4e2.txt
Theorem 6 with a weight-free mechanism).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import numeric
from ..errors import ConditionError
from ..limits import LIMITS
from ..model import Mechanism, Neighbours
from ..papers import BUN_2022, IMPORTANCE, cite
from ..validate import describe, is_real
from ._cluster_kernels import INLINE_MAX, _read_size_file, capped_inclusion
from .base import Analysis, Field, Scheme

BASIS = (cite(BUN_2022, "§6.1"), cite(BUN_2022, "Proposition 6.1"))

#: how many of the largest inclusion probabilities ``details`` lists
TOP = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """PPS: record i is included with probability a_i proportional to its size r_i.

    Attributes:
        inclusion: first-order inclusion probabilities a_i of the records in the file
            (after capping), or None (poisson-threshold without size measures).
        certainty_units: how many records have a_i = 1.
        method: ``pps`` (any PPS algorithm: no upper bound) or ``poisson-threshold``.
        threshold: τ of ``poisson-threshold`` (a_i = min(1, τ r_i)).
        max_size_measure: a public bound R on any record's size, or None.
        sample: expected sample size m (``pps`` with size measures), or None.
    """

    inclusion: np.ndarray | None
    certainty_units: int
    method: str = "pps"
    threshold: float | None = None
    max_size_measure: float | None = None
    sample: float | None = None


FIELDS = (
    Field(name="size_measures", kind="any", doc="r_i: inline list or {file: sizes.csv}"),
    Field(name="sample", kind="float", doc="expected sample size m", low=0.0, low_open=True),
    Field(
        name="inclusion_probabilities",
        kind="any",
        doc="a_i given directly (inline list or {file: ...})",
    ),
    Field(
        name="method",
        kind="choice",
        doc="pps (any PPS algorithm) or poisson-threshold (a_i = min(1, τ r_i))",
        default="pps",
        choices=("pps", "poisson-threshold"),
    ),
    Field(
        name="threshold",
        kind="float",
        doc="τ for poisson-threshold (public, data-independent)",
        low=0.0,
        low_open=True,
    ),
    Field(
        name="max_size_measure",
        kind="float",
        doc="public bound R on any record's size measure (poisson-threshold)",
        low=0.0,
        low_open=True,
    ),
)


def _numbers(raw: Any, reader: Any, path: str, what: str, *, positive: bool) -> np.ndarray:
    if isinstance(raw, dict):
        if set(raw) != {"file"} or not isinstance(raw.get("file"), str):
            raise reader.error(path, f"expected {what} as a list or {{file: name}}")
        data = _read_size_file_float(reader.resolve(raw["file"]), reader, path, raw)
        return data
    if not isinstance(raw, list) or not raw:
        raise reader.error(path, f"expected a non-empty list of {what}, got {describe(raw)}")
    if len(raw) > INLINE_MAX:
        raise reader.error(path, LIMITS["inline_list"].message(len(raw)))
    for i, v in enumerate(raw):
        if not is_real(v) or v < 0:
            raise reader.error(
                f"{path}[{i}]",
                f"item {i}: expected a finite number >= 0, got {describe(v)}",
                container=raw,
                key=i,
            )
    return np.asarray(raw, dtype=float)


def _read_size_file_float(path: Any, reader: Any, ypath: str, raw: Any) -> np.ndarray:
    def err(msg: str) -> Any:
        return reader.error(f"{ypath}.file", msg, container=raw, key="file")

    return _read_size_file(path, err, integer=False)


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Size measures with m (capped), or inclusion probabilities directly."""
    method = values["method"]
    sizes_raw, probs_raw = values["size_measures"], values["inclusion_probabilities"]
    tau, big_r, m = values["threshold"], values["max_size_measure"], values["sample"]
    if method == "poisson-threshold":
        if tau is None:
            raise reader.error("sampling", "`method: poisson-threshold` needs `threshold` τ")
        if probs_raw is not None or m is not None:
            raise reader.error(
                "sampling.method",
                "`poisson-threshold` takes `threshold` (and optional `size_measures`, "
                "`max_size_measure`), not `inclusion_probabilities` or `sample`",
            )
        a = None
        if sizes_raw is not None:
            r = _numbers(
                sizes_raw, reader, "sampling.size_measures", "size measures", positive=True
            )
            if big_r is not None and float(r.max()) > big_r:
                i = int(np.argmax(r))
                raise reader.error(
                    "sampling.size_measures",
                    f"record {i} has size measure {r[i]:g} above max_size_measure = {big_r:g}",
                )
            a = np.minimum(1.0, tau * r)
        return Params(
            inclusion=a,
            certainty_units=0 if a is None else int(np.count_nonzero(a >= 1)),
            method=method,
            threshold=tau,
            max_size_measure=big_r,
        )
    if tau is not None or big_r is not None:
        raise reader.error(
            "sampling.threshold" if tau is not None else "sampling.max_size_measure",
            "`threshold`/`max_size_measure` belong to `method: poisson-threshold`",
        )
    if (sizes_raw is None) == (probs_raw is None):
        raise reader.error(
            "sampling",
            "give exactly one of `size_measures` (with `sample`) or `inclusion_probabilities`",
        )
    if probs_raw is not None:
        a = _numbers(
            probs_raw,
            reader,
            "sampling.inclusion_probabilities",
            "inclusion probabilities",
            positive=False,
        )
        if float(a.max()) > 1.0:
            i = int(np.argmax(a))
            raise reader.error(
                "sampling.inclusion_probabilities",
                f"item {i}: inclusion probability {a[i]:g} exceeds 1",
            )
        return Params(inclusion=a, certainty_units=int(np.count_nonzero(a >= 1)), method=method)
    if m is None:
        raise reader.error("sampling", "`size_measures` needs `sample` (expected sample size m)")
    r = _numbers(sizes_raw, reader, "sampling.size_measures", "size measures", positive=True)
    if float(r.sum()) <= 0:
        raise reader.error("sampling.size_measures", "every size measure is 0")
    if m > r.size:
        raise reader.error("sampling.sample", f"sample = {m:g} exceeds the {r.size} records")
    a, c = capped_inclusion(r, m)
    return Params(inclusion=a, certainty_units=c, method=method, sample=m)


def lower_epsilon(eps: np.ndarray, *, max_inclusion: float) -> np.ndarray:
    """Lower bound on ε′ for PPS (any PPS algorithm).

    Basis: 000_97a39a4c524f603f.txt §6.1 with Proposition 6.1 (spec §7.2).
    Neighbours: replace-one (Proposition 6.1); the witness M(S) = Bernoulli(e^ε/(1+e^ε))
        if x_i ∈ S, else Bernoulli(1/(1+e^ε)), is ε-DP under both relations.
    Formula: ε′ >= A(max_i a_i, ε), a_i the first-order inclusion probabilities.
    Tightness: no upper bound exists in general; rounded down.
    """
    return numeric.amplification_lower(max_inclusion, eps)


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one PPS design."""
    a = params.inclusion
    details: dict[str, Any] = {}
    if a is not None:
        top = np.sort(a)[-TOP:][::-1]
        details["max_inclusion_probability"] = float(top[0])
        details["largest_inclusion_probabilities"] = [float(x) for x in top]
        details["certainty_units"] = params.certainty_units
        details["records"] = int(a.size)
    if params.method == "poisson-threshold":
        return _threshold(params, mechanism, details)
    if guarantee is Neighbours.ADD_REMOVE:  # only when asked for: replace-one is the default
        raise ConditionError(
            "000_97a39a4c524f603f.txt §6.1 / Proposition 6.1: the PPS lower bound is stated "
            "for replace-one neighbours, and adding a record re-scales every inclusion "
            "probability; no add-remove result exists. Use `method: poisson-threshold` with a "
            "public threshold for an add-remove guarantee."
        )
    assert a is not None  # every method but poisson-threshold has inclusion probabilities
    amax = float(a.max())
    eps_d_known = mechanism.epsilon_add_remove_known()
    eps_r = mechanism.epsilon_replace_one_of

    def witness_eps(eps: np.ndarray) -> np.ndarray:
        e = eps_r(eps)
        return np.minimum(e, np.asarray(eps, dtype=float)) if eps_d_known else e

    warnings = [
        "PPS gives no amplification guarantee (000_97a39a4c524f603f.txt §6.1: it depends "
        "on the implementation, and a record's own size makes its inclusion likely); only "
        "the lower bound A(max a_i, ε) is reported. A PPS sample amplifies only when every "
        "size is equal (then it is a simple random sample).",
        "inclusion probabilities a_i = min(1, m r_i/Σr) with iterative capping (spec §7.2; "
        "the paper gives no formula)"
        if params.sample is not None
        else "inclusion probabilities as given",
    ]
    if params.certainty_units:
        warnings.append(
            f"{params.certainty_units} certainty unit(s) (a_i = 1): for them sampling gives "
            "no protection at all (lower bound = ε)"
        )
    return Analysis(
        guarantee_neighbours=Neighbours.REPLACE_ONE,
        reference_epsilon=eps_r,
        upper=None,
        lower=lambda eps: lower_epsilon(witness_eps(eps), max_inclusion=amax),
        delta_prime=None,
        basis=BASIS,
        conditions=("first-order inclusion probabilities a_i of the design",),
        warnings=tuple(warnings),
        details=details,
    )


def _threshold(params: Params, mechanism: Mechanism, details: dict[str, Any]) -> Analysis:
    """Poisson threshold PPS: a_i = min(1, τ r_i), each record's coin from its own size.

    Basis: 003_e3b635228222e4e2.txt Theorem 6 with a weight-free mechanism: each
        record's loss is exactly A(a_i, ε) under add-remove. The guarantee must hold for
        any record that could be added: with a public bound R it is A(min(1, τR), ε)
        (tight); without one a record of huge size is always included: ε′ = ε.
    """
    if not mechanism.epsilon_add_remove_known():
        raise ConditionError(
            "Poisson threshold sampling (003_e3b635228222e4e2.txt Theorem 6) needs M's "
            "add-remove ε; declare `neighbours: add-remove` or `both`."
        )
    tau, big_r = params.threshold, params.max_size_measure
    assert tau is not None  # the parser requires it for poisson-threshold
    worst = 1.0 if big_r is None else min(1.0, tau * big_r)
    warnings = []
    if big_r is None:
        warnings.append(
            "no public `max_size_measure`: a record with a large enough size is always "
            "included (a_i = 1), so the guarantee is ε′ = ε (no amplification). Declare a "
            "public, data-independent bound R to get A(min(1, τR), ε)."
        )
    if "max_inclusion_probability" in details:
        details["max_inclusion_probability_present"] = details.pop("max_inclusion_probability")
        warnings.append(
            "details.max_inclusion_probability_present is a per-record figure for the "
            "records in the file, not the guarantee (which covers any record that could be "
            "added)."
        )
    details.update({"threshold": tau, "max_size_measure": big_r, "worst_inclusion": worst})

    def bound(eps: np.ndarray, up: bool) -> np.ndarray:
        f = numeric.amplification_upper if up else numeric.amplification_lower
        return f(worst, eps)

    return Analysis(
        guarantee_neighbours=Neighbours.ADD_REMOVE,
        reference_epsilon=lambda eps: np.asarray(eps, dtype=float),
        upper=lambda eps: bound(eps, True),
        lower=lambda eps: bound(eps, False),
        delta_prime=None if mechanism.delta > 0 else (lambda e: np.zeros(np.shape(e))),
        basis=(cite(IMPORTANCE, "Theorem 6"), cite(BUN_2022, "§6.1")),
        conditions=(
            f"threshold τ = {tau:g} public and data-independent; each record's inclusion "
            "decided from its own size only",
            "M's output does not depend on sampling weights",
        ),
        warnings=tuple(warnings),
        details=details,
    )


#: inclusion probabilities of the other records when the design lists none
VERIFY_OTHERS = 2


def _verify_hook(
    params: Params, mechanism: Mechanism, pairs: str = "default", limit: int = 5000
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.verify).

    ``poisson-threshold`` only (any other PPS algorithm has no fixed sample distribution):
    records are distinct, record i kept independently with probability a_i = min(1, τr_i).
    Pair: P = the design's records (without size measures: ``VERIFY_OTHERS`` records at
    the worst inclusion) vs P′ = P ∪ {x}, x of the largest admissible size (a_x =
    min(1, τR), or 1 without a public R). ``all`` also adds x at each listed a_i, with
    0..3 other records, and the pairs over a two-value universe.
    """
    from .. import verify as V

    if params.method != "poisson-threshold":
        raise ConditionError(
            "no exact tiny-instance enumeration for `method: pps`: the sample distribution "
            "depends on the PPS algorithm; the verify hook covers `method: poisson-threshold`"
        )
    if mechanism.delta > 0:
        raise ConditionError("the exact programme is for pure ε-DP (delta = 0)")
    tau, big_r = params.threshold, params.max_size_measure
    assert tau is not None
    worst = 1.0 if big_r is None else min(1.0, tau * big_r)
    if params.inclusion is not None:
        V.check_distinct_domain(params.inclusion.size + 1, 1, limit)  # before listing them
    others = (
        [worst] * VERIFY_OTHERS
        if params.inclusion is None
        else [float(a) for a in params.inclusion]
    )
    rel = V.relations_of(mechanism)
    V.check_distinct_domain(len(others) + 1, len(others) + 1, limit)
    cases = [(others, worst)]
    if pairs == "all":
        cases += [
            (others[:n], a) for n in range(min(4, len(others) + 1)) for a in {worst, *others}
        ]
    insts: list[Any] = []
    for rest, a_x in cases:
        p = V.bernoulli_distribution([*rest, 0.0])
        pp = V.bernoulli_distribution([*rest, a_x])
        label = f"P = {len(rest)} records vs P′ = P ∪ {{x}}, a_x = {a_x:.6g}"
        symbols = (*(f"o{i + 1}" for i in range(len(rest))), "x")
        insts.append(
            V.Instance(label=label, symbols=symbols, caps=(1,) * len(symbols), p=p, p_prime=pp)
        )
        if pairs == "all":
            # records with equal a_i are exchangeable; x is a group of its own
            kinds = sorted(set(rest))
            group_of = (*(kinds.index(a) for a in rest), len(kinds))
            insts += V.value_instances(label, group_of, len(rest), p, pp, len(symbols), limit)
    top = len(others) + 1
    return V.Plan(instances=tuple(insts), sizes=V.sizes_for(rel, [top]), relations=rel)


SCHEME = Scheme(
    name="pps",
    summary="probability proportional to size, element level (lower bound only)",
    params=Params,
    fields=FIELDS,
    mechanism_relation="replace-one or add-remove",
    guarantees=(Neighbours.REPLACE_ONE, Neighbours.ADD_REMOVE),
    basis=BASIS,
    analyse=analyse,
    example={"size_measures": [1, 1, 1, 5, 10], "sample": 2},
    parse_params=parse_params,
    hooks={"verify": _verify_hook},
)
