"""Two-stage cluster designs: the chosen clusters' second stage (Poisson within, or a
fixed number m within each chosen cluster), as the swap step of the cluster theorem
(ampcalc derivations, §6; the Theorem 5.2 argument of Bun et al., Appendix D)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.schemes._cluster_kernels import (
    ClusterSizes,
    ratio_lower_at,
    ratio_upper_at,
)

# The swap step (ampcalc derivations, §6):
#
# x's cluster i is chosen with probability A = ℓ/k. Given that, the within-cluster stage
# makes the conditional laws on P and P′ = P + x (ε₁, δ₁)-close; the swap of one other
# chosen cluster j for i, inside P, moves the sample by a loss d (group privacy over the
# records the two within-samples differ by, averaged over the second stage). Then
# ε′ = log(1 + A(e^{ε₁} − 1)/(A + (1 − A)e^{−d})) and δ′ = Aδ₁ + (e^{ε′} − 1)(1 − A)e^{−d}δ_d,
# δ_d = ρ(e^d − 1) (``ratio_upper_at``). Whole clusters: ε₁ = ε, d = (n_i + n_j)ε (Theorem 5.2).


def _poisson_losses(eps: np.ndarray, rate: float, *, up: bool) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) = (A(r, ε), −log(1 − r(1 − e^{−ε}))): the log of E e^{ε·Bin(1, r)} and of
    E e^{−ε·Bin(1, r)}, per record of a Poisson(r) stage; rounded up (``up``) or down."""
    if up:
        return numeric.amplification_upper(rate, eps), numeric.round_up(
            numeric.neg_log1m(rate, eps)
        )
    return numeric.amplification_lower(rate, eps), numeric.round_down(numeric.neg_log1m(rate, eps))


def poisson_upper(
    eps: np.ndarray, *, fraction: float, largest: tuple[int, int], rate: float
) -> np.ndarray:
    """Upper bound on ε′ for ℓ of k clusters, then Poisson(r) inside the chosen ones.

    Basis: ampcalc derivations, §6.2 (the Theorem 5.2 argument of Bun et al., App. D,
        with the second stage averaged in the swap step; §5.2 remark made precise).
    Neighbours: M ε-DP under add-remove; ε′ under add-remove inside a fixed cluster.
    Formula: ε₁ = a = A(r, ε) (x kept with probability r), d = n₍₁₎a + n₍₂₎b with
        b = −log(1 − r(1 − e^{−ε})): adding the n_i records of i's Poisson sample
        multiplies a probability by at most E e^{ε·Bin(n_i, r)} = e^{n_i a}, removing j's
        by at least e^{−n_j b}. ε′ = log(1 + A(e^a − 1)/(A + (1 − A)e^{−d})), never above
        B(ℓ/k, n₍₁₎ + n₍₂₎, A(r, ε)) (b <= a).
    Tightness: equal to the count witness (``poisson_count_lower``) for equal sizes.
    Numerics: a, b, d rounded up, then the kernel rounded up.
    """
    a, b = _poisson_losses(eps, rate, up=True)
    d = numeric.round_up(largest[0] * a + largest[1] * b)
    return ratio_upper_at(fraction, a, d)


def poisson_count_lower(
    eps: np.ndarray, *, fraction: float, largest: int, smallest: int, rate: float
) -> np.ndarray:
    """Lower bound on ε′ for the Poisson two-stage design: the count witness.

    Witness: Pr[M(S) = 1] = c·exp(ε(#(S ∩ C_i) − Σ_{j≠i} w_j #(S ∩ C_j))), i the largest
        cluster, x added to it, w_j ∈ [0, 1] chosen so that every other cluster's Poisson
        sample has E e^{−εw_j·#} = e^{−n_min b} (ε-DP under add-remove for c small, 2ε under
        replace-one). Its loss is log(1 + A(e^a − 1)/(A + (1 − A)e^{−(n₍₁₎a + n_min b)}))
        (ampcalc derivations, §6.2). Rounded down.
    """
    a, b = _poisson_losses(eps, rate, up=False)
    d = numeric.round_down(largest * a + smallest * b)
    return ratio_lower_at(fraction, a, d)


