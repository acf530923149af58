"""``ampcalc budget``: entries composed from their design's whole amplified profile.

Oracles, computed here without ampcalc's code:

- the simple random sample's profile (Balle, Barthe and Gaboardi 2018, replace-one):
  ε′ = log(1 + (m/N)(e^ε − 1)), δ′ = (m/N)·δ_M(ε) with the Gaussian's exact profile
  δ_M(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (scipy), on a grid of ε′ at the accountant's
  interval, completed by symmetry (δ(−ε) = 1 − e^{−ε} + e^{−ε}δ(ε)), built with
  dp_accounting's public ``create_pmf_pessimistic_connect_dots`` and self-composed with
  its public ``PrivacyLossDistribution``: the issue's figures 0.36395 / 0.597 / 2.513
  for k = 1 / 10 / 1000;
- the unsampled composition of k Gaussians: the Gaussian with μ = √k (Dong, Roth and Su),
  ε at δ by bisection at 40 digits (mpmath): 649.385 for k = 1000, μ = 1;
- the optimal composition of k pure ε′ releases (Kairouz, Oh and Viswanath 2015) at 40
  digits (mpmath): 3.590423 for 1000 copies of cluster-equal's ε′ = 0.0241036.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ampcalc import engine
from ampcalc.accounting import pmf
from ampcalc.analyses import budget
from ampcalc.engine import design_profile
from ampcalc.model.design import Design, Target

pytest.importorskip("dp_accounting")
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import stats

mp.mp.dps = 40
ROOT = Path(__file__).resolve().parents[1]
SIZES = "[" + ", ".join(["5"] * 20) + "]"


def srs_ledger(
    tmp_path: Path, k: int, sigma: float = 1.0, n: int = 100_000, m: int = 1000
) -> Path:
    p = tmp_path / "srs.yaml"
    p.write_text(
        "target: {delta: 1e-6}\nneighbours: replace-one\nentries:\n"
        "  - name: srs\n    design:\n"
        f"      mechanism: {{gaussian: {{sigma: {sigma}, sensitivity: 1.0}}, "
        "neighbours: replace-one}\n"
        f"      sampling: {{scheme: srswor, population: {n}, sample: {m}}}\n"
        f"    count: {k}\n"
    )
    return p


def cluster_ledger(tmp_path: Path, mech: str, k: int) -> Path:
    p = tmp_path / "cluster.yaml"
    p.write_text(
        "target: {delta: 1e-6}\nneighbours: add-remove\nentries:\n"
        "  - name: cluster\n    design:\n"
        f"      mechanism: {{{mech}, neighbours: add-remove}}\n"
        f"      sampling: {{scheme: cluster, clusters: {{sizes: {SIZES}}}, chosen: 2}}\n"
        f"    count: {k}\n"
    )
    return p


def design_of(tmp_path: Path, mech: str, sampling: str) -> Design:
    p = tmp_path / "one.yaml"
    p.write_text(
        f"target: {{delta: 1e-6}}\nentries:\n  - design: {{mechanism: {mech}, "
        f"sampling: {sampling}}}\n    count: 1\n"
    )
    return budget.load_ledger(str(p)).entries[0].design


def run(path: Path) -> dict:
    return budget.run(budget.load_ledger(str(path)))


# ---- independent oracles -----------------------------------------------------------------


def gaussian_delta(mu: float, eps: np.ndarray) -> np.ndarray:
    return stats.norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)


def srs_reference(k: int, q: float = 0.01, mu: float = 1.0, h: float = 1e-4) -> float:
    """The issue's construction: the BBG profile on an ε′ grid, symmetric completion,
    the library's connect-the-dots and self-composition."""
    top = np.log1p(q * np.expm1(12.0))  # δ_M(12) < 1e-30 for μ = 1
    i = np.arange(0, int(np.ceil(top / h)) + 1)
    grid = i * h
    # each grid point's preimage ε = log(1 + (e^{ε′} − 1)/q): the profile at the grid
    d = q * np.maximum(gaussian_delta(mu, np.log1p(np.expm1(grid) / q)), 0.0)
    neg = -np.expm1(-grid[1:]) + np.exp(-grid[1:]) * d[1:]
    losses = np.concatenate([-i[1:][::-1], i])
    deltas = np.concatenate([neg[::-1], d])
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots(h, losses, deltas)
    one = pld.PrivacyLossDistribution(pmf)
    return float((one.self_compose(k) if k > 1 else one).get_epsilon_for_delta(1e-6))


