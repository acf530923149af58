"""`ampcalc compare`: certified ε at a target and each scheme's accuracy columns."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import oracle_stratified as orc
import pytest
from conftest import run_ampcalc, run_main

from ampcalc.designs.document import load_designs
from ampcalc.schemes import stratified as strat

EXAMPLE = "examples/designs/stratified-business-survey.yaml"


def test_json_contract_and_figures(capsys) -> None:
    doc = run_main(capsys, "compare", EXAMPLE, "--target", "1", "--json").json()
    assert doc["command"] == "compare" and doc["target"] == 1.0
    rows = {r["name"]: r for r in doc["results"]}
    assert list(rows) == [
        "proportional, randomised rounding",
        "proportional, round to nearest",
        "stratified Poisson",
        "Neyman allocation",
    ]
    data = np.genfromtxt(
        "examples/designs/data/business-strata.csv",
        delimiter=",",
        names=True,
        dtype=None,
        encoding="utf-8",
    )
    n = data["size"].astype(float)
    sd = data["sd"].astype(float)
    w = n / n.sum()
    rand = rows["proportional, randomised rounding"]
    # certified ε: the largest with every stratum's exact loss (docs/derivations.md §10.1,
    # in mpmath) at most 1, above Theorem 7.2's exact inverse at r = 0.00145 (spec §5.1)
    cert = rand["epsilon"]["certified"]
    assert cert > float(orc.thm43_inverse(0.00145, 1.0))
    worst = max(max(orc.rr_exact(0.00145, int(n_h), cert, 2 * cert).values()) for n_h in n)
    assert 1 - 1e-9 < worst <= 1
    acc = rand["accuracy"]
    m = 0.00145 * n
    sv = float(np.sum(w**2 * (1 - m / n) * sd**2 / m))
    assert acc["sampling_variance"] == pytest.approx(sv, rel=1e-12)
    b = float(np.max(w * 10000 / (m * cert)))
    assert acc["noise_scale"] == pytest.approx(b, rel=1e-12)
    assert acc["noise_variance"] == pytest.approx(2 * b * b, rel=1e-12)
    assert acc["total_variance"] == pytest.approx(sv + 2 * b * b, rel=1e-12)
    # each stratum spends the ε its own exact loss certifies (the design's is their least)
    per = acc["epsilon_per_stratum"]
    assert len(per) == 12 and min(per) >= cert
    for n_h, e_h in zip(n, per, strict=True):
        assert max(orc.rr_exact(0.00145, int(n_h), e_h, 2 * e_h).values()) <= 1
    assert any("estimator" in a for a in acc["assumptions"])
    # Neyman: smallest sampling variance, but no certified ε; the optimistic noise
    # (at the ε past which the target surely fails) swamps its advantage
    ney = rows["Neyman allocation"]
    assert ney["epsilon"]["certified"] is None and ney["accuracy"]["noise_variance"] is None
    assert ney["accuracy"]["sampling_variance"] < acc["sampling_variance"]
    assert ney["accuracy"]["total_variance_optimistic"] > acc["total_variance"]
    # round to nearest at these sizes: no added or removed record moves ⌊r·N_h⌉, so each
    # stratum is a simple random sample, A(m_h/N_h, 2ε) (000 Theorem 2.2, ε_R = 2ε):
    # the exact inverse at the largest m_h/N_h, here just below randomised rounding's
    near = rows["proportional, round to nearest"]
    m_near = np.floor(0.00145 * n + 0.5)
    assert np.all(np.floor(0.00145 * (n + 1) + 0.5) == m_near)
    assert np.all(np.floor(0.00145 * (n - 1) + 0.5) == m_near)
    q = float(np.max(m_near / n))
    want = float(mp.log1p(mp.expm1(1) / mp.mpf(q)) / 2)
    assert want * (1 - 1e-13) <= near["epsilon"]["certified"] <= want
    assert near["epsilon"]["certified"] < cert


def test_scheme_without_hook_gets_empty_accuracy(tmp_path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, neighbours: both}\n"
        "designs:\n"
        "  - name: p\n    sampling: {scheme: poisson, rate: 0.01}\n"
        "  - name: s\n    sampling: {scheme: stratified, rate: 0.01, strata: [{size: 500}]}\n"
    )
    doc = run_ampcalc("compare", str(f), "-t", "0.5", "--json").json()
    p, s = doc["results"]
    assert p["accuracy"] == {}
    assert p["epsilon"]["certified"] == pytest.approx(float(np.log1p(np.expm1(0.5) / 0.01)))
    assert s["accuracy"]["noise_variance"] is None  # no value_bound: stated, not invented
    assert any("value_bound" in a for a in s["accuracy"]["assumptions"])
    table = run_ampcalc("compare", str(f), "-t", "0.5", env={"COLUMNS": "200"}).stdout
    assert "sampling_variance" in table and "certified ε" in table


def test_failed_design_and_missing_target(tmp_path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(
        "mechanism: {epsilon: 1}\n"
        "sampling: {scheme: stratified, rate: 0.001, strata: [{name: tiny, size: 10}]}\n"
    )
    out = run_ampcalc("compare", str(f), "-t", "1", "--json", expect=2)
    assert "Theorem 7.2" in out.json()["results"][0]["error"]
    out = run_ampcalc("compare", str(f), expect=2)
    assert "no target" in out.stderr


def test_hook_direct_call() -> None:
    d = load_designs(EXAMPLE)[3]
    from ampcalc import engine

    acc = strat.compare(d, 1.0, engine.invert(d, 1.0))
    assert acc["noise_variance"] is None and acc["noise_variance_optimistic"] > 0
