"""ampcalc verify: exact LP values of the spec, exit codes, JSON contract, oracle sweeps."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from conftest import run_ampcalc, run_main

from ampcalc import verify as V
from ampcalc.model import Mechanism, Neighbours


class P:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def exact(plan) -> float:
    out = V.run(plan)
    assert out.status is None, out.reason
    return out.epsilon_prime


@pytest.mark.parametrize(
    ("n", "m", "eps", "lp"),
    # exact-lp-checks.md Conjecture 1 (with replacement), LP columns
    [(2, 3, 0.5, 0.842789411), (3, 4, 2.0, 4.563729910), (4, 4, 0.5, 0.601191300)],
)
def test_lp_reproduces_spec_with_replacement(n, m, eps, lp) -> None:
    mech = Mechanism(epsilon=eps, neighbours=Neighbours.REPLACE_ONE)
    assert exact(V.srswr_instance(P(population=n, sample=m), mech)) == pytest.approx(lp, abs=1e-8)


@pytest.mark.parametrize(
    ("n", "g", "m", "eps", "lp"),
    # exact-lp-checks.md Conjecture 2 (without replacement, group g)
    [(5, 3, 4, 0.5, 1.230705693), (4, 2, 2, 2.0, 2.652706310), (6, 1, 3, 2.0, 1.433780830)],
)
def test_lp_reproduces_spec_group_without_replacement(n, g, m, eps, lp) -> None:
    mech = Mechanism(epsilon=eps, neighbours=Neighbours.REPLACE_ONE, group_size=g)
    assert exact(V.srswor_instance(P(population=n, sample=m), mech)) == pytest.approx(lp, abs=1e-8)


@pytest.mark.parametrize(
    # exact-lp-checks.md Conjecture 3 (Poisson, add g records)
    ("g", "q", "eps", "lp"),
    [(1, 0.5, 2.0, 1.433780830), (2, 0.3, 0.5, 0.355650228), (4, 0.1, 2.0, 1.976114832)],
)
def test_lp_reproduces_spec_poisson(g, q, eps, lp) -> None:
    mech = Mechanism(epsilon=eps, neighbours=Neighbours.BOTH, group_size=g)
    assert exact(V.poisson_instance(P(rate=q), mech)) == pytest.approx(lp, abs=1e-8)


def test_without_replacement_delta_style_is_below_lp() -> None:
    # exact-lp-checks.md: log(1 + (1 − (1 − 1/n)^m)(e^ε − 1)) is below the LP for m >= 2
    # (smallest gap 0.0031 at n = 6, m = 2, ε = 0.1)
    mech = Mechanism(epsilon=0.1, neighbours=Neighbours.REPLACE_ONE)
    lp = exact(V.srswr_instance(P(population=6, sample=2), mech))
    style = np.log1p((1 - (5 / 6) ** 2) * np.expm1(0.1))
    assert lp - style == pytest.approx(0.0031, abs=5e-5)


DESIGNS = """
designs:
  - name: boot
    mechanism: {epsilon: 1, neighbours: replace-one}
    sampling: {scheme: srswr, population: 3, sample: 3}
  - name: household
    mechanism: {epsilon: 1, neighbours: both, group_size: 2}
    sampling: {scheme: srswor, population: 5, sample: 3}
  - name: poisson-pair
    mechanism: {epsilon: 0.5, group_size: 2}
    sampling: {scheme: poisson, rate: 0.2}
