"""Probability-proportional-to-size (PPS) sampling at the element level.

Basis: Bun et al., §6.1 and Proposition 6.1 (lower bound A(max a_i, ε));
spec §7.2 (inclusion probabilities with iterative capping). The inclusion probabilities,
and so the bound, depend on the PPS algorithm, which ``method:`` names:

* ``pps`` (the algorithm is not known): every design of (expected) size m has
  Σ a_i = m, so some record has a_i >= m/N: lower bound A(m/N, ε_R).
* ``pips``: an exact πps algorithm (Sampford, systematic πps, …): a_i = min(1, m r_i/Σr)
  after the usual capping of large units.
* ``sampford``: Sampford's rejective πps design (the same a_i; with equal sizes it is a
  simple random sample).
* ``successive``: m draws one by one without replacement, each with probability
  proportional to size among the records not yet drawn (exact a_i on small designs, a
  sound lower bound otherwise).
* ``poisson-threshold``: a_i = min(1, τ r_i), decided independently from each record's
  own size with a public threshold τ (Personalized Privacy Amplification via Importance Sampling,
  Theorem 6 with a
  weight-free mechanism): the only method with an upper bound for unequal sizes.

No upper bound exists for PPS in general (it depends on the implementation); with equal
size measures ``successive`` and ``sampford`` are a simple random sample without
replacement and get its bounds (Bun et al., §6.1, last paragraph).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.fields import describe, is_real, is_whole
from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.limits import LIMITS
from ampcalc.model.references import BBG18, BUN_2022, DERIVATIONS, IMPORTANCE, cite
from ampcalc.schemes import srswor
from ampcalc.schemes._cluster_kernels import INLINE_MAX, _read_size_file, capped_inclusion
from ampcalc.schemes._pps_designs import (
    TOP,
    Counts,
    _successive_largest,
    sampford_distribution,
    successive_distribution,
    successive_inclusion,  # noqa: F401  (read here by the tests)
    successive_product_bound,  # noqa: F401
    successive_race_bound,  # noqa: F401
    systematic_pips_distribution,
)
from ampcalc.schemes.assembly import (
    Proportional,
    Refusal,
    Refuses,
    Theorem,
    Witness,
    assemble,
    check_refusals,
)
from ampcalc.schemes.base import Analysis, Field, Scheme

BASIS = (cite(BUN_2022, "§6.1"), cite(BUN_2022, "Proposition 6.1"))


#: the methods that name a PPS algorithm without replacement (not Poisson threshold)
FIXED_METHODS = ("pps", "pips", "sampford", "successive")

#: methods whose sample is a simple random sample when every size measure is equal
SRS_WHEN_EQUAL = ("sampford", "successive")

#: methods that need a whole number of draws
WHOLE_SAMPLE = ("sampford", "successive")


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """PPS: record i is included with probability a_i, which grows with its size r_i.

    Attributes:
        inclusion: first-order inclusion probabilities a_i of the records in the file:
            as given, or min(1, m r_i/Σr) after capping (``pps``, ``pips``,
            ``sampford``), or min(1, τ r_i) (``poisson-threshold``); None for
            ``successive`` and for ``poisson-threshold`` without size measures.
        certainty_units: how many records have a_i = 1.
        method: ``pps`` (algorithm unknown), ``pips``, ``sampford``, ``successive`` or
            ``poisson-threshold`` (see the module docstring).
        threshold: τ of ``poisson-threshold`` (a_i = min(1, τ r_i)).
        max_size_measure: a public bound R on any record's size, or None.
        sample: expected sample size m (with size measures), or None.
        sizes: the size measures r_i, or None (inclusion probabilities given).
        largest: ``successive``: the largest inclusion probabilities (rounded down; exact
            or lower bounds, see ``inclusion_exact``), largest first.
        inclusion_exact: ``successive``: whether ``largest`` is exact (up to rounding).
    """

    inclusion: np.ndarray | None
    certainty_units: int
    method: str = "pps"
    threshold: float | None = None
    max_size_measure: float | None = None
    sample: float | None = None
    sizes: np.ndarray | None = None
    largest: tuple[float, ...] = ()
    inclusion_exact: bool = True


FIELDS = (
    Field(name="size_measures", kind="any", doc="r_i: inline list or {file: sizes.csv}"),
    Field(
        name="sample",
        kind="float",
        doc="expected sample size m (a whole number of draws for sampford, successive)",
        low=0.0,
        low_open=True,
    ),
    Field(
        name="inclusion_probabilities",
        kind="any",
        doc="a_i given directly (inline list or {file: ...}; method pps)",
    ),
    Field(
        name="method",
        kind="choice",
        doc="the PPS algorithm: pps (unknown), pips (exact πps: Sampford, systematic πps, "
        "...), sampford, successive (draw by draw without replacement) or "
        "poisson-threshold (a_i = min(1, τ r_i))",
        default="pps",
        choices=(*FIXED_METHODS, "poisson-threshold"),
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
    if values["method"] == "poisson-threshold":
        return _threshold_params(values, reader)
    tau, big_r = values["threshold"], values["max_size_measure"]
    if tau is not None or big_r is not None:
        raise reader.error(
            "sampling.threshold" if tau is not None else "sampling.max_size_measure",
            "`threshold`/`max_size_measure` belong to `method: poisson-threshold`",
        )
    if (values["size_measures"] is None) == (values["inclusion_probabilities"] is None):
        raise reader.error(
            "sampling",
            "give exactly one of `size_measures` (with `sample`) or `inclusion_probabilities`",
        )
    if values["inclusion_probabilities"] is not None:
        return _given_inclusion_params(values, reader)
    return _size_measure_params(values, reader)


def _read_size_measures(raw: Any, reader: Any) -> np.ndarray:
    """``size_measures``: r_i >= 0, inline or from a file."""
    return _numbers(raw, reader, "sampling.size_measures", "size measures", positive=True)


def _certainty_units(inclusion: np.ndarray) -> int:
    """How many records are included for certain (a_i >= 1)."""
    return int(np.count_nonzero(inclusion >= 1))


def _threshold_params(values: dict[str, Any], reader: Any) -> Params:
    """``poisson-threshold``: τ, and optional size measures r_i <= R (a_i = min(1, τ r_i))."""
    tau, big_r = values["threshold"], values["max_size_measure"]
    if tau is None:
        raise reader.error("sampling", "`method: poisson-threshold` needs `threshold` τ")
    if values["inclusion_probabilities"] is not None or values["sample"] is not None:
        raise reader.error(
            "sampling.method",
            "`poisson-threshold` takes `threshold` (and optional `size_measures`, "
            "`max_size_measure`), not `inclusion_probabilities` or `sample`",
        )
    a = None
    if values["size_measures"] is not None:
        r = _read_size_measures(values["size_measures"], reader)
        if big_r is not None and float(r.max()) > big_r:
            i = int(np.argmax(r))
            raise reader.error(
                "sampling.size_measures",
                f"record {i} has size measure {r[i]:g} above max_size_measure = {big_r:g}",
            )
        a = np.minimum(1.0, tau * r)
    return Params(
        inclusion=a,
        certainty_units=0 if a is None else _certainty_units(a),
        method="poisson-threshold",
        threshold=tau,
        max_size_measure=big_r,
    )


def _given_inclusion_params(values: dict[str, Any], reader: Any) -> Params:
    """``inclusion_probabilities`` a_i in [0, 1], used as given (``method: pps`` only)."""
    method = values["method"]
    if method != "pps":
        raise reader.error(
            "sampling.method",
            f"`method: {method}` computes the inclusion probabilities from "
            "`size_measures` and `sample`; with `inclusion_probabilities` (used as given) "
            "leave `method` at pps",
        )
    a = _numbers(
        values["inclusion_probabilities"],
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
    return Params(inclusion=a, certainty_units=_certainty_units(a), method=method)


def _size_measure_params(values: dict[str, Any], reader: Any) -> Params:
    """``size_measures`` r_i with ``sample`` m: a_i = min(1, m r_i/Σr) after capping
    (for ``successive``, its largest inclusion probabilities)."""
    method, m = values["method"], values["sample"]
    if m is None:
        raise reader.error("sampling", "`size_measures` needs `sample` (expected sample size m)")
    r = _read_size_measures(values["size_measures"], reader)
    positive = int(np.count_nonzero(r > 0))
    with np.errstate(over="ignore"):
        finite = bool(np.isfinite(r.sum()))
    if not finite:  # PPS depends on the ratios only: scale by a power of two
        r = np.ldexp(r, -(math.frexp(float(r.max()))[1] + math.ceil(math.log2(r.size)) + 1))
    if float(r.sum()) <= 0:
        raise reader.error("sampling.size_measures", "every size measure is 0")
    if m > r.size:
        raise reader.error("sampling.sample", f"sample = {m:g} exceeds the {r.size} records")
    if m > positive:
        raise reader.error(
            "sampling.sample",
            f"sample = {m:g} exceeds the {positive} records of positive size (a record of "
            "size 0 is never drawn)",
        )
    if method in WHOLE_SAMPLE and not is_whole(m, 1):
        raise reader.error(
            "sampling.sample", f"`method: {method}` draws a whole number of records, got {m:g}"
        )
    if method == "successive":
        return Params(
            inclusion=None,
            certainty_units=0,
            method=method,
            sample=m,
            sizes=r,
            **_successive_largest(r, int(m)),
        )
    a, c = capped_inclusion(r, m)
    return Params(inclusion=a, certainty_units=c, method=method, sample=m, sizes=r)


def lower_epsilon(eps: np.ndarray, *, max_inclusion: float) -> np.ndarray:
    """Lower bound on ε′ for PPS (any PPS algorithm).

    Basis: Bun et al., §6.1 with Proposition 6.1 (spec §7.2).
    Neighbours: replace-one (Proposition 6.1); the witness M(S) = Bernoulli(e^ε/(1+e^ε))
        if x_i ∈ S, else Bernoulli(1/(1+e^ε)), is ε-DP under both relations.
    Formula: ε′ >= A(a, ε) for a <= max_i a_i, a_i the first-order inclusion
        probabilities of the algorithm (m/N when it is unknown: Σ a_i = m).
    Tightness: no upper bound exists in general; rounded down.
    """
    return numeric.amplification_lower(max_inclusion, eps)


def inclusion_summary(params: Params) -> tuple[float, str, dict[str, Any]]:
    """The a of the lower bound, how it was found, and the ``details`` about it.

    ``inclusion_basis``: ``given`` (inclusion probabilities as given), ``pips`` (a_i =
    min(1, m r_i/Σr) after capping: exact for πps algorithms and Sampford), ``successive``
    (exact) or ``successive-lower-bound``, ``fixed-size`` (the algorithm is unknown: m/N,
    the least the largest a_i can be, since Σ a_i = m over N records).
    """
    a = params.inclusion
    details: dict[str, Any] = {"method": params.method}
    if params.method == "successive":
        assert params.sizes is not None and params.sample is not None
        top = list(params.largest)
        basis = "successive" if params.inclusion_exact else "successive-lower-bound"
        details.update(
            max_inclusion_probability=top[0],
            largest_inclusion_probabilities=top,
            certainty_units=int(sum(x >= 1.0 for x in top)),
            records=int(params.sizes.size),
        )
        return top[0], basis, details
    assert a is not None  # every other fixed-size method has a_i (given or capped)
    ordered = np.sort(a)[-TOP:][::-1]
    if params.method == "pps" and params.sample is not None:
        amax = params.sample / a.size
        details.update(
            max_inclusion_probability=amax,
            pips_max_inclusion_probability=float(ordered[0]),
            certainty_units=params.certainty_units,
            records=int(a.size),
        )
        return amax, "fixed-size", details
    details.update(
        max_inclusion_probability=float(ordered[0]),
        largest_inclusion_probabilities=[float(x) for x in ordered],
        certainty_units=params.certainty_units,
        records=int(a.size),
    )
    return float(ordered[0]), "given" if params.sample is None else "pips", details


def _equal_sizes(params: Params) -> bool:
    r = params.sizes
    return r is not None and r.size > 0 and bool(np.all(r == r[0])) and float(r[0]) > 0


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one PPS design."""
    if params.method == "poisson-threshold":
        details: dict[str, Any] = {}
        if params.inclusion is not None:
            top = np.sort(params.inclusion)[-TOP:][::-1]
            details["max_inclusion_probability"] = float(top[0])
            details["largest_inclusion_probabilities"] = [float(x) for x in top]
            details["certainty_units"] = params.certainty_units
            details["records"] = int(params.inclusion.size)
        return _threshold(params, mechanism, details)
    amax, basis, details = inclusion_summary(params)
    details["inclusion_basis"] = basis
    thm = theorem(amax, fixed_size=basis == "fixed-size")
    check_refusals(thm, mechanism, guarantee)  # before the simple-random-sample case
    if params.method in SRS_WHEN_EQUAL and _equal_sizes(params):
        return _simple_random_sample(params, mechanism, details)
    warnings = [
        f"PPS gives no amplification guarantee ({BUN_2022}, §6.1: it depends "
        "on the implementation, and a record's own size makes its inclusion likely); only "
        "the lower bound A(max a_i, ε) is reported.",
    ]
    # the unnamed algorithm is an input to fix; the other inclusion remarks are context
    notes: list[str] = []
    (warnings if basis == "fixed-size" else notes).append(_INCLUSION_NOTE[basis])
    if _equal_sizes(params):
        warnings.append(
            "every size measure is equal: Sampford and successive sampling are then a "
            "simple random sample (declare `method: sampford` or `successive` for its "
            "bounds); a systematic πps sample over a fixed order can reveal x's start "
            "(worst case ε), so `pps` and `pips` keep the lower bound only"
        )
    if params.certainty_units and basis != "fixed-size":
        warnings.append(
            f"{params.certainty_units} certainty unit(s) (a_i = 1): for them sampling gives "
            "no protection at all (lower bound = ε)"
        )
    elif params.certainty_units:
        warnings.append(
            f"under a πps algorithm {params.certainty_units} record(s) would be certainty "
            "units (a_i = 1, lower bound ε): declare `method: pips` if yours is one"
        )
    return assemble(
        thm,
        mechanism,
        guarantee=guarantee,
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
    )


