"""Proportional allocation of a fixed total (Bun et al. 2020, §3, §3.1):
apportionment rules against brute-force oracles, the allocation's sensitivity, and the
count-witness lower bound."""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath as mp
import pytest
from conftest import run_ampcalc

from ampcalc import engine
from ampcalc.designs.document import load_designs
from ampcalc.schemes.stratified import fixed_total as ft


@pytest.fixture(autouse=True)
def _restore_mpmath_precision():
    """The tests below raise mpmath's precision; other modules' oracles rely on theirs."""
    old = mp.mp.dps
    yield
    mp.mp.dps = old


def design(sizes, total: int, rounding: str, mechanism: dict | None = None, **extra):
    doc = {
        "mechanism": mechanism or {"epsilon": 1.0, "neighbours": "add-remove"},
        "sampling": {
            "scheme": "stratified",
            "allocation": "proportional",
            "total_sample": total,
            "rounding": rounding,
            "strata": [{"name": f"s{i + 1}", "size": s} for i, s in enumerate(sizes)],
        },
        **extra,
    }
    return load_designs(doc)[0]


# ---- independent oracles: the textbook definitions, one seat at a time, in fractions


def oracle(sizes, n: int, rule: str) -> list[int]:
    pop = sum(sizes)
    q = [Fraction(n * s, pop) for s in sizes]
    if rule == "nearest":
        return [int((x + Fraction(1, 2)) // 1) for x in q]
    if rule == "floor":
        return [int(x // 1) for x in q]
    if rule == "largest-remainder":
        seats = [int(x // 1) for x in q]
        rem = [x - (x // 1) for x in q]
        for _ in range(n - sum(seats)):
            best = max(range(len(q)), key=lambda h: (rem[h], -h))
            rem[best] = Fraction(-1)  # one extra record per stratum at most
            seats[best] += 1
        return seats
    seats = [1 if s > 0 else 0 for s in sizes]  # Huntington–Hill, seat by seat
    for _ in range(n - sum(seats)):
        best = max(
            (h for h in range(len(sizes)) if sizes[h] > 0),
            key=lambda h: (Fraction(sizes[h] ** 2, seats[h] * (seats[h] + 1)), -h),
        )
        seats[best] += 1
    return seats


def oracle_gs_add(sizes, n: int, rule: str) -> int:
    """001's GS_f at P: max over x of ‖f(P) − f(P ∪ {x})‖₁."""
    base = oracle(sizes, n, rule)
    best = 0
    for h in range(len(sizes)):
        bigger = list(sizes)
        bigger[h] += 1
        best = max(
            best, sum(abs(a - b) for a, b in zip(oracle(bigger, n, rule), base, strict=True))
        )
    return best


@pytest.mark.parametrize("rule", ft.RULES)
def test_apportionment_matches_seat_by_seat_oracle(rule: str) -> None:
    for k in (1, 2, 3):
        for sizes in itertools.product(range(1, 7), repeat=k):
            for n in range(k, sum(sizes) + 4):
                assert ft.apportion(sizes, n, rule) == oracle(sizes, n, rule), (sizes, n)


def test_paper_instance_gs_is_k() -> None:
    # Bun et al. 2020, §3: deterministic rounding "GS_f can be as large as k";
    # the instance n = 5 over strata (1, 1, 1): f(P) = (2, 2, 2), one record more in the
    # first stratum gives (3, 1, 1), GS_f = 3 = k
    s = ft.sensitivity((1, 1, 1), 5, "nearest")
    assert s.stated == (2, 2, 2)
    assert s.worst(("add",), "gs")[0] == 3 == oracle_gs_add((1, 1, 1), 5, "nearest")
    r = engine.bound(design((1, 1, 1), 5, "nearest"))
    gs = r.details["apportionment_sensitivity"]
    assert gs["add"] == 3
    assert gs["add_witness"] == "a record added to stratum 's1'"
    # removing a record gives (0, 3, 3): 4 > k, possible only because n > N here
    assert gs["any"] == 4
    # every stratum is taken whole (m_h > N_h): the drawn sizes move by 1, ε′ >= ε
    assert r.details["drawn"] == [1, 1, 1]
    assert r.lower == pytest.approx(1.0, abs=1e-14) and r.lower <= 1.0
    assert r.upper is None
    assert any("sampled whole" in w for w in r.warnings)


def test_deterministic_rounding_reaches_k_with_a_real_sample() -> None:
    # n <= N: nearest and floor reach GS_f = k = 3 (001 §3), e.g. n = 6 over (1, 3, 3)
    for rule, sizes, n in (("nearest", (1, 3, 3), 6), ("floor", (1, 3, 3), 5)):
        assert oracle_gs_add(sizes, n, rule) == 3
        assert ft.sensitivity(sizes, n, rule).worst(("add",), "gs")[0] == 3


def test_huntington_hill_sensitivity_at_most_two_for_real_samples() -> None:
    # Bun et al. 2020, §3.1: Huntington–Hill has global sensitivity at most 2
    # "under some mild assumptions". Checked exhaustively for k <= 3, N_h <= 5, k <= n
    # <= N over additions, removals and moves; with n > N it fails: (1, 1, 1), n = 5
    worst = 0
    for k in (2, 3):
        for sizes in itertools.product(range(1, 6), repeat=k):
            for n in range(k, sum(sizes) + 1):
                s = ft.sensitivity(sizes, n, "huntington-hill")
                worst = max(worst, s.worst(("add", "remove", "move"), "gs")[0])
    assert worst == 2
    assert ft.sensitivity((1, 1, 1), 5, "huntington-hill").worst(("add",), "gs")[0] == 4
    r = engine.bound(design((1, 1, 1), 5, "huntington-hill"))
    assert any("at most 2" in n for n in r.notes)


def laplace_count_loss(m, m2, eps: float) -> mp.mpf:
    """log-density ratio of (m_h + Lap(1/ε))_h against (m′_h + Lap(1/ε))_h at a point
    below every count (where it is largest)."""
    y = min(*m, *m2) - 10
    dens = [
        mp.fsum(-eps * abs(y - a) for a in m),
        mp.fsum(-eps * abs(y - b) for b in m2),
    ]
    return abs(dens[0] - dens[1])


def test_count_witness_lower_bound_floor_example() -> None:
    # examples/designs/stratified-fixed-total.yaml: floor, n = 70 over (120, 250, 330):
    # (12, 25, 33); a record more in the first stratum gives (12, 24, 32), Δ₁ = 2
    mp.mp.dps = 30
    sizes = (120, 250, 330)
    assert oracle(sizes, 70, "floor") == [12, 25, 33]
    assert oracle((121, 250, 330), 70, "floor") == [12, 24, 32]
    exact = laplace_count_loss([12, 25, 33], [12, 24, 32], 0.7)
    r = engine.bound(design(sizes, 70, "floor"), epsilon=0.7)
    assert r.lower <= exact and float(exact) - r.lower <= 1e-15
    assert r.details["allocation_sensitivity"]["add_remove"]["l1"] == 2
    # replace-one guarantee with M ε-DP add-remove (ε_R = 2ε): moves only; a move keeps
    # N, so only the source stratum's ⌊70·N_s/700⌋ drops: (11, 25, 33), Δ∞ = Δ₁ = 1:
    # max(1·min(ε, 2ε), 1·min(ε, ε)) = ε
    r1 = engine.bound(design(sizes, 70, "floor", guarantee="replace-one"), epsilon=0.7)
    assert r1.details["allocation_sensitivity"]["move"]["l1"] == 1
    assert r1.lower == pytest.approx(0.7, abs=1e-14) and r1.lower <= 0.7


def test_huntington_hill_example() -> None:
    r = engine.bound(design((13, 33, 33), 22, "huntington-hill"))
    assert r.details["allocations"] == [4, 9, 9] == oracle((13, 33, 33), 22, "huntington-hill")
    assert r.details["allocation_sensitivity"]["add_remove"]["l1"] == 2
    assert r.lower == pytest.approx(2.0, abs=1e-14) and r.lower <= 2.0


def test_no_neighbour_moves_the_allocation() -> None:
    # (30, 50, 70), n = 20, largest remainder: (4, 7, 9) at every neighbour: no witness
    r = engine.bound(design((30, 50, 70), 20, "largest-remainder"))
    assert r.details["allocations"] == [4, 7, 9]
    assert r.lower == 0.0 and r.upper is None


HEAD = "mechanism: {epsilon: 1.0}\nsampling:\n  scheme: stratified\n"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("  total_sample: 5\n  strata: [{size: 10}]\n", "deterministic `rounding:`"),
        (
            "  total_sample: 5\n  rounding: randomized\n  strata: [{size: 10}]\n",
            "not randomized",
        ),
        (
            "  total_sample: 5\n  rate: 0.1\n  rounding: floor\n  strata: [{size: 10}]\n",
            "not both",
        ),
        (
            "  rate: 0.1\n  rounding: huntington-hill\n  strata: [{size: 10}]\n",
            "give `total_sample`",
        ),
        (
            "  allocation: poisson\n  total_sample: 5\n  rate: 0.1\n  strata: [{size: 10}]\n",
            "neyman or proportional",
        ),
    ],
)
def test_bad_input_exit_2(tmp_path, body: str, needle: str) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(HEAD + body)
    out = run_ampcalc("bound", str(f), expect=2)
    assert needle in out.stderr, out.stderr


def test_huntington_hill_needs_a_record_per_stratum() -> None:
    r = engine.bound(design((5, 5, 5), 2, "huntington-hill"))
    assert r.error is not None and "non-empty strata" in r.error


def test_stratum_rate_with_a_total_is_refused(tmp_path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(
        HEAD + "  total_sample: 5\n  rounding: floor\n  strata:\n    - {size: 10, rate: 0.2}\n"
    )
    out = run_ampcalc("bound", str(f), expect=2)
    assert "d.yaml:7" in out.stderr and "not used with `total_sample`" in out.stderr


def _tiny_designs():
    for rule in ft.RULES:
        for sizes in ((2, 1), (1, 2), (2, 2), (1, 1, 2)):
            for n in range(len(sizes), sum(sizes) + 1):
                for guarantee in ("add-remove", "replace-one"):
                    yield rule, sizes, n, guarantee


@pytest.mark.slow
def test_lower_bound_below_the_exact_programme() -> None:
    # oracle: ampcalc's exact LP over every ε-DP mechanism (ampcalc verify), every
    # neighbour of the stated sizes; the count witness may not exceed it
    from ampcalc import api

    worst = 0.0
    for rule, sizes, n, guarantee in _tiny_designs():
        d = design(sizes, n, rule, guarantee=guarantee)
        row = api.verify([d])[0]
        assert row["status"] == "PASS", (rule, sizes, n, guarantee, row)
        exact, low = row["epsilon_prime_exact"], row["epsilon_prime"]["lower"]
        assert low <= exact + 1e-9
        worst = max(worst, exact - low)
    assert worst > 0  # the witness is not always the exact worst case


def test_verify_floor_example() -> None:
    # floor, n = 2 over (2, 1): (1, 0); one record of the first stratum removed, (1, 1),
    # gives (1, 1): the second stratum's count moves by one, the count witness loses
    # ε = 1; the exact worst case over all ε-DP mechanisms is larger (2.43378)
    from ampcalc import api

    row = api.verify([design((2, 1), 2, "floor")])[0]
    assert row["status"] == "PASS"
    assert row["epsilon_prime"]["lower"] == pytest.approx(1.0, abs=1e-14)
    assert row["epsilon_prime_exact"] == pytest.approx(2.43378083, abs=1e-8)


def test_many_strata_search_moves_among_some_and_say_so() -> None:
    # 60 strata > MOVE_STRATA: still a lower bound (fewer neighbours), with a warning;
    # more than MAX_STRATA strata are refused
    sizes = [50 + 7 * i for i in range(60)]
    r = engine.bound(design(sizes, sum(sizes) // 10, "huntington-hill"))
    assert any("were tried among the 40 strata" in n for n in r.notes)
    assert r.details["apportionment_sensitivity"]["any"] <= 2  # 001 §3.1
    big = engine.bound(design([3] * (ft.MAX_STRATA + 1), 500, "floor"))
    assert big.error is not None and "limited to 1000 strata" in big.error
