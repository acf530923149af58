"""Lower-bound calculators for an analyst's own attack: Proposition 6.1 and Theorem 5.3;
and Proposition 4.2 (how well a randomised size function may track the intended size).

Basis: Bun et al., Proposition 6.1 (bound (4) and identity (5); the prose
calls it "Theorem 6.1") and Theorem 5.3 (a test that tells whether a cluster was
sampled); spec §6.2 and §7.1. Lower bounds only: verdict ``no-guarantee``.

Theorem 5.3's statement and its App. D proof read ε″ in opposite directions, and each
reading has its own formula (``reading: statement | proof``, required; see ``READINGS``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.references import BUN_2022, cite
from ampcalc.schemes._cluster_kernels import ratio_lower
from ampcalc.schemes._estimation_bound import analyse_proposition_4_2
from ampcalc.schemes.assembly import (
    OfPair,
    Refusal,
    Refuses,
    Theorem,
    Witness,
    assemble,
)
from ampcalc.schemes.base import Analysis, Field, Problem, Scheme

BASIS = (
    cite(BUN_2022, "Proposition 6.1"),
    cite(BUN_2022, "Theorem 5.3"),
    cite(BUN_2022, "Proposition 4.2"),
)


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
    ε′ (``test_epsilon``, measured on P), ε″ (``conditional_epsilon``, the log-ratio of
    the test event between P and its neighbour P′ given that the cluster is sampled, in
    [0, ε]) and which way ε″ goes (``reading``, see ``READINGS``). All four are required:
    no default stands in for a figure of the user's attack.

    Attributes:
        result: ``proposition-6.1`` or ``theorem-5.3``.
        a, a_prime, p, p_prime, q, q_prime: Proposition 6.1 inputs.
        fraction: A; test_epsilon: ε′; conditional_epsilon: ε″; reading: ``statement``
            or ``proof``.
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
    reading: str | None = None
    sensitivity: float | None = None
    mse: float | None = None
    target_epsilon: float | None = None


READINGS: dict[str, str] = {
    "statement": (
        "the theorem as stated: the test H and ε″ are both measured on P (the population "
        "whose cluster C_i the test detects): Pr(H = 0 | C_i sampled, P) >= "
        "e^{ε′}·Pr(H = 0 | C_i not sampled, P), and ε″ = log[Pr(H = 0 | C_i sampled, P) / "
        "Pr(H = 0 | C_i sampled, P′)] >= 0 (the event is likelier on P); "
        "bound log(1 + A(e^{ε″} − 1)/(A + (1 − A)e^{ε″ − ε′}))"
    ),
    "proof": (
        "the reading of the App. D proof (p′ > p): the test H is measured on P, "
        "Pr(H = 0 | C_i sampled, P) >= e^{ε′}·Pr(H = 0 | C_i not sampled, P), and "
        "ε″ = log[Pr(H = 0 | C_i sampled, P′) / Pr(H = 0 | C_i sampled, P)] >= 0 (the "
        "event is likelier on the neighbour P′); bound log(1 + (e^{ε″} − 1)A/(A + "
        "e^{−ε′}(1 − A)))"
    ),
}
"""What each ``reading`` of Bun et al., Theorem 5.3 assumes, and its bound."""


FIELDS = (
    Field(
        name="result",
        kind="choice",
        doc="which calculator",
        required=True,
        choices=("proposition-6.1", "theorem-5.3", "proposition-4.2"),
    ),
    Field(name="a", doc="Pr(x_i in C(P))", **_PROB),
    Field(name="a_prime", doc="Pr(x'_i in C(P'))", **_PROB),
    Field(name="p", doc="Pr(E | x_i included), on P", **_PROB),
    Field(name="p_prime", doc="Pr(E | x'_i included), on P'", **_PROB),
    Field(name="q", doc="Pr(E | x_i excluded), on P", **_PROB),
    Field(name="q_prime", doc="Pr(E | x'_i excluded), on P'", **_PROB),
    Field(name="fraction", kind="float", doc="A = ℓ/k", low=0.0, high=1.0, low_open=True),
    Field(
        name="test_epsilon",
        kind="float",
        doc="ε′ of the test (log-likelihood ratio), on P",
        low=0.0,
    ),
    Field(
        name="conditional_epsilon",
        kind="float",
        doc="ε″ in [0, ε]: the test event's log-ratio between P and P′ given that the "
        "cluster is sampled, in the direction `reading` names (theorem-5.3, required)",
        low=0.0,
    ),
    Field(
        name="reading",
        kind="choice",
        doc="theorem-5.3 (required): `statement` = test on P, ε″ = log[Pr(E|C_i in, P) / "
        "Pr(E|C_i in, P′)] (the theorem as stated); `proof` = test on P, ε″ = "
        "log[Pr(E|C_i in, P′) / Pr(E|C_i in, P)] (its App. D proof, p′ > p)",
        choices=("statement", "proof"),
    ),
    Field(
        name="sensitivity",
        kind="float",
        doc="proposition-4.2: Δ, how much one added record moves the intended sample size f "
        "(f = r·|P|: Δ = r)",
        low=0.0,
        low_open=True,
    ),
    Field(
        name="mse",
        kind="float",
        doc="proposition-4.2: max over P of E|f̃(P) − f(P)|², the worst-case squared error of "
        "the randomised size function f̃ (randomised rounding of r·|P|: at most 1/4)",
        low=0.0,
    ),
    Field(
        name="target_epsilon",
        kind="float",
        doc="proposition-4.2 (optional): an ε′ at which to report the floor α(ε′) − 2/ε² on "
        "the size function's squared error",
        low=0.0,
        low_open=True,
    ),
)

_WHY = {
    "conditional_epsilon": (
        ": ε″ of your test event given that the cluster is sampled (it has no default: M's "
        "ε is the attack-optimal value, which no stated test witnesses)"
    ),
    "reading": (
        ": `statement` (ε″ = log[Pr(E|C_i in, P)/Pr(E|C_i in, P′)], the theorem as stated) "
        "or `proof` (ε″ = log[Pr(E|C_i in, P′)/Pr(E|C_i in, P)], its App. D proof); the "
        "two give different bounds"
    ),
}

_NEEDS = {
    "proposition-6.1": ("a", "a_prime", "p", "p_prime", "q", "q_prime"),
    "theorem-5.3": ("fraction", "test_epsilon", "conditional_epsilon", "reading"),
    "proposition-4.2": ("sensitivity", "mse"),
}
_OPTIONAL = {"proposition-4.2": ("target_epsilon",)}


def check(params: Params) -> list[Problem]:
    """The chosen calculator's inputs are all present, and no others."""
    out: list[Problem] = []
    for name in _NEEDS[params.result]:
        if getattr(params, name) is None:
            why = _WHY.get(name, "")
            out.append(Problem(field=name, message=f"`{params.result}` needs `{name}`{why}"))
    for other, names in _NEEDS.items():
        if other != params.result:
            for name in (*names, *_OPTIONAL.get(other, ())):
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

    Basis: Bun et al., Proposition 6.1; spec §7.1.
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
    """Lower bound of Theorem 5.3 (Bun et al.), ``reading: proof``.

    Reading: the test event E is measured on P (q <= e^{−ε′}p) and ε″ = log(p′/p), the
        event being likelier on the neighbour P′ given that cluster i is sampled (the
        App. D proof's p′ > p). Then Pr(M(D′) ∈ E)/Pr(M(D) ∈ E) = 1 + (p′ − p)A/(pA +
        q(1 − A)) >= 1 + (e^{ε″} − 1)A/(A + e^{−ε′}(1 − A)).
    Formula: ε̃ >= log(1 + (e^{ε″} − 1)A/(A + e^{−ε′}(1 − A))) = B(A, ε′/ε″, ε″).
    Numerics: the ratio kernel (log1p/expm1; logaddexp above 700); rounded down.
    """
    e = np.asarray(eps2, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(e > 0, test_epsilon / np.where(e > 0, e, 1.0), 0.0)
    return np.where(e > 0, ratio_lower(fraction, k, e), 0.0)


def theorem_5_3_statement(eps2: Any, *, fraction: float, test_epsilon: float) -> np.ndarray:
    """Lower bound of Theorem 5.3 (Bun et al.), ``reading: statement``.

    Reading (the theorem as stated): the test event E and ε″ are both measured on P:
        p >= e^{ε′}q and ε″ = log(p/p′) >= 0, where p, p′ are Pr(E) given that cluster i
        is sampled on P, P′ and q = q′ given that it is not. Then Pr(M(D) ∈ E)/Pr(M(D′)
        ∈ E) = 1 + (p − p′)A/(p′A + q(1 − A)), decreasing in q, so with q = e^{−ε′}p and
        p = e^{ε″}p′ it is >= 1 + A(e^{ε″} − 1)/(A + (1 − A)e^{ε″ − ε′}). Attained: cluster
        i = {x}, M(S) = Bernoulli(c·e^{ε″·|S ∩ C_i|}), P′ without x, E = [output = 1].
    Formula: ε̃ >= log(1 + A(e^{ε″} − 1)/(A + (1 − A)e^{ε″ − ε′})) = B(A, (ε′ − ε″)/ε″, ε″)
        (K may be negative, down to −1: ε′ < ε″ is allowed).
    Numerics: the ratio kernel, rounded down, less an allowance for the rounding of
        K·ε″ = ε′ − ε″ (B moves by at most min(1, e^B − 1)·|Δ(Kε″)|), clamped at 0.
    """
    e = np.asarray(eps2, dtype=float)
    pos = e > 0
    safe = np.where(pos, e, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = (test_epsilon - safe) / safe
    val = ratio_lower(fraction, k, safe)
    # K·ε″ carries ~3 roundings of ε′ − ε″ (a few ulps of max(ε′, ε″)); B moves by at
    # most min(1, e^B − 1) times that (|∂B/∂(Kε″)| <= min(1, A(e^ε″ − 1)/(A + t)))
    with np.errstate(over="ignore"):
        scale = np.minimum(1.0, 2.0 * np.expm1(np.maximum(val, 0.0)))
    slack = 8.0 * np.spacing(np.maximum(abs(test_epsilon), safe)) * scale
    val = numeric.round_down(val - slack)
    out: np.ndarray = np.where(pos, np.maximum(val, 0.0), 0.0)
    return out


_KERNELS = {"statement": theorem_5_3_statement, "proof": theorem_5_3}


def theorem_5_3_lower(
    eps_add_remove: np.ndarray,
    eps_replace_one: np.ndarray,
    *,
    reading: str,
    fraction: float,
    test_epsilon: float,
    conditional_epsilon: float,
) -> np.ndarray:
    """Theorem 5.3's lower bound in the chosen reading: the test's bound at ε″ capped at
    M's add-remove ε (ε_R is not used)."""
    return _KERNELS[reading](
        np.minimum(conditional_epsilon, eps_add_remove),
        fraction=fraction,
        test_epsilon=test_epsilon,
    )


def constant_epsilon(eps: np.ndarray, *, value: float) -> np.ndarray:
    """A lower bound that does not depend on M's ε (an attack's figure), at each ε."""
    return np.full(np.shape(eps), value)


REFUSES_REPLACE_ONE_ONLY = (
    f"{BUN_2022}, Theorem 5.3 bounds the loss between P and its add-remove neighbour P′ "
    "(P without x), with ε″ <= M's add-remove ε; `neighbours: replace-one` leaves that ε "
    "unknown. Declare `neighbours: add-remove` or `both`."
)


REFUSES_ADD_REMOVE = (
    f"{BUN_2022}, Proposition 6.1 is stated for replace-one "
    "neighbours P, P′ of the same size; it gives no add-remove bound."
)


RELATION = None
"""The family's theorems put no condition on M's relation (their witnesses run
at whatever ε the declared relations allow)."""


def proposition_6_1_theorem(bound_4: float, identity_5: float) -> Theorem:
    """Proposition 6.1 for the attack's figures ``proposition_6_1``, as data: the larger
    of bound (4) and identity (5) (and 0), a lower bound that does not depend on M's ε
    (the attack is the witness), under replace-one; an add-remove guarantee is refused."""
    best = max(bound_4, identity_5, 0.0)
    return Theorem(
        name="Proposition 6.1",
        basis=(cite(BUN_2022, "Proposition 6.1"),),
        relation=RELATION,
        guarantee=Neighbours.REPLACE_ONE,
        witnesses=(Witness(bound=functools.partial(constant_epsilon, value=best)),),
        conditions=(
            "P and P′ are replace-one neighbours differing in element i; the figures "
            "(a, a′, p, p′, q, q′) are those of one event E of your attack",
        ),
        tight=None,
        refusals=(Refusal(Refuses.GUARANTEE, REFUSES_ADD_REMOVE),),
    )


def theorem_5_3_theorem(params: Params) -> Theorem:
    """Theorem 5.3 in the chosen reading, as data: the test's bound at ε″ capped at M's
    add-remove ε ε_D (ε″ compares the test event on P and on P′ = P without x), the
    loss under add-remove; a replace-one-only M (ε_D unknown) is refused."""
    frac, te, e2, reading = (
        params.fraction,
        params.test_epsilon,
        params.conditional_epsilon,
        params.reading,
    )
    # check() has made them present
    assert frac is not None and te is not None and e2 is not None and reading is not None
    return Theorem(
        name="Theorem 5.3",
        basis=(cite(BUN_2022, "Theorem 5.3"),),
        relation=RELATION,
        guarantee=Neighbours.ADD_REMOVE,
        lower=OfPair(theorem_5_3_lower),
        params={
            "reading": reading,
            "fraction": frac,
            "test_epsilon": te,
            "conditional_epsilon": e2,
        },
        conditions=(
            f"a test H tells whether cluster C_i was sampled, measured on P: "
            f"Pr(H = 0 | C_i sampled) >= e^{{ε′}}·Pr(H = 0 | C_i not sampled), ε′ = {te:g}; "
            f"cluster fraction A = {frac:g}",
            f"reading: {reading}: " + READINGS[reading],
            f"ε″ = {e2:g} (in [0, ε])",
        ),
        tight=None,
        refusals=(Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY),),
    )


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Lower bound only."""
    if params.result == "proposition-4.2":
        return analyse_proposition_4_2(params, mechanism, guarantee)
    if params.result == "proposition-6.1":
        a, a_prime, p, p_prime = params.a, params.a_prime, params.p, params.p_prime
        q, q_prime = params.q, params.q_prime
        # check() has made every Proposition 6.1 input present
        assert a is not None and a_prime is not None and p is not None
        assert p_prime is not None and q is not None and q_prime is not None
        b4, b5 = proposition_6_1(a, a_prime, p, p_prime, q, q_prime)
        return assemble(
            proposition_6_1_theorem(b4, b5),
            mechanism,
            guarantee=guarantee,
            notes=(
                "a lower bound from your own attack's figures (it does not depend on the "
                f"declared ε); {BUN_2022} calls this result 'Theorem 6.1' in its "
                "prose, it is Proposition 6.1.",
            ),
            # ln 0 = −inf (an event the attack never sees): no bound, JSON null
            details={
                "bound_4": b4 if math.isfinite(b4) else None,
                "identity_5": b5 if math.isfinite(b5) else None,
            },
        )
    thm = theorem_5_3_theorem(params)
    e2, reading = params.conditional_epsilon, params.reading
    assert e2 is not None and reading is not None
    warnings: list[str] = []
    notes = [
        f"reading: {reading}: " + READINGS[reading] + ".",
        f"{BUN_2022}, Theorem 5.3 states ε″ = log(p/p′) (the test event likelier "
        "on P), but its App. D proof assumes p′ > p and bounds Pr(M(D′) ∈ E)/Pr(M(D) ∈ E): "
        "the printed formula holds for the proof's reading only (`reading: proof`). Read as "
        "stated (`reading: statement`) the bound is smaller: a test on P with ε′ = ε″ = ε = "
        "2 and A = 0.01 has an exact loss of 0.0619, not 0.3672.",
    ]
    if e2 > mechanism.epsilon:
        warnings.append(f"conditional_epsilon = {e2:g} exceeds M's ε; ε″ <= ε is used")
    return assemble(
        thm,
        mechanism,
        guarantee=guarantee,
        warnings=tuple(warnings),
        notes=tuple(notes),
        details={
            "fraction": params.fraction,
            "test_epsilon": params.test_epsilon,
            "conditional_epsilon": e2,
            "reading": reading,
        },
    )


SCHEME = Scheme(
    name="general-lower-bound",
    summary=(
        "lower bounds from your own attack: Proposition 6.1 and Theorem 5.3; Proposition "
        "4.2 for a randomised size function"
    ),
    params=Params,
    fields=FIELDS,
    guarantees=(Neighbours.REPLACE_ONE, Neighbours.ADD_REMOVE),
    basis=BASIS,
    analyse=analyse,
    check=check,
    example={
        "result": "theorem-5.3",
        "reading": "statement",
        "fraction": 0.1,
        "test_epsilon": 2.0,
        "conditional_epsilon": 1.0,
    },
)
