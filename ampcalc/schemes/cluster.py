"""Cluster sampling: ℓ of k clusters chosen uniformly without replacement, whole
clusters taken (optionally a Poisson sample inside the chosen clusters).

Basis: Bun et al., Theorems 5.1 (lower) and 5.2 (upper), §5.2 remark on
multi-stage designs; spec §6.1–§6.3. The lesson: cluster samples often do not
amplify at all, however small ℓ/k is, because one cluster's output reveals whether
it was sampled.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.fields import check_keys, describe, is_whole
from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.model.references import (
    BBG18,
    BUN_2020_WP,
    BUN_2022,
    CLUSTER_DOCS,
    Citation,
    cite,
    derivation,
)
from ampcalc.schemes import _cluster_remarks as remarks
from ampcalc.schemes import _count_witness as cw
from ampcalc.schemes._cluster_kernels import (
    ClusterSizes,
    ratio_lower,
    ratio_lower_at,
    ratio_upper,
    read_clusters,
)
from ampcalc.schemes._cluster_two_stage import (
    SrsStage,
    poisson_count_lower,
    poisson_delta_prime,
    poisson_upper,
    srs_stage,
    srswor_count_lower,
    srswor_delta_prime,
    srswor_replace_lower,
    srswor_upper,
)
from ampcalc.schemes.assembly import (
    OfPair,
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
        within_sample: m of a simple random sample without replacement inside each
            chosen cluster (all of a cluster of at most m records), or None.
    """

    clusters: ClusterSizes
    chosen: int
    within_rate: float | None = None
    within_sample: int | None = None


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
        doc="optional second stage: {scheme: poisson, rate: r} or {scheme: srswor, sample: m}",
    ),
)


#: the second stages ``within:`` covers, with the key each needs
WITHIN_SCHEMES = {"poisson": "rate", "srswor": "sample"}
WITHIN_FORMS = "{scheme: poisson, rate: r} or {scheme: srswor, sample: m}"


def parse_within(raw: Any, reader: Any, path: str) -> tuple[float | None, int | None]:
    """The ``within:`` block: a Poisson second stage (rate r) or a simple random sample
    of m records inside each chosen cluster. Returns (r, m), at most one of them set."""
    if raw is None:
        return None, None
    if not isinstance(raw, dict):
        raise reader.error(path, f"expected {WITHIN_FORMS}, got {describe(raw)}")
    check_keys(raw, ("scheme", "rate", "sample"), reader, path, "within")
    if "scheme" not in raw:
        guess = next((s for s, key in WITHIN_SCHEMES.items() if key in raw), None)
        raise reader.error(
            path,
            f"`within` needs `scheme:` (the second stage inside the chosen clusters); "
            f"expected {WITHIN_FORMS}",
            container=raw,
            hint=f"did you mean `scheme: {guess}`?" if guess else None,
        )
    scheme = raw["scheme"]
    if not isinstance(scheme, str) or scheme not in WITHIN_SCHEMES:
        close = difflib.get_close_matches(str(scheme)[:100], list(WITHIN_SCHEMES), n=1)
        raise reader.error(
            f"{path}.scheme",
            f"within-cluster scheme {describe(scheme)} is not supported; expected `poisson` "
            "(each record of a chosen cluster kept with probability r) or `srswor` (m "
            f"records of each chosen cluster without replacement): {WITHIN_FORMS}",
            container=raw,
            key="scheme",
            hint=f"did you mean '{close[0]}'?" if close else None,
        )
    need = WITHIN_SCHEMES[scheme]
    other = next(key for key in WITHIN_SCHEMES.values() if key != need)
    if other in raw:
        raise reader.error(
            f"{path}.{other}",
            f"`{other}` does not belong to `scheme: {scheme}`; expected "
            f"{{scheme: {scheme}, {need}: ...}}",
            container=raw,
            key=other,
        )
    value = raw.get(need)
    if scheme == "srswor":
        if not is_whole(value, 1):
            raise reader.error(
                f"{path}.sample",
                f"expected the number m >= 1 of records sampled in each chosen cluster, "
                f"got {describe(value)}",
                container=raw,
                key="sample" if "sample" in raw else None,
            )
        assert value is not None  # is_whole holds
        return None, int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise reader.error(
            f"{path}.rate",
            f"expected a number in (0, 1], got {describe(value)}",
            container=raw,
            key="rate" if "rate" in raw else None,
        )
    return float(value), None


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Read the ``clusters`` block (inline, ``{count, size}`` or a file) and ``within``."""
    clusters = read_clusters(values["clusters"], reader, "sampling.clusters")
    rate, sample = parse_within(values.get("within"), reader, "sampling.within")
    return Params(
        clusters=clusters, chosen=values["chosen"], within_rate=rate, within_sample=sample
    )


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


def upper_epsilon(eps: np.ndarray, *, fraction: float, k_sum: float) -> np.ndarray:
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
    Formula: ε′ = B(ℓ/k, K, ε) = log(1 + A(e^ε − 1)/(A + (1 − A)e^{−Kε})). Two-stage
        designs: ``poisson_upper``, ``srswor_upper``.
    Tightness: tight when all clusters have the same size (Theorem 5.1 meets it).
    Numerics: log1p/expm1 form (no cancellation at ε = 1e-12), logaddexp difference
        where ε or Kε exceeds 700; rounded up.
    """
    return ratio_upper(fraction, k_sum, eps)


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
    eps: np.ndarray, delta: np.ndarray, *, fraction: float, k_sum: float
) -> np.ndarray:
    """δ′ of the whole-cluster design for M (ε, δ)-DP under add-remove (``delta_prime_of``)."""
    return delta_prime_of(eps, delta, fraction=fraction, k_sum=k_sum)


