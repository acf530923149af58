"""srswor group privacy as a theorem record assembled by ``schemes.assembly``
(spec §3: V = log E[e^{Jε_R}], J ~ Hypergeometric(N, g, m)), against mpmath."""

from __future__ import annotations

import dataclasses

import mpmath as mp
import pytest

from ampcalc import engine
from ampcalc.designs.document import load_designs
from ampcalc.model.design import Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.schemes import srswor

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy


def design(**mechanism):
    doc = {
        "mechanism": {"epsilon": 1.0, "group_size": 2, **mechanism},
        "sampling": {"scheme": "srswor", "population": 6, "sample": 3},
    }
    return load_designs(doc)[0]


def oracle_v(eps_r: float) -> mp.mpf:
    """N = 6, g = 2, m = 3: Pr(J = 0, 1, 2) = 4/20, 12/20, 4/20."""
    mp.mp.dps = 50
    e = mp.mpf(eps_r)
    return mp.log((4 + 12 * mp.exp(e) + 4 * mp.exp(2 * e)) / 20)


@pytest.mark.parametrize(
    ("neighbours", "eps_r"), [("replace-one", 1.0), ("both", 1.0), ("add-remove", 2.0)]
)
def test_group_lower_bound_is_the_log_mgf_at_eps_r(neighbours: str, eps_r: float) -> None:
    res = engine.bound(design(neighbours=neighbours))
    exact = oracle_v(eps_r)
    # groups.slack_down takes a relative 1e-10 off (spec §3 numerics)
    assert res.lower <= exact and float(exact) - res.lower < 1e-9 * float(exact)
    assert res.upper >= exact
    assert res.details["reference_epsilon"] == 2 * eps_r
    assert res.delta_prime == 0.0


def test_group_path_says_how_it_read_an_add_remove_mechanism() -> None:
    """Defect fixed: with an add-remove M the group path used ε_R = 2ε without saying
    so (the single-record srswor path notes it); the assembly now adds the note, and
    the stated condition on M reads as every assembled one does."""
    res = engine.bound(design(neighbours="add-remove"))
    assert any(
        n.startswith(
            "M's ε = 1 holds under add-remove, but group privacy under "
            "srswor needs its replace-one ε; using ε_R = 2ε = 2"
        )
        for n in res.notes
    )
    assert res.conditions[-1] == (
        "M is ε-DP (δ = 0) under replace-one on samples of size m (declared: add-remove)"
    )
    both = engine.bound(design(neighbours="both"))
    assert not any("holds under add-remove" in n for n in both.notes)


@pytest.mark.parametrize("group_size", [1, 2])
def test_add_remove_guarantee_is_refused_by_the_theorem(group_size: int) -> None:
    """The loader refuses `guarantee: add-remove` for srswor; a direct call of the
    scheme's analyse meets the theorem's own refusal, for a group too."""
    d = design(neighbours="both")
    mech = dataclasses.replace(d.mechanism, group_size=group_size)
    with pytest.raises(ConditionError, match=r"an add-remove guarantee changes N"):
        srswor.analyse(d.params, mech, Neighbours.ADD_REMOVE)