def poisson_delta_prime(
    eps: np.ndarray,
    delta: np.ndarray,
    *,
    fraction: float,
    largest: tuple[int, int],
    rate: float,
) -> np.ndarray:
    """δ′ paired with ``poisson_upper`` for M (ε, δ)-DP under add-remove: Aδ₁/(A + (1 −
    A)e^{−d}) with δ₁ = rδ (ampcalc derivations, §6.2); rounded up, capped at 1."""
    a, b = _poisson_losses(eps, rate, up=True)
    d = numeric.round_up(largest[0] * a + largest[1] * b)
    with np.errstate(over="ignore", under="ignore"):
        den = numeric.round_down(fraction + (1.0 - fraction) * np.exp(-d))
    out: np.ndarray = np.minimum(numeric.round_up(fraction * rate * delta / den), 1.0)
    return out


@dataclass(frozen=True, slots=True)
class SrsStage:
    """What the bounds of a fixed-size second stage need from the cluster sizes.

    Attributes:
        sample: m, records drawn without replacement in each chosen cluster.
        whole: some cluster of x holds at most m records with x (taken whole: ε₁ = ε).
        tightest: the smallest size above m that x's cluster can have with x (n_i > m, or
            m + 1 when some n_i = m and x is added), or None: ε₁ = A(m/tightest, ε_R).
        swap: the two largest min(m, n_j): the largest within-samples a swap exchanges.
        fewest: min(m, n_min), the smallest within-sample of another cluster.
        witness_sizes: sizes of x's cluster without x tried by the lower bound.
    """

    sample: int
    whole: bool
    tightest: int | None
    swap: tuple[int, int]
    fewest: int
    witness_sizes: tuple[int, ...]


def srs_stage(clusters: ClusterSizes, m: int) -> SrsStage:
    """``SrsStage`` of the design: O(k) over the sizes (equal sizes without a list)."""
    sizes = (
        np.full(1, clusters.largest[0], dtype=np.int64)
        if clusters.sizes is None
        else np.asarray(clusters.sizes, dtype=np.int64)
    )
    above = sizes[sizes > m]
    tight = [int(above.min())] if above.size else []
    if np.any(sizes == m):
        tight.append(m + 1)
    below = sizes[sizes <= m]
    n1, n2 = clusters.largest
    cands = {clusters.smallest, n1}
    if above.size:
        cands.add(int(above.min()))
    if below.size:
        cands.add(int(below.max()))
    # x added to a cluster of n (P has n) or removed from one (P has n − 1)
    without = sorted({s for n in cands for s in (n, n - 1) if s >= 0})
    return SrsStage(
        sample=m,
        whole=bool(below.size),
        tightest=min(tight) if tight else None,
        swap=(min(m, n1), min(m, n2)),
        fewest=min(m, clusters.smallest),
        witness_sizes=tuple(without),
    )


def _srs_swap(e_d: np.ndarray, e_r: np.ndarray, stage: SrsStage) -> np.ndarray:
    """d >= the group loss of swapping two within-samples of t₁ >= t₂ records:
    min(t_i, t_j)ε_R + |t_i − t_j|ε_D <= t₁ε_D + t₂·max(0, ε_R − ε_D); rounded up."""
    t1, t2 = stage.swap
    return numeric.round_up(t1 * e_d + t2 * np.maximum(e_r - e_d, 0.0))


def _srs_sampled_swap(e_d: np.ndarray, e_r: np.ndarray, stage: SrsStage) -> np.ndarray:
    """d − ε_R (``_srs_swap``'s d), rounded up: the swap measured from x's within-sample,
    which is one replacement away from P's (ampcalc derivations, §6.3)."""
    t1, t2 = stage.swap
    up, down = np.maximum(e_r - e_d, 0.0), np.maximum(e_d - e_r, 0.0)  # exact (Sterbenz)
    val = (t1 - 1) * e_d + (t2 - 1) * up + down
    slack = 4.0 * 2.0**-52 * (t1 * e_d + (t2 + 1) * up + down)
    return numeric.round_up(val + slack)


