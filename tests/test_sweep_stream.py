"""Large sweeps in bounded memory: evaluated and written a block at a time, same bytes.

A sweep of more than ``sweep.STREAM_FROM`` rows is evaluated in blocks of
``sweep.STREAM_BLOCK`` values (once to check it, again while it is written) and written
in chunks of ``columns.CHUNK`` rows. Here the three are made tiny, so that sweeps of a
few hundred rows cross many block and chunk boundaries, and the output is compared
byte for byte with the same command run in one piece.
"""

from __future__ import annotations

import textwrap
import tracemalloc

import numpy as np
import pytest
from conftest import EXAMPLES, run_ampcalc, run_main
from hypothesis import given, settings
from hypothesis import strategies as st

from ampcalc.analyses import sweep as sw
from ampcalc.analyses import sweep_points, sweep_stream
from ampcalc.analyses import vary as vary_parsing
from ampcalc.designs.document import parse_yaml
from ampcalc.model.errors import DesignError
from ampcalc.output import columns

SRS = EXAMPLES / "srswor.yaml"
COMPARE = EXAMPLES / "compare.yaml"


def _tiny(monkeypatch: pytest.MonkeyPatch, arrow: bool) -> None:
    monkeypatch.setattr(sweep_stream, "STREAM_FROM", 5)
    monkeypatch.setattr(sweep_stream, "STREAM_BLOCK", 37)
    monkeypatch.setattr(sweep_points, "ROWS_BLOCK", 11)
    monkeypatch.setattr(columns, "CHUNK", 8)
    monkeypatch.setattr(columns, "KNOWN_ROWS", 24)
    if arrow:
        monkeypatch.setattr(columns, "ARROW_FROM", 0)


