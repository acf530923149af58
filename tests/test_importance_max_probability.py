"""Importance sampling with probabilities from a column and a public ceiling on q for
weight-free profiles (Personalized Privacy Amplification via Importance Sampling, App. A: a
mechanism that ignores the
weights has a constant profile, and Theorem 6 reduces to Proposition 3 per record)."""

from __future__ import annotations

import re
from pathlib import Path

import mpmath as mp
import pytest

from ampcalc import engine
from ampcalc.designs.document import load_designs
from ampcalc.model.errors import DesignError


@pytest.fixture(autouse=True)
def _restore_mpmath_precision():
    """The tests below raise mpmath's precision; other modules' oracles rely on theirs."""
    old = mp.mp.dps
    yield
    mp.mp.dps = old


ROWS = "x,y,q\n3,0,0.1\n0,-2,0.02\n1,1,0.05\n"


def bound(tmp_path: Path, mechanism: str, extra: str, rows: str = ROWS):
    (tmp_path / "rec.csv").write_text(rows)
    (tmp_path / "d.yaml").write_text(
        f"""
mechanism: {mechanism}
sampling:
  scheme: importance
  records: rec.csv
  columns: [x, y]
  probabilities: column
  probability_column: q
  radius: 3.0
{extra}"""
    )
    return engine.bound(load_designs(tmp_path / "d.yaml")[0])


def amplify(q: str, eps: str) -> mp.mpf:
    return mp.log(1 + mp.mpf(q) * mp.expm1(mp.mpf(eps)))


def test_constant_profile_with_a_ceiling_is_proposition_3(tmp_path: Path) -> None:
    # spec A13: amplify(1, 10) = log(1 + (e − 1)/10) = 0.158565078740429 (003 Eq. 1 with
    # a weight-free profile = Proposition 3 at q = 1/w = 0.1)
    mp.mp.dps = 40
    r = bound(tmp_path, "{profile: constant, epsilon: 1.0}", "  max_probability: 0.1\n")
    exact = amplify("0.1", "1")
    assert float(exact) == pytest.approx(0.158565078740429, abs=1e-15)
    assert mp.mpf(r.upper) >= exact and r.upper - float(exact) <= 1e-14
    # the file's worst record has q = 0.1 = the ceiling: the bound is attained
    assert mp.mpf(r.lower) <= exact and float(exact) - r.lower <= 1e-14
    assert r.details["max_probability"] == 0.1
    assert any("max_probability = 0.1" in c for c in r.conditions)


def test_example_design(tmp_path: Path) -> None:
    mp.mp.dps = 40
    root = Path(__file__).resolve().parent.parent
    d = load_designs(root / "examples" / "designs" / "importance-column-constant.yaml")[0]
    r = engine.bound(d)
    exact = amplify("0.05", "2")  # 0.277217108944941
    assert mp.mpf(r.upper) >= exact and r.upper - float(exact) <= 1e-14
    assert r.verdict == "amplifies"


def test_without_a_ceiling_no_amplification_is_claimed(tmp_path: Path) -> None:
    r = bound(tmp_path, "{profile: constant, epsilon: 1.0}", "")
    assert r.upper == pytest.approx(1.0, rel=1e-14) and r.upper >= 1.0
    assert any("max_probability" in w for w in r.warnings)


def test_ceiling_does_not_bound_a_weight_linear_profile(tmp_path: Path) -> None:
    extra = "  min_probability: 0.02\n"
    base = bound(tmp_path, "{profile: laplace-sum, scale: 4.0}", extra)
    r = bound(tmp_path, "{profile: laplace-sum, scale: 4.0}", extra + "  max_probability: 0.1\n")
    assert r.upper == base.upper
    assert any("does not bound a weight-linear" in w for w in r.warnings)


@pytest.mark.parametrize(
    ("extra", "rows", "needle"),
    [
        (
            "  max_probability: 0.05\n",
            ROWS,
            "record 0 (0-based) has probability 0.1; expected (0, 0.05]",
        ),
        ("  max_probability: 0.01\n  min_probability: 0.02\n", ROWS, "below min_probability"),
    ],
)
def test_bad_ceiling(tmp_path: Path, extra: str, rows: str, needle: str) -> None:
    with pytest.raises(DesignError, match=re.escape(needle)):
        bound(tmp_path, "{profile: constant, epsilon: 1.0}", extra, rows)


def test_ceiling_only_for_column_mode(tmp_path: Path) -> None:
    (tmp_path / "rec.csv").write_text("x,y\n1,1\n")
    (tmp_path / "d.yaml").write_text(
        """
mechanism: {profile: constant, epsilon: 1.0}
sampling:
  scheme: importance
  records: rec.csv
  probabilities: uniform
  expected_size: 1
  population: 10
  radius: 3.0
  max_probability: 0.1
"""
    )
    with pytest.raises(DesignError, match="is for `probabilities: column`"):
        load_designs(tmp_path / "d.yaml")
