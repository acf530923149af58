"""How far apart a result's bounds are: ``tightness`` in JSON, the ``bounds`` column."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run_ampcalc

from ampcalc.model.results import TIGHT_REL, tightness
from ampcalc.output import render

ROOT = Path(__file__).resolve().parents[1]


def test_meeting_bounds_are_exact() -> None:
    assert tightness(0.5, 0.5) == {"exact": True}
    assert tightness(0.0, 0.0) == {"exact": True}
    # within 1e-9 relative (outward rounding of one formula both ways)
    assert tightness(1.0, 1.0 + 0.5 * TIGHT_REL) == {"exact": True}


def test_a_gap_gives_the_ratio_and_the_difference_in_nats() -> None:
    t = tightness(1.01308, 1.64643)
    assert t["exact"] is False
    assert t["ratio"] == pytest.approx(1.64643 / 1.01308, rel=1e-15)
    assert t["gap_nats"] == pytest.approx(1.64643 - 1.01308, rel=1e-15)
    assert tightness(1.0, 1.0 + 2 * TIGHT_REL)["exact"] is False
    # lower 0: no finite ratio
    assert tightness(0.0, 0.3) == {"exact": False, "ratio": None, "gap_nats": 0.3}
    assert tightness(0.1, math.inf) == {"exact": False, "ratio": None, "gap_nats": None}


def test_missing_bounds_and_arrays() -> None:
    assert tightness(None, 1.0) is None and tightness(0.2, None) is None
    import numpy as np

    out = tightness(np.array([0.1, 0.2]), np.array([0.1, 0.4]))
    assert out[0] == {"exact": True}
    assert out[1] == {"exact": False, "ratio": 2.0, "gap_nats": 0.2}


def test_json_carries_it_and_matches_the_schema(tmp_path: Path) -> None:
    import jsonschema

    design = tmp_path / "d.yaml"
    design.write_text(
        "designs:\n"
        "  - name: poisson replace-one\n"
        "    mechanism: {epsilon: 2.0, neighbours: add-remove}\n"
        "    sampling: {scheme: poisson, rate: 0.2}\n"
        "    guarantee: replace-one\n"
        "  - name: two-stage cluster\n"
        "    mechanism: {epsilon: 1.0, neighbours: add-remove}\n"
        "    sampling: {scheme: poisson, rate: 0.2}\n"
        "    guarantee: replace-one\n"
    )
    gap = ROOT / "examples" / "designs" / "random-size-pmf.yaml"  # no matching bound known
    schema = json.loads((ROOT / "ampcalc" / "schema" / "result.schema.json").read_text())
    for f in (design, gap):
        doc = json.loads(run_ampcalc("bound", str(f), "--json").stdout)
        jsonschema.validate(doc, schema)
        for r in doc["results"]:
            ep = r["epsilon_prime"]
            assert r["tightness"] == tightness(ep["lower"], ep["upper"])
    doc = json.loads(run_ampcalc("bound", str(design), "--json").stdout)
    assert doc["results"][0]["tightness"] == {"exact": True}  # the exact Poisson value
    doc = json.loads(run_ampcalc("bound", str(gap), "--json").stdout)
    t = doc["results"][0]["tightness"]
    assert t["exact"] is False and t["ratio"] > 1 and t["gap_nats"] > 0


def test_table_column() -> None:
    assert render.tightness_cell({"exact": True}) == "exact"
    assert render.tightness_cell(None) == render.DASH
    cell = render.tightness_cell({"exact": False, "ratio": 9.172841, "gap_nats": 0.1392})
    assert cell == "×9.17284, +0.139 nats"
    assert render.tightness_cell({"exact": False, "ratio": None, "gap_nats": 0.3}) == "+0.3 nats"
    out = run_ampcalc(
        "bound",
        str(ROOT / "examples" / "designs" / "random-size-pmf.yaml"),
        env={"COLUMNS": "200"},
    ).stdout
    assert "bounds" in out.splitlines()[0] and "nats" in out.splitlines()[2]
