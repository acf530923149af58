"""The accountant's cost is checked before it is spent; pure mixes compose in closed form.

Every input that once took gigabytes or minutes runs in a subprocess under an address
space cap (1.5 GB) and a CPU cap, so a regression fails here instead of taking the
machine down; refusals must be exit 2 with the limit named. Oracles: the optimal
composition of identical ε₀-DP releases (Kairouz, Oh and Viswanath 2015, Theorem 3.3),
the joint-outcome sum of randomized responses at 40 digits (mpmath), basic composition,
and dp_accounting's own ``compose``.
"""

from __future__ import annotations

import itertools
import json
import math
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from ampcalc import api
from ampcalc.accounting import compose, fastpld
from ampcalc.accounting.profiles import (
    DiscreteLaplace,
    Gaussian,
    Laplace,
    RandomizedResponse,
    epsilon_at_delta,
)
from ampcalc.model.limits import LIMITS

ROOT = Path(__file__).resolve().parents[1]
MEMORY = 1_500_000_000


def _caps(cpu: int) -> object:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    return apply


def run_cli(args: list[str], cwd: Path, cpu: int = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "ampcalc", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        preexec_fn=_caps(cpu),
        timeout=4 * cpu,
        check=False,
    )


def design(tmp_path: Path, mechanism: str, name: str = "d.yaml") -> Path:
    p = tmp_path / name
    p.write_text(
        f"name: t\nmechanism: {mechanism}\nsampling: {{scheme: poisson, rate: 0.01}}\n"
        "target: {delta_prime: 1e-6}\n"
    )
    return p


def ledger(tmp_path: Path, entries: list[tuple[str, int]], extra: str = "") -> Path:
    p = tmp_path / "ledger.yaml"
    lines = ["name: t", "target: {epsilon: 2.0, delta: 1e-6}", extra, "entries:"]
    for mech, count in entries:
        lines.append(
            f"  - design: {{mechanism: {mech}, sampling: {{scheme: poisson, rate: 0.5}}}}"
        )
        lines.append(f"    count: {count}")
    p.write_text("\n".join(lines) + "\n")
    return p


def error_of(proc: subprocess.CompletedProcess[str]) -> str:
    return str(json.loads(proc.stdout)["error"]["message"])


# -- releases on one sample ----------------------------------------------------------------


def test_huge_mixed_releases_are_refused_before_the_memory_is_spent(tmp_path: Path) -> None:
    pytest.importorskip("dp_accounting")
    mech = (
        "{releases: [{gaussian: {sigma: 1.0}, count: 100000}, "
        "{laplace: {scale: 2.0}, count: 100000}], neighbours: add-remove}"
    )
    proc = run_cli(["bound", str(design(tmp_path, mech)), "--json"], tmp_path, cpu=20)
    assert proc.returncode == 2, proc.stderr
    msg = error_of(proc)
    assert f"limit of {LIMITS['pld_points'].value:,}" in msg
    assert "100000 × Gaussian" in msg


def test_gaussian_and_laplace_mix_casts_no_infinity(tmp_path: Path) -> None:
    # the profile table read at ε = inf gave an index from a non-finite value
    pytest.importorskip("dp_accounting")
    mech = "{releases: [{gaussian: {sigma: 2.0}, count: 3}, {laplace: {scale: 1.0}}]}"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = api.bound(design(tmp_path, mech).read_text())
        acc = r.details["mechanism"]
        assert acc["mechanism"] == "accountant-composition"
        comp = compose.AccountantComposition(
            releases=((Gaussian(sigma=2.0), 3), (Laplace(scale=1.0), 1))
        )
        far = comp.delta(np.array([1e3, 1e300, np.inf]))
        low = comp.delta_lower(np.array([1e300, np.inf]))
    # beyond the table the decreasing profile is bounded by its last value, and is
    # never read as δ(0) (what the garbage index gave)
    assert far[1] == far[2] == far[0] < 1e-12 < float(comp.delta(0.0)[()])
    assert list(low) == [0.0, 0.0]
    assert 0 < r.lower <= r.upper < math.inf


