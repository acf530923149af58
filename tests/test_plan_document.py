"""Planner designs read into typed ``PlannerDesign`` objects (``ampcalc.designs.plan``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ampcalc import api
from ampcalc.analyses.plan import plan_design
from ampcalc.designs.plan import (
    CustomStatistic,
    MeanStatistic,
    MedianStatistic,
    parse_planner_design,
    read_planner_design,
)
from ampcalc.model.errors import DesignError

PLANS = Path(__file__).resolve().parents[1] / "examples" / "plans"
TARGET = {"epsilon_prime": 1.0, "delta_prime": 1e-5}


def test_mean_example() -> None:
    d = read_planner_design(str(PLANS / "mean.yaml"))
    assert (d.title, d.epsilon_prime, d.delta_prime) == (
        "Laplace mean of a [0, 1] variable",
        1.0,
        4.9995e-5,
    )
    assert (d.population, d.rates, d.sample) == (10001, (0.01, 0.1, 0.5, 1.0), None)
    assert d.statistic == MeanStatistic(value_range=1.0, variance=0.0106838)


def test_fixed_sample_is_one_rate() -> None:
    d = parse_planner_design(
        {
            "target": TARGET,
            "sampling": {"scheme": "srswor", "population": 1000, "sample": 250},
            "statistic": {"kind": "mean", "bounds": [2, 5], "variance": 1.5},
        },
        "<dict>",
    )
    assert (d.rates, d.sample, d.title) == ((0.25,), 250, "<dict>")
    assert d.statistic == MeanStatistic(value_range=3.0, variance=1.5)  # R = U − L


def test_mean_variance_from_data() -> None:
    data = PLANS / "data" / "beta.txt"
    lines = data.read_text().splitlines()
    values = [float(s) for s in lines if s.strip() and not s.startswith("#")]
    doc = {
        "target": TARGET,
        "sampling": {"scheme": "srswor"},
        "statistic": {"kind": "mean", "range": 1, "data": str(data), "rates": [0.5]},
    }
    d = parse_planner_design(doc, "<dict>")
    assert d.population == len(values)
    assert d.statistic.variance == float(np.var(np.asarray(values), ddof=1))


def test_median_example() -> None:
    d = read_planner_design(str(PLANS / "median.yaml"))
    st = d.statistic
    assert isinstance(st, MedianStatistic)
    assert (st.lower, st.upper, st.simulations, st.seed) == (0.0, 1100.0, 200, 7)
    assert len(st.values) == d.population == 10001


def test_custom_table_names_its_rates() -> None:
    d = read_planner_design(str(PLANS / "custom_table.yaml"))
    assert d.rates == (0.05, 0.2, 0.6)
    assert d.statistic == CustomStatistic(
        variances=(1.0e-3, 2.0e-4, 2.5e-5),
        sensitivity_sample=(0.05, 0.02, 0.012),
        sensitivity_population=0.01,
    )


def test_custom_number_repeats_per_rate() -> None:
    d = read_planner_design(str(PLANS / "custom.yaml"))
    assert d.statistic == CustomStatistic(
        variances=(400.0, 60.0, 5.0),
        sensitivity_sample=(1.0, 1.0, 1.0),
        sensitivity_population=1.0,
    )


@pytest.mark.parametrize("name", ["mean", "custom", "custom_table"])
def test_plan_of_the_object_is_the_plan_of_the_file(name: str) -> None:
    path = PLANS / f"{name}.yaml"
    want = plan_design(read_planner_design(str(path)), 0.5).to_dict()
    assert api.plan(path, 0.5).to_dict() == want


def test_grid_rates_and_errors_at_the_field(tmp_path: Path) -> None:
    p = tmp_path / "plan.yaml"
    p.write_text(
        "target: {epsilon_prime: 1}\n"
        "sampling: {scheme: srswor, population: 100}\n"
        "statistic: {kind: mean, range: 1, variance: 1, rates: {from: 0.1, to: 0.4, steps: 4}}\n"
    )
    assert read_planner_design(str(p)).rates == pytest.approx((0.1, 0.2, 0.3, 0.4), abs=1e-15)
    p.write_text(p.read_text().replace("steps: 4", "stpes: 4"))
    with pytest.raises(DesignError) as err:
        read_planner_design(str(p))
    assert str(err.value) == (
        f"{p}:3:76: statistic.rates.stpes: unknown key in a rate grid; expected one of: "
        "from, to, steps, log (did you mean 'steps'?)"
    )
