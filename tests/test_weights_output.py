"""``ampcalc weights`` output: the column-wise CSV formatter is ``np.savetxt``'s text, and
``--output x.parquet`` (numpy engine) holds the same numbers as the CSV."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, run_main
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

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
