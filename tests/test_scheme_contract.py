"""Contract tests run over every registered scheme with an ``epsilon`` mechanism.

Each scheme declares ``example`` parameters; for them: lower <= upper where both
exist, both non-decreasing in ε, and invert then bound reaches the target from below.
A scheme that returns an error for its own example fails the contract (it is not
skipped); only a scheme that gives no upper bound at all may certify no ε.
"""

from __future__ import annotations

import numpy as np
import pytest

import ampcalc
from ampcalc import engine, schemes

CONTRACT = [
    s.name
    for s in schemes.all_schemes()
    if s.example and s.mechanism_form == "epsilon" and not s.needs_target
]
EPS = np.array([1e-12, 1e-6, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0, 100.0, 700.0, 800.0])


def design_for(name: str, neighbours: str):
    return ampcalc.load_designs(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": neighbours},
            "sampling": {"scheme": name, **schemes.get(name).example},
        }
    )[0]


@pytest.mark.parametrize("name", CONTRACT)
@pytest.mark.parametrize("neighbours", ["both", "add-remove"])
def test_bounds_ordered_and_monotone(name: str, neighbours: str) -> None:
    r = engine.bound(design_for(name, neighbours), EPS)
    if r.error:
        pytest.fail(f"{name} ({neighbours}) returned an error: {r.error}")
    lower = None if r.lower is None else np.asarray(r.lower, dtype=float)
    upper = None if r.upper is None else np.asarray(r.upper, dtype=float)
    if lower is not None:
        assert np.all(np.diff(lower) >= 0)
        assert np.all(np.isfinite(lower))
    if upper is not None:
        assert np.all(np.diff(upper) >= 0)
        assert np.all(np.isfinite(upper))
    if lower is not None and upper is not None:
        assert np.all(lower <= upper)


@pytest.mark.parametrize("name", CONTRACT)
@pytest.mark.parametrize("target", [1e-6, 0.1, 1.0, 5.0])
def test_invert_then_bound_reaches_target_from_below(name: str, target: float) -> None:
    d = design_for(name, "both")
    inv = engine.invert(d, target)
    if inv.error:
        pytest.fail(f"{name} returned an error: {inv.error}")
    if inv.certified is None:
        # only a lower-bound-only design may certify nothing
        assert engine.bound(d, EPS).upper is None, f"{name}: no certificate ({inv.warnings})"
    else:
        assert engine.bound(d, inv.certified).upper <= target
    if inv.impossible_above is not None and np.isfinite(inv.impossible_above):
        if inv.certified is not None:
            assert inv.impossible_above >= inv.certified
        assert engine.bound(d, inv.impossible_above).lower >= target


def test_every_scheme_documents_its_fields_and_basis() -> None:
    for s in schemes.all_schemes():
        assert s.basis, s.name
        assert s.summary, s.name
        for f in s.fields:
            assert f.doc, (s.name, f.name)
