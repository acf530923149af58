"""Cluster sampling: ℓ of k clusters chosen uniformly without replacement, whole
clusters taken (optionally a Poisson sample inside the chosen clusters).

Basis: Bun et al., Theorems 5.1 (lower) and 5.2 (upper), §5.2 remark on
multi-stage designs; spec §6.1–§6.3. The lesson: cluster samples often do not
amplify at all, however small ℓ/k is, because one cluster's output reveals whether
it was sampled.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ampcalc.load.fields import check_keys, describe
from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import (
    BUN_2020_WP,
    BUN_2022,
    CLUSTER_DOCS,
    DERIVATIONS,
    Citation,
    cite,
    derivation,
)
from ampcalc.schemes._cluster_kernels import ClusterSizes, ratio_lower, ratio_upper, read_clusters
from ampcalc.schemes.assembly import (
    Refusal,
    Refuses,
    Theorem,
    Witness,
    assemble,
    witness_reduced,
)
from ampcalc.schemes.base import Analysis, Field, Problem, Scheme

BASIS = (
    cite(BUN_2022, "Theorem 5.2 (upper)"),
    cite(BUN_2022, "Theorem 5.1 (lower)"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """ℓ of k clusters chosen uniformly without replacement; every record of a chosen
    cluster is taken (or, with ``within``, kept independently with probability r).

    Cluster membership is fixed and public; which clusters were chosen is secret.
    Neighbouring populations differ by one record added to one cluster (add-remove
    inside a fixed cluster, Bun et al., §5).

    Attributes:
        clusters: the cluster sizes (summary: k, two largest, smallest, total).
        chosen: ℓ, 1 <= ℓ < k.
        within_rate: r of a Poisson second stage inside the chosen clusters, or None.
    """

    clusters: ClusterSizes
    chosen: int
    within_rate: float | None = None


FIELDS = (
    Field(
        name="clusters",
        kind="any",
        doc="cluster sizes: {sizes: [...]}, {count: k, size: n} or {file: sizes.csv}",
        required=True,
    ),
    Field(name="chosen", kind="int", doc="ℓ, the number of clusters chosen", required=True),
    Field(
        name="within",
        kind="any",
        doc="optional second stage: {scheme: poisson, rate: r}",
    ),
)


def parse_within(raw: Any, reader: Any, path: str) -> float | None:
    """The ``within:`` block: only a Poisson second stage is covered (spec §6.3)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise reader.error(path, f"expected {{scheme: poisson, rate: r}}, got {describe(raw)}")
    check_keys(raw, ("scheme", "rate", "sample", "population"), reader, path, "within")
    scheme = raw.get("scheme")
    if scheme != "poisson":
        raise reader.error(
            f"{path}.scheme",
            f"within-cluster scheme {scheme!r} is not supported: only `poisson` is covered. "
            "A fixed-size sample inside each chosen cluster (srswor) makes the allocation "
            "depend on the cluster sizes, which the data determine, and no theorem covers it "
            f"({BUN_2022}, §5.2; {DERIVATIONS}, §4.3)",
            container=raw,
            key="scheme",
        )
    r = raw.get("rate")
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r <= 1:
        raise reader.error(
            f"{path}.rate",
            f"expected a number in (0, 1], got {describe(r)}",
            container=raw,
            key="rate" if "rate" in raw else None,
        )
    return float(r)


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Read the ``clusters`` block (inline, ``{count, size}`` or a file) and ``within``."""
    clusters = read_clusters(values["clusters"], reader, "sampling.clusters")
    within = parse_within(values.get("within"), reader, "sampling.within")
    return Params(clusters=clusters, chosen=values["chosen"], within_rate=within)


def check(params: Params) -> list[Problem]:
    """1 <= ℓ < k."""
    k, ell = params.clusters.count, params.chosen
    if ell <= 0:
        return [Problem(field="chosen", message=f"expected 1 <= chosen < k = {k}, got {ell}")]
    if ell >= k:
        return [
            Problem(
                field="chosen",
                message=f"chosen = {ell} but there are only k = {k} clusters; expected "
                f"1 <= chosen < k (choosing every cluster is no sample)",
            )
        ]
    return []


def _second_stage(eps: np.ndarray, within_rate: float | None) -> np.ndarray:
    """M's ε seen by the cluster stage: ε, or A(r, ε) for M∘Poisson(r) (rounded up)."""
    if within_rate is None:
        return np.asarray(eps, dtype=float)
    return numeric.amplification_upper(within_rate, eps)


