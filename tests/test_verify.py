"""ampcalc verify: exact LP values of the spec, exit codes, JSON contract, oracle sweeps."""

from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pytest
from conftest import run_ampcalc, run_main

import ampcalc
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.schemes import exact as V


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
    plan = V.for_guarantee(V.poisson_instance(P(rate=q), mech), Neighbours.ADD_REMOVE)
    assert exact(plan) == pytest.approx(lp, abs=1e-8)


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
    run = run_ampcalc("verify", str(f))  # INCONCLUSIVE: exit 0, the verdict in the output
    assert "too large to verify" in run.stderr and "more than 5000 distinct samples" in run.stderr
    assert "INCONCLUSIVE" in run.stdout


def test_scheme_without_hook_is_inconclusive() -> None:
    run = run_ampcalc("verify", "examples/designs/importance-uniform-constant.yaml")
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
    plan = schemes.get(kind).verify_plan(d.params, d.mechanism, "default")
    out = V.run(V.for_guarantee(plan, r.guarantee_neighbours))
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
    out = json.loads(run_ampcalc("verify", str(f), "--json").stdout)
    assert out["results"][0]["status"] == "INCONCLUSIVE"
    assert out["results"][0]["epsilon_prime_exact"] is None


# --- the (ε, δ) programme ----------------------------------------------------------------


def brute_hockey(
    records: list[str],
    p: dict[frozenset, float],
    pp: dict[frozenset, float],
    sizes: range,
    add_remove: tuple[float, float] | None,
    replace_one: tuple[float, float],
    eps_prime: float,
) -> float:
    """Worst Σp f − e^{ε′}Σp′ f over (ε, δ)-DP f ∈ [0, 1] on every subset of the sizes.

    Independent of ampcalc.verify: subsets as frozensets, a dense programme, both orders.
    """
    import itertools
    import math

    from scipy.optimize import linprog

    dom = [frozenset(c) for s in sizes for c in itertools.combinations(records, s)]
    idx = {s: i for i, s in enumerate(dom)}
    rows, rhs = [], []
    for s in dom:
        for t in dom:
            if add_remove is not None and len(t) == len(s) + 1 and s < t:
                eps, delta = add_remove
            elif len(t) == len(s) and len(s ^ t) == 2:
                eps, delta = replace_one
            else:
                continue
            for a, b in ((s, t), (t, s)):
                r = np.zeros(len(dom))
                r[idx[a]], r[idx[b]] = 1.0, -math.exp(eps)  # f(a) <= e^ε f(b) + δ
                rows.append(r)
                rhs.append(delta)
                rows.append(-r)  # 1 − f(a) <= e^ε (1 − f(b)) + δ
                rhs.append(math.exp(eps) - 1.0 + delta)
    best = 0.0
    for num, den in ((p, pp), (pp, p)):
        c = np.zeros(len(dom))
        for s, v in num.items():
            c[idx[s]] -= v
        for s, v in den.items():
            c[idx[s]] += math.exp(eps_prime) * v
        res = linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=(0, 1))
        assert res.status == 0, res.message
        best = max(best, -res.fun)
    return best


def _sets(pop: list[str], m: int) -> dict[frozenset, float]:
    import itertools

    combos = list(itertools.combinations(pop, m))
    return {frozenset(c): 1.0 / len(combos) for c in combos}


def _row(sampling: dict, mechanism: dict, pairs: str = "default") -> dict:
    import ampcalc

    (r,) = ampcalc.verify({"mechanism": mechanism, "sampling": sampling}, pairs=pairs)
    return r


@pytest.mark.parametrize("neighbours", ["replace-one", "add-remove"])
def test_delta_srswor_divergence_is_q_delta(neighbours) -> None:
    # Hu et al., Theorem 1 (and 000 Theorem 2.2): (A(q, ε_R), q·δ_R); the
    # exact worst divergence at that ε′ is q·δ_R, and ε′ at δ′ is A(q, ε_R): tight
    eps, delta, n, m = 0.5, 1e-3, 4, 2
    r = _row(
        {"scheme": "srswor", "population": n, "sample": m},
        {"epsilon": eps, "delta": delta, "neighbours": neighbours},
    )
    assert r["status"] == "PASS", r
    eps_r = eps if neighbours == "replace-one" else 2 * eps
    delta_r = delta if neighbours == "replace-one" else (1 + np.exp(eps)) * delta
    q = m / n
    assert r["delta_prime_exact"] == pytest.approx(q * delta_r, abs=1e-9)
    assert r["epsilon_prime_exact"] == pytest.approx(np.log1p(q * np.expm1(eps_r)), abs=1e-7)
    # the independent brute force, at the reported upper ε′
    recs = ["o1", "o2", "o3", "x", "x'"]
    p, pp = _sets(recs[:4], m), _sets([*recs[:3], "x'"], m)
    ar = None if neighbours == "replace-one" else (eps, delta)
    sizes = range(m, m + 1) if ar is None else range(0, m + 1)
    brute = brute_hockey(recs, p, pp, sizes, ar, (eps_r, delta_r), r["epsilon_prime"]["upper"])
    assert brute == pytest.approx(r["delta_prime_exact"], abs=1e-9)


