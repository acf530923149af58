"""Sweep JSON/CSV written from the columns in chunks are the old renderings, byte for byte.

The old path built one dict per row and ran ``render.render_json`` (``json.dumps`` with
``indent=2``) or formatted CSV cell by cell; ``ampcalc.output.columns`` writes the same
text chunk by chunk. Compared here on sweeps with NaN, errors, quotes, commas, newlines,
non-ASCII names, constant and duplicate columns, and chunk boundaries inside the rows.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ampcalc.analyses import sweep as sw
from ampcalc.output import arrow_rows, cells, render
from ampcalc.output import columns as columns_output


def _old_csv(sweep: sw.Sweep) -> str:
    def cell(value: object) -> str:
        text = "" if value is None else str(value)
        if any(c in text for c in ',"\n\r'):
            return '"' + text.replace('"', '""') + '"'
        return text

    names = sweep.column_names()
    cols = []
    for n in names:
        arr = sweep.columns[n]
        if arr.dtype.kind == "f":
            cols.append(["" if v != v else repr(v) for v in arr.tolist()])
        elif arr.dtype.kind in "iu":
            cols.append([str(v) for v in arr.tolist()])
        else:
            cols.append([cell(v) for v in arr.tolist()])
    out = ",".join(cell(n) for n in names) + "\n"
    if cols and cols[0]:
        out += "\n".join(map(",".join, zip(*cols, strict=True))) + "\n"
    return out


def _sweep(columns: dict[str, np.ndarray], values: tuple[float | int, ...]) -> sw.Sweep:
    vary = sw.Vary(path="mechanism.epsilon", values=values, log=True)
    designs = {'d "one", ε': {"scheme": "srswor", "basis": ["b"], "warnings": ["w\nx"]}}
    return sw.Sweep(of="bound", varies=(vary,), columns=columns, designs=designs)


def _check(sweep: sw.Sweep) -> None:
    want = render.render_json(render.envelope("sweep", "9.9", sw.document(sweep)))
    chunks = columns_output.sweep_json_chunks(sweep, "9.9")
    assert chunks is not None
    assert columns_output.text(chunks) == want
    buf = io.StringIO()
    columns_output.sweep_csv(sweep, buf)
    assert buf.getvalue() == _old_csv(sweep)
    # the CSV still reads back to the same floats
    rows = list(csv.reader(io.StringIO(buf.getvalue())))
    assert len(rows) == len(sweep) + 1


FLOATS = st.floats(allow_infinity=False) | st.sampled_from([0.0, -0.0, 1e-6, 1e16, 5e-324])
TEXT = st.sampled_from([None, "amplifies", 'a "q", b', "line\nbreak", "ε′ ü", "%s %r %%", ""])


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=40),
    floats=st.lists(FLOATS, min_size=40, max_size=40),
    texts=st.lists(TEXT, min_size=40, max_size=40),
    chunk=st.integers(min_value=1, max_value=7),
)
@pytest.mark.parametrize("arrow", [False, True], ids=["python", "arrow"])
def test_chunked_json_and_csv_equal_the_old_renderings(arrow, n, floats, texts, chunk) -> None:
    old, old_from = columns_output.CHUNK, columns_output.ARROW_FROM
    columns_output.CHUNK = chunk
    columns_output.ARROW_FROM = 0 if arrow else 1 << 62
    try:
        f = np.array(floats[:n], dtype=float)
        columns = {
            "design": np.array(["d"] * n, dtype=object),
            "mechanism.epsilon": f,
            "epsilon": f.copy(),  # a duplicate column
            "epsilon_prime.upper": np.roll(f, 1),
            "delta_prime": np.zeros(n),  # a constant column
            "sampling.sample": np.arange(n, dtype=np.int64),
            "verdict": np.array(texts[:n], dtype=object),
            "error": np.array([None] * n, dtype=object),
        }
        _check(_sweep(columns, tuple(float(v) for v in f if v == v)))
    finally:
        columns_output.CHUNK, columns_output.ARROW_FROM = old, old_from


@pytest.mark.parametrize("arrow_from", [1 << 62, 0], ids=["python", "arrow"])
def test_a_real_sweep_in_several_chunks(arrow_from: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import EXAMPLES

    from ampcalc.designs.document import parse_yaml

    path = EXAMPLES / "srswor.yaml"
    doc = parse_yaml(path.read_text(), filename=str(path))
    monkeypatch.setattr(columns_output, "CHUNK", 333)
    monkeypatch.setattr(columns_output, "ARROW_FROM", arrow_from)
    for spec in ("mechanism.epsilon=1e-6:800:1000:log", "sampling.sample=1:10000:50"):
        _check(sw.evaluate(doc, [sw.parse_vary(spec)], filename=str(path)))


def test_what_it_cannot_write_exactly_falls_back_to_the_usual_rendering() -> None:
    inf = _sweep({"epsilon_prime.upper": np.array([1.0, np.inf])}, (1.0, 2.0))
    assert (
        columns_output.sweep_json_chunks(inf, "9.9") is None
    )  # json.dumps(allow_nan=False) refuses it
    nested = _sweep({"x": np.array([[1], [2], None], dtype=object)[:2]}, (1.0, 2.0))
    assert (
        columns_output.sweep_json_chunks(nested, "9.9") is None
    )  # a list in a cell spans several lines
    assert (
        json.loads("".join(columns_output.sweep_json_chunks(_sweep({}, ()), "9.9") or []))["rows"]
        == []
    )


@pytest.mark.parametrize("name", ["pws.yaml", "pws-histogram.yaml"])
def test_pws_table_chunks_equal_the_rendered_rows(name: str, monkeypatch) -> None:
    """``pws table`` writes JSON/CSV from its columns: the bytes of the rendered rows."""
    from conftest import EXAMPLES

    from ampcalc import api

    monkeypatch.setattr(columns_output, "CHUNK", 97)
    design = api.load_designs(EXAMPLES / name)
    payload = api.pws_table(design)
    summary, cols = api.pws_table_columns(design)
    want_json = render.render_json(render.envelope("pws table", "9.9", payload))
    chunks = columns_output.table_json_chunks("pws table", "9.9", summary, "frequencies", cols)
    assert chunks is not None and columns_output.text(chunks) == want_json
    assert columns_output.text(columns_output.csv_chunks(cols)) == render.render_csv(
        payload["frequencies"]
    )


def test_arrow_assembles_the_float_rows_itself() -> None:
    """The arrow path really runs on constant and finite-float columns (it is not a
    silent fallback), keeps each text's comma where the next piece opens with one and
    drops it where it does not, and gives ``join_rows``'s bytes."""
    join = arrow_rows.arrow_join()
    if join is None:
        pytest.skip("pyarrow is not installed")
    f = np.array([1e-06, 3e-05, 0.1, 2.5e16, -0.0, 5e-324, 1.0000000000000002])
    cols = [np.array(["d, ü"] * f.size, dtype=object), f, f.copy(), f[::-1].copy(), np.zeros(7)]
    for pieces, kind, joiner in (
        (["{a: ", ", b: ", ", c: ", ", d: ", ", e: ", "}"], "json", ",\n"),
        (["", ",", ",", ",", ",", ""], "csv", "\n"),
        (["<", "|", " ", ";", ",", ">"], "csv", "\n"),  # no comma after a float text
    ):
        got = arrow_rows.rows_arrow(join, pieces, cols, 1, 6, kind, joiner)
        assert got is not None
        texts = cells.chunk_cells(cols, 1, 6, kind)
        assert str(got, "utf-8") == cells.join_rows(pieces, texts, 5, joiner)
    # an integer column that varies: the Python path writes it
    ints = [np.arange(7)]
    assert arrow_rows.rows_arrow(join, ["", ""], ints, 0, 7, "csv", "\n") is None


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_byte_chunks_are_written_in_order_as_the_text_would_be(encoding: str) -> None:
    """Arrow-assembled chunks are UTF-8 bytes: a UTF-8 stream takes them on its binary
    buffer after the text written before them; another encoding gets the decoded text."""
    from ampcalc.cli.conventions import write_chunk

    raw = io.BytesIO()
    fh = io.TextIOWrapper(raw, encoding=encoding, write_through=False)
    for piece in ("[\n", memoryview("é 1e-06,\n".encode()), "ü]"):
        write_chunk(fh, piece)
    fh.flush()
    assert raw.getvalue() == "[\né 1e-06,\nü]".encode(encoding)