def upper_epsilon(
    eps: np.ndarray, *, fraction: float, k_sum: float, within_rate: float | None = None
) -> np.ndarray:
    """Upper bound (a guarantee) on ε′ for cluster sampling, population-wide.

    Basis: Bun et al., Theorem 5.2, with K = n₍₁₎ + n₍₂₎ (the two largest
        clusters: the worst cluster i maximises n_i + max_{j≠i} n_j; spec §6.1).
        Proof gap (spec §6.1 remark b, §11.6): the App. D proof bounds one direction
        only and its swap step uses LCS distance n_i + n_j where n_i + 1 + n_j is
        needed; an exact LP check on small instances never exceeded the stated bound,
        so the bound is implemented as stated.
    Neighbours: M is ε-DP under add-remove; ε′ holds for adding/removing one record
        inside a fixed cluster.
    Conditions: 1 <= ℓ < k; cluster membership fixed; chosen clusters secret.
    Formula: ε′ = B(ℓ/k, K, ε) = log(1 + A(e^ε − 1)/(A + (1 − A)e^{−Kε})). With a Poisson
        second stage at rate r inside the chosen clusters (``within_rate``), M∘Poisson is
        A(r, ε)-DP under add-remove and the theorem applies at that ε (§5.2 remark;
        derivations §4.3).
    Tightness: tight when all clusters have the same size (Theorem 5.1 meets it).
    Numerics: log1p/expm1 form (no cancellation at ε = 1e-12), logaddexp difference
        where ε or Kε exceeds 700; rounded up.
    """
    return ratio_upper(fraction, k_sum, _second_stage(eps, within_rate))


def lower_epsilon(eps: np.ndarray, *, fraction: float, k_sum: float) -> np.ndarray:
    """Lower bound on ε′ for cluster sampling (some ε-DP M is at least this bad).

    Basis: Bun et al., Theorem 5.1, maximised over the cluster i:
        K = n_i + min_{j≠i} n_j is largest for i the largest cluster, K = n₍₁₎ + n_min.
        (The App. D proof builds a replace-one change; spec §6.1 remark a checks that the
        stated add-remove formula is exact for the Σx + Lap(1/ε) witness.)
    Neighbours: the witness is ε-DP under add-remove and 2ε-DP under replace-one
        (``WITNESS_RATIO``).
    Formula: ε′ = B(ℓ/k, n₍₁₎ + n_min, ε). Rounded down.
    """
    return ratio_lower(fraction, k_sum, eps)


#: Theorem 5.1's witness Σx + Lap(1/ε) is ε-DP under add-remove, 2ε-DP under replace-one
WITNESS_RATIO = 2.0


def single_inclusion_lower(eps: np.ndarray, *, inclusion: float) -> np.ndarray:
    """Lower bound A(π, ε) from the single-inclusion witness (spec §7.2): randomised
    response on "x is in the sample", ε-DP under both relations; x is kept with
    probability π = (ℓ/k)·r. Rounded down."""
    return numeric.amplification_lower(inclusion, eps)


DELTA_BASIS = cite(CLUSTER_DOCS, "(ε, δ) mechanisms: the derivation of δ′")