def test_delta_poisson_divergence_is_q_delta() -> None:
    # Poisson q with an (ε, δ) add-remove M: (log(1 + q(e^ε − 1)), qδ), exact at both ends
    eps, delta, q = 1.0, 1e-3, 0.3
    r = _row({"scheme": "poisson", "rate": q}, {"epsilon": eps, "delta": delta}, pairs="all")
    assert r["status"] == "PASS", r
    assert r["delta_prime_exact"] == pytest.approx(q * delta, abs=1e-9)
    assert r["epsilon_prime_exact"] == pytest.approx(np.log1p(q * np.expm1(eps)), abs=1e-7)


def test_delta_systematic_random_order_is_delta_over_k() -> None:
    # issue 15 V4: random-order systematic sampling includes each record with probability
    # exactly 1/k, so the worst divergence at ε′ = A(⌈N/k⌉/N, ε) is δ/k (N = 7, k = 3:
    # 3.333e-4, not (m/N)δ = 4.286e-4), on the hook's plan and on a brute force over
    # every ordering and start
    import itertools

    from ampcalc import schemes

    eps, delta, n, k = 1.0, 1e-3, 7, 3
    import ampcalc

    (d,) = ampcalc.load_designs(
        {
            "mechanism": {"epsilon": eps, "delta": delta, "neighbours": "replace-one"},
            "sampling": {
                "scheme": "systematic",
                "population": n,
                "interval": k,
                "order": "random",
            },
        }
    )
    mech = Mechanism(epsilon=eps, delta=delta, neighbours=Neighbours.REPLACE_ONE)
    plan = schemes.get("systematic").verify_plan(d.params, V.pure_part(mech), "default")
    plan = dataclasses.replace(plan, deltas=V.deltas_of(mech))
    up = float(np.log1p(3 / 7 * np.expm1(eps)))
    out = V.run_approx(plan, epsilon_upper=up, delta_prime=delta / k)
    assert out.status is None, out.reason
    assert out.delta_at_upper == pytest.approx(delta / k, abs=1e-10)
    assert out.epsilon_at_delta == pytest.approx(up, abs=1e-7)
    # brute force: N = 5, k = 2 (sizes 2 or 3), every ordering and start
    n, k = 5, 2
    recs = ["o1", "o2", "o3", "o4", "x", "x'"]

    def systematic(pop: list[str]) -> dict[frozenset, float]:
        out: dict[frozenset, float] = {}
        orders = list(itertools.permutations(pop))
        for order in orders:
            for s in range(k):
                key = frozenset(order[s::k])
                out[key] = out.get(key, 0.0) + 1.0 / (len(orders) * k)
        return out

    up = float(np.log1p(3 / 5 * np.expm1(eps)))
    brute = brute_hockey(
        recs,
        systematic(recs[:5]),
        systematic([*recs[:4], "x'"]),
        range(2, 4),
        None,
        (eps, delta),
        up,
    )
    assert brute == pytest.approx(delta / k, abs=1e-10)


def test_delta_judge_verdicts() -> None:
    out = V.ApproxOutcome(
        delta_at_upper=4e-4,
        delta_pair="p",
        epsilon_at_delta=0.5,
        epsilon_pair="p",
        delta_prime=4e-4,
        samples=10,
        status=None,
    )
    assert V.judge_approx(out, 0.5, 0.5, 4e-4)[0] == "PASS"
    status, _, why = V.judge_approx(out, 0.4, 0.5, None)
    assert status == "FAIL" and "no δ′ for δ > 0" in why
    status, _, why = V.judge_approx(out, 0.4, 0.5, 3.9e-4)
    assert status == "FAIL" and "above the reported δ′" in why
    # the lower bound is witnessed by a pure ε-DP mechanism: it is judged against the
    # exact ε′ over those (pure_epsilon), not against ε″ at δ′
    assert V.judge_approx(out, 0.51, 0.6, 4e-4)[0] == "PASS"
    pure = dataclasses.replace(out, pure_epsilon=0.55)
    assert V.judge_approx(pure, 0.55, 0.6, 4e-4)[0] == "PASS"
    status, _, why = V.judge_approx(pure, 0.56, 0.6, 4e-4)
    assert status == "FAIL" and "pure ε-DP mechanisms is below the lower bound" in why
    # a lower bound only, ε′ = ∞ at δ′ = 0 (no δ′ reported): trivially valid
    inf = dataclasses.replace(out, delta_at_upper=None, epsilon_at_delta=float("inf"))
    assert V.judge_approx(inf, 0.45, None, None)[0] == "PASS"


