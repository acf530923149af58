"""Stratified sampling: proportional (randomised or deterministic rounding), stratified
Poisson, fixed per-stratum sizes, and Neyman allocation.

Results are stratified DP (Bun et al., Definition 7.1): each stratum s
gets its own ε′_s for adding or removing a record *in that stratum*
(``details.strata``); the headline add-remove ε′ is max_s ε′_s. A replace-one
guarantee (``guarantee: replace-one``) is derived (deterministic rounding and fixed
allocation: computed pair by pair, see ``analyse_deterministic``): a replacement is a
deletion in one stratum plus an addition in another or the same one, so its loss is at most
ε′_s + ε′_{s′} <= 2·max_s ε′_s (spec §8.1: every proven stratified result is for
add-remove; max{ε′_s, ε′_{s′}} of Definition 7.1 is not implied — with stratified
Poisson rates 0.5 and 0.01, the sum of the two largest per-stratum values is
exceeded by a replacement inside the 0.5 stratum).

Basis:
  - proportional + randomized: Bun et al., Theorem 7.2 (one stratum:
    Theorem 4.3; proof in Appendices C and E); exact inverse of spec §5.1;
  - proportional + randomized at rate 1: a census, ε′ = M's own ε (exact);
  - proportional + nearest/floor: at the stated sizes, each stratum's allocation at
    N_h − 1, N_h, N_h + 1: a step that keeps it is a simple random sample (Bun et al. Theorem
    2.2 coupling, A(m/N, ε_R), exact), a step that moves it costs exactly ε (Bun et al. §4.1
    witness); replace-one inside a stratum moves nothing, a record moved between strata
    chains the two steps (ε_R when both move);
  - poisson: Bun et al. 2020, Lemma 3.3 (tight);
  - fixed: Bun et al. Theorem 2.2 within each stratum (replace-one inside a stratum);
  - neyman: Bun et al. §7.2 and Appendix E.1 (deterministic, data-dependent allocation:
    lower bounds Δ∞·ε and Δ₁·ε, no upper bound).

Layout: one module per allocation family, each reading theorem -> formula (plain
keyword functions of M's ε) -> one ``schemes.assembly.Theorem`` record per (result,
guarantee), turned into the analysis by ``schemes.assembly.assemble`` (relation
reading, reference ε, certified inverses, details at each evaluated ε):
``randomized``, ``deterministic``, ``neyman``, ``fixed`` (the poisson and fixed
allocations, through the ``poisson`` and ``srswor`` families' results); ``common``
the stratified refusal wording and shared helpers; ``params`` holds the fields, the
strata readers and the loading rules; ``accuracy`` the ``ampcalc compare`` hook;
``verify`` the tiny-instance hook; ``fixed_total`` a fixed total (``total_sample`` with
proportional allocation: its apportionment rules and their sensitivity).
"""

from __future__ import annotations

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.references import BUN_2020_WP, BUN_2022, cite
from ampcalc.schemes.base import Analysis, Scheme
from ampcalc.schemes.stratified.accuracy import compare
from ampcalc.schemes.stratified.deterministic import analyse_deterministic
from ampcalc.schemes.stratified.fixed import analyse_fixed, analyse_poisson
from ampcalc.schemes.stratified.fixed_total import analyse_fixed_total
from ampcalc.schemes.stratified.neyman import (
    analyse_neyman,
    neyman_allocations,
    neyman_sums_note,
)
from ampcalc.schemes.stratified.params import FIELDS, Params, Strata, parse_params
from ampcalc.schemes.stratified.randomized import (
    analyse_randomized,
    lower_epsilon,
    shortcut_note,
    theorem_4_3,
    theorem_4_3_inverse,
)
from ampcalc.schemes.stratified.verify import _verify_hook

__all__ = [
    "BASIS",
    "FIELDS",
    "SCHEME",
    "Params",
    "Strata",
    "_verify_hook",
    "analyse",
    "compare",
    "lower_epsilon",
    "neyman_allocations",
    "neyman_sums_note",
    "numeric",
    "parse_params",
    "shortcut_note",
    "theorem_4_3",
    "theorem_4_3_inverse",
]

BASIS = (
    cite(BUN_2022, "Theorem 7.2"),
    cite(BUN_2022, "Definition 7.1"),
    cite(BUN_2020_WP, "Lemma 3.3"),
    cite(BUN_2022, "§7.2"),
)


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one stratified design (see the bound functions for the theorems)."""
    if params.allocation == "proportional":
        if params.total_sample is not None:
            return analyse_fixed_total(params, mechanism, guarantee)
        if params.rounding == "randomized":
            return analyse_randomized(params, mechanism, guarantee)
        return analyse_deterministic(params, mechanism, guarantee)
    if params.allocation == "poisson":
        return analyse_poisson(params, mechanism, guarantee)
    if params.allocation == "fixed":
        return analyse_fixed(params, mechanism, guarantee)
    return analyse_neyman(params, mechanism, guarantee)


RELATION = "add-remove (or both); replace-one for fixed allocation"
"""In words: the relation depends on the allocation."""


SCHEME = Scheme(
    name="stratified",
    summary=(
        "stratified sample: proportional (randomised rounding), Poisson, fixed or Neyman "
        "allocation; stratified DP per stratum"
    ),
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.ADD_REMOVE, Neighbours.REPLACE_ONE),
    basis=BASIS,
    analyse=analyse,
    example={
        "allocation": "proportional",
        "rate": 0.02,
        "strata": [{"name": "small", "size": 12000}, {"name": "large", "size": 900}],
    },
    parse_params=parse_params,
    compare=compare,
    verify_plan=_verify_hook,
)
