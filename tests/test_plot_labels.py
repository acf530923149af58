"""What a sweep figure says in words, read from its matplotlib objects and its file:
axis labels from the table of design paths (the path itself when it has none), the δ′
the ε′ holds at on the y axis, plain-number ticks on a log axis over a few decades, a
legend of the lines drawn and no others, 300 dpi, and the basis in the file's
metadata rather than drawn; and what ``sweep --plot`` prints.

The drawn values are checked against paper 000 Theorem 2.2 (simple random sampling
without replacement, replace-one: ε′ = log(1 + (m/N)(e^ε − 1)), exact, so the lower
and upper bound meet), evaluated in mpmath.
"""

from __future__ import annotations

import csv
import io

import mpmath
import numpy as np
import pytest
from conftest import EXAMPLES, ROOT, run_main

from ampcalc.analyses import sweep as sw
from ampcalc.designs.document import parse_yaml

pytest.importorskip("matplotlib")
import matplotlib.pyplot as plt
from matplotlib.text import Text
from PIL import Image

from ampcalc.output import plot, plot_labels

SRS = EXAMPLES / "srswor.yaml"  # N = 10000, m = 100, replace-one, ε = 1
PPS = EXAMPLES / "pps.yaml"  # a lower bound only (Bun et al., Proposition 6.1)
GAUSSIAN = ROOT / "examples" / "mechanisms" / "gaussian-poisson.yaml"  # δ′ = 10⁻⁶
FIGURE2 = ROOT / "examples" / "figures" / "000-figure2.yaml"  # random size, bounds apart


def evaluate(path, *vary: str, of: str = "bound") -> sw.Sweep:
    doc = parse_yaml(path.read_text(), filename=str(path))
    return sw.evaluate(doc, [sw.parse_vary(v) for v in vary], of=of, filename=str(path))


def theorem_2_2(m: float, n: float, eps: float) -> float:
    mpmath.mp.dps = 40
    return float(mpmath.log(1 + mpmath.mpf(m) / n * mpmath.expm1(eps)))


@pytest.fixture
def drawn():
    figures = []

    def draw(s: sw.Sweep, **kw):
        fig = plot.draw(s, **kw)
        figures.append(fig)
        fig.canvas.draw()  # tick labels are made at drawing time
        return fig

    yield draw
    for fig in figures:
        plt.close(fig)


def legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def tick_texts(axis) -> list[str]:
    lo, hi = sorted(axis.get_view_interval())
    return [
        t.get_text()
        for t, v in zip(axis.get_ticklabels(), axis.get_ticklocs(), strict=True)
        if lo <= v <= hi
    ]


# ---- labels ------------------------------------------------------------------------------


def test_label_table_names_known_paths_and_shows_others_as_written() -> None:
    assert plot.label("mechanism.gaussian.sigma") == "noise scale σ of the Gaussian mechanism"
    assert plot.label("sampling.rate") == "sampling rate q"
    assert plot.label("designs[2].sampling.rate") == "sampling rate q"
    assert plot.label("sampling.size.sd") == "standard deviation of the sample size (records)"
    assert plot.label("mechanism.epsilon").split(" (")[0] == "mechanism ε"
    assert plot.label("sampling.size.sd_unknown") == "sampling.size.sd_unknown"
    for path in plot.LABELS:  # every key is a path --vary accepts
        assert sw.parse_vary(f"{path}=1,2").path == path


def test_number_in_a_label() -> None:
    assert [plot_labels._number(v) for v in (0.0, 0.05, 1e-6, 2.5e-8, 1e5)] == [
        "0",
        "0.05",
        "10⁻⁶",
        "2.5×10⁻⁸",
        "10⁵",
    ]


