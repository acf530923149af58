"""``ampcalc weights`` output: the column-wise CSV formatter is ``np.savetxt``'s text,
``--output x.parquet`` (numpy engine) holds the same numbers as the CSV, and
``output.weights_rows`` writes those rows in order on any number of threads."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import EXAMPLES, run_main
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ampcalc.output import weights_rows
from ampcalc.output.columns import savetxt_rows as _rows


@settings(max_examples=100, deadline=None)
@given(
    block=hnp.arrays(
        float,
        st.tuples(st.integers(0, 20), st.integers(1, 5)),
        elements=st.floats(allow_nan=True, allow_infinity=True, width=64),
    ),
    rows=st.integers(0, 2**53),
)
def test_rows_are_savetxt_text(block: np.ndarray, rows: int) -> None:
    buf = io.StringIO()
    np.savetxt(buf, block, delimiter=",", fmt="%.17g")
    assert _rows(block, int_first=False) == buf.getvalue()
    block = block.copy()
    block[:, 0] = rows  # a whole number: the row index column
    buf = io.StringIO()
    np.savetxt(buf, block, delimiter=",", fmt=["%d"] + ["%.17g"] * (block.shape[1] - 1))
    assert _rows(block, int_first=True) == buf.getvalue()


@pytest.mark.parametrize("sample", [False, True])
def test_parquet_output_holds_the_csv_numbers(
    sample: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    design = str(EXAMPLES / "importance-laplace.yaml")
    extra = ["--sample", "--seed", "7"] if sample else []
    run_main(capsys, "weights", design, *extra, "-o", str(tmp_path / "w.csv"))
    doc = run_main(
        capsys, "weights", design, *extra, "-o", str(tmp_path / "w.parquet"), "--json"
    ).json()
    assert doc["output_format"] == "parquet"
    rows = list(csv.reader(open(tmp_path / "w.csv")))
    table = pq.read_table(tmp_path / "w.parquet")
    assert table.column_names == rows[0] and table.num_rows == len(rows) - 1
    assert str(table.schema.field("row").type) == "int64"
    for j, name in enumerate(rows[0]):
        got = table.column(name).to_numpy()
        want = np.array([float(r[j]) for r in rows[1:]])
        assert np.array_equal(got, want)  # %.17g round-trips float64 exactly


def test_file_output_is_the_savetxt_bytes_of_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-o file.csv`` is written as bytes (no str round trip) in blocks on threads:
    the file is ``np.savetxt``'s text of (row, q, w, ε̂), the same as standard output."""
    from ampcalc.api import weights

    design = str(EXAMPLES / "importance-laplace.yaml")
    out = tmp_path / "w.csv"
    run_main(capsys, "weights", design, "-o", str(out))
    shown = run_main(capsys, "weights", design).stdout
    fig = weights(design)
    block = np.column_stack([np.arange(len(fig)), fig.probability, fig.weight, fig.epsilon_hat])
    buf = io.StringIO()
    np.savetxt(buf, block, delimiter=",", fmt=["%d"] + ["%.17g"] * 3)
    want = "row,probability,weight,epsilon_hat\n" + buf.getvalue()
    assert out.read_bytes() == want.encode("ascii")
    assert shown == want


