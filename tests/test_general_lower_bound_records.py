"""general-lower-bound and allocation-test as theorem records assembled by
``schemes.assembly``: the bounds against mpmath, and what each result refuses.

Bun et al., Theorem 5.3 (App. D), Proposition 6.1 and Proposition 4.1.
"""

from __future__ import annotations

import mpmath as mp
import pytest

from ampcalc import engine, schemes
from ampcalc.designs.document import load_designs
from ampcalc.model.errors import ConditionError

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy


def design(mechanism: dict, **sampling):
    doc = {"mechanism": mechanism, "sampling": {"scheme": "general-lower-bound", **sampling}}
    return load_designs(doc)[0]


THEOREM_5_3 = {
    "result": "theorem-5.3",
    "reading": "proof",
    "fraction": 0.3,
    "test_epsilon": 2.0,
    "conditional_epsilon": 2.5,
}


def oracle_5_3_proof(a: float, test_eps: float, eps2: float) -> mp.mpf:
    """000 Theorem 5.3 as printed (App. D's reading): log(1 + (e^ε″ − 1)A/(A + e^−ε′(1 − A)))."""
    mp.mp.dps = 50
    a_, t, e = mp.mpf(a), mp.mpf(test_eps), mp.mpf(eps2)
    return mp.log(1 + (mp.exp(e) - 1) * a_ / (a_ + mp.exp(-t) * (1 - a_)))


@pytest.mark.parametrize(
    "mechanism",
    [
        {"epsilon": 1.0, "neighbours": "add-remove"},
        {"epsilon": 1.0, "neighbours": "both"},
        # ε_R below ε_D: ε″ compares add-remove neighbours, so the cap stays ε_D = 1
        {"epsilon": 1.0, "neighbours": "add-remove", "epsilon_replace_one": 0.8},
    ],
)
def test_theorem_5_3_caps_conditional_epsilon_at_add_remove_epsilon(mechanism) -> None:
    res = engine.bound(design(mechanism, **THEOREM_5_3))
    exact = oracle_5_3_proof(0.3, 2.0, 1.0)  # ε″ = min(2.5, ε_D) = 1
    assert res.upper is None and res.verdict == "no-guarantee"
    assert res.lower <= exact and float(exact) - res.lower < 1e-14
    assert res.lower == pytest.approx(0.8354716117621069, abs=0)
    assert res.details["reference_epsilon"] == 1.0
    assert res.warnings == ("conditional_epsilon = 2.5 exceeds M's ε; ε″ <= ε is used",)


def test_theorem_5_3_refuses_replace_one_only_mechanism() -> None:
    """Defect fixed: for M declared under replace-one only, Theorem 5.3 reported M's
    replace-one ε as the add-remove unsampled loss (reference_epsilon 1.0) and capped ε″,
    a log-ratio between add-remove neighbours, at it. M's add-remove ε is unknown, so
    the theorem is refused, as proposition-4.2 of the same scheme is."""
    d = design({"epsilon": 1.0, "neighbours": "replace-one"}, **THEOREM_5_3)
    scheme = schemes.get("general-lower-bound")
    with pytest.raises(ConditionError, match=r"Theorem 5\.3 bounds the loss between P and its"):
        scheme.analyse(d.params, d.mechanism, scheme.guarantees[0])
    res = engine.bound(d)
    assert res.lower is None and "`neighbours: replace-one` leaves that ε" in res.error


def test_proposition_6_1_constant_lower_bound_and_refusal() -> None:
    """Proposition 6.1's bound (4)/(5) does not depend on M's ε; replace-one only."""
    fig = {"a": 0.5, "a_prime": 0.5, "p": 0.7, "p_prime": 0.2, "q": 0.3, "q_prime": 0.3}
    mp.mp.dps = 50
    b5 = mp.log(
        (mp.mpf("0.7") * mp.mpf("0.5") + mp.mpf("0.3") * mp.mpf("0.5"))
        / (mp.mpf("0.2") * mp.mpf("0.5") + mp.mpf("0.3") * mp.mpf("0.5"))
    )
    for mech in ({"epsilon": 1.0, "neighbours": "replace-one"}, {"epsilon": 3.0}):
        res = engine.bound(design(mech, result="proposition-6.1", **fig))
        assert res.lower <= b5 and float(b5) - res.lower < 1e-14
        assert res.guarantee_neighbours == "replace-one"
    doc = {
        "mechanism": {"epsilon": 1.0},
        "guarantee": "add-remove",
        "sampling": {"scheme": "general-lower-bound", "result": "proposition-6.1", **fig},
    }
    res = engine.bound(load_designs(doc)[0])
    assert res.error is not None and "gives no add-remove bound" in res.error
