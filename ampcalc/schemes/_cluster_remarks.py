"""The words of a cluster design's analysis: the conditions a second stage or M's δ adds,
the notes on the proofs and on M's relations, and the no-amplification warning.

Each takes the numbers it states (the family module, ``cluster``, reads them off the
design and M); nothing here computes a bound. Basis: Bun et al., Theorems 5.1/5.2 and
App. D; ampcalc derivations §6.
"""

from __future__ import annotations

from ampcalc.model.references import BUN_2022, CLUSTER_DOCS, DERIVATIONS


def proof_note(two_stage: bool) -> str:
    """How far the proof behind the upper bound goes: the gap in Theorem 5.2's proof for
    whole clusters, or the two-stage derivation."""
    if not two_stage:
        return (
            f"Theorem 5.2 ({BUN_2022}) is implemented as stated; its App. D proof "
            "has an off-by-one in the swap distance and bounds one direction only (an exact "
            f"LP check on small instances supports the stated bound; {DERIVATIONS}, §2.4)."
        )
    return (
        f"two-stage design: Theorem 5.2's argument ({BUN_2022}, App. D) with the second "
        "stage averaged into its swap step, proved in both directions for (ε, δ) "
        f"({DERIVATIONS}, §6.1)."
    )


def second_stage_conditions(rate: float | None, sample: int | None) -> list[str]:
    """The condition a second stage (Poisson rate r, or m records drawn in each chosen
    cluster) adds, with the loss it is derived with; none for whole clusters."""
    if rate is not None:
        return [
            f"second stage: Poisson with rate r = {rate:g} inside the chosen clusters: x is "
            "kept with probability r given its cluster, ε₁ = A(r, ε); swapping one chosen "
            "cluster's Poisson sample for another's costs d = n₍₁₎A(r, ε) + n₍₂₎·(−log(1 − "
            f"r(1 − e^{{−ε}}))) ({DERIVATIONS}, §6.2)"
        ]
    if sample is not None:
        return [
            f"second stage: m = {sample} records drawn without replacement inside each "
            f"chosen cluster (all of a cluster of at most {sample}); M ε-DP under add-remove "
            "and ε_R-DP under replace-one: an added record takes a sampled record's place "
            f"(ε₁ = A(m/n, ε_R)) ({DERIVATIONS}, §6.3)"
        ]
    return []


def replacing_swap_note(two_stage: bool, epsilon_replace_one: float) -> str:
    """What a declared ε_R below 2ε changes: the swap's cost for whole clusters, the count
    witness's ε for two stages."""
    eps_r = epsilon_replace_one
    if not two_stage:
        return (
            f"M is declared ε-DP under replace-one too (ε_R = {eps_r:g} < 2ε): swapping one "
            "chosen cluster for another replaces records (ε_R each) instead of removing and "
            "adding them, so the upper bound uses d = n₍₁₎ε + n₍₂₎·max(0, ε_R − ε) in place "
            "of (n₍₁₎ + n₍₂₎)ε, and a count of x's cluster minus (ε_R − ε)·(the others) is a "
            "witness with n_min in place of n₍₂₎ (an exact LP check found Theorem 5.1's "
            f"B(ℓ/k, n₍₁₎ + n_min, ε) above the true worst case under `both`; {DERIVATIONS}, "
            "§6.4)."
        )
    return (
        f"M is declared ε-DP under replace-one too (ε_R = {eps_r:g} < 2ε): the count witness "
        "(a count over x's cluster minus the others) is only 2ε-DP under replace-one, so "
        "the lower bound runs it at min(ε, ε_R/2), or is another witness where larger."
    )


def no_amplification_warning(
    *,
    clusters: int,
    chosen: int,
    largest: tuple[int, int],
    eps0: float,
    share: float,
    srs: float,
) -> str:
    """The design's lesson when the bound is not below M's ε at ``eps0``: one cluster
    gives itself away, while a random sample of the same ``share`` of records would give
    ``srs``."""
    n1, n2 = largest
    return (
        f"no amplification at ε = {eps0:g}: one cluster's output reveals whether it was "
        f"sampled (two largest clusters {n1} + {n2} records), although only {chosen} of "
        f"{clusters} clusters ({chosen / clusters:.3g}) are chosen; a simple random sample "
        f"of the same expected share of records ({share:.3g}) would give {srs:.6g}."
    )


def srs_comparison_note(eps0: float, share: float, srs: float, upper: float) -> str:
    """What a random sample of the same share of records would give, beside the cluster
    bound ``upper``, at ``eps0``."""
    return (
        f"a simple random/Poisson sample of the same expected share of records "
        f"({share:.3g}) would give "
        f"ε′ = {srs:.6g} at ε = {eps0:g} (details.srs_same_fraction), against the cluster "
        f"bound {upper:.6g}."
    )


def delta_condition(delta: float, rate: float | None) -> str:
    """M's δ, and the δ of x's cluster stage under a Poisson second stage."""
    return f"M is (ε, δ)-DP under add-remove with δ = {delta:g}" + (
        "" if rate is None else f" (x's cluster stage: δ₁ = rδ = {rate * delta:g})"
    )


def delta_note(*, two_stage: bool, reduced: bool, poisson: bool, k_upper: int) -> str:
    """The δ′ paired with the ε′ shown, for each form of the theorem: whole clusters
    (K = n₍₁₎ + n₍₂₎ = ``k_upper``), whole clusters under a replacing swap (``reduced``),
    a Poisson or a fixed-size second stage."""
    if not two_stage and not reduced:
        return (
            "M's δ > 0: δ′ = Aδ/(A + (1 − A)e^{−Kε}) = δ(e^{ε′} − 1)/(e^ε − 1) with A = "
            f"ℓ/k, K = {k_upper}, paired with the ε′ shown (derived from the Theorem 5.2 "
            f"argument with group privacy for (ε, δ); {CLUSTER_DOCS})."
        )
    if not two_stage:
        return (
            "M's δ > 0: δ′ = Aδ + (e^{ε′} − 1)(1 − A)ρ(1 − e^{−d}) with A = ℓ/k, ρ = "
            "max(δ/(e^ε − 1), δ_R/(e^{ε_R} − 1)) and the swap loss d = n₍₁₎ε + "
            "n₍₂₎·max(0, ε_R − ε), paired with the ε′ shown (for ε_R = ε: Aδ/(A + (1 − "
            f"A)e^{{−d}})); {DERIVATIONS}, §6.1)."
        )
    if poisson:
        return (
            "M's δ > 0: δ′ = Arδ/(A + (1 − A)e^{−d}) with A = ℓ/k and the swap loss d, "
            f"paired with the ε′ shown ({DERIVATIONS}, §6.2)."
        )
    return (
        "M's δ > 0: δ′ = Aδ₁ + (e^{ε′} − 1)(1 − A)ρ(1 − e^{−d}) with A = ℓ/k, δ₁ the "
        "δ of x's cluster stage (m/n·δ_R, or δ for a cluster taken whole), ρ = "
        "max(δ/(e^ε − 1), δ_R/(e^{ε_R} − 1)) and the swap loss d, paired with the ε′ "
        f"shown ({DERIVATIONS}, §6.3)."
    )