def reduced_lower(
    e_d: np.ndarray, e_r: np.ndarray, *, fraction: float, stage: SrsStage
) -> np.ndarray:
    """Lower bound on ε′ for whole clusters when M's ε_R is below 2ε_D (e.g. ``both``).

    Witness: Pr[M(S) = 1] = c·exp(ε_D·#(S ∩ C_i) − β·Σ_{j≠i} w_j #(S ∩ C_j)), i the largest
        cluster, x added to it, β = ε_R − ε_D: for ε_R >= ε_D, w_j = n_min/n_j (each other
        cluster then contributes e^{−β n_min}); for ε_R < ε_D, w_j = 1 (the largest other
        cluster n₍₂₎ bounds the mixture). ε_D-DP under add-remove and ε_R-DP under
        replace-one (a record moved out of C_i changes the score by ε_D + βw_j <= ε_R).
        Its loss is B with ε₁ = ε_D and d = n₍₁₎ε_D + n_min(ε_R − ε_D), resp.
        n₍₁₎ε_D − n₍₂₎(ε_D − ε_R) (ampcalc derivations, §6.4); ε_R = 2ε_D gives Theorem 5.1.
        ``stage``: whole clusters (m above every size): its ``swap`` is (n₍₁₎, n₍₂₎), its
        ``fewest`` n_min. Rounded down.
    """
    largest, smallest = stage.swap, stage.fewest
    e_d = np.asarray(e_d, dtype=float)
    e_r = np.asarray(e_r, dtype=float)
    beta = e_r - e_d  # exact (Sterbenz: ε_D/2 <= ε_R <= 2ε_D), else one rounding
    other = np.where(beta >= 0.0, smallest, largest[1])
    d = largest[0] * e_d + other * beta
    slack = 4.0 * 2.0**-52 * (largest[0] * e_d + other * np.abs(beta))
    return ratio_lower_at(fraction, e_d, numeric.round_down(d - slack))


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


