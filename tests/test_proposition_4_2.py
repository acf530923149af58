"""Bun et al., Proposition 4.2 (App. F) as a calculator: the corrected slack
2/ε² (not the printed (1/ε)²), α by the two-point bound, against mpmath brute force."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from ampcalc import engine
from ampcalc.designs.document import load_designs
from ampcalc.model.errors import DesignError
from ampcalc.schemes import _estimation_bound as eb

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy


@pytest.fixture(autouse=True)
def _restore_mpmath_precision():
    """The tests below raise mpmath's precision; other modules' oracles rely on theirs."""
    old = mp.mp.dps
    yield
    mp.mp.dps = old


def design(**sampling):
    doc = {
        "mechanism": {"epsilon": 1.0, "neighbours": "add-remove"},
        "sampling": {"scheme": "general-lower-bound", "result": "proposition-4.2", **sampling},
    }
    return load_designs(doc)[0]


def oracle_alpha(delta: float, eps_prime, kmax: int = 100_000) -> mp.mpf:
    """max over every k with kε′ <= 12 (beyond, x²/(1 + e^x) only decreases)."""
    top = min(kmax, int(12 / eps_prime) + 2)
    return max(
        (mp.mpf(k) * delta / 2) ** 2 / (1 + mp.exp(k * mp.mpf(eps_prime))) for k in range(1, top)
    )


def kmax_any(delta: float, t: mp.mpf) -> int:
    """A k with (kΔ/2)²/2 > t if any (as ε′ → 0 the k-th term tends to (kΔ/2)²/2)."""
    return int(mp.sqrt(8 * t) / delta) + 2


def oracle_lower(delta: float, mse: float, eps: float, slack: int = 2) -> mp.mpf:
    """The ε′ where α(ε′) falls to mse + slack/ε², by bisection on the brute-force α."""
    t = mp.mpf(mse) + mp.mpf(slack) / mp.mpf(eps) ** 2
    lo, hi = mp.mpf(0), mp.mpf(10)
    if (mp.mpf(kmax_any(delta, t)) * delta / 2) ** 2 / 2 <= t:
        return mp.mpf(0)
    for _ in range(60):
        mid = (lo + hi) / 2
        if oracle_alpha(delta, mid) > t:
            lo = mid
        else:
            hi = mid
    return lo


def test_laplace_variance_is_two_over_eps_squared() -> None:
    # App. F: E|f̃ + Lap(1/ε) − f|² = E|f̃ − f|² + Var(Lap(1/ε)); the paper writes (1/ε)²
    mp.mp.dps = 30
    for eps in (0.5, 1.0, 2.0):
        b = 1 / mp.mpf(eps)
        var = mp.quad(lambda x, b=b: x**2 * mp.exp(-abs(x) / b) / (2 * b), [-mp.inf, 0, mp.inf])
        assert var == pytest.approx(2 / eps**2, rel=1e-20)
        d = engine.bound(design(sensitivity=0.1, mse=0.25), epsilon=eps).details
        assert d["slack"] == pytest.approx(2 / eps**2) and d["slack_printed"] == 1 / eps**2


@pytest.mark.parametrize(
    ("delta", "mse", "eps"),
    [
        (0.1, 0.25, 1.0),
        (1.0, 0.0, 1.0),
        pytest.param(0.01, 0.25, 2.0, marks=pytest.mark.slow),
        (0.5, 3.0, 0.5),
        (2.0, 0.25, 0.3),
    ],
)
def test_lower_bound_matches_brute_force(delta: float, mse: float, eps: float) -> None:
    mp.mp.dps = 20
    want = oracle_lower(delta, mse, eps)
    got = engine.bound(design(sensitivity=delta, mse=mse), epsilon=eps).lower
    assert got <= want  # never above the true root
    assert float(want) - got <= 1e-11 * max(float(want), 1e-300)


def test_randomised_rounding_example_and_printed_slack() -> None:
    # f = r·|P| with r = 0.1 (Δ = 0.1), f̃ its randomised rounding (error <= 1/4), ε = 1:
    # ε′ >= 0.0231619 with the corrected slack 2/ε²; the printed (1/ε)² would claim
    # 0.0310746, above what the argument supports
    mp.mp.dps = 20
    r = engine.bound(design(sensitivity=0.1, mse=0.25, target_epsilon=0.01))
    assert r.lower == pytest.approx(0.0231619, abs=5e-8)
    assert r.lower <= oracle_lower(0.1, 0.25, 1.0)
    printed = r.details["lower_bound_printed_slack"]
    assert printed == pytest.approx(float(oracle_lower(0.1, 0.25, 1.0, slack=1)), rel=1e-10)
    assert printed > r.lower
    assert any("2/ε²" in n for n in r.notes)
    # the floor on the size function's error at ε′ = 0.01: α − 2/ε²
    a = oracle_alpha(0.1, 0.01)
    assert r.details["alpha"] <= a and float(a) - r.details["alpha"] <= 1e-10 * float(a)
    assert r.details["mse_floor"] == pytest.approx(float(a) - 2, rel=1e-10)
    assert r.upper is None and r.guarantee_neighbours == "add-remove"


def test_vectorised_over_epsilon() -> None:
    eps = np.array([0.2, 1.0, 5.0])
    out = eb.lower_epsilon(0.3, 0.25, eps)
    for e, v in zip(eps, out, strict=True):
        assert v == float(eb.lower_epsilon(0.3, 0.25, e))
    assert np.all(np.diff(out) > 0)  # a larger ε leaves less slack


def test_inputs_belong_to_their_result() -> None:
    with pytest.raises(DesignError, match="needs `mse`"):
        design(sensitivity=0.1)
    with pytest.raises(DesignError, match=r"belongs to `result: proposition-4\.2`"):
        load_designs(
            {
                "mechanism": {"epsilon": 1.0},
                "sampling": {
                    "scheme": "general-lower-bound",
                    "result": "theorem-5.3",
                    "reading": "proof",
                    "fraction": 0.1,
                    "test_epsilon": 1,
                    "conditional_epsilon": 1,
                    "target_epsilon": 1,
                },
            }
        )


def test_mechanism_declared_under_both_relations_runs_the_witness_at_half() -> None:
    # |S| + Lap(1/c) is 2c-DP replace-one: with M declared ε-DP under both relations the
    # witness may only use c = ε/2, so the slack is 2/c² = 8/ε²
    doc = {
        "mechanism": {"epsilon": 1.0, "neighbours": "both"},
        "sampling": {
            "scheme": "general-lower-bound",
            "result": "proposition-4.2",
            "sensitivity": 0.1,
            "mse": 0.25,
        },
    }
    r = engine.bound(load_designs(doc)[0])
    assert r.details["witness_epsilon"] == 0.5
    assert r.lower == float(eb.lower_epsilon(0.1, 0.25, 0.5))
    assert r.lower < float(eb.lower_epsilon(0.1, 0.25, 1.0))
