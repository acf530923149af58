"""The command line, run as ``python -m ampcalc``: every core command, format and exit code."""

from __future__ import annotations

import csv
import io
import json
import math
import shlex
import subprocess
import sys

import jsonschema
import pytest
from conftest import EXAMPLES, ROOT, _exe, run_ampcalc, run_main

SRS = str(EXAMPLES / "srswor.yaml")
COMPARE = str(EXAMPLES / "compare.yaml")


def test_bound_json_contract() -> None:
    doc = run_ampcalc("bound", SRS, "--json").json()
    assert doc["command"] == "bound" and doc["ampcalc_version"]
    (r,) = doc["results"]
    assert r["scheme"] == "srswor" and r["verdict"] == "amplifies"
    assert r["epsilon_prime"]["lower"] <= 0.017036863236176553 <= r["epsilon_prime"]["upper"]
    assert r["delta_prime"] == 0.0 and r["epsilon_replace_one"] == 1.0
    assert r["guarantee_neighbours"] == "replace-one"
    assert r["basis"][0] == {"reference": "bun-sampling-schemes", "where": "Theorem 2.2"}
    assert doc["references"]["bun-sampling-schemes"]["short"] == "Bun et al."
    schema = json.loads((ROOT / "ampcalc" / "schema" / "result.schema.json").read_text())
    jsonschema.validate(doc, schema)


def test_invert_json_contract() -> None:
    doc = run_ampcalc("invert", SRS, "--target", "1.0", "--json").json()
    (r,) = doc["results"]
    assert doc["command"] == "invert"
    assert r["target"] == {"epsilon_prime": 1.0, "delta_prime": None}
    assert abs(r["epsilon"]["certified"] - 5.1523) < 5e-5
    assert r["epsilon"]["impossible_above"] >= r["epsilon"]["certified"]
    assert r["delta"] is None
    schema = json.loads((ROOT / "ampcalc" / "schema" / "result.schema.json").read_text())
    jsonschema.validate(doc, schema)


def test_bound_table_is_plain_and_stable_when_not_a_tty() -> None:
    out = run_ampcalc("bound", SRS, env={"COLUMNS": "200"}).stdout  # wide: every column
    lines = out.splitlines()
    assert lines[0].split() == [
        "design",
        "scheme",
        "ε",
        "(M)",
        "ε′",
        "lower",
        "ε′",
        "upper",
        "δ′",
        "verdict",
        "guarantee",
        "bounds",
    ]
    assert "0.0170369" in lines[2] and "amplifies" in lines[2] and "exact" in lines[2]
    assert "\x1b[" not in out  # no colour codes in a pipe


def test_csv_has_dotted_columns_one_row_per_design() -> None:
    out = run_ampcalc("bound", COMPARE, "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 4
    assert {"epsilon_prime.lower", "epsilon_prime.upper", "details.rate"} <= set(rows[0])
    assert float(rows[1]["epsilon_prime.upper"]) == pytest.approx(0.006466, abs=1e-6)
    inv = list(
        csv.DictReader(io.StringIO(run_ampcalc("invert", COMPARE, "-t", "1", "-f", "csv").stdout))
    )
    assert float(inv[1]["epsilon.certified"]) == pytest.approx(5.1523, abs=5e-5)


def test_stdin_dash() -> None:
    text = (EXAMPLES / "poisson.yaml").read_text()
    doc = run_ampcalc("bound", "-", "--json", stdin=text).json()
    assert doc["results"][0]["scheme"] == "poisson"


def test_default_design_file_in_cwd(tmp_path) -> None:
    (tmp_path / "ampcalc.yaml").write_text((EXAMPLES / "srswor.yaml").read_text())
    doc = run_ampcalc("bound", "--json", cwd=tmp_path).json()
    assert doc["results"][0]["scheme"] == "srswor"
    err = run_ampcalc("bound", cwd=tmp_path / ".." / "nowhere-x", expect=2) if False else None
    assert err is None


def test_missing_default_file_says_what_to_do(tmp_path) -> None:
    run = run_ampcalc("bound", cwd=tmp_path, expect=2)
    assert "ampcalc.yaml: no such file" in run.stderr and run.stdout == ""


def test_fail_above_gate() -> None:
    run_ampcalc("bound", SRS, "--fail-above", "0.1")
    gate = run_ampcalc("bound", SRS, "--fail-above", "0.01", expect=1)
    assert "gate failed" in gate.stderr
    assert gate.stdout  # results are still printed


def test_epsilon_override_and_set() -> None:
    r = run_ampcalc("bound", SRS, "--epsilon", "100", "--json").json()["results"][0]
    assert r["epsilon"] == 100.0 and r["epsilon_prime"]["upper"] == pytest.approx(95.395, 1e-4)
    r = run_ampcalc("bound", SRS, "--set", "sampling.sample=10000", "--json").json()["results"][0]
    assert r["verdict"] == "no-amplification"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["bound", "--epsilon", "nan", SRS], "epsilon: expected a finite number"),
        (
            ["bound", "--epsilon", "-1", SRS],
            "epsilon: expected a number in (0, 1000000], got -1.0",
        ),
        (["bound", "--set", "sampling.sampel=5", SRS], "did you mean 'sample'"),
        (["bound", "--json", "--format", "csv", SRS], "contradict"),
        (["bound", "--format", "xml", SRS], "xml"),
        (["invert", SRS], "no target"),
        (["invert", SRS, "--target", "0"], "target: expected a number in (0, 1000000], got 0"),
    ],
)
def test_bad_options_exit_2(args, needle) -> None:
    run = run_ampcalc(*args, expect=2)
    assert needle in run.stderr
    if "--json" in args:  # scripts asked for JSON: the error is also a JSON document
        assert needle in run.json()["error"]["message"]
    else:
        assert run.stdout == ""


