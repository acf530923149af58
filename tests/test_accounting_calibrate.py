"""``invert --solve sigma|scale``: the smallest noise whose amplified upper bound meets
the target, checked as evaluated.

Oracles: the σ = 1 Poisson-subsampled Gaussian (issue 17 §2: 0.3639478396 at q = 0.01,
δ′ = 1e-6), which a calibration to that ε′ must return; and the pure Laplace mechanism on a
Poisson sample at δ′ = 0, whose calibration is the closed form b = Δ/A⁻¹(q, T)
(Bun et al. 2020, Lemma 3.3: ε′ = log(1 + q(e^{Δ/b} − 1))).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import mpmath as mp
import pytest

from ampcalc import api
from ampcalc.analyses.calibrate import solve
from ampcalc.model.errors import DesignError

ROOT = Path(__file__).resolve().parents[1]


def design(mechanism: str, sampling: str = "{scheme: poisson, rate: 0.01}", dp: str = "1e-6"):
    return api.load_design(
        f"name: d\nmechanism: {mechanism}\nsampling: {sampling}\ntarget: {{delta_prime: {dp}}}\n"
    )


def upper(d, **noise) -> float:
    text = ", ".join(f"{k}: {v!r}" for k, v in noise.items())
    kind = "gaussian" if "sigma" in noise else "laplace"
    return api.bound(
        api.load_design(
            f"name: d\nmechanism: {{{kind}: {{{text}}}}}\nsampling: {{scheme: {d.scheme}, "
            f"rate: {d.params.rate}}}\ntarget: {{delta_prime: {d.target.delta_prime}}}\n"
        )
    ).upper


def test_solve_sigma_recovers_the_gaussian_of_the_acceptance_value() -> None:
    d = design("{gaussian: {sigma: 1.0}}")
    t = api.bound(d).upper  # 0.3639478396156811: σ = 1 meets it
    r = solve(d, "sigma", t)
    assert r["knob"]["value"] == pytest.approx(1.0, rel=1e-11)
    assert r["knob"]["epsilon_prime_at_value"] <= t  # checked as evaluated
    assert upper(d, sigma=r["knob"]["value"] * (1 - 1e-9)) > t  # the smallest, to 1e-9
    assert (
        r["knob"]["impossible_below"] is not None
        and r["knob"]["impossible_below"] < r["knob"]["value"]
    )
    low = api.bound(design(f"{{gaussian: {{sigma: {r['knob']['impossible_below']!r}}}}}")).lower
    assert low >= t


def test_solve_scale_matches_the_pure_laplace_closed_form() -> None:
    d = design("{laplace: {scale: 1.0}}", dp="0")
    t = 0.02
    r = solve(d, "scale", t)
    q, tt = mp.mpf("0.01"), mp.mpf(t)
    exact = 1 / mp.log(1 + mp.expm1(tt) / q)  # b with A(q, 1/b) = T
    assert mp.mpf(r["knob"]["value"]) >= exact  # never below: a smaller b breaks T
    assert float((mp.mpf(r["knob"]["value"]) - exact) / exact) < 1e-8
    assert r["knob"]["epsilon_prime_at_value"] <= t


@pytest.mark.slow
def test_solve_on_a_replace_one_design_meets_the_target() -> None:
    d = design(
        "{gaussian: {sigma: 1.0}, neighbours: both}",
        sampling="{scheme: srswor, population: 10000, sample: 100}",
    )
    r = solve(d, "sigma", 0.05)
    assert r["knob"]["epsilon_prime_at_value"] <= 0.05
    assert r["knob"]["impossible_below"] is None  # no lower bound for a profile on srswor


def test_solve_refuses_the_wrong_knob() -> None:
    with pytest.raises(DesignError, match="laplace"):
        solve(design("{gaussian: {sigma: 1.0}}"), "scale", 1.0)
    releases = api.load_design(
        "name: d\nmechanism: {releases: [{gaussian: {sigma: 1.0}, count: 3}]}\n"
        "sampling: {scheme: poisson, rate: 0.01}\ntarget: {delta_prime: 1e-6}\n"
    )
    # Gaussian releases on one sample have no Laplace scale to solve for
    with pytest.raises(DesignError, match="release"):
        solve(releases, "scale", 1.0)
    # ... and share one σ: 3 releases of sensitivity 1 are one Gaussian of sensitivity √3
    one = solve(design("{gaussian: {sigma: 1.0, sensitivity: 1.7320508075688772}}"), "sigma", 1.0)
    assert solve(releases, "sigma", 1.0)["knob"]["value"] == pytest.approx(
        one["knob"]["value"], rel=1e-9
    )


def test_cli_invert_solve_json(tmp_path: Path) -> None:
    p = tmp_path / "g.yaml"
    p.write_text(
        "name: g\nmechanism: {gaussian: {sigma: 1.0}}\nsampling: {scheme: poisson, rate: 0.01}\n"
        "target: {delta_prime: 1e-6}\n"
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "ampcalc",
            "invert",
            str(p),
            "--solve",
            "sigma",
            "--target",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    r = json.loads(run.stdout)["results"][0]
    assert r["knob"]["name"] == "sigma" and r["knob"]["epsilon_prime_at_value"] <= 1.0
    assert math.isclose(r["knob"]["value"], 0.7764364061795443, rel_tol=1e-9)
