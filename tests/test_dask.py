"""The Dask engine (``--engine dask``) gives the one-process rows, whatever the partitions.

Records and weighted samples are split into a few small CSV and Parquet partitions
(uneven sizes, one of them empty); every run is compared record by record (byte for
byte for CSV part files) with the in-memory path for the same seed. Dask's local
schedulers run in-process; one test starts a 2-worker ``LocalCluster``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, run_main

pytest.importorskip("dask.dataframe")
pq = pytest.importorskip("pyarrow.parquet")
pa = pytest.importorskip("pyarrow")

CUTS = (0, 700, 701, 701, 1900, 3000)  # partition bounds: sizes 700, 1, 0, 1199, 1100
N = CUTS[-1]

LAPLACE = """\
name: dask-laplace
mechanism: {{profile: laplace-sum, scale: 4.0}}
sampling:
  scheme: importance
  records: {records}
  columns: [x, y]
  probabilities: privacy-constrained
  radius: 3.0
target: {{epsilon_prime: 1.0}}
"""

COLUMN = """\
name: dask-column
mechanism: {{profile: laplace-sum, scale: 4.0}}
sampling:
  scheme: importance
  records: {records}
  columns: [x, y]
  probabilities: column
  probability_column: q
  min_probability: 0.01
  radius: 3.0
"""


def _records(rng: np.random.Generator) -> np.ndarray:
    x = rng.normal(0.0, 0.5, size=(N, 2))
    x[[5, 1234, 2500]] = [[3.0, 1.0], [-2.5, -2.0], [4.0, 0.0]]  # outside ‖x‖₁ <= 3
    q = rng.uniform(0.01, 1.0, size=N)
    return np.column_stack([x, q])


def _write_csv(path: Path, block: np.ndarray) -> None:
    lines = ["x,y,q", *(",".join(repr(float(v)) for v in row) for row in block)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("records")
    data = _records(np.random.default_rng(20260101))
    _write_csv(root / "all.csv", data)
    (root / "csv").mkdir()
    (root / "parquet").mkdir()
    for i, (a, b) in enumerate(itertools.pairwise(CUTS)):
        _write_csv(root / "csv" / f"part-{i}.csv", data[a:b])
    # another partitioning for Parquet: three uneven files
    for i, (a, b) in enumerate(((0, 1500), (1500, 1501), (1501, N))):
        block = data[a:b]
        table = pa.table({"x": block[:, 0], "y": block[:, 1], "q": block[:, 2]})
        pq.write_table(table, root / "parquet" / f"part-{i}.parquet")
    for name, text in (("laplace", LAPLACE), ("column", COLUMN)):
        (root / f"{name}.yaml").write_text(text.format(records="all.csv"), encoding="utf-8")
    return {"root": root}


def _parts_text(out: Path) -> str:
    """Part files concatenated in order, one header kept (the one-process layout)."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(out.glob("part-*.csv"))]
    head = texts[0].split("\n", 1)[0] + "\n"
    assert all(t.startswith(head) for t in texts)
    return head + "".join(t[len(head) :] for t in texts)


def _parquet_rows(out: Path) -> dict[str, np.ndarray]:
    tables = [pq.read_table(p) for p in sorted(out.glob("part-*.parquet"))]
    table = pa.concat_tables(tables)
    return {name: table.column(name).to_numpy() for name in table.column_names}


def _csv_columns(path: Path) -> dict[str, np.ndarray]:
    head = path.read_text(encoding="utf-8").split("\n", 1)[0].split(",")
    body = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {name: body[:, j] for j, name in enumerate(head)}


