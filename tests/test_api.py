"""The Python API gives the CLI's numbers and the CLI's error messages.

Every command is run in-process with ``--json`` (or its CSV) and through ``ampcalc``'s
functions; the numbers must agree exactly (both sides run the same library code, so
any difference is a wiring bug, not rounding). API examples in ``docs/api.md`` and the
package docstrings are doctested here too.
"""

from __future__ import annotations

import csv
import doctest
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, ROOT, run_main

import ampcalc
from ampcalc import kernels
from ampcalc.model.results import plain

SRSWOR = EXAMPLES / "srswor.yaml"
COMPARE = EXAMPLES / "compare.yaml"
LAPLACE = EXAMPLES / "importance-laplace.yaml"
CONSTANT = EXAMPLES / "importance-uniform-constant.yaml"
PWS = EXAMPLES / "pws.yaml"
TINY = EXAMPLES / "group-verify-tiny.yaml"
PLAN_MEAN = ROOT / "examples" / "plans" / "mean.yaml"
TYPO = ROOT / "examples" / "bad" / "typo.yaml"
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def cli_json(capsys: pytest.CaptureFixture[str], *args: str, expect: int = 0) -> dict:
    doc = run_main(capsys, *args, "--json", expect=expect).json()
    doc.pop("ampcalc_version")
    doc.pop("command")
    return doc


def same(a: object) -> object:
    """A value as the JSON writer gives it (tuples -> lists, NaN refused)."""
    return json.loads(json.dumps(plain(a), allow_nan=False))


# --------------------------------------------------------------------------------------
# doctests
# --------------------------------------------------------------------------------------


def test_docs_api_md_doctests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(
        str(ROOT / "docs" / "api.md"), module_relative=False, optionflags=FLAGS
    )
    assert result.attempted >= 20
    assert result.failed == 0


@pytest.mark.parametrize("module", ["ampcalc", "ampcalc.api", "ampcalc.designs"])
def test_module_doctests(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    monkeypatch.chdir(ROOT)
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=FLAGS)
    assert result.failed == 0


# --------------------------------------------------------------------------------------
# loading: path, Path, text, dict
# --------------------------------------------------------------------------------------


def test_load_design_accepts_path_text_and_dict() -> None:
    text = SRSWOR.read_text()
    by_str = ampcalc.load_design(str(SRSWOR))
    by_path = ampcalc.load_design(SRSWOR)
    by_text = ampcalc.load_design(text)
    import yaml

    by_dict = ampcalc.load_design(yaml.safe_load(text))
    for d in (by_path, by_text, by_dict):
        assert d.params == by_str.params and d.mechanism == by_str.mechanism
    one_line = ampcalc.load_design(
        "{mechanism: {epsilon: 1}, sampling: {scheme: poisson, rate: 0.01}}"
    )
    assert one_line.params.rate == 0.01


