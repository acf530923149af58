"""Stratified ``details`` at each evaluated ε.

With an array of ε, deterministic rounding's ``witness``, ``strata`` and
``randomized_rounding``, Neyman's ``lower_bounds`` and a fixed total's ``lower_bound``
described the declared ε (labelled ``details_epsilon``). Each entry must equal the
single-ε run at every ε of the array, and match its oracle: A(q, ε) = log(1 + q(e^ε −
1)) of Bun et al., Theorem 2.2 (Bun et al.) in 50-digit mpmath, the count
witness Δ·ε of 000 §4.1 (and Bun et al. 2020, Lemma 3.1 for a fixed total).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ampcalc
from ampcalc import engine
from ampcalc.engine.analysis import analyse

mp = pytest.importorskip("mpmath")

GRID = (0.5, 1.0, 3.0)


def _a(q: float, eps: float) -> float:
    """A(q, ε) in 50 digits (Bun et al., Theorem 2.2)."""
    with mp.workdps(50):
        return float(mp.log(1 + mp.mpf(q) * (mp.exp(mp.mpf(eps)) - 1)))


def _design(mechanism: dict[str, Any], sampling: dict[str, Any], guarantee: str) -> Any:
    return ampcalc.load_design(
        {
            "mechanism": mechanism,
            "guarantee": guarantee,
            "sampling": {"scheme": "stratified", **sampling},
        }
    )


def _at(value: Any, k: int) -> Any:
    """Entry ``k`` of an array-valued detail (nested lists/dicts of arrays)."""
    if isinstance(value, dict):
        return {key: _at(v, k) for key, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [_at(v, k) for v in value]
    if isinstance(value, (list, np.ndarray)):
        return np.asarray(value, dtype=object)[k]
    return value


def _follow(design: Any, keys: tuple[str, ...], per_point: tuple[str, ...] = ()) -> dict[str, Any]:
    """An evaluation on GRID gives, for every ε-dependent key, the single-ε value at each
    point (``per_point`` keys are lists of the per-ε entries; the others hold arrays at
    their leaves)."""
    grid = engine.bound(design, epsilon=np.array(GRID))
    assert grid.error is None, grid.error
    assert "details_epsilon" not in grid.details
    for k, eps in enumerate(GRID):
        one = engine.bound(design, epsilon=eps)
        for key in keys:
            assert _at(grid.details[key], k) == one.details[key], (key, eps)
        for key in per_point:
            assert grid.details[key][k] == one.details[key], (key, eps)
    return dict(grid.details)


# The issue's case: q = m/N = 2/10 with `neighbours: both` (ε_R = ε): 0.2954 at ε = 1
# was reported for an evaluation at ε = 3, where A(0.2, 3) = 1.5722 is right.
ISSUE = {
    "allocation": "proportional",
    "rounding": "nearest",
    "rate": 0.2,
    "strata": [{"name": "all", "size": 10}],
}


@pytest.mark.parametrize("guarantee", ["add-remove", "replace-one"])
def test_deterministic_details_are_at_each_evaluated_epsilon(guarantee: str) -> None:
    design = _design({"epsilon": 1.0, "neighbours": "both"}, ISSUE, guarantee)
    details = _follow(design, ("strata", "randomized_rounding"), per_point=("witness",))
    for k, eps in enumerate(GRID):
        want = _a(0.2, eps)  # no neighbour moves round(0.2·N): a simple random sample
        lower = details["strata"][0]["epsilon_prime"]["lower"][k]
        upper = details["strata"][0]["epsilon_prime"]["upper"][k]
        assert lower <= want <= upper and lower == pytest.approx(want, rel=1e-14)
        witness = details["witness"][k]["epsilon_prime"]
        assert witness <= want and witness == pytest.approx(want, rel=1e-14)
    assert details["strata"][0]["epsilon_prime"]["lower"][2] == pytest.approx(1.5722, abs=5e-5)
    assert details["witness"][0]["epsilon_prime"] != details["witness"][2]["epsilon_prime"]


def test_the_worst_neighbour_changes_with_epsilon() -> None:
    # N = 14, r = 0.1 (Bun et al. §4.3): one more record takes round(1.4) to round(1.5) =
    # 2, a count step of loss ε (000 §4.1); one fewer keeps 1 sampled of 13: A(1/14, 2ε)
    # (ε_R = 2ε). The count step is worse at ε = 0.5, the sample step at ε = 3.
    design = _design(
        {"epsilon": 1.0, "neighbours": "add-remove"},
        {**ISSUE, "rate": 0.1, "strata": [{"name": "all", "size": 14}]},
        "add-remove",
    )
    details = _follow(design, ("strata", "randomized_rounding"), per_point=("witness",))
    first, last = details["witness"][0], details["witness"][2]
    assert first["neighbour"] == "a record added to stratum 'all'"
    assert first["epsilon_prime"] == 0.5
    assert last["neighbour"] == "a record removed from stratum 'all'"
    want = _a(1.0 / 14.0, 6.0)
    assert last["epsilon_prime"] <= want
    assert last["epsilon_prime"] == pytest.approx(want, rel=1e-14)


def test_deterministic_replace_one_across_strata_follows_epsilon() -> None:
    strata = [
        {"name": "a", "size": 14},
        {"name": "b", "size": 15},
        {"name": "c", "size": 25},
        {"name": "d", "size": 100},
    ]
    design = _design(
        {"epsilon": 1.0, "neighbours": "add-remove"},
        {**ISSUE, "rate": 0.1, "strata": strata},
        "replace-one",
    )
    _follow(design, ("strata", "randomized_rounding"), per_point=("witness",))


def test_neyman_lower_bounds_are_at_each_evaluated_epsilon() -> None:
    # given allocations (10, 20, 30) and (9, 21, 31): Δ∞ = 1, Δ₁ = 3 (000 §7.2)
    design = _design(
        {"epsilon": 1.0, "neighbours": "add-remove"},
        {
            "allocation": "neyman",
            "allocations": [[10, 20, 30], [9, 21, 31]],
            "strata": [
                {"name": "a", "size": 100},
                {"name": "b", "size": 200},
                {"name": "c", "size": 300},
            ],
        },
        "replace-one",
    )
    details = _follow(design, ("lower_bounds",))
    assert np.asarray(details["lower_bounds"]["linf"]).tolist() == [0.5, 1.0, 3.0]
    assert np.asarray(details["lower_bounds"]["l1"]).tolist() == [1.5, 3.0, 9.0]


def test_fixed_total_lower_bound_is_at_each_evaluated_epsilon() -> None:
    # Bun et al. 2020 §3: n = 5 over three strata of 1, round to nearest. A record added
    # to 'a' moves one drawn size by 1; a record moved from 'a' to 'b' two of them (Δ₁ =
    # 2): under add-remove ε′ >= max(ε, half of Δ₁·min(ε, ε_R/2)) = ε (001 Lemma 3.1).
    design = _design(
        {"epsilon": 1.0, "neighbours": "add-remove"},
        {
            "allocation": "proportional",
            "total_sample": 5,
            "rounding": "nearest",
            "strata": [{"name": x, "size": 1} for x in "abc"],
        },
        "add-remove",
    )
    details = _follow(design, ("lower_bound",))
    for got, eps in zip(np.asarray(details["lower_bound"]).tolist(), GRID, strict=True):
        assert got <= eps and got == pytest.approx(eps, rel=1e-14)  # rounded down


@pytest.mark.parametrize(
    "sampling",
    [
        {"allocation": "proportional", "rounding": "randomized", "rate": 0.05},
        {"allocation": "poisson", "rate": 0.1},
    ],
)
def test_the_other_allocations_follow_epsilon_too(sampling: dict[str, Any]) -> None:
    strata = [{"name": "a", "size": 120}, {"name": "b", "size": 250}, {"name": "c", "size": 33}]
    design = _design(
        {"epsilon": 1.0, "neighbours": "add-remove"}, {**sampling, "strata": strata}, "add-remove"
    )
    _follow(design, ("strata",))


@pytest.mark.parametrize(
    ("mechanism", "sampling", "guarantee", "keys"),
    [
        ({"epsilon": 1.0, "neighbours": "both"}, ISSUE, "replace-one", ("witness", "strata")),
        ({"epsilon": 2.0, "neighbours": "add-remove"}, ISSUE, "add-remove", ("witness",)),
        (
            {"epsilon": 1.5, "neighbours": "add-remove"},
            {
                "allocation": "proportional",
                "total_sample": 70,
                "rounding": "floor",
                "strata": [{"name": "s", "size": 120}, {"name": "m", "size": 250}],
            },
            "replace-one",
            ("lower_bound",),
        ),
    ],
)
def test_the_analysis_states_its_details_at_the_declared_epsilon(
    mechanism: dict[str, Any], sampling: dict[str, Any], guarantee: str, keys: tuple[str, ...]
) -> None:
    # readers of the analysis that evaluate no ε (a privacy profile's chosen point) see
    # the entries at the declared ε, as one evaluation there gives them
    design = _design(mechanism, sampling, guarantee)
    static = analyse(design, design.mechanism).details
    one = engine.bound(design)
    for key in keys:
        assert static[key] == one.details[key], key