def gaussian_composition_epsilon(mu: float, delta: float) -> mp.mpf:
    m = mp.mpf(mu)

    def prof(e: mp.mpf) -> mp.mpf:
        return mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m)

    lo, hi = mp.mpf(0), mp.mpf(10) * m * m + 100
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if prof(mid) > delta else (lo, mid)
    return hi


def k_fold_rr_epsilon(e0: float, k: int, delta: float) -> mp.mpf:
    ee0 = mp.mpf(e0)
    p = mp.exp(ee0) / (1 + mp.exp(ee0))
    terms = [
        (mp.binomial(k, i) * p ** (k - i) * (1 - p) ** i, (k - 2 * i) * ee0) for i in range(k + 1)
    ]

    def prof(eps: mp.mpf) -> mp.mpf:
        return mp.fsum(w * (1 - mp.exp(eps - loss)) for w, loss in terms if loss > eps)

    lo, hi = mp.mpf(0), mp.mpf(k * e0)
    for _ in range(120):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if prof(mid) > delta else (lo, mid)
    return hi


# ---- the issue's rows ----------------------------------------------------------------------


@pytest.mark.parametrize(("k", "target", "issue"), [(10, 0.60, 0.597), (1000, 2.52, 2.513)])
def test_simple_random_sample_gaussian_composes_its_profile(
    tmp_path: Path, k: int, target: float, issue: float
) -> None:
    out = run(srs_ledger(tmp_path, k))
    t = out["total"]
    ref = srs_reference(k)
    assert ref == pytest.approx(issue, abs=1e-3)
    assert t["upper"] <= target
    # the same profile composed: ampcalc's points are at least as fine (its grid in ε′
    # and the convex minorant) and rounded outward, so within the discretisation
    assert abs(t["upper"] - ref) <= 0.01 * ref
    row = out["entries"][0]
    assert row["composed_as"] == budget.PROFILE_COMPOSED_AS
    assert row["coupling"]["relation"] == "replace-one"
    assert len(row["composed_profile"]) > 2
    assert {b["reference"] for b in row["basis"]} >= {
        "balle-barthe-gaboardi-2018",
        "dong-roth-su",
        "doroshenko-connect-the-dots",
    }


def _bound_at(path: Path) -> float:
    led = budget.load_ledger(str(path))
    e = led.entries[0]
    d = dataclasses.replace(e.design, target=Target(delta_prime=led.delta))
    return float(engine.bound(d).upper)


def test_one_entry_of_count_one_is_bound_and_the_composition_brackets_it(tmp_path: Path) -> None:
    path = srs_ledger(tmp_path, 1)
    t = run(path)["total"]
    b = _bound_at(path)
    assert b == pytest.approx(0.3639, abs=1e-4)
    assert b <= t["upper"] <= b * (1 + 1e-6)
    assert srs_reference(1) == pytest.approx(0.36395, abs=1e-5)
    # the composition path itself, with no shortcut: in [bound, bound + its accuracy]
    led = budget.load_ledger(str(path))
    prof = design_profile.entry_profile(led.entries[0].design, floor=1e-12)
    pair = [(led.entries[0], budget._profile_entry(prof), None)]
    pess = budget.accountant_side(pair, 1e-6, led.discretization, True)
    opt = budget.accountant_side(pair, 1e-6, led.discretization, False)
    assert opt <= b <= pess
    assert pess - b <= pess - opt


