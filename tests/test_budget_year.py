"""The README's year of releases, and a ledger entry without a bound, end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

from conftest import ROOT, run_main

from ampcalc import api
from ampcalc.accounting.profiles import Gaussian, epsilon_at_delta

SCHOOLS = ROOT / "examples" / "budget" / "schools.yaml"
ONE_SAMPLE = ROOT / "examples" / "designs" / "schools-one-sample.yaml"


def test_fresh_waves_cost_less_than_one_sample_which_costs_less_than_no_sampling() -> None:
    # 12 Gaussian counts (σ = 2) of the two-stage school survey, δ = 1e-6: each wave on a
    # fresh sample, all 12 on one sample (composed, then amplified once), no sampling
    fresh = api.budget(api.load_ledger(str(SCHOOLS)))["total"]
    one = api.bound(api.load_design(ONE_SAMPLE))
    # no sampling: 12 Gaussians of σ = 2 are one Gaussian of σ = 2/√12 (closed form)
    none = float(epsilon_at_delta(Gaussian(sigma=2.0 / math.sqrt(12), sensitivity=1.0), 1e-6))
    assert 0 < fresh["lower"] <= fresh["upper"] < one.upper < none
    assert abs(none - 9.254266) < 1e-5
    assert abs(one.upper - 7.04778) < 1e-4 and abs(fresh["upper"] - 1.6359) < 1e-4


def test_an_entry_without_a_bound_says_why_in_the_table_and_json(tmp_path: Path, capsys) -> None:
    # randomised rounding has no (ε, δ) theorem: a Gaussian through it gets no upper
    # bound, the reason in the table (not only on stderr) and the JSON; the witness still
    # bounds the total from below
    ledger = tmp_path / "l.yaml"
    design = ROOT / "examples" / "designs" / "stratified-business-survey.yaml"
    ledger.write_text(
        "target: {delta: 1e-6}\nentries:\n"
        f"  - name: business survey\n    design: {design}\n    index: 0\n    count: 4\n"
    )
    gauss = "entries[0].design.mechanism={gaussian: {sigma: 1.0}}"
    run = run_main(capsys, "budget", str(ledger), "--set", gauss)
    table = " ".join(run.stdout.split())
    assert "business survey: no bound: the stratified scheme has no (ε, δ) theorem" in table
    assert "composed None" not in table and "no-guarantee" in table
    doc = json.loads(run_main(capsys, "budget", str(ledger), "--set", gauss, "--json").stdout)
    assert "no (ε, δ) theorem" in doc["entries"][0]["error"]
    assert doc["total"]["upper"] is None and doc["total"]["lower"] > 0
