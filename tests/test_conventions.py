"""The conventions every command follows: -o/--output, progress, errors, help, several
design files, --target on target-calibrated designs, the README's CI install line."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import typer.main
from conftest import EXAMPLES, ROOT, run_main
from typer.core import TyperArgument, TyperGroup, TyperOption
from typer.testing import CliRunner

from ampcalc.cli.app import app

SRS = str(EXAMPLES / "srswor.yaml")
POISSON = str(EXAMPLES / "poisson.yaml")
PWS = str(EXAMPLES / "pws.yaml")
LAPLACE = str(EXAMPLES / "importance-laplace.yaml")
KMEANS = str(EXAMPLES / "importance-kmeans.yaml")

MIXED = (
    "designs:\n"
    "  - name: ok\n"
    "    mechanism: {epsilon: 1, neighbours: both}\n"
    "    sampling: {scheme: poisson, rate: 0.1}\n"
    "  - name: refused\n"
    "    mechanism: {epsilon: 1, neighbours: replace-one}\n"
    "    sampling: {scheme: poisson, rate: 0.1}\n"
)
TINY = (
    "name: tiny\n"
    "mechanism: {epsilon: 1.0, neighbours: replace-one}\n"
    "sampling: {scheme: srswor, population: 4, sample: 2}\n"
)


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    p = tmp_path / "mixed.yaml"
    p.write_text(MIXED)
    return p


# ---- 1. -o/--output ----


def _commands() -> list[tuple[list[str], int]]:
    return [
        (["bound", SRS], 1),
        (["bound", str(EXAMPLES / "compare.yaml"), "--format", "csv"], 4),
        (["invert", SRS, "--target", "1", "--json"], 1),
        (["validate", SRS], 1),
        (["schemes", "--json"], -1),  # one row per scheme
        (["sweep", SRS, "--vary", "mechanism.epsilon=0.5:2:4", "--format", "csv"], 4),
        (["compare", str(EXAMPLES / "compare.yaml"), "--target", "1"], 4),
        (["check", SRS, "--max-epsilon", "1"], 1),
        (["plan", str(ROOT / "examples" / "plans" / "mean.yaml"), "--json"], 4),
        (["verify", "TINY"], 1),
        (["pws", "table", PWS, "--format", "csv"], 1000),
        (["pws", "keys", PWS, "--zipf", "1.2", "--support", "1000"], 1),
    ]


@pytest.mark.parametrize(
    ("args", "rows"), _commands(), ids=lambda a: " ".join(a[:1]) if isinstance(a, list) else str(a)
)
def test_every_result_command_writes_its_output_file(
    args: list[str], rows: int, tmp_path: Path, capsys
) -> None:
    if args == ["verify", "TINY"]:
        tiny = tmp_path / "tiny.yaml"
        tiny.write_text(TINY)
        args = ["verify", str(tiny)]
    if rows < 0:
        from ampcalc import api

        rows = len(api.schemes())
    printed = run_main(capsys, *args).stdout
    out = tmp_path / "out.txt"
    run = run_main(capsys, *args, "-o", str(out))
    assert run.stdout == ""
    assert out.read_text() == printed
    noun = "row" if rows == 1 else "rows"
    assert run.stderr.endswith(f"wrote {rows} {noun} to {out}\n"), run.stderr


def test_output_suffix_chooses_the_format(tmp_path: Path, capsys) -> None:
    out = tmp_path / "bound.json"
    run_main(capsys, "bound", SRS, "-o", str(out))
    doc = json.loads(out.read_text())
    assert doc["command"] == "bound" and doc["results"][0]["scheme"] == "srswor"
    out_csv = tmp_path / "bound.csv"
    run_main(capsys, "bound", SRS, "-o", str(out_csv))
    assert out_csv.read_text().splitlines()[0].startswith("design,scheme,")
    # --format wins over the suffix
    run_main(capsys, "bound", SRS, "-o", str(out_csv), "--format", "table")
    assert out_csv.read_text().startswith("design ")


def test_weights_and_sanitize_say_what_they_wrote(tmp_path: Path, capsys) -> None:
    out = tmp_path / "w.csv"
    run = run_main(capsys, "weights", KMEANS, "-o", str(out))
    assert len(out.read_text().splitlines()) == 201  # header + 200 records
    assert run.stderr.endswith(f"wrote 200 rows to {out}\n")
    private = tmp_path / "private.csv"
    sample = str(EXAMPLES / "data" / "pws-sample.csv")
    run = run_main(capsys, "pws", "sanitize", sample, "-d", PWS, "--seed", "7", "-o", str(private))
    kept = len(private.read_text().splitlines()) - 1
    assert run.stderr.endswith(f"wrote {kept} rows to {private}\n")


def _chunks_then_fail(*_args, **_kwargs):
    yield '{\n  "ampcalc_version": "x",\n'
    raise RuntimeError("the writer failed midway")


def test_an_interrupted_write_keeps_the_previous_file(tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "sweep.json"
    out.write_text("previous result\n")
    monkeypatch.setattr("ampcalc.output.columns.sweep_json_chunks", _chunks_then_fail)
    args = ["sweep", SRS, "--vary", "mechanism.epsilon=0.5:2:4", "--json", "-o", str(out)]
    run = run_main(capsys, *args, expect=2)  # an internal error
    assert out.read_text() == "previous result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.json"]  # no temporary left
    assert "wrote" not in run.stderr


def test_an_interrupt_while_writing_keeps_the_previous_file(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from ampcalc.load.files import Interrupted

    def interrupted(*_a, **_k):
        yield "design,scheme\n"
        raise Interrupted(2)

    out = tmp_path / "sweep.csv"
    out.write_text("previous result\n")
    monkeypatch.setattr("ampcalc.cli.sweep._csv_chunks", interrupted)
    args = ["sweep", SRS, "--vary", "mechanism.epsilon=0.5:2:4", "--format", "csv"]
    run = run_main(capsys, *args, "-o", str(out), expect=130)
    assert out.read_text() == "previous result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.csv"]
    assert "interrupted by SIGINT" in run.stderr


def test_output_cannot_overwrite_the_design(tmp_path: Path, capsys) -> None:
    design = tmp_path / "d.yaml"
    design.write_text(Path(SRS).read_text())
    run = run_main(capsys, "bound", str(design), "-o", str(design), expect=2)
    assert "is an input of this run" in run.stderr
    assert design.read_text() == Path(SRS).read_text()


# ---- 2. progress ----


@pytest.mark.slow
def test_budget_reports_progress_through_its_callback() -> None:
    from ampcalc.analyses import budget

    led = budget.load_ledger(str(ROOT / "examples" / "budget" / "year.yaml"))
    calls: list[tuple[int, int]] = []
    payload = budget.run(led, lambda done, total: calls.append((done, total)))
    assert calls[-1] == (9, 9)  # three entries: their bounds, then two compositions
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert payload["total"]["upper"] == budget.run(led)["total"]["upper"]


def test_verify_reports_each_instance_solved(tmp_path: Path) -> None:
    from ampcalc.api import verify_design
    from ampcalc.designs.document import load_designs

    f = tmp_path / "g.yaml"
    f.write_text((EXAMPLES / "group-verify-tiny.yaml").read_text())
    calls: list[tuple[int, int]] = []
    d = load_designs(str(f))[0]
    row = verify_design(d, "all", 5000, None, lambda done, total: calls.append((done, total)))
    assert row["status"] == "PASS"
    assert calls and calls[-1][0] == calls[-1][1] and calls[-1][1] >= 1


def test_progress_bar_only_on_a_terminal(capsys, monkeypatch) -> None:
    from ampcalc.cli import conventions

    with conventions.progress_bar("work", 3) as progress:
        assert progress is None  # stderr is captured, not a terminal
    monkeypatch.setattr(conventions, "progress_enabled", lambda: True)
    with conventions.progress_bar("work", 3) as progress:
        assert progress is not None
        progress(3, 3)


def test_sweep_draws_its_bar_on_a_terminal(capsys, monkeypatch) -> None:
    from ampcalc.cli import conventions

    seen: list[tuple[int, int]] = []
    real = conventions.progress_bar

    def spy(description: str, total: int | None = None):
        assert description == "sweeping" and total == 25
        return _Recorder(seen)

    monkeypatch.setattr("ampcalc.cli.sweep.progress_bar", spy)
    run_main(capsys, "sweep", SRS, "--vary", "sampling.sample=10:100:25", "--format", "csv")
    assert seen and seen[-1] == (25, 25)
    assert real is conventions.progress_bar


class _Recorder:
    def __init__(self, seen: list[tuple[int, int]]) -> None:
        self.seen = seen

    def __enter__(self):
        return lambda done, total: self.seen.append((done, total))

    def __exit__(self, *exc) -> None:
        return None


def test_verify_refuses_beyond_limit_with_a_time_estimate(tmp_path: Path, capsys) -> None:
    from ampcalc.schemes.exact import duration, estimated_log10_seconds

    f = tmp_path / "mid.yaml"
    f.write_text(
        "name: mid\n"
        "mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "sampling: {scheme: srswr, population: 12, sample: 5}\n"
    )
    # C(12 + 1 + 5 - 1, 5) = 6188 distinct samples: 1 s + 1e-6 s · 6188² ≈ 39.3 s
    assert duration(estimated_log10_seconds(__import__("math").log10(6188))) == "about 39 s"
    # not attempted: INCONCLUSIVE (exit 0, nothing found wrong), with the estimate and the
    # way to run it anyway, said at the design's place
    run = run_main(capsys, "verify", str(f))
    assert run.stdout.startswith("INCONCLUSIVE mid (srswr)")
    (line,) = run.stderr.splitlines()
    assert line.startswith(f"{f}:1:1: mid: INCONCLUSIVE: too large to verify:")
    assert "6,188 distinct samples" in line and "an exact solve would take about 39 s" in line
    assert line.endswith("raise --limit (now 5000) to run it anyway")
    big = run_main(capsys, "verify", SRS).stderr
    assert "about 10^241 distinct samples" in big and "about 10^470 years" in big


def test_duration_words() -> None:
    from ampcalc.schemes.exact import duration

    assert duration(0.0) == "about 1 s"
    assert duration(__import__("math").log10(90 * 60)) == "about 1.5 h"
    assert duration(__import__("math").log10(3 * 86400)) == "about 3 days"


# ---- 3. one error style ----


def test_bad_option_value_is_one_line_without_usage(capsys) -> None:
    run = run_main(capsys, "bound", SRS, "--epsilon", "abc", expect=2)
    assert run.stdout == ""
    (line,) = run.stderr.splitlines()
    assert line.startswith("ampcalc: error: Invalid value for '--epsilon'")
    assert "Usage:" not in run.stderr and "Try " not in run.stderr
    run = run_main(capsys, "bound", "--no-such-option", expect=2)
    assert run.stderr == "ampcalc: error: No such option: --no-such-option\n"


def test_json_errors_are_also_a_document_on_stdout(tmp_path: Path, capsys) -> None:
    run = run_main(capsys, "bound", SRS, "--epsilon", "abc", "--json", expect=2)
    err = json.loads(run.stdout)["error"]
    assert err["kind"] == "usage" and err["field"] == "--epsilon"
    assert err["file"] is None and "Invalid value" in err["message"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(Path(SRS).read_text().replace("  sample: 100", "  sampel: 100"))
    run = run_main(capsys, "bound", str(bad), "--format", "json", expect=2)
    err = json.loads(run.stdout)["error"]
    assert (err["kind"], err["file"], err["line"], err["column"], err["field"]) == (
        "input",
        str(bad),
        10,
        3,
        "sampling.sampel",
    )
    assert run.stderr.startswith(f"{bad}:10:3: sampling.sampel: unknown key")
    run = run_main(capsys, "check", SRS, "--json", expect=2)  # no --max-epsilon
    assert json.loads(run.stdout)["error"]["kind"] == "usage"
    assert run.stderr.startswith("ampcalc: error: ")


def test_internal_error_json(capsys, monkeypatch) -> None:
    def boom(*a, **k):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr("ampcalc.engine.bound", boom)
    run = run_main(capsys, "bound", SRS, "--json", expect=2)
    assert json.loads(run.stdout)["error"]["kind"] == "internal"
    assert run.stderr.startswith("ampcalc: error: internal error, please report")


def test_failed_condition_is_said_once_at_its_design(mixed: Path, capsys) -> None:
    """On stderr once, at the design's place in the file; a bound or invert table also
    says it once under the refused design, so that the table alone (a file, a pipe)
    reads whole."""
    for cmd in (["bound"], ["invert", "-t", "1"], ["validate"], ["compare", "-t", "1"]):
        run = run_main(capsys, *cmd, str(mixed), expect=2)
        assert run.stderr.count("needs M's add-remove ε") == 1, cmd
        assert run.stderr.startswith(f"{mixed}:5:5: designs[1]: refused: Poisson"), cmd
        table = " ".join(run.stdout.split())  # the reason folds over lines
        assert table.count("needs M's add-remove ε") == (cmd[0] in ("bound", "invert")), cmd
        if cmd[0] in ("bound", "invert"):
            assert "refused:\n  - error: Poisson amplification" in run.stdout, cmd


# ---- 4. --help ----


def _all_commands() -> list[tuple[list[str], Any]]:
    root = typer.main.get_command(app)
    out: list[tuple[list[str], Any]] = [([], root)]
    stack = [([], root)]
    while stack:
        path, cmd = stack.pop()
        if not isinstance(cmd, TyperGroup):
            continue
        ctx = typer.Context(cmd)
        for name in cmd.list_commands(ctx):  # the lazily built command line, all of it
            sub = cmd.get_command(ctx, name)
            assert sub is not None, name
            out.append(([*path, name], sub))
            stack.append(([*path, name], sub))
    return out


@pytest.mark.parametrize("path", [p for p, _ in _all_commands()], ids=" ".join)
def test_help_at_80_columns(path: list[str]) -> None:
    runner = CliRunner()
    res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert res.exit_code == 0, res.output
    text = res.output
    assert "<bool>" not in text
    assert "…" not in text  # nothing cut short
    assert max(len(line) for line in text.splitlines()) <= 80
    cmd = dict((tuple(p), c) for p, c in _all_commands())[tuple(path)]
    epilog = cmd.epilog or ""
    assert epilog.startswith("Example"), path
    for line in epilog.splitlines():
        if line.strip():
            assert line.rstrip() in text, (path, line)  # the example, whole on its line
    examples = re.findall(r"(?:^|\s)(ampcalc .*)$", epilog, re.M)
    assert examples and all(e.startswith(" ".join(["ampcalc", *path])) for e in examples)


def test_option_values_are_named_not_typed() -> None:
    """Every option that takes a value names it (FILE, FLOAT, TEXT, PATH=VALUE, FORMAT),
    never by a Python type (``<str>``, ``<list[str]>``); a choice's help lists its
    choices."""
    for path, cmd in _all_commands():
        for param in cmd.params:
            if not isinstance(param, TyperOption) or param.is_flag:
                continue
            assert param.metavar and re.fullmatch(r"[A-Z][A-Z_]*(=[A-Z]+)?", param.metavar), (
                path,
                param.opts,
                param.metavar,
            )
            choices = getattr(getattr(param, "type_descriptor", None), "choices", None)
            if choices:
                assert param.metavar == max(param.opts, key=len)[2:].upper().replace("-", "_")
                for choice in choices:
                    assert choice.value in (param.help or ""), (path, param.opts, choice)
    runner = CliRunner()
    for path in (["bound"], ["sweep"], ["verify"], ["budget"]):
        text = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}).output
        # arguments too: DESIGN names the value, with no "<list[str]>" beside it
        assert not re.search(r"<(str|float|int|list|table)", text), path
        assert "--epsilon" not in text or re.search(r"--epsilon +FLOAT ", text)


def test_sweep_help_is_readable_at_80_columns() -> None:
    text = CliRunner().invoke(app, ["sweep", "--help"], env={"COLUMNS": "80"}).output
    row = next(line for line in text.splitlines() if "--target-delta" in line)
    assert len(row) == 80
    assert 80 - row.index("Target δ′") - 2 >= 30  # the help column (it was 24)
    assert re.search(r"--vary +PATH=SPEC ", text) and re.search(r"--plot +FILE ", text)
    assert "pip install 'ampcalc[plot]'" in " ".join(text.replace("│", "").split())


def test_help_flags_and_metavars() -> None:
    for path, cmd in _all_commands():
        for param in cmd.params:
            opts = [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
            assert "-v" not in opts, path  # reserved for a verbose flag
            if isinstance(param, TyperArgument) and param.name in ("design", "designs"):
                assert param.metavar == "DESIGN", path
            if isinstance(param, TyperOption) and param.name == "design":
                assert param.metavar == "DESIGN", path
            if "--target" in opts:  # one spelling of the same flag on every command
                assert "-t" in opts, path
    runner = CliRunner()
    res = runner.invoke(app, ["-V"])
    assert res.exit_code == 0 and res.output.startswith("ampcalc ")
    usage = runner.invoke(app, ["bound", "--help"], env={"COLUMNS": "80"}).output
    assert "ampcalc bound [OPTIONS] [DESIGN]..." in usage


# ---- 5. several design files ----


def test_bound_over_several_files(mixed: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # wide enough that no column folds
    one = run_main(capsys, "bound", SRS, "--json").json()
    assert isinstance(one, dict) and one["command"] == "bound"  # one file: as before
    run = run_main(capsys, "bound", SRS, POISSON, "--json")
    docs = json.loads(run.stdout)
    assert [d["file"] for d in docs] == [SRS, POISSON]
    assert docs[0]["results"] == one["results"]
    assert docs[1]["results"][0]["scheme"] == "poisson"
    # the worst exit code over the files; the good file is still computed
    run = run_main(capsys, "bound", SRS, str(mixed), expect=2)
    assert "1% secret simple random sample" in run.stdout and "refused" in run.stdout
    table = run.stdout.split("\n\n")[0].splitlines()
    assert len(table) == 2 + 3  # header, rule, one row per design of both files
    gate = run_main(capsys, "bound", SRS, POISSON, "--fail-above", "0.017", expect=1)
    assert "gate failed" in gate.stderr


def test_an_unreadable_file_among_several(tmp_path: Path, capsys) -> None:
    missing = str(tmp_path / "missing.yaml")
    run = run_main(capsys, "validate", SRS, missing, "--json", expect=2)
    docs = json.loads(run.stdout)
    assert docs[0]["results"][0]["valid"] is True
    assert docs[1]["file"] == missing and docs[1]["error"]["file"] == missing
    assert "no such file" in docs[1]["error"]["message"]
    csv_run = run_main(capsys, "invert", SRS, POISSON, "-t", "1", "--format", "csv")
    lines = csv_run.stdout.splitlines()
    assert lines[0].startswith("file,design,") and len(lines) == 3


# ---- 6. invert on target-calibrated designs ----


def test_invert_builds_pws_for_the_target(capsys) -> None:
    r = run_main(capsys, "invert", PWS, "--target", "0.5", "--json").json()["results"][0]
    assert r["target"] == {"epsilon_prime": 0.5, "delta_prime": 0.001}
    assert any("(ε, δ) = (0.5, 0.001)" in w for w in r["warnings"] + r["notes"])
    r = run_main(capsys, "invert", PWS, "-t", "0.5", "--target-delta", "1e-4", "--json").json()
    remarks = r["results"][0]["warnings"] + r["results"][0]["notes"]
    assert any("(0.5, 0.0001)" in w for w in remarks)
    run = run_main(capsys, "invert", PWS, "--target-delta", "0", expect=2)
    assert "δ′ in (0, 1]" in run.stderr


def test_the_api_rebuilds_a_calibrated_design_as_the_cli_does(capsys) -> None:
    # one path: `ampcalc invert --target` and `api.invert(design, target)` give one answer
    import dataclasses

    from ampcalc import api
    from ampcalc.model.design import Target
    from ampcalc.model.errors import DesignError

    d = api.load_design(PWS)
    built = dataclasses.replace(d, target=Target(epsilon_prime=0.5, delta_prime=0.001))
    assert api.invert(d, 0.5).to_dict() == api.invert(built, 0.5).to_dict()
    cli = run_main(capsys, "invert", PWS, "-t", "0.5", "--json").json()["results"][0]
    assert cli == json.loads(json.dumps(api.invert(d, 0.5).to_dict()))
    with pytest.raises(DesignError, match=r"target_delta"):
        api.invert(d, 0.5, 0.0)


def test_invert_recalibrates_privacy_constrained_importance(capsys) -> None:
    # q*(x) = 1/w*(x) is built so every record's loss is at most ε* (003 Theorem 10):
    # built for ε* = T, the certified ε at target T is T itself
    own = run_main(capsys, "invert", LAPLACE, "--json").json()["results"][0]
    assert own["epsilon"]["certified"] == 1.0
    r = run_main(capsys, "invert", LAPLACE, "-t", "2", "--json").json()["results"][0]
    assert r["target"]["epsilon_prime"] == 2.0 and r["epsilon"]["certified"] == 2.0
    # ε* = 0.5 is infeasible for radius 3 (sup ε(1, x) = 3/4 · ... = 0.75): refused, exit 2
    run = run_main(capsys, "invert", LAPLACE, "-t", "0.5", expect=2)
    assert "ε* = 0.5" in run.stderr and "infeasible" in run.stderr


# ---- 7. README ----


def test_readme_ci_snippet_installs_what_exists() -> None:
    text = (ROOT / "README.md").read_text()
    assert not re.search(r"pip install ampcalc\s*$", text, re.M)
    assert 'pip install "git+<repo-url>@<tag-or-commit>"' in text
    assert os.path.exists(ROOT / "pyproject.toml")  # `pip install .` installs this checkout


def test_record_files_report_the_records_read(capsys, monkeypatch) -> None:
    from ampcalc.designs.document import load_designs
    from ampcalc.load.progress import reading_progress

    calls: list[tuple[int, int]] = []
    with reading_progress(lambda done, total: calls.append((done, total))):
        load_designs(KMEANS)
    assert calls == [(200, 0)]  # one chunk of 200 records; the total is not known ahead
    # the command line draws nothing for a file that fits one chunk off a terminal
    run_main(capsys, "weights", KMEANS, "-o", os.devnull)


def test_lazy_bar_starts_only_for_large_work(monkeypatch) -> None:
    from ampcalc.cli import conventions

    monkeypatch.setattr(conventions, "progress_enabled", lambda: True)
    started: list[str] = []
    real = conventions.progress_bar

    def spy(description: str, total: int | None = None):
        started.append(description)
        return real(description, total)

    monkeypatch.setattr(conventions, "progress_bar", spy)
    with conventions.lazy_progress_bar("reading records", start_at=1000) as progress:
        assert progress is not None
        progress(200, 0)
        assert started == []
        progress(1000, 0)
        progress(1500, 0)
    assert started == ["reading records"]


def test_budget_entry_condition_said_once_at_its_entry(tmp_path: Path, capsys) -> None:
    led = tmp_path / "led.yaml"
    led.write_text(
        "name: t\n"
        "target: {epsilon: 2.0, delta: 1e-6}\n"
        "neighbours: add-remove\n"
        "entries:\n"
        "  - name: good\n"
        "    design:\n"
        "      mechanism: {epsilon: 1, neighbours: both}\n"
        "      sampling: {scheme: poisson, rate: 0.1}\n"
        "  - name: bad\n"
        "    design:\n"
        "      mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "      sampling: {scheme: poisson, rate: 0.1}\n"
    )
    run = run_main(capsys, "budget", str(led))
    # on stderr once, at the entry's place; under the table once, for a table that is
    # read alone (a file, a pipe)
    assert run.stderr.count("needs M's add-remove ε") == 1
    assert run.stderr.startswith(f"{led}:10:5: entries[1].design: bad: Poisson")
    table = " ".join(run.stdout.split())
    assert table.count("needs M's add-remove ε") == 1 and "bad: no bound: " in table


@pytest.mark.slow
def test_invert_leaves_designs_not_built_for_their_target(capsys) -> None:
    # importance sampling with fixed probabilities: --target is only the inversion's target
    from ampcalc import engine
    from ampcalc.designs.document import load_designs

    (d,) = load_designs(KMEANS)
    direct = engine.invert(d, 0.5).to_dict()["epsilon"]
    r = run_main(capsys, "invert", KMEANS, "-t", "0.5", "--json").json()["results"][0]
    assert r["epsilon"] == direct


def test_error_documents_match_their_schema(tmp_path: Path, capsys) -> None:
    import jsonschema

    schema = json.loads((ROOT / "ampcalc" / "schema" / "error.schema.json").read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text("mechanism: {epsilon: 1}\nsampling: {scheme: srs, population: 10}\n")
    for args in (
        ["bound", SRS, "--epsilon", "abc", "--json"],
        ["bound", str(bad), "--json"],
        ["invert", SRS, "--json"],  # no target
        ["verify", SRS, "--json", "--limit", "0"],
    ):
        run = run_main(capsys, *args, expect=2)
        jsonschema.validate(json.loads(run.stdout), schema)