REFUSES_ADD_REMOVE = (
    f"{BUN_2022}, §6.1 / Proposition 6.1: the PPS lower bound is stated "
    "for replace-one neighbours, and adding a record re-scales every inclusion "
    "probability; no add-remove result exists. Use `method: poisson-threshold` with a "
    "public threshold for an add-remove guarantee."
)


def theorem(max_inclusion: float, *, fixed_size: bool) -> Theorem:
    """§6.1 with Proposition 6.1 as data: no upper bound; the lower bound A(a, ε) by a
    single-inclusion witness (ε-DP under both relations, so it runs at min(ε_D, ε_R),
    at ε_R where M's add-remove ε is unknown); no add-remove result (refused)."""
    amax = max_inclusion
    return Theorem(
        name="§6.1",
        basis=BASIS,
        relation=None,
        guarantee=Neighbours.REPLACE_ONE,
        witnesses=(Witness(bound=functools.partial(lower_epsilon, max_inclusion=amax)),),
        conditions=(
            "a sample of (expected) size m: Σ a_i = m"
            if fixed_size
            else "first-order inclusion probabilities a_i of the design",
        ),
        tight=None,
        refusals=(Refusal(Refuses.GUARANTEE, REFUSES_ADD_REMOVE),),
    )


_INCLUSION_NOTE = {
    "given": "inclusion probabilities as given",
    "pips": "inclusion probabilities a_i = min(1, m r_i/Σr) with iterative capping "
    f"({DERIVATIONS}, §4.4; the paper gives no formula): exact for πps algorithms (Sampford, "
    "systematic πps)",
    "successive": "inclusion probabilities of successive sampling (draw by draw, without "
    "replacement, each draw proportional to size among the records left), computed exactly",
    "successive-lower-bound": "successive sampling on a design too large for the exact "
    "recursion: a sound lower bound on a_max (the larger of 1 − Π_{k<m}(1 − r_max/(Σr − "
    "s_k)), s_k the k smallest other sizes, and a lower Riemann sum of the exponential-race "
    "integral), so the lower bound on ε′ stays sound",
    "fixed-size": "the PPS algorithm is not named (`method: pps`): its inclusion "
    "probabilities are unknown, but they sum to the sample size m, so some record has "
    "a_i >= m/N and A(m/N, ε) is the lower bound. Declare `method: pips` (πps algorithms: "
    "a_i = min(1, m r_i/Σr)), `sampford` or `successive` for an algorithm-specific bound.",
}


