"""Proposition 4.2 of Bun et al.: a randomised size function cannot
estimate the intended size better than a DP estimator can.

Statement (corrected, spec §4.3 and §11 item 7). Let f be the intended sample size and
f̃ the randomised size function used instead. If every ε-DP (add-remove) mechanism M run
on the sample of size f̃(P) is ε′-DP (add-remove), then M^count(S) = |S| + Lap(1/ε) makes
f̃(P) + Lap(1/ε) an ε′-DP estimator of f, whose error is E|f̃(P) − f(P)|² + Var(Lap(1/ε))
= E|f̃(P) − f(P)|² + 2/ε² (the noise is independent and has mean 0). So, with α(ε′) a
lower bound on the worst-case squared error of every ε′-DP estimator of f,

    max_P E|f̃(P) − f(P)|² >= α(ε′) − 2/ε².

The paper prints the slack as (1/ε)², but Var(Lap(1/ε)) = 2/ε² (App. F's last equality);
and it states the hypothesis for replace-one ε′ while α is for deletion (add-remove)
estimators: an estimator that is only replace-one DP can output r·|P| exactly, so the
argument needs the add-remove relation throughout.

α(ε′) (the paper leaves it open) is the two-point bound along a chain of added records:
if adding a record moves f by Δ (f(P) = r·|P|: Δ = r), populations P_0 ⊂ … ⊂ P_k have
f(P_k) − f(P_0) = kΔ, and any ε′-DP estimator A, with E = {A >= (f(P_0) + f(P_k))/2}
and group privacy Pr_{P_k}(E) <= e^{kε′}·Pr_{P_0}(E), has error at least (kΔ/2)² times
max(Pr_{P_0}(E), Pr_{P_k}(E^c)) >= 1/(1 + e^{kε′}) on one of them:

    α(ε′) = max_{k >= 1} (kΔ/2)² / (1 + e^{kε′}).

Used as a calculator (contrapositive): a size function with worst-case squared error
``mse`` is not ε′-DP for any ε′ with α(ε′) > mse + 2/ε², so ε′ >= the largest such ε′:

    ε′ >= max_k log(c·k² − 1)/k,   c = Δ²/(4(mse + 2/ε²))   (0 if no k has c·k² > 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.references import BUN_2022, DERIVATIONS, cite
from ampcalc.schemes.assembly import (
    Refusal,
    Refuses,
    Theorem,
    Witness,
    assemble,
    check_refusals,
    epsilons,
)
from ampcalc.schemes.base import Analysis

# φ(u) = log(u² − 1)/u has its maximum at u* (2u²/(u² − 1) = log(u² − 1)); the best
# integer k is within a few of u*/√c
_U_STAR = 3.1916
# g(x) = x²/(1 + e^x) has its maximum at x* (2(1 + e^x) = x·e^x)
_X_STAR = 2.2185

_REL = 1e-12  # a generous allowance for the few roundings in log/exp below


def _window(center: np.ndarray) -> np.ndarray:
    """Integers k >= 1 around ``center`` (shape (..., 7))."""
    base = np.floor(np.maximum(center, 1.0))[..., None]
    ks = base + np.arange(-3, 4)
    out: np.ndarray = np.maximum(ks, 1.0)
    return out


def alpha(sensitivity: float, eps_prime: Any) -> np.ndarray:
    """α(ε′) = max_k (kΔ/2)²/(1 + e^{kε′}), rounded down (a lower bound on the error)."""
    e = np.asarray(eps_prime, dtype=float)
    ks = _window(_X_STAR / np.maximum(e, 1e-300))
    with np.errstate(over="ignore"):
        vals = (ks * sensitivity / 2.0) ** 2 / (1.0 + np.exp(ks * e[..., None]))
    out = np.max(vals, axis=-1) * (1.0 - _REL)
    return np.asarray(numeric.round_down(out))


def mse_floor(sensitivity: float, eps_prime: float, eps: float, slack: float = 2.0) -> float:
    """Proposition 4.2's floor α(ε′) − slack/ε² on max_P E|f̃(P) − f(P)|² (may be < 0)."""
    return float(alpha(sensitivity, eps_prime)) - slack / eps**2