def srswor_upper(
    e_d: np.ndarray, e_r: np.ndarray, *, fraction: float, stage: SrsStage
) -> np.ndarray:
    """Upper bound on ε′ for ℓ of k clusters, then m records without replacement inside
    each chosen cluster (all of a cluster of at most m).

    Basis: ampcalc derivations, §6.3 (the Theorem 5.2 argument of Bun et al., App. D, with
        the simple-random-sample coupling inside x's cluster: Bun et al., Theorem 2.2;
        with δ, Balle, Barthe, Gaboardi 2018).
    Neighbours: M ε_D-DP under add-remove and ε_R-DP under replace-one (ε_R <= 2ε_D); ε′
        under add-remove inside a fixed cluster.
    Formula: the larger of two cases for x's cluster. More than m records with x: P′'s
        within-sample is P's with one record replaced by x with probability a =
        m/(n + 1) (largest for the smallest such cluster); x's sample is ε_R from P's and
        d from any other cluster's, so ε′ = log(1 + A·a(e^{ε_R} − 1)/(A + (1 − A)e^{ε_R −
        d})). At most m with x (taken whole): B with ε₁ = ε_D, log(1 + A(e^{ε_D} − 1)/(A +
        (1 − A)e^{−d})). d = t₁ε_D + t₂·max(0, ε_R − ε_D) bounds the group loss of
        swapping two within-samples (t₁ >= t₂ the two largest min(m, n_j)).
    Tightness: m = 1 with equal clusters larger than 1: equal to the count witness.
    Numerics: every input of the kernel rounded up, then the kernel rounded up.
    """
    e_d = np.asarray(e_d, dtype=float)
    e_r = np.asarray(e_r, dtype=float)
    out = np.zeros(np.broadcast(e_d, e_r).shape)
    if stage.whole:
        out = np.maximum(out, ratio_upper_at(fraction, e_d, _srs_swap(e_d, e_r, stage)))
    if stage.tightest is not None:
        a = float(numeric.round_up(stage.sample / stage.tightest))
        e1 = numeric.amplification_upper(a, e_r)
        out = np.maximum(out, ratio_upper_at(fraction, e1, _srs_sampled_swap(e_d, e_r, stage)))
    return out


def srswor_replace_lower(
    e_d: np.ndarray, e_r: np.ndarray, *, fraction: float, stage: SrsStage
) -> np.ndarray:
    """Lower bound on ε′ for the fixed-size two-stage design when every cluster holds at
    least m records (every within-sample has m, the sample ℓm).

    Witness: Pr[M(S) = 1] = c·exp(−D(S, X)), D the path distance (an addition or removal
        costs ε_D, a replacement ε_R <= 2ε_D) from S to the samples of ℓm records holding x
        and m − 1 other records of x's cluster: DP under both relations by the triangle
        inequality. x's sample scores 0, P's sample of x's cluster −ε_R, a sample without
        x's cluster −mε_R, so its loss is log(1 + A·a(e^{ε_R} − 1)/(A + (1 − A)e^{−(m −
        1)ε_R})), a = m/n (ampcalc derivations, §6.3): ``srswor_upper`` when ε_R >= ε_D.
        Rounded down; 0 where the condition fails.
    """
    e_r = np.asarray(e_r, dtype=float)
    shape = np.broadcast(np.asarray(e_d), e_r).shape
    if stage.fewest < stage.sample or stage.tightest is None:
        return np.zeros(shape)
    a = float(numeric.round_down(stage.sample / stage.tightest))
    e1 = numeric.amplification_lower(a, e_r)
    d = numeric.round_down((stage.sample - 1) * e_r)
    return np.array(np.broadcast_to(ratio_lower_at(fraction, e1, d), shape), dtype=float)


