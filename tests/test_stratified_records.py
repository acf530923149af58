"""The stratified package's local assembly (ampcalc/schemes/stratified/records.py).

A record states a result under one guarantee as formulas of M's two ε (ε_D, ε_R);
``build`` reads the declared mechanism under both relations, picks the reference ε of
the guarantee and certifies the closed-form inverses. The oracle is the closed form
A(q, ε) = log(1 + q(e^ε − 1)) of 000 Theorem 2.2 (Bun et al.), in double precision.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.schemes.stratified import records

AR = Mechanism(epsilon=1.0, neighbours=Neighbours.ADD_REMOVE)
RO = Mechanism(epsilon=1.0, neighbours=Neighbours.REPLACE_ONE)
AR_STATED = Mechanism(epsilon=1.0, neighbours=Neighbours.ADD_REMOVE, epsilon_replace_one=1.5)


def test_relations_read_both_epsilons() -> None:
    ed, er = records.relations(AR)(np.array([0.5, 1.0]))
    assert ed.tolist() == [0.5, 1.0] and er.tolist() == [1.0, 2.0]  # ε_R = 2ε
    ed, er = records.relations(RO)(np.array(1.0))
    assert math.isinf(float(ed)) and float(er) == 1.0  # add-remove ε unknown
    _, er = records.relations(AR_STATED)(np.array(1.0))
    assert float(er) == 1.5  # the stated ε_R, exactly, at the declared ε


@pytest.mark.parametrize(
    ("scale", "mech", "ratio"),
    [
        (records.Scale.DECLARED, AR, 1.0),
        (records.Scale.REPLACE_ONE, AR, 2.0),
        (records.Scale.SMALLER, AR, 1.0),
        (records.Scale.REPLACE_ONE, AR_STATED, 1.5),
        (records.Scale.SMALLER, RO, 1.0),
    ],
)
def test_scale_ratio(scale: records.Scale, mech: Mechanism, ratio: float) -> None:
    assert scale.ratio(mech) == ratio


def test_build_certifies_an_inverse_in_replace_one_epsilon() -> None:
    # a srswor-like result A(q, ε_R) under replace-one, for an add-remove mechanism:
    # at target T the certified declared ε is A⁻¹(q, T)/2, checked as evaluated
    q = 0.1
    result = records.Result(
        guarantee=Neighbours.REPLACE_ONE,
        upper=lambda ed, er: numeric.amplification_upper(q, er),
        lower=lambda ed, er: numeric.amplification_lower(q, er),
        certified=records.Inverse(
            lambda t: numeric.amplification_inverse(q, t), records.Scale.REPLACE_ONE
        ),
    )
    an = records.build(result, AR)
    assert an.guarantee_neighbours is Neighbours.REPLACE_ONE
    assert float(an.reference_epsilon(np.array(1.0))) == 2.0
    want = math.log1p(q * math.expm1(2.0))  # A(0.1, ε_R = 2) = 0.494029...
    assert float(an.upper(np.array(1.0))) == pytest.approx(want, rel=1e-15)
    assert an.certified is not None and an.delta_prime is not None
    cert = float(an.certified(np.array(want)))
    assert cert == pytest.approx(1.0, rel=1e-12)
    assert float(an.upper(np.array(cert))) <= want
    assert float(an.delta_prime(np.array(1.0))) == 0.0


def test_impossible_never_reached_is_inf_without_evaluating_the_lower_bound() -> None:
    # a lower bound that is 0 everywhere (e.g. Neyman with an unchanged allocation)
    def lower(ed: np.ndarray, er: np.ndarray) -> np.ndarray:
        raise AssertionError("the lower bound must not be evaluated")

    result = records.Result(
        guarantee=Neighbours.ADD_REMOVE,
        upper=None,
        lower=lower,
        impossible=records.Inverse(lambda t: np.full(np.shape(t), np.inf)),
        pure=False,
    )
    an = records.build(result, AR)
    assert an.upper is None and an.delta_prime is None and an.certified is None
    assert an.impossible_above is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isposinf(an.impossible_above(np.array([0.5, 1.0]))).all()


def test_invert_details_see_the_built_analysis() -> None:
    seen: list[float] = []

    def more(an: object, t: np.ndarray) -> dict[str, float]:
        assert getattr(an, "upper", None) is not None
        seen.append(float(t))
        return {"x": float(t)}

    result = records.Result(
        guarantee=Neighbours.ADD_REMOVE,
        upper=lambda ed, er: ed.copy(),
        lower=None,
        invert_details=more,
    )
    an = records.build(result, AR)
    assert an.invert_details is not None
    assert an.invert_details(np.array(0.7)) == {"x": 0.7} and seen == [0.7]
