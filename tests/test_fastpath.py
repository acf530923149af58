"""The scalar evaluation and the vectorised shortcuts against the paths they replace.

``engine.core`` answers one ``bound``/``invert`` call on a design whose analysis has a
``ScalarForm`` (srswor's and poisson's closed form A(q, ε)) with Python floats instead of
numpy arrays. The form's ``expm1``/``log1p``/``exp``/``log`` are the array kernels' own
numpy calls on the one float, so it runs the array path's code and its
results are the array path's bits on any CPU: compared bit for bit (``repr`` of the JSON
dict, so -0.0/0.0 and the last ulp count). ``.ci/run`` runs these tests again with
numpy's AVX-512 loops switched off, so the claim is checked under both dispatches. Both
paths are also checked against the exact value (mpmath, ``oracle``): lower <= exact <=
upper, and the inverses on the right side.

``numeric.round_up``/``round_down`` step bit patterns instead of calling ``nextafter``
eight times, and ``engine.verdicts`` picks codes instead of filling an object array:
exact operations on both sides, compared bit for bit.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import oracle
import pytest
from conftest import array_path_only
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ampcalc
from ampcalc import engine
from ampcalc.engine import core as engine_core
from ampcalc.math import numeric
from ampcalc.model.results import Verdict

pytestmark = pytest.mark.float_kernels

EPS = st.floats(min_value=1e-300, max_value=1e6, allow_nan=False)
TARGET = st.floats(min_value=1e-300, max_value=1e4, allow_nan=False)
DELTA = st.sampled_from([0.0, 1e-9, 1e-5, 0.5])


def _design(scheme: str, size: tuple[int, int], neighbours: str, delta: float, eps: float):
    n, m = size
    sampling = (
        {"scheme": "srswor", "population": n, "sample": m}
        if scheme == "srswor"
        else {"scheme": "poisson", "rate": m / n}
    )
    return ampcalc.load_designs(
        {
            "mechanism": {"epsilon": eps, "delta": delta, "neighbours": neighbours},
            "sampling": sampling,
        }
    )[0]


SIZES = st.integers(min_value=1, max_value=10**12).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(min_value=1, max_value=n))
)
DESIGNS = st.builds(
    _design,
    st.sampled_from(["srswor", "poisson"]),
    SIZES,
    st.sampled_from(["replace-one", "both", "add-remove"]),
    DELTA,
    st.floats(min_value=1e-6, max_value=50.0),
)


def _array_path(fn, *args):
    with array_path_only():
        return fn(*args)


def _agree(fast, slow) -> None:
    """The same code on both sides: the same bits, field by field."""
    assert repr(fast.to_dict()) == repr(slow.to_dict())


def _rate_and_ratio(design) -> tuple[mp.mpf, int] | None:
    """The exact q and ε_R/ε of Theorem 2.2 (srswor, replace-one) or of Poisson sampling
    (add-remove), or None where the design has no such closed form."""
    p, neighbours = design.params, design.mechanism.neighbours.value
    if design.scheme == "srswor":
        return mp.mpf(p.sample) / p.population, 2 if neighbours == "add-remove" else 1
    if neighbours == "replace-one":  # Poisson needs M's add-remove ε: no bound
        return None
    return mp.mpf(float(p.rate)), 1


def _sound_bound(design, r) -> None:
    """lower <= A(q, ε_R) <= upper, A exact (mpmath)."""
    qr = _rate_and_ratio(design)
    if qr is None or r.upper is None:
        return
    exact = oracle.amplification(qr[0], qr[1] * r.epsilon)
    assert r.lower is None or mp.mpf(r.lower) <= exact, (r.lower, exact)
    assert exact <= mp.mpf(r.upper), (exact, r.upper)


def _sound_invert(design, target: float, r) -> None:
    """A(q, certified·ε_R/ε) <= target <= A(q, impossible_above·ε_R/ε), A exact."""
    qr = _rate_and_ratio(design)
    if qr is None:
        return
    q, ratio = qr
    if r.certified is not None and math.isfinite(r.certified):
        assert oracle.amplification(q, ratio * r.certified) <= target, r.certified
    if r.impossible_above is not None and math.isfinite(r.impossible_above):
        assert oracle.amplification(q, ratio * r.impossible_above) >= target, r.impossible_above


@settings(max_examples=300, deadline=None)
@given(design=DESIGNS, eps=st.one_of(st.none(), EPS))
@example(design=_design("srswor", (10_000, 100), "both", 0.0, 1.0), eps=700.0)
@example(design=_design("srswor", (10_000, 100), "both", 0.0, 1.0), eps=700.0000000000001)
@example(design=_design("poisson", (1, 1), "both", 1e-5, 1.0), eps=1e-300)
def test_bound_fast_path_equals_array_path(design, eps) -> None:
    fast = engine.bound(design, eps)
    slow = _array_path(engine.bound, design, eps)
    _agree(fast, slow)
    _sound_bound(design, fast)
    _sound_bound(design, slow)


@settings(max_examples=300, deadline=None)
@given(design=DESIGNS, target=TARGET, target_delta=st.one_of(st.none(), DELTA))
@example(design=_design("srswor", (10**12, 1), "both", 0.0, 1.0), target=690.0, target_delta=None)
@example(design=_design("poisson", (3, 1), "both", 0.0, 1.0), target=800.0, target_delta=1e-3)
def test_invert_fast_path_equals_array_path(design, target, target_delta) -> None:
    fast = engine.invert(design, target, target_delta)
    slow = _array_path(engine.invert, design, target, target_delta)
    _agree(fast, slow)
    _sound_invert(design, target, fast)
    _sound_invert(design, target, slow)


def test_fast_path_is_taken_and_refuses_what_it_does_not_cover() -> None:
    d = _design("srswor", (10_000, 100), "both", 0.0, 1.0)
    assert engine_core._scalar_bound(d, 0.5) is not None
    assert engine_core._scalar_invert(d, 0.1, None) is not None
    assert engine_core._scalar_bound(d, np.array([0.5])) is None  # arrays: the array path
    assert engine_core._scalar_bound(d, 800.0) is None  # log-space branch: the array path
    # add-remove srswor: its note prints ε, so it depends on the call
    add_remove = _design("srswor", (10, 1), "add-remove", 0.0, 1.0)
    assert engine_core._scalar_bound(add_remove, 0.5) is None
    # a replace-one guarantee for poisson is not the closed form: no scalar form
    replace_one = ampcalc.load_designs(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": "both"},
            "sampling": {"scheme": "poisson", "rate": 0.1},
            "guarantee": "replace-one",
        }
    )[0]
    assert engine_core._scalar_bound(replace_one, 0.5) is None
    with pytest.raises(ampcalc.DesignError, match="expected a number in"):
        engine.bound(d, -1.0)  # the same check_epsilon error as the array path


def test_srswor_fast_path_paper_value() -> None:
    """Bun et al. 2020, Theorem 2.2: ε′ = log(1 + (m/N)(e^ε − 1)) with m/N = 0.01, ε = 1
    (Bun et al.). Compared with the exact value, not with a float
    recomputation: ``math.expm1(1.0)`` and numpy's AVX-512 ``expm1`` differ by 1 ulp."""
    d = _design("srswor", (10_000, 100), "both", 0.0, 1.0)
    assert engine_core._scalar_bound(d, 1.0) is not None  # the scalar form answers it
    r = engine.bound(d, 1.0)
    exact = oracle.amplification(mp.mpf(100) / 10_000, 1.0)
    assert mp.mpf(r.lower) <= exact <= mp.mpf(r.upper)
    # 8 ulps of outward rounding each side, plus the kernels' own error (< 4 ulps)
    ulp = mp.mpf(math.ulp(float(exact)))
    assert mp.mpf(r.upper) - exact <= (numeric.OUTWARD_ULPS + 4) * ulp
    assert exact - mp.mpf(r.lower) <= (numeric.OUTWARD_ULPS + 4) * ulp
    assert r.upper == pytest.approx(0.017036863236176553, rel=1e-14)  # exact, 17 digits
    assert r.verdict == "amplifies"


