"""``ampcalc sweep`` makes its output chunks in a thread ahead of the writes: the same
chunks in the same order, an error in its place, and the maker stops when the reader
does (a closed pipe)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from ampcalc.cli.sweep import _ahead


def test_the_same_chunks_in_order() -> None:
    chunks = [f"chunk {i}\n" for i in range(500)]
    got = _ahead(iter(chunks))
    assert got is not None
    assert list(got) == chunks
    assert _ahead(None) is None
    empty = _ahead(iter([]))
    assert empty is not None and list(empty) == []


def test_an_error_is_raised_in_its_place() -> None:
    def chunks() -> Iterator[str]:
        yield "a"
        yield "b"
        raise ValueError("made badly")

    got = _ahead(chunks())
    assert got is not None
    seen = []
    with pytest.raises(ValueError, match="made badly"):
        for c in got:
            seen.append(c)
    assert seen == ["a", "b"]


def test_the_maker_stops_when_the_reader_stops() -> None:
    made = []

    def chunks() -> Iterator[str]:
        for i in range(10_000):
            made.append(i)
            yield str(i)

    got = _ahead(chunks(), depth=2)
    assert got is not None
    assert next(got) == "0"
    got.close()  # the reader went away
    deadline = time.monotonic() + 5
    while any(t.name == "ampcalc-chunks" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the maker thread did not stop"
        time.sleep(0.01)
    assert len(made) <= 5  # at most the queue's depth ahead of the reader
