"""A user's text in what a person reads: files that are not designs or not CSV files
are said so without quoting them, quotes are capped and escaped, and control and
bidirectional characters never reach the terminal raw (JSON and CSV keep them exact).

Every input is a real file written to ``tmp_path`` and run through the command line
in-process (``main``), stdout and stderr captured.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, run_in_process

from ampcalc.cli.conventions import MESSAGE_CHARS, say
from ampcalc.model.errors import QUOTE_CHARS, printable, quote

#: a fake secret, as an .env file or the environment would hold it
SECRET = "abcd" + "0123456789abcdef" * 5
#: a shadow-format line of 150 characters
SHADOW = "root:$6$" + "Zx9" * 41 + ":19000:0:99999:7:::"
PASSWD = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
NOT_A_DESIGN = "does not look like an ampcalc design"
NOT_CSV = "does not look like a CSV file of the expected shape"
#: a design name that would recolour the terminal, retitle it (OSC … BEL), overwrite
#: the line (CR) and reverse what follows (U+202E)
NAME = "a\x1b[31mRED\x1b]0;title\x07X\rY\u202eabc"
RAW = ("\x1b", "\x07", "\r", "\u202e")
POISSON = (
    "mechanism: {epsilon: 1.0, neighbours: add-remove}\nsampling: {scheme: poisson, rate: 0.1}\n"
)


# --------------------------------------------------------------------------------------
# The two functions
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\x1b", "\\x1b"),
        ("\x07", "\\x07"),
        ("\r", "\\r"),
        ("\x00", "\\x00"),
        ("\x7f", "\\x7f"),
        ("\x9b", "\\x9b"),  # C1 CSI
        ("\u202e", "\\u202e"),
        ("\u202a", "\\u202a"),
        ("\u2066", "\\u2066"),
        ("\u2069", "\\u2069"),
        ("\u200e", "\\u200e"),
        ("\u200f", "\\u200f"),
        ("\u061c", "\\u061c"),
        ("\u200b", "\\u200b"),  # zero-width space
        ("\u2028", "\\u2028"),
        ("\ufeff", "\\ufeff"),
    ],
)
def test_printable_escapes_controls_and_bidi(char: str, shown: str) -> None:
    assert printable(f"x{char}y") == f"x{shown}y"
    assert char not in quote(f"x{char}y")


def test_printable_leaves_printable_text_as_it_is() -> None:
    text = "design ε′ = 0.5 — Zoë, 東京, └ … \\x1b (a backslash, kept)"
    assert printable(text) is text
    assert printable("a\nb\x1b", keep="\n") == "a\nb\\x1b"
    assert printable("a\nb") == "a\\nb"


def test_quote_caps_and_notes_the_length() -> None:
    assert quote("abc") == "'abc'"
    assert quote("x" * QUOTE_CHARS) == repr("x" * QUOTE_CHARS)
    long = quote("y" * 5_000_000)
    assert long == f"{'y' * QUOTE_CHARS!r}… (5,000,000 characters)"
    assert quote(b"\x93NUMPY\x00") == repr("\\x93NUMPY\x00")
    assert "\x00" not in quote(b"\x93NUMPY\x00")


def test_say_escapes_and_caps(capsys: pytest.CaptureFixture[str]) -> None:
    say(f"d.yaml:3: {NAME}: no bound")
    err = capsys.readouterr().err
    assert err == "d.yaml:3: a\\x1b[31mRED\\x1b]0;title\\x07X\\rY\\u202eabc: no bound\n"
    say("z" * 10 * MESSAGE_CHARS)
    err = capsys.readouterr().err
    assert err == "z" * MESSAGE_CHARS + f"… ({10 * MESSAGE_CHARS:,} characters)\n"


# --------------------------------------------------------------------------------------
# Files that are not designs
# --------------------------------------------------------------------------------------


def _not_a_design(tmp_path: Path, name: str, content: str | bytes, *hidden: str) -> str:
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    for command in (["bound", str(p)], ["check", str(p), "--max-epsilon", "1"]):
        code, out, err = run_in_process([*command, "--json"], tmp_path)
        assert code == 2, err
        for h in hidden:
            assert h not in err and h not in out, (h, err, out)
        doc = json.loads(out)
        assert doc["error"]["file"] == str(p)
        assert len(err) < 500
    code, out, err = run_in_process(["validate", str(p)], tmp_path)
    assert code == 2 and out == ""
    return err


def test_shadow_line_is_not_quoted(tmp_path: Path) -> None:
    assert len(SHADOW) == 150
    err = _not_a_design(tmp_path, "shadow", SHADOW + "\n", SHADOW[:20], "Zx9Zx9")
    assert NOT_A_DESIGN in err and "none of its top-level keys is a design's" in err


def test_passwd_is_not_quoted(tmp_path: Path) -> None:
    err = _not_a_design(tmp_path, "passwd", PASSWD, "root:x", "/bin/bash", "daemon")
    assert err == (
        f"{tmp_path / 'passwd'}: {NOT_A_DESIGN} (expected a design: a YAML mapping with keys "
        "such as `mechanism:` and `sampling:`, or `designs:`); it reads as 2 lines of plain "
        "text\n"
    )


@pytest.mark.parametrize("text", [f"SECRET_TOKEN={SECRET}\n", f"SECRET_TOKEN={SECRET}\nB=1\n"])
def test_dotenv_secret_is_not_quoted(tmp_path: Path, text: str) -> None:
    err = _not_a_design(tmp_path, ".env", text, "SECRET_TOKEN", SECRET[:8])
    assert NOT_A_DESIGN in err and "plain text" in err


def test_dotenv_in_yaml_form_is_not_quoted(tmp_path: Path) -> None:
    err = _not_a_design(tmp_path, "env.yaml", f"SECRET_TOKEN: {SECRET}\n", "SECRET", SECRET[:8])
    assert "none of its top-level keys is a design's" in err


def test_environ_is_a_binary_file(tmp_path: Path) -> None:
    data = f"PATH=/usr/bin\x00SECRET_TOKEN={SECRET}\x00HOME=/root\x00".encode()
    err = _not_a_design(tmp_path, "environ", data, "SECRET", SECRET[:8], "PATH=")
    assert "binary file" in err and "U+0000" in err


def test_npy_given_as_a_design(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(5.0))
    code, _, err = run_in_process(["bound", str(tmp_path / "a.npy")], tmp_path)
    assert code == 2 and "not UTF-8 text (byte 0x93 at offset 0)" in err
    assert "NUMPY" not in err and "descr" not in err


def test_scalar_and_list_top_levels(tmp_path: Path) -> None:
    for text, shape in [("42\n", "a number"), ("- 1\n- 2\n", "a list"), ("hello\n", "text")]:
        (tmp_path / "d.yaml").write_text(text)
        code, _, err = run_in_process(["bound", str(tmp_path / "d.yaml")], tmp_path)
        assert code == 2 and NOT_A_DESIGN in err and shape in err, err
    assert "hello" not in err


def test_a_typo_in_every_key_still_suggests_the_key(tmp_path: Path) -> None:
    """A design whose keys are all misspelt is a design with typos, not another file."""
    (tmp_path / "d.yaml").write_text(
        POISSON.replace("mechanism", "mechansim").replace("sampling", "samplng")
    )
    code, _, err = run_in_process(["bound", str(tmp_path / "d.yaml")], tmp_path)
    assert code == 2 and NOT_A_DESIGN not in err
    assert "unknown key in a design" in err and "did you mean" in err


def test_a_long_unknown_key_next_to_known_ones_is_quoted_capped(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(POISSON + SHADOW.replace(":::", "") + ": 1\n")
    code, _, err = run_in_process(["bound", str(tmp_path / "d.yaml")], tmp_path)
    assert code == 2 and "unknown key in a design" in err
    assert SHADOW[: QUOTE_CHARS + 1] not in err and repr(SHADOW[:QUOTE_CHARS]) in err
    assert len(err) < 500


def test_five_million_character_scheme(tmp_path: Path) -> None:
    p = tmp_path / "d.yaml"
    p.write_text("mechanism: {epsilon: 1}\nsampling: {scheme: " + "s" * 5_000_000 + "}\n")
    code, out, err = run_in_process(["bound", str(p), "--json"], tmp_path)
    assert code == 2 and len(err) < 500 and len(out) < 1000
    assert "unknown scheme 'sss" in err and "… (5,000,000 characters)" in err
    assert json.loads(out)["error"]["field"] == "sampling.scheme"


# --------------------------------------------------------------------------------------
# Data files that are not CSV files of the expected shape
# --------------------------------------------------------------------------------------


def _environ(tmp_path: Path) -> Path:
    p = tmp_path / "environ"
    p.write_bytes(f"PATH=/usr/bin\x00SECRET_TOKEN={SECRET}\x00HOME=/root\x00".encode())
    return p


@pytest.mark.parametrize(
    ("sub", "header"), [("sanitize", "`key` and `frequency`"), ("estimate", "`key`")]
)
def test_pws_on_an_environ_file(tmp_path: Path, sub: str, header: str) -> None:
    p = _environ(tmp_path)
    args = ["pws", sub, str(p), "--design", str(EXAMPLES / "pws.yaml")]
    code, out, err = run_in_process(
        [*args, "--seed", "1"] if sub == "sanitize" else args, tmp_path
    )
    assert code == 2 and out == ""
    assert err == f"ampcalc: error: {p}:1: {NOT_CSV}: expected a header with columns {header}\n"


def test_npy_given_as_a_size_measure_csv(tmp_path: Path) -> None:
    np.save(tmp_path / "sizes.npy", np.array([3.0, 5.0, 8.0]))
    (tmp_path / "d.yaml").write_text(
        "mechanism: {epsilon: 1.0, neighbours: both}\n"
        "sampling: {scheme: pps, size_measures: {file: sizes.npy}, sample: 1}\n"
    )
    code, _, err = run_in_process(["bound", "d.yaml"], tmp_path)
    assert code == 2, err
    assert "sampling.size_measures.file" in err and f"no column 'size': the file {NOT_CSV}" in err
    for leak in ("NUMPY", "numpy", "descr", "fortran_order", "\x00", "\ufffd"):
        assert leak not in err


def test_a_csv_with_other_columns_still_lists_them(tmp_path: Path) -> None:
    """A real CSV header without the column: its columns are listed (short, escaped)."""
    (tmp_path / "sizes.csv").write_text("name,count\na,3\nb,5\n")
    (tmp_path / "d.yaml").write_text(
        "mechanism: {epsilon: 1.0, neighbours: both}\n"
        "sampling: {scheme: pps, size_measures: {file: sizes.csv}, sample: 1}\n"
    )
    code, _, err = run_in_process(["bound", "d.yaml"], tmp_path)
    assert code == 2 and "no column 'size' (columns: name, count)" in err


# --------------------------------------------------------------------------------------
# A hostile design name in every output
# --------------------------------------------------------------------------------------


@pytest.fixture
def named(tmp_path: Path) -> Path:
    p = tmp_path / "d.yaml"
    p.write_text(POISSON + f"name: {json.dumps(NAME)}\n")
    return p


@pytest.mark.parametrize(
    "args",
    [
        ["bound"],
        ["bound", "--details"],
        ["invert", "--target", "0.5"],
        ["validate"],
        ["check", "--max-epsilon", "1"],
        ["check", "--max-epsilon", "0.01"],
        ["compare", "--target", "0.5"],
    ],
)
def test_name_is_escaped_in_tables_and_lines(
    named: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the name's cell on one line
    code, out, err = run_in_process([args[0], str(named), *args[1:]], named.parent)
    assert code in (0, 1), err
    for raw in RAW:
        assert raw not in out and raw not in err, (raw, out, err)
    assert "a\\x1b[31mRED\\x1b]0;title\\x07X\\rY\\u202eabc" in out


def test_name_is_escaped_in_the_notes(named: Path) -> None:
    code, out, _ = run_in_process(["bound", str(named)], named.parent)
    assert code == 0
    assert "a\\x1b[31mRED\\x1b]0;title\\x07X\\rY\\u202eabc:\n  - basis:" in out


def test_name_is_escaped_in_a_gate_failure_on_stderr(named: Path) -> None:
    code, _, err = run_in_process(["bound", str(named), "--fail-above", "0.01"], named.parent)
    assert code == 1
    assert err.startswith("gate failed: a\\x1b[31mRED\\x1b]0;title\\x07X\\rY\\u202eabc: ")
    assert not any(raw in err for raw in RAW)


@pytest.mark.parametrize("command", ["bound", "validate", "check"])
def test_json_keeps_the_name_exactly(named: Path, command: str) -> None:
    extra = ["--max-epsilon", "1"] if command == "check" else []
    code, out, _ = run_in_process([command, str(named), *extra, "--json"], named.parent)
    assert code == 0
    assert json.loads(out)["results"][0]["name"] == NAME
    for raw in RAW:  # written as \u escapes: the same string, nothing for a terminal to act on
        assert raw not in out
    assert "\\u202e" in out and "\\u001b" in out


def test_csv_keeps_the_name_exactly_in_one_row(named: Path) -> None:
    code, out, _ = run_in_process(["bound", str(named), "--format", "csv"], named.parent)
    assert code == 0
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert len(rows) == 2 and rows[1][0] == NAME