def _savetxt(cols: list[np.ndarray]) -> str:
    buf = io.StringIO()
    fmt = ["%d"] + ["%.17g"] * (len(cols) - 1)
    np.savetxt(buf, np.column_stack(cols), delimiter=",", fmt=fmt)
    return buf.getvalue()


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("size", [0, 1, weights_rows.BLOCK, 2 * weights_rows.BLOCK + 17])
def test_weights_csv_is_savetxt_in_order_on_any_threads(threads: int, size: int) -> None:
    """``write_weights_csv``: the header, then np.savetxt's rows in row order however
    many threads format the blocks; bytes and str alike; progress reaches every row."""
    rng = np.random.default_rng(size + threads)
    q = rng.uniform(1e-9, 1.0, size)
    q[: min(size, 3)] = [1.0, 5e-324, 0.5][: min(size, 3)]  # q = 1, a subnormal, a tie
    eps = rng.exponential(size=size)
    with np.errstate(over="ignore"):
        w = 1 / q  # inf for the subnormal q
    want = "row,probability,weight,epsilon_hat\n" + _savetxt([np.arange(size), q, w, eps])
    pieces: list[bytes] = []
    ticks: list[tuple[int, int]] = []
    weights_rows.write_weights_csv(
        pieces.append, q, w, eps, threads=threads, binary=True,
        progress=lambda done, total: ticks.append((done, total)),
    )  # fmt: skip
    assert b"".join(pieces) == want.encode("ascii")
    texts: list[str] = []
    weights_rows.write_weights_csv(texts.append, q, w, eps, threads=threads)
    assert "".join(texts) == want
    blocks = -(-size // weights_rows.BLOCK)
    assert ticks == [(min((k + 1) * weights_rows.BLOCK, size), size) for k in range(blocks)]


def _sample_blocks(x: np.ndarray, q: np.ndarray, keep: np.ndarray, step: int) -> list[Any]:
    """``api.sampled_blocks``'s shape: (read so far, kept rows, records, q, w) per block."""
    out = []
    for s in range(0, len(q), step):
        idx = s + np.flatnonzero(keep[s : s + step])
        out.append((min(s + step, len(q)), idx, x[idx], q[idx], 1 / q[idx]))
    return out


def test_sample_csv_and_table_hold_the_kept_rows() -> None:
    """``write_sample_csv`` writes the kept rows as np.savetxt does (row, the record's
    columns, q, w) and counts them; ``sample_table`` holds the same numbers (row as
    int64, the rest float64), an empty block and an empty sample included."""
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 3))
    q = rng.uniform(0.05, 1.0, 50)
    keep = rng.uniform(size=50) < q
    keep[10:20] = False  # a block with no kept row
    blocks = _sample_blocks(x, q, keep, 10)
    idx = np.flatnonzero(keep)
    texts: list[str] = []
    ticks: list[tuple[int, int]] = []
    kept = weights_rows.write_sample_csv(
        texts.append, ["a", "b", "c"], iter(blocks), records=50,
        progress=lambda done, total: ticks.append((done, total)),
    )  # fmt: skip
    cols = [idx, *(x[idx, j] for j in range(3)), q[idx], 1 / q[idx]]
    assert kept == idx.size
    assert "".join(texts) == "row,a,b,c,probability,weight\n" + _savetxt(cols)
    assert ticks == [(s, 50) for s in range(10, 51, 10)]
    table = weights_rows.sample_table(["a", "b", "c"], iter(blocks))
    assert table.column_names == ["row", "a", "b", "c", "probability", "weight"]
    assert table.schema.field("row").type == pa.int64()
    assert table.num_rows == idx.size
    for name, col in zip(table.column_names, cols, strict=True):
        assert np.array_equal(table.column(name).to_numpy(), col)
    none = weights_rows.sample_table(["a", "b", "c"], iter([]))
    assert none.num_rows == 0 and none.schema.field("weight").type == pa.float64()


def test_weights_table_and_parquet_round_trip(tmp_path: Path) -> None:
    """``weights_table`` + ``write_parquet``: the file reads back as the same columns."""
    pq = pytest.importorskip("pyarrow.parquet")
    q = np.array([1.0, 0.25, 1e-300])
    eps = np.array([0.0, 0.5, 1.0])
    with open(tmp_path / "w.parquet", "wb") as fh:
        weights_rows.write_parquet(weights_rows.weights_table(q, 1 / q, eps), fh)
    table = pq.read_table(tmp_path / "w.parquet")
    assert table.column_names == list(weights_rows.WEIGHTS_COLUMNS)
    assert table.column("row").to_pylist() == [0, 1, 2]
    assert str(table.schema.field("row").type) == "int64"
    for name, col in (("probability", q), ("weight", 1 / q), ("epsilon_hat", eps)):
        assert np.array_equal(table.column(name).to_numpy(), col)


def test_parquet_without_pyarrow_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pyarrow the tables refuse with the install hint, before reading a block."""
    import sys

    from ampcalc.model.errors import AmpcalcError

    monkeypatch.setitem(sys.modules, "pyarrow", None)

    def blocks() -> Any:
        raise AssertionError("read a block")
        yield  # pragma: no cover

    with pytest.raises(AmpcalcError, match=r"pip install 'ampcalc\[parquet\]'"):
        weights_rows.sample_table(["a"], blocks())
    with pytest.raises(AmpcalcError, match="needs pyarrow"):
        weights_rows.weights_table(np.ones(1), np.ones(1), np.zeros(1))
