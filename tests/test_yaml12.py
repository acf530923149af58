"""Design files are YAML 1.2 (core schema), and every threshold or target refuses NaN.

YAML 1.1 (PyYAML's default) read ``0100`` as 64, ``1:40`` as 100 (base 60), ``0b101`` as
5 and ``1_000`` as 1000, silently; YAML 1.2 reads ``0100`` as 100 and keeps the others as
text, which a number field refuses at its line and column, saying what to write. A NaN
threshold compares false with every result: ``--fail-above nan`` passed every design.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, run_main

from ampcalc.designs.document import load_designs, parse_yaml
from ampcalc.model.errors import DesignError, number_advice

SRS = str(EXAMPLES / "srswor.yaml")
LEDGER = str(ROOT / "examples" / "budget" / "year.yaml")
PLAN = ROOT / "examples" / "plans" / "mean.yaml"

# ---- the core schema -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0100", 100),  # decimal, not octal 64
        ("010", 10),
        ("0777", 777),
        ("-012", -12),
        ("0o10", 8),
        ("0o777", 511),
        ("0x10", 16),
        ("0xfF", 255),
        ("1e-6", 1e-6),
        ("5E-1", 0.5),
        ("1e6", 1e6),
        (".5", 0.5),
        ("1.", 1.0),
        ("+.inf", math.inf),
        ("-.Inf", -math.inf),
        ("true", True),
        ("FALSE", False),
        ("~", None),
        ("null", None),
        ("", None),
        # YAML 1.1 numbers, booleans and dates: text in YAML 1.2
        ("1:40", "1:40"),
        ("1:40:00", "1:40:00"),
        ("0b101", "0b101"),
        ("1_000", "1_000"),
        ("1_000.5", "1_000.5"),
        ("1,000", "1,000"),
        ("-0x10", "-0x10"),
        ("0X10", "0X10"),
        ("yes", "yes"),
        ("No", "No"),
        ("on", "on"),
        ("OFF", "OFF"),
        ("tRUE", "tRUE"),
        ("2027-01-01", "2027-01-01"),
        ("=", "="),
    ],
)
def test_plain_scalars_resolve_by_the_core_schema(text: str, value: object) -> None:
    got = parse_yaml(f"v: {text}\n")["v"]
    assert got == value and type(got) is type(value)


def test_nan_is_a_float() -> None:
    assert math.isnan(parse_yaml("v: .NaN\n")["v"])


def test_quoted_text_and_keys_are_text() -> None:
    doc = parse_yaml('"0100": "0100"\non: [push]\nyes: 1\n')
    assert doc == {"0100": "0100", "on": ["push"], "yes": 1}


@pytest.mark.parametrize(
    ("text", "value"),
    [("!!int 0o17", 15), ("!!int '0100'", 100), ("!!float 1", 1.0), ("!!bool True", True)],
)
def test_tags_take_their_core_forms(text: str, value: object) -> None:
    got = parse_yaml(f"v: {text}\n")["v"]
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    "text", ["!!int 0b101", "!!int 1_000", "!!int 1:40", "!!float 1:40.5", "!!bool yes"]
)
def test_tags_outside_the_core_forms_are_refused_at_their_place(text: str) -> None:
    with pytest.raises(DesignError) as err:
        parse_yaml(f"a: 1\nv: {text}\n", filename="d.yaml")
    assert (err.value.where.line, err.value.where.column) == (2, 4)
    assert "is not a YAML 1.2" in err.value.message


def test_merge_keys_still_merge() -> None:
    doc = parse_yaml("base: &b {epsilon: 1.0}\nm: {<<: *b, delta: 0}\n")
    assert doc["m"] == {"epsilon": 1.0, "delta": 0}


# ---- in designs: values, by file and by --set ---------------------------------------------

HEAD = "mechanism: {epsilon: 1.0, neighbours: both}\nsampling:\n  scheme: srswor\n"


@pytest.mark.parametrize(("text", "value"), [("0100", 100), ("0o10", 8), ("0x10", 16)])
def test_sample_values_by_file_and_by_set(tmp_path: Path, text: str, value: int) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(HEAD + f"  population: 10000\n  sample: {text}\n")
    assert load_designs(str(f))[0].params.sample == value
    assert load_designs(SRS, overrides=[f"sampling.sample={text}"])[0].params.sample == value


def test_epsilon_010_is_ten(tmp_path: Path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(
        "mechanism: {epsilon: 010, neighbours: both}\n"
        "sampling: {scheme: srswor, population: 10000, sample: 100}\n"
    )
    assert load_designs(str(f))[0].mechanism.epsilon == 10.0
    assert load_designs(SRS, overrides=["mechanism.epsilon=010"])[0].mechanism.epsilon == 10.0


YAML11 = [
    ("1:40", "write 100"),
    ("1:40:00", "write 6000"),
    ("0b101", "write 5"),
    ("1_000", "write 1000"),
    ("1,000", "write 1000"),
    ("-0x10", "write -16"),
]


@pytest.mark.parametrize(("text", "advice"), YAML11)
def test_yaml11_numbers_are_refused_at_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, advice: str
) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(HEAD + f"  population: 10000\n  sample: {text}\n")
    run = run_main(capsys, "bound", str(f), expect=2)
    assert run.stderr.startswith(f"{f}:5:3: sampling.sample: expected a whole number")
    assert f"got the string '{text}'" in run.stderr and advice in run.stderr


@pytest.mark.parametrize(("text", "advice"), YAML11)
def test_yaml11_numbers_are_refused_through_set(
    capsys: pytest.CaptureFixture[str], text: str, advice: str
) -> None:
    run = run_main(capsys, "bound", SRS, "--set", f"sampling.sample={text}", expect=2)
    assert run.stderr.startswith("--set: sampling.sample: expected a whole number")
    assert advice in run.stderr


def test_a_yaml11_epsilon_is_refused_with_advice(capsys: pytest.CaptureFixture[str]) -> None:
    run = run_main(capsys, "bound", SRS, "--set", "mechanism.epsilon=1_0.5", expect=2)
    assert "mechanism.epsilon: expected a number in (0, 1000000]" in run.stderr
    assert "write 10.5" in run.stderr


@pytest.mark.parametrize(("text", "word"), [("yes", "true"), ("off", "false")])
def test_a_boolean_field_refuses_yes_and_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, word: str
) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(
        "mechanism: {epsilon: 1.0}\nsampling:\n  scheme: stratified\n"
        f"  allocation: proportional\n  rate: 0.1\n  size_aware: {text}\n"
        "  strata: [{size: 100}]\n"
    )
    run = run_main(capsys, "bound", str(f), expect=2)
    assert run.stderr.startswith(f"{f}:6:3: sampling.size_aware: expected true or false")
    assert f"write {word}" in run.stderr


@pytest.mark.parametrize(
    ("text", "advice"),
    [
        ("1_000", "YAML numbers have no digit separators: write 1000"),
        ("1,000,000.25", "YAML numbers have no digit separators: write 1000000.25"),
        ("0x_ff", "YAML numbers have no digit separators: write 0xff"),
        ("0b1_01", "YAML 1.2 has no binary numbers: write 5"),
        ("+0o17", "write 15"),
        ("0X10", "write 16"),
        ("1:40", "not as the base-60 number 100 of YAML 1.1: write 100"),
        ("-1:30.5", "write -90.5"),
        ("1,2", None),  # not a thousands separator: no guess
        ("12:60", None),
        ("yes", None),
        ("abc", None),
    ],
)
def test_number_advice(text: str, advice: str | None) -> None:
    got = number_advice(text)
    assert got == advice if advice is None else advice in (got or "")


# ---- threshold and target options -----------------------------------------------------------

OPTIONS = [
    (["bound", SRS], "--fail-above"),
    (["budget", LEDGER], "--fail-above"),
    (["budget", LEDGER, "--solve", "sigma"], "--target"),
    (["budget", LEDGER], "--discretization"),
    (["check", SRS], "--max-epsilon"),
    (["check", SRS, "--max-epsilon", "1"], "--max-delta"),
    (["invert", SRS], "--target"),
    (["invert", SRS, "--target", "1"], "--target-delta"),
    (["compare", str(EXAMPLES / "compare.yaml")], "--target"),
    (["sweep", SRS, "--of", "invert", "--vary", "sampling.sample=10,20"], "--target"),
    (["sweep", SRS, "--of", "invert", "--vary", "sampling.sample=10,20"], "--target-delta"),
    (["sweep", SRS, "--vary", "sampling.sample=10,20"], "--contour"),
    (["sweep", SRS, "--vary", "sampling.sample=10,20"], "--x-factor"),
    (["report", SRS, "-o", "-"], "--target"),
    (["report", SRS, "-o", "-"], "--target-delta"),
    (["plan", str(PLAN)], "--variance-share"),
]


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "1e309", "-1"])
@pytest.mark.parametrize(("args", "option"), OPTIONS, ids=[f"{a[0]}{o}" for a, o in OPTIONS])
def test_threshold_options_refuse_non_finite_and_negative(
    capsys: pytest.CaptureFixture[str], args: list[str], option: str, value: str
) -> None:
    extra = ["--target", "1"] if option == "--target-delta" and "sweep" in args else []
    run = run_main(capsys, *args, *extra, option, value, expect=2)
    assert run.stdout == ""
    shown = {"nan": "nan", "NaN": "nan", "inf": "inf", "1e309": "inf", "-1": "-1.0"}[value]
    assert run.stderr.startswith(f"ampcalc: error: Invalid value for {option}: expected ")
    assert run.stderr.rstrip().endswith(f", got {shown}")
    if value != "-1":
        assert "expected a finite number" in run.stderr


def test_fail_above_still_gates(capsys: pytest.CaptureFixture[str]) -> None:
    # the upper bound of srswor.yaml: log(1 + 0.01 (e - 1)) = 0.0170369 (test_check pins it)
    assert math.log1p(0.01 * math.expm1(1.0)) == pytest.approx(0.0170369, abs=1e-7)
    run_main(capsys, "bound", SRS, "--fail-above", "0.017", expect=1)
    run_main(capsys, "bound", SRS, "--fail-above", "0.018", expect=0)
    run_main(capsys, "bound", SRS, "--fail-above", "0", expect=1)


def test_fail_above_nan_in_json_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    run = run_main(capsys, "bound", SRS, "--fail-above", "nan", "--json", expect=2)
    err = json.loads(run.stdout)["error"]
    assert (err["kind"], err["field"]) == ("usage", "--fail-above")


# ---- document fields that act as a gate or target -------------------------------------------


@pytest.mark.parametrize("value", [".inf", ".nan", "-.inf", ".NaN"])
def test_design_target_refuses_non_finite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(Path(SRS).read_text() + f"target: {{epsilon_prime: {value}}}\n")
    line = f.read_text().count("\n")
    run = run_main(capsys, "invert", str(f), expect=2)
    assert run.stderr.startswith(f"{f}:{line}:10: target.epsilon_prime: expected a finite")


def test_a_whole_target_of_inf_is_refused(tmp_path: Path, capsys) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(Path(SRS).read_text() + "target: .inf\n")
    run = run_main(capsys, "invert", str(f), expect=2)
    assert "target: expected a target (a mapping of keys to values), got inf" in run.stderr


@pytest.mark.parametrize(("key", "col"), [("epsilon", 10), ("delta", 24)])
@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_ledger_budget_refuses_non_finite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, col: int, value: str
) -> None:
    text = Path(LEDGER).read_text()
    old = "target: {epsilon: 2.0, delta: 1e-6}"
    assert old in text
    new = old.replace("2.0" if key == "epsilon" else "1e-6", value)
    f = tmp_path / "ledger.yaml"  # the target is read before the entries' designs
    f.write_text(text.replace(old, new))
    run = run_main(capsys, "budget", str(f), expect=2)
    assert run.stderr.startswith(f"{f}:4:{col}: target.{key}: expected a finite number")


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_plan_target_refuses_non_finite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    text = PLAN.read_text().replace("epsilon_prime: 1.0", f"epsilon_prime: {value}")
    f = tmp_path / "plan.yaml"  # the target is read before the plan's data
    f.write_text(text)
    run = run_main(capsys, "plan", str(f), expect=2)
    assert f"{f}:6:10: target.epsilon_prime: expected a finite number" in run.stderr
