"""Per-stratum rows agree with the total's bound: stratified Poisson under a replace-one
guarantee shows each stratum's exact replacement loss (the poisson family's coupled
value, checked here with mpmath), never the add-remove Lemma 3.3 figure at ε_R = 2ε."""

from __future__ import annotations

import mpmath as mp
import pytest

from ampcalc import engine
from ampcalc.api import load_designs

mp.mp.dps = 40


def _exact(q: float, e_d: float, e_r: float) -> float:
    q, e_d, e_r = mp.mpf(q), mp.mpf(e_d), mp.mpf(e_r)
    return float(mp.log((1 + q * mp.expm1(e_d)) / (1 + q * mp.expm1(e_d - e_r))))


def _design(strata: list[dict], mech: dict):
    return load_designs(
        {
            "mechanism": mech,
            "guarantee": "replace-one",
            "sampling": {"scheme": "stratified", "allocation": "poisson", "strata": strata},
        }
    )[0]


@pytest.mark.parametrize(
    ("mech", "e_r"),
    [
        ({"epsilon": 2.0, "neighbours": "add-remove"}, 4.0),
        ({"epsilon": 1.0, "neighbours": "both"}, 1.0),
        ({"epsilon": 2.0, "neighbours": "add-remove", "epsilon_replace_one": 0.5}, 0.5),
    ],
)
def test_equal_rates_rows_equal_the_exact_total(mech: dict, e_r: float) -> None:
    d = _design(
        [{"name": "a", "size": 100, "rate": 0.2}, {"name": "b", "size": 50, "rate": 0.2}], mech
    )
    res = engine.bound(d)
    want = _exact(0.2, mech["epsilon"], e_r)
    assert res.lower == pytest.approx(want, rel=1e-13) and res.upper == pytest.approx(
        want, rel=1e-13
    )
    for row in res.details["strata"]:
        assert row["epsilon_prime"]["lower"] == pytest.approx(want, rel=1e-13)
        assert row["epsilon_prime"]["lower"] <= want <= row["epsilon_prime"]["upper"]
        assert row["epsilon_prime"]["upper"] <= res.upper


def test_unequal_rates_rows_never_above_the_total() -> None:
    mech = {"epsilon": 2.0, "neighbours": "add-remove"}
    d = _design(
        [{"name": "a", "size": 100, "rate": 0.2}, {"name": "b", "size": 50, "rate": 0.1}], mech
    )
    res = engine.bound(d)
    rows = res.details["strata"]
    assert rows[1]["epsilon_prime"]["upper"] == pytest.approx(_exact(0.1, 2.0, 4.0), rel=1e-13)
    assert max(r["epsilon_prime"]["upper"] for r in rows) <= res.upper
    assert rows[0]["epsilon_prime"]["lower"] == pytest.approx(res.lower, rel=1e-13)


def test_rows_under_add_remove_keep_lemma_3_3() -> None:
    d = load_designs("examples/designs/stratified-business-survey.yaml")[2]
    res = engine.bound(d)
    want = float(mp.log(1 + mp.mpf(0.00145) * mp.expm1(mp.mpf(0.5))))
    for row in res.details["strata"]:
        assert row["epsilon_prime"]["lower"] <= want <= row["epsilon_prime"]["upper"]
