"""Failures of the run's surroundings, not of its input: closed or full standard streams,
a NUL byte in a file name, a title matplotlib would parse as mathtext, a value JSON has
no number for, and one bad file among several given to ``check``.

Each is a clear message and the documented exit code (docs/cli-conventions.md), never
"internal error" or a traceback. The streams are real: closed descriptors (``>&-``,
``<&-``, ``2>&-``) and ``/dev/full`` in a shell running ``python -m ampcalc``.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import EXAMPLES, ROOT

SRS = str(EXAMPLES / "srswor.yaml")
COMPARE = str(EXAMPLES / "compare.yaml")
SCHEMA = json.loads((ROOT / "ampcalc" / "schema" / "result.schema.json").read_text())
ERROR_SCHEMA = json.loads((ROOT / "ampcalc" / "schema" / "error.schema.json").read_text())
FULL = Path("/dev/full")

needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full here")


def shell(args: list[str], redirect: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m ampcalc ARGS REDIRECT`` in bash (``>&-`` and the like are real)."""
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "ampcalc", *args])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("AMPCALC_DEBUG", None)
    return subprocess.run(
        ["bash", "-c", f"{command} {redirect}"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def one_line(stderr: str, *needles: str) -> None:
    """A one-line message naming what it should: no traceback, no internal error."""
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    for needle in needles:
        assert needle in stderr, (needle, stderr)


def strict_json(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise AssertionError(f"non-JSON number {token}")

    return json.loads(text, parse_constant=refuse)


# --------------------------------------------------------------------------------------
# standard output closed, full, or open for reading only
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_closed_stdout_is_exit_2_with_one_line(as_json: bool) -> None:
    proc = shell(["bound", SRS, *(["--json"] if as_json else [])], ">&-")
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, "ampcalc: error: cannot write standard output: it is closed")


def test_stdout_open_for_reading_only_is_exit_2() -> None:
    proc = shell(["bound", SRS], f"1< {shlex.quote(SRS)}")
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, "cannot write standard output: it is closed or not open for writing")


def test_closed_stdout_does_not_matter_with_output_file(tmp_path: Path) -> None:
    out = tmp_path / "bounds.csv"
    proc = shell(["bound", SRS, "-o", str(out)], ">&-")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("design,scheme,")
    assert proc.stderr == f"wrote 1 row to {out}\n"


@pytest.mark.parametrize(
    "args",
    [["-h"], ["--version"], ["schemes"], ["report", SRS, "-o", "-"]],
    ids=["help", "version", "schemes", "report"],
)
def test_closed_stdout_every_writer(args: list[str]) -> None:
    proc = shell(args, ">&-")
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, "cannot write standard output")


@needs_dev_full
@pytest.mark.parametrize(
    "args",
    [
        ["bound", SRS],
        ["bound", SRS, "--json"],
        ["sweep", SRS, "--vary", "mechanism.epsilon=0.1:2:50"],
        ["report", SRS, "-o", "-"],  # written by the command itself, not emit_chunks
        [
            "pws", "sanitize", str(EXAMPLES / "data" / "pws-sample.csv"),
            "--design", str(EXAMPLES / "pws.yaml"), "--seed", "1",
        ],
    ],
    ids=["table", "json", "sweep", "report", "pws-sanitize"],
)  # fmt: skip
def test_full_stdout_is_no_space_left(args: list[str]) -> None:
    proc = shell(args, "> /dev/full")
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, "ampcalc: error: cannot write standard output: no space left on device")


@needs_dev_full
def test_an_error_with_json_on_a_full_stdout_keeps_its_message_and_code() -> None:
    proc = shell(["bound", "missing.yaml", "--json"], "> /dev/full")
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, "missing.yaml: no such file")


@needs_dev_full
@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_output_file_on_a_full_device(as_json: bool) -> None:
    proc = shell(["bound", SRS, "-o", "/dev/full", *(["--json"] if as_json else [])], "")
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, "ampcalc: error: cannot write '/dev/full': no space left on device")
    if as_json:  # the error document, on the (working) standard output
        doc = strict_json(proc.stdout)
        jsonschema.validate(doc, ERROR_SCHEMA)
        assert doc["error"]["kind"] == "error"
        assert doc["error"]["message"] == "cannot write '/dev/full': no space left on device"


