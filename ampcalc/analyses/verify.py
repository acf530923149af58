"""``ampcalc verify``: a design's bounds against the exact worst case on a tiny instance.

The scheme supplies the instance (its ``verify`` hook returns a ``Plan``); the linear
programmes of ``ampcalc.schemes.exact`` give the exact worst case; this module judges
the design's reported bounds against it, one row per design. Pure: no printing.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ampcalc import engine, schemes
from ampcalc.model.design import Design, Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.schemes.base import Scheme
from ampcalc.schemes.exact import (
    DEFAULT_LIMIT,
    ApproxOutcome,
    EpsilonRangeError,
    Outcome,
    Plan,
    Progress,
    check_epsilon,
    deltas_of,
    for_guarantee,
    judge,
    judge_approx,
    pure_part,
    relations_of,
    run,
    run_approx,
)


def verify_row(
    design: Any,
    pairs: str = "default",
    limit: int = DEFAULT_LIMIT,
    epsilon: float | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """One row of ``verify --json``: the exact worst case of a tiny design vs our bounds.

    The scheme's hook is called with M's pure part (``pure_part``); M's δ per relation
    (``deltas_of``) is added to the plan it returns. δ = 0 and δ′ = 0 (or none): the
    pure programme, ``epsilon_prime_exact`` = ε′_exact. Otherwise the (ε, δ) programme:
    ``delta_prime_exact`` = the worst divergence at the reported upper ε′,
    ``epsilon_prime_exact`` = ε″ at the reported δ′ (δ′ = 0 when none is reported;
    null when it is +∞, with a note in ``reason``). ``progress(done, total)`` is called
    as the plan's instances are solved.
    """

    scheme = schemes.get(design.scheme)
    res = engine.bound(design, epsilon=epsilon).to_dict()
    row = _unjudged_row(design, res)
    if res.get("error"):
        row["reason"] = res["error"]
        row["error"] = res["error"]  # outside the theorem's conditions: bad input, not a verdict
        return row
    mech = design.mechanism
    if scheme.verify_plan is None:
        row["reason"] = (
            f"the {design.scheme} scheme has no exact tiny-instance enumeration (verify hook)"
        )
        return row
    if mech is None:
        row["reason"] = "the design states no mechanism M to verify against"
        return row
    if epsilon is not None:
        mech, _ = engine.with_epsilon(mech, epsilon)
    lower, upper = row["epsilon_prime"]["lower"], row["epsilon_prime"]["upper"]
    delta_prime = row["delta_prime"]
    pure = mech.delta == 0.0 and not delta_prime
    try:
        plan = _exact_plan(
            design, scheme, mech, res["guarantee_neighbours"], pairs, limit, epsilon
        )
        if pure:
            out = run(plan, limit=limit, progress=progress)
        else:
            approx = _approx_outcome(plan, lower, upper, delta_prime, limit, progress)
    except ConditionError as err:
        row["reason"] = err.message
        if isinstance(err, EpsilonRangeError):
            row["error"] = err.message  # refused: exit 2, like a design outside its conditions
        return row
    if pure:
        row.update(_pure_verdict(out, lower, upper))
    else:
        row.update(_approx_verdict(approx, lower, upper, delta_prime))
    return row


def _unjudged_row(design: Design, res: dict[str, Any]) -> dict[str, Any]:
    """The row before the exact programme runs: the design's reported bounds, nothing
    exact yet, status INCONCLUSIVE."""
    mech = design.mechanism
    return {
        "name": design.name,
        "scheme": design.scheme,
        "epsilon_prime_exact": None,
        "epsilon_prime": {
            "lower": res["epsilon_prime"]["lower"],
            "upper": res["epsilon_prime"]["upper"],
        },
        "delta": None if mech is None else float(mech.delta),
        "delta_prime": res.get("delta_prime"),
        "delta_prime_exact": None,
        "status": "INCONCLUSIVE",
        "worst_pair": None,
        "samples": None,
        "reason": None,
    }


def _exact_plan(
    design: Design,
    scheme: Scheme,
    mech: Mechanism,
    guarantee: str,
    pairs: str,
    limit: int,
    epsilon: float | None,
) -> Plan:
    """The scheme's tiny instances for M's pure part, with M's δ per relation, their
    pairs tagged with the relation the reported ``guarantee`` holds under.

    Raises:
        ConditionError: M's ε is outside the programme's range, or the hook refuses.
    """
    check_epsilon(relations_of(mech))  # before a hook builds anything at this ε
    hook = scheme.verify_plan
    assert hook is not None
    asked = Neighbours(guarantee)
    if scheme.verify_plan_takes_guarantee:  # the hook lists its pairs
        plan = hook(design.params, pure_part(mech), pairs, limit=limit, guarantee=asked)
    else:
        plan = hook(design.params, pure_part(mech), pairs, limit=limit)
    plan = dataclasses.replace(plan, deltas=deltas_of(mech))
    natural: Any = guarantee
    if scheme.verify_plan_takes_guarantee:
        natural = asked  # its untagged pairs are of the relation asked for
    elif design.guarantee is not None:  # the guarantee the hook's untagged pairs are of
        plain = dataclasses.replace(design, guarantee=None)
        natural = engine.bound(plain, epsilon=epsilon).to_dict().get("guarantee_neighbours")
    return for_guarantee(plan, guarantee, natural)


def _approx_outcome(
    plan: Plan,
    lower: float | None,
    upper: float | None,
    delta_prime: float | None,
    limit: int,
    progress: Progress | None,
) -> ApproxOutcome:
    """The (ε, δ) programme at the reported upper ε′ and δ′; with a lower bound, also
    the pure programme, whose witness the lower bound is (a pure ε-DP mechanism)."""
    approx = run_approx(
        plan, epsilon_upper=upper, delta_prime=delta_prime, limit=limit, progress=progress
    )
    if lower is not None:
        pure_out = run(plan, limit=limit)
        approx = dataclasses.replace(
            approx, pure_epsilon=pure_out.epsilon_prime, pure_high=pure_out.epsilon_high
        )
    return approx


def _pure_verdict(out: Outcome, lower: float | None, upper: float | None) -> dict[str, Any]:
    """The row's fields from the pure programme: ε′_exact, its witness, and the verdict
    on the reported bounds (none when the programme is inconclusive)."""
    found = {
        "epsilon_prime_exact": out.epsilon_prime,
        "worst_pair": out.worst_pair,
        "samples": out.samples,
    }
    if out.status == "INCONCLUSIVE":
        return {**found, "reason": out.reason}
    status, tol, why = judge(out.epsilon_prime, lower, upper, out.epsilon_low, out.epsilon_high)
    return {**found, "status": status, "tolerance": tol, "reason": why}


def _approx_verdict(
    approx: ApproxOutcome, lower: float | None, upper: float | None, delta_prime: float | None
) -> dict[str, Any]:
    """The row's fields from the (ε, δ) programme: ε″ at δ′ (null when +∞, said in the
    reason), the worst divergence at the upper ε′, its witness and the verdict."""
    e = approx.epsilon_at_delta
    status, tol, why = judge_approx(approx, lower, upper, delta_prime)
    if e is not None and math.isinf(e):
        note = (
            f"no finite ε′ at δ′ = {approx.delta_prime:.6g}: an event the neighbour "
            f"never produces has probability above δ′ ({approx.epsilon_pair})"
        )
        why = note if why is None else f"{why}; {note}"
    return {
        "epsilon_prime_exact": None if e is None or math.isinf(e) else e,
        "delta_prime_exact": approx.delta_at_upper,
        "worst_pair": approx.delta_pair or approx.epsilon_pair,
        "samples": approx.samples,
        "status": status,
        "tolerance": tol,
        "reason": why,
    }
