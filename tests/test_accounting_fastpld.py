"""The vectorised Poisson-subsampled Gaussian PLD (``accounting.fastpld``) against
dp_accounting's own construction, and its hockey-stick values against mpmath.

Oracle for the two directions: with x* the point where the privacy loss crosses ε (the
loss is monotone in x), H_{e^ε}(A ‖ B) = A(x <= x*) − e^ε·B(x <= x*), evaluated in mpmath
at 50 digits (dp_accounting's ``get_delta_for_epsilon`` formula, in exact arithmetic).
"""

from __future__ import annotations

import logging

import mpmath as mp
import numpy as np
import pytest

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy

pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")

from ampcalc.accounting import fastpld  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)


def _exact_remove(sigma: float, q: float, eps: float) -> mp.mpf:
    """REMOVE: A = (1 − q)N(0, σ²) + qN(−1, σ²), B = N(0, σ²); loss falls with x."""
    mp.mp.dps = 50
    s, qq, e = mp.mpf(sigma), mp.mpf(q), mp.mpf(eps)
    if mp.exp(e) <= 1 - qq:
        return 1 - mp.exp(e)
    # loss(x) = log(1 − q + q·exp((−2x − 1)/(2σ²))) = ε  ⇔  x = −1/2 − σ²·log((e^ε − 1 + q)/q)
    x = -mp.mpf(1) / 2 - s**2 * mp.log((mp.exp(e) - 1 + qq) / qq)
    a = (1 - qq) * mp.ncdf(x / s) + qq * mp.ncdf((x + 1) / s)
    return a - mp.exp(e) * mp.ncdf(x / s)


def _exact_add(sigma: float, q: float, eps: float) -> mp.mpf:
    """ADD: A = N(0, σ²), B = (1 − q)N(0, σ²) + qN(1, σ²); loss falls with x."""
    mp.mp.dps = 50
    s, qq, e = mp.mpf(sigma), mp.mpf(q), mp.mpf(eps)
    if mp.exp(-e) <= 1 - qq:
        return mp.mpf(0)
    # loss(x) = −log(1 − q + q·exp((2x − 1)/(2σ²))) = ε  ⇔  x = 1/2 + σ²·log((e^{−ε} − 1 + q)/q)
    x = mp.mpf(1) / 2 + s**2 * mp.log((mp.exp(-e) - 1 + qq) / qq)
    b = (1 - qq) * mp.ncdf(x / s) + qq * mp.ncdf((x - 1) / s)
    return mp.ncdf(x / s) - mp.exp(e) * b


@pytest.mark.parametrize(("sigma", "q"), [(1.0, 0.01), (0.7, 0.1), (2.0, 0.3)])
def test_direction_profiles_bound_the_exact_divergence_from_above_and_tightly(
    sigma: float, q: float
) -> None:
    for eps in (-0.05, -0.003, 0.0, 0.002, 0.01, 0.2, 1.0, 3.0):
        for fn, exact in ((fastpld.remove_delta, _exact_remove), (fastpld.add_delta, _exact_add)):
            got = float(fn(1.0 / sigma, q, np.array([eps]))[0])
            want = exact(sigma, q, eps)
            assert mp.mpf(got) >= want, (fn.__name__, eps)
            assert mp.mpf(got) - want <= 1e-9 * want + 1e-15, (fn.__name__, eps, got, want)


@pytest.mark.parametrize(("sigma", "q", "k"), [(1.0, 0.01, 100), (0.7, 0.1, 20), (2.0, 0.3, 5)])
def test_sampled_gaussian_matches_the_library_after_composition(
    sigma: float, q: float, k: int
) -> None:
    h = 1e-3
    for pess in (True, False):
        lib = pld.from_gaussian_mechanism(
            sigma,
            sampling_prob=q,
            value_discretization_interval=h,
            pessimistic_estimate=pess,
            use_connect_dots=pess,
        )
        ours = fastpld.sampled_gaussian_pld(sigma, 1.0, q, h, pessimistic=pess)
        want = lib.self_compose(k).get_epsilon_for_delta(1e-6)
        got = fastpld.epsilon_for_delta(fastpld.self_compose(ours, k), 1e-6)
        assert got == pytest.approx(want, rel=1e-9)


def test_self_compose_and_epsilon_scan_equal_the_library_on_its_own_pld() -> None:
    lap = pld.from_laplace_mechanism(1.0, sampling_prob=0.01, value_discretization_interval=1e-3)
    for k in (1, 7, 300):
        lib = lap.self_compose(k) if k > 1 else lap
        assert fastpld.epsilon_for_delta(lib, 1e-6) == pytest.approx(
            lib.get_epsilon_for_delta(1e-6), rel=1e-12
        )
        ours = fastpld.self_compose(lap, k)
        assert fastpld.epsilon_for_delta(ours, 1e-6) == pytest.approx(
            lib.get_epsilon_for_delta(1e-6), rel=1e-10
        )


def test_budget_upper_is_never_below_the_librarys_own_pessimistic_estimate() -> None:
    """Regression: read at δ itself, the vectorised build composed to 3.4e-10 (k = 100,
    interval 1e-3) and 5e-9 (k = 1000, 1e-4) relative *below* dp_accounting's own
    pessimistic estimate, the FFT's rounding; the allowance keeps the upper total at or
    above the library's and the lower at or below its optimistic estimate."""
    import ampcalc
    from ampcalc.analyses import budget

    d = ampcalc.load_designs(
        {
            "name": "g",
            "mechanism": {"gaussian": {"sigma": 1.0}},
            "sampling": {"scheme": "poisson", "rate": 0.01},
            "target": {"delta_prime": 1e-6},
        }
    )[0]
    entry = budget.Entry(name="g", design=d, count=100)
    pairs = [(entry, None, budget._native(entry))]
    up = budget.accountant_side(pairs, 1e-6, 1e-3, True)
    lo = budget.accountant_side(pairs, 1e-6, 1e-3, False)
    lib_up = (
        pld.from_gaussian_mechanism(1.0, sampling_prob=0.01, value_discretization_interval=1e-3)
        .self_compose(100)
        .get_epsilon_for_delta(1e-6)
    )
    lib_lo = (
        pld.from_gaussian_mechanism(
            1.0,
            sampling_prob=0.01,
            value_discretization_interval=1e-3,
            pessimistic_estimate=False,
            use_connect_dots=False,
        )
        .self_compose(100)
        .get_epsilon_for_delta(1e-6)
    )
    assert lib_up == pytest.approx(0.9543054324526128, rel=1e-9)  # the library, pinned
    assert lib_up <= up <= lib_up * (1 + 1e-5)
    assert lib_lo * (1 - 1e-5) <= lo <= lib_lo