def test_bad_file_gives_gnu_style_location(tmp_path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text((EXAMPLES / "srswor.yaml").read_text().replace("  sample: 100", "  sampel: 100"))
    run = run_ampcalc("bound", str(p), expect=2)
    assert run.stderr.startswith(f"{p}:10:3: sampling.sampel: unknown key")
    assert "did you mean 'sample'" in run.stderr and run.stdout == ""


def test_failed_condition_still_prints_other_designs(tmp_path) -> None:
    p = tmp_path / "mixed.yaml"
    p.write_text(
        "designs:\n"
        "  - name: ok\n"
        "    mechanism: {epsilon: 1, neighbours: both}\n"
        "    sampling: {scheme: poisson, rate: 0.1}\n"
        "  - name: refused\n"
        "    mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "    sampling: {scheme: poisson, rate: 0.1}\n"
    )
    run = run_ampcalc("bound", str(p), "--json", expect=2)
    ok, refused = run.json()["results"]
    assert ok["epsilon_prime"]["upper"] is not None
    assert refused["epsilon_prime"] == {"lower": None, "upper": None}
    assert "add-remove" in refused["error"] and "Lemma 3.3" in refused["error"]
    assert "refused:" in run.stderr
    # a failed condition outranks a failed gate
    run_ampcalc("bound", str(p), "--fail-above", "1e-9", expect=2)


def test_schemes_and_validate() -> None:
    doc = run_ampcalc("schemes", "--json").json()
    names = {s["name"] for s in doc["schemes"]}
    assert {"srswor", "poisson"} <= names
    srs = next(s for s in doc["schemes"] if s["name"] == "srswor")
    assert [p["name"] for p in srs["parameters"]] == ["population", "sample"]
    v = run_ampcalc("validate", SRS, "--json").json()
    assert v["results"][0]["valid"] is True


def test_version_and_help_with_examples() -> None:
    assert run_ampcalc("--version").stdout.startswith("ampcalc ")
    for cmd in ["bound", "invert", "schemes", "validate"]:
        out = run_ampcalc(cmd, "--help").stdout
        assert "Example:" in out and f"ampcalc {cmd}" in out


def test_no_color_is_respected_on_a_terminal(capsys, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr("ampcalc.cli.app.rich_output", lambda: True)
    out = run_main(capsys, "bound", SRS).stdout
    assert "amplifies" in out and "\x1b[3" not in out  # no colour escape codes


def test_closed_form_bound_does_not_import_scipy() -> None:
    code = (
        "import sys; from ampcalc.cli import main; "
        f"rc = main(['bound', {SRS!r}, '--json']); "
        "sys.stderr.write(str([m for m in sys.modules if m.split('.')[0] == 'scipy']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stderr.strip().endswith("[]")


def test_internal_error_is_reported_not_traced(capsys, monkeypatch) -> None:
    def boom(*a, **k):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr("ampcalc.engine.bound", boom)
    run = run_main(capsys, "bound", SRS, expect=2)
    assert "internal error, please report" in run.stderr and "ZeroDivision" not in run.stderr


def test_broken_pipe_keeps_exit_code() -> None:
    # this interpreter's ampcalc (the console script need not be on PATH)
    ampcalc = shlex.join(_exe())
    proc = subprocess.run(
        f"{ampcalc} bound {shlex.quote(str(COMPARE))} --json | head -c 10 > /dev/null;"
        " echo ${PIPESTATUS[0]}",
        shell=True,
        capture_output=True,
        text=True,
        executable="/bin/bash",
    )
    assert proc.stdout.strip() == "0"
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args",
    [["bound", COMPARE], ["invert", COMPARE, "-t", "1"], ["schemes"], ["validate", COMPARE]],
    ids=lambda a: a[0],
)
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_every_command_in_every_format(args, fmt) -> None:
    out = run_ampcalc(*args, "--format", fmt).stdout
    if fmt == "json":
        doc = json.loads(out)
        assert doc["command"] == args[0]
        items = doc.get("results", doc.get("schemes"))
        assert len(items) == (4 if args[0] != "schemes" else len(items)) and items
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        # the first column names the row: `design` (as in sweep), `scheme` for schemes
        assert rows and next(iter(rows[0])) == ("scheme" if args[0] == "schemes" else "design")
        if args[0] != "schemes":
            assert rows[0]["design"] == "Poisson 1%"
    else:
        first = out.splitlines()[0].split()
        assert first[0] in ("design", "scheme")
        assert "Poisson 1%" in out or args[0] == "schemes"


def test_invert_target_delta_gives_mechanism_delta() -> None:
    doc = run_ampcalc("invert", COMPARE, "-t", "1", "--target-delta", "1e-6", "--json").json()
    poisson, srs, srs_add_remove, _ = doc["results"]
    # δ′ = qδ with q = 0.01: M may use δ = δ′/q = 1e-4 (rounded down)
    assert poisson["delta"] == pytest.approx(1e-4, rel=1e-14) and poisson["delta"] <= 1e-4
    assert srs["delta"] == pytest.approx(1e-4, rel=1e-14)
    # add-remove M: δ_R = (1 + e^ε)δ at the certified ε
    eps = srs_add_remove["epsilon"]["certified"]
    expected = 1e-6 / (0.01 * (1 + math.exp(eps)))
    assert srs_add_remove["delta"] == pytest.approx(expected, rel=1e-12)


def test_explicit_replace_one_epsilon_keeps_its_ratio_when_inverting(tmp_path) -> None:
    p = tmp_path / "ratio.yaml"
    p.write_text(
        "mechanism: {epsilon: 1.0, epsilon_replace_one: 1.5}\n"
        "sampling: {scheme: srswor, population: 10000, sample: 100}\n"
    )
    r = run_ampcalc("bound", str(p), "--json").json()["results"][0]
    assert r["epsilon_replace_one"] == 1.5
    inv = run_ampcalc("invert", str(p), "-t", "1", "--json").json()["results"][0]
    # ε_R = 1.5·ε must reach the 5.1523 that replace-one certifies
    assert inv["epsilon"]["certified"] * 1.5 == pytest.approx(5.152297938, rel=1e-9)


@pytest.mark.parametrize("command", ["bound", "invert"])
def test_bound_and_invert_go_through_the_python_api(capsys, monkeypatch, command) -> None:
    """The CLI calls ``ampcalc.api.bound``/``invert``, the functions the Python API
    exposes, so both give the same numbers: SRSWOR N = 10⁴, m = 100 (000 Theorem 2.2)
    at ε = 1 gives ε′ upper 0.0170369 and inverts ε′ = 1 to ε = 5.1523."""
    import ampcalc
    from ampcalc import api

    calls: list[tuple] = []
    original = getattr(api, command)

    def spy(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(f"ampcalc.api.{command}", spy)
    extra = ["--target", "1.0"] if command == "invert" else []
    doc = json.loads(run_main(capsys, command, SRS, *extra, "--json").stdout)
    assert len(calls) == 1 and calls[0][0].name == ampcalc.load_design(SRS).name
    (r,) = doc["results"]
    direct = original(SRS).to_dict() if command == "bound" else original(SRS, 1.0).to_dict()
    assert r == json.loads(json.dumps(direct))
    if command == "bound":
        assert r["epsilon_prime"]["upper"] == pytest.approx(0.0170369, abs=5e-7)
    else:
        assert r["epsilon"]["certified"] == pytest.approx(5.1523, abs=5e-5)