@pytest.mark.parametrize("design", ["laplace", "column"])
@pytest.mark.parametrize("sample", [False, True])
def test_weights_partitions_match_one_process(
    capsys: pytest.CaptureFixture[str], records: dict, tmp_path: Path, design: str, sample: bool
) -> None:
    root = records["root"]
    yaml = str(root / f"{design}.yaml")
    extra = ["--sample", "--seed", "99"] if sample else []
    single = tmp_path / "single.csv"
    one = run_main(capsys, "weights", yaml, "-o", str(single), *extra)
    for k, (src, sched) in enumerate(
        ((root / "csv", "synchronous"), (root / "parquet" / "*.parquet", "threads"))
    ):
        out = tmp_path / f"out{k}"
        run = run_main(
            capsys, "weights", yaml, "--engine", "dask", "--scheduler", sched,
            "--input", str(src), "-o", str(out), *extra,
        )  # fmt: skip
        # the same rows, byte for byte, and the same warnings and summary line; each run
        # names its own output
        assert _parts_text(out) == single.read_text(encoding="utf-8")
        assert run.stderr.replace(str(out), "OUT") == one.stderr.replace(str(single), "OUT")
    if design == "laplace":
        assert "3 record(s) outside the domain" in one.stderr
        assert "first rows, 0-based: 5, 1234, 2500" in one.stderr
    if sample:
        kept = _csv_columns(single)["row"].astype(int)
        assert 0 < kept.size < N
        # keyed draws: row i is kept iff U(seed, i) < q(x_i)
        from ampcalc.math.importance import uniforms

        q_all = _csv_columns(single)["probability"]
        assert np.all(uniforms(99, 0, N)[kept] < q_all)


def test_weights_parquet_output_equals_csv(
    capsys: pytest.CaptureFixture[str], records: dict, tmp_path: Path
) -> None:
    root = records["root"]
    yaml = str(root / "laplace.yaml")
    single = tmp_path / "single.csv"
    run_main(capsys, "weights", yaml, "-o", str(single))
    out = tmp_path / "w.parquet"
    run_main(
        capsys, "weights", yaml, "--engine", "dask", "--scheduler", "synchronous",
        "--input", str(root / "csv"), "-o", str(out),
    )  # fmt: skip
    got = _parquet_rows(out)
    want = _csv_columns(single)
    assert list(got) == list(want)
    np.testing.assert_array_equal(got["row"], np.arange(N))
    for name in ("probability", "weight", "epsilon_hat"):
        np.testing.assert_array_equal(got[name], want[name])  # %.17g round-trips exactly
    # Theorem 10: every record inside the domain is certified at ε* = 1, and w = 1/q
    inside = np.setdiff1d(np.arange(N), [5, 1234, 2500])
    assert np.all(got["epsilon_hat"][inside] <= 1.0)
    np.testing.assert_allclose(got["weight"] * got["probability"], 1.0, rtol=1e-15)


def test_weights_json_summary_same_fields(
    capsys: pytest.CaptureFixture[str], records: dict, tmp_path: Path
) -> None:
    root = records["root"]
    yaml = str(root / "laplace.yaml")
    extra = ["--sample", "--seed", "5", "--json"]
    one = run_main(capsys, "weights", yaml, "-o", str(tmp_path / "s.csv"), *extra).json()
    out = tmp_path / "d"
    many = run_main(
        capsys, "weights", yaml, "--engine", "dask", "--scheduler", "synchronous",
        "--input", str(root / "csv"), "-o", str(out), *extra,
    ).json()  # fmt: skip
    assert set(one) == set(many)
    assert json.loads((out / "_summary.json").read_text(encoding="utf-8")) == many
    assert (one["engine"], many["engine"]) == ("numpy", "dask")
    assert many["partitions"] == len(CUTS) - 1
    for key in ("records", "sampled", "seed", "outside_records", "outside_rows"):
        assert one[key] == many[key], key
    assert one["records"] == N
    # Σq summed per partition: equal up to the rounding of the partial sums
    assert many["expected_size"] == pytest.approx(one["expected_size"], rel=1e-14)


