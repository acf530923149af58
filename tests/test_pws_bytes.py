"""``pws sanitize`` on byte ranges: each piece against what it replaced.

A chunk without quotes is split into byte ranges of its UTF-8 text
(``load.bytecols.split_bytes``) instead of one str per cell; keys are hashed from those
bytes (``math.pws.byte_key_hashes``), frequencies parsed eight digits to a word, kept
keys written by one gather, and duplicates found by one sort of all hashes at the end
(``load.keyset.KeyLog``). The oracles are the code paths they replaced: ``str.split``,
the pure-Python hash definition ``key_hash_reference``, ``int``, ``csv.writer`` and the
dict scan ``records.pws_files.check_duplicates``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from conftest import run_ampcalc
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_pws import duplicate_scan

from ampcalc.load.bytecols import ByteColumn, split_bytes
from ampcalc.load.keyset import KeyLog
from ampcalc.math import pws as K
from ampcalc.output.keys_csv import write_key_bytes
from ampcalc.records.pws_files import _digits, duplicate_message

ROOT = Path(__file__).resolve().parent.parent
DESIGN = str(ROOT / "examples/designs/pws.yaml")

#: cells without a comma, quote or line break (what reaches ``split_bytes``)
CELL = st.text(
    st.characters(blacklist_characters=',"\n\r', blacklist_categories=("Cs",)), max_size=12
)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.lists(CELL, min_size=1, max_size=4), min_size=1, max_size=8),
    width=st.integers(1, 4),
)
def test_split_bytes_gives_the_cells_str_split_gives(rows: list[list[str]], width: int) -> None:
    text = "\n".join(",".join(r) for r in rows)
    flat = text.replace("\n", ",").split(",")
    cols = split_bytes(text, width)
    if not text or "\n\n" in text or text.startswith("\n") or len(flat) != len(rows) * width:
        # blank lines (the csv module skips them) or a line of another width
        assert cols is None
        return
    assert cols is not None
    for c, col in enumerate(cols):
        assert col.tolist() == flat[c::width]
        data = col.buf.tobytes()
        got = [
            data[a:z].decode() for a, z in zip(col.start.tolist(), col.end.tolist(), strict=True)
        ]
        assert got == flat[c::width]


KEYS = [
    "",
    "a",
    "a\x00",
    "\x00",
    "é",
    "😀x",
    "k1",
    "k10",
    "x" * 64,
    "y" * 65,
    "z" * 300,
]


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.sampled_from(KEYS) | st.text(max_size=20), max_size=40))
def test_byte_hashes_are_the_reference_hash(keys: list[str]) -> None:
    try:
        col = ByteColumn.from_strings(keys)
    except UnicodeEncodeError:  # lone surrogates: not in any UTF-8 file
        return
    got = K.byte_key_hashes(col.buf, col.start, col.end)
    assert got.tolist() == [K.key_hash_reference(k) for k in keys]


def test_byte_hashes_of_one_length_and_of_a_chunk() -> None:
    # one byte length (the per-position loop without sorting) and keys inside a chunk
    keys = [f"k{i:08d}" for i in range(500)]
    text = "\n".join(f"{k},{i + 1}" for i, k in enumerate(keys))
    cols = split_bytes(text, 2)
    assert cols is not None
    got = K.byte_key_hashes(cols[0].buf, cols[0].start, cols[0].end)
    assert got.tolist() == [K.key_hash_reference(k) for k in keys]


def _int_or_none(cells: list[str]) -> list[int] | None:
    try:
        v = [int(c) for c in cells]
    except ValueError:
        return None
    return v if min(v) >= 1 else None


@settings(max_examples=200, deadline=None)
@given(
    cells=st.lists(
        st.text("0123456789", min_size=0, max_size=17) | st.text("0123456789 +-_.a٣é", max_size=6),
        min_size=1,
        max_size=8,
    )
)
def test_digit_words_read_what_int_reads(cells: list[str]) -> None:
    got = _digits(ByteColumn.from_strings(cells))
    if got is not None:
        assert got.dtype == np.int64 and got.tolist() == _int_or_none(cells)
    else:
        # refused: some cell is not 1..16 ASCII digits or a value is 0 (int decides)
        assert not all(c.isascii() and c.isdigit() and 1 <= len(c) <= 16 for c in cells) or (
            _int_or_none(cells) is None
        )


def test_digit_words_pinned() -> None:
    cells = ["1", "007", "12345678", "123456789", "9999999999999999", "10000"]
    assert _digits(ByteColumn.from_strings(cells)).tolist() == [
        1,
        7,
        12345678,
        123456789,
        9999999999999999,
        10000,
    ]
    assert _digits(ByteColumn.from_strings(["1", "0"])) is None
    assert _digits(ByteColumn.from_strings(["12345678901234567"])) is None  # 17 digits


@settings(max_examples=150, deadline=None)
@given(
    chunks=st.lists(
        st.lists(st.sampled_from(["a", "b", "a\x00", "", "é", "k1", "x" * 80]), max_size=12),
        max_size=4,
    ),
    collide=st.booleans(),
)
def test_key_log_reports_the_dict_scan_s_duplicate(chunks: list[list[str]], collide: bool) -> None:
    log = KeyLog()
    line = 2
    for keys in chunks:
        col = ByteColumn.from_strings(keys)
        h = K.byte_key_hashes(col.buf, col.start, col.end)
        if collide:  # every key one hash: the bytes decide
            h = np.full(len(keys), 7, dtype=np.uint64)
        log.add(h, col.buf, col.start, col.end, range(line, line + len(keys)))
        line += len(keys)
    dup = log.first()
    got = None if dup is None else duplicate_message("s.csv", *dup)
    assert got == duplicate_scan(chunks)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(CELL, min_size=1, max_size=20),
    data=st.data(),
    frequencies=st.booleans(),
)
def test_written_bytes_are_what_csv_writer_writes(keys, data, frequencies) -> None:
    text = "\n".join(f"{k},1" for k in keys)
    cols = split_bytes(text, 2)
    assert cols is not None
    idx = np.array(sorted(data.draw(st.sets(st.integers(0, len(keys) - 1)))), dtype=np.int64)
    tokens = np.array(
        data.draw(st.lists(st.integers(0, 10**12), min_size=len(keys), max_size=len(keys)))
    )
    got = io.StringIO()
    written = write_key_bytes(got, cols[0], idx, tokens if frequencies else None)
    want = io.StringIO()
    rows = [[keys[i], *([int(tokens[i])] if frequencies else [])] for i in idx.tolist()]
    csv.writer(want, lineterminator="\n").writerows(rows)
    if written:
        assert got.getvalue() == want.getvalue()
    else:  # left to csv.writer: an empty kept key
        assert got.getvalue() == "" and any(keys[i] == "" for i in idx.tolist())


def _sample(tmp_path: Path, body: str) -> str:
    p = tmp_path / "s.csv"
    p.write_text("key,frequency\n" + body)
    return str(p)


# ``--chunk-size 1``: chunks of 24 characters (lines 2-4, 5-7, ... of these rows)
ROWS = "".join(f"k{i:04d},{i % 9 + 1}\n" for i in range(30))


@pytest.mark.parametrize(
    "body,chunked,whole",
    [
        # a duplicate in an early chunk wins over a bad frequency in a later one; in one
        # chunk the frequencies are read first
        (
            ROWS.replace("k0004,5", "k0001,5") + "x,abc\n",
            "s.csv:6: duplicate key 'k0001' (first on line 3)",
            "s.csv:32: frequency 'abc' is not a whole",
        ),
        # a bad frequency in an early chunk wins over a later duplicate
        (ROWS.replace("k0001,2", "k0001,zz") + "k0020,1\n", "s.csv:3: frequency 'zz'", None),
        # a duplicate of an earlier chunk, a bad frequency in the repeat's chunk
        (ROWS.replace("k0003,4", "k0002,x"), "s.csv:5: frequency 'x' is not a whole", None),
        # the first repeat in file order, with the line of its first occurrence
        (ROWS + "k0025,1\nk0007,1\n", "s.csv:32: duplicate key 'k0025' (first on line 27)", None),
    ],
    ids=["duplicate-then-bad", "bad-then-duplicate", "bad-in-repeat-chunk", "first-repeat"],
)
def test_errors_are_those_a_check_per_chunk_reports(
    tmp_path: Path, body: str, chunked: str, whole: str | None
) -> None:
    s = _sample(tmp_path, body)
    args = ("pws", "sanitize", s, "-d", DESIGN, "--seed", "1")
    assert chunked in run_ampcalc(*args, "--chunk-size", "1", expect=2).stderr
    assert (whole or chunked) in run_ampcalc(*args, expect=2).stderr


@pytest.mark.slow
def test_output_is_the_same_for_any_chunking(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    keys = [
        "".join(rng.choice(list("abcé😀01"), rng.integers(0, 70))) + f"-{i}" for i in range(3000)
    ]
    freqs = rng.zipf(1.5, len(keys)).clip(1, 300)
    s = _sample(tmp_path, "".join(f"{k},{f}\n" for k, f in zip(keys, freqs.tolist(), strict=True)))
    whole = run_ampcalc("pws", "sanitize", s, "-d", DESIGN, "--seed", "4", "--frequencies").stdout
    small = run_ampcalc(
        "pws", "sanitize", s, "-d", DESIGN, "--seed", "4", "--frequencies", "--chunk-size", "9"
    ).stdout
    assert small == whole
    # the draws from the hash definition itself (the sanitizer's coins, 004 Alg. 2)
    from ampcalc import api

    _, params = api.pws_design(api.load_designs(Path(DESIGN)))
    san = api.PwsSanitiser(params, True, extend=True)
    san.ensure(int(freqs.max()), "test")
    h = np.array([K.key_hash_reference(k) for k in keys], dtype=np.uint64)
    kept, tokens = K.sanitize_hashes(h, freqs, 4, p=san.p, rows=san.rows)
    assert tokens is not None
    want = io.StringIO()
    w = csv.writer(want, lineterminator="\n")
    w.writerow(["key", "frequency"])
    w.writerows([keys[i], int(tokens[i])] for i in np.flatnonzero(kept).tolist())
    assert whole == want.getvalue()