# -- pure releases --------------------------------------------------------------------------


def _joint_delta(groups: list[tuple[float, int]], eps: float) -> mp.mpf:
    """δ(ε) of the composed randomized responses, summed over joint outcomes at 40 digits."""
    total = mp.mpf(0)
    ranges = [range(k + 1) for _, k in groups]
    for idx in itertools.product(*ranges):
        logp, loss = mp.mpf(0), mp.mpf(0)
        for (e0, k), i in zip(groups, idx, strict=True):
            e = mp.mpf(e0)
            p = mp.e**e / (1 + mp.e**e)
            logp += mp.log(mp.binomial(k, i)) + (k - i) * mp.log(p) + i * mp.log(1 - p)
            loss += (k - 2 * i) * e
        if loss > eps:
            total += mp.e**logp * (1 - mp.e ** (eps - loss))
    return total


@pytest.mark.parametrize("groups", [[(0.5, 6), (1.0, 3)], [(0.2, 4), (0.7, 2), (1.3, 3)]])
def test_pure_mix_is_the_joint_sum_of_randomized_responses(groups: list) -> None:
    mp.mp.dps = 40
    rel = [(RandomizedResponse(epsilon=e), k) for e, k in groups]
    mix = compose.compose(rel)
    assert isinstance(mix, compose.PureMix) and mix.exact
    for eps in (0.0, 0.3, 1.0, 2.5, 4.0):
        exact = _joint_delta(groups, eps)
        up = float(mix.delta(eps)[()])
        lo = float(mix.delta_lower(eps)[()])
        assert lo <= exact <= up
        # δ = A − e^ε·B from running sums: the rounding allowance is absolute (A <= 1)
        assert up - lo <= 1e-11 + 1e-9 * float(exact)
    s = math.fsum(k * e for e, k in groups)
    assert s <= mix.pure_epsilon <= s * (1 + 1e-12)
    assert float(mix.delta(mix.pure_epsilon)[()]) == 0.0


def test_pure_mix_of_one_epsilon_is_the_optimal_composition() -> None:
    # discrete Laplace and randomized response at the same ε₀ = 0.5: one group of
    # k = 30, the Kairouz–Oh–Viswanath closed form
    rel = [(DiscreteLaplace(scale=2.0), 20), (RandomizedResponse(epsilon=0.5), 10)]
    mix = compose.compose(rel)
    assert isinstance(mix, compose.PureMix) and mix.groups == ((0.5, 30),)
    kov = compose.PureComposition(epsilon=0.5, count=30, single=RandomizedResponse(epsilon=0.5))
    e = np.linspace(0.0, 15.0, 301)
    a, b = mix.delta(e), kov.delta(e)
    assert np.all(a >= b - 1e-11) and np.all(np.abs(a - b) <= 1e-11 + 1e-9 * b)
    # the lower profile is a release's own (discrete Laplace is only dominated)
    assert np.all(
        mix.delta_lower(e) == np.maximum(rel[0][0].delta_lower(e), rel[1][0].delta_lower(e))
    )


def test_too_many_outcomes_fall_back_to_basic_composition() -> None:
    rel = [(RandomizedResponse(epsilon=0.1 * i), 100) for i in range(1, 5)]
    mix = compose.compose(rel)
    assert isinstance(mix, compose.PureMix)
    (s, one), *_ = mix.groups
    assert one == 1 and len(mix.groups) == 1 and s >= 100.0
    # one randomized response at Σε: δ(ε) = (e^Σ − e^ε)/(e^Σ + 1)
    for eps in (90.0, 99.0, 99.99):
        want = -math.expm1(eps - s) / (1 + math.exp(-s))
        assert want <= float(mix.delta(eps)[()]) <= want * (1 + 1e-9)


