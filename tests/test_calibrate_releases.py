"""``invert --solve sigma|scale`` on named releases run on ONE sample: the one noise
scale they share.

Oracles: Gaussian releases at a common σ compose to one Gaussian of sensitivity
√Σ countᵢ·Δᵢ² (Dong, Roth and Su 2022, Corollary 3.3), so the answer equals the solve of
that single Gaussian, and the bound of the design edited to the answer (``--set`` on the
releases) meets the target; a mix with Laplace releases is checked the same way on the
edited design."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, run_main

from ampcalc import api
from ampcalc.analyses import calibrate

SCHEMA = json.loads((ROOT / "ampcalc" / "schema" / "result.schema.json").read_text())
RELEASES = ROOT / "examples" / "mechanisms" / "gaussian-releases.yaml"

SINGLE = """name: one Gaussian
mechanism: {{gaussian: {{sigma: 1.0, sensitivity: {sens!r}}}, neighbours: add-remove}}
sampling: {{scheme: poisson, rate: 0.01}}
target: {{delta_prime: 1e-6}}
"""
TWO_KINDS = """name: two Gaussian kinds
mechanism:
  releases:
    - {gaussian: {sigma: 1.0}, count: 3}
    - {gaussian: {sigma: 5.0, sensitivity: 2.0}, count: 2}
  neighbours: add-remove
sampling: {scheme: poisson, rate: 0.01}
target: {delta_prime: 1e-6}
"""


def _single(tmp_path: Path, sens: float) -> Path:
    p = tmp_path / "single.yaml"
    p.write_text(SINGLE.format(sens=sens))
    return p


def test_gaussian_releases_solve_as_one_gaussian_of_the_composed_sensitivity(
    tmp_path: Path, capsys
) -> None:
    doc = run_main(
        capsys, "invert", str(RELEASES), "--solve", "sigma", "--target", "1", "--json"
    ).json()
    jsonschema.validate(doc, SCHEMA)
    (r,) = doc["results"]
    k = r["knob"]
    assert k["releases"] == 100 and k["name"] == "sigma"
    # 100 releases of sensitivity 1 at a common σ: one Gaussian of sensitivity 10
    one = calibrate.solve(api.load_design(_single(tmp_path, 10.0)), "sigma", 1.0)
    assert k["value"] == pytest.approx(one["knob"]["value"], rel=1e-9)
    assert k["impossible_below"] == pytest.approx(one["knob"]["impossible_below"], rel=1e-9)
    # the releases edited to the answer meet the target, and a hair less noise does not
    v = k["value"]
    at = api.bound(
        api.load_design(RELEASES, overrides=[f"mechanism.releases[0].gaussian.sigma={v!r}"])
    )
    assert at.upper <= 1.0 and at.upper == k["epsilon_prime_at_value"]
    below = api.bound(
        api.load_design(
            RELEASES, overrides=[f"mechanism.releases[0].gaussian.sigma={v * (1 - 1e-6)!r}"]
        )
    )
    assert below.upper > 1.0


def test_releases_of_several_sensitivities_share_one_sigma(tmp_path: Path) -> None:
    d = api.load_design(TWO_KINDS)
    r = calibrate.solve(d, "sigma", 0.5)
    # √(3·1² + 2·2²) = √11
    one = calibrate.solve(api.load_design(_single(tmp_path, math.sqrt(11.0))), "sigma", 0.5)
    assert r["knob"]["value"] == pytest.approx(one["knob"]["value"], rel=1e-9)
    assert r["knob"]["releases"] == 5
    v = r["knob"]["value"]
    edited = api.load_design(
        TWO_KINDS,
        overrides=[
            f"mechanism.releases[0].gaussian.sigma={v!r}",
            f"mechanism.releases[1].gaussian.sigma={v!r}",
        ],
    )
    assert api.bound(edited).upper <= 0.5


@pytest.mark.slow  # about 20 s of CPU: each value tried composes with the accountant
def test_a_mix_with_laplace_sets_the_gaussians_and_keeps_the_laplace(tmp_path: Path) -> None:
    pytest.importorskip("dp_accounting")
    text = TWO_KINDS.replace(
        "- {gaussian: {sigma: 5.0, sensitivity: 2.0}, count: 2}", "- {laplace: {scale: 20.0}}"
    ).replace("count: 3", "count: 2")
    d = api.load_design(text)
    r = calibrate.solve(d, "sigma", 1.0)
    k = r["knob"]
    assert k["releases"] == 2 and "the other 1 kept as written" in " ".join(r["notes"])
    v, low = k["value"], k["impossible_below"]
    edited = api.load_design(text, overrides=[f"mechanism.releases[0].gaussian.sigma={v!r}"])
    res = api.bound(edited)
    assert res.upper <= 1.0 and res.upper == k["epsilon_prime_at_value"]
    assert edited.mechanism.named_releases[1][0].scale == 20.0
    assert low is not None and low < v
    at_low = api.bound(
        api.load_design(text, overrides=[f"mechanism.releases[0].gaussian.sigma={low!r}"])
    )
    assert at_low.lower >= 1.0


def test_releases_without_the_knob_are_refused(tmp_path: Path, capsys) -> None:
    p = tmp_path / "laplaces.yaml"
    p.write_text(
        "mechanism: {releases: [{laplace: {scale: 2.0}, count: 3}]}\n"
        "sampling: {scheme: poisson, rate: 0.01}\n"
    )
    run = run_main(capsys, "invert", str(p), "--solve", "sigma", "--target", "1", expect=2)
    assert "needs a named gaussian or discrete-gaussian release" in run.stderr
    assert "laplace" in run.stderr
