"""``ampcalc check``: the privacy-budget gate (PASS/FAIL lines, exit codes 0/1/2)."""

from __future__ import annotations

import textwrap

import pytest
from conftest import EXAMPLES, run_ampcalc, run_main

import ampcalc
from ampcalc import engine

SRS = EXAMPLES / "srswor.yaml"
COMPARE = EXAMPLES / "compare.yaml"
APPROX = EXAMPLES / "srswor-approx-dp.yaml"


def upper(path, i=0) -> float:
    return engine.bound(ampcalc.load_designs(path)[i]).upper


def test_pass_prints_the_numbers_and_exits_0(capsys) -> None:
    u = upper(SRS)  # Bun et al. Thm 2.2: log(1 + 0.01 (e − 1)) = 0.0170369
    assert f"{u:.6g}" == "0.0170369"
    run = run_main(capsys, "check", str(SRS), "--max-epsilon", "0.02")
    assert run.stdout == "PASS 1% secret simple random sample: ε′ <= 0.0170369 (max 0.02)\n"


def test_fail_exits_1_and_says_why(capsys) -> None:
    run = run_main(capsys, "check", str(SRS), "--max-epsilon", "0.017", expect=1)
    assert run.stdout == (
        "FAIL 1% secret simple random sample: ε′ <= 0.0170369 (max 0.017): "
        "ε′ bound above the budget\n"
    )


def test_budget_equal_to_the_rounded_upper_bound_passes(capsys) -> None:
    # the gate compares the outward-rounded guarantee itself: <= passes
    run_main(capsys, "check", str(SRS), "--max-epsilon", repr(upper(SRS)))


def test_one_line_per_design_any_failure_fails(capsys) -> None:
    run = run_main(capsys, "check", str(COMPARE), "--max-epsilon", "0.01", expect=1)
    lines = run.stdout.splitlines()
    # the replace-one Poisson design (M under `both`) is A(q, ε) = 0.00646626 like the
    # first two (joint convexity on the coupled mixtures); the add-remove srswor is 2ε
    assert [ln.split()[0] for ln in lines] == ["PASS", "PASS", "FAIL", "PASS"]
    assert len(lines) == len(ampcalc.load_designs(COMPARE))


def test_max_delta(capsys) -> None:
    # Hu et al., Theorem 1: δ′ = (n/N)·δ = 0.01 · 1e-6 = 1e-8, rounded
    # outward to 1.0000000000000013e-08: a budget of exactly 1e-8 fails, one ulp-safe passes
    run_main(capsys, "check", str(APPROX), "--max-epsilon", "1", "--max-delta", "1e-8", expect=1)
    ok = run_main(capsys, "check", str(APPROX), "--max-epsilon", "1", "--max-delta", "1.01e-8")
    assert "δ′ = 1e-08 (max 1.01e-08)" in ok.stdout and ok.stdout.startswith("PASS")
    bad = run_main(
        capsys, "check", str(APPROX), "--max-epsilon", "1", "--max-delta", "1e-9", expect=1
    )
    assert bad.stdout.rstrip().endswith("δ′ above the budget")


def test_json_and_csv(capsys) -> None:
    data = run_main(capsys, "check", str(COMPARE), "--max-epsilon", "0.01", "--json", expect=1)
    doc = data.json()
    assert doc["command"] == "check" and doc["passed"] is False
    assert [r["passed"] for r in doc["results"]] == [True, True, False, True]
    assert doc["results"][0]["epsilon_prime_upper"] == upper(COMPARE, 0)
    csv = run_main(capsys, "check", str(SRS), "--max-epsilon", "1", "--format", "csv")
    assert csv.stdout.splitlines()[0].startswith("design,scheme,passed,")


def test_failed_conditions_exit_2(tmp_path, capsys) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(
        textwrap.dedent(
            """\
            mechanism: {epsilon: 1, neighbours: replace-one}
            sampling: {scheme: poisson, rate: 0.1}
            """
        )
    )
    run = run_main(capsys, "check", str(f), "--max-epsilon", "1", expect=2)
    assert run.stdout == "FAIL p: ε′: no bound: outside the theorem's conditions\n"
    # the failed condition is said once, on stderr, at the design's place in the file
    assert run.stderr.startswith(f"{f}:1:1: p: Poisson amplification")
    assert run.stderr.count("needs M's add-remove ε") == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "--max-epsilon"),
        (["--max-epsilon", "-1"], "expected a number in (0, inf), got -1.0"),
        (["--max-epsilon", "1", "--max-delta", "2"], "expected a number in [0, 1]"),
    ],
)
def test_bad_budgets_exit_2(args, needle) -> None:
    run = run_ampcalc("check", str(SRS), *args, expect=2)
    assert needle in run.stderr


def test_set_and_epsilon_overrides(capsys) -> None:
    run_main(capsys, "check", str(SRS), "--max-epsilon", "0.02", "--epsilon", "2", expect=1)
    run_main(capsys, "check", str(SRS), "--max-epsilon", "0.02", "--set", "sampling.sample=10")


# ---- shell completion ----------------------------------------------------------------------


def test_completion_script_and_a_completion_request() -> None:
    script = run_ampcalc("completion", "bash").stdout
    assert "_AMPCALC_COMPLETE=complete_bash" in script and "complete " in script
    env = {"_AMPCALC_COMPLETE": "complete_bash", "COMP_WORDS": "ampcalc sw", "COMP_CWORD": "1"}
    assert run_ampcalc(env=env).stdout.split() == ["sweep"]
    env.update(COMP_WORDS="ampcalc check x --max-e", COMP_CWORD="3")
    assert run_ampcalc(env=env).stdout.split() == ["--max-epsilon"]


def test_show_completion_is_the_same_script() -> None:
    # typer's --show-completion (the script --install-completion writes) matches ours
    env = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = run_ampcalc("--show-completion", "bash", env=env).stdout
    assert shown.strip() == run_ampcalc("completion", "bash").stdout.strip()


def test_completion_rejects_unknown_shells() -> None:
    run = run_ampcalc("completion", "tcsh", expect=2)
    assert "expected one of bash, zsh, fish, powershell, pwsh" in run.stderr


def test_several_files_one_gate(capsys) -> None:
    # as a pre-commit hook passes them: every design of every file, in order
    run = run_main(capsys, "check", str(SRS), str(COMPARE), "--max-epsilon", "0.015", expect=1)
    assert [ln.split()[0] for ln in run.stdout.splitlines()] == [
        "FAIL", "PASS", "PASS", "FAIL", "PASS",
    ]  # fmt: skip
