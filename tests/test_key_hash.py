"""The sanitizer's key hash (`pws sanitize`, 004 Alg. 2 with a counter-based coin): the
hash of a key is FNV-1a over the key's own UTF-8 bytes and its byte length, then
SplitMix64 (docs/pws.md, docs/dask.md), whatever other keys are hashed with it.

The oracle is the pure-Python definition `key_hash_reference`, byte by byte. A key's
hash used to run over the zero padding up to the widest key of its chunk, so keys
shorter than that were sanitized differently with another `--chunk-size`, `--stream`
or the Dask engine; chunks of keys of one byte length were, and are, hashed the same.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from conftest import run_ampcalc

from ampcalc.math import pws as K
from ampcalc.math import pws_keys

ROOT = Path(__file__).resolve().parent.parent
DESIGN = str(ROOT / "examples/designs/pws.yaml")

MIXED = [
    "",
    "a",
    "a\x00",  # a trailing NUL is a byte of the key (a bytes array would drop it)
    "\x00b",
    "key1",
    "key10",
    "é",  # two UTF-8 bytes
    "€uro",
    "😀",
    "x" * 63,
    "y" * 64,
    "z" * 65,
    "w" * 1000,
    "v" * 5000,
]


def _ref(keys: list[str]) -> np.ndarray:
    return np.array([K.key_hash_reference(k) for k in keys], dtype=np.uint64)


def test_reference_values_pinned() -> None:
    # the definition itself (FNV-1a 64 offset 0xcbf29ce484222325, prime 0x100000001b3,
    # then the byte length, then SplitMix64), so it cannot drift with the vector code
    assert K.key_hash_reference("q00000") == 16990581586001897354
    assert K.key_hash_reference("key1") == 6840304825051637060
    assert K.key_hash_reference("") == 8194341491194388614
    assert K.key_hash_reference("é") == 15110936678977864554
    assert K.key_hash_reference("a\x00") == 9211192626950336528


@pytest.mark.parametrize("with_raw", [False, True])
def test_vectorised_hash_is_the_reference(with_raw: bool) -> None:
    rng = np.random.default_rng(5)
    alphabet = list("ab,x\x00é€😀")
    lengths = [0, 1, 2, 7, 63, 64, 65, 129, 300]
    keys = MIXED + [
        "".join(rng.choice(alphabet, size=int(rng.choice(lengths))).tolist()) for _ in range(400)
    ]
    raw = K.encode_keys(keys) if with_raw else None
    np.testing.assert_array_equal(K.key_hashes(keys, raw), _ref(keys))


def test_hash_does_not_depend_on_the_chunk() -> None:
    keys = [f"key{i}" for i in range(2000)] + ["é"] + MIXED
    whole = K.key_hashes(keys)
    np.testing.assert_array_equal(whole, _ref(keys))
    for size in (1, 7, 100, 999):
        parts = [K.key_hashes(keys[a : a + size]) for a in range(0, len(keys), size)]
        np.testing.assert_array_equal(np.concatenate(parts), whole)
        raws = [
            K.key_hashes(keys[a : a + size], K.encode_keys(keys[a : a + size]))
            for a in range(0, len(keys), size)
        ]
        np.testing.assert_array_equal(np.concatenate(raws), whole)
    # one long key in the same chunk changes no other key's hash (it used to: the
    # others were hashed over zero padding up to its width)
    short = [f"k{i}" for i in range(50)]
    alone = K.key_hashes(short)
    for long_key in ("L" * 20, "L" * 100, "L" * 10_000):
        with_long = K.key_hashes([*short, long_key], K.encode_keys([*short, long_key]))
        np.testing.assert_array_equal(with_long[:-1], alone)
        assert int(with_long[-1]) == K.key_hash_reference(long_key)
    u = K.key_uniforms(short, 3)
    np.testing.assert_array_equal(K.key_uniforms([*short, "L" * 100], 3)[:-1], u)


def test_keys_of_one_length_hash_as_before() -> None:
    """A chunk whose keys share one byte length had no padding: the hash of such keys
    (the example sample, `q00000`…) is unchanged, so their sanitized output is too."""
    keys = [f"q{i:05d}" for i in range(1000)]
    raw = K.encode_keys(keys)
    width = raw.dtype.itemsize
    mat = raw.view(np.uint8).reshape(len(keys), width).astype(np.uint64)
    h = np.full(len(keys), 0xCBF29CE484222325, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in range(width):  # the former code: every column of the chunk's width
            h = (h ^ mat[:, c]) * np.uint64(0x100000001B3)
        h = (h ^ np.uint64(width)) * np.uint64(0x100000001B3)
    np.testing.assert_array_equal(pws_keys._splitmix(h), K.key_hashes(keys, raw))


def test_sanitize_cli_same_rows_for_any_chunk_size(tmp_path: Path) -> None:
    keys = [f"key{i}" for i in range(300)] + ["L" * 500, "é1", "é22"]
    text = "key,frequency\n" + "".join(f"{k},{1 + i % 40}\n" for i, k in enumerate(keys))
    sample = tmp_path / "s.csv"
    sample.write_text(text, encoding="utf-8")

    def run(*args: str) -> list[list[str]]:
        out = run_ampcalc(
            "pws", "sanitize", str(sample), "--design", DESIGN, "--seed", "9", *args
        ).stdout
        return list(csv.reader(io.StringIO(out)))

    full = run("--frequencies")
    assert run("--frequencies", "--chunk-size", "1") == full
    assert run("--frequencies", "--chunk-size", "7") == full
    # the rows are those of the reference coins: sanitize with the reference hashes
    from ampcalc import api

    _, params = api.pws_design(api.load_designs(DESIGN))
    san = api.PwsSanitiser(params, True, extend=True)
    freqs = np.array([1 + i % 40 for i in range(len(keys))], dtype=np.int64)
    kept, tokens = K.sanitize_keys(keys, freqs, 9, p=san.p, rows=san.rows, hashes=_ref(keys))
    assert tokens is not None
    want = [[keys[i], str(int(tokens[i]))] for i in np.flatnonzero(kept).tolist()]
    assert full == [["key", "frequency"], *want] and 0 < len(want) < len(keys)
