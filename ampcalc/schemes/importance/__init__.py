"""Poisson importance sampling with personalised privacy (the importance-sampling paper).

Basis: Personalized Privacy Amplification via Importance Sampling (Fay, Mair, Sjölund) Theorem 6
(amplification by
importance sampling), Theorem 10 and Algorithm 1 (privacy-constrained probabilities),
Proposition 13 (DP-Lloyd profile), Definition 14 / Theorem 15 (coreset distribution),
Proposition 3 (uniform Poisson); formulas as rebuilt in
spec importance-and-weighted-sampling.md Part A (the paper's text lost them).

The mechanism is a *privacy profile* ε(w, x) on weighted records (add-remove
neighbours, pure ε). The data set is an input (a record file): per-record figures are
reported in ``details``, while the DP guarantee (``upper``) is the supremum of ε̂ over
a public domain bound ``radius`` (any added record may lie anywhere in it).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.math.importance import (
    laplace_sum_mse,
    personalised_epsilon,
    var_opt_probabilities,
)
from ampcalc.model.design import Neighbours
from ampcalc.schemes.base import Scheme
from ampcalc.schemes.importance.analysis import (
    RecordFigures,
    _target_of,
    analyse,
    bind_target,
    record_figures,
)
from ampcalc.schemes.importance.domain import (
    _profile_norms,
    coreset_q,
    domain_bracket,
    expected_size_at,
    scale_search,
)
from ampcalc.schemes.importance.params import (
    _PROFILE_FIELDS,
    BASIS,
    FIELDS,
    KNOBS,
    MODES,
    PROFILES,
    Params,
    RecordEpsilon,
    _given,
    check,
    parse_mechanism,
    parse_params,
)

#: the family's names, from its modules (importers keep importing from the package)
__all__ = [
    "BASIS",
    "FIELDS",
    "KNOBS",
    "MODES",
    "PROFILES",
    "SCHEME",
    "_PROFILE_FIELDS",
    "Params",
    "RecordEpsilon",
    "RecordFigures",
    "_target_of",
    "analyse",
    "bind_target",
    "check",
    "compare",
    "coreset_q",
    "domain_bracket",
    "expected_size_at",
    "parse_mechanism",
    "parse_params",
    "record_figures",
    "scale_search",
]


# --------------------------------------------------------------------------------------
# compare columns
# --------------------------------------------------------------------------------------


def compare(design: Any, target: float, res: Any = None) -> dict[str, Any]:
    """uniform vs coreset vs privacy-constrained at the expected size ε* = target implies.

    Columns per strategy: max per-record ε̂ of the file, the domain guarantee, and for
    the Laplace sum the total MSE Σ(1/q − 1)‖x‖₂² + 2dβ² (spec A8).
    """
    params: Params = design.params
    profile: RecordEpsilon = design.mechanism
    k0 = profile.epsilon / profile.natural
    n = params.data.count
    m = expected_size_at(params, profile, k0, target)
    xbar = params.mean_sq_norm or float(np.mean(params.data.sq_l2))
    rows: dict[str, Any] = {}
    for mode in ("uniform", "coreset", "privacy-constrained"):
        p = dataclasses.replace(
            params,
            probabilities=mode,
            expected_size=m if mode != "privacy-constrained" else None,
            population=float(n),
            mean_sq_norm=xbar,
            mix=0.5 if mode == "coreset" else params.mix,
        )
        fig = record_figures(p, profile, k0, target)
        row: dict[str, Any] = {
            "expected_size": float(np.sum(fig.q)),
            "max_epsilon_hat": float(np.max(fig.eps_hat)),
        }
        if mode == "privacy-constrained":
            row["upper"] = target if profile.epsilon <= target else None
        else:
            row["upper"] = domain_bracket(p, profile, k0)[0]
        if profile.kind == "laplace-sum":
            row["mse"] = laplace_sum_mse(
                fig.q, params.data.sq_l2, _given(profile.scale) / k0, params.data.dimension
            )
        rows[mode] = row
    if profile.kind == "laplace-sum":
        # the data-dependent variance-optimal benchmark (not DP: spec A8), for reference
        qv = var_opt_probabilities(np.sqrt(params.data.sq_l2), m)
        z = _profile_norms(params, profile)
        a = numeric.round_up(k0 * profile.coefficients.at(z), 1)
        rows["var-opt (not DP)"] = {
            "expected_size": float(np.sum(qv)),
            "max_epsilon_hat": float(np.max(personalised_epsilon(qv, a))),
            "upper": None,
            "mse": laplace_sum_mse(
                qv, params.data.sq_l2, _given(profile.scale) / k0, params.data.dimension
            ),
        }
    return {"expected_size": m, "target_epsilon_prime": target, "strategies": rows}


RELATION = "add-remove (a privacy profile ε(w, x))"
"""In words: M is a per-record privacy profile under add-remove, not one ε."""


SCHEME = Scheme(
    name="importance",
    summary="Poisson importance sampling of a record file, personalised privacy profile",
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.ADD_REMOVE,),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={},
    mechanism_form="custom",
    parse_params=parse_params,
    parse_mechanism=parse_mechanism,
    compare=compare,
    bind_target=bind_target,
)
