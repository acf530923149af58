"""Data files: one reader (``ampcalc.load.table``), one way to point at a bad cell.

Every message names the file's own line (1-based, the header, blank lines and the
lines of a quoted cell counted), never a data-row index and never numpy's wording;
an unknown or misspelt column is named with the file's columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import run_main

from ampcalc.load.table import Table, pick_column, read_table
from ampcalc.model.errors import DesignError

CLUSTER = """\
mechanism: {epsilon: 1, neighbours: add-remove}
sampling:
  scheme: cluster
  clusters: {file: c.csv}
  chosen: 1
"""


def _bound_error(capsys: pytest.CaptureFixture[str], design: Path) -> str:
    run = run_main(capsys, "bound", str(design), expect=2)
    assert "Traceback" not in run.stderr and "numpy" not in run.stderr
    return run.stderr.strip()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # numpy used to say "invalid column index 1 at row 2 with 1 columns"
        ("x,size\n1,2\n3\n4,5\n", "c.csv:3: column 'size' is missing"),
        # numpy counted rows without the blank line: "row 3"
        ("10\n\n20\nxx\n", "c.csv:4: column 'size': expected a whole number, got 'xx'"),
        ("id,size\na,10\n\nb,20\nc,-3\n", "c.csv:5: size -3 is not a whole number >= 0"),
        (
            "Sise\n1\n",
            "c.csv:1: no column 'size' (columns: sise; 'sise' looks like a misspelling of "
            "'size'); expected one size per row or a 'size' column",
        ),
    ],
)
def test_cluster_size_file_errors_name_the_file_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "c.csv").write_text(text, encoding="utf-8")
    (tmp_path / "d.yaml").write_text(CLUSTER, encoding="utf-8")
    err = _bound_error(capsys, tmp_path / "d.yaml")
    assert err == f"{tmp_path / 'd.yaml'}:4:14: sampling.clusters.file: {tmp_path}/{message}"


def test_cluster_sizes_read_the_same_after_blank_lines(tmp_path: Path) -> None:
    """The fast path and the file agree: 10 + 20 + 30 = 60 records, largest 30."""
    import ampcalc

    (tmp_path / "c.csv").write_text("size\n10\n\n20\n30\n\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(CLUSTER, encoding="utf-8")
    (d,) = ampcalc.load_designs(str(tmp_path / "d.yaml"))
    sizes = d.params.clusters
    assert (sizes.count, sizes.total, sizes.largest) == (3, 60, (30, 20))


STRATA = """\
mechanism: {epsilon: 1, neighbours: both}
sampling:
  scheme: stratified
  allocation: fixed
  strata: {file: s.csv}
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a blank line and a name quoted over two lines: the bad row starts on line 4
        ('name,size,rate\na,1000,0.01\n\n"b\nc",2000,x\n', "s.csv:4: column 'rate'"),
        (
            "name,sise\na,1000\n",
            "s.csv:1: unknown column 'sise' (expected: name, size, rate, sample, sd, mean, "
            "min_value); did you mean 'size'?",
        ),
    ],
)
def test_strata_file_errors_name_the_file_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "s.csv").write_text(text, encoding="utf-8")
    (tmp_path / "d.yaml").write_text(STRATA, encoding="utf-8")
    err = _bound_error(capsys, tmp_path / "d.yaml")
    assert f"sampling.strata.file: {tmp_path}/{message}" in err


def test_unknown_record_column_lists_the_columns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "r.csv").write_text("x,y,q\n0.1,0.2,0.5\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(
        "mechanism: {profile: laplace-sum, scale: 4.0}\n"
        "sampling: {scheme: importance, records: r.csv, columns: [X, y], "
        "probabilities: privacy-constrained, radius: 3.0}\n"
        "target: {epsilon_prime: 1.0}\n",
        encoding="utf-8",
    )
    err = _bound_error(capsys, tmp_path / "d.yaml")
    assert err.endswith(
        "sampling.records: columns: no column 'X' (columns: x, y, q); did you mean 'x'?"
    )


PMF = """\
mechanism: {epsilon: 1.0, neighbours: both}
sampling:
  scheme: random-size
  population: 10
  size: {distribution: pmf, file: p.csv}
"""