def _loop_up(x: np.ndarray, n: int) -> np.ndarray:
    return numeric._nextafter_n(x, np.inf, n)


def _loop_down(x: np.ndarray, n: int) -> np.ndarray:
    return np.where(x >= 0, np.maximum(numeric._nextafter_n(x, -np.inf, n), 0.0), x)


SPECIAL = [0.0, -0.0, 5e-324, 1e-310, 1.0, np.inf, -np.inf, np.nan, -1.0, 1.7976931348623157e308]


@settings(max_examples=300, deadline=None)
@given(
    bits=st.lists(st.integers(min_value=0, max_value=2**63 - 1), min_size=1, max_size=20),
    extra=st.lists(st.sampled_from(SPECIAL), max_size=3),
    negative=st.booleans(),
    ulps=st.integers(min_value=0, max_value=10),
)
def test_rounding_by_bit_patterns_equals_nextafter_loop(bits, extra, negative, ulps) -> None:
    x = np.concatenate([np.array(bits, dtype=np.int64).view(np.float64), extra])
    if negative:
        x = -x
    for fast, loop in ((numeric.round_up, _loop_up), (numeric.round_down, _loop_down)):
        got, want = fast(x, ulps), loop(x, ulps)
        assert got.tobytes() == np.asarray(want, dtype=float).tobytes()