def test_gaussian_sigma_axes_say_what_they_show(drawn) -> None:
    s = evaluate(GAUSSIAN, "mechanism.gaussian.sigma=0.5:8:4:log")
    ax = drawn(s).axes[0]
    assert ax.get_xlabel() == "noise scale σ of the Gaussian mechanism"
    assert ax.get_ylabel() == "population ε′ at δ′ = 10⁻⁶"
    assert drawn(s, xlabel="σ").axes[0].get_xlabel() == "σ"  # --xlabel still wins
    ax = drawn(s, y_column="delta_prime").axes[0]
    assert ax.get_ylabel() == "population δ′"
    assert np.allclose(ax.get_lines()[0].get_ydata(), 1e-6, rtol=0)


def test_pure_dp_says_delta_zero_and_a_heatmap_bar_too(drawn) -> None:
    assert drawn(evaluate(SRS, "epsilon=0.5:4:4")).axes[0].get_ylabel() == (
        "population ε′ at δ′ = 0"
    )
    fig = drawn(evaluate(SRS, "sampling.sample=10:1000:3:log", "epsilon=0.5:2:3"), heatmap=True)
    assert fig.axes[1].get_ylabel() == "population ε′ at δ′ = 0"  # the colour bar


# ---- ticks -------------------------------------------------------------------------------


def test_log_axis_over_a_decade_has_plain_ticks(drawn) -> None:
    ax = drawn(evaluate(SRS, "epsilon=0.5:8:5:log")).axes[0]
    assert ax.get_xscale() == "log"
    assert tick_texts(ax.xaxis) == ["0.5", "1", "2", "5"]
    assert all(t.get_text() == "" for t in ax.xaxis.get_minorticklabels())
    narrow = drawn(evaluate(SRS, "epsilon=0.9:1.1:5:log")).axes[0]
    assert tick_texts(narrow.xaxis) == ["0.9", "0.95", "1", "1.05", "1.1"]


def test_log_axis_over_three_decades_is_plain_and_wider_is_powers_of_ten(drawn) -> None:
    ax = drawn(evaluate(SRS, "epsilon=0.01:10:5:log")).axes[0]
    assert tick_texts(ax.xaxis) == ["0.01", "0.03", "0.1", "0.3", "1", "3", "10"]
    # y: ε′ from 10⁻⁴ to 5.4 (Theorem 2.2), more than three decades: powers of ten
    ys = ax.get_lines()[0].get_ydata()
    assert ys[0] == pytest.approx(theorem_2_2(100, 10000, 0.01), rel=1e-12)
    assert ys[-1] == pytest.approx(theorem_2_2(100, 10000, 10), rel=1e-12)
    assert ax.get_yscale() == "log"
    assert all(t.startswith("$\\mathdefault{10^") for t in tick_texts(ax.yaxis))
    wide = drawn(evaluate(SRS, "epsilon=0.001:100:5:log")).axes[0]
    assert all(t.startswith("$\\mathdefault{10^") for t in tick_texts(wide.xaxis))


# ---- legend ------------------------------------------------------------------------------