def lower_epsilon(sensitivity: float, mse: float, eps: Any, slack: float = 2.0) -> np.ndarray:
    """The smallest ε′ Proposition 4.2 allows: max(0, max_k log(c·k² − 1)/k) with
    c = Δ²/(4(mse + slack/ε²)); rounded down. ``slack`` = 2 is the corrected constant,
    1 the printed one (for comparison only)."""
    e = np.asarray(eps, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        t = mse + slack / (e * e)
    c = np.maximum(sensitivity**2 / (4.0 * t), 1e-300)  # ε = 0: no bound (c·k² <= 2)
    ks = _window(_U_STAR / np.sqrt(c))
    arg = c[..., None] * ks * ks - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(arg > 1.0, np.log(np.where(arg > 1.0, arg, 2.0)) / ks, 0.0)
    best = np.max(phi, axis=-1)
    best = np.where(np.isfinite(t), np.maximum(best * (1.0 - _REL) - 1e-300, 0.0), 0.0)
    return np.asarray(numeric.round_down(best))


def summary(sensitivity: float, mse: float, eps: float, target: float | None) -> dict[str, Any]:
    """The figures shown in ``details`` at M's ε (and at ``target`` ε′ if given)."""
    out: dict[str, Any] = {
        "sensitivity": sensitivity,
        "mse": mse,
        "slack": 2.0 / eps**2,
        "slack_printed": 1.0 / eps**2,
        "lower_bound": float(lower_epsilon(sensitivity, mse, eps)),
        "lower_bound_printed_slack": float(lower_epsilon(sensitivity, mse, eps, slack=1.0)),
    }
    if target is not None:
        a = float(alpha(sensitivity, target))
        out["target_epsilon"] = target
        out["alpha"] = a
        out["mse_floor"] = a - 2.0 / eps**2
        out["mse_floor_printed_slack"] = a - 1.0 / eps**2
    return out


CORRECTION_NOTE = (
    f"{BUN_2022}, Proposition 4.2 prints the slack as (1/ε)², but its proof "
    "(App. F) adds Lap(1/ε) noise, whose variance is 2/ε²: the slack used here is 2/ε² "
    f"({DERIVATIONS}, §2.3). The printed constant would overstate the bound (see "
    "`details.lower_bound_printed_slack`)."
)
RELATION_NOTE = (
    "the proposition assumes the sampled design is ε′-replacement DP but takes α over "
    "ε′-deletion DP estimators; the argument holds with add-remove throughout (M ε-DP "
    "add-remove, the design ε′-DP add-remove), which is what this bound is for"
)


REFUSES_REPLACE_ONE_ONLY = (
    "Proposition 4.2's witness is |S| + Lap(1/ε), ε-DP add-remove: M's add-remove ε "
    "is needed (`neighbours: add-remove` or `both`)"
)


def theorem(sensitivity: float, mse: float) -> Theorem:
    """Proposition 4.2 (corrected) for this size function, as data: a lower bound by the
    witness |S| + Lap(1/c), which is c-DP under add-remove and 2c-DP under replace-one
    (``replace_one_ratio`` 2), so the assembly runs it at c = min(ε_D, ε_R/2), inside
    M's declared class; the loss is under add-remove (``RELATION_NOTE``)."""
    return Theorem(
        name="Proposition 4.2",
        basis=(cite(BUN_2022, "Proposition 4.2"), cite(BUN_2022, "Appendix F")),
        relation=None,
        guarantee=Neighbours.ADD_REMOVE,
        witnesses=(
            Witness(bound=lambda c: lower_epsilon(sensitivity, mse, c), replace_one_ratio=2.0),
        ),
        conditions=(
            f"the sample size is a randomised function f̃ of the data with max_P E|f̃(P) − "
            f"f(P)|² = {mse:g}, f the intended size; one added record moves f by Δ = "
            f"{sensitivity:g}",
            "the bound: max_P E|f̃(P) − f(P)|² >= α(ε′) − 2/ε², α(ε′) = max_k (kΔ/2)²/(1 + "
            "e^{kε′}); the design is not ε′-DP for any smaller ε′",
        ),
        tight=None,
        refusals=(Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY),),
    )


def analyse_proposition_4_2(params: Any, mechanism: Mechanism, guarantee: Any) -> Analysis:
    """Lower bound on the design's add-remove ε′ from Proposition 4.2 (corrected)."""
    del guarantee  # always add-remove, as theorem-5.3 (RELATION_NOTE)
    delta_f, mse, target = float(params.sensitivity), float(params.mse), params.target_epsilon
    thm = theorem(delta_f, mse)
    check_refusals(thm, mechanism)
    # the witness's ε at the declared ε (the assembly runs it at each evaluated ε)
    e_d, e_r = epsilons(mechanism)
    c0 = float(np.minimum(e_d, e_r / thm.witnesses[0].replace_one_ratio))
    details = summary(delta_f, mse, c0, None if target is None else float(target))
    details["witness_epsilon"] = c0
    details["alpha_choice"] = (
        "α(ε′) = max_k (kΔ/2)²/(1 + e^{kε′}): two-point bound over k added records, each "
        "moving f by Δ (group privacy); the paper leaves α open"
    )
    warnings: list[str] = []
    if target is not None and details["mse_floor"] > mse:
        warnings.append(
            f"your size function's error {mse:g} is below the floor {details['mse_floor']:.6g} "
            f"at ε′ = {float(target):g}: the design cannot be {float(target):g}-DP"
        )
    return assemble(
        thm,
        mechanism,
        warnings=tuple(warnings),
        notes=(CORRECTION_NOTE, RELATION_NOTE),
        details=details,
    )