# --------------------------------------------------------------------------------------
# pws sanitize
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("samples")
    text = (EXAMPLES / "data" / "pws-sample.csv").read_text(encoding="utf-8")
    head, *rows = text.rstrip("\n").split("\n")
    cuts = (0, 200, 201, 201, 600, len(rows))
    (root / "csv").mkdir()
    (root / "parquet").mkdir()
    for i, (a, b) in enumerate(itertools.pairwise(cuts)):
        (root / "csv" / f"s{i}.csv").write_text(
            "\n".join([head, *rows[a:b]]) + "\n", encoding="utf-8"
        )
    names = head.split(",")
    cells = [r.split(",") for r in rows]
    for i, (a, b) in enumerate(((0, 365), (365, len(rows)))):
        cols = {n: [c[j] for c in cells[a:b]] for j, n in enumerate(names)}
        cols["frequency"] = [int(v) for v in cols["frequency"]]
        pq.write_table(pa.table(cols), root / "parquet" / f"s{i}.parquet")
    return {"root": root, "single": EXAMPLES / "data" / "pws-sample.csv"}


PWS = str(EXAMPLES / "pws.yaml")


@pytest.mark.parametrize("frequencies", [True, False])
def test_sanitize_partitions_match_one_process(
    capsys: pytest.CaptureFixture[str], samples: dict, tmp_path: Path, frequencies: bool
) -> None:
    root = samples["root"]
    extra = ["--frequencies"] if frequencies else []
    single = tmp_path / "single.csv"
    one = run_main(
        capsys, "pws", "sanitize", str(samples["single"]), "--design", PWS, "--seed", "7",
        "-o", str(single), *extra,
    )  # fmt: skip
    assert "sanitised 730 keys" in one.stderr
    for k, (src, sched) in enumerate(
        ((root / "csv" / "*.csv", "threads"), (root / "parquet", "synchronous"))
    ):
        out = tmp_path / f"out{k}"
        run = run_main(
            capsys, "pws", "sanitize", str(src), "--design", PWS, "--seed", "7", "-o",
            str(out), "--engine", "dask", "--scheduler", sched, "--output-format", "csv",
            *extra,
        )  # fmt: skip
        assert _parts_text(out) == single.read_text(encoding="utf-8")
        assert run.stderr.replace(str(out), "OUT") == one.stderr.replace(str(single), "OUT")


def test_sanitize_parquet_output_and_json(
    capsys: pytest.CaptureFixture[str], samples: dict, tmp_path: Path
) -> None:
    root = samples["root"]
    single = tmp_path / "single.csv"
    args = ["--design", PWS, "--seed", "3", "--frequencies", "--json"]
    one = run_main(capsys, "pws", "sanitize", str(samples["single"]), "-o", str(single), *args)
    out = tmp_path / "o"
    many = run_main(
        capsys, "pws", "sanitize", str(root / "parquet"), "-o", str(out), "--engine", "dask",
        "--scheduler", "synchronous", *args,
    )  # fmt: skip
    a, b = one.json(), many.json()
    assert set(a) == set(b)
    for key in ("seed", "frequencies", "keys", "reported", "rows_computed_up_to"):
        assert a[key] == b[key], key
    assert b["output_format"] == "parquet" and b["partitions"] == 2
    got = pa.concat_tables([pq.read_table(p) for p in sorted(out.glob("part-*.parquet"))])
    lines = single.read_text(encoding="utf-8").rstrip("\n").split("\n")[1:]
    want = [ln.split(",") for ln in lines]
    assert got.column("key").to_pylist() == [w[0] for w in want]
    assert got.column("frequency").to_pylist() == [int(w[1]) for w in want]
    assert got.column("region").to_pylist() == [w[2] for w in want]
    # Algorithm 4: a sanitized frequency never exceeds the true one
    true = dict(
        (ln.split(",")[0], int(ln.split(",")[1]))
        for ln in samples["single"].read_text(encoding="utf-8").split("\n")[1:]
        if ln
    )
    keys, freqs = got.column("key").to_pylist(), got.column("frequency").to_pylist()
    assert all(1 <= j <= true[k] for k, j in zip(keys, freqs, strict=True))