def _srswor_delta_prime(mechanism: Mechanism | None) -> OfPair | None:
    """δ′ of a fixed number within (or of whole clusters under a replacing swap) from M's
    δ and replace-one δ rule; ``None`` when M is not given (the theorem's default δ′)."""
    if mechanism is None:
        return None
    return OfPair(
        functools.partial(
            srswor_delta_prime,
            delta=mechanism.delta,
            delta_replace_one=mechanism.delta_replace_one_of,
        )
    )


def _cluster_fraction(params: Params) -> float:
    """A = ℓ/k, the share of clusters chosen."""
    return params.chosen / params.clusters.count


def _record_share(params: Params) -> float:
    """The largest inclusion probability of one record: ℓ/k for whole clusters, (ℓ/k)·r
    with a Poisson second stage, (ℓ/k)·min(1, m/n_min) with m records drawn in each chosen
    cluster (a record of the smallest cluster is the likeliest to be taken)."""
    frac = _cluster_fraction(params)
    if params.within_rate is not None:
        return frac * params.within_rate
    if params.within_sample is not None:
        return frac * min(1.0, params.within_sample / max(1, params.clusters.smallest))
    return frac


#: whole clusters: Theorems 5.2 and 5.1; two stages add the §5.2 remark on multi-stage designs
TWO_STAGE_BASIS: tuple[Citation, ...] = (*BASIS, cite(BUN_2022, "§5.2 remark"))


def _with_delta_basis(basis: tuple[Citation, ...], delta: bool) -> tuple[Citation, ...]:
    """``basis``, and the derivation of δ′ when M's δ > 0."""
    return (*basis, DELTA_BASIS) if delta else basis


def _record_fields(params: Params) -> dict[str, Any]:
    """The theorem record's fields every form of it shares: name, relations, conditions,
    refusal."""
    return {
        "name": "Theorem 5.2",
        "relation": RELATION,
        "guarantee": Neighbours.ADD_REMOVE,
        "conditions": conditions(params),
        "tight": None,  # ``details.tight`` is the family's
        "refusals": (Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY),),
    }


def _theorem_5_1_witness(params: Params) -> Witness:
    """Theorem 5.1's count witness, Σx + Lap(1/ε), at K = n₍₁₎ + n_min."""
    n1 = params.clusters.largest[0]
    return Witness(
        bound=functools.partial(
            lower_epsilon,
            fraction=_cluster_fraction(params),
            k_sum=n1 + params.clusters.smallest,
        ),
        replace_one_ratio=WITNESS_RATIO,
    )


def _whole_clusters(params: Params, *, delta: bool) -> Theorem:
    """Whole clusters: Theorem 5.2's upper bound B(ℓ/k, n₍₁₎ + n₍₂₎, ε) and Theorem 5.1's
    witness."""
    n1, n2 = params.clusters.largest
    return Theorem(
        basis=_with_delta_basis(BASIS, delta),
        upper=upper_epsilon,
        witnesses=(_theorem_5_1_witness(params),),
        delta_prime=delta_prime,
        params={"fraction": _cluster_fraction(params), "k_sum": n1 + n2},
        **_record_fields(params),
    )


def _whole_clusters_replacing(
    params: Params, single: Witness, *, delta: bool, mechanism: Mechanism | None
) -> Theorem:
    """Whole clusters with ε_R < 2ε: a swap replaces records (ε_R each) instead of
    removing and adding them (2ε); derivations §6.1 with a cluster taken whole, and the
    §6.4 witness."""
    stage = srs_stage(params.clusters, params.clusters.largest[0] + 1)
    whole = (*BASIS, derivation("§6.1"), derivation("§6.4"))
    return Theorem(
        basis=_with_delta_basis(whole, delta),
        upper=OfPair(srswor_upper),
        lower=OfPair(reduced_lower),
        witnesses=(_theorem_5_1_witness(params), single),
        delta_prime=_srswor_delta_prime(mechanism),
        params={"fraction": _cluster_fraction(params), "stage": stage},
        **_record_fields(params),
    )