def test_rows_made_ahead_in_threads_come_in_order_and_stop_with_the_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if arrow_rows.arrow_join() is None:
        pytest.skip("pyarrow is not installed")
    monkeypatch.setattr(columns_output, "ARROW_FROM", 0)
    monkeypatch.setattr(columns_output, "CHUNK", 3)
    f = np.geomspace(1e-7, 1e3, 100)
    cols = {"a": f, "b": np.sqrt(f), "c": np.array(["x"] * 100, dtype=object)}
    want = "a,b,c\n" + "".join(
        f"{x!r},{y!r},x\n" for x, y in zip(f.tolist(), np.sqrt(f).tolist(), strict=True)
    )
    monkeypatch.setattr(columns_output, "WORKERS", 2)
    assert columns_output.text(columns_output.csv_chunks(cols)) == want
    # a reader that stops early (a closed pipe) stops the threads too
    chunks = columns_output.csv_chunks(cols)
    assert next(chunks) == "a,b,c\n"
    assert str(next(chunks), "utf-8") == "\n".join(want.split("\n")[1:4])  # rows 0-2
    chunks.close()


def test_a_chunk_arrow_refuses_is_written_by_the_python_path() -> None:
    """An arrow error on a chunk (e.g. a chunk past its 2 GiB string offsets) leaves
    that chunk to ``join_rows``: the same text, not a failed output."""
    if arrow_rows.arrow_join() is None:
        pytest.skip("pyarrow is not installed")
    import pyarrow as pa

    def refusing(args: list[object]) -> object:
        raise pa.ArrowInvalid("offset overflow")

    f = np.array([0.5, 1e-7, 3.0])
    cols = [f, f * 2]
    pieces = ["", ",", ""]
    assert arrow_rows.rows_arrow(refusing, pieces, cols, 0, 3, "csv", "\n") is None