def _streamed(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The results ``evaluate_stream`` returns from now on."""
    made: list[object] = []
    real = sw.evaluate_stream

    def spy(*args: object, **kwargs: object) -> object:
        made.append(real(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(sw, "evaluate_stream", spy)
    return made


CASES = [
    (SRS, ["--vary", "mechanism.epsilon=0.01:5:1000:log"]),
    (SRS, ["--vary", "mechanism.epsilon=0.1:2:1000"]),
    (SRS, ["--of", "invert", "--vary", "target=0.05:3:600:log"]),
    (SRS, ["--of", "invert", "--vary", "target=0.05:3:300", "--target-delta", "1e-6"]),
    (COMPARE, ["--vary", "epsilon=0.1:4:250"]),
    (SRS, ["--vary", "sampling.sample=100,500,1000", "--vary", "epsilon=0.1:3:150:log"]),
    (SRS, ["--vary", "epsilon=0.5:3:120", "--vary", "sampling.sample=10:1000:4:log"]),
    (SRS, ["--vary", "sampling.population=10000:20000:300"]),
]


@pytest.mark.parametrize("arrow", [False, True], ids=["python", "arrow"])
@pytest.mark.parametrize("fmt", ["json", "csv"])
@pytest.mark.parametrize(("design", "vary"), CASES)
def test_a_streamed_sweep_writes_the_bytes_of_the_one_piece_sweep(
    monkeypatch, capsys, design, vary, fmt, arrow
) -> None:
    args = ["sweep", str(design), *vary, "--format", fmt]
    if arrow:
        monkeypatch.setattr(columns, "ARROW_FROM", 0)
    whole = run_main(capsys, *args)
    _tiny(monkeypatch, arrow)
    made = _streamed(monkeypatch)
    streamed = run_main(capsys, *args)
    assert [type(r) for r in made] == [sw.SweepStream]
    assert streamed.stdout == whole.stdout
    assert streamed.stderr == whole.stderr
    assert len(made[0]) > 100  # many blocks and chunks  # type: ignore[arg-type]


def test_a_streamed_sweep_written_to_a_file_is_the_same_file(
    monkeypatch, capsys, tmp_path
) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    args = ["sweep", str(SRS), "--vary", "epsilon=0.01:5:500:log", "--json", "-o"]
    whole = run_main(capsys, *args, str(one))
    _tiny(monkeypatch, True)
    streamed = run_main(capsys, *args, str(two))
    assert one.read_bytes() == two.read_bytes()
    assert whole.stderr.replace("one.json", "two.json") == streamed.stderr
    assert "wrote 500 rows" in streamed.stderr


@pytest.mark.parametrize("chart", [[], ["--chart"]])
@pytest.mark.parametrize(
    ("design", "more"),
    [(COMPARE, "... 1000 more rows (1200 in all)"), (SRS, "... 100 more rows (300 in all)")],
)
def test_a_streamed_table_shows_the_first_rows_and_the_same_chart(
    monkeypatch, capsys, chart, design, more
) -> None:
    args = ["sweep", str(design), "--vary", "epsilon=0.01:10:300:log", *chart]
    whole = run_main(capsys, *args)
    _tiny(monkeypatch, False)
    made = _streamed(monkeypatch)
    streamed = run_main(capsys, *args)
    assert [type(r) for r in made] == [sw.SweepStream]
    assert streamed.stdout == whole.stdout
    assert more in streamed.stdout
    assert ("x: mechanism ε" in streamed.stdout) == bool(chart)


def test_points_outside_their_conditions_are_evaluated_in_one_piece(
    monkeypatch, capsys, tmp_path
) -> None:
    """Errors (and the per-point note) depend on the whole grid: no blocks then."""
    f = tmp_path / "mixed.yaml"
    f.write_text(
        textwrap.dedent(
            """\
            mechanism: {epsilon: 1, neighbours: replace-one}
            designs:
              - name: srs
                sampling: {scheme: srswor, population: 100, sample: 10}
              - name: poisson
                sampling: {scheme: poisson, rate: 0.1}
            """
        )
    )
    args = ["sweep", str(f), "--vary", "epsilon=0.5:2:40", "--format", "csv"]
    whole = run_main(capsys, *args)
    _tiny(monkeypatch, False)
    made = _streamed(monkeypatch)
    streamed = run_main(capsys, *args)
    assert [type(r) for r in made] == [sw.Sweep]
    assert (streamed.stdout, streamed.stderr) == (whole.stdout, whole.stderr)
    assert "40 of 80 points have no bound" in streamed.stderr


def test_blocks_hold_the_columns_of_the_one_piece_sweep(monkeypatch) -> None:
    doc = parse_yaml(COMPARE.read_text(), filename=str(COMPARE))
    vary = [sw.parse_vary("epsilon=0.001:50:999:log")]
    whole = sw.evaluate(doc, vary)
    monkeypatch.setattr(sweep_stream, "STREAM_FROM", 5)
    monkeypatch.setattr(sweep_stream, "STREAM_BLOCK", 100)
    stream = sw.evaluate_stream(doc, vary)
    assert isinstance(stream, sw.SweepStream)
    assert len(stream) == len(whole) == 4 * 999
    assert stream.column_names() == whole.column_names()
    assert stream.designs == whole.designs
    blocks = list(stream.blocks())
    # blocks of 100 values per design, joined up to at least 100 rows
    assert all(100 <= len(b["design"]) < 200 for b in blocks[:-1])
    assert len(blocks) > 30
    for name in whole.column_names():
        got = np.concatenate([b[name] for b in blocks])
        if got.dtype.kind == "f":  # the same bits: the same evaluation, point by point
            assert np.array_equal(got.view(np.int64), whole.columns[name].view(np.int64))
        else:
            assert got.tolist() == whole.columns[name].tolist()


def test_a_large_sweep_is_evaluated_in_bounded_memory(monkeypatch) -> None:
    """The evaluation and the CSV writer of a streamed sweep of 2·10⁵ rows hold blocks of
    4,096 rows: its peak is a fraction of what the columns of the one piece take."""
    doc = parse_yaml(SRS.read_text(), filename=str(SRS))
    vary = [sw.parse_vary("epsilon=0.001:50:200000:log")]
    monkeypatch.setattr(sweep_stream, "STREAM_FROM", 1000)
    monkeypatch.setattr(sweep_stream, "STREAM_BLOCK", 4096)

    def peak(make) -> tuple[int, int]:
        tracemalloc.start()
        try:
            written = make()
            return tracemalloc.get_traced_memory()[1], written
        finally:
            tracemalloc.stop()

    def held() -> int:
        result = sw.evaluate(doc, vary)
        return sum(len(c) for c in columns.csv_chunks(result.columns))

    def streamed() -> int:
        result = sw.evaluate_stream(doc, vary)
        assert isinstance(result, sw.SweepStream)
        return sum(len(c) for c in columns.csv_chunks(columns.sweep_columns(result)))

    held_peak, held_bytes = peak(held)
    stream_peak, stream_bytes = peak(streamed)
    assert stream_bytes == held_bytes
    grid = 200_000 * 8  # the grid itself is held: 1.6 MB
    assert held_peak > 8 * grid  # the columns: ~13 MB and more
    assert stream_peak < grid + 4 * 1024 * 1024


# ---- refused up front ------------------------------------------------------------------------


def test_a_grid_above_the_limit_is_refused_before_its_values_are_made(monkeypatch) -> None:
    def no_grid(*args: object, **kwargs: object) -> None:
        raise AssertionError("a grid was made")

    monkeypatch.setattr(vary_parsing, "parse_vary", no_grid)
    with pytest.raises(DesignError) as err:
        sw.parse_varies(["epsilon=0.1:2:10000000", "sampling.sample=1,2"])
    assert str(err.value.message) == (
        "20,000,000 grid points is more than the limit of 10,000,000"
    )
    # a rounded range counts its whole numbers: 10⁷ steps over 1..3 are 3 values
    with pytest.raises(DesignError, match="30,000,000 grid points"):
        sw.parse_varies(["epsilon=0.1:2:10000000", "sampling.sample=1:3:10000000"])


def test_the_command_refuses_a_grid_above_the_limit_with_exit_2(capsys) -> None:
    run = run_main(
        capsys,
        "sweep",
        str(SRS),
        "--vary",
        "epsilon=0.1:2:10000000",
        "--vary",
        "sampling.sample=1:10000000:10000000",
        expect=2,
    )
    assert "100,000,000,000,000 grid points is more than the limit of 10,000,000" in run.stderr


@settings(max_examples=150, deadline=None)
@given(
    start=st.integers(-50, 3000),
    span=st.integers(-3000, 3000),
    steps=st.integers(1, 400),
    log=st.booleans(),
)
def test_the_counted_size_of_a_spec_is_the_number_of_values_it_gives(
    start: int, span: int, steps: int, log: bool
) -> None:
    stop = start + span
    if log and (start <= 0 or stop <= 0):
        return
    for text in (
        f"sampling.sample={start}:{stop}:{steps}" + (":log" if log else ""),
        f"sampling.rate={start}.5:{stop}:{steps}" + (":log" if log else ""),
        f"sampling.sample={start},{stop},{steps}",
    ):
        spec = vary_parsing._read_spec(text, None)
        assert vary_parsing._size(spec) == len(sw.parse_vary(text).values)


def test_plot_refuses_more_points_than_a_figure_draws(capsys, tmp_path) -> None:
    out = tmp_path / "big.png"
    run = run_main(
        capsys, "sweep", str(SRS), "--vary", "epsilon=0.1:2:1000001", "--plot", str(out), expect=2
    )
    assert (
        "grid points drawn by `sweep --plot`: 1,000,001 is above the limit of 1,000,000"
        in run.stderr
    )
    assert not out.exists()


def test_the_head_and_the_chart_columns_of_a_stream(monkeypatch) -> None:
    doc = parse_yaml(SRS.read_text(), filename=str(SRS))
    vary = [sw.parse_vary("epsilon=0.001:50:999:log")]
    whole = sw.evaluate(doc, vary)
    monkeypatch.setattr(sweep_stream, "STREAM_FROM", 5)
    monkeypatch.setattr(sweep_stream, "STREAM_BLOCK", 100)
    stream = sw.evaluate_stream(doc, vary)
    assert isinstance(stream, sw.SweepStream)
    head = stream.head(250)
    assert len(head) == 250
    assert list(head.rows()) == list(whole.rows())[:250]
    drawn = stream.select(["design", "epsilon_prime.upper"])
    assert list(drawn.columns) == ["design", "epsilon_prime.upper"]
    assert drawn.columns["design"].strides == (0,)  # one name: one view, not 999 references
    assert drawn.columns["design"].tolist() == whole.columns["design"].tolist()
    assert np.array_equal(
        drawn.columns["epsilon_prime.upper"], whole.columns["epsilon_prime.upper"]
    )


def test_a_sweep_of_too_many_design_points_is_refused_before_it_starts() -> None:
    # 2·10⁶ rates: each point re-reads the design (~0.2–0.5 ms), about 10 minutes of work;
    # refused at once, naming the limit, while 2·10⁶ values of M's ε are one call
    import resource

    from ampcalc.model.limits import LIMITS

    t0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    run = run_ampcalc(
        "sweep",
        str(EXAMPLES / "poisson.yaml"),
        "--vary",
        "sampling.rate=0.001:0.5:2000000",
        "--format",
        "csv",
        expect=2,
    )
    assert f"limit of {LIMITS['sweep_design_points'].value:,}" in run.stderr
    assert "sampling.rate" in run.stderr and run.stdout == ""
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - t0 < 5  # CPU seconds
