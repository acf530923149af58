"""PPS cluster sampling: ℓ clusters drawn with probability proportional to their size.

Basis: Bun et al., §6.2 (qualitative: large clusters break the secrecy of
the sample and are also the most likely to be drawn); spec §7.3 (derived lower bound
A(max π_i, ε), π_i the cluster inclusion probabilities). No upper bound: verdict
``no-guarantee``. One draw takes cluster i with probability |C_i|/n whatever the
algorithm; with ℓ > 1 draws π_i depends on it, which ``method:`` names as for ``pps``
(``pps``: unknown, ℓ/k since Σ π_i = ℓ; ``pips``/``sampford``: min(1, ℓ|C_i|/n) with
capping; ``successive``: draw by draw without replacement).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.references import BUN_2022, DERIVATIONS, cite
from ampcalc.schemes import pps
from ampcalc.schemes._cluster_kernels import ClusterSizes, capped_inclusion, read_clusters
from ampcalc.schemes._pps_designs import successive_inclusion
from ampcalc.schemes.assembly import Theorem, Witness, assemble
from ampcalc.schemes.base import Analysis, Field, Problem, Scheme

BASIS = (cite(BUN_2022, "§6.2"), cite(BUN_2022, "Proposition 6.1"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """ℓ clusters drawn with probability proportional to size; whole clusters taken.

    Attributes:
        clusters: the cluster sizes.
        chosen: ℓ, 1 <= ℓ < k (default 1: one cluster drawn with probability |C_i|/n).
        method: the algorithm for ℓ > 1 draws: ``pps`` (unknown), ``pips``,
            ``sampford`` or ``successive`` (see ``ampcalc.schemes.pps``).
    """

    clusters: ClusterSizes
    chosen: int = 1
    method: str = "pps"


FIELDS = (
    Field(
        name="clusters",
        kind="any",
        doc="cluster sizes: {sizes: [...]}, {count: k, size: n} or {file: sizes.csv}",
        required=True,
    ),
    Field(name="chosen", kind="int", doc="ℓ, clusters drawn (default 1)", default=1),
    Field(
        name="method",
        kind="choice",
        doc="the PPS algorithm for chosen > 1: pps (unknown), pips (exact πps), sampford, "
        "successive (draw by draw without replacement)",
        default="pps",
        choices=pps.FIXED_METHODS,
    ),
)


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Read the ``clusters`` block."""
    return Params(
        clusters=read_clusters(values["clusters"], reader, "sampling.clusters"),
        chosen=values["chosen"],
        method=values["method"],
    )


def check(params: Params) -> list[Problem]:
    """1 <= ℓ < k."""
    k, ell = params.clusters.count, params.chosen
    if not 1 <= ell < k:
        return [Problem(field="chosen", message=f"expected 1 <= chosen < k = {k}, got {ell}")]
    return []


def max_inclusion(cl: ClusterSizes, chosen: int, method: str = "pps") -> tuple[float, int]:
    """Largest cluster inclusion probability (a lower bound on it where it is not known)
    and the certainty clusters.

    ℓ = 1: |C_i|/n (one draw proportional to size). ℓ > 1 by ``method``: ``pps`` (the
    algorithm is unknown): ℓ/k, since Σ π_i = ℓ over k clusters; ``pips``/``sampford``:
    min(1, ℓ|C_i|/n) with iterative capping (spec §7.2 applied to clusters);
    ``successive``: ``successive_inclusion`` of the largest cluster (exact, or a sound
    lower bound on large designs), at least ℓ/k.
    """
    if cl.sizes is None:
        return chosen / cl.count, 0
    if chosen == 1:
        return cl.largest[0] / cl.total, 0
    if method == "pps":
        return chosen / cl.count, 0
    if method == "successive":
        sizes = np.asarray(cl.sizes, dtype=float)
        top, _ = successive_inclusion(sizes, chosen, int(np.argmax(sizes)))
        top = max(top, float(numeric.round_down(chosen / cl.count)))
        return top, int(top >= 1.0)
    a, c = capped_inclusion(cl.sizes, chosen)
    return float(a.max()), c


def lower_epsilon(eps: np.ndarray, *, max_inclusion: float) -> np.ndarray:
    """Lower bound on ε′ for PPS cluster sampling.

    Basis: spec §7.3 (derived from Bun et al., §6.1–§6.2, Proposition 6.1):
        a member of cluster C_i is in the sample with the cluster's inclusion probability.
    Neighbours: the single-inclusion witness is ε-DP under both relations.
    Formula: ε′ >= A(max_i π_i, ε), π_i = |C_i|/n for one cluster drawn.
    Tightness: no upper bound exists; rounded down.
    """
    return numeric.amplification_lower(max_inclusion, eps)