def test_pure_mix_of_a_thousand_releases_is_fast_and_bounded(tmp_path: Path) -> None:
    mech = (
        "{releases: [{discrete-laplace: {scale: 2.0}, count: 1000}, "
        "{randomized-response: {epsilon: 1.0}, count: 10}]}"
    )
    proc = run_cli(["bound", str(design(tmp_path, mech)), "--json"], tmp_path, cpu=10)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)["results"][0]
    assert r["details"]["mechanism"]["mechanism"] == "pure-composition"
    assert 0 < r["epsilon_prime"]["lower"] <= r["epsilon_prime"]["upper"]
    # below basic composition's amplified bound: log(1 + q(e^{510} − 1))
    assert r["epsilon_prime"]["upper"] < 510 + math.log(0.01)
    # the upper profile inverted at the chosen point agrees with the closed form
    mix = compose.compose(
        [(DiscreteLaplace(scale=2.0), 1000), (RandomizedResponse(epsilon=1.0), 10)]
    )
    assert float(epsilon_at_delta(mix, r["delta"])) <= r["epsilon"] * (1 + 1e-9)


# -- named mechanisms and the ε limit --------------------------------------------------------


@pytest.mark.parametrize("scale", ["5e-324", "1e-300", "9.9e-7"])
def test_laplace_scale_implying_an_epsilon_above_the_limit_is_refused(
    tmp_path: Path, scale: str
) -> None:
    proc = run_cli(
        ["bound", str(design(tmp_path, f"{{laplace: {{scale: {scale}}}}}")), "--json"],
        tmp_path,
        cpu=10,
    )
    assert proc.returncode == 2, proc.stderr
    err = json.loads(proc.stdout)["error"]
    assert err["field"] == "mechanism.laplace.scale"
    assert f"limit of {LIMITS['epsilon'].value:,}" in err["message"]


def test_laplace_scale_at_the_limit_is_accepted() -> None:
    text = (
        "name: t\nmechanism: {laplace: {scale: 1e-6}}\nsampling: {scheme: poisson, rate: 0.01}\n"
    )
    r = api.bound(text)
    # ε₀ = 10⁶: A(q, ε₀) = log(1 + q(e^{ε₀} − 1)) ≈ ε₀ + log q
    assert r.upper == pytest.approx(1e6 + math.log(0.01), rel=1e-12)


# -- ledgers -----------------------------------------------------------------------------------


def test_ledger_whose_pairs_exceed_delta_gives_no_guarantee_at_once(tmp_path: Path) -> None:
    pytest.importorskip("dp_accounting")
    path = ledger(tmp_path, [("{epsilon: 1, delta: 1e-7}", 1_000_000)])
    proc = run_cli(["budget", str(path), "--json"], tmp_path, cpu=10)
    assert proc.returncode == 0, proc.stderr
    t = json.loads(proc.stdout)["total"]
    # 1 − (1 − qδ)^k ≈ 0.049 > 1e-6 is mass at an infinite loss: no ε reaches δ
    assert t["upper"] is None and t["lower"] is None and t["verdict"] == "no-guarantee"


def test_ledger_laplace_entry_of_a_million_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("dp_accounting")
    path = ledger(tmp_path, [("{laplace: {scale: 2.0}}", 1_000_000)])
    proc = run_cli(["budget", str(path), "--json"], tmp_path, cpu=15)
    assert proc.returncode == 2, proc.stderr
    assert f"limit of {LIMITS['pld_points'].value:,}" in error_of(proc)


def test_ledger_of_many_gaussian_entries_is_refused_before_any_bound(tmp_path: Path) -> None:
    pytest.importorskip("dp_accounting")
    # each entry's grid, its self-composition and its composition into the total are
    # charged before anything is built: about 3 × 47,000 points an entry here
    entries = [(f"{{gaussian: {{sigma: {1.0 + i * 1e-4}}}}}", 100) for i in range(1000)]
    p = tmp_path / "ledger.yaml"
    lines = ["name: t", "target: {epsilon: 2.0, delta: 1e-6}", "entries:"]
    for mech, count in entries:
        lines.append(
            f"  - design: {{mechanism: {mech}, sampling: {{scheme: poisson, rate: 0.01}}}}"
        )
        lines.append(f"    count: {count}")
    p.write_text("\n".join(lines) + "\n")
    proc = run_cli(["budget", str(p), "--json"], tmp_path, cpu=15)
    assert proc.returncode == 2, proc.stderr
    assert f"limit of {LIMITS['accountant_work'].value:,}" in error_of(proc)


