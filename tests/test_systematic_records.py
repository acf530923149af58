"""Systematic sampling in a fixed, known order as a theorem record (the start-class
witness in M's (ε_D, ε_R), Bun et al., §6.3): M's add-remove ε reaches
the witness as +∞ when it is unknown."""

from __future__ import annotations

import numpy as np

from ampcalc import engine
from ampcalc.designs.document import load_designs
from ampcalc.schemes import systematic


def design(neighbours: str):
    doc = {
        "mechanism": {"epsilon": 1.0, "neighbours": neighbours},
        "sampling": {"scheme": "systematic", "population": 3, "interval": 2, "order": "fixed"},
    }
    return load_designs(doc)[0]


def test_unknown_add_remove_epsilon_reads_as_none() -> None:
    sizes = {1: 1, 2: 1}
    e = np.asarray([0.5, 1.0, 3.0])
    assert np.array_equal(
        systematic.fixed_order_lower(e, np.full(3, np.inf), sizes),
        systematic.fixed_order_lower(e, None, sizes),
    )


def test_replace_one_only_lone_class_loses_m_epsilon() -> None:
    """N = 3, k = 2: start classes of 1 and 2 records. Under replace-one only M may read
    the sample size, so the class of one record is told apart exactly: q = 1 and the
    loss is A(1, ε_R) = ε_R = 1 (the exact LP of ``ampcalc verify`` gives exactly 1)."""
    res = engine.bound(design("replace-one"))
    assert res.lower <= 1.0 and 1.0 - res.lower < 1e-14  # a few ulps of outward rounding
    assert res.upper is None
    assert res.details["witness_class_size"] == 1
    assert "(here by its size alone" in res.warnings[0]
    both = engine.bound(design("both"))
    assert both.lower < 1.0 and "(here by its size alone" not in both.warnings[0]
