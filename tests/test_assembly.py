"""The assembly layer: one relation handling for every family, and reuse across families.

A one-stratum stratified design is the unstratified scheme, so every number must
match (bounds, δ′, both inverses, verdict); details are computed at the evaluated ε;
the relation conversion and its notes are stated once.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import ampcalc
from ampcalc import engine
from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import ConditionError
from ampcalc.schemes import assembly, poisson, pps, pps_cluster, srswor

pytestmark = pytest.mark.float_kernels  # .ci/run runs these again on narrowed numpy

MECHANISMS = [
    {"epsilon": 1.0, "neighbours": "both"},
    {"epsilon": 1.0, "neighbours": "add-remove"},
    {"epsilon": 0.7, "neighbours": "add-remove", "epsilon_replace_one": 1.1},
    {"epsilon": 2.0, "neighbours": "add-remove", "epsilon_replace_one": 0.5},
    {"epsilon": 1.0, "neighbours": "both", "delta": 1e-5},
    {"epsilon": 1.0, "neighbours": "add-remove", "delta": 1e-6},
]


def _design(mechanism: dict, sampling: dict, guarantee: str | None) -> ampcalc.Design:
    doc = {"mechanism": mechanism, "sampling": sampling}
    if guarantee:
        doc["guarantee"] = guarantee
    return ampcalc.load_design(doc)


def _same(a: ampcalc.Design, b: ampcalc.Design, target: float = 0.3) -> None:
    ra, rb = engine.bound(a), engine.bound(b)
    assert ra.error is None and rb.error is None, (ra.error, rb.error)
    assert (ra.lower, ra.upper, ra.delta_prime) == (rb.lower, rb.upper, rb.delta_prime)
    assert ra.verdict == rb.verdict
    ia, ib = engine.invert(a, target), engine.invert(b, target)
    assert ia.certified == pytest.approx(ib.certified, rel=1e-12, abs=0)
    assert ia.impossible_above == pytest.approx(ib.impossible_above, rel=1e-12, abs=0)
    # never less safe: the stratified certificate is itself certified
    assert float(engine.bound(a, epsilon=ia.certified).upper) <= target


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=lambda m: str(m))
@pytest.mark.parametrize("guarantee", ["add-remove", "replace-one"])
def test_one_stratum_poisson_equals_the_poisson_scheme(mechanism, guarantee) -> None:
    strat = _design(
        mechanism,
        {"scheme": "stratified", "allocation": "poisson", "rate": 0.3, "strata": [{"size": 50}]},
        guarantee,
    )
    plain = _design(mechanism, {"scheme": "poisson", "rate": 0.3}, guarantee)
    _same(strat, plain)


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=lambda m: str(m))
def test_one_stratum_fixed_equals_srswor(mechanism) -> None:
    strat = _design(
        mechanism,
        {"scheme": "stratified", "allocation": "fixed", "strata": [{"size": 200, "sample": 30}]},
        "replace-one",
    )
    plain = _design(mechanism, {"scheme": "srswor", "population": 200, "sample": 30}, None)
    _same(strat, plain)


def test_the_issue_case_one_stratum_poisson_replace_one_is_a_of_q_eps() -> None:
    """Rate 0.5, ε = 1, `both`, replace-one guarantee: A(0.5, 1) = log((1 + e)/2), tight
    (it used to be 2·A = 1.2402 through a second copy of the formula)."""
    exact = math.log1p(0.5 * math.expm1(1.0))
    for sampling in (
        {"scheme": "poisson", "rate": 0.5},
        {"scheme": "stratified", "allocation": "poisson", "rate": 0.5, "strata": [{"size": 100}]},
    ):
        r = engine.bound(_design({"epsilon": 1.0, "neighbours": "both"}, sampling, "replace-one"))
        assert r.lower <= exact <= r.upper <= exact * (1 + 1e-14)


def test_different_rates_drop_the_coupling_bound_exact_lp() -> None:
    """Rates 0.9 and 0.1, ε_D = 1, ε_R = 0.2: moving a record across strata is worth
    0.8190951349 exactly (``ampcalc verify --pairs all``), far above the coupling's ε_R
    = 0.2, which only holds when both records share one inclusion probability."""
    mech = {"epsilon": 1.0, "neighbours": "add-remove", "epsilon_replace_one": 0.2}
    strata = [{"size": 2, "rate": 0.9}, {"size": 1, "rate": 0.1}]
    d = _design(
        mech, {"scheme": "stratified", "allocation": "poisson", "strata": strata}, "replace-one"
    )
    r = engine.bound(d)
    assert r.upper >= 0.8190951349
    assert r.upper == pytest.approx(math.log1p(0.9 * math.expm1(1.0)), rel=1e-15)
    row = ampcalc.verify(d, pairs="all")[0]
    assert row["status"] == "PASS"
    assert row["epsilon_prime_exact"] == pytest.approx(0.8190951349, rel=1e-8)
    equal = [{"size": 2, "rate": 0.5}, {"size": 1, "rate": 0.5}]
    d2 = _design(
        mech, {"scheme": "stratified", "allocation": "poisson", "strata": equal}, "replace-one"
    )
    # one inclusion probability: the coins couple, and the exact replace-one value
    # log((1 + q(e^ε − 1))/(1 + q(e^{ε − ε_R} − 1))) holds (below the coupling's ε_R)
    exact = math.log1p(0.5 * math.expm1(1.0)) - math.log1p(0.5 * math.expm1(0.8))
    r2 = engine.bound(d2)
    assert r2.lower <= exact <= r2.upper
    assert r2.upper == pytest.approx(exact, rel=1e-13) and r2.upper < 0.2


@pytest.mark.parametrize(
    "sampling",
    [
        {
            "scheme": "stratified",
            "allocation": "poisson",
            "strata": [{"size": 40, "rate": 0.2}, {"size": 60, "rate": 0.05}],
        },
        {
            "scheme": "stratified",
            "allocation": "fixed",
            "strata": [{"size": 40, "sample": 8}, {"size": 60, "sample": 3}],
        },
        {
            "scheme": "stratified",
            "allocation": "proportional",
            "rounding": "randomized",
            "rate": 0.05,
            "strata": [{"size": 400}, {"size": 600}],
        },
    ],
    ids=["poisson", "fixed", "randomized"],
)
def test_details_describe_the_evaluated_epsilon(sampling) -> None:
    guarantee = "replace-one" if sampling["allocation"] == "fixed" else None
    d = _design({"epsilon": 1.0, "neighbours": "both"}, sampling, guarantee)
    grid = engine.bound(d, epsilon=np.array([1.0, 3.0]))
    for k, eps in enumerate((1.0, 3.0)):
        one = engine.bound(d, epsilon=eps)
        for row_a, row_1 in zip(grid.details["strata"], one.details["strata"], strict=True):
            assert row_a["epsilon_prime"]["upper"][k] == row_1["epsilon_prime"]["upper"]
            assert row_a["epsilon_prime"]["lower"][k] == row_1["epsilon_prime"]["lower"]
    assert grid.details["strata"][0]["epsilon_prime"]["upper"][1] > 0.5


def test_replace_one_only_mechanism_is_refused_by_an_add_remove_theorem() -> None:
    mech = Mechanism(epsilon=1.0, neighbours=Neighbours.REPLACE_ONE)
    with pytest.raises(ConditionError, match="add-remove ε"):
        assembly.assemble(poisson.theorem(0.1), mech)


def test_the_replace_one_note_is_stated_once() -> None:
    mech = Mechanism(epsilon=1.0, neighbours=Neighbours.ADD_REMOVE)
    a = srswor.analyse(srswor.Params(population=100, sample=10), mech, Neighbours.REPLACE_ONE)
    assert sum("ε_R = 2ε" in n for n in a.notes) == 1
    # ε reaches the formula only as the argument: the analysis at ε = 1 evaluated at 2
    assert float(a.upper(np.asarray(2.0))) == float(
        srswor.upper_epsilon(np.asarray(4.0), population=100, sample=10)
    )


def _details_follow_epsilon(design: ampcalc.Design, keys: tuple[str, ...]) -> dict:
    """Each ε-dependent entry of an evaluation on a grid equals the single-ε one."""
    grid = engine.bound(design, epsilon=np.array([1.0, 3.0]))
    assert grid.error is None, grid.error
    assert "details_epsilon" not in grid.details
    for k, eps in enumerate((1.0, 3.0)):
        one = engine.bound(design, epsilon=eps)
        for key in keys:
            a, b = grid.details[key], one.details[key]
            if isinstance(b, dict):
                for sub in b:
                    assert np.asarray(a[sub])[k] == b[sub], (key, sub, eps)
            else:
                assert np.asarray(a)[k] == b, (key, eps)
    return dict(grid.details)


def test_srswr_details_describe_the_evaluated_epsilon() -> None:
    d = _design(
        {"epsilon": 1.0, "neighbours": "both"},
        {"scheme": "srswr", "population": 100, "sample": 30},
        None,
    )
    details = _details_follow_epsilon(d, ("without_replacement_same_rate",))
    # the srswor bound at the same rate, at ε = 3: log(1 + 0.3(e^3 − 1))
    exact = math.log1p(0.3 * math.expm1(3.0))
    assert details["without_replacement_same_rate"][1] == pytest.approx(exact, rel=1e-15)
    assert details["without_replacement_same_rate"][1] >= exact


def test_systematic_details_describe_the_evaluated_epsilon() -> None:
    d = _design(
        {"epsilon": 1.0, "neighbours": "both"},
        {"scheme": "systematic", "population": 1003, "interval": 10, "order": "fixed"},
        None,
    )
    details = _details_follow_epsilon(d, ("witness_class_size", "heuristic_cluster_analogy"))
    # B(1/k, 2m, ε) with k = 10, m = 100, at ε = 3 (Bun et al., Theorem 5.1)
    mp = pytest.importorskip("mpmath")
    with mp.workdps(40):  # local: other tests' oracles set their own precision
        a, kk, e = mp.mpf(1) / 10, 200, mp.mpf(3)
        t = (1 - a) * mp.exp(-kk * e)
        exact = float(mp.log((a * mp.exp(e) + t) / (a + t)))
    assert details["heuristic_cluster_analogy"][1] == pytest.approx(exact, rel=1e-14)
    assert details["heuristic_cluster_analogy"][0] < details["heuristic_cluster_analogy"][1]


def test_random_size_details_describe_the_evaluated_epsilon() -> None:
    d = _design(
        {"epsilon": 0.01, "neighbours": "add-remove"},
        {
            "scheme": "random-size",
            "population": 1000,
            "size": {
                "distribution": "pmf",
                "values": [80, 100, 120],
                "probabilities": [0.25, 0.5, 0.25],
            },
        },
        None,
    )
    grid = engine.bound(d, epsilon=np.array([0.01, 0.03]))
    mp = pytest.importorskip("mpmath")
    for k, eps in enumerate((0.01, 0.03)):
        one = engine.bound(d, epsilon=eps)
        for key in ("tilted_mean_size", "epsilon_replace_one"):
            assert grid.details[key][k] == one.details[key]
        # E_t̃[m], t̃(m) ∝ e^{εm} t(m) (Bun et al., Theorem 3.1), tilt at ε_D = ε
        with mp.workdps(40):  # local: other tests' oracles set their own precision
            w = [
                mp.mpf(p) * mp.exp(mp.mpf(eps) * m)
                for m, p in ((80, 0.25), (100, 0.5), (120, 0.25))
            ]
            exact = float((80 * w[0] + 100 * w[1] + 120 * w[2]) / sum(w))
        assert grid.details["tilted_mean_size"][k] == pytest.approx(exact, rel=1e-13)
        assert grid.details["epsilon_replace_one"][k] == 2 * eps


def test_pps_threshold_is_assembled_under_add_remove() -> None:
    """Poisson threshold PPS is A(min(1, τR), ε) under add-remove (Personalized Privacy
    Amplification via Importance Sampling, Theorem 6): τR = 0.1, so log(1 + 0.1(e^ε − 1)) at every
    evaluated ε, δ′ = 0.1·δ, and
    the certified inverse meets the target."""
    sampling = {
        "scheme": "pps",
        "method": "poisson-threshold",
        "threshold": 0.001,
        "max_size_measure": 100,
        "size_measures": [5, 20, 100, 80, 3],
    }
    d = _design({"epsilon": 1.0, "neighbours": "both", "delta": 1e-6}, sampling, None)
    r = engine.bound(d, epsilon=np.array([1.0, 3.0]))
    for k, eps in enumerate((1.0, 3.0)):
        exact = math.log1p(0.1 * math.expm1(eps))
        assert r.lower[k] <= exact <= r.upper[k] <= exact * (1 + 1e-14)
        assert r.delta_prime[k] == pytest.approx(1e-7, rel=1e-14)
    inv = engine.invert(d, 0.5)
    assert inv.certified == pytest.approx(math.log1p(math.expm1(0.5) / 0.1), rel=1e-14)
    assert float(engine.bound(d, epsilon=inv.certified).upper) <= 0.5
    only_r = Mechanism(epsilon=1.0, neighbours=Neighbours.REPLACE_ONE)
    with pytest.raises(ConditionError, match="Theorem 6"):
        pps.analyse(d.params, only_r, Neighbours.ADD_REMOVE)


def test_pps_cluster_details_describe_the_evaluated_epsilon() -> None:
    sizes = [400, 250, 200, 100, 50]
    d = _design(
        {"epsilon": 1.0, "neighbours": "both"},
        {"scheme": "pps-cluster", "clusters": {"sizes": sizes}},
        None,
    )
    details = _details_follow_epsilon(d, ("laplace_witness_add_remove",))
    at3 = pps_cluster.laplace_witness(np.array(sizes), 3.0)
    assert details["laplace_witness_add_remove"][1] == at3
    assert at3 > details["laplace_witness_add_remove"][0]


def test_cluster_details_describe_the_evaluated_epsilon() -> None:
    d = _design(
        {"epsilon": 1.0, "neighbours": "both"},
        {"scheme": "cluster", "clusters": {"sizes": [5] * 20}, "chosen": 2},
        None,
    )
    details = _details_follow_epsilon(d, ("srs_same_fraction",))
    # a simple random sample of the same fraction 2/20 at ε = 3: log(1 + 0.1(e^3 − 1))
    exact = math.log1p(0.1 * math.expm1(3.0))
    assert exact <= details["srs_same_fraction"][1] <= exact * (1 + 1e-14)


def test_data_dependent_size_details_describe_the_evaluated_epsilon() -> None:
    d = _design(
        {"epsilon": 1.0, "neighbours": "add-remove"},
        {"scheme": "data-dependent-size", "population": 14, "sample": 1, "sensitivity": 1},
        None,
    )
    grid = engine.bound(d, epsilon=np.array([0.05, 1.0, 3.0]))
    texts = grid.details["lower_witness"]
    assert len(texts) == 3
    for k, eps in enumerate((0.05, 1.0, 3.0)):
        assert texts[k] == engine.bound(d, epsilon=eps).details["lower_witness"]


@pytest.mark.parametrize(
    "sampling",
    [
        {"scheme": "srswor", "population": 1000, "sample": 10},
        {"scheme": "poisson", "rate": 1e-9},
        {
            "scheme": "pps",
            "method": "poisson-threshold",
            "threshold": 0.001,
            "max_size_measure": 100,
            "size_measures": [5, 20, 100, 80, 3],
        },
    ],
)
def test_bounds_in_one_evaluation_are_the_lower_and_upper_bits(sampling) -> None:
    """A tight result evaluates its formula once for both bounds (``Analysis.bounds``):
    the same bits as ``lower`` and ``upper`` apart, in the log-space branch too."""
    eps = np.concatenate([[0.0, 5e-324, 1e-300, 1e-12], np.geomspace(1e-6, 5e3, 2001)])
    for mechanism in ({"epsilon": 1.0, "neighbours": "both"}, MECHANISMS[2]):
        d = _design(mechanism, sampling, None)
        analysis = engine.analyse(d)
        assert analysis.bounds is not None
        lower, upper = analysis.bounds.both(eps)
        assert np.array_equal(lower.view(np.int64), analysis.lower(eps).view(np.int64))
        assert np.array_equal(upper.view(np.int64), analysis.upper(eps).view(np.int64))
        r = engine.bound(d, epsilon=eps[1:])  # ε = 0 is refused at load time
        assert np.all(r.lower <= r.upper)


def test_a_copy_that_changes_a_bound_does_not_read_the_joint_bounds() -> None:
    """``Analysis.bounds`` stands for the two functions it was made with: a copy with
    another lower bound evaluates that one (and the upper bound alone), never the stale
    pair."""
    d = _design(MECHANISMS[0], {"scheme": "srswor", "population": 1000, "sample": 10}, None)
    analysis = engine.analyse(d)
    assert analysis.bounds is not None
    eps = np.array([0.5, 1.0, 3.0])
    copy = dataclasses.replace(analysis, lower=lambda e: np.zeros(np.shape(e)))
    lower, upper = copy.bounds_at(eps)
    assert lower is not None and np.all(lower == 0.0)
    assert np.array_equal(upper, analysis.upper(eps))
    assert np.all(analysis.bounds_at(eps)[0] > 0.0)
    assert copy.bounds is None  # derived from the two bounds: nothing left to reset
    doubled_upper = dataclasses.replace(analysis, upper=lambda e: 2.0 * analysis.upper(e))
    assert doubled_upper.bounds is None
    assert np.array_equal(doubled_upper.bounds_at(eps)[1], 2.0 * analysis.upper(eps))
    assert "bounds" not in {f.name for f in dataclasses.fields(analysis)}


def test_a_theorem_states_its_formulas_once_and_the_assembly_binds_its_parameters() -> None:
    """srswor's Theorem 2.2 states its formula once, the closed form A(m/N, ε_R)
    (``numeric.Amplification``): its upper and lower bounds and inverse are the form's,
    the module-level formulas at the design's parameters."""
    thm = srswor.theorem(srswor.Params(population=1000, sample=10))
    assert thm.closed_form == numeric.Amplification(0.01) and thm.params == {}
    assert thm.upper == thm.closed_form.upper and thm.formulas_are_closed_form()
    bound = thm.bind()
    assert bound.params == {}
    eps = np.array([0.1, 1.0, 5.0])
    exact = np.log1p(0.01 * np.expm1(eps))
    up, lo = bound.upper(eps), bound.lower(eps)
    assert np.array_equal(up, srswor.upper_epsilon(eps, population=1000, sample=10))
    assert np.array_equal(lo, srswor.lower_epsilon(eps, population=1000, sample=10))
    assert np.all(lo <= up) and np.allclose(up, exact, rtol=1e-14, atol=0)
    t = np.asarray(0.02)
    assert float(bound.inverse(t)) == pytest.approx(math.log1p(math.expm1(0.02) / 0.01), rel=1e-14)


def test_a_doubled_closed_form_keeps_no_lower_bound_and_no_scalar_form() -> None:
    """``doubled`` drops the lower parts: a closed-form theorem must not refill them
    from its form, and the doubled bound (2·A rounded up) is not the form's."""
    thm = assembly.doubled(poisson.theorem(0.1))
    assert thm.closed_form is None and thm.lower is None and thm.bounds is None
    mech = Mechanism(epsilon=1.0, neighbours=Neighbours.BOTH)
    a = assembly.assemble(thm, mech)
    assert a.lower is None and a.scalar is None
    eps = np.asarray(1.0)
    assert float(a.upper(eps)) >= 2 * float(poisson.upper_epsilon(eps, rate=0.1))