def srswor_count_lower(eps: np.ndarray, *, fraction: float, stage: SrsStage) -> np.ndarray:
    """Lower bound on ε′ for the fixed-size two-stage design: a family of count witnesses.

    Witness: Pr[M(S) = 1] = c·exp(ε(#x + v·#(other records of x's cluster) − Σ_j w_j
        #(records of cluster j))), v ∈ [−1, 1], w_j = min(m, n_min)/min(m, n_j) (every
        other chosen cluster then contributes e^{−ε·min(m, n_min)}): ε-DP under add-remove
        for c small, 2ε-DP under replace-one. With s records of x's cluster in P, for
        s >= m (x kept with probability a = m/(s + 1)) its loss is
        log(1 + A·a(e^{ε(1 − v)} − 1)/(A + (1 − A)e^{−ε(t + vm)})), t = min(m, n_min);
        for s < m (taken whole) v = 1 gives B with d = ε(t + s) (ampcalc derivations,
        §6.3). The largest over s among the sizes tried and v on a grid of 65. Rounded down.
    """
    e = np.asarray(eps, dtype=float)[..., None]
    m, t = stage.sample, stage.fewest
    vs = np.arange(-32, 33) / 32.0  # dyadic: t + v·m and 1 − v are exact
    best = np.zeros(np.shape(eps))
    for s in stage.witness_sizes:
        if s + 1 <= m:
            e1, d = e[..., 0], numeric.round_down(e[..., 0] * (t + s))
            val = ratio_lower_at(fraction, e1, d)
        else:
            a = float(numeric.round_down(m / (s + 1)))
            e1 = numeric.amplification_lower(a, numeric.round_down(e * (1.0 - vs)))
            d = numeric.round_down(e * (t + vs * m))
            val = np.max(ratio_lower_at(fraction, e1, d), axis=-1)
        best = np.maximum(best, val)
    return best


def srswor_delta_prime(
    e_d: np.ndarray,
    e_r: np.ndarray,
    *,
    fraction: float,
    stage: SrsStage,
    delta: float,
    delta_replace_one: Any,
) -> np.ndarray:
    """δ′ paired with ``srswor_upper`` for M (ε_D, δ)-DP under add-remove and (ε_R, δ_R)
    under replace-one (ampcalc derivations, §6.3): for each case of x's cluster,
    δ′ = Aδ₁ + c(1 − A)ρ(1 − e^{−d}) with c = e^{ε′} − 1 of that case and δ₁ = δ (taken
    whole) or a·δ_R (sampled), ρ = max(δ/(e^{ε_D} − 1), δ_R/(e^{ε_R} − 1)) (group privacy
    along the swap: Σ_k δ_k e^{ε_1 + … + ε_{k−1}} <= ρ(e^d − 1)); the larger of the cases
    (each stays valid at the larger ε′). Rounded up, capped at 1."""
    e_d = np.asarray(e_d, dtype=float)
    e_r = np.asarray(e_r, dtype=float)
    d_r = np.asarray(delta_replace_one(e_d), dtype=float)
    d = _srs_swap(e_d, e_r, stage)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        rho = np.maximum(
            numeric.round_up(delta / numeric.round_down(np.expm1(e_d))),
            numeric.round_up(d_r / numeric.round_down(np.expm1(e_r))),
        )
        rho = np.where(np.isnan(rho), np.inf, rho)
        tail_unit = numeric.round_up((1.0 - fraction) * rho * -np.expm1(-d))
        tail_unit = np.where(rho * d == 0.0, 0.0, tail_unit)  # δ = 0, or no swap loss
        out = np.zeros(np.broadcast(e_d, e_r).shape)
        if stage.whole:
            c = np.expm1(ratio_upper_at(fraction, e_d, d))
            out = np.maximum(out, numeric.round_up(fraction * delta + c * tail_unit))
        if stage.tightest is not None:
            a = float(numeric.round_up(stage.sample / stage.tightest))
            e1 = numeric.amplification_upper(a, e_r)
            c = np.expm1(ratio_upper_at(fraction, e1, _srs_sampled_swap(e_d, e_r, stage)))
            out = np.maximum(out, numeric.round_up(fraction * a * d_r + c * tail_unit))
    capped: np.ndarray = np.minimum(np.where(np.isnan(out), 1.0, out), 1.0)
    return capped