def _old_verdicts(lower, upper, reference) -> np.ndarray:
    ref = np.asarray(reference, dtype=float)
    out = np.full(ref.shape, Verdict.INCONCLUSIVE.value, dtype=object)
    decided = np.zeros(ref.shape, dtype=bool)
    if lower is not None:
        lo = np.asarray(lower, dtype=float)
        deg = lo > ref * (1 + engine_core.VERDICT_SLACK)
        out[deg] = Verdict.DEGRADES.value
        decided |= deg
        noamp = ~decided & (lo >= ref * (1 - engine_core.VERDICT_SLACK))
        out[noamp] = Verdict.NO_AMPLIFICATION.value
        decided |= noamp
    if upper is None:
        out[~decided] = Verdict.NO_GUARANTEE.value
    else:
        amp = ~decided & (np.asarray(upper, dtype=float) < ref)
        out[amp] = Verdict.AMPLIFIES.value
    return out


VALUES = st.sampled_from([0.5, 1.0, 1.0 + 1e-13, 1.0 - 1e-13, 1.0 + 1e-11, 2.0, np.nan])


@given(
    rows=st.lists(st.tuples(VALUES, VALUES, VALUES), min_size=0, max_size=12),
    has_lower=st.booleans(),
    has_upper=st.booleans(),
)
def test_verdict_codes_equal_the_object_array_fill(rows, has_lower, has_upper) -> None:
    arr = np.array(rows, dtype=float).reshape(-1, 3)
    lo = arr[:, 0] if has_lower else None
    up = arr[:, 1] if has_upper else None
    got, want = engine.verdicts(lo, up, arr[:, 2]), _old_verdicts(lo, up, arr[:, 2])
    assert got.dtype == object and got.tolist() == want.tolist()
    if rows:
        one = engine.verdicts(
            None if lo is None else lo[0], None if up is None else up[0], arr[0, 2]
        )
        assert one.shape == () and one.item() == want[0]


def test_a_copy_of_the_analysis_that_changes_a_bound_drops_the_scalar_form() -> None:
    """The form names the analysis's functions it stands for: a family that replaces one
    (as stratified designs do with srswor's and poisson's theorems) loses it."""
    import dataclasses

    d = _design("poisson", (100, 1), "both", 1e-6, 1.0)
    analysis = engine.analyse(d)
    assert analysis.scalar_form() is not None
    changed = dataclasses.replace(analysis, upper=lambda e: np.full(np.shape(e), np.inf))
    assert changed.scalar_form() is None
    assert dataclasses.replace(analysis, warnings=("w",)).scalar_form() is None
