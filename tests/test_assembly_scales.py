"""The assembly layer's inverses stated in a ``Scale`` of M's ε, derived (doubled)
guarantees, lower-only results, a family's own condition wording and ``invert``
details that see the built analysis (ampcalc/schemes/assembly.py).

Checked on synthetic theorems whose formulas are the closed form A(q, ε) =
log(1 + q(e^ε − 1)) of Bun et al., Theorem 2.2 (Bun et al.), against
50-digit mpmath values.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.schemes import assembly
from ampcalc.schemes.assembly import InScale, OfPair, Scale, Theorem, assemble, doubled, epsilons

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy

mp = pytest.importorskip("mpmath")

AR = Mechanism(epsilon=1.0, neighbours=Neighbours.ADD_REMOVE)
RO = Mechanism(epsilon=1.0, neighbours=Neighbours.REPLACE_ONE)
AR_STATED = Mechanism(epsilon=1.0, neighbours=Neighbours.ADD_REMOVE, epsilon_replace_one=1.5)


def _a(q: float, eps: float) -> float:
    """A(q, ε) in 50 digits (Bun et al., Theorem 2.2)."""
    with mp.workdps(50):
        return float(mp.log(1 + mp.mpf(q) * (mp.exp(mp.mpf(eps)) - 1)))


def _a_inverse(q: float, target: float) -> float:
    """The ε with A(q, ε) = target, in 50 digits."""
    with mp.workdps(50):
        return float(mp.log(1 + (mp.exp(mp.mpf(target)) - 1) / mp.mpf(q)))


def _upper_r(q: float) -> assembly.PairFormula:
    """A(q, ε_R) rounded up, a formula of (ε_D, ε_R)."""
    return lambda ed, er: numeric.amplification_upper(q, er)


def _lower_r(q: float) -> assembly.PairFormula:
    """A(q, ε_R) rounded down, a formula of (ε_D, ε_R)."""
    return lambda ed, er: numeric.amplification_lower(q, er)


def test_epsilons_read_both_relations() -> None:
    ed, er = epsilons(AR, np.array([0.5, 1.0]))
    assert ed.tolist() == [0.5, 1.0] and er.tolist() == [1.0, 2.0]  # ε_R = 2ε
    ed, er = epsilons(RO, 1.0)
    assert math.isinf(float(ed)) and float(er) == 1.0  # add-remove ε unknown
    _, er = epsilons(AR_STATED)
    assert float(er) == 1.5  # the stated ε_R, exactly, at the declared ε


@pytest.mark.parametrize(
    ("scale", "mech", "ratio"),
    [
        (Scale.DECLARED, AR, 1.0),
        (Scale.REPLACE_ONE, AR, 2.0),
        (Scale.SMALLER, AR, 1.0),
        (Scale.REPLACE_ONE, AR_STATED, 1.5),
        (Scale.SMALLER, RO, 1.0),
    ],
)
def test_scale_ratio(scale: Scale, mech: Mechanism, ratio: float) -> None:
    assert scale.ratio(mech) == ratio


def test_an_inverse_in_replace_one_epsilon_is_rounded_once_and_certified() -> None:
    # A(q, ε_R) under replace-one for an add-remove mechanism: at target T the certified
    # declared ε is A⁻¹(q, T)/2, rounded down once and checked as evaluated
    q = 0.1
    theorem = Theorem(
        name="synthetic",
        basis=(),
        relation=Neighbours.BOTH,
        guarantee=Neighbours.REPLACE_ONE,
        upper=OfPair(_upper_r(q)),
        lower=OfPair(_lower_r(q)),
        inverse=InScale(Scale.REPLACE_ONE, lambda t: numeric.amplification_inverse(q, t)),
        pure=True,
        tight=None,
    )
    an = assemble(theorem, AR)
    assert an.guarantee_neighbours is Neighbours.REPLACE_ONE
    assert float(an.reference_epsilon(np.array(1.0))) == 2.0
    want = _a(q, 2.0)  # A(0.1, ε_R = 2) = 0.494029...
    assert float(an.upper(np.array(1.0))) == pytest.approx(want, rel=1e-15)
    assert an.certified is not None and an.delta_prime is not None
    cert = float(an.certified(np.array(want)))
    assert cert == pytest.approx(_a_inverse(q, want) / 2.0, rel=1e-12)
    assert float(an.upper(np.array(cert))) <= want
    once = numeric.certify_down(
        an.upper, numeric.round_down(numeric.amplification_inverse(q, want) / 2.0), want
    )
    assert cert == float(once)
    # the upper bound's inverse is not used for the lower bound (no shared formula)
    assert an.impossible_above is None
    assert float(an.delta_prime(np.array(1.0))) == 0.0
    assert "tight" not in an.details


def test_lower_only_inverse_never_reached_is_inf_without_evaluating_the_lower_bound() -> None:
    def lower(ed: np.ndarray, er: np.ndarray) -> np.ndarray:
        raise AssertionError("the lower bound must not be evaluated")

    theorem = Theorem(
        name="synthetic",
        basis=(),
        relation=None,
        guarantee=Neighbours.ADD_REMOVE,
        lower=OfPair(lower),
        lower_inverse=InScale(Scale.DECLARED, lambda t: np.full(np.shape(t), np.inf)),
        tight=None,
    )
    an = assemble(theorem, AR)
    assert an.upper is None and an.delta_prime is None and an.certified is None
    assert an.impossible_above is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isposinf(an.impossible_above(np.array([0.5, 1.0]))).all()


def test_a_lower_inverse_in_the_smaller_epsilon_is_rounded_up_once() -> None:
    # witness A(q, min(ε_D, ε_R)) for M declared with ε_R = 1.5ε: min = ε, scale ratio 1
    q = 0.2
    theorem = Theorem(
        name="synthetic",
        basis=(),
        relation=None,
        guarantee=Neighbours.REPLACE_ONE,
        witnesses=(assembly.Witness(bound=lambda e: numeric.amplification_lower(q, e)),),
        lower_inverse=InScale(Scale.SMALLER, lambda t: numeric.amplification_inverse(q, t)),
        tight=None,
    )
    an = assemble(theorem, AR_STATED)
    assert an.impossible_above is not None and an.lower is not None
    t = _a(q, 1.0)
    imp = float(an.impossible_above(np.array(t)))
    assert imp == pytest.approx(1.0, rel=1e-12)
    assert float(an.lower(np.array(imp))) >= t
    assert imp == float(
        numeric.certify_up(an.lower, numeric.round_up(numeric.amplification_inverse(q, t)), t)
    )


def test_doubled_is_twice_the_add_remove_bound_inverted_at_half_the_target() -> None:
    # derived replace-one guarantee: ε′_R <= 2·A(q, ε) (a replacement is a removal and an
    # addition), certified ε at T is A⁻¹(q, T/2)
    q = 0.05
    base = Theorem(
        name="synthetic",
        basis=(),
        relation=Neighbours.ADD_REMOVE,
        guarantee=Neighbours.ADD_REMOVE,
        upper=lambda e: numeric.amplification_upper(q, e),
        lower=lambda e: numeric.amplification_lower(q, e),
        inverse=lambda t: numeric.amplification_inverse(q, t),
        tight=True,
    )
    two = doubled(base)
    assert two.guarantee is Neighbours.REPLACE_ONE
    assert two.lower is None and two.witnesses == ()
    assert two.tight is False
    an = assemble(two, AR)
    assert an.lower is None and an.impossible_above is None
    assert float(an.reference_epsilon(np.array(1.0))) == 2.0
    up = float(an.upper(np.array(1.0)))
    assert up >= 2.0 * _a(q, 1.0) and up == pytest.approx(2.0 * _a(q, 1.0), rel=1e-15)
    t = 0.3
    cert = float(an.certified(np.array(t)))
    assert cert == pytest.approx(_a_inverse(q, t / 2.0), rel=1e-12)
    assert float(an.upper(np.array(cert))) <= t
    with pytest.raises(ValueError, match="add-remove"):
        doubled(two)


def test_the_family_states_its_own_condition_on_m() -> None:
    base = Theorem(
        name="synthetic",
        basis=(),
        relation=Neighbours.BOTH,
        guarantee=Neighbours.ADD_REMOVE,
        upper=OfPair(lambda ed, er: ed.copy()),
        conditions=("first",),
        relation_condition="M is ε-DP under add-remove (declared: {declared}), pure ε",
        tight=None,
    )
    an = assemble(base, AR, conditions=("last",))
    assert an.conditions == (
        "first",
        "M is ε-DP under add-remove (declared: add-remove), pure ε",
        "last",
    )
    silent = assemble(
        Theorem(
            name="synthetic",
            basis=(),
            relation=Neighbours.BOTH,
            guarantee=Neighbours.ADD_REMOVE,
            upper=OfPair(lambda ed, er: ed.copy()),
            relation_condition="",
        ),
        AR,
    )
    assert silent.conditions == ()


def test_an_inverse_of_both_relations_needs_its_scale() -> None:
    with pytest.raises(ValueError, match="relation"):
        Theorem(
            name="synthetic",
            basis=(),
            relation=Neighbours.BOTH,
            guarantee=Neighbours.ADD_REMOVE,
            upper=OfPair(lambda ed, er: ed.copy()),
            inverse=lambda t: t,
        )


def test_invert_details_see_the_built_analysis() -> None:
    seen: list[float] = []

    def more(an: object, t: np.ndarray) -> dict[str, float]:
        assert getattr(an, "upper", None) is not None
        seen.append(float(t))
        return {"x": float(t)}

    theorem = Theorem(
        name="synthetic",
        basis=(),
        relation=Neighbours.BOTH,
        guarantee=Neighbours.ADD_REMOVE,
        upper=OfPair(lambda ed, er: ed.copy()),
        tight=None,
    )
    an = assemble(theorem, AR, invert_details_from=more)
    assert an.invert_details is not None
    assert an.invert_details(np.array(0.7)) == {"x": 0.7} and seen == [0.7]
