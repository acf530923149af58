"""What a sweep figure says, read back from its matplotlib objects: the no-sampling
line's legend matches where it is drawn, identical curves are labelled and drawn so
both show, the y axis goes logarithmic over more than two decades, and a heatmap can
carry the contour of a target ε′.

The bound values are checked against paper 000 Theorem 2.2 (simple random sampling
without replacement, replace-one: ε′ = log(1 + (m/N)(e^ε − 1))), evaluated in mpmath.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from conftest import EXAMPLES, run_main

from ampcalc.analyses import sweep as sw
from ampcalc.designs.document import parse_yaml
from ampcalc.model.errors import AmpcalcError

pytest.importorskip("matplotlib")
import matplotlib.pyplot as plt
from matplotlib.contour import ContourSet

from ampcalc.output import plot

SRS = EXAMPLES / "srswor.yaml"  # N = 10000, m = 100, replace-one
COMPARE = EXAMPLES / "compare.yaml"  # Poisson 1%, SRS 100 of 10000, two more


def evaluate(path, *vary: str, of: str = "bound") -> sw.Sweep:
    doc = parse_yaml(path.read_text(), filename=str(path))
    return sw.evaluate(doc, [sw.parse_vary(v) for v in vary], of=of, filename=str(path))


def theorem_2_2(m: float, n: float, eps: float) -> float:
    """000 Theorem 2.2 (exact for SRSWOR under replace-one), in mpmath."""
    mpmath.mp.dps = 40
    return float(mpmath.log(1 + mpmath.mpf(m) / n * mpmath.expm1(eps)))


def legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


@pytest.fixture
def drawn():
    figures = []

    def draw(s: sw.Sweep, **kw):
        fig = plot.draw(s, **kw)
        figures.append(fig)
        return fig.axes[0]

    yield draw
    for fig in figures:
        plt.close(fig)


def test_no_sampling_legend_says_2eps_where_the_line_is_at_2eps(drawn) -> None:
    s = evaluate(COMPARE, "epsilon=0.5:4:8")
    ax = drawn(s)
    texts = legend_texts(ax)
    assert "no sampling (ε′ = ε)" in texts
    assert "no sampling, replace-one charge (ε′ = 2ε)" in texts
    dotted = [ln for ln in ax.get_lines() if ln.get_color() == "0.2"]
    ratios = sorted(
        {float(np.round(np.mean(ln.get_ydata() / ln.get_xdata()), 12)) for ln in dotted}
    )
    # one line at ε (add-remove guarantee of Poisson, replace-one of SRS) and one at 2ε:
    # an add-remove mechanism charged for a replacement (SRS, add-remove mechanism)
    assert ratios == [1.0, 2.0]
    by_style = {ln.get_linestyle(): ln for ln in dotted}
    handles = {h.get_label(): h for h in ax.get_legend().legend_handles}
    two = handles["no sampling, replace-one charge (ε′ = 2ε)"]
    line = by_style[two.get_linestyle()]
    assert np.array_equal(line.get_ydata(), 2 * line.get_xdata())


def test_a_single_replace_one_design_says_eps(drawn) -> None:
    ax = drawn(evaluate(SRS, "epsilon=0.5:4:8"))
    texts = legend_texts(ax)
    assert "no sampling (ε′ = ε)" in texts and not any("2ε" in t for t in texts)


def test_identical_curves_are_labelled_and_drawn_visibly(drawn) -> None:
    s = evaluate(COMPARE, "epsilon=0.5:4:8")
    ax = drawn(s)
    texts = legend_texts(ax)
    assert "SRS 100 of 10000 (identical to Poisson 1%)" in texts
    assert "Poisson 1%, replace-one guarantee (identical to Poisson 1%)" in texts
    assert "SRS 100 of 10000, add-remove mechanism" in texts  # not identical: plain
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    base = lines["Poisson 1%"]
    twin = lines["SRS 100 of 10000 (identical to Poisson 1%)"]
    assert base.get_marker() in (None, "None", "") and base.get_linestyle() == "-"
    assert twin.get_marker() == "o" and twin.get_linestyle() == "--"
    assert np.allclose(twin.get_ydata(), base.get_ydata(), rtol=1e-12)
    # the curve both show: 000 Theorem 2.2 at m/N = 100/10000 (and Poisson at q = 0.01)
    for x, y in zip(twin.get_xdata(), twin.get_ydata(), strict=True):
        assert y == pytest.approx(theorem_2_2(100, 10000, x), rel=1e-12)


def test_y_axis_goes_log_over_more_than_two_decades(drawn) -> None:
    wide = evaluate(SRS, "epsilon=0.01:10:12:log")
    ys = wide.columns["epsilon_prime.upper"]
    assert ys.max() / ys.min() > 100  # 1.0e-4 to 5.4
    assert drawn(wide).get_yscale() == "log"
    assert drawn(wide, log_y=False).get_yscale() == "linear"
    narrow = evaluate(SRS, "epsilon=1:2:5")
    assert drawn(narrow).get_yscale() == "linear"
    assert drawn(narrow, log_y=True).get_yscale() == "log"


def test_heatmap_contour_of_a_target(drawn) -> None:
    s = evaluate(SRS, "sampling.sample=10:10000:12:log", "epsilon=0.1:5:10")
    ax = drawn(s, heatmap=True, contour=0.5)
    sets = [c for c in ax.collections if isinstance(c, ContourSet)]
    assert len(sets) == 1 and list(sets[0].levels) == [0.5]
    assert legend_texts(ax) == ["upper bound ε′ = 0.5 (target)"]
    # every vertex of the contour lies in a grid cell whose corners bracket 0.5
    ms = np.asarray(s.varies[0].values, dtype=float)
    es = np.asarray(s.varies[1].values, dtype=float)
    vertices = np.concatenate([p.vertices for p in sets[0].get_paths() if len(p.vertices)])
    assert len(vertices) > 3
    for m, e in vertices:
        i = min(max(np.searchsorted(ms, m) - 1, 0), len(ms) - 2)
        j = min(max(np.searchsorted(es, e) - 1, 0), len(es) - 2)
        corners = [theorem_2_2(ms[a], 10000, es[b]) for a in (i, i + 1) for b in (j, j + 1)]
        assert min(corners) <= 0.5 + 1e-9 and max(corners) >= 0.5 - 1e-9, (m, e)
    plain = drawn(s, heatmap=True)
    assert not [c for c in plain.collections if isinstance(c, ContourSet)]


def test_a_contour_the_grid_never_reaches_says_so(drawn) -> None:
    s = evaluate(SRS, "sampling.sample=10:100:4:log", "epsilon=0.1:1:4")
    ax = drawn(s, heatmap=True, contour=3.0)  # the largest bound here is 0.017
    assert not [c for c in ax.collections if isinstance(c, ContourSet)]
    assert legend_texts(ax) == ["upper bound ε′ = 3 (target): not reached on this grid"]


def test_a_contour_needs_a_heatmap_of_bounds(capsys, tmp_path) -> None:
    s = evaluate(SRS, "epsilon=0.1:1:4")
    with pytest.raises(AmpcalcError, match="heatmap"):
        plot.draw(s, contour=1.0)
    err = run_main(
        capsys,
        "sweep",
        str(SRS),
        "--vary",
        "epsilon=0.1:1:4",
        "--contour",
        "1",
        "--plot",
        str(tmp_path / "f.png"),
        expect=2,
    ).stderr
    assert "--contour" in err and "--heatmap" in err
    assert not (tmp_path / "f.png").exists()


def test_cli_draws_the_contour_to_a_file(capsys, tmp_path) -> None:
    out = tmp_path / "grid.svg"
    run_main(
        capsys,
        "sweep",
        str(SRS),
        "--vary",
        "sampling.sample=10:10000:4:log",
        "--vary",
        "epsilon=0.1:5:5",
        "--heatmap",
        "--contour",
        "0.5",
        "--plot",
        str(out),
        "--format",
        "csv",
    )
    assert "upper bound ε′ = 0.5 (target)" in out.read_text()
