"""Lower-bound calculators for an analyst's own attack: Proposition 6.1 and Theorem 5.3.

Basis: 000_97a39a4c524f603f.txt Proposition 6.1 (bound (4) and identity (5); the prose
calls it "Theorem 6.1") and Theorem 5.3 (a test that tells whether a cluster was
sampled); spec §6.2 and §7.1. Lower bounds only: verdict ``no-guarantee``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from .. import numeric
from ..errors import ConditionError
from ..model import Mechanism, Neighbours
from ..papers import BUN_2022, cite
from ._cluster_kernels import ratio_lower
from .base import Analysis, Field, Problem, Scheme

BASIS = (cite(BUN_2022, "Proposition 6.1"), cite(BUN_2022, "Theorem 5.3"))


class _Probability(TypedDict):
    kind: str
    low: float
    high: float


_PROB: _Probability = {"kind": "float", "low": 0.0, "high": 1.0}


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """One of two calculators.

    ``result: proposition-6.1``: element i and an event E; a = Pr(x_i ∈ C(P)),
    a′ = Pr(x′_i ∈ C(P′)); p, p′ = Pr(E) given inclusion; q, q′ = Pr(E) given exclusion.

    ``result: theorem-5.3``: cluster fraction A = ℓ/k, the test's log-likelihood ratio
    ε′ (``test_epsilon``) and ε″ (``conditional_epsilon``, the log-ratio of M given that
    the cluster is sampled, in [0, ε]; default: M's ε).

    Attributes:
        result: ``proposition-6.1`` or ``theorem-5.3``.
        a, a_prime, p, p_prime, q, q_prime: Proposition 6.1 inputs.
        fraction: A; test_epsilon: ε′; conditional_epsilon: ε″ or None.
    """

    result: str
    a: float | None = None
    a_prime: float | None = None
    p: float | None = None
    p_prime: float | None = None
    q: float | None = None
    q_prime: float | None = None
    fraction: float | None = None
    test_epsilon: float | None = None
    conditional_epsilon: float | None = None


FIELDS = (
    Field(
        name="result",
        kind="choice",
        doc="which calculator",
        required=True,
        choices=("proposition-6.1", "theorem-5.3"),
    ),
    Field(name="a", doc="Pr(x_i in C(P))", **_PROB),
    Field(name="a_prime", doc="Pr(x'_i in C(P'))", **_PROB),
    Field(name="p", doc="Pr(E | x_i included), on P", **_PROB),
    Field(name="p_prime", doc="Pr(E | x'_i included), on P'", **_PROB),
    Field(name="q", doc="Pr(E | x_i excluded), on P", **_PROB),
    Field(name="q_prime", doc="Pr(E | x'_i excluded), on P'", **_PROB),
    Field(name="fraction", kind="float", doc="A = ℓ/k", low=0.0, high=1.0, low_open=True),
    Field(name="test_epsilon", kind="float", doc="ε′ of the test (log-likelihood ratio)", low=0.0),
    Field(
        name="conditional_epsilon",
        kind="float",
        doc="ε″ in [0, ε] (default: M's ε)",
        low=0.0,
    ),
)

_NEEDS = {
    "proposition-6.1": ("a", "a_prime", "p", "p_prime", "q", "q_prime"),
    "theorem-5.3": ("fraction", "test_epsilon"),
}


def check(params: Params) -> list[Problem]:
    """The chosen calculator's inputs are all present, and no others."""
    out: list[Problem] = []
    for name in _NEEDS[params.result]:
        if getattr(params, name) is None:
            out.append(Problem(field=name, message=f"`{params.result}` needs `{name}`"))
    for other, names in _NEEDS.items():
        if other != params.result:
            for name in names:
                if getattr(params, name) is not None:
                    out.append(
                        Problem(field=name, message=f"`{name}` belongs to `result: {other}`")
                    )
    if params.result == "proposition-6.1" and not out:
        p_prime, a_prime, q_prime = params.p_prime, params.a_prime, params.q_prime
        assert p_prime is not None and a_prime is not None and q_prime is not None
        den = p_prime * a_prime + q_prime * (1 - a_prime)
        if den <= 0:
            out.append(
                Problem(field="p_prime", message="p′a′ + q′(1 − a′) = 0: the ratio is infinite")
            )
    return out


def proposition_6_1(
    a: float, a_prime: float, p: float, p_prime: float, q: float, q_prime: float
) -> tuple[float, float]:
    """(bound (4), identity (5)) of Proposition 6.1, both as lower bounds on ε̃.

    Basis: 000_97a39a4c524f603f.txt Proposition 6.1; spec §7.1.
    Formula: (4) ln[p a / (p′a′ + q′(1 − a′))]; (5) ln[(p a + q(1 − a)) / (p′a′ + q′(1 − a′))].
    Numerics: plain floats (inputs are probabilities), rounded down (also below 0).
    """
    den = p_prime * a_prime + q_prime * (1 - a_prime)
    b4 = math.log(p * a / den) if p * a > 0 else -math.inf
    b5 = math.log((p * a + q * (1 - a)) / den) if p * a + q * (1 - a) > 0 else -math.inf
    return _down(b4), _down(b5)


def _down(x: float) -> float:
    """x rounded toward −inf, negative values included (``numeric.round_down`` leaves
    negatives as they are; (4) and (5) are negative when the event favours P′)."""
    # the ratio takes at most 7 roundings (3 in each of the numerator and p′a′ + q′(1 − a′),
    # 1 in the division): a relative error below 8·2^-53, so an absolute error below that
    # in the log, which is many ulps of a small log (then 8 ulps for the log itself)
    x = x - 8 * 2.0**-53
    return float(numeric.round_down(x)) if x >= 0 else -float(numeric.round_up(-x))


def theorem_5_3(eps2: Any, *, fraction: float, test_epsilon: float) -> np.ndarray:
    """Lower bound of Theorem 5.3 (000_97a39a4c524f603f.txt): a test with log-likelihood
    ratio ε′ that tells whether cluster i was sampled.

    Formula: ε̃ >= log(1 + (e^{ε″} − 1)A/(A + e^{−ε′}(1 − A))) = B(A, ε′/ε″, ε″).
    Numerics: the ratio kernel (log1p/expm1; logaddexp above 700); rounded down.
    """
    e = np.asarray(eps2, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(e > 0, test_epsilon / np.where(e > 0, e, 1.0), 0.0)
    return np.where(e > 0, ratio_lower(fraction, k, e), 0.0)


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Lower bound only."""
    if params.result == "proposition-6.1":
        if guarantee is Neighbours.ADD_REMOVE:  # only when asked for (replace-one is default)
            raise ConditionError(
                "000_97a39a4c524f603f.txt Proposition 6.1 is stated for replace-one "
                "neighbours P, P′ of the same size; it gives no add-remove bound."
            )
        a, a_prime, p, p_prime = params.a, params.a_prime, params.p, params.p_prime
        q, q_prime = params.q, params.q_prime
        # check() has made every Proposition 6.1 input present
        assert a is not None and a_prime is not None and p is not None
        assert p_prime is not None and q is not None and q_prime is not None
        b4, b5 = proposition_6_1(a, a_prime, p, p_prime, q, q_prime)
        best = max(b4, b5, 0.0)
        return Analysis(
            guarantee_neighbours=Neighbours.REPLACE_ONE,
            reference_epsilon=mechanism.epsilon_replace_one_of,
            upper=None,
            lower=lambda eps: np.full(np.shape(eps), best),
            delta_prime=None,
            basis=(cite(BUN_2022, "Proposition 6.1"),),
            conditions=(
                "P and P′ are replace-one neighbours differing in element i; the figures "
                "(a, a′, p, p′, q, q′) are those of one event E of your attack",
            ),
            warnings=(
                "a lower bound from your own attack's figures (it does not depend on the "
                "declared ε); 000_97a39a4c524f603f.txt calls this result 'Theorem 6.1' in its "
                "prose, it is Proposition 6.1.",
            ),
            # ln 0 = −inf (an event the attack never sees): no bound, JSON null
            details={
                "bound_4": b4 if math.isfinite(b4) else None,
                "identity_5": b5 if math.isfinite(b5) else None,
            },
        )
    frac, te, e2 = params.fraction, params.test_epsilon, params.conditional_epsilon
    assert frac is not None and te is not None  # check() has made them present

    def lower(eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        use = eps if e2 is None else np.minimum(e2, eps)
        return theorem_5_3(use, fraction=frac, test_epsilon=te)

    warnings = []
    if e2 is not None and e2 > mechanism.epsilon:
        warnings.append(f"conditional_epsilon = {e2:g} exceeds M's ε; ε″ <= ε is used")
    return Analysis(
        guarantee_neighbours=Neighbours.ADD_REMOVE,
        reference_epsilon=lambda eps: np.asarray(eps, dtype=float),
        upper=None,
        lower=lower,
        delta_prime=None,
        basis=(cite(BUN_2022, "Theorem 5.3"),),
        conditions=(
            f"a test tells whether the cluster was sampled with log-likelihood ratio "
            f"ε′ = {te:g}; cluster fraction A = {frac:g}",
            "ε″ = " + ("M's ε" if e2 is None else f"{e2:g}") + " (in [0, ε])",
        ),
        warnings=tuple(warnings),
        details={"fraction": frac, "test_epsilon": te, "conditional_epsilon": e2},
    )


SCHEME = Scheme(
    name="general-lower-bound",
    summary="lower bounds from your own attack: Proposition 6.1 and Theorem 5.3",
    params=Params,
    fields=FIELDS,
    mechanism_relation="replace-one or add-remove",
    guarantees=(Neighbours.REPLACE_ONE, Neighbours.ADD_REMOVE),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={"result": "theorem-5.3", "fraction": 0.1, "test_epsilon": 2.0},
)
