"""ampcalc's privacy-loss distributions (``accounting.pmf``).

Oracles: the exact hockey-stick curve of random finite pairs (P, Q) (its losses
log(P/Q) and masses, summed in float: δ(ε) = Σ (P − e^ε·Q)₊, the definition);
dp_accounting's public PLD (``pld_pmf.create_pmf_pessimistic_connect_dots``,
``PrivacyLossDistribution``, ``compose``, ``self_compose``, ``get_delta_for_epsilon``)
for composition; the optimal composition of pure releases in closed form (Kairouz, Oh and
Viswanath 2015) for k copies of one ε.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ampcalc.accounting import minorant as M
from ampcalc.accounting import pmf as P
from ampcalc.accounting.compose import PureComposition
from ampcalc.accounting.profiles import RandomizedResponse, epsilon_at_delta

ROOT = Path(__file__).resolve().parents[1]


def _pair(seed: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(m))
    q = rng.dirichlet(np.ones(m))
    # sometimes an outcome only P has (an infinite loss) or only Q has
    if m > 2 and seed % 3 == 0:
        q[0] = 0.0
        q /= q.sum()
    if m > 3 and seed % 5 == 0:
        p[1] = 0.0
        p /= p.sum()
    return p, q


def _exact(p: np.ndarray, q: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """δ(ε) = Σ (P − e^ε·Q)₊ (the hockey-stick divergence, by definition)."""
    e = np.exp(np.asarray(eps, dtype=float))[:, None]
    return np.maximum(p[None, :] - e * q[None, :], 0.0).sum(axis=1)


pairs = st.tuples(st.integers(0, 10_000), st.integers(2, 7))
steps = st.sampled_from([1e-2, 3e-3, 1e-3])


@settings(max_examples=60, deadline=None)
@given(pairs, steps, st.integers(0, 10_000), st.integers(3, 40))
def test_connect_the_dots_never_clips_and_stays_above_the_profile(
    pq: tuple[int, int], h: float, seed: int, n: int
) -> None:
    """Upper points with noise (not convex in e^ε, not even monotone): no negative mass,
    the masses sum to 1, and the curve is above the exact profile at every ε."""
    p, q = _pair(*pq)
    rng = np.random.default_rng(seed)
    eps = np.sort(rng.uniform(-3.0, 3.0, n))
    eps = eps[np.concatenate(([True], np.diff(eps) > 1e-9))]
    noisy = _exact(p, q, eps) * (1 + rng.uniform(0, 0.3, len(eps))) + rng.uniform(
        0, 1e-3, len(eps)
    )
    d = P.from_profile_points(eps, np.minimum(noisy, 1.0), h)
    assert np.all(d.probs >= 0.0)
    assert d.probs.sum() + d.infinity_mass == pytest.approx(1.0, abs=1e-12)
    x = np.linspace(-5.0, 5.0, 4001)
    truth = _exact(p, q, x)
    assert np.all(P.delta_for_epsilon(d, x) >= truth * (1 - 1e-9) - 1e-13)


@settings(max_examples=60, deadline=None)
@given(pairs, steps)
def test_connect_the_dots_on_grid_points_keeps_every_value(pq: tuple[int, int], h: float) -> None:
    """Exact (convex) values at grid points: the curve is at or above each of them."""
    p, q = _pair(*pq)
    grid = np.arange(math.floor(-3 / h), math.ceil(3 / h) + 1) * h
    vals = _exact(p, q, grid)
    d = P.from_profile_points(grid, vals, h)
    assert np.all(d.probs >= 0.0)
    assert np.all(P.delta_for_epsilon(d, grid) >= vals * (1 - 1e-9))
    # and at most a float rounding above them (connect-the-dots is exact at its points)
    assert np.all(P.delta_for_epsilon(d, grid) <= vals * (1 + 1e-9) + 1e-12)


@settings(max_examples=60, deadline=None)
@given(pairs, steps, st.booleans())
def test_optimistic_is_below_the_profile_everywhere(
    pq: tuple[int, int], h: float, on_grid: bool
) -> None:
    p, q = _pair(*pq)
    if on_grid:
        eps = np.arange(math.floor(-3 / h), math.ceil(3 / h) + 1) * h
    else:
        eps = np.linspace(-3.0, 3.0, 577) + 0.3 * h
    vals = _exact(p, q, eps)
    lo = P.optimistic_from_profile_points(eps, vals * (1 - 1e-12), vals * (1 + 1e-12), h)
    hi = P.from_profile_points(eps, np.minimum(vals * (1 + 1e-12), 1.0), h)
    assert np.all(lo.probs >= 0.0)
    x = np.linspace(-5.0, 5.0, 4001)
    truth = _exact(p, q, x)
    got = P.delta_for_epsilon(lo, x)
    assert np.all(got <= truth * (1 + 1e-9) + 1e-13)
    assert np.all(got <= P.delta_for_epsilon(hi, x) + 1e-13)


def _lib_pmf(d: P.LossPmf) -> object:
    """The library's connect-the-dots PMF on the values our distribution has at its own
    grid (convex values: the same algorithm)."""
    from dp_accounting.pld import pld_pmf

    idx = np.arange(d.lower, d.lower + d.size)
    vals = P.delta_for_epsilon(d, idx * d.h)
    return pld_pmf.create_pmf_pessimistic_connect_dots(d.h, idx, np.minimum.accumulate(vals))


@pytest.mark.parametrize("k", [1, 3, 40])
def test_compose_and_self_compose_agree_with_the_librarys_public_pld(k: int) -> None:
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld

    h = 1e-3
    grid = np.arange(-3000, 3001) * h
    ours = []
    for seed in (4, 11):
        p, q = _pair(seed, 5)
        ours.append(P.from_profile_points(grid, _exact(p, q, grid), h))
    libs = [pld.PrivacyLossDistribution(_lib_pmf(d)) for d in ours]
    mine = P.compose(P.self_compose(ours[0], k), ours[1])
    theirs = libs[0].self_compose(k).compose(libs[1]) if k > 1 else libs[0].compose(libs[1])
    x = np.linspace(-1.0, 4.0, 101)
    want = np.asarray(theirs.get_delta_for_epsilon(x), dtype=float)
    got = P.delta_for_epsilon(mine, x)
    assert np.allclose(got, want, rtol=1e-6, atol=1e-12)
    for delta in (1e-2, 1e-4, 1e-6):
        w = theirs.get_epsilon_for_delta(delta)
        assert P.epsilon_for_delta(mine, delta) == pytest.approx(w, rel=1e-6, abs=1e-9)


def test_pairs_read_the_larger_direction() -> None:
    h = 1e-3
    grid = np.arange(-3000, 3001) * h
    a, b = (P.from_profile_points(grid, _exact(*_pair(s, 4), grid), h) for s in (1, 2))
    pair = P.LossPair(a, b)
    for delta in (1e-2, 1e-4):
        assert P.epsilon_for_delta(pair, delta) == max(
            P.epsilon_for_delta(a, delta), P.epsilon_for_delta(b, delta)
        )


@pytest.mark.parametrize(("e0", "k"), [(0.1, 100), (0.5, 30), (0.01, 1000)])
def test_k_pure_releases_are_at_or_above_the_closed_form(e0: float, k: int) -> None:
    h = 1e-4
    up = P.self_compose_pair(P.epsilon_delta_pair(e0, 0.0, h, pessimistic=True), k)
    opt = P.self_compose_pair(P.epsilon_delta_pair(e0, 0.0, h, pessimistic=False), k)
    comp = PureComposition(epsilon=e0, count=k, single=RandomizedResponse(epsilon=e0))
    for delta in (1e-3, 1e-6):
        truth_lo = float(epsilon_at_delta(comp, delta, lower=True))
        truth_up = float(epsilon_at_delta(comp, delta))
        got = P.epsilon_for_delta(up, delta * (1 - 1e-5))
        assert got >= truth_lo
        # each loss is rounded up by less than h: the composed loss by less than k·h
        assert got <= truth_up + k * h
        assert P.epsilon_for_delta(opt, delta * (1 + 1e-5)) <= truth_up


def test_bad_profile_points_are_refused() -> None:
    with pytest.raises(ValueError, match="increasing"):
        P.from_profile_points([0.0, 0.0], [0.5, 0.4], 1e-3)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        P.from_profile_points([0.0, 1.0], [1.5, 0.4], 1e-3)


# -- dp_accounting only through its public interface ---------------------------------------


def _library_private_names() -> set[str]:
    """Attributes dp_accounting's own classes keep private (``self._x``)."""
    import importlib.util

    spec = importlib.util.find_spec("dp_accounting")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("dp_accounting not installed")
    names: set[str] = set()
    for root in spec.submodule_search_locations:
        for f in Path(root).rglob("*.py"):
            names |= set(re.findall(r"self\.(_[a-z]\w*)", f.read_text(encoding="utf-8")))
    return names