def _simple_random_sample(
    params: Params, mechanism: Mechanism, details: dict[str, Any]
) -> Analysis:
    """Equal size measures under Sampford or successive sampling: a simple random sample.

    Basis: Bun et al., §6.1 (last paragraph: with equal r_i PPS sampling is
        simple random sampling without replacement) and Theorem 2.2 via ``srswor``.
    Both algorithms then give every m-subset the same probability (successive sampling by
    symmetry; Sampford's p(s) ∝ Π λ_i Σ(1 − π_j) is constant on m-subsets).
    """
    assert params.sizes is not None and params.sample is not None
    n, m = int(params.sizes.size), int(params.sample)
    base = srswor.analyse(srswor.Params(population=n, sample=m), mechanism, Neighbours.REPLACE_ONE)
    return dataclasses.replace(
        base,
        basis=(*BASIS, *base.basis),
        conditions=(
            *base.conditions,
            "the size measures are public and fixed: a replacement keeps the replaced "
            "record's size measure",
        ),
        notes=(
            f"every size measure is equal: `method: {params.method}` draws a simple random "
            f"sample of m records without replacement ({BUN_2022}, §6.1), so "
            "Theorem 2.2's bounds apply",
            *base.notes,
        ),
        details={**details, **base.details, "simple_random_sample": True},
    )