def delta_prime_of(eps: np.ndarray, delta: Any, *, fraction: float, k_sum: float) -> np.ndarray:
    """δ′ paired with ε′ = B(A, K, ε) when M is (ε, δ)-DP under add-remove.

    Basis: the Theorem 5.2 argument (Bun et al., App. D) redone with δ,
        both directions, the swap taken inside the smaller population (docs/cluster.md,
        "(ε, δ) mechanisms"): with p, p′ = Pr(E | cluster i sampled) on P, P′ = P + x and
        q = Pr(E | not sampled), p′ <= e^ε p + δ, p <= e^ε p′ + δ and, by group privacy
        over the n_i + n_j <= K records a swap of cluster j for i changes,
        q >= e^{−Kε}(p − δ_K) with δ_K = δ(e^{Kε} − 1)/(e^ε − 1). Then
        Pr_{P′}(E) − e^{ε′}Pr_P(E) and Pr_P(E) − e^{ε′}Pr_{P′}(E) are at most
        Aδ + (e^{ε′} − 1)(1 − A)e^{−Kε}δ_K = Aδ/(A + (1 − A)e^{−Kε}).
    Formula: δ′ = Aδ/(A + (1 − A)e^{−Kε}) = δ(e^{ε′} − 1)/(e^ε − 1) (δ′ → δ as Kε grows:
        no amplification of δ either). Tight for clusters of one record (an exact LP:
        clusters [1, 1, 1], ℓ = 1, ε = 1, δ = 0.05: 0.0393493).
    Numerics: e^{−Kε} underflows harmlessly to 0; rounded up (δ′ increases in ε, so an
        ε rounded up keeps it sound), capped at 1.
    """
    e = np.asarray(eps, dtype=float)
    with np.errstate(over="ignore", under="ignore"):
        den = fraction + (1.0 - fraction) * np.exp(-k_sum * e)
    out: np.ndarray = np.minimum(numeric.round_up(fraction * delta / den), 1.0)
    return out


def delta_prime(
    eps: np.ndarray,
    delta: np.ndarray,
    *,
    fraction: float,
    k_sum: float,
    within_rate: float | None = None,
) -> np.ndarray:
    """δ′ of the design for M (ε, δ)-DP under add-remove: ``delta_prime_of`` at the ε and
    δ the cluster stage sees (M∘Poisson(r): A(r, ε) and rδ)."""
    d1 = delta if within_rate is None else within_rate * delta
    return delta_prime_of(_second_stage(eps, within_rate), d1, fraction=fraction, k_sum=k_sum)


def conditions(params: Params) -> tuple[str, ...]:
    """The theorems' conditions on the design, with its values."""
    k, ell = params.clusters.count, params.chosen
    return (
        f"1 <= chosen < k: 1 <= {ell} < {k}",
        "clusters chosen uniformly without replacement, whole clusters taken; cluster "
        "membership fixed before sampling; which clusters were chosen is secret",
    )


def srs_same_fraction(eps: np.ndarray, *, fraction: float) -> np.ndarray:
    """A simple random/Poisson sample at the same fraction, for comparison (not a bound
    on this design): A(fraction, ε), rounded up."""
    return numeric.amplification_upper(fraction, eps)


def _srs_details(eps: np.ndarray, *, fraction: float) -> dict[str, Any]:
    return {"srs_same_fraction": srs_same_fraction(eps, fraction=fraction)}


def _max_k_for(frac: float, eps: float, target: float) -> int | None:
    """Largest integer K with B(A, K, ε) <= T as evaluated (upper bound), -1 if none,
    None if unbounded (every K meets it)."""
    if float(ratio_upper(frac, 0, eps)) > target:
        return -1
    if eps <= target:
        return None
    x = math.expm1(eps) / math.expm1(target)
    inner = frac * (x - 1.0) / (1.0 - frac)
    guess = -math.log(inner) / eps if inner > 0 else 0.0
    hi = max(0, math.floor(guess) + 2)
    if float(ratio_upper(frac, hi, eps)) <= target:
        return hi
    lo = 0  # feasible (checked above); bisect on integers: B increases in K
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if float(ratio_upper(frac, mid, eps)) <= target:
            lo = mid
        else:
            hi = mid
    return lo