def _scaled_delta(monkeypatch, factor: float) -> None:
    from ampcalc import engine

    real = engine.bound

    class Scaled:
        def __init__(self, res):
            self.res = res

        def to_dict(self):
            d = self.res.to_dict()
            d["delta_prime"] = None if factor is None else factor * d["delta_prime"]
            return d

    monkeypatch.setattr(engine, "bound", lambda d, epsilon=None: Scaled(real(d, epsilon=epsilon)))


@pytest.mark.parametrize(("factor", "words"), [(0.9, "above the reported δ′"), (None, "no δ′")])
def test_delta_wrong_or_missing_delta_prime_fails_exit_3(
    capsys, monkeypatch, tmp_path, factor, words
) -> None:
    _scaled_delta(monkeypatch, factor)
    f = tmp_path / "v.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, delta: 1e-3, neighbours: replace-one}\n"
        "sampling: {scheme: srswor, population: 4, sample: 2}\n"
    )
    run = run_main(capsys, "verify", str(f), expect=3)
    assert "FAIL" in run.stdout and words in run.stderr


def test_delta_hooks_that_refuse_delta_are_given_the_pure_part() -> None:
    # cluster, stratified and pps hooks refuse δ > 0 themselves; the driver hands them
    # M's pure part and adds δ to the plan, so their (ε, δ) bounds are checked
    r = _row(
        {
            "scheme": "stratified",
            "allocation": "poisson",
            "rate": 0.3,
            "strata": [{"name": "a", "size": 2}, {"name": "b", "size": 2}],
        },
        {"epsilon": 1.0, "delta": 1e-3},
    )
    assert r["status"] == "PASS", r
    assert r["delta_prime_exact"] == pytest.approx(0.3e-3, abs=1e-9)


@pytest.mark.parametrize(
    ("neighbours", "exact_value"),
    # exact LP values (this module's programme): with `both` the replace-one worst case is
    # A(q, ε); with add-remove M (ε_R = 2ε) it is A(q, ε) − log(1 − q(1 − e^{−ε}))
    [("both", 0.4157352218), ("add-remove", 0.6260070)],
)
def test_poisson_replace_one_guarantee_is_checked_on_replace_one_pairs(
    neighbours, exact_value
) -> None:
    r = _row(
        {"scheme": "poisson", "rate": 0.3},
        {"epsilon": 1.0, "neighbours": neighbours},
    )
    assert r["status"] == "PASS", r
    r = ampcalc_verify_guarantee(neighbours)
    assert r["status"] == "PASS", r
    assert "x′1" in r["worst_pair"]  # a replace-one pair, not P vs P′ = O
    assert r["epsilon_prime_exact"] == pytest.approx(exact_value, abs=1e-6)
    a = float(np.log1p(0.3 * np.expm1(1.0)))
    # `both`: A(q, ε); add-remove M (ε_R = 2ε): A(q, ε) − log(1 − q(1 − e^{−ε})); both the
    # exact value, which the exact programme reaches
    expected = a if neighbours == "both" else a - float(np.log1p(-0.3 * -np.expm1(-1.0)))
    assert r["epsilon_prime"]["lower"] == pytest.approx(expected)
    assert expected == pytest.approx(exact_value, abs=1e-6)
    assert r["epsilon_prime"]["upper"] == pytest.approx(expected)


def ampcalc_verify_guarantee(neighbours: str) -> dict:
    import ampcalc

    d = {
        "mechanism": {"epsilon": 1.0, "neighbours": neighbours},
        "guarantee": "replace-one",
        "sampling": {"scheme": "poisson", "rate": 0.3},
    }
    (r,) = ampcalc.verify(d)
    return r