def test_no_module_reads_a_private_attribute_of_dp_accounting() -> None:
    lib = _library_private_names()
    ours: set[str] = set()
    trees = {}
    for f in sorted((ROOT / "ampcalc").rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        trees[f] = tree
        for node in ast.walk(tree):
            # attributes ampcalc's own classes and functions define
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                ours.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                ours.add(node.name)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                ours.add(node.target.id)
    offenders = []
    for f, tree in trees.items():
        lib_names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "dp_accounting"
            ):
                lib_names |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                lib_names |= {
                    (a.asname or a.name).split(".")[0]
                    for a in node.names
                    if a.name.startswith("dp_accounting")
                }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")):
                continue
            if node.attr.startswith("__"):
                continue
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            on_lib = isinstance(base, ast.Name) and base.id in lib_names
            if on_lib or (node.attr in lib and node.attr not in ours):
                offenders.append(f"{f.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert not offenders, offenders


def _stack_one_by_one(t: np.ndarray, v: np.ndarray) -> list[int]:
    """The monotone-chain lower hull, every point tested in turn (the oracle)."""
    tl, vl = t.tolist(), v.tolist()
    st: list[int] = []
    for i in range(len(tl)):
        while len(st) >= 2:
            a, b = st[-2], st[-1]
            if (vl[b] - vl[a]) / (tl[b] - tl[a]) > (vl[i] - vl[b]) / (tl[i] - tl[b]):
                st.pop()
            else:
                break
        st.append(i)
    return st


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(3, 400),
    seed=st.integers(0, 2**32 - 1),
    noise=st.sampled_from([0.0, 1e-17, 1e-15, 1e-3, 1.0]),
)
def test_stack_pass_pushes_runs_whole_with_the_same_result(
    n: int, seed: int, noise: float
) -> None:
    # straight runs with float noise (what reaches the stack pass), and rough point sets
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.uniform(1e-3, 1.0, n))
    v = 1.0 - 1e-3 * t + rng.normal(scale=noise, size=n) if noise else rng.normal(size=n)
    assert M._stack_pass(t, v).tolist() == _stack_one_by_one(t, v)


def test_stack_pass_on_an_accountant_grid_matches_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the ADD direction of a Poisson-sampled Gaussian: a long, nearly straight left tail
    from ampcalc.accounting import fastpld
    from ampcalc.accounting.profiles import Gaussian

    seen: list[tuple[np.ndarray, np.ndarray]] = []
    real = M._stack_pass

    def spy(t: np.ndarray, v: np.ndarray) -> np.ndarray:
        seen.append((t.copy(), v.copy()))
        return real(t, v)

    monkeypatch.setattr(M, "_stack_pass", spy)
    fastpld._built_direction(
        Gaussian(sigma=1.0, sensitivity=1.0), 0.01, 1e-4, remove=False, pessimistic=False
    )
    assert seen and max(len(t) for t, _ in seen) > 10_000
    for t, v in seen:
        assert real(t, v).tolist() == _stack_one_by_one(t, v)