def test_a_failed_output_file_leaves_the_previous_one(tmp_path: Path) -> None:
    # `ulimit -f 1`: no file may grow past 1 KiB, so writing the 7 kB result fails
    # (EFBIG) in the middle, as a full disk would
    out = tmp_path / "bounds.json"
    out.write_text("previous\n")
    proc = shell(["bound", COMPARE, "-o", str(out)], "", cwd=tmp_path)
    assert proc.returncode == 0 and len(out.read_bytes()) > 2048, proc.stderr
    out.write_text("previous\n")
    command = " ".join(
        shlex.quote(a) for a in [sys.executable, "-m", "ampcalc", "bound", COMPARE, "-o", str(out)]
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        ["bash", "-c", f"ulimit -f 1; {command}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, f"cannot write '{out}': file too large")
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bounds.json"]  # no temporary file


# --------------------------------------------------------------------------------------
# standard input and standard error closed
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_closed_stdin_cannot_be_read(as_json: bool) -> None:
    proc = shell(["bound", "-", *(["--json"] if as_json else [])], "<&-")
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, "ampcalc: error: cannot read standard input: it is closed")
    if as_json:
        doc = strict_json(proc.stdout)
        jsonschema.validate(doc, ERROR_SCHEMA)
        assert doc["error"]["message"] == "cannot read standard input: it is closed"


def test_closed_stdin_for_a_pws_sample() -> None:
    args = ["pws", "sanitize", "-", "--design", str(EXAMPLES / "pws.yaml"), "--seed", "1"]
    proc = shell(args, "<&-")
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, "cannot read standard input: it is closed")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["bound", "missing.yaml"], 2),  # an error that cannot be printed: still 2
        (["bound", "missing.yaml", "--json"], 2),
        (["bound", SRS], 0),
        (["bound", SRS, "--fail-above", "0.001"], 1),  # the gate's line is lost, not its code
    ],
    ids=["error", "error-json", "ok", "gate"],
)
def test_closed_stderr_keeps_the_exit_code(args: list[str], code: int) -> None:
    proc = shell(args, "2>&-")
    assert proc.returncode == code
    if "--json" in args:  # the error is still on standard output
        assert strict_json(proc.stdout)["error"]["message"] == "no such file"


@needs_dev_full
def test_full_stderr_keeps_the_exit_code() -> None:
    assert shell(["bound", "missing.yaml"], "2> /dev/full").returncode == 2
    assert (
        shell(["bound", SRS, "--fail-above", "0.001"], "2> /dev/full > /dev/null").returncode == 1
    )


# --------------------------------------------------------------------------------------
# a NUL byte in a file name inside a design
# --------------------------------------------------------------------------------------

NUL_CASES = {
    "records": (
        "mechanism: {profile: laplace-sum, scale: 4.0}\n"
        'sampling: {scheme: importance, records: "six\\0.csv", '
        "probabilities: privacy-constrained, radius: 3.0}\n"
        "target: {epsilon_prime: 1.0}\n",
        "bound",
        "d.yaml:2:32: sampling.records: record file name ",
    ),
    "size_measures": (
        "mechanism: {epsilon: 1.0}\n"
        "sampling:\n"
        "  scheme: pps\n"
        "  sample: 2\n"
        '  size_measures: {file: "sizes\\0.csv"}\n',
        "bound",
        "d.yaml:5:19: sampling.size_measures.file: ",
    ),
    "ledger design": (
        "target: {epsilon: 2.0, delta: 1e-6}\n"
        "entries:\n"
        "  - name: a\n"
        '    design: "srswor\\0.yaml"\n',
        "budget",
        "d.yaml:4:5: entries[0].design: design file name 'srswor\\x00.yaml'",
    ),
}