#: the exact Laplace witness groups clusters by size; above this many distinct sizes it
#: is skipped (it costs O(U²)) and ``details`` says so
WITNESS_MAX_DISTINCT = 5000


def _log_mixture(lw: np.ndarray, c: np.ndarray, z: np.ndarray, eps: float) -> np.ndarray:
    """log Σ_j w_j e^{−ε|z − c_j|} at each z (the Laplace mixture's log density, up to ε/2)."""
    t = lw[None, :] - eps * np.abs(z[:, None] - c[None, :])
    m = t.max(axis=1)
    out: np.ndarray = m + np.log(np.sum(np.exp(t - m[:, None]), axis=1))
    return out


def laplace_witness(
    sizes: np.ndarray, eps: float, counts: np.ndarray | None = None
) -> float | None:
    """Exact loss of the Laplace witness of spec §7.3 for one cluster drawn by PPS.

    Basis: spec §7.3 (derived; Bun et al., §6.2 gives no closed form).
    Witness: M = Σx + Lap(1/ε) (ε-DP under add-remove); cluster C_i all +1, the others all
        −1; P′ adds one +1 record to C_i. P's output is the mixture over clusters j
        (weight |C_j|/n) of Laplaces centred at +|C_i| or −|C_j|; P′'s has weights
        |C′_i|/(n + 1), |C_j|/(n + 1) and centre |C_i| + 1 for C_i.
    Formula: the largest |log f_P(z)/f_P′(z)| over every component location and both
        tails (between knots the ratio is a Möbius function of e^{2εz}, so monotone);
        maximised over i ∈ {largest, smallest non-empty cluster}.
    Numerics: logsumexp over the components; rounded down. Neighbours: add-remove.
    """
    if counts is None:
        vals, counts = np.unique(sizes[sizes > 0], return_counts=True)
    else:  # distinct positive sizes and how many clusters have each (no O(k) array)
        vals = np.asarray(sizes)
    if vals.size == 0:
        return None
    if vals.size > WITNESS_MAX_DISTINCT:
        return None
    n = float(np.sum(vals * counts))
    best = 0.0
    for ci in {int(vals[-1]), int(vals[0])}:
        cnt = counts.copy().astype(float)
        cnt[np.searchsorted(vals, ci)] -= 1
        keep = cnt > 0
        ov, oc = vals[keep].astype(float), cnt[keep]
        centres_p = np.concatenate([[ci], -ov])
        centres_q = np.concatenate([[ci + 1.0], -ov])
        lw_p = np.log(np.concatenate([[ci / n], oc * ov / n]))
        lw_q = np.log(np.concatenate([[(ci + 1) / (n + 1)], oc * ov / (n + 1)]))
        z = np.unique(np.concatenate([centres_p, centres_q]))
        ratios = [_log_mixture(lw_p, centres_p, z, eps) - _log_mixture(lw_q, centres_q, z, eps)]
        for sign in (1.0, -1.0):
            tp = lw_p + sign * eps * centres_p
            tq = lw_q + sign * eps * centres_q
            ratios.append(np.array([np.logaddexp.reduce(tp) - np.logaddexp.reduce(tq)]))
        r = np.concatenate(ratios)
        best = max(best, float(np.max(np.abs(r))))
    # absolute error: a few ulps of the largest log-weight/ε·|centre| handled
    slack = 64 * np.spacing(eps * float(vals[-1] + 1) + abs(math.log(n)) + 1.0)
    return max(0.0, float(numeric.round_down(best - slack)))


def conditions(params: Params) -> tuple[str, ...]:
    """The design's conditions, with its values."""
    return (f"1 <= chosen < k: 1 <= {params.chosen} < {params.clusters.count}",)


RELATION = None
"""The family's theorems put no condition on M's relation (their witnesses run
at whatever ε the declared relations allow)."""