def test_tight_bounds_are_one_line_with_one_key(drawn) -> None:
    ax = drawn(evaluate(SRS, "epsilon=0.5:4:8")).axes[0]
    texts = legend_texts(ax)
    assert "upper bound = lower bound (tight)" in texts
    assert "lower bound (some M is this bad)" not in texts
    assert "upper bound (guarantee)" not in texts
    assert not [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    (curve,) = [ln for ln in ax.get_lines() if ln.get_label() == "1% secret simple random sample"]
    for x, y in zip(curve.get_xdata(), curve.get_ydata(), strict=True):
        assert y == pytest.approx(theorem_2_2(100, 10000, x), rel=1e-12)


def test_bounds_apart_list_both(drawn) -> None:
    ax = drawn(evaluate(FIGURE2, "sampling.size.sd=1,100,800")).axes[0]
    texts = legend_texts(ax)
    assert "upper bound (guarantee)" in texts and "lower bound (some M is this bad)" in texts
    assert [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]


def test_a_lower_bound_only_lists_no_upper(drawn) -> None:
    ax = drawn(evaluate(PPS, "epsilon=0.5,1,2")).axes[0]
    texts = legend_texts(ax)
    assert "lower bound (some M is this bad)" in texts
    assert not any(t.startswith("upper bound") for t in texts)


def test_a_lower_bound_missing_everywhere_is_not_listed(drawn) -> None:
    s = evaluate(SRS, "epsilon=0.5:4:8")
    s.columns["epsilon_prime.lower"][:] = np.nan  # as a scheme with no lower bound
    ax = drawn(s).axes[0]
    texts = legend_texts(ax)
    assert "upper bound (guarantee)" in texts
    assert not any("lower bound" in t for t in texts)
    assert not [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]


# ---- the file ----------------------------------------------------------------------------


def test_png_is_300_dpi_with_the_basis_in_its_metadata_not_drawn(tmp_path, drawn) -> None:
    s = evaluate(SRS, "epsilon=0.5:4:8")
    fig = drawn(s)
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert not any("Basis" in t or "Theorem" in t for t in texts)
    out = plot.figure(s, tmp_path / "f.png", title="SRS")
    with Image.open(out) as im:
        assert im.size == (2100, 1350)
        assert [round(d) for d in im.info["dpi"]] == [300, 300]
        meta = dict(im.text)
    assert meta["Description"] == "Basis: Bun et al., Theorem 2.2; Hu et al., Theorem 1"
    assert meta["Description"] == plot.caption(s)
    assert meta["Title"] == "SRS" and meta["Source"].startswith("ampcalc ")


def test_svg_carries_the_basis_as_its_description(tmp_path) -> None:
    s = evaluate(SRS, "epsilon=0.5:4:8")
    text = plot.figure(s, tmp_path / "f.svg").read_text()
    assert "<dc:description>Basis: Bun et al., Theorem 2.2; Hu et al., Theorem 1" in text


# ---- the command -------------------------------------------------------------------------


def test_plot_prints_a_summary_not_the_table(capsys, tmp_path) -> None:
    out = tmp_path / "f.png"
    run = run_main(capsys, "sweep", str(SRS), "--vary", "epsilon=0.5:8:5:log", "--plot", str(out))
    assert run.stdout == ""
    assert run.stderr.splitlines() == [
        f"wrote {out} (5 points; design: 1% secret simple random sample)",
        "Basis: Bun et al., Theorem 2.2; Hu et al., Theorem 1",
    ]
    table = run_main(
        capsys, "sweep", str(SRS), "--vary", "epsilon=1,2", "--plot", str(out), "--format", "table"
    )
    assert "1% secret simple random sample" in table.stdout  # asked for: the table


@pytest.mark.parametrize("flags", [["--format", "csv"], ["--json"]])
def test_plot_keeps_the_machine_output(flags, capsys, tmp_path) -> None:
    args = ["sweep", str(SRS), "--vary", "epsilon=0.5:8:5:log", *flags]
    plain = run_main(capsys, *args).stdout
    drawn = run_main(capsys, *args, "--plot", str(tmp_path / "f.png")).stdout
    if flags == ["--json"]:
        import json

        a, b = json.loads(plain), json.loads(drawn)
        assert a.keys() == b.keys() and len(a["rows"]) == len(b["rows"]) == 5
        for r, t in zip(a["rows"], b["rows"], strict=True):
            assert r.keys() == t.keys()
            for k, v in r.items():
                same = isinstance(v, float) and v == pytest.approx(t[k], rel=1e-12)
                assert same or v == t[k], (k, v, t[k])
        return
    a = list(csv.reader(io.StringIO(plain)))
    b = list(csv.reader(io.StringIO(drawn)))
    assert a[0] == b[0] and len(a) == len(b) == 6
    col = a[0].index("epsilon_prime.upper")
    for r, t in zip(a[1:], b[1:], strict=True):
        assert r[0] == t[0] and float(r[col]) == pytest.approx(float(t[col]), rel=1e-12)
        assert float(r[col]) == pytest.approx(theorem_2_2(100, 10000, float(r[2])), rel=1e-12)