@pytest.mark.parametrize("case", list(NUL_CASES))
def test_nul_byte_in_a_file_name_is_an_input_error(case: str, tmp_path: Path) -> None:
    text, command, place = NUL_CASES[case]
    (tmp_path / "d.yaml").write_text(text)
    proc = shell([command, "d.yaml"], "", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    one_line(proc.stderr, place, "contains a NUL byte; no file name can hold one")
    assert "\0" not in proc.stderr  # quoted escaped
    proc = shell([command, "d.yaml", "--json"], "", cwd=tmp_path)
    doc = strict_json(proc.stdout)
    jsonschema.validate(doc, ERROR_SCHEMA)
    assert doc["error"]["kind"] == "input"
    assert doc["error"]["file"] == "d.yaml"
    assert place.split(": ")[1] == doc["error"]["field"]


def test_nul_byte_in_a_path_given_to_the_api() -> None:
    from ampcalc import api
    from ampcalc.model.errors import DesignError

    with pytest.raises(DesignError, match=r"design file name 'a\\x00b\.yaml' contains a NUL"):
        api.load_designs("a\0b.yaml")


# --------------------------------------------------------------------------------------
# figure titles and labels are plain text, and short
# --------------------------------------------------------------------------------------

TITLES = ["$$", "$x^$", "$\\undefinedmacro$", "cost in $, or $5"]


@pytest.fixture(scope="module")
def small_sweep() -> Any:
    pytest.importorskip("matplotlib")
    from ampcalc.analyses import sweep as sw
    from ampcalc.designs.document import parse_yaml

    document = parse_yaml(Path(SRS).read_text())
    return sw.evaluate(document, [sw.parse_vary("mechanism.epsilon=0.1:100:5:log")])


@pytest.mark.parametrize("title", TITLES)
def test_titles_are_drawn_as_written(title: str, small_sweep: Any, tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from ampcalc.output.plot import draw, figure

    fig = draw(small_sweep, title=title, xlabel=title, ylabel=title, log_y=True)
    try:
        ax = fig.axes[0]
        for text in (ax.title, ax.xaxis.label, ax.yaxis.label):
            assert text.get_text() == title and not text.get_parse_math()
        fig.canvas.draw()  # mathtext would raise here ("$x^$") or typeset the text
        ticks = ax.get_yticklabels()
        assert ticks[0].get_text().startswith("$\\mathdefault{10^")
        assert all(t.get_parse_math() for t in ticks)  # the powers of ten stay mathtext
    finally:
        plt.close(fig)
    out = figure(small_sweep, tmp_path / "f.png", title=title)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_title_from_the_command_line(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "f.png"
    args = ["sweep", SRS, "--vary", "mechanism.epsilon=0.1:2:3", "--plot", str(png)]
    proc = shell([*args, "--title", "$x^$", "--xlabel", "$\\undefinedmacro$"], "> /dev/null")
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_long_titles_are_refused_before_the_sweep(tmp_path: Path) -> None:
    from ampcalc.model.limits import LIMITS
    from ampcalc.output.plot import check_labels

    cap = LIMITS["plot_text"].value
    assert cap == 200
    check_labels("x" * cap, "x" * cap, "x" * cap)  # at the cap: accepted
    png = tmp_path / "f.png"
    args = ["sweep", SRS, "--vary", "mechanism.epsilon=0.1:2:3", "--plot", str(png)]
    for option in ("--title", "--xlabel", "--ylabel"):
        proc = shell([*args, option, "x" * 100_000], "")
        assert proc.returncode == 2, proc.stderr
        one_line(
            proc.stderr,
            f"ampcalc: error: {option}: characters in a figure's title or axis label: "
            "100,000 is above the limit of 200",
        )
        assert proc.stdout == "" and not png.exists()


# --------------------------------------------------------------------------------------
# values JSON has no number for
# --------------------------------------------------------------------------------------


def test_infinite_epsilon_is_null_with_a_note(tmp_path: Path) -> None:
    # a Laplace scale of 5e-324 makes M's ε = 1/scale overflow to +inf
    design = tmp_path / "tiny.yaml"
    design.write_text(
        "name: tiny scale\n"
        "mechanism: {profile: laplace-sum, scale: 5e-324}\n"
        "sampling:\n"
        "  scheme: importance\n"
        f"  records: {EXAMPLES / 'data' / 'importance-six.csv'}\n"
        "  probabilities: privacy-constrained\n"
        "  radius: 3.0\n"
        "target: {epsilon_prime: 1.0}\n"
    )
    proc = shell(["bound", str(design), "--json"], "")
    assert proc.returncode == 2  # the design is outside Assumption 8 (said on stderr)
    one_line(proc.stderr, "Assumption 8")
    doc = strict_json(proc.stdout)
    jsonschema.validate(doc, SCHEMA)
    (r,) = doc["results"]
    assert r["epsilon"] is None
    assert r["notes"] == ["infinite, written as null (JSON has no infinity): epsilon = inf"]
    assert r["error"] and r["epsilon_prime"] == {"lower": None, "upper": None}


def test_every_non_finite_value_is_null_with_a_note() -> None:
    from ampcalc.output.render import envelope, render_json

    doc = envelope(
        "bound",
        "9.9",
        {
            "results": [
                {
                    "name": "a",
                    "epsilon": math.inf,
                    "epsilon_prime": {"lower": -math.inf, "upper": math.nan},
                    "notes": ["kept"],
                    "details": {"scale": math.inf, "rows": [{"x": 1.0}, {"x": math.nan}]},
                },
                {"name": "b", "epsilon": 1.0, "notes": []},
            ],
            "extra": [math.inf],
        },
    )
    out = strict_json(render_json(doc))
    a, b = out["results"]
    assert a["epsilon"] is None and a["epsilon_prime"] == {"lower": None, "upper": None}
    assert a["details"] == {"scale": None, "rows": [{"x": 1.0}, {"x": None}]}
    assert a["notes"] == [  # NaN is "no value" (null) everywhere, not worth a note
        "kept",
        "infinite, written as null (JSON has no infinity): epsilon = inf, "
        "epsilon_prime.lower = -inf, details.scale = inf",
    ]
    assert b == {"name": "b", "epsilon": 1.0, "notes": []}  # nothing to say
    assert out["extra"] == [None]  # no result around it: the document's own notes
    assert out["notes"] == ["infinite, written as null (JSON has no infinity): extra[0] = inf"]


# --------------------------------------------------------------------------------------
# check: one bad file among several
# --------------------------------------------------------------------------------------


def test_check_reports_every_file_and_the_bad_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("mechanism: {epsilon: 1}\nsampling: {scheme: nope}\n")
    args = ["check", SRS, str(bad), COMPARE, "--max-epsilon", "0.015"]
    proc = shell(args, "")
    assert proc.returncode == 2  # bad input outranks the failed gate (exit 1)
    # srswor.yaml's design fails the gate, and compare.yaml's four designs are checked
    assert [ln.split()[0] for ln in proc.stdout.splitlines()] == [
        "FAIL", "PASS", "PASS", "FAIL", "PASS",
    ]  # fmt: skip
    one_line(proc.stderr, f"{bad}:2:12: sampling.scheme: unknown scheme 'nope'")

    proc = shell([*args, "--json"], "")
    assert proc.returncode == 2
    docs = strict_json(proc.stdout)
    assert [d["file"] for d in docs] == [SRS, str(bad), COMPARE]
    first, error, last = docs
    for d in (first, last):
        jsonschema.validate({k: v for k, v in d.items() if k != "file"}, SCHEMA)
        assert d["command"] == "check"
        assert d["passed"] is all(r["passed"] for r in d["results"])
    assert first["passed"] is False and len(last["results"]) == 4
    jsonschema.validate({"error": error["error"]}, ERROR_SCHEMA)
    assert error["error"]["field"] == "sampling.scheme" and error["error"]["line"] == 2

    proc = shell([*args, "--format", "csv"], "")
    rows = proc.stdout.splitlines()
    assert rows[0].startswith("file,design,scheme,passed,")
    assert [r.split(",")[0] for r in rows[1:]] == [SRS] + [COMPARE] * 4


def test_check_of_good_files_only_is_the_gate() -> None:
    proc = shell(["check", SRS, COMPARE, "--max-epsilon", "1"], "")
    assert proc.returncode == 0 and proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 5