def _threshold(params: Params, mechanism: Mechanism, details: dict[str, Any]) -> Analysis:
    """Poisson threshold PPS: a_i = min(1, τ r_i), each record's coin from its own size.

    Basis: Personalized Privacy Amplification via Importance Sampling, Theorem 6 with a
    weight-free mechanism: each
        record's loss is exactly A(a_i, ε) under add-remove. The guarantee must hold for
        any record that could be added: with a public bound R it is A(min(1, τR), ε)
        (tight); without one a record of huge size is always included: ε′ = ε.
    """
    tau, big_r = params.threshold, params.max_size_measure
    assert tau is not None  # the parser requires it for poisson-threshold
    worst = 1.0 if big_r is None else min(1.0, tau * big_r)
    warnings = []
    notes = []
    if big_r is None:
        warnings.append(
            "no public `max_size_measure`: a record with a large enough size is always "
            "included (a_i = 1), so the guarantee is ε′ = ε (no amplification). Declare a "
            "public, data-independent bound R to get A(min(1, τR), ε)."
        )
    if "max_inclusion_probability" in details:
        details["max_inclusion_probability_present"] = details.pop("max_inclusion_probability")
        notes.append(
            "details.max_inclusion_probability_present is a per-record figure for the "
            "records in the file, not the guarantee (which covers any record that could be "
            "added)."
        )
    details.update({"threshold": tau, "max_size_measure": big_r, "worst_inclusion": worst})
    delta = float(mechanism.delta)
    if delta > 0:
        notes.append(
            f"M is (ε, δ)-DP with δ = {delta:g}: the guarantee is (ε′, δ′) with δ′ = a·δ, "
            f"a = {worst:g} the largest inclusion probability of a record that could be "
            f"added (Poisson subsampling: {BBG18}); ε′ alone is no guarantee"
        )
    return assemble(
        threshold_theorem(tau, worst, with_delta=delta > 0),
        mechanism,
        details=details,
        warnings=tuple(warnings),
        notes=tuple(notes),
    )