def test_api_verbs_are_plain_functions_whatever_the_import_order() -> None:
    """``ampcalc.sweep``/``validate``/``verify`` are the API functions: no submodule
    of the top-level package shares a verb's name, so no import order can shadow one."""
    import subprocess

    code = (
        "import ampcalc.analyses.sweep, ampcalc.analyses.verify, ampcalc; "
        "from ampcalc import sweep; "
        f"r = ampcalc.sweep({str(SRSWOR)!r}, vary={{'epsilon': [1.0, 2.0]}}); "
        f"v = ampcalc.validate({str(SRSWOR)!r}); "
        "print(len(r), v[0]['valid'], sweep is ampcalc.api.sweep, "
        "ampcalc.verify is ampcalc.api.verify)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["2", "True", "True", "True"], out.stderr


def test_load_design_refuses_several() -> None:
    with pytest.raises(ampcalc.DesignError, match="expected one design, found 4"):
        ampcalc.load_design(COMPARE)


def test_import_is_lean() -> None:
    import subprocess

    code = (
        "import sys, ampcalc; "
        "print(sorted(m for m in ('scipy', 'pandas', 'typer', 'yaml', 'rich') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


# --------------------------------------------------------------------------------------
# bound / invert
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [SRSWOR, COMPARE, LAPLACE, PWS], ids=lambda p: p.stem)
def test_bound_same_as_cli(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    cli = cli_json(capsys, "bound", str(path))["results"]
    api = [ampcalc.bound(d).to_dict() for d in ampcalc.load_designs(path)]
    assert same(api) == cli


def test_bound_epsilon_override_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_json(capsys, "bound", str(SRSWOR), "--epsilon", "2.5")["results"][0]
    assert same(ampcalc.bound(SRSWOR, epsilon=2.5).to_dict()) == cli


def test_bound_result_fields_are_attributes() -> None:
    res = ampcalc.bound(SRSWOR)
    d = res.to_dict()
    assert (res.epsilon_prime.lower, res.epsilon_prime.upper) == (
        d["epsilon_prime"]["lower"],
        d["epsilon_prime"]["upper"],
    )
    for key in ("name", "scheme", "epsilon", "delta", "delta_prime", "guarantee_neighbours"):
        assert getattr(res, key) == d[key]
    assert str(res.verdict) == d["verdict"]


@pytest.mark.float_kernels
def test_bound_vectorised_equals_pointwise() -> None:
    """A single ε on srswor takes the scalar fast path, which calls numpy's loops on one
    float: the array's bits, and the same verdicts."""
    design = ampcalc.load_design(SRSWOR)
    eps = np.geomspace(0.01, 20, 9)
    many = ampcalc.bound(design, epsilon=eps)
    for i, e in enumerate(eps):
        one = ampcalc.bound(design, epsilon=float(e))
        assert float(many.upper[i]) == one.upper and float(many.lower[i]) == one.lower
        assert many.verdict[i] == one.verdict


@pytest.mark.parametrize("path", [SRSWOR, COMPARE], ids=lambda p: p.stem)
def test_invert_same_as_cli(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    cli = cli_json(capsys, "invert", str(path), "--target", "1")["results"]
    api = [ampcalc.invert(d, target=1.0).to_dict() for d in ampcalc.load_designs(path)]
    assert same(api) == cli
    res = ampcalc.invert(ampcalc.load_designs(path)[0], 1.0)
    assert res.epsilon.certified == res.certified
    assert res.target.epsilon_prime == 1.0


def test_invert_certificate_is_feasible() -> None:
    design = ampcalc.load_design(SRSWOR)
    targets = np.array([0.1, 0.5, 1.0, 2.0])
    res = ampcalc.invert(design, targets)
    upper = ampcalc.bound(design, epsilon=res.certified).upper
    assert np.all(upper <= targets)  # one-sided: the certified ε meets the target


# --------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------


def test_sweep_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_json(
        capsys,
        "sweep",
        str(SRSWOR),
        "--vary",
        "epsilon=0.1:2:7",
        "--vary",
        "sampling.sample=50,100",
    )
    for source in (SRSWOR, str(SRSWOR), SRSWOR.read_text()):
        api = ampcalc.sweep(source, vary={"epsilon": "0.1:2:7", "sampling.sample": [50, 100]})
        assert same(api.to_dict()) == cli
    assert len(api) == 14
    rows = list(api)
    assert rows[3] == api[3]
    assert api["epsilon_prime.upper"].tolist() == [r["epsilon_prime.upper"] for r in rows]


def test_sweep_invert_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_json(capsys, "sweep", str(COMPARE), "--of", "invert", "--vary", "target=0.5,1,2")
    api = ampcalc.sweep(COMPARE, vary={"target": [0.5, 1, 2]}, of="invert")
    assert same(api.to_dict()) == cli


def test_sweep_of_a_built_design() -> None:
    built = ampcalc.designs.SRSWOR(
        population=10_000, sample=100, mechanism=ampcalc.Mechanism(epsilon=1.0)
    )
    api = ampcalc.sweep(built, vary={"sampling.sample": [100, 200]})
    expected = [
        ampcalc.bound(
            ampcalc.designs.SRSWOR(
                population=10_000, sample=m, mechanism=ampcalc.Mechanism(epsilon=1.0)
            )
        ).upper
        for m in (100, 200)
    ]
    assert api["epsilon_prime.upper"].tolist() == expected
    # a design loaded from a file maps back to its file entry
    loaded = ampcalc.load_designs(EXAMPLES / "stratified-business-survey.yaml")[1]
    res = ampcalc.sweep(loaded, vary={"epsilon": [0.5, 1.0]})
    assert set(res["design"].tolist()) == {loaded.name}
    assert res["epsilon_prime.upper"][1] == ampcalc.bound(loaded, epsilon=1.0).upper


def test_sweep_to_pandas() -> None:
    pd = pytest.importorskip("pandas")
    res = ampcalc.sweep(SRSWOR, vary={"epsilon": "0.5:1:3"})
    frame = res.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == res.column_names()
    assert frame["epsilon_prime.upper"].tolist() == res["epsilon_prime.upper"].tolist()


def test_sweep_to_pandas_without_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    res = ampcalc.sweep(SRSWOR, vary={"epsilon": [1.0]})
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    with pytest.raises(ampcalc.AmpcalcError, match="needs pandas"):
        res.to_pandas()


def test_sweep_errors_name_the_column() -> None:
    res = ampcalc.sweep(SRSWOR, vary={"epsilon": [1.0]})
    with pytest.raises(KeyError, match=r"did you mean 'epsilon_prime\.upper'"):
        res["epsilon_prime.uper"]
    with pytest.raises(ampcalc.DesignError, match="not a number"):
        ampcalc.sweep(SRSWOR, vary={"epsilon": "a,b"})


# --------------------------------------------------------------------------------------
# compare / check / verify / plan
# --------------------------------------------------------------------------------------


def test_validate_same_as_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cli = cli_json(capsys, "validate", str(COMPARE))["results"]
    assert same(ampcalc.validate(COMPARE)) == cli
    outside = tmp_path / "outside.yaml"  # Poisson needs M's add-remove ε
    outside.write_text(
        "mechanism: {epsilon: 1.0, neighbours: replace-one}\n"
        "sampling: {scheme: poisson, rate: 0.01}\n"
    )
    cli = cli_json(capsys, "validate", str(outside), expect=2)["results"]
    api = ampcalc.validate(outside)
    assert same(api) == cli
    assert api[0]["valid"] is False and "Lemma 3.3" in api[0]["error"]


def test_schemes_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_json(capsys, "schemes")["schemes"]
    assert same(ampcalc.api.schemes()) == cli


def test_compare_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_json(capsys, "compare", str(COMPARE), "--target", "1")["results"]
    assert same(ampcalc.compare(COMPARE, target=1.0)) == cli
    stratified = EXAMPLES / "stratified-business-survey.yaml"
    cli = cli_json(capsys, "compare", str(stratified), "--target", "1")["results"]
    assert same(ampcalc.compare(ampcalc.load_designs(stratified), target=1.0)) == cli


def test_check_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    # uppers 0.00647, 0.00647, 0.0170, 0.0129: the third design fails the gate
    cli = cli_json(capsys, "check", str(COMPARE), "--max-epsilon", "0.015", expect=1)
    api = ampcalc.check(COMPARE, max_epsilon=0.015)
    assert same(api) == cli["results"]
    assert [e["passed"] for e in api] == [True, True, False, True]
    assert cli["passed"] is False


def test_verify_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_json(capsys, "verify", str(TINY))["results"]
    api = ampcalc.verify(TINY)
    assert same(api) == cli
    assert [r["status"] for r in api] == ["PASS"] * 3


def test_plan_same_as_cli(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    cli = cli_json(capsys, "plan", str(PLAN_MEAN), "--q", "0.6")["results"][0]
    assert same(ampcalc.plan(PLAN_MEAN, q=0.6).to_dict()) == cli
    monkeypatch.chdir(PLAN_MEAN.parent)  # text and dicts resolve data files from here
    assert same(ampcalc.plan(PLAN_MEAN.read_text(), q=0.6).to_dict())["rows"] == cli["rows"]


GAUSSIAN = ROOT / "examples" / "mechanisms" / "gaussian-poisson.yaml"
LEDGER = ROOT / "examples" / "budget" / "year.yaml"


def test_calibrate_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_json(capsys, "invert", str(GAUSSIAN), "--solve", "sigma", "-t", "1")["results"]
    api = ampcalc.api.calibrate(GAUSSIAN, "sigma", 1.0)
    assert same([api]) == cli
    knob = api["knob"]
    # the certified σ meets the target, and a σ below impossible_below surely breaks it
    assert knob["epsilon_prime_at_value"] <= 1.0
    assert knob["impossible_below"] <= knob["value"]


def test_budget_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_json(capsys, "budget", str(LEDGER), "--discretization", "1e-3")
    ledger = ampcalc.api.load_ledger(str(LEDGER), discretization=1e-3)
    api = ampcalc.api.budget(ledger)
    envelope = ("ampcalc_version", "command", "references")  # the CLI's, for every command
    assert same(api) == {k: v for k, v in cli.items() if k not in envelope}
    total = api["total"]
    assert total["accuracy"]["optimistic"] <= total["upper"]
    assert api["remaining"] == pytest.approx(2.0 - total["upper"], abs=1e-12)
    cli = cli_json(capsys, "budget", str(LEDGER), "--solve", "scale")
    solved = ampcalc.api.budget_solve(ampcalc.api.load_ledger(str(LEDGER)), "scale")
    assert same(solved) == {
        k: v for k, v in cli.items() if k not in ("ampcalc_version", "command")
    }
    assert solved["knob"]["epsilon_upper_at_value"] <= 2.0  # the budget, met


def test_report_evaluates_as_bound_and_invert() -> None:
    [page] = ampcalc.api.report(SRSWOR, target=1.0)
    assert page.bound == ampcalc.bound(SRSWOR).to_dict()
    assert page.inverse is not None
    assert page.inverse == ampcalc.invert(SRSWOR, target=1.0).to_dict()


# --------------------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------------------


def _csv(text: str) -> dict[str, list[float]]:
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    return {k: [float(r[k]) for r in rows] for k in reader.fieldnames or ()}


@pytest.mark.parametrize("path", [LAPLACE, CONSTANT], ids=lambda p: p.stem)
def test_weights_same_as_cli(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    cli = _csv(run_main(capsys, "weights", str(path)).stdout)
    api = ampcalc.weights(path)
    assert api.probability.tolist() == cli["probability"]
    assert api.weight.tolist() == cli["weight"]
    assert api.epsilon_hat.tolist() == cli["epsilon_hat"]
    sampled = _csv(run_main(capsys, "weights", str(path), "--sample", "--seed", "11").stdout)
    assert api.sample(11).tolist() == [int(r) for r in sampled["row"]]


def test_kernels_give_the_weights_command_numbers() -> None:
    records = np.loadtxt(EXAMPLES / "data" / "importance-six.csv", delimiter=",", skiprows=1)
    laplace = {"profile": "laplace-sum", "scale": 4.0}
    q = kernels.privacy_constrained_probabilities(laplace, records, 1.0)
    expected = ampcalc.weights(LAPLACE)
    assert q.tolist() == expected.probability.tolist()
    eps_hat = kernels.personalised_epsilon(laplace, records, q)
    assert np.all(eps_hat <= 1.0)  # Theorem 10: every record meets ε*
    assert eps_hat.tolist() == expected.epsilon_hat.tolist()
    constant = ampcalc.weights(CONSTANT)
    eps0 = ampcalc.load_design(CONSTANT).mechanism.coefficients.alpha
    got = kernels.personalised_epsilon(
        {"profile": "constant", "epsilon": eps0},
        records,
        constant.probability,
    )
    assert got.tolist() == constant.epsilon_hat.tolist()


def test_kernel_errors_name_the_argument() -> None:
    with pytest.raises(ampcalc.AmpcalcError, match=r"profile\.scale"):
        kernels.privacy_constrained_probabilities({"profile": "laplace-sum"}, [[1.0]], 1.0)
    with pytest.raises(ampcalc.AmpcalcError, match="target"):
        kernels.privacy_constrained_probabilities(
            {"profile": "laplace-sum", "scale": 1.0}, [[1.0]], -1
        )
    with pytest.raises(ampcalc.AmpcalcError, match="non-decreasing"):
        kernels.reporting_probabilities([0.5, 0.2], 1.0, 1e-3)
    with pytest.raises(ampcalc.AmpcalcError, match="rng"):
        kernels.sanitize_keys(["a"], [1], "seed", epsilon=1.0, delta=1e-3)


# --------------------------------------------------------------------------------------
# pws
# --------------------------------------------------------------------------------------


def test_pws_table_same_as_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_json(capsys, "pws", "table", str(PWS), "--max-frequency", "200", "--verify")
    api = ampcalc.pws_table(PWS, max_frequency=200, verify=True)
    assert same(api) == cli
    design = ampcalc.load_design(PWS)
    q = np.array([r["q"] for r in api["frequencies"]])
    pi = kernels.reporting_probabilities(q, design.target.epsilon_prime, 1e-3)
    assert pi.tolist() == [r["pi"] for r in api["frequencies"]]


@pytest.fixture
def sample_csv(tmp_path: Path) -> tuple[Path, list[str], list[int]]:
    rng = np.random.default_rng(3)
    keys = [f"k{i}" for i in range(400)]
    freqs = rng.integers(1, 300, size=len(keys)).tolist()
    path = tmp_path / "sample.csv"
    lines = "".join(f"{k},{f}\n" for k, f in zip(keys, freqs, strict=True))
    path.write_text("key,frequency\n" + lines)
    return path, keys, freqs


def test_pws_sanitize_and_estimate_same_as_cli(
    capsys: pytest.CaptureFixture[str], sample_csv, tmp_path: Path
) -> None:
    path, keys, freqs = sample_csv
    out = tmp_path / "private.csv"
    run_main(
        capsys, "pws", "sanitize", str(path), "--design", str(PWS), "--seed", "7",
        "--frequencies", "-o", str(out),
    )  # fmt: skip
    rows = list(csv.DictReader(out.open()))
    api = ampcalc.pws_sanitize(PWS, keys, freqs, 7, report_frequencies=True)
    assert api["keys"] == [r["key"] for r in rows]
    assert api["frequency"] == [int(r["frequency"]) for r in rows]
    assert 0 < len(api["keys"]) < len(keys)

    # the kernel, given the design's q, reports the same keys
    design = ampcalc.load_design(PWS)
    top = max(freqs)
    q = -np.expm1(-design.params.threshold * np.arange(1, top + 1))  # ppswor, 004 Eq. 1
    kept, tokens = kernels.sanitize_keys(
        keys, freqs, 7, epsilon=0.1, delta=1e-3, q=q, frequencies=True
    )
    assert [k for k, m in zip(keys, kept, strict=True) if m] == api["keys"]
    assert tokens is not None and tokens[kept].tolist() == api["frequency"]

    cli = cli_json(capsys, "pws", "estimate", str(out), "--design", str(PWS))
    est = ampcalc.pws_estimate(PWS, api["frequency"])
    assert same({**est, "select": {}}) == cli


def test_sanitize_keys_is_partition_independent(sample_csv) -> None:
    _, keys, freqs = sample_csv
    whole, _ = kernels.sanitize_keys(keys, freqs, 99, epsilon=1.0, delta=1e-4)
    parts = [
        kernels.sanitize_keys(keys[i : i + 57], freqs[i : i + 57], 99, epsilon=1.0, delta=1e-4)[0]
        for i in range(0, len(keys), 57)
    ]
    assert np.concatenate(parts).tolist() == whole.tolist()
    # a Generator stands for the seed it draws
    a, _ = kernels.sanitize_keys(keys, freqs, np.random.default_rng(5), epsilon=1.0, delta=1e-4)
    seed = int(np.random.default_rng(5).integers(0, 2**63, dtype=np.int64))
    b, _ = kernels.sanitize_keys(keys, freqs, seed, epsilon=1.0, delta=1e-4)
    assert a.tolist() == b.tolist()


# --------------------------------------------------------------------------------------
# errors: the CLI's messages
# --------------------------------------------------------------------------------------


def test_design_error_message_equals_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = run_main(capsys, "bound", str(TYPO), expect=2).stderr.strip()
    with pytest.raises(ampcalc.DesignError) as err:
        ampcalc.load_design(str(TYPO))
    assert str(err.value) == cli
    assert err.value.field == "sampling.sampel"
    assert err.value.line == 9
    assert "did you mean 'sample'?" in str(err.value)
    assert isinstance(err.value, ampcalc.AmpcalcError)


def test_design_error_in_text_and_dict() -> None:
    with pytest.raises(ampcalc.DesignError) as err:
        ampcalc.load_design(TYPO.read_text())
    assert str(err.value).startswith("<string>:9:3: sampling.sampel: unknown key")
    with pytest.raises(ampcalc.DesignError) as err:
        ampcalc.load_design(
            {"mechanism": {"epsilon": 1.0}, "sampling": {"scheme": "srswor", "population": 10}}
        )
    assert err.value.field == "sampling"
    assert "sample" in str(err.value)


def test_sweep_error_equals_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = run_main(
        capsys, "sweep", str(SRSWOR), "--vary", "sampling.sample=50,20000", expect=2
    ).stderr.strip()
    with pytest.raises(ampcalc.DesignError) as err:
        ampcalc.sweep(SRSWOR, vary={"sampling.sample": "50,20000"})
    # the same message; the library locates the spec in its `vary` parameter, the
    # command in its --vary option
    assert cli.startswith("--vary: ")
    assert str(err.value) == cli.replace("--vary: ", "vary: ", 1)


def test_weights_refusal_equals_cli(capsys: pytest.CaptureFixture[str]) -> None:
    cli = run_main(capsys, "weights", str(SRSWOR), expect=2).stderr.strip()
    with pytest.raises(ampcalc.DesignError) as err:
        ampcalc.weights(SRSWOR)
    assert cli == f"ampcalc: error: {err.value}"
