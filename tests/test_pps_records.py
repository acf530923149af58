"""PPS (§6.1 of Bun et al. with Proposition 6.1) as a theorem record: the
single-inclusion witness runs at min(ε_D, ε_R), and the add-remove refusal comes
before the equal-size (simple random sample) case."""

from __future__ import annotations

import mpmath as mp
import pytest

from ampcalc import engine
from ampcalc.designs.document import load_designs


def design(mechanism: dict, sampling: dict, **top):
    return load_designs(
        {"mechanism": mechanism, "sampling": {"scheme": "pps", **sampling}, **top}
    )[0]


PIPS = {"method": "pips", "size_measures": [1, 2, 3, 4, 10], "sample": 2}  # a_max = 1


@pytest.mark.parametrize(
    ("mechanism", "witness_eps"),
    [
        ({"epsilon": 1.0, "neighbours": "add-remove"}, 1.0),
        ({"epsilon": 1.0, "neighbours": "add-remove", "epsilon_replace_one": 0.8}, 0.8),
        ({"epsilon": 0.7, "neighbours": "replace-one"}, 0.7),
    ],
)
def test_witness_runs_at_the_smaller_epsilon(mechanism: dict, witness_eps: float) -> None:
    """a_i = min(1, m r_i/Σr) with capping: r = 10 gives a = 1 (a certainty unit), so
    the lower bound is A(1, e) = e at e = min(ε_D, ε_R)."""
    res = engine.bound(design(mechanism, PIPS))
    mp.mp.dps = 30
    exact = mp.log(1 + 1 * (mp.exp(mp.mpf(witness_eps)) - 1))
    assert res.upper is None and res.lower <= exact and float(exact) - res.lower < 1e-14
    assert res.details["max_inclusion_probability"] == 1.0


def test_add_remove_guarantee_refused_even_when_sizes_are_equal() -> None:
    d = design(
        {"epsilon": 1.0, "neighbours": "both"},
        {"method": "sampford", "size_measures": [3, 3, 3, 3], "sample": 2},
        guarantee="add-remove",
    )
    res = engine.bound(d)
    assert res.error is not None and "no add-remove result exists" in res.error