def threshold_theorem(tau: float, worst: float, *, with_delta: bool) -> Theorem:
    """Poisson threshold PPS as data: A(a, ε) under add-remove, a = min(1, τR), δ′ = a·δ.

    Poisson subsampling of an (ε, δ) mechanism gives (A(a, ε), a·δ) for a record kept
    with probability a <= worst, in both directions of add-remove (BBG18).
    """
    return Theorem(
        name="Theorem 6",
        basis=(cite(IMPORTANCE, "Theorem 6"), cite(BUN_2022, "§6.1"))
        + ((cite(BBG18),) if with_delta else ()),
        relation=Neighbours.ADD_REMOVE,
        guarantee=Neighbours.ADD_REMOVE,
        closed_form=numeric.Amplification(worst),  # Poisson sampling at rate a (Lemma 3.3)
        delta_prime=Proportional(worst),
        conditions=(
            f"threshold τ = {tau:g} public and data-independent; each record's inclusion "
            "decided from its own size only",
            "M's output does not depend on sampling weights",
        ),
        tight=None,
        refusals=(
            Refusal(
                Refuses.ADD_REMOVE_UNKNOWN,
                f"Poisson threshold sampling ({IMPORTANCE}, Theorem 6) needs M's "
                "add-remove ε; declare `neighbours: add-remove` or `both`.",
            ),
        ),
    )