def test_sanitize_local_cluster(
    capsys: pytest.CaptureFixture[str], samples: dict, tmp_path: Path
) -> None:
    pytest.importorskip("distributed")
    single = tmp_path / "single.csv"
    args = ["--design", PWS, "--seed", "11", "--frequencies"]
    run_main(capsys, "pws", "sanitize", str(samples["single"]), "-o", str(single), *args)
    out = tmp_path / "cluster"
    run_main(
        capsys, "pws", "sanitize", str(samples["root"] / "csv"), "-o", str(out), "--engine",
        "dask", "--workers", "2", *args,
    )  # fmt: skip
    assert _parts_text(out) == single.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------
# Bad input: exit 2 with the reason
# --------------------------------------------------------------------------------------


def _dask(*args: str) -> list[str]:
    return [*args, "--engine", "dask", "--scheduler", "synchronous"]


def test_missing_input_and_bad_glob(
    capsys: pytest.CaptureFixture[str], samples: dict, records: dict, tmp_path: Path
) -> None:
    base = ["pws", "sanitize"]
    opts = ["--design", PWS, "--seed", "1", "-o", str(tmp_path / "o")]
    run = run_main(capsys, *_dask(*base, str(tmp_path / "nope.csv"), *opts), expect=2)
    assert "nope.csv' not found" in run.stderr
    run = run_main(capsys, *_dask(*base, str(tmp_path / "x" / "*.parquet"), *opts), expect=2)
    assert "no file matches" in run.stderr
    (tmp_path / "empty").mkdir()
    run = run_main(capsys, *_dask(*base, str(tmp_path / "empty"), *opts), expect=2)
    assert "holds no partitions" in run.stderr
    yaml = str(records["root"] / "laplace.yaml")
    run = run_main(
        capsys,
        *_dask("weights", yaml, "--input", str(tmp_path / "*.pq"), "-o", str(tmp_path / "w")),
        expect=2,
    )
    assert "no file matches" in run.stderr
    # an output directory that already holds files is refused (parts are not mixed)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "part-00000.csv").write_text("old\n", encoding="utf-8")
    run = run_main(
        capsys,
        *_dask(*base, str(samples["root"] / "csv"), "--design", PWS, "--seed", "1"),
        "-o",
        str(tmp_path / "full"),
        expect=2,
    )
    assert "is not empty" in run.stderr


def test_duplicate_key_across_partitions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    parts = tmp_path / "dup"
    parts.mkdir()
    (parts / "a.csv").write_text("key,frequency\nk1,3\nk2,5\n", encoding="utf-8")
    (parts / "b.csv").write_text("key,frequency\nk3,1\nk2,4\n", encoding="utf-8")
    out = tmp_path / "o"
    run = run_main(
        capsys,
        *_dask("pws", "sanitize", str(parts), "--design", PWS, "--seed", "1", "-o", str(out)),
        expect=2,
    )
    assert f"{parts / 'b.csv'}:3: duplicate key 'k2' (first on {parts / 'a.csv'}:3)" in run.stderr
    assert not out.exists()  # a failed run removes its parts and the directory it made


def test_no_extend_names_partition_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    parts = tmp_path / "big"
    parts.mkdir()
    (parts / "a.csv").write_text("key,frequency\nk1,3\n", encoding="utf-8")
    (parts / "b.csv").write_text("key,frequency\nk2,1\nk3,1001\n", encoding="utf-8")
    run = run_main(
        capsys,
        *_dask("pws", "sanitize", str(parts), "--design", PWS, "--seed", "1"),
        "--no-extend",
        "-o",
        str(tmp_path / "o"),
        expect=2,
    )
    assert f"{parts / 'b.csv'}:3: frequency 1001 is above max_frequency = 1000" in run.stderr