def _max_cluster_size_details(
    target: np.ndarray, *, fraction: float, eps0: float, within: bool
) -> dict[str, Any]:
    """For ``invert``: the largest cluster size meeting the target at the declared ε."""
    if within or target.ndim != 0:
        return {}
    kmax = _max_k_for(fraction, eps0, float(target))
    if kmax is None:
        return {
            "max_cluster_size_for": None,
            "max_cluster_size_note": f"at ε = {eps0:g} every cluster size meets the target",
        }
    if kmax < 0:
        return {
            "max_cluster_size_for": None,
            "max_cluster_size_note": f"at ε = {eps0:g} no cluster size meets the target",
        }
    return {
        "max_cluster_size_for": kmax // 2,
        "max_two_largest_sum_for": kmax,
        "max_cluster_size_note": f"at the declared ε = {eps0:g}: equal clusters of at "
        f"most {kmax // 2} records (in general: two largest sizes summing to at most "
        f"{kmax}) keep the Theorem 5.2 bound at or below the target",
    }


REFUSES_REPLACE_ONE_ONLY = (
    f"Theorems 5.1/5.2 ({BUN_2022}) need M's add-remove ε (neighbours "
    "differ by one record added to a cluster), and `neighbours: replace-one` leaves "
    "it unknown. Declare `neighbours: add-remove` or `both`."
)


RELATION = Neighbours.ADD_REMOVE
"""The relation the family's theorems take M's ε under."""


