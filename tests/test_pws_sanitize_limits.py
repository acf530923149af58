"""``pws sanitize`` at its limits: large frequencies (Algorithm 4's rows that repeat),
a duplicate key found before the rest of the input is read, a byte-order mark, a
sample with a header and no rows."""

from __future__ import annotations

import contextlib
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, ROOT, run_ampcalc

from ampcalc import api
from ampcalc.load.keyset import KeyLog
from ampcalc.math import pws as K

DESIGN = str(EXAMPLES / "pws.yaml")  # ppswor, τ = 0.01, (ε, δ) = (0.1, 0.001)
KEYS = [f"key-{i}" for i in range(300)]


# --- Algorithm 4's rows that repeat ---------------------------------------------------


@pytest.mark.parametrize(
    "method,tau,power,eps,delta",
    [
        ("ppswor", 0.01, 1.0, 0.1, 1e-3),  # the example: a fixed row
        ("ppswor", 0.01, 1.0, 1.0, 1e-6),  # a cycle of two rows
        ("priority", 0.02, 2.0, 2.0, 0.01),  # a cycle of two, q_i = 1 from i = 8
        ("none", 1.0, 1.0, 0.05, 1e-5),
        ("ppswor", 0.05, 0.5, 0.5, 1e-4),  # π_i changes to the end: no repeat
    ],
)
def test_repeated_rows_are_the_rows_computed_one_by_one(
    method: str, tau: float, power: float, eps: float, delta: float
) -> None:
    n = 5000
    q = K.inclusion_probabilities(n, method=method, threshold=tau, weight_power=power)
    pi = K.reporting_probabilities(q, eps, delta)
    every = K.frequency_rows(q, eps, delta, pi, repeats=False)
    rows = K.frequency_rows(q, eps, delta, pi)
    assert every.computed == n + 1
    if method == "ppswor" and power < 1:
        assert rows.computed == n + 1  # q_i < 1 throughout: nothing may repeat
    else:
        assert rows.computed < 5000 and rows.period in (1, 2)
    for i in range(n + 1):
        assert rows.zero[i] == every.zero[i]
        assert rows.lo[i] == every.lo[i]
        assert rows.band[i].tobytes() == every.band[i].tobytes()
    for w in (1, 17, n // 2, n - 1, n):
        assert rows.token_cdf(w).tobytes() == every.token_cdf(w).tobytes()
    assert K.dp_check(rows) == K.dp_check(every)


def _tokens(freq: int, seed: int = 5) -> np.ndarray:
    out = api.pws_sanitize(DESIGN, KEYS, [freq] * len(KEYS), seed, report_frequencies=True)
    assert out["keys"] == KEYS  # p_w = π_w/q_w = 1 where π_w = q_w = 1: every key kept
    return np.array(out["frequency"])


def test_frequency_one_million_is_frequency_ten_thousand_moved_up() -> None:
    # past the repeat, row w is row w − k moved up by k (a fixed row in this design): the
    # same uniform picks the same distance below w (Algorithm 4's rows, Cohen et al. 2021)
    start = time.process_time()
    big = _tokens(10**6)
    assert time.process_time() - start < 20  # was 19 s of one core alone for one key
    small = _tokens(10**4)
    assert np.array_equal(big - 10**6, small - 10**4)
    # the tokens follow row w's distribution: its mean, from the rows themselves
    q = K.inclusion_probabilities(20_000, method="ppswor", threshold=0.01)
    rows = K.frequency_rows(q, 0.1, 1e-3)
    band, lo = rows.band[10**4], rows.lo[10**4]
    mean = float(np.dot(band, np.arange(lo, lo + band.size))) / float(band.sum())
    sd = math.sqrt(float(np.dot(band, (np.arange(lo, lo + band.size) - mean) ** 2)))
    assert abs(small.mean() - mean) < 4 * sd / math.sqrt(len(KEYS))


@pytest.mark.slow
def test_frequency_ten_million_runs_in_seconds(tmp_path: Path) -> None:
    sample = tmp_path / "s.csv"
    sample.write_text("key,frequency\n" + "".join(f"{k},{10**7}\n" for k in KEYS))
    start = time.monotonic()
    run = run_ampcalc("pws", "sanitize", str(sample), "-d", DESIGN, "--seed", "5", "--frequencies")
    assert time.monotonic() - start < 60  # killed after 120 s at 2.1 GB before
    got = np.array([int(r.split(",")[1]) for r in run.stdout.split()[1:]])
    assert np.array_equal(got - 10**7, _tokens(10**4) - 10**4)


def test_rows_that_cannot_repeat_are_refused_before_they_are_computed(tmp_path: Path) -> None:
    # ppswor with f(i) = √i: q_i < 1 in floats up to i ≈ 1.4·10⁷, so π_i changes up to
    # the sample's largest frequency and every row must be computed: 2·10⁶ rows of
    # 2⌈L⌉ + 2 = 82 entries are above the limit of 10⁸
    sample = tmp_path / "s.csv"
    sample.write_text("key,frequency\na,3\nb,2000000\n")
    start = time.monotonic()
    run = run_ampcalc(
        "pws", "sanitize", str(sample), "-d", DESIGN, "--seed", "1", "--frequencies",
        "--set", "sampling.weight_power=0.5", expect=2,
    )  # fmt: skip
    assert time.monotonic() - start < 30
    assert f"{sample}:3: frequency 2,000,000 needs Algorithm 4's rows" in run.stderr
    assert "164,000,000 entries, above the limit of 100,000,000" in run.stderr
    # keys only: no rows of Algorithm 4, nothing to refuse
    run_ampcalc("pws", "sanitize", str(sample), "-d", DESIGN, "--seed", "1",
                "--set", "sampling.weight_power=0.5")  # fmt: skip


# --- duplicate keys -------------------------------------------------------------------


def test_key_log_reports_a_duplicate_at_the_chunk_that_holds_it() -> None:
    from ampcalc.load.bytecols import ByteColumn

    log = KeyLog()
    line = 2
    for keys, want in ((["a", "b"], None), (["c", "b", "a"], ("b", 5, 3))):
        col = ByteColumn.from_strings(keys)
        h = K.byte_key_hashes(col.buf, col.start, col.end)
        assert log.add(h, col.buf, col.start, col.end, range(line, line + len(keys))) == want
        line += len(keys)
    assert log.first() == ("b", 5, 3)


def test_a_stream_of_one_repeated_key_stops_at_once() -> None:
    """An endless stream: the command must stop at the repeat, long before its end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ampcalc", "pws", "sanitize", "-", "-d", DESIGN, "--seed", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stderr is not None
    block = b"key0000001,5\n" * 100_000  # 1.3 MB
    sent = 0
    try:
        proc.stdin.write(b"key,frequency\n")
        while sent < 3 * 10**9:
            proc.stdin.write(block)
            sent += len(block)
    except BrokenPipeError:
        pass
    err = proc.stderr.read().decode()
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()
    assert proc.wait(timeout=60) == 2
    assert sent < 100 * 10**6  # the whole stream was read before (300 MB: 3.9 GB, 40 s)
    assert "-:3: duplicate key 'key0000001' (first on line 2)" in err
    assert "Traceback" not in err


# --- byte-order mark, header only -----------------------------------------------------


def test_a_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    body = "key,frequency,region\na,3,eu\nb,40,us\nc,900,eu\n"
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text(body, encoding="utf-8")
    marked.write_text(body, encoding="utf-8-sig")
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    args = ("-d", DESIGN, "--seed", "3", "--frequencies")
    want = run_ampcalc("pws", "sanitize", str(plain), *args).stdout
    assert want.startswith("key,frequency,region\n") and "c," in want
    assert run_ampcalc("pws", "sanitize", str(marked), *args).stdout == want
    assert run_ampcalc("pws", "sanitize", "-", *args, stdin=marked.read_text()).stdout == want
    # pws estimate reads the sanitized file with the same reader
    out = tmp_path / "private.csv"
    out.write_text("\ufeff" + want, encoding="utf-8")
    run_ampcalc("pws", "estimate", str(out), "-d", DESIGN)


@pytest.mark.parametrize("frequencies", [False, True])
def test_a_header_only_sample_writes_the_header(tmp_path: Path, frequencies: bool) -> None:
    sample = tmp_path / "s.csv"
    sample.write_text("key,frequency,score,region\n")
    out = tmp_path / "o.csv"
    extra = ["--frequencies"] if frequencies else []
    run = run_ampcalc("pws", "sanitize", str(sample), "-d", DESIGN, "--seed", "1", "-o",
                      str(out), *extra)  # fmt: skip
    assert out.read_text() == ("key,frequency,region\n" if frequencies else "key,region\n")
    assert "sanitised 0 keys: 0 reported" in run.stderr