def test_missing_dask_says_install_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, samples: dict,
    tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    run = run_main(
        capsys, "pws", "sanitize", str(samples["single"]), "--design", PWS, "--seed", "1",
        "-o", str(tmp_path / "o"), "--engine", "dask", expect=2,
    )  # fmt: skip
    assert "install ampcalc[dask]" in run.stderr


def test_bad_records_name_partition(
    capsys: pytest.CaptureFixture[str], records: dict, tmp_path: Path
) -> None:
    root = records["root"]
    parts = tmp_path / "bad"
    parts.mkdir()
    (parts / "a.csv").write_text("x,y,q\n0.1,0.2,0.5\n", encoding="utf-8")
    (parts / "b.csv").write_text("x,y,q\n0.1,0.2,0.5\n0.3,oops,0.5\n", encoding="utf-8")
    args = ["--input", str(parts), "-o", str(tmp_path / "o")]
    run = run_main(capsys, *_dask("weights", str(root / "laplace.yaml"), *args), expect=2)
    # the one-process parser's message: file, line, column
    assert f"{parts / 'b.csv'}:3: column 'y': expected a number, got 'oops'" in run.stderr
    (parts / "b.csv").write_text("x,y,q\n0.1,0.2,0.5\n0.3,0.1,0.0\n", encoding="utf-8")
    run = run_main(capsys, *_dask("weights", str(root / "column.yaml"), *args), expect=2)
    # column mode: q must lie in [min_probability, 1]; the row counts across partitions
    where = f"{parts / 'b.csv'}: record 1 (0-based; row 2 overall)"
    assert f"{where} has probability 0.0; expected [0.01, 1]" in run.stderr