def theorem(params: Params, *, reduced: bool, delta: bool) -> Theorem:
    """Theorems 5.2 (upper) and 5.1 (lower) for this design, as data (in M's add-remove ε).

    ``reduced``: M's declared ε_R is below 2ε, so Theorem 5.1's witness runs at
    min(ε, ε_R/2) and the single-inclusion witness joins it. ``delta``: M's δ > 0 (the
    δ′ derivation is cited).
    """
    cl = params.clusters
    frac = params.chosen / cl.count
    n1, n2 = cl.largest
    k_up, k_low, r = n1 + n2, n1 + cl.smallest, params.within_rate
    inclusion = frac * (1.0 if r is None else r)
    single = Witness(bound=functools.partial(single_inclusion_lower, inclusion=inclusion))
    theorem_5_1 = Witness(
        bound=functools.partial(lower_epsilon, fraction=frac, k_sum=k_low),
        replace_one_ratio=WITNESS_RATIO,
    )
    basis: tuple[Citation, ...] = BASIS
    if r is not None:
        basis = (*BASIS, cite(BUN_2022, "§5.2 remark"), derivation("§4.3"))
    return Theorem(
        name="Theorem 5.2",
        basis=(*basis, DELTA_BASIS) if delta else basis,
        relation=RELATION,
        guarantee=Neighbours.ADD_REMOVE,
        upper=upper_epsilon,
        witnesses=(
            (single,) if r is not None else (theorem_5_1, single) if reduced else (theorem_5_1,)
        ),
        delta_prime=delta_prime,
        params={"fraction": frac, "k_sum": k_up, "within_rate": r},
        conditions=conditions(params),
        tight=None,  # ``details.tight`` is the family's (equal clusters, no second stage)
        refusals=(Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY),),
    )


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one cluster design (see the bound functions for the theorems)."""
    cl = params.clusters
    k, ell = cl.count, params.chosen
    frac = ell / k
    n1, n2 = cl.largest
    k_up = n1 + n2
    r = params.within_rate
    reduced = witness_reduced(mechanism, WITNESS_RATIO)
    thm = theorem(params, reduced=reduced, delta=mechanism.delta > 0)
    tight = bool(cl.equal and r is None and not reduced)
    more_conditions: list[str] = []
    warnings: list[str] = []
    notes = [
        f"Theorem 5.2 ({BUN_2022}) is implemented as stated; its App. D proof "
        "has an off-by-one in the swap distance and bounds one direction only (an exact LP "
        f"check on small instances supports the stated bound; {DERIVATIONS}, §2.4)."
    ]
    if r is not None:
        more_conditions.append(
            f"second stage: Poisson with rate r = {r:g} inside the chosen clusters (M∘Poisson "
            "is A(r, ε)-DP under add-remove; Theorem 5.2 applies with that ε)"
        )
    # the remarks describe the declared design, at the declared ε (add-remove)
    eps0 = float(mechanism.epsilon)
    srs_fraction = frac if r is None else frac * r
    srs = float(srs_same_fraction(np.asarray(eps0), fraction=srs_fraction))
    up0 = float(upper_epsilon(np.asarray(eps0), fraction=frac, k_sum=k_up, within_rate=r))
    details: dict[str, Any] = {
        "clusters": k,
        "chosen": ell,
        "cluster_fraction": frac,
        "largest_clusters": [n1, n2],
        "smallest_cluster": cl.smallest,
        "population": cl.total,
        "K_upper": k_up,
        "K_lower": n1 + cl.smallest if r is None else None,
        "tight": tight,
        "sizes_source": cl.source,
    }
    if r is not None:
        details["within_rate"] = r
    if k == 2 and r is None:
        details["count_witness"] = _count_witness_details(cl.smallest, n1, eps0)
    if r is None and reduced:
        notes.append(
            f"M is declared ε-DP under replace-one too (ε_R = "
            f"{mechanism.effective_epsilon_replace_one():g} < 2ε): Theorem 5.1's witness is "
            "only 2ε-DP under replace-one, so the lower bound runs it at min(ε, ε_R/2), or is "
            "the single-inclusion witness A(ℓ/k, ε) where larger (an exact LP check found "
            "B(ℓ/k, n₍₁₎ + n_min, ε) above the true worst case under `both`)."
        )
    if tight:
        more_conditions.append(f"all {k} clusters have size {n1}: upper = lower (tight)")
    if up0 >= eps0 * (1 - 1e-9):
        warnings.append(
            f"no amplification at ε = {eps0:g}: one cluster's output reveals whether it was "
            f"sampled (two largest clusters {n1} + {n2} records), although only {ell} of {k} "
            f"clusters ({frac:.3g}) are chosen; a simple random sample of the same expected "
            f"share of records ({srs_fraction:.3g}) would give {srs:.6g}."
        )
    else:
        notes.append(
            f"a simple random/Poisson sample of the same expected share of records "
            f"({srs_fraction:.3g}) would give "
            f"ε′ = {srs:.6g} at ε = {eps0:g} (details.srs_same_fraction), against the cluster "
            f"bound {up0:.6g}."
        )
    if mechanism.delta > 0:
        more_conditions.append(
            f"M is (ε, δ)-DP under add-remove with δ = {mechanism.delta:g}"
            + ("" if r is None else f" (M∘Poisson: δ₁ = rδ = {r * mechanism.delta:g})")
        )
        notes.append(
            "M's δ > 0: δ′ = Aδ/(A + (1 − A)e^{−Kε}) = δ(e^{ε′} − 1)/(e^ε − 1) with A = ℓ/k, "
            f"K = {k_up}, paired with the ε′ shown (derived from the Theorem 5.2 argument with "
            f"group privacy for (ε, δ); {CLUSTER_DOCS}"
            + ("" if r is None else "; ε, δ of M∘Poisson: A(r, ε), rδ")
            + ")."
        )
    return assemble(
        thm,
        mechanism,
        details=details,
        details_at=partial(_srs_details, fraction=srs_fraction),
        warnings=tuple(warnings),
        notes=tuple(notes),
        conditions=tuple(more_conditions),
        invert_details=partial(
            _max_cluster_size_details, fraction=frac, eps0=eps0, within=r is not None
        ),
    )


def _count_witness_details(a: int, b: int, eps0: float) -> dict[str, Any]:
    """Two clusters (sizes a <= b): the count witness of the working paper at ε."""
    from ampcalc.schemes import _count_witness as cw

    return {
        "eq2": float(cw.eq2(a, b, eps0)),
        "exact_smaller": float(cw.exact(a, b, eps0, "smaller")),
        "exact_larger": float(cw.exact(a, b, eps0, "larger")),
        "note": f"{BUN_2020_WP}, §4 eq. (2): M(Z) = |Z| + Lap(1/ε) on one of the "
        "two clusters (sizes a <= b); eq2 is the paper's ratio at output 0 (the record "
        "added to the smaller cluster; b − a in place of b), exact_smaller / "
        "exact_larger the witness's exact loss over all outputs with the record added "
        "to the smaller / larger cluster (with a = 0, exact_larger equals the Theorem "
        "5.1 lower bound)",
    }


def _verify_hook(
    params: Params, mechanism: Mechanism, pairs: str = "default", limit: int = 5000
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.verify).

    Every cluster's records are distinct symbols; the pair is P vs P′ = P with a record x
    added to cluster i, for one cluster i of each distinct size (Theorems 5.1/5.2
    maximise over i). P's sample: a uniform ℓ-subset of clusters, every record of a chosen
    cluster taken (or kept w.p. r with ``within``). ``all`` adds the same pairs seen over
    a two-value universe.
    """
    import itertools

    from ampcalc.schemes import exact as V

    cl = params.clusters
    V.check_distinct_domain(cl.total + 1, 1, limit)  # before listing the sizes
    if cl.sizes is None:
        sizes = [cl.largest[0]] * cl.count  # {count: k, size: n}: equal sizes
    else:
        sizes = [int(x) for x in cl.sizes]
    k, ell, r = cl.count, params.chosen, params.within_rate
    if mechanism.delta > 0:
        raise ConditionError("the exact programme is for pure ε-DP (delta = 0)")
    rel = V.relations_of(mechanism)
    records = sum(sizes) + 1
    top = sum(sorted(sizes)[-ell:]) + 1
    V.check_distinct_domain(records, top, limit)
    subsets = list(itertools.combinations(range(k), ell))
    if len(subsets) > limit:
        raise ConditionError(f"too large to verify: {len(subsets)} cluster subsets")

    def dist(present: list[tuple[int, ...]]) -> dict[Any, float]:
        parts = []
        for chosen in subsets:
            per = []
            for j, flags in enumerate(present):
                if j not in chosen:
                    per.append({(0,) * len(flags): 1.0})
                elif r is None:
                    per.append({flags: 1.0})
                else:
                    per.append(V.poisson_distribution(flags, r))
            parts.append((1.0 / len(subsets), V.product_distribution(per)))
        return V.mixture_distribution(parts)

    insts: list[Any] = []
    seen: set[int] = set()
    for i, n_i in enumerate(sizes):
        if n_i in seen:
            continue
        seen.add(n_i)
        # cluster i gets one more symbol, x (its last); P lacks it, P′ has it
        with_x = [(1,) * n + ((1,) if j == i else ()) for j, n in enumerate(sizes)]
        without = [(*f[:-1], 0) if j == i else f for j, f in enumerate(with_x)]
        group_of = tuple(j for j, f in enumerate(with_x) for _ in f)
        x = sum(len(f) for f in with_x[: i + 1]) - 1
        symbols = tuple(
            f"c{j + 1}.{t + 1}" if j != i or t < n_i else "x"
            for j, f in enumerate(with_x)
            for t in range(len(f))
        )
        p, pp = dist(without), dist(with_x)
        label = f"P = clusters {sizes} vs P′ = P + x in a cluster of {n_i}"
        insts.append(
            V.Instance(label=label, symbols=symbols, caps=(1,) * records, p=p, p_prime=pp)
        )
        if pairs == "all":
            insts += V.value_instances(label, group_of, x, p, pp, top, limit)
    return V.Plan(instances=tuple(insts), sizes=V.sizes_for(rel, [top]), relations=rel)


SCHEME = Scheme(
    name="cluster",
    summary="ℓ of k clusters chosen without replacement, whole clusters (or Poisson within)",
    params=Params,
    fields=FIELDS,
    mechanism_relation=RELATION,
    guarantees=(Neighbours.ADD_REMOVE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={"clusters": {"count": 100, "size": 20}, "chosen": 10},
    parse_params=parse_params,
    verify_plan=_verify_hook,
)
