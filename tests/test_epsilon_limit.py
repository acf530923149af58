"""One limit for every ε a design derives (``model.design.check_epsilon_limit``)."""

from __future__ import annotations

import math

import pytest

from ampcalc import api
from ampcalc.model.design import MAX_EPSILON, check_epsilon_limit
from ampcalc.model.errors import DesignError, Where

LIMIT = (
    "an ε (mechanism ε, a release's ε, their sum, a target ε′): {} is above the limit of "
    "1,000,000; an ε this large gives no privacy; the bounds are meaningless above it"
)


def test_the_limit_itself() -> None:
    check_epsilon_limit(MAX_EPSILON)  # 10⁶ is allowed
    for bad in (math.nextafter(MAX_EPSILON, math.inf), math.inf, math.nan):
        with pytest.raises(DesignError):
            check_epsilon_limit(bad)
    check_epsilon_limit(MAX_EPSILON * (1 + 1e-13), slack=1e-12)  # rounded up a few ulps
    with pytest.raises(DesignError) as err:
        check_epsilon_limit(2e6, where=Where(file="f.yaml", line=3, column=5), what="a sum")
    assert str(err.value) == "f.yaml:3:5: a sum: " + LIMIT.format("2e+06")


@pytest.mark.parametrize(
    ("mechanism", "message"),
    [
        ("{releases: [600000, 600000]}", "<string>:1:13: mechanism.releases: " + LIMIT),
        (
            "{laplace: {scale: 1.0e-7, sensitivity: 1}}",
            "<string>:1:23: mechanism.laplace.scale: the laplace mechanism's ε₀ = "
            "sensitivity/scale = 1/1e-07: " + LIMIT.replace("{}", "1e+07"),
        ),
        (
            "{releases: [{randomized-response: {epsilon: 600000}, count: 2}]}",
            "<string>:1:13: mechanism.releases: the releases' composed ε (Σ count·ε₀ of pure "
            "releases): " + LIMIT,
        ),
    ],
    ids=["sum-of-releases", "laplace-implied", "composed-pure"],
)
def test_loaders_share_the_message(mechanism: str, message: str) -> None:
    doc = f"mechanism: {mechanism}\nsampling: {{scheme: poisson, rate: 0.01}}\n"
    with pytest.raises(DesignError) as err:
        api.load_designs(doc)
    assert str(err.value) == message.format("1.2e+06")
