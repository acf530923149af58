"""verify's verdicts rest on certificates, not on the solver's objective.

A poisson-threshold PPS design with tiny inclusion probabilities (a_i = 0.001·r_i) has
p′ down to 3·10⁻¹² and e^ε rows: HiGHS once returned points that broke Σ p′ y = 1 by a
percent, and verify said FAIL (exit 3) for a bound that is exact. The bound there is
A(0.1, ε) = log(1 + 0.1(e^ε − 1)) (Poisson amplification of x, a_x = 0.1, is tight:
exact-lp-checks.md, Conjecture 3), computed here in 50-digit mpmath.
"""

from __future__ import annotations

import json
import re

import mpmath
import pytest
from conftest import run_main

import ampcalc
from ampcalc import schemes
from ampcalc.schemes import exact as V

PPS = (
    "mechanism: {{epsilon: {eps}, neighbours: add-remove}}\n"
    "sampling: {{scheme: pps, method: poisson-threshold, threshold: 0.001, "
    "max_size_measure: 100, size_measures: [5, 20, 100, 1, 3]}}\n"
)

#: a paper file name of the project's paper set (``Bun et al.``)
PAPER_FILE = re.compile(r"\d{3}_[0-9a-f]{16}\.txt")


def a_q(q: float, eps: float) -> float:
    """A(q, ε) = log(1 + q(e^ε − 1)) in 50 digits."""
    with mpmath.workdps(50):
        return float(mpmath.log1p(mpmath.mpf(q) * mpmath.expm1(mpmath.mpf(eps))))


def _pps(tmp_path, eps: float):
    f = tmp_path / "pps.yaml"
    f.write_text(PPS.format(eps=eps))
    return f


@pytest.mark.parametrize("eps", [1.8, 5.0, 10.0])
def test_pps_threshold_exact_bound_passes(capsys, tmp_path, eps: float) -> None:
    run = run_main(capsys, "verify", str(_pps(tmp_path, eps)), "--json", expect=0)
    row = json.loads(run.stdout)["results"][0]
    assert row["status"] == "PASS", row
    assert row["epsilon_prime_exact"] == pytest.approx(a_q(0.1, eps), abs=2e-7)
    assert row["epsilon_prime"]["upper"] == pytest.approx(a_q(0.1, eps), abs=1e-12)


@pytest.mark.parametrize("eps", [1.8, 5.0, 10.0, 15.0])
def test_certificates_bracket_the_closed_form(eps: float) -> None:
    # soundness of the certificates themselves: a mechanism attains low, the multipliers
    # prove high, so low <= A(0.1, ε) <= high, whatever the solver's objective said
    d = ampcalc.load_designs(
        {
            "mechanism": {"epsilon": eps, "neighbours": "add-remove"},
            "sampling": {
                "scheme": "pps",
                "method": "poisson-threshold",
                "threshold": 0.001,
                "max_size_measure": 100,
                "size_measures": [5, 20, 100, 1, 3],
            },
        }
    )[0]
    plan = schemes.get("pps").verify_plan(d.params, V.pure_part(d.mechanism), "default")
    out = V.run(plan)
    exact = a_q(0.1, eps)
    assert out.status is None, out.reason
    assert out.epsilon_low is not None
    assert exact - 1e-8 <= out.epsilon_low <= exact + 1e-12
    if out.epsilon_high is not None:
        assert out.epsilon_high >= exact - 1e-12


def test_overstated_optimum_without_certificate_is_inconclusive() -> None:
    # the E = 1.8 numbers: the solver's 0.4087698225 against an exact upper 0.4087694736
    upper = a_q(0.1, 1.8)
    status, _, why = V.judge(0.4087698225, upper, upper, low=0.4087694736, high=0.4087698331)
    assert status == "INCONCLUSIVE" and "solver artefact" in why
    status, _, why = V.judge(0.4087698225, upper, upper, low=None, high=None)
    assert status == "INCONCLUSIVE"
    # a certified mechanism above the bound is a FAIL; so is a certified optimum below
    # a lower bound; an uncertified one below it is not
    assert V.judge(0.5, 0.4, 0.45, low=0.49, high=0.51)[0] == "FAIL"
    assert V.judge(0.5, 0.6, 0.7, low=0.49, high=0.51)[0] == "FAIL"
    assert V.judge(0.5, 0.6, 0.7, low=0.49, high=None)[0] == "INCONCLUSIVE"
    assert V.judge(0.5, 0.6, 0.7, low=0.49, high=0.65)[0] == "INCONCLUSIVE"