@pytest.mark.parametrize("value", ["nan", "inf", "1e-9", "0", "0.5"])
def test_discretization_option_outside_the_range_is_refused(tmp_path: Path, value: str) -> None:
    path = ledger(tmp_path, [("{gaussian: {sigma: 1.0}}", 10)])
    proc = run_cli(["budget", str(path), "--json", "--discretization", value], tmp_path, cpu=10)
    assert proc.returncode == 2, proc.stderr
    assert "--discretization" in error_of(proc) and "[1e-07, 0.1]" in error_of(proc)


@pytest.mark.parametrize(
    ("target", "text"),
    [
        ("1e-300", "below the accountant's discretization interval"),
        ("1e7", "limit of 1,000,000"),
        ("1e6", f"limit of {LIMITS['pld_points'].value:,}"),
    ],
)
def test_solve_targets_outside_the_solvable_range_are_refused(
    tmp_path: Path, target: str, text: str
) -> None:
    pytest.importorskip("dp_accounting")
    path = ledger(tmp_path, [("{gaussian: {sigma: 1.0}}", 100)])
    proc = run_cli(
        ["budget", str(path), "--json", "--solve", "sigma", "--target", target], tmp_path, cpu=20
    )
    assert proc.returncode == 2, proc.stderr
    assert text in error_of(proc)


# -- the accountant's pieces ---------------------------------------------------------------


def test_composition_agrees_with_the_library_compose() -> None:
    """Our sampled Gaussian (20 releases) composed with a sampled Laplace against the
    library's public ``compose`` of its own two PLDs: the same ε at δ to 1e-6 relative."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld

    from ampcalc.accounting import pmf
    from ampcalc.accounting.profiles import Gaussian, Laplace

    h = 1e-3
    a = pmf.self_compose_pair(
        fastpld.sampled_pair(Gaussian(sigma=1.0), 0.01, h, pessimistic=True), 20
    )
    b = fastpld.sampled_pair(Laplace(scale=2.0), 0.05, h, pessimistic=True)
    lib = pld.from_gaussian_mechanism(1.0, sampling_prob=0.01, value_discretization_interval=h)
    lib = lib.self_compose(20).compose(
        pld.from_laplace_mechanism(2.0, sampling_prob=0.05, value_discretization_interval=h)
    )
    mine = pmf.compose_pairs(a, b)
    for delta in (1e-3, 1e-6):
        assert pmf.epsilon_for_delta(mine, delta) == pytest.approx(
            lib.get_epsilon_for_delta(delta), rel=1e-6
        )


def test_meter_refuses_before_the_limits_are_passed() -> None:
    m = fastpld.Meter()
    m.charge(LIMITS["pld_points"].value, "one")
    with pytest.raises(fastpld.CostLimitError, match="limit of 10,000,000"):
        m.charge(LIMITS["pld_points"].value + 1, "two")
    with pytest.raises(fastpld.CostLimitError):
        fastpld.Meter().charge(math.inf, "inf")
    with pytest.raises(fastpld.CostLimitError):
        fastpld.Meter().charge(math.nan, "nan")
    w = fastpld.Meter()
    with pytest.raises(fastpld.CostLimitError, match="limit of 40,000,000"):
        for _ in range(5):
            w.charge(9_000_000, "step")
    assert fastpld.grid_points(-1.0, 1.0, 0.25) == 9.0
    assert fastpld.grid_points(0.0, math.inf, 0.1) == math.inf