def _poisson_within(params: Params, single: Witness) -> Theorem:
    """A Poisson second stage (rate r) inside the chosen clusters: derivations §6.1–§6.2."""
    cl, r = params.clusters, params.within_rate
    assert r is not None
    frac = _cluster_fraction(params)
    n1, n2 = cl.largest
    count = Witness(
        bound=functools.partial(
            poisson_count_lower, fraction=frac, largest=n1, smallest=cl.smallest, rate=r
        ),
        replace_one_ratio=WITNESS_RATIO,
    )
    return Theorem(
        basis=(*TWO_STAGE_BASIS, derivation("§6.1"), derivation("§6.2")),
        upper=poisson_upper,
        witnesses=(count, single),
        delta_prime=poisson_delta_prime,
        params={"fraction": frac, "largest": (n1, n2), "rate": r},
        **_record_fields(params),
    )


def _srswor_within(params: Params, single: Witness, mechanism: Mechanism | None) -> Theorem:
    """m records drawn without replacement inside each chosen cluster: derivations §6.1
    and §6.3, with the simple random sample's own bound (Theorem 2.2; BBG18)."""
    assert params.within_sample is not None
    frac = _cluster_fraction(params)
    stage = srs_stage(params.clusters, params.within_sample)
    count = Witness(
        bound=functools.partial(srswor_count_lower, fraction=frac, stage=stage),
        replace_one_ratio=WITNESS_RATIO,
    )
    return Theorem(
        basis=(
            *TWO_STAGE_BASIS,
            cite(BUN_2022, "Theorem 2.2"),
            cite(BBG18),
            derivation("§6.1"),
            derivation("§6.3"),
        ),
        upper=OfPair(srswor_upper),
        lower=OfPair(srswor_replace_lower),
        witnesses=(count, single),
        delta_prime=_srswor_delta_prime(mechanism),
        params={"fraction": frac, "stage": stage},
        **_record_fields(params),
    )


def theorem(
    params: Params,
    *,
    reduced: bool,
    delta: bool,
    mechanism: Mechanism | None = None,
) -> Theorem:
    """Theorems 5.2 (upper) and 5.1 (lower) for this design, as data (in M's add-remove ε);
    for two-stage designs their extension (ampcalc derivations, §6).

    ``reduced``: M's declared ε_R is below 2ε, so the count witnesses (Theorem 5.1's and
    the two-stage ones) run at min(ε, ε_R/2) and the single-inclusion witness joins them.
    ``delta``: M's δ > 0 (the δ′ derivation is cited). ``mechanism``: M, whose δ and
    replace-one δ rule the fixed-size second stage's δ′ uses.
    """
    single = Witness(
        bound=functools.partial(single_inclusion_lower, inclusion=_record_share(params))
    )
    if params.within_rate is not None:
        return _poisson_within(params, single)
    if params.within_sample is not None:
        return _srswor_within(params, single, mechanism)
    if reduced:
        return _whole_clusters_replacing(params, single, delta=delta, mechanism=mechanism)
    return _whole_clusters(params, delta=delta)


def _upper_at(thm: Theorem, mechanism: Mechanism, eps0: float) -> float:
    """The theorem's upper bound at the declared ε (for the remarks)."""
    bound = thm.bind().upper
    e = np.asarray(eps0)
    if isinstance(bound, OfPair):
        return float(bound.formula(e, mechanism.epsilon_replace_one_of(e)))
    assert bound is not None
    return float(bound(e))


def _two_stage(params: Params) -> bool:
    """Whether a second stage samples inside the chosen clusters (``within:``)."""
    return params.within_rate is not None or params.within_sample is not None