def test_cluster_gaussian_never_above_the_unsampled_composition(tmp_path: Path) -> None:
    unsampled = gaussian_composition_epsilon(math.sqrt(1000), 1e-6)
    assert float(unsampled) == pytest.approx(649.385, abs=1e-3)
    out = run(cluster_ledger(tmp_path, "gaussian: {sigma: 1.0}", 1000))
    assert out["total"]["upper"] <= unsampled
    assert out["entries"][0]["coupling"]["relation"] == "add-remove"


def test_cluster_laplace_never_above_its_pure_spelling(tmp_path: Path) -> None:
    pure_path = tmp_path / "pure"
    pure_path.mkdir()
    pure = run(cluster_ledger(pure_path, "epsilon: 0.1", 1000))["total"]
    e0 = run(cluster_ledger(pure_path, "epsilon: 0.1", 1))["entries"][0]["epsilon_prime"]["upper"]
    exact = k_fold_rr_epsilon(e0, 1000, 1e-6)
    assert float(exact) == pytest.approx(3.590423, abs=2e-6)
    assert exact <= pure["upper"] <= exact * (1 + 1e-9)
    lap = run(cluster_ledger(tmp_path, "laplace: {scale: 10}", 1000))["total"]
    assert lap["upper"] <= exact
    # the Laplace's own profile through the cluster theorem, composed: about 2.18
    assert lap["upper"] <= 2.19


# ---- the points a connect-the-dots PMF is built from ----------------------------------


def test_profile_points_bound_a_gaussian_and_clip_nothing() -> None:
    """Points of the Gaussian μ = 1's own profile, thinned and rounded up, completed to
    negative losses: the distribution built from them has no negative mass and δ at or
    above the exact profile at every ε, on both sides."""
    x = np.concatenate([np.linspace(0, 12, 300), np.linspace(0.3, 0.5, 7)])
    x = np.unique(x)
    pts = list(zip(x, np.minimum(1.0, gaussian_delta(1.0, x) * (1 + 1e-12)), strict=True))
    one = pmf.from_profile_points(*design_profile.completion(pts), 1e-3)
    assert one.probs.min() >= 0.0
    assert math.fsum(one.probs.tolist()) + one.infinity_mass == pytest.approx(1.0, abs=1e-12)
    grid = np.linspace(-6, 8, 57)
    got = pmf.delta_for_epsilon(one, grid)
    exact = np.where(
        grid >= 0,
        gaussian_delta(1.0, np.abs(grid)),
        1 - np.exp(grid) + np.exp(grid) * gaussian_delta(1.0, np.abs(grid)),
    )
    assert np.all(got >= exact - 1e-12)
    # the library's connect-the-dots on our grid values gives the same curve
    losses = one.lower + np.flatnonzero(one.probs > 0)
    lib = pld.PrivacyLossDistribution(
        pld_pmf.create_pmf_pessimistic_connect_dots(
            1e-3, losses, pmf.delta_for_epsilon(one, losses * 1e-3)
        )
    )
    for e in (-2.0, 0.0, 0.5, 3.0):
        assert lib.get_delta_for_epsilon(e) == pytest.approx(
            pmf.delta_for_epsilon(one, [e])[0], rel=1e-9, abs=1e-15
        )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 1.0)), min_size=2, max_size=30))
def test_any_point_set_gives_a_distribution_with_no_clipped_mass(pts: list) -> None:
    """Arbitrary (even non-monotone, non-convex) upper points, completed: the
    distribution has no negative mass (nothing clipped), and its masses and its mass at
    +∞ sum to 1."""
    best: dict[float, float] = {}
    for x, d in pts:
        best[x] = min(d, best.get(x, 1.0))
    xs = sorted(best)
    pts = [(x, best[x]) for x in xs]
    if pts[0][0] != 0.0:
        pts = [(0.0, 1.0), *pts]
    one = pmf.from_profile_points(*design_profile.completion(pts), 1e-2)
    assert one.probs.min() >= 0.0
    assert math.fsum(one.probs.tolist()) + one.infinity_mass == pytest.approx(1.0, abs=1e-12)
    assert pmf.delta_for_epsilon(one, [0.0])[0] <= 1.0


