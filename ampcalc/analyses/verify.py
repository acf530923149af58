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
from ampcalc.model.design import Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.schemes.exact import (
    DEFAULT_LIMIT,
    EpsilonRangeError,
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
    mech = design.mechanism
    row: dict[str, Any] = {
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
    if res.get("error"):
        row["reason"] = res["error"]
        row["error"] = res["error"]  # outside the theorem's conditions: bad input, not a verdict
        return row
    hook = scheme.verify_plan
    if hook is None:
        row["reason"] = (
            f"the {design.scheme} scheme has no exact tiny-instance enumeration (verify hook)"
        )
        return row
    if mech is None:
        row["reason"] = "the design states no mechanism M to verify against"
        return row
    if epsilon is not None:
        mech, _ = engine.with_epsilon(mech, epsilon)
    try:
        check_epsilon(relations_of(mech))  # before a hook builds anything at this ε
        asked = Neighbours(res["guarantee_neighbours"])
        if scheme.verify_plan_takes_guarantee:  # the hook lists its pairs
            plan = hook(design.params, pure_part(mech), pairs, limit=limit, guarantee=asked)
        else:
            plan = hook(design.params, pure_part(mech), pairs, limit=limit)
        plan = dataclasses.replace(plan, deltas=deltas_of(mech))
        natural = res["guarantee_neighbours"]
        if scheme.verify_plan_takes_guarantee:
            natural = asked  # its untagged pairs are of the relation asked for
        elif design.guarantee is not None:  # the guarantee the hook's untagged pairs are of
            plain = dataclasses.replace(design, guarantee=None)
            natural = engine.bound(plain, epsilon=epsilon).to_dict().get("guarantee_neighbours")
        plan = for_guarantee(plan, res["guarantee_neighbours"], natural)
        lower, upper = row["epsilon_prime"]["lower"], row["epsilon_prime"]["upper"]
        delta_prime = row["delta_prime"]
        if mech.delta == 0.0 and not delta_prime:
            out = run(plan, limit=limit, progress=progress)
        else:
            approx = run_approx(
                plan, epsilon_upper=upper, delta_prime=delta_prime, limit=limit, progress=progress
            )
            if lower is not None:  # the lower bound's witness is a pure ε-DP mechanism
                pure_out = run(plan, limit=limit)
                approx = dataclasses.replace(
                    approx, pure_epsilon=pure_out.epsilon_prime, pure_high=pure_out.epsilon_high
                )
    except ConditionError as err:
        row["reason"] = err.message
        if isinstance(err, EpsilonRangeError):
            row["error"] = err.message  # refused: exit 2, like a design outside its conditions
        return row
    if mech.delta == 0.0 and not delta_prime:
        row["epsilon_prime_exact"] = out.epsilon_prime
        row["worst_pair"] = out.worst_pair
        row["samples"] = out.samples
        if out.status == "INCONCLUSIVE":
            row["reason"] = out.reason
            return row
        status, tol, why = judge(
            out.epsilon_prime, lower, upper, out.epsilon_low, out.epsilon_high
        )
    else:
        e = approx.epsilon_at_delta
        row["epsilon_prime_exact"] = None if e is None or math.isinf(e) else e
        row["delta_prime_exact"] = approx.delta_at_upper
        row["worst_pair"] = approx.delta_pair or approx.epsilon_pair
        row["samples"] = approx.samples
        status, tol, why = judge_approx(approx, lower, upper, delta_prime)
        if e is not None and math.isinf(e):
            note = (
                f"no finite ε′ at δ′ = {approx.delta_prime:.6g}: an event the neighbour "
                f"never produces has probability above δ′ ({approx.epsilon_pair})"
            )
            why = note if why is None else f"{why}; {note}"
    row["status"] = status
    row["tolerance"] = tol
    row["reason"] = why
    return row