def test_guarantee_without_instances_is_inconclusive() -> None:
    mech = Mechanism(epsilon=1.0, neighbours=Neighbours.REPLACE_ONE)
    plan = V.srswor_instance(P(population=3, sample=1), mech)
    with pytest.raises(Exception, match="enumerates no add-remove pair"):
        V.for_guarantee(plan, Neighbours.ADD_REMOVE)
    untagged = dataclasses.replace(
        plan, instances=tuple(dataclasses.replace(i, relation=None) for i in plan.instances)
    )
    assert V.for_guarantee(untagged, Neighbours.ADD_REMOVE) == untagged


def _bound_rows(q: float, eps: float, delta: float) -> list[dict]:
    import ampcalc

    d = {
        "mechanism": {"epsilon": eps, "delta": delta, "neighbours": "both"},
        "guarantee": "replace-one",
        "sampling": {"scheme": "poisson", "rate": q},
    }
    return [ampcalc.bound(d).to_dict()]


def test_delta_poisson_replace_one_pair_is_q_delta() -> None:
    # Poisson q = 0.5, M (1, 1e-3)-DP under both relations, replace-one pairs
    # O ∪ {x} vs O ∪ {x′}: the exact (ε′, δ′) curve passes through (A(q, ε), qδ) — the
    # reported replace-one δ′ 1.43e-3 at the upper ε′ 2A(q, ε) is loose, and at it the
    # exact ε′ is 0.61825 (below A(q, ε) = 0.62011); checked on the dense brute force too
    import itertools

    q, eps, delta = 0.5, 1.0, 1e-3
    mech = Mechanism(epsilon=eps, delta=delta, neighbours=Neighbours.BOTH)
    plan = V.for_guarantee(V.poisson_instance(P(rate=q), V.pure_part(mech)), "replace-one")
    plan = dataclasses.replace(plan, deltas=V.deltas_of(mech))
    a = float(np.log1p(q * np.expm1(eps)))
    out = V.run_approx(plan, epsilon_upper=a, delta_prime=q * delta)
    assert out.delta_at_upper == pytest.approx(q * delta, abs=1e-10)
    assert out.epsilon_at_delta == pytest.approx(a, abs=1e-7)
    out = V.run_approx(plan, epsilon_upper=None, delta_prime=0.00142957)
    assert out.epsilon_at_delta == pytest.approx(0.6182518, abs=1e-6)
    # the scheme reports that exact point now: upper A(q, ε) with δ′ = qδ, and a lower
    # bound that holds at δ′ (randomised response on x's presence: log(e^A − δ′(1 + e^ε)))
    (row,) = _bound_rows(q, eps, delta)
    assert row["epsilon_prime"]["upper"] == pytest.approx(a, rel=1e-14)
    assert row["delta_prime"] == pytest.approx(q * delta, rel=1e-14)
    witness = float(np.log(np.exp(a) - q * delta * (1 + np.exp(eps))))
    assert row["epsilon_prime"]["lower"] == pytest.approx(witness, rel=1e-13)
    assert row["epsilon_prime"]["lower"] <= a  # the exact ε′ at δ′ = qδ

    def pois(pop: list[str]) -> dict[frozenset, float]:
        return {
            frozenset(c): q ** len(c) * (1 - q) ** (len(pop) - len(c))
            for k in range(len(pop) + 1)
            for c in itertools.combinations(pop, k)
        }

    recs = ["o1", "o2", "x", "x'"]
    p, pp = pois(recs[:3]), pois(["o1", "o2", "x'"])
    brute = brute_hockey(recs, p, pp, range(5), (eps, delta), (eps, delta), a)
    assert brute == pytest.approx(q * delta, abs=1e-10)


def test_delta_json_contract(tmp_path) -> None:
    import pathlib

    import jsonschema

    f = tmp_path / "v.yaml"
    f.write_text(
        "designs:\n"
        "  - name: d\n"
        "    mechanism: {epsilon: 1, delta: 1e-3, neighbours: replace-one}\n"
        "    sampling: {scheme: srswor, population: 4, sample: 2}\n"
        "  - name: pure\n"
        "    mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "    sampling: {scheme: srswor, population: 4, sample: 2}\n"
    )
    doc = run_ampcalc("verify", str(f), "--json").json()
    schema_path = pathlib.Path(ampcalc.__file__).parent / "schema" / "result.schema.json"
    jsonschema.validate(doc, json.loads(schema_path.read_text()))
    d, pure = doc["results"]
    assert (d["delta"], d["delta_prime_exact"]) == (1e-3, pytest.approx(5e-4, abs=1e-10))
    assert (pure["delta"], pure["delta_prime"], pure["delta_prime_exact"]) == (0.0, 0.0, None)
    text = run_ampcalc("verify", str(f)).stdout
    assert "at δ′ 0.0005; exact δ 0.0005 at the upper ε′" in text
