"""Bun et al. 2020, §4 eq. (2): the two-cluster count witness, reported by the
`cluster` scheme beside the Theorem 5.1/5.2 bounds; oracle: mpmath over a grid of outputs."""

from __future__ import annotations

import mpmath as mp
import pytest

from ampcalc import engine
from ampcalc.designs.document import load_designs
from ampcalc.schemes import _count_witness as cw

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy


@pytest.fixture(autouse=True)
def _restore_mpmath_precision():
    """The tests below raise mpmath's precision; other modules' oracles rely on theirs."""
    old = mp.mp.dps
    yield
    mp.mp.dps = old


def design(sizes, eps: float = 1.0):
    doc = {
        "mechanism": {"epsilon": eps, "neighbours": "add-remove"},
        "sampling": {"scheme": "cluster", "clusters": {"sizes": list(sizes)}, "chosen": 1},
    }
    return load_designs(doc)[0]


def eq2_mp(b: int, eps: float) -> mp.mpf:
    e = mp.mpf(eps)
    return mp.log((1 + mp.exp(-e * b)) / (mp.exp(-e) + mp.exp(-e * b)))


def witness_loss_mp(p_atoms, q_atoms, eps: float) -> mp.mpf:
    """sup over outputs y (a fine grid, both tails) of |log p(y) − log p′(y)|."""
    e = mp.mpf(eps)

    def dens(y, atoms):
        return sum(mp.exp(-e * abs(y - a)) for a in atoms)

    lo, hi = min(*p_atoms, *q_atoms) - 3, max(*p_atoms, *q_atoms) + 3
    ys = [lo + mp.mpf(i) / 8 for i in range(int((hi - lo) * 8) + 1)]
    return max(abs(mp.log(dens(y, p_atoms)) - mp.log(dens(y, q_atoms))) for y in ys)


def test_paper_value_at_eps_1_b_5() -> None:
    # 001 §4 eq. (2): |C_1| = 0 → 1, |C_2| = 5, ε = 1: ε′ = 0.98857 (the table);
    # the cluster scheme's Theorem 5.1/5.2 value there is 0.995760
    mp.mp.dps = 30
    r = engine.bound(design([0, 5]))
    w = r.details["count_witness"]
    assert w["eq2"] == pytest.approx(0.98857, abs=5e-6)
    assert w["eq2"] <= eq2_mp(5, 1.0) and float(eq2_mp(5, 1.0)) - w["eq2"] < 1e-14
    assert r.upper == pytest.approx(0.995760, abs=5e-7)
    assert w["eq2"] < r.lower
    # the record added to the larger cluster: the Theorem 5.1 value
    assert w["exact_larger"] == pytest.approx(r.lower, abs=1e-14)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("b", [1, 2, 5, 10])
def test_eq2_table_and_exact_loss(b: int, eps: float) -> None:
    mp.mp.dps = 30
    want = eq2_mp(b, eps)
    got = float(cw.eq2(0, b, eps))
    assert got <= want and float(want) - got < 1e-14
    # eq. (2) is the witness's exact loss for the record added to the empty cluster
    smaller = float(cw.exact(0, b, eps, "smaller"))
    oracle = witness_loss_mp((0, b), (1, b), eps)
    assert smaller <= oracle and float(oracle) - smaller < 1e-13
    larger = float(cw.exact(0, b, eps, "larger"))
    oracle_l = witness_loss_mp((0, b), (0, b + 1), eps)
    assert larger <= oracle_l and float(oracle_l) - larger < 1e-13


def test_equal_clusters_give_log_of_half_one_plus_e_eps() -> None:
    # 001 §4: identical output distributions give log((1 + e^ε)/2)
    got = float(cw.exact(3, 3, 1.0, "smaller"))
    assert got == pytest.approx(float(mp.log((1 + mp.e) / 2)), abs=1e-14)


def test_only_for_two_clusters() -> None:
    assert "count_witness" not in engine.bound(design([0, 5, 7])).details