#: inclusion probabilities of the other records when the design lists none
VERIFY_OTHERS = 2


def _verify_algorithm(params: Params) -> tuple[str, tuple[str, ...]]:
    """The PPS algorithm the verify hook enumerates for ``params.method``."""
    method, m = params.method, params.sample
    assert m is not None
    if method in ("successive", "sampford"):
        return method, ()
    if method == "pips":
        return "systematic", (
            "method pips: the enumeration is systematic πps over the listed order with a "
            "uniform start (one πps algorithm; the lower bound A(max a_i, ε) holds for "
            "every πps algorithm, so this checks it on one of them)",
        )
    witness = "successive" if is_whole(m, 1) else "systematic"
    return witness, (
        f"method pps: the algorithm is unknown; the enumeration is a witness algorithm "
        f"({witness} sampling): the lower bound A(m/N, ε) must hold for every algorithm, "
        "so this checks it on one of them, and there is no upper bound to check",
    )


def _distribution(algorithm: str, sizes: np.ndarray, m: float) -> dict[Counts, float]:
    if algorithm == "successive":
        return successive_distribution(sizes, int(m))
    a, _ = capped_inclusion(sizes, m)
    if algorithm == "sampford":
        return sampford_distribution(a, int(m))
    return systematic_pips_distribution(a)


def _replacement(
    label: str, i: int, p: dict[Counts, float], pp: dict[Counts, float], *, symmetric: bool
) -> Any:
    """P (record i = x) vs P′ (record i = x′): symbols o…, x, x′ (caps 1)."""
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    n = len(next(iter(p)))
    symbols = (*(f"o{j + 1}" for j in range(n) if j != i), "x", "x'")
    return V.distinct_instance(
        label,
        symbols,
        V.record_as(p, i, prime=False),
        V.record_as(pp, i, prime=True),
        symmetric=symmetric,
    )


def _value_pairs(insts: list[Any], n: int, limit: int) -> list[Any]:
    """The default pairs seen over a two-value universe: x = a, x′ = b, and every
    assignment of a or b to the other n − 1 records."""
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    others = max(1, 2 ** (n - 1))
    V.check_value_populations(
        others * len(insts), limit, "use fewer records, or the default pairs"
    )
    # the largest sample size drawn (float a_i may sum to m plus a few ulps, which
    # gives a systematic sample one record more with a tiny probability)
    width = max(V.sample_sizes(insts))
    out = []
    for inst in insts:
        for bits in itertools.product((0, 1), repeat=n - 1):
            values = (*bits, 0, 1)
            out.append(
                V.two_value_instance(
                    f"{inst.label}, values {list(bits)}, x = a, x′ = b",
                    V.project_distribution(inst.p, values, 2),
                    V.project_distribution(inst.p_prime, values, 2),
                    width,
                )
            )
    return out


def _other_size_pairs(
    algorithm: str, sizes: np.ndarray, m: float, base: dict[Counts, float], xs: list[int]
) -> list[Any]:
    """Record i replaced by x′ of every other listed size (the whole design re-drawn with
    the new size), where enough records of positive size are left to draw m."""
    out = []
    for i in xs:
        for size in sorted({float(x) for x in sizes} - {float(sizes[i])}):
            changed = sizes.copy()
            changed[i] = size
            if m > np.count_nonzero(changed > 0):
                continue  # too few records of positive size left to draw m
            out.append(
                _replacement(
                    f"{algorithm}: record {i + 1} (size {sizes[i]:g}) replaced by x′ of "
                    f"size {size:g}",
                    i,
                    base,
                    _distribution(algorithm, changed, m),
                    symmetric=False,
                )
            )
    return out


