"""One description of the importance profiles, read by the design loader and the kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ampcalc
from ampcalc import kernels
from ampcalc.math.importance import PROFILE_PARAMETERS
from ampcalc.schemes import importance

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "designs"


@pytest.mark.parametrize("kind", sorted(PROFILE_PARAMETERS))
def test_loader_fields_follow_the_table(kind: str) -> None:
    names = [f.name for f in importance._PROFILE_FIELDS[kind]]
    assert names == ["profile", *PROFILE_PARAMETERS[kind]]
    assert importance.PROFILES == tuple(PROFILE_PARAMETERS)


@pytest.mark.parametrize("given", ["noise_constant", "scales"])
def test_kernels_read_dp_lloyd_as_the_loader_does(given: str) -> None:
    path = EXAMPLES / "importance-kmeans.yaml"
    design = ampcalc.load_design(path)
    mech = design.mechanism
    profile: dict[str, object] = {"profile": "dp-lloyd", "iterations": mech.iterations}
    if given == "noise_constant":
        profile.update(noise_constant=mech.noise_constant, norm=mech.norm)
    else:  # the scales B sets (Su et al. 2016): the same coefficients
        profile.update(count_scale=mech.count_scale, sum_scale=mech.sum_scale)
    records = np.loadtxt(EXAMPLES / "data" / "importance-clusters.csv", delimiter=",", skiprows=1)
    weights = ampcalc.weights(path)
    got = kernels.personalised_epsilon(
        profile, records, weights.probability, radius=design.params.radius
    )
    assert got.tolist() == weights.epsilon_hat.tolist()
