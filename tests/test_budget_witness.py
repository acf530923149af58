"""The ledger's lower total from witness pairs (``ampcalc.accounting.witness``).

Oracles: the witness pair's hockey-stick divergence in closed form at 40 digits with
mpmath (one wave: P = (1 − γ)N(0, 1) + γN(1, 1) against Q = N(0, 1), whose loss is
increasing, so δ(ε) = (1 − γ)Φ̄(x*) + γΦ̄(x* − 1) − e^ε Φ̄(x*) at x* = ½ + log((e^ε − 1 +
γ)/γ)); dp_accounting's public PLD of the same pair with the pessimistic estimate (an
upper bound on the witness's own ε); the optimal composition of k ε-DP releases
(Kairouz, Oh and Viswanath 2015) at 40 digits.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ampcalc.accounting import witness
from ampcalc.analyses import budget

pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as pld

ROOT = Path(__file__).resolve().parents[1]

SRS = (
    "  - name: srs gaussian\n"
    "    design:\n"
    "      mechanism: {gaussian: {sigma: 1.0, sensitivity: 1.0}, neighbours: replace-one}\n"
    "      sampling: {scheme: srswor, population: 100000, sample: 1000}\n"
    "    count: COUNT\n"
)


def write(tmp_path: Path, entries: str, *, neighbours: str = "add-remove") -> Path:
    p = tmp_path / "ledger.yaml"
    p.write_text(
        f"target: {{epsilon: 3.0, delta: 1e-6}}\nneighbours: {neighbours}\nentries:\n{entries}"
    )
    return p


def run(path: Path, discretization: float | None = None) -> dict:
    led = budget.load_ledger(str(path))
    if discretization is not None:
        led = dataclasses.replace(led, discretization=discretization)
    return budget.run(led)["total"]


def mixture_delta(eps: mp.mpf, gamma: mp.mpf) -> mp.mpf:
    """δ(ε) of ((1 − γ)N(0, 1) + γN(1, 1) ‖ N(0, 1)), exactly."""
    x = mp.mpf("0.5") + mp.log((mp.exp(eps) - 1 + gamma) / gamma)

    def sf(t: mp.mpf) -> mp.mpf:
        return mp.ncdf(-t)

    return (1 - gamma) * sf(x) + gamma * sf(x - 1) - mp.exp(eps) * sf(x)


def mixture_epsilon(delta: float, gamma: float) -> float:
    """ε at δ of the one-wave pair, by bisection (δ(ε) falls with ε)."""
    with mp.workdps(40):
        g, d = mp.mpf(gamma), mp.mpf(delta)
        lo, hi = mp.mpf(0), mp.mpf(5)
        for _ in range(120):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mixture_delta(mid, g) > d else (lo, mid)
        return float(hi)


def test_srs_one_wave_matches_the_witness_pair_and_stays_below_bound(tmp_path: Path) -> None:
    t = run(write(tmp_path, SRS.replace("COUNT", "1"), neighbours="replace-one"))
    exact = mixture_epsilon(1e-6, 0.01)  # 0.36395...: the tight single-release value
    assert 0.36 < exact < 0.365
    # a lower bound on the pair's own ε, within one interval of loss (1e-4) of it
    assert exact - 2e-4 <= t["lower"] <= exact
    assert 0.0 < t["lower"] <= 0.3640
    assert t["lower"] <= t["upper"]
    assert "π = 0.01" in t["lower_witness"]


def test_srs_thousand_waves_near_the_issue_figure(tmp_path: Path) -> None:
    t = run(write(tmp_path, SRS.replace("COUNT", "1000"), neighbours="replace-one"))
    pess = (
        pld.from_gaussian_mechanism(
            1.0,
            sampling_prob=0.01,
            value_discretization_interval=1e-4,
            pessimistic_estimate=True,
        )
        .self_compose(1000)
        .get_epsilon_for_delta(1e-6)
    )
    assert 2.12 < pess < 2.13  # the witness's own ε lies below this
    assert 2.07 <= t["lower"] <= pess
    assert t["lower"] <= t["upper"]
    assert t["accuracy"]["optimistic"] is not None  # the accountant's estimate, kept apart


def test_coarse_interval_gives_a_true_lower_bound(tmp_path: Path) -> None:
    entry = (
        "  - design: {mechanism: {gaussian: {sigma: 1.0}}, sampling: {scheme: poisson, "
        "rate: 0.01}}\n    count: 1000\n"
    )
    t = run(write(tmp_path, entry), discretization=0.1)
    # the witness is composed at an interval of at most 1e-3 whatever the ledger's
    assert 1.5 < t["lower"] <= 2.1245
    assert t["upper"] >= 2.1245


@pytest.mark.parametrize(("eps", "k"), [(1.0, 1), (0.5, 10), (0.1, 200)])
def test_pure_releases_census_equals_the_optimal_composition(
    tmp_path: Path, eps: float, k: int
) -> None:
    # rate 1: x is always sampled; the witness is randomized response at ε, k times,
    # whose composition is the exact optimum (Kairouz, Oh and Viswanath 2015)
    entry = (
        f"  - design: {{mechanism: {{epsilon: {eps}, neighbours: both}}, sampling: "
        f"{{scheme: poisson, rate: 1.0}}}}\n    count: {k}\n"
    )
    t = run(write(tmp_path, entry))
    with mp.workdps(40):
        e0 = mp.mpf(eps)

        def kov(e: mp.mpf) -> mp.mpf:
            tot = mp.mpf(0)
            for i in range(k + 1):
                loss = (k - 2 * i) * e0
                if loss > e:
                    p = mp.binomial(k, i) * mp.exp(e0 * (k - i)) / (1 + mp.exp(e0)) ** k
                    tot += p * (1 - mp.exp(e - loss))
            return tot

        lo, hi = mp.mpf(0), mp.mpf(k * eps)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if kov(mid) > mp.mpf("1e-6") else (lo, mid)
        exact = float(hi)
    assert exact * (1 - 1e-7) <= t["lower"] <= exact
    assert t["lower"] <= t["upper"]


def test_no_witness_names_the_entry(tmp_path: Path) -> None:
    design = ROOT / "examples" / "designs" / "stratified-business-survey.yaml"
    entry = f"  - name: neyman wave\n    design: {design}\n    index: 3\n    count: 2\n"
    t = run(write(tmp_path, entry))
    assert t["lower"] is None
    assert "neyman wave" in t["lower_reason"]
    assert "neyman" in t["lower_reason"]


def test_witness_weights_per_design() -> None:
    from ampcalc.load import files  # noqa: F401  (designs load through the package)

    led = budget.load_ledger(str(ROOT / "examples" / "budget" / "year.yaml"))
    ws = [witness.entry_witness(e.design) for e in led.entries]
    assert all(isinstance(w, witness.Witness) for w in ws)
    survey, household, panel = ws
    assert household.weight == pytest.approx(2 / 20, rel=1e-14)  # 2 of 20 clusters
    assert household.weight <= 2 / 20
    assert panel.weight == pytest.approx(0.05, rel=1e-14) and panel.weight <= 0.05
    assert 0.0 < survey.weight < 0.002  # the largest m_h/N_h, rate 0.00145 rounded


# --- property: the witness lower total is never above the upper total -----------------

_MECHS = st.sampled_from(
    [
        "{epsilon: 0.5}",
        "{epsilon: 1.0, neighbours: both}",
        "{gaussian: {sigma: 2.0}}",
        "{laplace: {scale: 3.0}}",
    ]
)
_SAMPLING = st.sampled_from(
    [
        "{scheme: poisson, rate: 0.05}",
        "{scheme: poisson, rate: 0.3}",
        "{scheme: cluster, clusters: {count: 20, size: 5}, chosen: 2}",
        "{scheme: cluster, clusters: {count: 10, size: 4}, chosen: 3, "
        "within: {scheme: poisson, rate: 0.5}}",
    ]
)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(_MECHS, _SAMPLING, st.integers(1, 50)), min_size=1, max_size=3))
def test_lower_never_above_upper(tmp_path_factory: pytest.TempPathFactory, spec: list) -> None:
    entries = "".join(
        f"  - name: e{i}\n    design: {{mechanism: {m}, sampling: {s}}}\n    count: {k}\n"
        for i, (m, s, k) in enumerate(spec)
    )
    t = run(write(tmp_path_factory.mktemp("w"), entries), discretization=1e-3)
    if t["upper"] is None:
        return
    assert t["lower"] is not None
    assert 0.0 <= t["lower"] <= t["upper"] * (1 + 1e-12)


def test_witness_composition_is_fast() -> None:
    import time

    w = witness.Witness(
        weight=0.01, weight_words="q", pair=witness.Pair("gaussian", (1.0, 1.0), "g")
    )
    witness.compose([(w, 10)], 1e-6, 1e-4)  # warm the imports
    t0 = time.perf_counter()
    val = witness.compose([(w, 1000)], 1e-6, 1e-4)
    took = time.perf_counter() - t0
    assert 2.07 <= val <= 2.1245
    assert took < 1.0
    assert math.isfinite(val)


@pytest.mark.parametrize(
    ("kind", "noise", "sens", "pi", "k"),
    [
        ("gaussian", 1.0, 1.0, 0.01, 100),
        ("gaussian", 2.0, 1.0, 0.3, 20),
        ("laplace", 1.0, 1.0, 0.01, 1000),
        ("laplace", 10.0, 1.0, 0.1, 100),
        ("laplace", 2.0, 1.0, 1.0, 5),
        ("discrete-laplace", 2.0, 2, 0.05, 100),
    ],
)
def test_mixture_pairs_match_the_accountants_own_subsampled_pairs(
    kind: str, noise: float, sens: float, pi: float, k: int
) -> None:
    # the witness pair of one wave is the accountant's Poisson-subsampled pair in its
    # removal order; its own optimistic estimate (both orders) agrees, its pessimistic
    # estimate is an upper bound on the pair's ε
    par = (1.0 / noise, int(sens)) if kind == "discrete-laplace" else (noise, sens)
    w = witness.Witness(weight=pi, weight_words="", pair=witness.Pair(kind, par, ""))
    ours = witness.compose([(w, k)], 1e-6, 1e-4)

    def lib(pess: bool) -> float:
        common = {
            "pessimistic_estimate": pess,
            "value_discretization_interval": 1e-4,
            "use_connect_dots": pess,
        }
        if kind == "gaussian":
            one = pld.from_gaussian_mechanism(noise, sensitivity=sens, sampling_prob=pi, **common)
        elif kind == "laplace":
            one = pld.from_laplace_mechanism(noise, sensitivity=sens, sampling_prob=pi, **common)
        else:
            one = pld.from_discrete_laplace_mechanism(
                1.0 / noise, sensitivity=int(sens), sampling_prob=pi, **common
            )
        return float(one.self_compose(k).get_epsilon_for_delta(1e-6))

    assert ours <= lib(True)
    # ampcalc's optimistic side (below the exact curve, atoms on its grid) is at or above
    # the library's optimistic estimate for the sampled pairs (losses rounded down); 1e-3
    # below it at most (the unsampled Laplace: its two atoms off the grid)
    assert ours >= lib(False) - 1e-3
    if kind != "discrete-laplace" and pi < 1.0:
        assert ours >= lib(False) - 1e-9


def test_lower_total_without_an_upper(tmp_path: Path) -> None:
    # a Gaussian through randomised rounding has no (ε, δ) theorem: no upper total, but
    # the witness still bounds the total from below
    design = ROOT / "examples" / "designs" / "stratified-business-survey.yaml"
    text = design.read_text().replace("epsilon: 0.5 ", "gaussian: {sigma: 1.0}")
    assert "gaussian" in text
    alt = tmp_path / "survey.yaml"
    alt.write_text(text)
    (tmp_path / "data").symlink_to(design.parent / "data")
    t = run(write(tmp_path, f"  - name: wave\n    design: {alt}\n    index: 0\n    count: 4\n"))
    assert t["upper"] is None
    assert t["lower"] is not None and t["lower"] > 0.0


def test_a_witness_above_the_limits_is_refused_before_it_is_built(tmp_path: Path) -> None:
    # μ = 200: the mixture's losses span about 2·10⁴, 2·10⁸ grid points at 1e-4
    entry = (
        "  - name: sharp\n    design: {mechanism: {gaussian: {sigma: 0.005}}, sampling: "
        "{scheme: poisson, rate: 0.5}}\n    count: 1\n"
    )
    out = witness.lower_total(
        [("sharp", budget.load_ledger(str(write(tmp_path, entry))).entries[0].design, 1)],
        1e-6,
        1e-4,
    )
    assert out["lower"] is None
    assert "too large" in out["lower_reason"]


def _distinct_poisson(n: int) -> str:
    """n Poisson-sampled entries, each its own σ or scale and rate (none grouped)."""
    out = []
    for i in range(n):
        mech = (
            f"{{gaussian: {{sigma: {1.0 + 0.05 * i}}}}}"
            if i % 2 == 0
            else f"{{laplace: {{scale: {1.0 + 0.05 * i}}}}}"
        )
        out.append(
            f"  - name: e{i}\n    design: {{mechanism: {mech}, sampling: {{scheme: poisson, "
            f"rate: {0.01 + 0.0005 * i}}}}}\n    count: 1\n"
        )
    return "".join(out)


def test_distinct_entries_get_a_witness_within_the_upper_accuracy(tmp_path: Path) -> None:
    # each Poisson-sampled entry's witness is its exact remove pair, so the lower total
    # meets the upper to within the accountant's discretisation; the witnesses are
    # composed one pair at a time, each charged to the meter as it comes (no up-front
    # estimate of the whole composition refuses a ledger the upper side composes)
    t = run(write(tmp_path, _distinct_poisson(40)))
    assert t["lower"] is not None and t["upper"] is not None
    assert t["lower"] <= t["upper"]
    assert (t["upper"] - t["lower"]) / t["upper"] < 1e-3


def test_witness_compositions_are_charged_as_they_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ampcalc.model.limits import LIMITS

    led = budget.load_ledger(str(write(tmp_path, _distinct_poisson(6))))
    designs = [(e.name, e.design, e.count) for e in led.entries]
    grids = [witness.witness_pmf(witness.entry_witness(d), 1e-4).size for _, d, _ in designs]
    # room for every grid, not for composing them all
    work = dataclasses.replace(LIMITS["accountant_work"], value=sum(grids) + max(grids))
    monkeypatch.setitem(LIMITS, "accountant_work", work)
    out = witness.lower_total(designs, 1e-6, 1e-4)
    assert out["lower"] is None
    assert "the witnesses composed" in out["lower_reason"]
    assert f"limit of {work.value:,}" in out["lower_reason"]


_MECHS_R = st.sampled_from(
    [
        "{epsilon: 0.7, neighbours: replace-one}",
        "{gaussian: {sigma: 1.5}, neighbours: replace-one}",
    ]
)
_SAMPLING_R = st.sampled_from(
    [
        "{scheme: srswor, population: 1000, sample: 50}",
        "{scheme: srswor, population: 200, sample: 100}",
        "{scheme: systematic, population: 1000, interval: 10, order: random}",
    ]
)


@settings(max_examples=8, deadline=None)
@given(st.lists(st.tuples(_MECHS_R, _SAMPLING_R, st.integers(1, 50)), min_size=1, max_size=2))
def test_lower_never_above_upper_replace_one(
    tmp_path_factory: pytest.TempPathFactory, spec: list
) -> None:
    entries = "".join(
        f"  - name: e{i}\n    design: {{mechanism: {m}, sampling: {s}}}\n    count: {k}\n"
        for i, (m, s, k) in enumerate(spec)
    )
    path = write(tmp_path_factory.mktemp("r"), entries, neighbours="replace-one")
    t = run(path, discretization=1e-3)
    if t["upper"] is None:
        return
    assert t["lower"] is not None
    assert 0.0 <= t["lower"] <= t["upper"] * (1 + 1e-12)


def test_poisson_witness_is_the_rate_itself(tmp_path: Path) -> None:
    # the rate is the float the sampler draws with, and the upper total takes it as
    # exact: the witness's π is that float, not a few ulps below it
    led = budget.load_ledger(str(write(tmp_path, _distinct_poisson(3))))
    for e, q in zip(led.entries, (0.01, 0.0105, 0.011), strict=True):
        w = witness.entry_witness(e.design)
        assert isinstance(w, witness.Witness)
        assert w.weight == q


def test_ledger_witness_reads_the_accountants_remove_directions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each Poisson-sampled entry's witness is the optimistic REMOVE direction the
    # accountant's accuracy side builds: built once per entry, and the lower total is the
    # one the witness composes on its own (same code, so the same float)
    from ampcalc.accounting import fastpld

    n = 6
    led = budget.load_ledger(str(write(tmp_path, _distinct_poisson(n))))
    fresh = witness.lower_total(
        [(e.name, e.design, e.count) for e in led.entries], led.delta, led.discretization
    )["lower"]
    built: list[tuple[bool, bool]] = []
    real = fastpld._built_direction

    def counted(*a: object, **k: bool) -> object:
        built.append((k["remove"], k["pessimistic"]))
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(fastpld, "_built_direction", counted)
    total = budget.run(led)["total"]
    assert built.count((True, False)) == n  # not 2n: the witness built none of its own
    assert total["lower"] == fresh
    assert total["lower"] <= total["upper"]