def test_weights_dask_dp_lloyd_knows_the_record_dimension(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """DP-Lloyd's noise scales depend on the record dimension d (paper 003 §4, Su et al.
    scales): the Dask engine used to load the design without its record file, took d = 0
    and divided by zero. It now reads the file's header, and both engines agree byte
    for byte."""
    from mpmath import exp, log, mp, mpf, sqrt

    yaml = str(EXAMPLES / "importance-kmeans.yaml")
    single = tmp_path / "single.csv"
    run_main(capsys, "weights", yaml, "-o", str(single))
    out = tmp_path / "out"
    run_main(capsys, *_dask("weights", yaml, "-o", str(out)))
    assert (out / "part-00000.csv").read_bytes() == single.read_bytes()
    # oracle for row 0, x = (0.044006, −0.046237), d = 2: B = 0.004, T = 10, r = 1
    mp.dps = 40
    t, b, d, rho = 10, mpf("0.004"), 2, mpf("0.225")
    beta_sum = sqrt(t / b) * (d / (2 * rho)) ** (mpf(1) / 3)
    beta_count = beta_sum * (4 * d * rho**2) ** (mpf(1) / 3)
    sq = mpf("0.044006") ** 2 + mpf("0.046237") ** 2
    q = mpf("0.05") + 500 * sq / 3000  # coreset map λm/N + (1 − λ)m‖x‖²/(N x̃)
    eps = t / q * (1 / beta_count + sqrt(sq) / beta_sum)
    eps_hat = log(1 + q * (exp(eps) - 1))
    row = [float(v) for v in single.read_text().split("\n")[1].split(",")]
    assert row[0] == 0
    assert row[1] == pytest.approx(float(q), rel=1e-15)
    assert row[3] == pytest.approx(float(eps_hat), rel=1e-13)
    assert float(eps_hat) == pytest.approx(0.90177885978082200, rel=1e-15)


def test_weights_dask_partitions_must_have_the_design_dimension(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The design's records fix the record dimension (the profile's noise scales use
    it); partitions with more columns are refused, not read under a wrong d."""
    (tmp_path / "r.csv").write_text("x,y\n0.1,0.2\n", encoding="utf-8")
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "a.csv").write_text("x,y,z\n0.1,0.2,0.3\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(
        "mechanism: {profile: laplace-sum, scale: 4.0}\n"
        "sampling: {scheme: importance, records: r.csv, probabilities: privacy-constrained,"
        " radius: 3.0}\ntarget: {epsilon_prime: 1.0}\n",
        encoding="utf-8",
    )
    args = ["--input", str(tmp_path / "parts"), "-o", str(tmp_path / "o")]
    run = run_main(capsys, *_dask("weights", str(tmp_path / "d.yaml"), *args), expect=2)
    part = tmp_path / "parts" / "a.csv"
    assert f"{part}: 3 record columns (x, y, z); the design's records have 2" in run.stderr


# --------------------------------------------------------------------------------------
# pws sanitize: the partition tasks run the one-process byte path
# --------------------------------------------------------------------------------------


def _sample_text(n: int, quoted: bool) -> tuple[str, list[str]]:
    """A sample with an extra column; ``quoted``: some keys need quoting (a comma, a
    quote), so the chunk is read by the csv module instead of as bytes."""
    rng = np.random.default_rng(5)
    rows = []
    for i in range(n):
        key = f"k{i:05d}"
        if quoted and i % 97 == 3:
            key = f'"k,{i}"' if i % 2 else f'"k""{i}"'
        rows.append(f"{key},{int(rng.zipf(1.6)) % 3000 + 1},r{i % 7}")
    return "key,frequency,region\n", rows


@pytest.mark.parametrize("quoted", [False, True])
@pytest.mark.parametrize("out_fmt", ["csv", "parquet"])
def test_sanitize_byte_path_partitions_match_one_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, quoted: bool, out_fmt: str
) -> None:
    """CSV partitions (small chunks: several per partition; one partition empty, one
    quoted) give the one-process rows, summary and table size, as CSV or Parquet parts."""
    head, rows = _sample_text(2500, quoted)
    (tmp_path / "single.csv").write_text(head + "\n".join(rows) + "\n", encoding="utf-8")
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, (a, b) in enumerate(((0, 900), (900, 900), (900, 901), (901, 2500))):
        (parts / f"p{i}.csv").write_text(
            head + "".join(r + "\n" for r in rows[a:b]), encoding="utf-8"
        )
    args = ["--design", PWS, "--seed", "5", "--frequencies", "--chunk-size", "256", "--json"]
    single = tmp_path / "single-out.csv"
    one = run_main(
        capsys, "pws", "sanitize", str(tmp_path / "single.csv"), "-o", str(single), *args
    )
    out = tmp_path / "o"
    many = run_main(
        capsys, "pws", "sanitize", str(parts), "-o", str(out), "--output-format", out_fmt,
        *_dask(*args),
    )  # fmt: skip
    a, b = one.json(), many.json()
    for key in ("keys", "reported", "rows_computed_up_to"):
        assert a[key] == b[key], key
    assert a["rows_computed_up_to"] > 1000  # frequencies above the table: extended
    if out_fmt == "csv":
        assert _parts_text(out) == single.read_text(encoding="utf-8")
    else:
        import csv

        with open(single, newline="", encoding="utf-8") as fh:
            want = list(csv.reader(fh))[1:]
        got = pa.concat_tables([pq.read_table(p) for p in sorted(out.glob("part-*.parquet"))])
        assert got.column("key").to_pylist() == [w[0] for w in want]
        assert got.column("frequency").to_pylist() == [int(w[1]) for w in want]
        assert got.column("region").to_pylist() == [w[2] for w in want]


def test_sanitize_duplicate_within_a_partition_as_one_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = "key,frequency\nk1,3\nk2,5\nk3,1\nk2,4\n"
    (tmp_path / "a.csv").write_text(text, encoding="utf-8")
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "a.csv").write_text(text, encoding="utf-8")
    args = ["--design", PWS, "--seed", "1"]
    one = run_main(capsys, "pws", "sanitize", str(tmp_path / "a.csv"), *args, expect=2)
    many = run_main(
        capsys, *_dask("pws", "sanitize", str(parts), *args, "-o", str(tmp_path / "o")),
        expect=2,
    )  # fmt: skip
    msg = f"{tmp_path / 'a.csv'}:5: duplicate key 'k2' (first on line 3)"
    assert msg in one.stderr
    assert msg.replace(str(tmp_path / "a.csv"), str(parts / "a.csv")) in many.stderr


def test_sanitize_partition_task_does_not_import_the_cli(tmp_path: Path) -> None:
    """A worker runs ``_sanitize_task`` from the pickled job: neither unpickling nor the
    task imports ``ampcalc.cli`` (nor typer)."""
    import pickle
    import subprocess

    from ampcalc.designs.sources import load_designs
    from ampcalc.records import distributed
    from ampcalc.records.pws_sanitize import PwsSanitiser
    from ampcalc.records.pws_tables import pws_design

    part = tmp_path / "p.csv"
    part.write_text("key,frequency\nk1,3\nk2,5\n", encoding="utf-8")
    _, params = pws_design(load_designs(PWS))
    job = distributed._SanitizeJob(
        token="t", base=PwsSanitiser(params, True, True), params=params, seed=1,
        frequencies=True, extend=True, out=str(tmp_path), fmt="csv",
        header=("key", "frequency"), parts=(distributed.Partition(str(part), "csv"),),
    )  # fmt: skip
    (tmp_path / "job.pkl").write_bytes(pickle.dumps(job))
    code = (
        "import pickle, sys\n"
        "from ampcalc.records.distributed import _sanitize_task\n"
        f"job = pickle.loads(open({str(tmp_path / 'job.pkl')!r}, 'rb').read())\n"
        "stats = _sanitize_task(0, job)\n"
        "assert stats['keys'] == 2, stats\n"
        "bad = [m for m in sys.modules if m.startswith(('ampcalc.cli', 'typer'))]\n"
        "assert not bad, bad\n"
    )
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)
    assert (tmp_path / "part-00000.csv").read_text(encoding="utf-8").startswith("key,frequency\n")


def test_sanitize_parquet_byte_path_matches_one_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Parquet partitions read from Arrow's buffers: integer keys (their decimal
    strings), a large-string frequency column, keys that need quoting or are not ASCII,
    several row groups, extra columns of other types; the CSV parts are the one-process
    output of the same rows as CSV, byte for byte, and the Parquet parts hold them."""
    import csv
    import io

    rng = np.random.default_rng(20260109)
    n = 5000
    freqs = rng.zipf(1.7, n).clip(1, 2000)
    keys = [f"k{i}" + ("é" if i % 3 == 0 else "") + ("," if i % 11 == 0 else "") for i in range(n)]
    keys[7] = 'q"uote'
    other = np.arange(n, dtype=np.int32) - 40
    score = np.round(rng.uniform(0, 0.009, n), 6)
    text = io.StringIO()
    w = csv.writer(text, lineterminator="\n")
    w.writerow(["key", "frequency", "score", "n"])
    w.writerows(zip(keys, freqs.tolist(), score.tolist(), other.tolist(), strict=True))
    (tmp_path / "all.csv").write_text(text.getvalue(), encoding="utf-8")
    (tmp_path / "pq").mkdir()
    for i, (a, b) in enumerate(((0, 1700), (1700, 1700), (1700, n))):
        cols = {
            "key": pa.array(keys[a:b], pa.large_string()),
            "frequency": pa.array([str(v) for v in freqs[a:b]], pa.large_string()),
            "score": pa.array(score[a:b]),
            "n": pa.array(other[a:b]),
        }
        pq.write_table(pa.table(cols), tmp_path / "pq" / f"p{i}.parquet", row_group_size=600)
    common = ["--design", PWS, "--seed", "12", "--frequencies"]
    one = tmp_path / "one.csv"
    run_main(capsys, "pws", "sanitize", str(tmp_path / "all.csv"), *common, "-o", str(one))
    want = one.read_text(encoding="utf-8")
    assert want.count('"') > 10  # kept keys that csv.writer quotes
    dask = ["--engine", "dask", "--scheduler", "synchronous"]
    out = tmp_path / "out"
    run_main(capsys, "pws", "sanitize", str(tmp_path / "pq"), *common, *dask, "-o", str(out),
             "--output-format", "csv")  # fmt: skip
    assert _parts_text(out) == want
    out_pq = tmp_path / "out-pq"
    run_main(capsys, "pws", "sanitize", str(tmp_path / "pq"), *common, *dask, "-o", str(out_pq))
    tables = [pq.read_table(p) for p in sorted(out_pq.glob("part-*.parquet"))]
    assert [t.num_rows for t in tables][1] == 0  # the empty partition's part
    got = pa.concat_tables([t for t in tables if t.num_rows])
    rows = list(csv.reader(io.StringIO(want)))[1:]
    assert got.column("key").to_pylist() == [r[0] for r in rows]
    assert got.column("frequency").to_pylist() == [int(r[1]) for r in rows]
    assert got.column("n").type == pa.int64()  # passed through as Python ints
    assert got.column("n").to_pylist() == [int(r[2]) for r in rows]

    # integer keys are their decimal strings: the same draws as in a CSV
    (tmp_path / "ints").mkdir()
    ints = np.arange(n, dtype=np.int64) * 13 - 77
    pq.write_table(
        pa.table({"key": ints, "frequency": freqs.astype(np.int16)}),
        tmp_path / "ints" / "p.parquet",
    )
    (tmp_path / "ints.csv").write_text(
        "key,frequency\n" + "".join(f"{k},{f}\n" for k, f in zip(ints, freqs, strict=True)),
        encoding="utf-8",
    )
    one_i = tmp_path / "one-i.csv"
    run_main(capsys, "pws", "sanitize", str(tmp_path / "ints.csv"), *common, "-o", str(one_i))
    out_i = tmp_path / "out-i"
    run_main(capsys, "pws", "sanitize", str(tmp_path / "ints"), *common, *dask, "-o", str(out_i),
             "--output-format", "csv")  # fmt: skip
    assert (out_i / "part-00000.csv").read_text(encoding="utf-8") == one_i.read_text("utf-8")


def test_sanitize_parquet_null_key_names_its_row(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "pq").mkdir()
    keys = pa.array(["a", "b", None, "d"], pa.string())
    pq.write_table(
        pa.table({"key": keys, "frequency": [1, 2, 3, 4]}), tmp_path / "pq" / "p.parquet"
    )
    run = run_main(
        capsys, "pws", "sanitize", str(tmp_path / "pq"), "--design", PWS, "--seed", "1",
        "--engine", "dask", "--scheduler", "synchronous", "-o", str(tmp_path / "o"), expect=2,
    )  # fmt: skip
    assert f"{tmp_path / 'pq' / 'p.parquet'}:3: column 'key' is empty (null)" in run.stderr


def test_table_token_names_a_design_and_its_options() -> None:
    """A worker reuses the pws tables of an earlier job only for the same design and
    options: the token is the same for equal designs and differs otherwise."""
    from ampcalc.designs.sources import load_designs
    from ampcalc.records import distributed
    from ampcalc.records.pws_tables import pws_design

    _, a = pws_design(load_designs(PWS))
    _, b = pws_design(load_designs(PWS))
    t = distributed.table_token
    assert t(a, True, True) == t(b, True, True)
    assert len({t(a, True, True), t(a, False, True), t(a, True, False)}) == 3
    other = dataclasses.replace(a, threshold=a.threshold * 2)  # another table
    assert t(other, True, True) != t(a, True, True)
