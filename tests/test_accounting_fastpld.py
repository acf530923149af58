"""The Poisson-sampled Gaussian and Laplace distributions (``accounting.fastpld``): each
direction's hockey-stick values against mpmath, and the composed totals against
dp_accounting's public PLD (``from_gaussian_mechanism``, ``from_laplace_mechanism``).

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
from ampcalc.accounting import pmf as P  # noqa: E402
from ampcalc.accounting.profiles import Gaussian, Laplace  # noqa: E402

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


def _laplace_exact(b: float, q: float, eps: float, remove: bool) -> mp.mpf:
    """∫ (A − e^ε·B)₊ by quadrature of the densities, split at their kinks and at the
    crossing (REMOVE: A = (1 − q)Lap(0) + qLap(−1), B = Lap(0); ADD: A = Lap(0),
    B = (1 − q)Lap(0) + qLap(1); scale b; at 30 digits)."""
    with mp.workdps(30):  # local: the next test keeps its own precision
        bb, qq, ee = mp.mpf(b), mp.mpf(q), mp.exp(mp.mpf(eps))

        def lap(x: mp.mpf, m: int) -> mp.mpf:
            return mp.exp(-abs(x - m) / bb) / (2 * bb)

        if remove:
            A = lambda x: (1 - qq) * lap(x, 0) + qq * lap(x, -1)  # noqa: E731
            B = lambda x: lap(x, 0)  # noqa: E731
        else:
            A = lambda x: lap(x, 0)  # noqa: E731
            B = lambda x: (1 - qq) * lap(x, 0) + qq * lap(x, 1)  # noqa: E731
        pts = [-mp.inf, mp.mpf(-1), mp.mpf(0), mp.mpf(1), mp.inf]
        # the ratio A/B is monotone between −1 and 1: its crossing with e^ε by bisection
        f = lambda x: A(x) - ee * B(x)  # noqa: E731
        lo, hi = mp.mpf(-1), mp.mpf(1)
        if f(lo) * f(hi) < 0:
            for _ in range(120):
                mid = (lo + hi) / 2
                if f(mid) * f(lo) > 0:
                    lo = mid
                else:
                    hi = mid
            pts.append(lo)
        pts = sorted(set(pts))
        return mp.quad(lambda x: max(mp.mpf(0), f(x)), pts)


@pytest.mark.parametrize(("b", "q"), [(1.0, 0.01), (0.5, 0.2), (3.0, 1.0)])
def test_laplace_directions_bracket_the_exact_divergence(b: float, q: float) -> None:
    prof = Laplace(scale=b)
    for eps in (-0.3, -0.01, 0.0, 0.003, 0.05, 0.4, 1.5):
        for remove in (True, False):
            up = float(fastpld.direction_delta(prof, q, np.array([eps]), remove=remove)[0])
            lo = float(
                fastpld.direction_delta(prof, q, np.array([eps]), remove=remove, upper=False)[0]
            )
            want = _laplace_exact(b, q, eps, remove)
            assert mp.mpf(lo) <= want * (1 + mp.mpf(1e-12)) + mp.mpf(1e-20), (remove, eps)
            assert mp.mpf(up) >= want * (1 - mp.mpf(1e-12)), (remove, eps)
            assert up - lo <= 1e-9 * up + 1e-15, (remove, eps)


def _lib(kind: str, scale: float, q: float, h: float, pess: bool) -> object:
    kw = dict(
        sampling_prob=q,
        value_discretization_interval=h,
        pessimistic_estimate=pess,
        use_connect_dots=pess,
    )
    if kind == "gaussian":
        return pld.from_gaussian_mechanism(scale, **kw)
    return pld.from_laplace_mechanism(scale, **kw)


@pytest.mark.parametrize(
    ("kind", "scale", "q", "k"),
    [
        ("gaussian", 1.0, 0.01, 100),
        ("gaussian", 0.7, 0.1, 20),
        ("gaussian", 2.0, 0.3, 5),
        ("laplace", 1.0, 0.01, 300),
        ("laplace", 0.5, 0.2, 10),
    ],
)
def test_sampled_pairs_agree_with_the_librarys_public_pld(
    kind: str, scale: float, q: float, k: int
) -> None:
    """Our pessimistic total is at or above the library's optimistic one and within 1e-6
    relative of its pessimistic one (both connect-the-dots at 1e-3; ours from outward
    rounded values, so never more than that below it); our optimistic total is at or
    below our pessimistic one and, at this coarse interval, within 3% of it (a sampled
    Laplace's loss has atoms between grid points: rounding them down is first order in
    h; 1% at the default 1e-4 is pinned in test_accounting_budget)."""
    h = 1e-3
    prof = Gaussian(sigma=scale) if kind == "gaussian" else Laplace(scale=scale)
    up = P.epsilon_for_delta(
        P.self_compose_pair(fastpld.sampled_pair(prof, q, h, pessimistic=True), k), 1e-6
    )
    opt = P.epsilon_for_delta(
        P.self_compose_pair(fastpld.sampled_pair(prof, q, h, pessimistic=False), k), 1e-6
    )
    lib_up = _lib(kind, scale, q, h, True).self_compose(k).get_epsilon_for_delta(1e-6)
    lib_lo = _lib(kind, scale, q, h, False).self_compose(k).get_epsilon_for_delta(1e-6)
    assert up == pytest.approx(lib_up, rel=1e-6)
    assert lib_lo <= up and opt <= up
    assert (up - opt) / up <= (5e-3 if kind == "gaussian" else 0.03)


@pytest.mark.parametrize(("kind", "scale", "q"), [("gaussian", 1.0, 0.01), ("laplace", 1.0, 0.05)])
def test_one_release_brackets_the_exact_profile_everywhere(
    kind: str, scale: float, q: float
) -> None:
    """Each direction's pessimistic curve is above the exact divergence at every ε (on and
    between grid points) and the optimistic one below it."""
    h = 1e-3
    prof = Gaussian(sigma=scale) if kind == "gaussian" else Laplace(scale=scale)
    pess = fastpld.sampled_pair(prof, q, h, pessimistic=True)
    opt = fastpld.sampled_pair(prof, q, h, pessimistic=False)
    eps = np.linspace(-0.2, 0.4, 6007)
    for i, remove in enumerate((True, False)):
        lo = fastpld.direction_delta(prof, q, eps, remove=remove, upper=False)
        up = fastpld.direction_delta(prof, q, eps, remove=remove, upper=True)
        assert np.all(P.delta_for_epsilon(pess.directions()[i], eps) >= lo * (1 - 1e-12))
        assert np.all(P.delta_for_epsilon(opt.directions()[i], eps) <= up * (1 + 1e-12) + 1e-15)
        for d in (pess.directions()[i], opt.directions()[i]):
            assert np.all(d.probs >= 0.0)
            assert d.probs.sum() + d.infinity_mass == pytest.approx(1.0, abs=1e-8)


def test_budget_upper_is_never_below_the_librarys_own_pessimistic_estimate() -> None:
    """The upper total is read at δ less the FFT allowance: at or above the library's
    pessimistic estimate (and within 1e-5 of it), the optimistic at or below it."""
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
    opt = budget.accountant_side(pairs, 1e-6, 1e-3, False)
    lib_up = (
        pld.from_gaussian_mechanism(1.0, sampling_prob=0.01, value_discretization_interval=1e-3)
        .self_compose(100)
        .get_epsilon_for_delta(1e-6)
    )
    assert lib_up == pytest.approx(0.9543054324526128, rel=1e-9)  # the library, pinned
    assert lib_up <= up <= lib_up * (1 + 1e-5)
    assert opt <= lib_up and (up - opt) / up <= 5e-3