def test_delta_verdicts_need_certificates() -> None:
    out = V.ApproxOutcome(
        delta_at_upper=4.2e-4,
        delta_pair="p",
        epsilon_at_delta=0.5,
        epsilon_pair="p",
        delta_prime=4e-4,
        samples=10,
        status=None,
        pure_epsilon=0.5,
        certified=True,
    )
    # the solver's divergence is above δ′, but no mechanism made exactly (ε, δ)-DP is
    assert V.judge_approx(out, 0.4, 0.5, 4e-4)[0] == "INCONCLUSIVE"
    low = V.ApproxOutcome(**{**out.__dict__, "delta_low": 4.1e-4})
    assert V.judge_approx(low, 0.4, 0.5, 4e-4)[0] == "FAIL"
    # the pure optimum below a lower bound needs the multipliers' proof
    assert V.judge_approx(out, 0.6, 0.7, 5e-4)[0] == "INCONCLUSIVE"
    high = V.ApproxOutcome(**{**out.__dict__, "pure_high": 0.55})
    assert V.judge_approx(high, 0.6, 0.7, 5e-4)[0] == "FAIL"


def _scaled_bounds(monkeypatch, lower: float, upper: float) -> None:
    from ampcalc import engine

    real = engine.bound

    class Scaled:
        def __init__(self, res):
            self.res = res

        def to_dict(self):
            d = self.res.to_dict()
            e = dict(d["epsilon_prime"])
            e["lower"], e["upper"] = lower * e["lower"], upper * e["upper"]
            return {**d, "epsilon_prime": e}

    monkeypatch.setattr(engine, "bound", lambda d, epsilon=None: Scaled(real(d, epsilon=epsilon)))


@pytest.mark.parametrize("eps", [1.8, 5.0])
@pytest.mark.parametrize(
    ("lower", "upper", "words"),
    [(1.0, 0.999, "above the upper bound"), (1.01, 1.0, "below the lower bound")],
)
def test_genuinely_wrong_bound_still_fails_exit_3(
    capsys, monkeypatch, tmp_path, eps, lower, upper, words
) -> None:
    # the same ill-conditioned programme: a bound off by 0.1 % (upper) or 1 % (lower) is
    # proved wrong by the certificates, and is a FAIL
    _scaled_bounds(monkeypatch, lower, upper)
    run = run_main(capsys, "verify", str(_pps(tmp_path, eps)), expect=3)
    assert "FAIL" in run.stdout and words in run.stderr


@pytest.mark.parametrize("eps", ["700", "1e6"])
def test_epsilon_beyond_the_programme_is_refused_exit_2(capsys, eps: str) -> None:
    run = run_main(
        capsys,
        "verify",
        "examples/designs/group-verify-tiny.yaml",
        "--set",
        f"mechanism.epsilon={eps}",
        expect=2,
    )
    assert "internal error" not in run.stderr
    assert "too large an ε to verify" in run.stderr and "up to 34" in run.stderr
    assert "Traceback" not in run.stderr


def test_epsilon_limit_is_documented() -> None:
    from pathlib import Path

    from ampcalc.model.limits import LIMITS

    cap = LIMITS["verify_epsilon"].value
    assert f"| ε in `verify` | {cap} |" in Path("docs/limits.md").read_text(encoding="utf-8")
    assert f"M's ε up to {cap}" in Path("docs/verify.md").read_text(encoding="utf-8")


def test_no_paper_file_names_in_verify_output(capsys, tmp_path) -> None:
    # reasons of refused and judged rows cite papers by authors, never by file name
    f = tmp_path / "many.yaml"
    f.write_text(
        "designs:\n"
        "  - mechanism: {epsilon: 1, delta: 0.001, neighbours: add-remove}\n"
        "    sampling: {scheme: data-dependent-size, population: 4, sample: 2,"
        " sensitivity: 1}\n"
        "  - mechanism: {epsilon: 1, delta: 0.001, neighbours: add-remove}\n"
        "    sampling: {scheme: random-size, population: 4,"
        " size: {distribution: uniform, low: 0, high: 4}}\n"
        "  - mechanism: {epsilon: 1, neighbours: add-remove}\n"
        "    guarantee: replace-one\n"
        "    sampling: {scheme: pps, size_measures: [5, 1, 5], sample: 1}\n"
        "  - mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "    sampling: {scheme: pps, method: poisson-threshold, threshold: 0.1,"
        " size_measures: [5, 1, 3]}\n"
    )
    run = run_main(capsys, "verify", str(f), "--json", expect=2)  # rows outside conditions
    rows = json.loads(run.stdout)["results"]
    assert len(rows) == 4
    assert not PAPER_FILE.search(run.stdout + run.stderr), run.stdout + run.stderr


def test_no_paper_file_names_in_verify_pages() -> None:
    from pathlib import Path

    for page in ("docs/verify.md", "benchmarks/README.md", "benchmarks/tightness.json"):
        text = Path(page).read_text(encoding="utf-8")
        assert not PAPER_FILE.search(text), (page, PAPER_FILE.search(text))