# ---- properties over designs ---------------------------------------------------------------


@settings(max_examples=6, deadline=None)
@given(sigma=st.floats(0.6, 3.0), k=st.integers(1, 40), m=st.integers(10, 5000))
def test_srs_total_at_most_unsampled_and_count_one_is_bound(
    tmp_path_factory: pytest.TempPathFactory, sigma: float, k: int, m: int
) -> None:
    tmp = tmp_path_factory.mktemp("srs")
    path = srs_ledger(tmp, k, sigma=sigma, n=10_000, m=m)
    t = run(path)["total"]
    assert t["upper"] <= gaussian_composition_epsilon(math.sqrt(k) / sigma, 1e-6) * (1 + 1e-9)
    if k == 1:
        b = _bound_at(path)
        assert b <= t["upper"] <= b * (1 + 1e-6)


@settings(max_examples=5, deadline=None)
@given(scale=st.floats(2.0, 30.0), k=st.integers(1, 200))
def test_named_pure_mechanism_never_above_its_pure_spelling(
    tmp_path_factory: pytest.TempPathFactory, scale: float, k: int
) -> None:
    tmp = tmp_path_factory.mktemp("lap")
    lap = run(cluster_ledger(tmp, f"laplace: {{scale: {scale!r}}}", k))["total"]["upper"]
    pure = run(cluster_ledger(tmp, f"epsilon: {1.0 / scale!r}", k))["total"]["upper"]
    # the pure spelling's ε is 1/b as YAML reads it, the Laplace's its own (rounded up)
    assert lap <= pure * (1 + 1e-9)


@pytest.mark.parametrize(
    ("mech", "sampling", "relation"),
    [
        (
            "{gaussian: {sigma: 1.0}, neighbours: add-remove}",
            "{scheme: poisson, rate: 0.1}",
            "add-remove",
        ),
        (
            "{gaussian: {sigma: 1.0}, neighbours: both}",
            "{scheme: srswor, population: 100, sample: 10}",
            "replace-one",
        ),
        # a simple random sample of an M stated under add-remove only: no cap
        (
            "{gaussian: {sigma: 1.0}, neighbours: add-remove}",
            "{scheme: srswor, population: 100, sample: 10}",
            None,
        ),
        # fixed-order systematic sampling: an added record shifts every later position
        (
            "{epsilon: 1.0, neighbours: both}",
            "{scheme: systematic, population: 100, interval: 10, order: fixed}",
            None,
        ),
    ],
)
def test_coupling_table(tmp_path: Path, mech: str, sampling: str, relation: str | None) -> None:
    rel, why = design_profile.coupling(design_of(tmp_path, mech, sampling))
    assert (None if rel is None else str(rel)) == relation
    assert why


def test_a_capped_entry_is_never_above_its_own_mechanism(tmp_path: Path) -> None:
    """Pointwise: the cluster-sampled Gaussian's points are at most the Gaussian's own
    exact profile (scipy) wherever the coupling caps them."""
    d = design_of(
        tmp_path,
        "{gaussian: {sigma: 1.0}, neighbours: add-remove}",
        f"{{scheme: cluster, clusters: {{sizes: {SIZES}}}, chosen: 2}}",
    )
    prof = design_profile.entry_profile(d, floor=1e-15)
    x = np.array([q[0] for q in prof.points])
    d = np.array([q[1] for q in prof.points])
    assert np.all(d <= gaussian_delta(1.0, x) * (1 + 1e-9) + 1e-15)
