"""Duplicate keys through sorted hashes report what the dict of every key reported.

``ampcalc.keyset.KeySet`` replaced a dict of every key (with its line) in ``pws
sanitize``; the reference here is that dict scan (``records.pws_files.check_duplicates``). With
the hash forced to collide for every key, strings decide: ties are not duplicates.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_pws import duplicate_scan

from ampcalc.load import keyset
from ampcalc.records.pws_files import duplicate_message

KEYS = st.lists(
    st.sampled_from(["a", "b", "a\x00", "", "é", "k1", "k10", "x" * 80, "y" * 80]),
    max_size=30,
)


def _keyset(chunks: list[list[str]], collide: bool = False) -> str | None:
    ks = keyset.KeySet()
    line = 2
    for keys in chunks:
        lines = range(line, line + len(keys))
        # collide: every key gets the same hash, so the strings decide
        dup = ks.add(keys, lines, hashes=np.full(len(keys), 7, np.uint64) if collide else None)
        if dup is not None:
            i, first = dup

            return "s.csv:" + duplicate_message("", keys[i], lines[i], first)[1:]
        line += len(keys)
    return None


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(KEYS, max_size=4), collide=st.booleans())
def test_keyset_reports_the_dict_scan_s_duplicate(chunks, collide) -> None:
    want = duplicate_scan(chunks)
    got = _keyset(chunks, collide)
    assert got == (None if want is None else want.removeprefix("error: "))


def test_a_duplicate_in_a_later_chunk_names_both_lines() -> None:
    ks = keyset.KeySet()
    assert ks.add(["k1", "k2", "k3"], range(2, 5)) is None
    assert ks.add(["k4", "k2"], range(5, 7)) == (1, 3)


def test_grouped_tokens_equal_the_per_frequency_loop() -> None:
    """``pws_kernels.sanitize_keys`` groups kept keys by one argsort; the old loop selected
    each distinct frequency's keys with a mask. Same tokens, element for element."""
    import numpy as np
    from conftest import EXAMPLES

    from ampcalc import api
    from ampcalc.math import pws as K

    _, params = api.pws_design(api.load_designs(EXAMPLES / "pws.yaml"))
    san = api.PwsSanitiser(params, True, extend=True)
    rng = np.random.default_rng(3)
    freqs = rng.zipf(1.5, 5000).clip(1, san.n).astype(np.int64)
    keys = [f"key{i}" for i in range(freqs.size)]
    kept, tokens = K.sanitize_keys(keys, freqs, 11, p=san.p, rows=san.rows)
    u = K.key_uniforms(keys, 11)
    assert san.rows is not None
    want = np.zeros(freqs.size, dtype=np.int64)
    idx = np.flatnonzero(kept)
    for w in np.unique(freqs[idx]).tolist():
        sel = idx[freqs[idx] == w]
        b = san.rows.band[w] / san.rows.q[w - 1]
        cum = np.cumsum(b[::-1])
        k = np.minimum(np.searchsorted(cum, u[sel], side="right"), b.size - 1)
        want[sel] = san.rows.lo[w] + b.size - 1 - k
    assert tokens is not None and np.array_equal(tokens, want) and idx.size > 100