"""


def test_cli_json_contract_and_pass(tmp_path) -> None:
    f = tmp_path / "v.yaml"
    f.write_text(DESIGNS)
    out = run_ampcalc("verify", str(f), "--json").json()
    assert out["command"] == "verify"
    rows = out["results"]
    assert [r["status"] for r in rows] == ["PASS"] * 3
    for r in rows:
        assert set(r) >= {
            "name",
            "scheme",
            "epsilon_prime_exact",
            "epsilon_prime",
            "status",
            "worst_pair",
            "samples",
        }
        lo, up = r["epsilon_prime"]["lower"], r["epsilon_prime"]["upper"]
        assert lo - 1e-7 <= r["epsilon_prime_exact"] <= up + 1e-7
    # the bootstrap at N = m = 3, ε = 1: the LP equals the lower bound 3·log(1 + (e − 1)/3)
    assert rows[0]["epsilon_prime_exact"] == pytest.approx(3 * np.log1p(np.expm1(1) / 3), abs=1e-8)
    assert rows[0]["samples"] == 20


def test_cli_pairs_all_passes(tmp_path) -> None:
    f = tmp_path / "v.yaml"
    f.write_text(DESIGNS)
    rows = run_ampcalc("verify", str(f), "--json", "--pairs", "all").json()["results"]
    assert [r["status"] for r in rows] == ["PASS"] * 3


def test_too_large_is_refused_with_its_size(tmp_path) -> None:
    f = tmp_path / "big.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "sampling: {scheme: srswor, population: 10000, sample: 100}\n"
    )
    run = run_ampcalc("verify", str(f), expect=2)
    assert "too large to verify" in run.stderr and "more than 5000 distinct samples" in run.stderr
    assert "INCONCLUSIVE" in run.stdout


def test_scheme_without_hook_is_inconclusive() -> None:
    run = run_ampcalc("verify", "examples/designs/importance-uniform-constant.yaml", expect=2)
    assert "no exact tiny-instance enumeration" in run.stderr


def test_wrong_bound_is_a_fail_exit_3(capsys, monkeypatch, tmp_path) -> None:
    from ampcalc.schemes import srswr

    real = srswr.upper_epsilon
    monkeypatch.setattr(srswr, "upper_epsilon", lambda e, **kw: 0.9 * real(e, **kw))
    f = tmp_path / "v.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "sampling: {scheme: srswr, population: 3, sample: 2}\n"
    )
    run = run_main(capsys, "verify", str(f), expect=3)
    assert "FAIL" in run.stdout and "above the upper bound" in run.stderr


def test_tiny_epsilon_is_inconclusive() -> None:
    assert V.judge(1e-9, 0.0, 1e-9)[0] == "INCONCLUSIVE"
    assert V.judge(None, 0.0, 1.0)[0] == "INCONCLUSIVE"
    assert V.judge(0.5, 0.4, 0.5 - 1e-3)[0] == "FAIL"
    assert V.judge(0.5, 0.5 + 1e-6, 0.6)[0] == "FAIL"
    assert V.judge(0.5, 0.5 + 1e-8, 0.5 - 1e-8)[0] == "PASS"


def _bounds(scheme: str, params: dict, mech: dict) -> tuple[float, float]:
    import ampcalc

    d = ampcalc.load_designs({"mechanism": mech, "sampling": {"scheme": scheme, **params}})[0]
    r = ampcalc.bound(d)
    return r.lower, r.upper


def _random_case(rng: random.Random):
    eps = rng.choice([1e-3, 0.05, 0.3, 1.0, 2.0])
    nb = rng.choice(["replace-one", "both", "add-remove"])
    kind = rng.choice(["srswr", "srswor", "poisson"])
    if kind == "poisson":
        g = rng.randint(1, 3)
        return (
            kind,
            {"rate": rng.choice([0.1, 0.3, 0.7])},
            {
                "epsilon": eps,
                "neighbours": rng.choice(["both", "add-remove"]),
                "group_size": g,
            },
        )
    n = rng.randint(2, 5)
    m = rng.randint(1, 4 if kind == "srswr" else n)
    g = rng.randint(1, min(n, 3)) if kind == "srswor" else rng.randint(1, min(n, 2))
    return (
        kind,
        {"population": n, "sample": m},
        {"epsilon": eps, "neighbours": nb, "group_size": g},
    )


def _oracle_check(seed: int) -> None:
    import ampcalc
    from ampcalc import schemes

    rng = random.Random(seed)
    kind, params, mech = _random_case(rng)
    d = ampcalc.load_designs({"mechanism": mech, "sampling": {"scheme": kind, **params}})[0]
    r = ampcalc.bound(d)
    if r.error:
        return
    plan = schemes.get(kind).hooks["verify"](d.params, d.mechanism, "default")
    out = V.run(plan)
    status, _tol, why = V.judge(out.epsilon_prime, r.lower, r.upper)
    assert status in ("PASS", "INCONCLUSIVE"), (kind, params, mech, out, r.lower, r.upper, why)


@pytest.mark.parametrize("seed", range(12))
def test_randomised_oracle_fast(seed: int) -> None:
    _oracle_check(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12, 212))
def test_randomised_oracle_sweep(seed: int) -> None:
    _oracle_check(seed)


def test_json_is_parseable_when_inconclusive(tmp_path) -> None:
    f = tmp_path / "big.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "sampling: {scheme: srswr, population: 1000, sample: 100}\n"
    )
    out = json.loads(run_ampcalc("verify", str(f), "--json", expect=2).stdout)
    assert out["results"][0]["status"] == "INCONCLUSIVE"
    assert out["results"][0]["epsilon_prime_exact"] is None