def test_pmf_file_blank_line_is_refused_not_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The k-th probability is that of size k: skipping a blank line would shift them."""
    (tmp_path / "p.csv").write_text("probability\n0.0\n0.2\n\n0.3\n0.5\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(PMF, encoding="utf-8")
    err = _bound_error(capsys, tmp_path / "d.yaml")
    assert err.endswith(
        f"{tmp_path}/p.csv:4: empty line; expected one probability per line (the k-th is "
        "the probability of size k)"
    )


def test_pmf_first_line_with_a_trailing_comma_is_data(tmp_path: Path) -> None:
    """``0.5,`` on line 1 was taken for a header (its probability of size 0 dropped)."""
    import ampcalc
    from ampcalc import engine

    (tmp_path / "p.csv").write_text("0.5,\n0.5,\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(PMF, encoding="utf-8")
    (d,) = ampcalc.load_designs(str(tmp_path / "d.yaml"))
    inline = PMF.replace("file: p.csv", "values: [0, 1], probabilities: [0.5, 0.5]")
    (tmp_path / "i.yaml").write_text(inline, encoding="utf-8")
    (i,) = ampcalc.load_designs(str(tmp_path / "i.yaml"))
    assert engine.bound(d).upper == engine.bound(i).upper


def test_frequency_file_misspelt_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from conftest import EXAMPLES

    (tmp_path / "f.csv").write_text("key,freq\na,1\n", encoding="utf-8")
    run = run_main(
        capsys, "pws", "keys", str(EXAMPLES / "pws.yaml"), "--frequencies",
        str(tmp_path / "f.csv"), expect=2,
    )  # fmt: skip
    assert run.stderr.strip() == (
        f"ampcalc: error: {tmp_path}/f.csv:1: no column 'frequency' (columns: key, freq; "
        "'freq' looks like a misspelling of 'frequency')"
    )


def test_read_table_keeps_file_lines(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text('a,b\n\n1,"x\ny"\n2,z # note\n\n3,w\n', encoding="utf-8")
    t = read_table(p, comment="#")
    assert t.header == ("a", "b") and t.header_line == 1
    assert t.rows == [["1", "x\ny"], ["2", "z"], ["3", "w"]]
    assert t.lines == [3, 5, 7]
    assert t.at(1) == f"{p}:5"
    with pytest.raises(DesignError, match=r"no column 'B' \(columns: a, b\); did you mean 'b'\?"):
        t.index("B")
    assert isinstance(t, Table) and t.index(1) == 1


def test_pick_column_by_index_and_name() -> None:
    def err(m: str) -> Exception:
        return ValueError(m)

    assert pick_column("q", ("x", "q"), 2, err) == 1
    with pytest.raises(ValueError, match="column index 2 is out of range"):
        pick_column(2, ("x", "q"), 2, err)
    with pytest.raises(ValueError, match="but the file has no header row"):
        pick_column("q", None, 2, err)
    assert np.int64(1) == pick_column(1, None, 2, err)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"x,y\n1,2\n", "r.npy: not a .npy file (no NumPy header); the record file must be"),
        (
            np.zeros((2, 2, 2)),
            "r.npy: expected a 1-D or 2-D array of numbers, got shape (2, 2, 2)",
        ),
        (np.array(["a", "b"]), "r.npy: expected a 1-D or 2-D array of numbers, got shape (2,) of"),
        (np.array([{}, 1], dtype=object), "r.npy: the array holds Python objects, which are not"),
    ],
    ids=["not-npy", "3-d", "strings", "objects"],
)
def test_npy_record_files_are_read_by_the_one_reader(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: object, message: str
) -> None:
    path = tmp_path / "r.npy"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        np.save(path, content, allow_pickle=True)
    (tmp_path / "d.yaml").write_text(
        "mechanism: {profile: laplace-sum, scale: 4.0}\n"
        "sampling: {scheme: importance, records: r.npy, "
        "probabilities: privacy-constrained, radius: 3.0}\n"
        "target: {epsilon_prime: 1.0}\n",
        encoding="utf-8",
    )
    err = _bound_error(capsys, tmp_path / "d.yaml")
    assert message in err and "pickle" not in err
