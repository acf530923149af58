"""``ampcalc report`` of a named mechanism (a Gaussian on a two-stage school design).

The page is parsed by html5lib in strict mode; its numbers are checked against the
analytic Gaussian (Balle and Wang 2018, Theorem 8), Poisson amplification (Balle, Barthe
and Gaboardi 2018) and the cluster bound (Bun et al., Theorem 5.2) computed in mpmath;
the browser test renders it in headless Chromium (a screenshot that is not blank, every
figure drawn) and prints three designs to A4 (pages filled from the first, every page
numbered, every figure's page naming its design).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_report import PROBE, SVG, parse, rows, sections, table, text_of

from ampcalc.cli import main

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "designs"
GAUSSIAN = EXAMPLES / "cluster-two-stage-gaussian.yaml"
FILES = [GAUSSIAN, EXAMPLES / "srswor.yaml", EXAMPLES / "cluster-two-stage.yaml"]
NAMES = [
    "20 of 200 schools, 20% of pupils, Gaussian noise",
    "1% secret simple random sample",
    "10 of 100 schools, 10% of pupils",
]
ABOUT = ["--organisation", "Statistics Office", "--dataset", "School survey 2025"]
ABOUT += ["--release", "First release"]
CHROMIUM = shutil.which("chromium")
BROWSER = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-background-networking",
    "--no-first-run",
    "--no-default-browser-check",
]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("named") / "report.html"
    code = main(["report", *map(str, FILES), *ABOUT, "-o", str(out)])
    text = out.read_text(encoding="utf-8")
    return {"code": code, "path": out, "text": text, "tree": parse(text)}


def gaussian(made: dict[str, Any]) -> Any:
    return sections(made["tree"])[0]


# --- mpmath oracles ------------------------------------------------------------------


def _mp() -> Any:
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    return mp


def gaussian_delta(mp: Any, mu: Any, eps: Any) -> Any:
    """Balle and Wang 2018, Theorem 8: δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)."""
    return mp.ncdf(mu / 2 - eps / mu) - mp.exp(eps) * mp.ncdf(-mu / 2 - eps / mu)


def gaussian_epsilon(mp: Any, mu: Any, delta: Any) -> Any:
    """The ε at which the Gaussian's δ(ε) equals ``delta`` (δ falls with ε): bisection
    to 40 digits."""
    lo, hi = mp.mpf(0), mp.mpf(50)
    for _ in range(200):
        mid = (lo + hi) / 2
        if gaussian_delta(mp, mu, mid) > delta:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def school_epsilon_prime(mp: Any, sigma: Any) -> Any:
    """ε′ of the example at δ′ = 1e-6: M's point at δ = δ′/r (the Poisson stage has
    δ₁ = rδ, and the cluster stage keeps δ′ = δ₁ here), ε₁ = log(1 + r(e^ε − 1)), then
    B(A, K, ε₁) = log[(A e^ε₁ + (1 − A)e^{−Kε₁}) / (A + (1 − A)e^{−Kε₁})]."""
    r, a, k = mp.mpf("0.2"), mp.mpf(20) / 200, 1197 + 1196
    eps = gaussian_epsilon(mp, 1 / mp.mpf(sigma), mp.mpf("1e-6") / r)
    e1 = mp.log(1 + r * mp.expm1(eps))
    tail = (1 - a) * mp.exp(-k * e1)
    return mp.log((a * mp.exp(e1) + tail) / (a + tail)), eps, e1


def test_the_largest_school_sizes_are_the_example_files() -> None:
    # the oracle above uses K = n(1) + n(2) = 1197 + 1196 and k = 200
    sizes = [
        int(line.split(",")[1])
        for line in (EXAMPLES / "data" / "schools.csv").read_text().splitlines()[1:]
    ]
    assert len(sizes) == 200 and sorted(sizes)[-2:] == [1196, 1197] and min(sizes) == 150


# --- the page -------------------------------------------------------------------------


def test_the_gaussian_page_parses_strictly_with_both_figures(made: dict[str, Any]) -> None:
    assert made["code"] == 0
    found = sections(made["tree"])
    assert [text_of(s.find("h2")) for s in found] == NAMES
    s = gaussian(made)
    labels = [svg.get("aria-label") for svg in s.iter(f"{SVG}svg")]
    assert labels == [f"ε′ against the noise σ for {NAMES[0]}", f"δ′ against ε′ for {NAMES[0]}"]
    titles = [text_of(p) for p in s.iter("p") if p.get("class") == "figure-title"]
    assert titles == [
        f"Figure 1. {NAMES[0]}: ε′ against the noise σ",
        f"Figure 2. {NAMES[0]}: δ′ against ε′",
    ]
    # no internal message in place of the calibration, no "no curve"
    assert "invert" not in text_of(s) and "No figure" not in text_of(s)
    assert s.find(".//*[@class='error']") is None
    header = text_of(made["tree"].find(".//header"))
    assert "3 designs, 4 figures." in header
    ids = [el.get("id") for el in made["tree"].iter() if el.get("id")]
    assert len(ids) == len(set(ids))


def test_the_gaussian_numbers_are_the_analytic_gaussian_through_both_stages(
    made: dict[str, Any],
) -> None:
    mp = _mp()
    s = gaussian(made)
    bounds = rows(table(s, "bounds"))
    upper, eps, _ = school_epsilon_prime(mp, 2)
    alone = gaussian_epsilon(mp, mp.mpf("0.5"), mp.mpf("1e-6"))
    assert bounds == {
        "target δ′ (the chance the ε′ guarantee may fail)": "1e-06",
        "ε′ upper bound (the guarantee)": f"{float(upper):.6g}",
        "ε′ lower bound (this mechanism loses at least this)": "—",
        "ε without sampling (the noise alone, at the same δ′)": f"{float(alone):.6g}",
        "M's ε at the point of its profile the bound uses": f"{float(eps):.6g}",
        "M's δ at that point (M is (ε, δ)-private there)": "5e-06",
        "the guarantee holds for": (
            "add-remove neighbours (datasets that differ in one record added or removed)"
        ),
        "verdict": bounds["verdict"],
    }
    assert (f"{float(upper):.6g}", f"{float(alone):.6g}", f"{float(eps):.6g}") == (
        "0.872323",
        "2.25408",
        "2.07472",
    )
    assert bounds["verdict"].startswith("amplifies the upper bound on ε′ is below")


def test_the_calibration_round_trip(made: dict[str, Any]) -> None:
    mp = _mp()
    s = gaussian(made)
    cal = rows(table(s, "calibration"))
    assert cal["target ε′ (the design's target)"] == "1"
    assert cal["target δ′"] == "1e-06"
    assert cal["ε′ upper bound at that σ"] == "1"
    assert cal["this design's σ"] == "2"
    assert cal["σ at or below which the target surely fails"] == "— (no lower bound here)"
    sigma = mp.mpf(cal["smallest σ that meets the target (sensitivity 1)"])
    assert f"{float(sigma):.6g}" == "1.85129"
    # at the printed σ (six digits) ε′ is the target; a little less noise misses it
    at, _, _ = school_epsilon_prime(mp, sigma)
    assert abs(at - 1) < 2e-5
    below, _, _ = school_epsilon_prime(mp, sigma * (1 - mp.mpf("1e-4")))
    assert below > 1
    # the summary repeats it, with the noise in place of M's ε
    summary = next(t for t in made["tree"].iter("table") if t.get("class") == "summary")
    first = [text_of(td) for td in summary.find("tbody").find("tr").iter("td")]
    assert first == [NAMES[0], "cluster", "σ = 2", "0.872323", "amplifies", "1", "σ ≥ 1.85129"]


def test_mechanism_and_every_sampling_stage_in_words(made: dict[str, Any]) -> None:
    s = gaussian(made)
    assert rows(table(s, "mechanism")) == {
        "mechanism": "Gaussian noise added to the released statistics",
        "μ = Δ/σ: the noise's privacy in one number (smaller is more private)": "0.5",
        "noise standard deviation σ": "2",
        "sensitivity Δ: how far one record can move the statistic": "1",
        "holds under": "add-remove (one record added or removed)",
    }
    sampling = rows(table(s, "sampling"))
    assert list(sampling) == [
        "clusters",
        "stage 1: clusters chosen",
        "stage 2: within each chosen cluster",
    ]
    assert sampling["clusters"].startswith(
        "200 clusters of 150 to 1197 records, 125,825 records in all (sizes from the file "
        "data/schools.csv)"
    )
    assert sampling["stage 1: clusters chosen"].startswith("20 ℓ clusters chosen at random")
    assert sampling["stage 2: within each chosen cluster"].startswith(
        "probability 0.2 each record of a chosen cluster is kept independently"
    )
    # the other two-stage design shows its second stage too
    other = rows(table(sections(made["tree"])[2], "sampling"))
    assert other["stage 2: within each chosen cluster"].startswith("probability 0.1 ")


def test_every_number_has_a_label_in_words(made: dict[str, Any]) -> None:
    number = re.compile(r"\d")
    for s in sections(made["tree"]):
        for t in s.iter("table"):
            for tr in t.iter("tr"):
                th, td = tr.find("th"), tr.find("td")
                if td is None or not number.search(text_of(td)):
                    continue
                label = text_of(th)
                # a label of words, not a field name of the design file
                assert re.search(r"[a-zA-Z]{3,}", label) and "_" not in label, label
                assert label not in ("mu", "sigma", "scale", "within", "chosen"), label


def test_no_design_file_or_command_line_syntax_on_the_page(made: dict[str, Any]) -> None:
    tree = made["tree"]
    body = tree.find(".//body")
    shown = []

    def walk(el: Any) -> None:
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag.startswith(SVG) or tag in ("style", "script"):
            return
        shown.append(el.text or "")
        for child in el:
            walk(child)
            shown.append(child.tail or "")

    walk(body)
    text = " ".join(shown)
    for syntax in ("{", "}", "[...]", "--", "`", "details.", "<=", ">="):
        assert syntax not in text, syntax
    for el in body.iter():
        assert "{" not in (el.get("title") or "")


def test_the_fixed_same_share_note_is_shown(made: dict[str, Any]) -> None:
    notes = [text_of(li) for li in sections(made["tree"])[2].find(".//ul[@class='notes']")]
    (note,) = [n for n in notes if "simple random/Poisson sample" in n]
    assert note.startswith("a simple random/Poisson sample of the same expected share of records")
    assert "(0.01)" in note and "same fraction" not in note


def test_captions_and_legends_describe_what_is_drawn(made: dict[str, Any]) -> None:
    def figure(s: Any, n: int) -> tuple[str, list[str]]:
        fig = list(s.iter("figure"))[n]
        legend = [text_of(t) for t in fig.iter(f"{SVG}text")]
        return text_of(fig.find("figcaption")), legend

    g, srs, two = sections(made["tree"])
    caption, legend = figure(g, 0)  # upper bound only: no band, no lower bound listed
    assert "shaded" not in caption and "Only the upper bound is drawn" in caption
    assert "upper bound on ε′ (the guarantee)" in legend
    assert not any("lower bound" in x for x in legend)
    assert "smallest σ meeting the target = 1.85129" in legend
    caption, legend = figure(g, 1)
    assert "target δ′ = 1e-06" in legend and "this design: ε′ = 0.872323" in legend
    caption, _ = figure(srs, 0)  # the bounds coincide: exact, nothing shaded
    assert "shaded" not in caption and "coincide: the bound is exact" in caption
    caption, legend = figure(two, 0)  # two-stage with Poisson within: the bounds meet
    assert "shaded" not in caption and "coincide: the bound is exact" in caption
    assert not any("target" in x or "certified" in x for x in legend)  # none drawn


def test_a_gap_between_the_bounds_is_a_shaded_band(tmp_path: Path) -> None:
    # a random size with an explicit pmf: lower 0.158565 < upper 0.18747 (no matching
    # bound is known for it)
    out = tmp_path / "gap.html"
    assert main(["report", str(EXAMPLES / "random-size-pmf.yaml"), "-o", str(out)]) == 0
    (only,) = sections(parse(out.read_text(encoding="utf-8")))
    fig = next(only.iter("figure"))
    caption = text_of(fig.find("figcaption"))
    legend = [text_of(t) for t in fig.iter(f"{SVG}text")]
    assert "The shaded band lies between the lower and the upper bound" in caption
    assert "lower bound (some M is this bad)" in legend


def test_organisation_dataset_and_release_are_optional(
    made: dict[str, Any], tmp_path: Path
) -> None:
    about = made["tree"].find(".//dl[@class='about']")
    assert [text_of(x) for x in about] == [
        *("Organisation", "Statistics Office", "Dataset", "School survey 2025"),
        *("Release", "First release"),
    ]
    style = " ".join(text_of(x) for x in made["tree"].iter("style"))
    assert "counter(page)" in style and "counter(pages)" in style
    out = tmp_path / "r.html"
    assert main(["report", str(FILES[1]), "-o", str(out)]) == 0
    assert parse(out.read_text(encoding="utf-8")).find(".//dl[@class='about']") is None


def test_a_running_head_is_a_safe_css_string() -> None:
    from ampcalc.output.report import css_string

    assert css_string('Office "A" </style> ·') == (
        '"Office \\000022 A\\000022  \\00003c /style\\00003e  \\0000b7 "'
    )


# --- in the browser and on paper ------------------------------------------------------


@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_chromium_draws_the_gaussian_figures_and_the_screenshot_is_not_blank(
    made: dict[str, Any], tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    image = pytest.importorskip("PIL.Image")
    page = tmp_path / "probe.html"
    page.write_text(made["text"].replace("</body>", PROBE + "\n</body>"), encoding="utf-8")
    done = subprocess.run(
        [
            *(CHROMIUM, *BROWSER, f"--user-data-dir={tmp_path / 'p1'}"),
            *("--window-size=1000,800", "--dump-dom", page.as_uri()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    facts = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert len(facts["figures"]) == 4
    for f in facts["figures"]:
        assert f["visibility"] == "visible" and f["display"] == "block"
        assert f["w"] >= 600 and f["drawn"] >= 3 and f["text"] >= 5
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            *(CHROMIUM, *BROWSER, f"--user-data-dir={tmp_path / 'p2'}"),
            *("--window-size=1000,2400", "--hide-scrollbars", f"--screenshot={shot}"),
            made["path"].as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    img = image.open(shot).convert("L")
    histogram = img.histogram()
    white = sum(histogram[250:])
    assert white < 0.97 * img.width * img.height  # text, tables and figures drawn
    assert sum(1 for n in histogram if n) > 50  # anti-aliased text and lines, not a flat fill


def _pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", pdf))


@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_three_designs_print_on_a4_numbered_and_named(
    made: dict[str, Any], tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    pdf = tmp_path / "report.pdf"
    subprocess.run(
        [
            *(CHROMIUM, *BROWSER, f"--user-data-dir={tmp_path / 'p'}"),
            *("--no-pdf-header-footer", f"--print-to-pdf={pdf}", made["path"].as_uri()),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    count = _pages(pdf.read_bytes())
    # three designs, four figures, references and the glossary: filled pages, no page
    # left blank before a design
    assert 6 <= count <= 10, count
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed: page texts not checked")
    texts = [
        subprocess.run(
            ["pdftotext", "-layout", "-f", str(i), "-l", str(i), str(pdf), "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for i in range(1, count + 1)
    ]
    # the first page holds the header, the summary and the first design's start
    first = re.sub(r"\s+", " ", texts[0])
    assert "Privacy report" in first and "Summary" in first and NAMES[0] in first
    for i, text in enumerate(texts, start=1):
        flat = re.sub(r"\s+", " ", text)
        assert f"Page {i} of {count}" in flat, i
        assert "Statistics Office" in flat, i  # the running head
        assert len(flat) > 400, f"page {i} is nearly blank"
        for n in re.findall(r"Figure (\d+)\. ", flat):
            title = re.search(rf"Figure {n}\. (.*?): ", flat)
            assert title and title.group(1) in NAMES, (i, n)
