"""`ampcalc bound` on pws designs and the `ampcalc pws` commands: output contracts,
reproducibility under chunking/streaming, and bad input (exact messages, exit 2)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_ampcalc

from ampcalc.math import pws as K

ROOT = Path(__file__).resolve().parent.parent
DESIGN = str(ROOT / "examples/designs/pws.yaml")
SAMPLE = str(ROOT / "examples/designs/data/pws-sample.csv")


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_bound_calibrated_json_and_csv_one_row() -> None:
    doc = run_ampcalc("bound", DESIGN, "--format", "json").json()
    r = doc["results"][0]
    assert r["verdict"] == "calibrated"
    assert r["epsilon_prime"]["upper"] == 0.1 and r["delta_prime"] == 0.001
    assert len(r["details"]["frequencies"]) == 1000
    assert r["details"]["first_frequency_half"] == 70
    out = run_ampcalc("bound", DESIGN, "--format", "csv").stdout
    assert len(out.strip().splitlines()) == 2  # header + one row per design


def test_table_csv_all_rows_and_verify() -> None:
    out = run_ampcalc("pws", "table", DESIGN, "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1000 and rows[0]["frequency"] == "1"
    q = K.inclusion_probabilities(1000, method="ppswor", threshold=0.01)
    pi = K.reporting_probabilities(q, 0.1, 1e-3)
    assert [float(r["pi"]) for r in rows] == pi.tolist()
    doc = run_ampcalc(
        "pws", "table", DESIGN, "--verify", "--max-frequency", "200", "--json"
    ).json()
    assert doc["verified"] is True and doc["max_hockey_stick"] <= 1e-3 * (1 + 1e-9)


def test_delta_zero_exit_2(tmp_path: Path) -> None:
    d = write(
        tmp_path,
        "d.yaml",
        "target: {epsilon_prime: 0.1, delta_prime: 0}\nsampling: {scheme: pws, method: none}\n",
    )
    r = run_ampcalc("bound", d, expect=2)
    assert "d.yaml:1" in r.stderr and "no key can ever be reported" in r.stderr


def test_negative_power_exit_2(tmp_path: Path) -> None:
    d = write(
        tmp_path,
        "d.yaml",
        "target: {epsilon_prime: 0.1, delta_prime: 0.01}\n"
        "sampling: {scheme: pws, method: priority, threshold: 0.1, weight_power: -1}\n",
    )
    r = run_ampcalc("bound", d, expect=2)
    assert "non-decreasing q" in r.stderr


def _sanitize(*args: str, sample: str = SAMPLE) -> list[list[str]]:
    out = run_ampcalc("pws", "sanitize", sample, "--design", DESIGN, *args).stdout
    return list(csv.reader(io.StringIO(out)))


def test_sanitize_reproducible_chunked_streamed(tmp_path: Path) -> None:
    full = _sanitize("--seed", "5", "--frequencies")
    assert full[0] == ["key", "frequency", "region"]
    assert _sanitize("--seed", "5", "--frequencies", "--chunk-size", "7") == full
    # streaming over a key-sorted file (the sample is sorted) gives the same rows
    assert _sanitize("--seed", "5", "--frequencies", "--stream", "--chunk-size", "50") == full
    # distributed: two halves sanitized apart give the same rows
    lines = Path(SAMPLE).read_text().splitlines()
    a = write(tmp_path, "a.csv", "\n".join(lines[:300]) + "\n")
    b = write(tmp_path, "b.csv", "\n".join([lines[0], *lines[300:]]) + "\n")
    parts = _sanitize("--seed", "5", "--frequencies", sample=a)
    parts += _sanitize("--seed", "5", "--frequencies", sample=b)[1:]
    assert parts == full
    assert _sanitize("--seed", "6", "--frequencies") != full
    keys_only = _sanitize("--seed", "5")
    assert keys_only[0] == ["key", "region"]
    assert [r[0] for r in keys_only[1:]] == [r[0] for r in full[1:]]  # same coin per key


def test_sanitize_tokens_bounded_by_frequency() -> None:
    freq = {r[0]: int(r[1]) for r in csv.reader(open(SAMPLE)) if r[0] != "key"}
    for key, j, _ in _sanitize("--seed", "1", "--frequencies")[1:]:
        assert 1 <= int(j) <= freq[key]


@pytest.mark.parametrize(
    "text,msg",
    [
        ("key,frequency\na,3\nb,0\n", "s.csv:3: frequency '0' is not a whole number >= 1"),
        ("key,frequency\na,3\nb,-2\n", "s.csv:3: frequency '-2' is not a whole number >= 1"),
        ("key,frequency\na,2.5\n", "s.csv:2: frequency '2.5' is not a whole number >= 1"),
        ("key,frequency\na,3\nb,4\na,5\n", "s.csv:4: duplicate key 'a' (first on line 2)"),
        ("key,count\na,3\n", "s.csv:1: expected a header with columns `key` and `frequency`"),
    ],
)
def test_sanitize_bad_rows(tmp_path: Path, text: str, msg: str) -> None:
    s = write(tmp_path, "s.csv", text)
    r = run_ampcalc("pws", "sanitize", s, "--design", DESIGN, "--seed", "1", expect=2)
    assert msg in r.stderr


def test_sanitize_stream_out_of_order(tmp_path: Path) -> None:
    s = write(tmp_path, "s.csv", "key,frequency\na,3\nb,4\na,5\n")
    r = run_ampcalc("pws", "sanitize", s, "--design", DESIGN, "--seed", "1", "--stream", expect=2)
    assert "s.csv:4: key 'a' comes after key 'b' of line 3" in r.stderr


def test_frequency_above_table_extends_or_refuses(tmp_path: Path) -> None:
    d = write(
        tmp_path,
        "d.yaml",
        "target: {epsilon_prime: 0.01, delta_prime: 1.0e-6}\n"
        "sampling: {scheme: pws, method: none, max_frequency: 1000}\n",
    )
    s = write(tmp_path, "s.csv", "key,frequency\n" + "".join(f"k{i},1500\n" for i in range(400)))
    r = run_ampcalc("pws", "sanitize", s, "--design", d, "--seed", "3", "--no-extend", expect=2)
    assert "frequency 1500 is above max_frequency = 1000" in r.stderr
    out = run_ampcalc("pws", "sanitize", s, "--design", d, "--seed", "3").stdout
    # π_1500 (not 1: the row is computed, spec: π first reaches 1 at i = 1705)
    pi = K.reporting_probabilities(np.ones(1500), 0.01, 1e-6)[-1]
    assert pi < 1
    kept = len(out.splitlines()) - 1
    assert abs(kept - 400 * pi) <= 4.5 * (400 * pi * (1 - pi)) ** 0.5


@pytest.mark.parametrize("frequencies", [False, True], ids=["keys", "frequencies"])
def test_absurd_frequencies_are_input_errors(tmp_path: Path, frequencies: bool) -> None:
    # 2⁶³ overflowed int64 ("internal error"); 2⁶³ − 1 sent the table extension astray
    flag = ["--frequencies"] if frequencies else []
    big = write(tmp_path, "b.csv", "key,frequency\na,3\nb,12345678901234567890\n")
    r = run_ampcalc("pws", "sanitize", big, "--design", DESIGN, "--seed", "1", *flag, expect=2)
    assert "b.csv:3: frequency '12345678901234567890' is above 9,223,372,036,854,775,807" in (
        r.stderr
    )
    top = write(tmp_path, "t.csv", "key,frequency\na,3\nb,9223372036854775807\n")
    r = run_ampcalc("pws", "sanitize", top, "--design", DESIGN, "--seed", "1", *flag, expect=2)
    assert "t.csv:3: largest frequency the sanitiser extends its table to" in r.stderr
    assert "is above the limit of 10,000,000" in r.stderr and "internal" not in r.stderr


def test_estimate_q1_matches_mle(tmp_path: Path) -> None:
    d = write(
        tmp_path,
        "d.yaml",
        "target: {epsilon_prime: 1, delta_prime: 0.001}\nsampling: {scheme: pws, method: none}\n",
    )
    p = write(tmp_path, "p.csv", "key,frequency,g\na,1,x\nb,8,x\nc,3,y\n")
    doc = json.loads(run_ampcalc("pws", "estimate", p, "--design", d, "--json").stdout)
    # spec B12: a_1 = 10.9781, a_3 = 9.45913, a_8 = 14
    assert doc["estimate"] == pytest.approx(10.9781 + 9.45913 + 14, rel=1e-5)
    sel = run_ampcalc("pws", "estimate", p, "--design", d, "--select", "g=x", "--json").json()
    assert sel["estimate"] == pytest.approx(10.9781 + 14, rel=1e-5)
    assert sel["reported_keys"] == 2
    f = {r["frequency"]: r for r in doc["frequencies"]}
    assert f[4]["bias"] == pytest.approx(-3.67543, rel=1e-5)
    assert f[7]["variance"] == pytest.approx(25.5111, rel=1e-5)


def test_estimate_needs_frequencies(tmp_path: Path) -> None:
    p = write(tmp_path, "p.csv", "key,region\na,eu\n")
    r = run_ampcalc("pws", "estimate", p, "--design", DESIGN, expect=2)
    assert "run `ampcalc pws sanitize --frequencies`" in r.stderr


def test_bound_table_shows_privacy_cost_rows() -> None:
    out = run_ampcalc("bound", DESIGN, "--details").stdout
    # 34 rows with π_i < q_i for ppswor τ = 0.01, (0.1, 0.001): i = 1..34 (details)
    assert "└ i=34 " in out and "└ i=35 " not in out
    assert "frequencies where privacy costs reporting = 1-34" in " ".join(out.split())  # wraps


def test_sanitize_verify_exact_keys_only() -> None:
    r = run_ampcalc("pws", "sanitize", SAMPLE, "--design", DESIGN, "--seed", "2", "--verify")
    assert "verified (exact)" in r.stderr


def test_sanitize_quoted_keys_blank_lines_and_width(tmp_path: Path) -> None:
    # quoted keys (with commas) and blank lines go through the csv module; same draws
    s = write(tmp_path, "s.csv", 'key,frequency\n"a,b",3000\nc,4000\n\nd,5000\n')
    out = run_ampcalc("pws", "sanitize", s, "--design", DESIGN, "--seed", "1").stdout
    assert list(csv.reader(io.StringIO(out))) == [["key"], ["a,b"], ["c"], ["d"]]  # p = 1
    bad = write(tmp_path, "b.csv", "key,frequency\na,3\nc\n")
    r = run_ampcalc("pws", "sanitize", bad, "--design", DESIGN, "--seed", "1", expect=2)
    assert "b.csv:3: expected 2 fields (key, frequency), got 1" in r.stderr


def test_invert_has_no_mechanism_epsilon_to_report() -> None:
    # the sanitizer is built for the design's target: no ε is certified or "impossible"
    proc = run_ampcalc("invert", DESIGN, "--target", "0.1", "--json")
    assert proc.code == 0
    r = proc.json()["results"][0]
    assert r["epsilon"] == {"certified": None, "impossible_above": None}
    assert any("no mechanism ε to choose" in w for w in r["warnings"])
    assert not any("every mechanism ε meets" in w for w in r["warnings"])
