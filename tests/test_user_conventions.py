"""What a user reads when an input is wrong, and the conventions shared by commands.

Each test pins a defect seen from the command line: the exact message, the exit code or
the column name, as a user reads it.
"""

from __future__ import annotations

import pytest
from conftest import EXAMPLES, run_main

SRS = str(EXAMPLES / "srswor.yaml")
COMPARE = str(EXAMPLES / "compare.yaml")


@pytest.mark.parametrize(
    ("design", "override", "line"),
    [
        (
            SRS,
            "mechansim.epsilon=2",
            "--set mechansim.epsilon=2: mechansim: unknown key in a design; expected one of: "
            "name, mechanism, sampling, guarantee, target (did you mean 'mechanism'?)",
        ),
        (
            COMPARE,
            "designs[1].mechansim.epsilon=2",
            "--set designs[1].mechansim.epsilon=2: designs[1].mechansim: unknown key in a "
            "design; expected one of: name, mechanism, sampling, guarantee, target "
            "(did you mean 'mechanism'?)",
        ),
    ],
)
def test_typo_in_an_override_path_is_blamed_on_the_override(
    capsys: pytest.CaptureFixture[str], design: str, override: str, line: str
) -> None:
    """A key that only ``--set`` created is the override's mistake: it used to be
    reported at the design file's first key (``srswor.yaml:3:1``)."""
    run = run_main(capsys, "bound", design, "--set", override, expect=2)
    assert run.stderr.strip() == line
    assert ".yaml:" not in run.stderr


VERIFY_MIXED = """\
designs:
  - name: tiny
    mechanism: {epsilon: 1, neighbours: replace-one}
    sampling: {scheme: srswor, population: 6, sample: 3}
  - name: large
    mechanism: {epsilon: 1, neighbours: replace-one}
    sampling: {scheme: srswor, population: 10000, sample: 100}
"""


def test_verify_inconclusive_exits_0_with_the_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    """INCONCLUSIVE is neither a wrong bound (3) nor bad input (2): exit 0, the verdict
    printed. The exact worst case of srswor N = 6, m = 3 at ε = 1 is Balle et al.'s
    log(1 + (m/N)(e^ε − 1)) (paper 000, Theorem 2.2): tight, so PASS."""
    import json
    import math

    f = tmp_path / "mixed.yaml"
    f.write_text(VERIFY_MIXED, encoding="utf-8")
    run = run_main(capsys, "verify", str(f), "--json")
    tiny, large = json.loads(run.stdout)["results"]
    assert tiny["status"] == "PASS"
    assert tiny["epsilon_prime_exact"] == pytest.approx(math.log1p(0.5 * math.expm1(1)), abs=2e-7)
    assert large["status"] == "INCONCLUSIVE" and "error" not in large
    assert "large: INCONCLUSIVE: too large to verify" in run.stderr
    # every example: none exits 2 any more for INCONCLUSIVE alone
    run = run_main(capsys, "verify", str(EXAMPLES / "srswor.yaml"))
    assert run.stdout.startswith("INCONCLUSIVE 1% secret simple random sample (srswor)")


def test_verify_keeps_2_for_a_design_outside_its_conditions(
    capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    f = tmp_path / "refused.yaml"
    f.write_text(
        "mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "sampling: {scheme: poisson, rate: 0.1}\n",
        encoding="utf-8",
    )
    import json

    run = run_main(capsys, "verify", str(f), "--json", expect=2)
    (row,) = json.loads(run.stdout)["results"]
    assert row["status"] == "INCONCLUSIVE" and "Lemma 3.3" in row["error"]
    assert row["reason"] == row["error"]


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["bound", COMPARE], "design,scheme,epsilon,"),
        (["invert", COMPARE, "--target", "1"], "design,scheme,target.epsilon_prime,"),
        (["validate", COMPARE], "design,scheme,valid,"),
        (["check", COMPARE, "--max-epsilon", "1"], "design,scheme,passed,"),
        (["compare", COMPARE, "--target", "1"], "design,scheme,target,"),
        (["verify", str(EXAMPLES / "group-verify-tiny.yaml")], "design,scheme,"),
        (["sweep", COMPARE, "--vary", "epsilon=1,2"], "design,scheme,"),
        (["plan", str(EXAMPLES.parent / "plans" / "custom.yaml")], "design,statistic,"),
        (["schemes"], "scheme,summary,"),
    ],
)
def test_csv_first_column_is_the_same_everywhere(
    capsys: pytest.CaptureFixture[str], args: list[str], first: str
) -> None:
    """One row per design: the column that names it is `design` in every command (it
    was `name` in most and `design` in sweep); a row per scheme: `scheme`."""
    run = run_main(capsys, *args, "--format", "csv")
    assert run.stdout.startswith(first)


def test_a_data_file_given_as_the_design_is_not_quoted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """YAML reads a CSV as one long string; the message once pasted all of it, then its
    first line (60 characters of a `.env` file's secret): now it quotes none of it."""
    path = EXAMPLES / "data" / "business-strata.csv"
    run = run_main(capsys, "bound", str(path), expect=2)
    assert run.stderr == (
        f"{path}: does not look like an ampcalc design (expected a design: a YAML mapping "
        "with keys such as `mechanism:` and `sampling:`, or `designs:`); it reads as 13 "
        "lines of plain text (this looks like a data file; a design names its data files "
        "in `file:`, `records:` or `data:`)\n"
    )
    assert "min_value" not in run.stderr


def test_a_long_string_value_is_quoted_not_pasted() -> None:
    from ampcalc.model.errors import describe

    assert describe("x" * 200) == f"the string {'x' * 60!r}… (200 characters)"
    assert describe("one\ntwo") == "the string 'one\\ntwo'"
    assert describe("one") == "the string 'one'"