def _verify_hook(
    params: Params, mechanism: Mechanism, pairs: str = "default", limit: int = 5000
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.schemes.exact).

    ``poisson-threshold``: see ``_verify_threshold``. The other methods enumerate one
    concrete algorithm on the design's size measures: ``successive`` (draw by draw),
    ``sampford`` (Sampford's rejective design), ``pips`` (systematic πps over the listed
    order, uniform start: one πps algorithm), ``pps`` (unknown: successive sampling as a
    witness algorithm, systematic πps when m is not whole; only the lower bound A(m/N, ε)
    is checked, on that algorithm). Pairs: P = the design's records vs P′ = P with record
    i replaced by x′ of the same size (the sample distribution is P's with x′ in x's
    place), for each record i (one per distinct size where records of equal size are
    exchangeable: successive, Sampford). ``all`` adds x′ of every other listed size (the
    whole design re-drawn with the new size) and the default pairs over a two-value
    universe (x = a, x′ = b, every assignment of the other records).
    """
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    if params.method == "poisson-threshold":
        return _verify_threshold(params, mechanism, pairs, limit)
    if params.sizes is None or params.sample is None:
        raise ConditionError(
            "no exact tiny-instance enumeration for inclusion probabilities given directly: "
            "the sample distribution depends on the PPS algorithm; give `size_measures` and "
            "`sample` with a `method`"
        )
    V.require_pure(mechanism)
    r, m = params.sizes, params.sample
    n = int(r.size)
    V.check_distinct_domain(n + 1, math.ceil(m), limit)
    algorithm, notes = _verify_algorithm(params)
    base = _distribution(algorithm, r, m)
    exchangeable = algorithm != "systematic"
    xs = [i for i in range(n) if not exchangeable or float(r[i]) not in map(float, r[:i])]
    insts = [
        _replacement(
            f"{algorithm}: record {i + 1} (size {r[i]:g}) replaced by x′ of the same size",
            i,
            base,
            base,
            symmetric=True,  # x ↔ x′ swaps P and P′
        )
        for i in xs
    ]
    if pairs == "all":
        insts += _value_pairs(insts, n, limit)
        insts += _other_size_pairs(algorithm, r, m, base, xs)
    return V.plan_of(insts, V.relations_of(mechanism), V.sample_sizes(insts), notes)


def _verify_threshold(
    params: Params, mechanism: Mechanism, pairs: str = "default", limit: int = 5000
) -> Any:
    """``verify`` for ``poisson-threshold``: records are distinct, record i kept
    independently with probability a_i = min(1, τr_i).
    Pair: P = the design's records (without size measures: ``VERIFY_OTHERS`` records at
    the worst inclusion) vs P′ = P ∪ {x}, x of the largest admissible size (a_x =
    min(1, τR), or 1 without a public R). ``all`` also adds x at each listed a_i, with
    0..3 other records, and the pairs over a two-value universe.
    """
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    V.require_pure(mechanism)
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
        insts.append(V.distinct_instance(label, symbols, p, pp))
        if pairs == "all":
            # records with equal a_i are exchangeable; x is a group of its own
            kinds = sorted(set(rest))
            group_of = (*(kinds.index(a) for a in rest), len(kinds))
            insts += V.value_instances(label, group_of, len(rest), p, pp, len(symbols), limit)
    return V.plan_of(insts, rel, [len(others) + 1])


RELATION = None
"""None: each method's theorem states its own relation (the catalogue shows either)."""


SCHEME = Scheme(
    name="pps",
    summary="probability proportional to size, element level (lower bound only)",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.REPLACE_ONE, Neighbours.ADD_REMOVE),
    basis=BASIS,
    analyse=analyse,
    example={"size_measures": [1, 1, 1, 5, 10], "sample": 2},
    parse_params=parse_params,
    verify_plan=_verify_hook,
)
