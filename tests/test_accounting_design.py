"""Named mechanisms in design files, and their profiles through the sampling designs.

Oracles: the exact Poisson-subsampled Gaussian at δ′ (the removal direction, Balle,
Barthe and Gaboardi 2018, Theorem 8's tight case: δ′(ε′) = q·δ_M(ε) at
e^{ε′} = 1 + q(e^ε − 1)) solved at 40 digits with mpmath; the plain (ε, δ) designs of
the same profile points (the scheme's own theorem).
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import textwrap

import mpmath as mp
import numpy as np
import pytest

from ampcalc import api
from ampcalc.accounting.profiles import Gaussian, Laplace, epsilon_at_delta
from ampcalc.math import numeric
from ampcalc.model.errors import AmpcalcError, DesignError

mp.mp.dps = 40


def design(
    mechanism: str, sampling: str = "{scheme: poisson, rate: 0.01}", target: str = ""
) -> str:
    text = f"name: d\nmechanism: {mechanism}\nsampling: {sampling}\n"
    if target:
        text += f"target: {target}\n"
    return text


def poisson_gaussian_oracle(mu: float, q: float, delta_prime: float) -> mp.mpf:
    """ε′ at δ′ of the removal direction: q·δ_M(ε) = δ′, ε′ = log(1 + q(e^ε − 1))."""
    m, qq = mp.mpf(mu), mp.mpf(q)

    def prof(e: mp.mpf) -> mp.mpf:
        return mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m)

    guess = float(epsilon_at_delta(Gaussian(mu_given=mu), delta_prime / q))
    e0 = mp.findroot(lambda e: prof(e) - mp.mpf(delta_prime) / qq, mp.mpf(guess))
    return mp.log(1 + qq * mp.expm1(e0))


# --------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "kind"),
    [
        ("{gaussian: {sigma: 4.0, sensitivity: 1.0}, neighbours: add-remove}", "gaussian"),
        ("{laplace: {scale: 2.0, sensitivity: 1.0}}", "laplace"),
        ("{discrete-laplace: {scale: 2.0, sensitivity: 3}}", "discrete-laplace"),
        ("{discrete-gaussian: {sigma: 3.0}}", "discrete-gaussian"),
        ("{randomized-response: {epsilon: 1.0, categories: 4}}", "randomized-response"),
        ("{zcdp: {rho: 0.5}}", "zcdp"),
    ],
)
def test_named_forms_load(mechanism: str, kind: str) -> None:
    d = api.load_design(design(mechanism))
    assert d.mechanism is not None and d.mechanism.profile is not None
    assert d.mechanism.profile.to_dict()["mechanism"] == kind


def test_plain_form_is_unchanged() -> None:
    d = api.load_design(design("{epsilon: 1.0, delta: 1e-6}"))
    assert d.mechanism is not None and d.mechanism.profile is None
    assert (d.mechanism.epsilon, d.mechanism.delta) == (1.0, 1e-6)


@pytest.mark.parametrize(
    ("mechanism", "line", "field", "words"),
    [
        ("{gaussian: {sigma: -1.0}}", 2, "mechanism.gaussian.sigma", "expected a number in (0"),
        (
            "{gaussian: {sigma: 1.0, sensitiviti: 1}}",
            2,
            "mechanism.gaussian.sensitiviti",
            "did you mean",
        ),
        (
            "{gaussian: {sensitivity: 1.0}}",
            2,
            "mechanism.gaussian",
            "missing required key 'sigma'",
        ),
        (
            "{gaussian: {sigma: 1.0}, epsilon: 1.0}",
            2,
            "mechanism.epsilon",
            "(epsilon, delta) form",
        ),
        (
            "{gaussian: {sigma: 1.0}, laplace: {scale: 1.0}}",
            2,
            "mechanism.laplace",
            "one named mechanism",
        ),
        (
            "{discrete-laplace: {scale: 1.0, sensitivity: 1.5}}",
            2,
            "mechanism.discrete-laplace.sensitivity",
            "whole number",
        ),
        (
            "{randomized-response: {categories: 3}}",
            2,
            "mechanism.randomized-response",
            "'epsilon'",
        ),
        ("{gaussian: 3}", 2, "mechanism.gaussian", "a mapping"),
        ("{releases: [{gaussian: {sigma: 1.0}}, 0.5]}", 2, "mechanism.releases[1]", "do not mix"),
        (
            "{releases: [{gaussian: {sigma: 1.0}, count: 0}]}",
            2,
            "mechanism.releases[0].count",
            "whole number",
        ),
        (
            "{releases: [{gaussian: {sigma: 1.0}}, {zcdp: {rho: 1.0}}]}",
            2,
            "mechanism.releases",
            "no sound composition",
        ),
        ("{gaussian: {sigma: 1.0}, neighbours: sideways}", 2, "mechanism.neighbours", "one of"),
    ],
)
def test_bad_named_input_points_at_file_and_line(
    mechanism: str, line: int, field: str, words: str
) -> None:
    with pytest.raises(DesignError) as info:
        api.load_design(design(mechanism))
    err = info.value
    assert err.where is not None
    assert err.where.line == line
    assert err.where.field == field
    assert words in str(err)


# --------------------------------------------------------------------------------------
# through the schemes
# --------------------------------------------------------------------------------------


def test_poisson_gaussian_acceptance_value() -> None:
    # issue 17 §2: σ = 1, q = 0.01, δ′ = 1e-6: 0.3639478396 (dp_accounting PLD
    # 0.3639478398, RDP 1.212)
    r = api.bound(
        design("{gaussian: {sigma: 1.0, sensitivity: 1.0}}", target="{delta_prime: 1e-6}")
    )
    exact = poisson_gaussian_oracle(1.0, 0.01, 1e-6)
    assert r.upper == pytest.approx(0.3639478396, abs=1e-10)
    assert r.lower is not None
    assert mp.mpf(r.lower) <= exact <= mp.mpf(r.upper)
    assert float((mp.mpf(r.upper) - exact) / exact) < 1e-10
    assert r.verdict == "amplifies"
    assert r.delta_prime == 1e-6


@pytest.mark.parametrize(("sigma", "q", "dp"), [(0.7, 0.05, 1e-5), (2.0, 0.001, 1e-8)])
def test_poisson_gaussian_brackets_the_exact_value(sigma: float, q: float, dp: float) -> None:
    r = api.bound(
        design(
            f"{{gaussian: {{sigma: {sigma}}}}}",
            sampling=f"{{scheme: poisson, rate: {q}}}",
            target=f"{{delta_prime: {dp}}}",
        )
    )
    exact = poisson_gaussian_oracle(1.0 / sigma, q, dp)
    assert mp.mpf(r.lower) <= exact <= mp.mpf(r.upper)
    assert float((mp.mpf(r.upper) - mp.mpf(r.lower)) / exact) < 1e-9


def test_json_carries_the_sampled_profile() -> None:
    r = api.bound(design("{gaussian: {sigma: 1.0}}", target="{delta_prime: 1e-6}"))
    points = r.to_dict()["details"]["profile"]
    assert len(points) >= 10
    eps = [p[0] for p in points]
    deltas = [p[1] for p in points]
    assert eps == sorted(eps)
    assert all(a >= b for a, b in itertools.pairwise(deltas))
    # each point is the Poisson image of a Gaussian profile point: δ′ = q·δ_M(ε)
    g = Gaussian(sigma=1.0)
    for ep, dp in points:
        e0 = float(numeric.amplification_inverse(0.01, ep))
        assert dp == pytest.approx(0.01 * float(g.delta(e0)), rel=1e-6)
    pt = r.details["profile_point"]
    assert pt["delta_prime"] <= 1e-6
    assert r.epsilon == pt["epsilon"]


def test_pure_laplace_at_delta_zero_is_the_plain_pure_bound() -> None:
    named = api.bound(design("{laplace: {scale: 2.0}}", target="{delta_prime: 0}"))
    plain = api.bound(design("{epsilon: 0.5}"))
    assert named.upper == plain.upper
    # the witness ε is inverted one float low (every float below fails δ = 0)
    assert named.lower <= plain.lower
    assert named.lower == pytest.approx(plain.lower, rel=1e-14)


def test_laplace_with_delta_prime_improves_on_pure() -> None:
    # a profile point below ε₀ with δ_M(ε)·q <= δ′ gives a smaller ε′ than A(q, ε₀)
    r = api.bound(design("{laplace: {scale: 2.0}}", target="{delta_prime: 1e-4}"))
    pure = float(numeric.amplification_upper(0.01, 0.5))
    assert r.upper < pure
    # ε₀ − ε at the chosen point: δ_M = 1 − e^{(ε−ε₀)/2} = δ′/q = 0.01
    e = r.details["profile_point"]["epsilon"]
    assert float(Laplace(scale=2.0).delta(e)) <= 0.01 + 1e-15


def test_srswor_profile_equals_the_plain_design_at_the_chosen_point() -> None:
    srs = "{scheme: srswor, population: 10000, sample: 100}"
    r = api.bound(
        design(
            "{gaussian: {sigma: 2.0}, neighbours: both}",
            sampling=srs,
            target="{delta_prime: 1e-6}",
        )
    )
    e = r.details["profile_point"]["epsilon"]
    d = r.details["profile_point"]["delta"]
    plain = api.bound(design(f"{{epsilon: {e!r}, delta: {d!r}, neighbours: both}}", sampling=srs))
    assert plain.upper == r.upper
    assert plain.delta_prime <= 1e-6
    assert r.lower is None  # no exactness claimed for replace-one
    assert r.guarantee_neighbours == "replace-one"


def test_replace_one_guarantee_uses_the_doubled_sensitivity() -> None:
    # add-remove Gaussian, replace-one guarantee for Poisson: M's replace-one point is
    # (2ε, δ_{2μ}(2ε)); the result is a guarantee no smaller than the add-remove one
    r_ar = api.bound(design("{gaussian: {sigma: 2.0}}", target="{delta_prime: 1e-6}"))
    r_ro = api.bound(
        design("{gaussian: {sigma: 2.0}}", target="{delta_prime: 1e-6}")
        + "guarantee: replace-one\n"
    )
    assert r_ro.error is None
    assert r_ro.upper >= r_ar.upper
    ref = float(epsilon_at_delta(Gaussian(mu_given=1.0), 1e-6))  # 2Δ/σ = 1
    assert r_ro.details["reference_epsilon"] == pytest.approx(ref, rel=1e-12)


def test_a_binomial_size_is_answered_as_the_poisson_sample_it_is() -> None:
    # m ~ Binomial(N, p) then m of N without replacement is Poisson sampling with rate p,
    # whose replace-one results take (ε, δ) mechanisms too: the same bounds as `poisson`
    mech, target = "{gaussian: {sigma: 1.0}, neighbours: both}", "{delta_prime: 1e-6}"
    size = "{scheme: random-size, population: 1000, size: {distribution: binomial, p: 0.1}}"
    r = api.bound(design(mech, sampling=size, target=target))
    p = api.bound(
        design(mech, sampling="{scheme: poisson, rate: 0.1}", target=target)
        + "guarantee: replace-one\n"
    )
    assert r.error is None and p.error is None
    assert (r.lower, r.upper, r.delta_prime) == (p.lower, p.upper, p.delta_prime)


@pytest.mark.parametrize(
    ("sampling", "words"),
    [
        (
            "{scheme: random-size, population: 1000, "
            "size: {distribution: uniform, low: 50, high: 150}}",
            "no (ε, δ) theorem",
        ),
        ("{scheme: srswr, population: 1000, sample: 10}", "no (ε, δ) theorem"),
    ],
)
def test_schemes_without_an_epsilon_delta_theorem_refuse_with_the_reason(
    sampling: str, words: str
) -> None:
    r = api.bound(
        design(
            "{gaussian: {sigma: 1.0}, neighbours: both}",
            sampling=sampling,
            target="{delta_prime: 1e-6}",
        )
    )
    assert r.upper is None
    assert r.error is not None and words in r.error


def test_gaussian_needs_a_target_delta() -> None:
    r = api.bound(design("{gaussian: {sigma: 1.0}}"))
    assert r.error is not None and "delta_prime" in r.error


def test_zcdp_upper_is_above_its_gaussian_witness() -> None:
    z = api.bound(design("{zcdp: {rho: 0.5}}", target="{delta_prime: 1e-6}"))
    g = api.bound(design("{gaussian: {sigma: 1.0}}", target="{delta_prime: 1e-6}"))
    # ρ = 0.5 is the zCDP of the σ = 1 Gaussian: the conversion is looser, the lower
    # bound is that Gaussian's exact value
    assert z.upper > g.upper
    assert z.lower <= g.lower
    assert z.lower == pytest.approx(g.lower, rel=1e-14)


def test_invert_refuses_a_named_mechanism() -> None:
    r = api.invert(design("{gaussian: {sigma: 1.0}}"), target=1.0)
    assert r.error is not None and "named mechanism" in r.error


def test_named_bound_imports_no_scipy_nor_accountant() -> None:
    text = design("{gaussian: {sigma: 1.0}}", target="{delta_prime: 1e-6}")
    code = textwrap.dedent(
        f"""
        import sys
        from ampcalc import api
        api.bound(api.load_design({text!r}))
        print([m for m in sys.modules if m.split('.')[0] in ('scipy', 'dp_accounting')])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_profile_points_are_valid_for_the_exact_subsampled_gaussian() -> None:
    # every reported (ε′, δ′) is a guarantee: δ′ >= the exact removal-direction δ at ε′
    r = api.bound(design("{gaussian: {sigma: 1.0}}", target="{delta_prime: 1e-6}"))
    m, q = mp.mpf(1), mp.mpf("0.01")
    for ep, dp in r.details["profile"][::4]:
        e = mp.log(1 + mp.expm1(mp.mpf(ep)) / q)
        exact = q * (mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m))
        assert mp.mpf(dp) >= exact
        assert math.isfinite(ep)
    assert np.isfinite(r.upper)


def test_validate_accepts_and_verify_refuses_a_named_mechanism() -> None:
    text = design("{gaussian: {sigma: 1.0}}", target="{delta_prime: 1e-6}")
    (row,) = api.validate(api.load_design(text))
    assert row["valid"] is True
    (bad,) = api.validate(api.load_design(design("{gaussian: {sigma: 1.0}}")))
    assert bad["valid"] is False and "delta_prime" in bad["error"]
    with pytest.raises(AmpcalcError, match="named"):
        api.verify(api.load_design(text))