def theorem(params: Params, max_inclusion: float) -> Theorem:
    """The lower bound A(max π_i, ε) for this design, as data: a single-inclusion
    witness (ε-DP under both relations), no upper bound, no condition on M's relation
    (the witness runs at min(ε_D, ε_R), at ε_R where M's add-remove ε is unknown)."""
    amax = max_inclusion
    return Theorem(
        name="§6.2",
        basis=BASIS,
        relation=RELATION,
        guarantee=Neighbours.REPLACE_ONE,
        witnesses=(Witness(bound=partial(lower_epsilon, max_inclusion=amax)),),
        conditions=conditions(params),
        tight=None,
    )


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Lower bound only: verdict no-guarantee."""
    cl = params.clusters
    amax, certain = max_inclusion(cl, params.chosen, params.method)
    warnings = [
        f"PPS cluster sampling gives no amplification guarantee ({BUN_2022}, "
        "§6.2: large clusters are both the most likely to be drawn and the easiest to "
        "recognise in the output); only the lower bound A(max π_i, ε) is reported "
        f"({DERIVATIONS}, §4.5).",
    ]
    notes: list[str] = []
    if params.chosen > 1 and cl.sizes is not None:
        # an unnamed algorithm is an input to fix; the others' probabilities are context
        (warnings if params.method == "pps" else notes).append(_METHOD_NOTE[params.method])
    witness, witness_at = _witness_details(cl, params.chosen, mechanism)
    return assemble(
        theorem(params, amax),
        mechanism,
        warnings=tuple(warnings),
        notes=tuple(notes),
        details={
            "clusters": cl.count,
            "chosen": params.chosen,
            "method": params.method,
            "largest_clusters": list(cl.largest),
            "population": cl.total,
            "max_inclusion_probability": amax,
            "certainty_units": certain,
            **witness,
        },
        details_at=witness_at,
    )


_METHOD_NOTE = {
    "pps": "the PPS algorithm for chosen > 1 is not named (`method: pps`): the cluster "
    "inclusion probabilities sum to ℓ, so some cluster has π_i >= ℓ/k and A(ℓ/k, ε) is the "
    "lower bound. Declare `method: pips` (πps: π_i = min(1, ℓ|C_i|/n)), `sampford` or "
    "`successive` for an algorithm-specific bound.",
    "pips": "cluster inclusion probabilities π_i = min(1, ℓ|C_i|/n) with iterative capping "
    f"({DERIVATIONS}, §4.4 applied to clusters): exact for πps algorithms",
    "sampford": "cluster inclusion probabilities π_i = min(1, ℓ|C_i|/n) with iterative "
    "capping: Sampford's design is πps",
    "successive": "inclusion probability of the largest cluster under successive sampling "
    "(draw by draw without replacement, each draw proportional to size): exact on small "
    "designs, a sound lower bound otherwise",
}


def _witness_details(
    cl: ClusterSizes, chosen: int, mechanism: Mechanism
) -> tuple[dict[str, Any], Callable[[np.ndarray], Mapping[str, Any]] | None]:
    """The exact Laplace-witness loss (add-remove) where it applies: the entries that do
    not depend on ε, and the loss at each evaluated ε."""
    if chosen != 1 or not mechanism.epsilon_add_remove_known():
        return {}, None
    counts: np.ndarray | None = None
    if cl.sizes is not None:
        sizes = cl.sizes
        vals = np.unique(sizes[sizes > 0])
    elif cl.largest[0] > 0:  # {count, size}: one size, k clusters
        sizes, counts = np.array([cl.largest[0]]), np.array([cl.count])
        vals = sizes
    else:
        return {}, None
    if not 0 < vals.size <= WITNESS_MAX_DISTINCT:  # laplace_witness gives no value
        if cl.sizes is None:
            return {}, None
        return {"laplace_witness_note": f"more than {WITNESS_MAX_DISTINCT} distinct sizes"}, None
    note = (
        f"exact loss of the Σx + Lap(1/ε) witness of {DERIVATIONS}, §4.5 at the evaluated ε, for "
        "adding one record to a cluster (an add-remove lower bound)"
    )
    return {"laplace_witness_note": note}, partial(_laplace_witness_at, sizes=sizes, counts=counts)


def _laplace_witness_at(
    eps: np.ndarray, *, sizes: np.ndarray, counts: np.ndarray | None
) -> Mapping[str, Any]:
    """The Laplace witness's loss at each evaluated ε."""
    e = np.asarray(eps, dtype=float)
    values = [laplace_witness(sizes, float(x), counts) for x in e.ravel()]
    return {"laplace_witness_add_remove": np.array(values, dtype=float).reshape(e.shape)}


SCHEME = Scheme(
    name="pps-cluster",
    summary="clusters drawn with probability proportional to size (lower bound only)",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.REPLACE_ONE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={"clusters": {"sizes": [10, 20, 30, 40]}, "chosen": 1},
    parse_params=parse_params,
)