def _is_tight(params: Params, mechanism: Mechanism, reduced: bool) -> bool:
    """Whether the upper and lower bounds meet. Equal clusters: the count witness meets
    the upper bound (whole clusters: Theorems 5.1/5.2; Poisson within: derivations §6.2);
    not under a reduced ε_R. Whole clusters with ε_R < 2ε (derivations §6.4): the bounds
    meet under `both` (ε_R = ε) and, for ε_R >= ε, when n_min = n₍₂₎."""
    cl = params.clusters
    ratio = mechanism.replace_one_ratio()
    return bool(
        (cl.equal and params.within_sample is None and not reduced)
        or (
            not _two_stage(params)
            and reduced
            and (ratio == 1.0 or (ratio > 1.0 and cl.smallest == cl.largest[1]))
        )
    )


def _design_details(params: Params, *, tight: bool, eps0: float) -> dict[str, Any]:
    """``details``: the design's numbers, and the working paper's count witness for two
    whole clusters."""
    cl = params.clusters
    n1, n2 = cl.largest
    whole = not _two_stage(params)
    details: dict[str, Any] = {
        "clusters": cl.count,
        "chosen": params.chosen,
        "cluster_fraction": _cluster_fraction(params),
        "largest_clusters": [n1, n2],
        "smallest_cluster": cl.smallest,
        "population": cl.total,
        "K_upper": n1 + n2,
        "K_lower": n1 + cl.smallest if whole else None,
        "tight": tight,
        "sizes_source": cl.source,
    }
    if params.within_rate is not None:
        details["within_rate"] = params.within_rate
    if params.within_sample is not None:
        details["within_sample"] = params.within_sample
    if cl.count == 2 and whole:
        details["count_witness"] = _count_witness_details(cl.smallest, n1, eps0)
    return details


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one cluster design (see the bound functions for the theorems); the
    remarks describe the declared design at the declared ε (add-remove)."""
    reduced = witness_reduced(mechanism, WITNESS_RATIO)
    thm = theorem(params, reduced=reduced, delta=mechanism.delta > 0, mechanism=mechanism)
    tight = _is_tight(params, mechanism, reduced)
    eps0 = float(mechanism.epsilon)
    share = _record_share(params)
    srs = float(srs_same_fraction(np.asarray(eps0), fraction=share))
    up0 = _upper_at(thm, mechanism, eps0)
    two = _two_stage(params)
    r, m = params.within_rate, params.within_sample
    more_conditions = remarks.second_stage_conditions(r, m)
    warnings: list[str] = []
    notes = [remarks.proof_note(two)]
    if reduced:
        eps_r = mechanism.effective_epsilon_replace_one()
        notes.append(remarks.replacing_swap_note(two, eps_r))
    cl = params.clusters
    if tight:
        more_conditions.append(
            f"all {cl.count} clusters have size {cl.largest[0]}: upper = lower (tight)"
        )
    if up0 >= eps0 * (1 - 1e-9):
        warnings.append(
            remarks.no_amplification_warning(
                clusters=cl.count,
                chosen=params.chosen,
                largest=cl.largest,
                eps0=eps0,
                share=share,
                srs=srs,
            )
        )
    else:
        notes.append(remarks.srs_comparison_note(eps0, share, srs, up0))
    if mechanism.delta > 0:
        more_conditions.append(remarks.delta_condition(mechanism.delta, r))
        k_upper = cl.largest[0] + cl.largest[1]
        notes.append(
            remarks.delta_note(
                two_stage=two, reduced=reduced, poisson=r is not None, k_upper=k_upper
            )
        )
    return assemble(
        thm,
        mechanism,
        details=_design_details(params, tight=tight, eps0=eps0),
        details_at=functools.partial(_srs_details, fraction=share),
        warnings=tuple(warnings),
        notes=tuple(notes),
        conditions=tuple(more_conditions),
        invert_details=functools.partial(
            _max_cluster_size_details,
            fraction=_cluster_fraction(params),
            eps0=eps0,
            within=two,
        ),
    )


def _count_witness_details(a: int, b: int, eps0: float) -> dict[str, Any]:
    """Two clusters (sizes a <= b): the count witness of the working paper at ε."""
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


def _cluster_sample(
    present: tuple[tuple[int, ...], ...],
    subsets: list[tuple[int, ...]],
    rate: float | None,
    sample: int | None,
) -> dict[Any, float]:
    """The exact sample of clusters given as presence flags: a uniform choice among
    ``subsets``, then every record of a chosen cluster (or each kept w.p. ``rate``, or
    ``sample`` of them drawn without replacement)."""
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    def within(flags: tuple[int, ...]) -> dict[Any, float]:
        if rate is not None:
            return V.poisson_distribution(flags, rate)
        if sample is not None and sum(flags) > sample:
            return V.srswor_distribution(flags, sample)
        return {flags: 1.0}

    parts = []
    for chosen in subsets:
        per = [
            within(flags) if j in chosen else {(0,) * len(flags): 1.0}
            for j, flags in enumerate(present)
        ]
        parts.append((1.0 / len(subsets), V.product_distribution(per)))
    return V.mixture_distribution(parts)


def _verify_hook(
    params: Params, mechanism: Mechanism, pairs: str = "default", limit: int = 5000
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify`` (see ampcalc.verify).

    Every cluster's records are distinct symbols; the pair is P vs P′ = P with a record x
    added to cluster i, for one cluster i of each distinct size (Theorems 5.1/5.2
    maximise over i). P's sample: a uniform ℓ-subset of clusters, every record of a chosen
    cluster taken (or kept w.p. r, or m of them drawn without replacement, with
    ``within``). With m the removal pairs join (P′ the stated population, x one of cluster
    i's records): x's inclusion m/n_i is larger there. ``all`` adds the same pairs seen
    over a two-value universe.
    """
    from ampcalc.schemes import exact as V  # lazy: start-up (bound)

    cl = params.clusters
    V.check_distinct_domain(cl.total + 1, 1, limit)  # before listing the sizes
    if cl.sizes is None:
        sizes = [cl.largest[0]] * cl.count  # {count: k, size: n}: equal sizes
    else:
        sizes = [int(x) for x in cl.sizes]
    k, ell, r, m = cl.count, params.chosen, params.within_rate, params.within_sample
    V.require_pure(mechanism)
    rel = V.relations_of(mechanism)
    top = sum(sorted(sizes)[-ell:]) + 1
    if m is not None:
        top = min(top, ell * m)
    V.check_distinct_domain(sum(sizes) + 1, top, limit)
    subsets = list(itertools.combinations(range(k), ell))
    if len(subsets) > limit:
        raise ConditionError(f"too large to verify: {len(subsets)} cluster subsets")

    insts: list[Any] = []
    for i, n_i in enumerate(sizes):
        if n_i in sizes[:i]:
            continue  # clusters of equal size are exchangeable
        # P′ = P + x in cluster i; with a fixed-size second stage also P′ = the stated
        # population, x one of cluster i's records (the removal: a smaller cluster without x)
        for n_p in [n_i] + ([n_i - 1] if m is not None and n_i >= 1 else []):
            base = [n_p if j == i else n for j, n in enumerate(sizes)]
            pair = V.record_added_to_group(base, i, "c")
            p = _cluster_sample(pair.without, subsets, r, m)
            pp = _cluster_sample(pair.with_x, subsets, r, m)
            label = (
                f"P = clusters {base} vs P′ = P + x in a cluster of {n_p}"
                if n_p == n_i
                else f"P′ = clusters {sizes} with x in a cluster of {n_i} vs P = P′ − x"
            )
            insts.append(V.distinct_instance(label, pair.symbols, p, pp))
            if pairs == "all":
                insts += V.value_instances(label, pair.group_of, pair.x, p, pp, top, limit)
    return V.plan_of(insts, rel, [top])


SCHEME = Scheme(
    name="cluster",
    summary="ℓ of k clusters chosen without replacement, whole clusters (or Poisson within)",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.ADD_REMOVE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={"clusters": {"count": 100, "size": 20}, "chosen": 10},
    parse_params=parse_params,
    verify_plan=_verify_hook,
)
