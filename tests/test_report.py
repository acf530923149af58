"""``ampcalc report``: the self-contained HTML privacy report.

Every page made here is parsed by html5lib in strict mode (any parse error fails the
test); the browser test renders it in headless Chromium (the Debian ``chromium``
package; ``.ci/run`` installs it) and reads the rendered sizes of the figures and
tables back from the DOM.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ampcalc.cli import main

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")
html5lib = pytest.importorskip("html5lib")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "designs"
FILES = [
    EXAMPLES / "srswor.yaml",  # one design, a figure, target from --target
    EXAMPLES / "group-household.yaml",  # two designs in one file
    EXAMPLES / "pps.yaml",  # no upper bound: lower bound only, warnings
    EXAMPLES / "pws.yaml",  # calibrated to its own target: no ε to vary, no figure
]
#: (design name, has a figure) in page order.
DESIGNS = [
    ("1% secret simple random sample", True),
    ("persons, 1% without replacement, household of 2", True),
    ("establishments of one firm, Poisson 5%, 3 establishments", True),
    ("PPS by turnover, m = 10", True),
    ("pws-queries", False),
]
SVG = "{http://www.w3.org/2000/svg}"


def parse(text: str) -> Any:
    """The page's tree; html5lib in strict mode raises on the first parse error."""
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(text)


def text_of(el: Any) -> str:
    return re.sub(r"\s+", " ", " ".join(el.itertext())).strip()


def sections(tree: Any) -> list[Any]:
    return [s for s in tree.iter("section") if "design" in (s.get("class") or "").split()]


def rows(table: Any) -> dict[str, str]:
    """A two-column table as {row header: cell text}."""
    out = {}
    for tr in table.iter("tr"):
        th, td = tr.find("th"), tr.find("td")
        if th is not None and td is not None:
            out[text_of(th)] = text_of(td)
    return out


def table(section: Any, cls: str) -> Any:
    found = [t for t in section.iter("table") if t.get("class") == cls]
    assert len(found) == 1, f"{cls}: {len(found)} tables"
    return found[0]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("report") / "report.html"
    code = main(["report", *map(str, FILES), "--target", "1", "-o", str(out)])
    return {"code": code, "path": out, "text": out.read_text(encoding="utf-8")}


def test_the_page_parses_strictly_with_a_section_table_and_figure_per_design(
    made: dict[str, Any],
) -> None:
    assert made["code"] == 0
    tree = parse(made["text"])
    found = sections(tree)
    assert [text_of(s.find("h2")) for s in found] == [name for name, _ in DESIGNS]
    for s, (name, has_figure) in zip(found, DESIGNS, strict=True):
        table(s, "bounds")
        table(s, "mechanism")
        table(s, "sampling")
        svgs = list(s.iter(f"{SVG}svg"))
        assert len(svgs) == (1 if has_figure else 0), name
        if has_figure:
            assert svgs[0].get("aria-label") == f"ε′ against ε for {name}"
            assert svgs[0].get("viewBox"), "the figure scales by its viewBox"
        else:
            assert "No figure: the scheme calibrates its mechanism to the target ε′" in text_of(s)
        assert s.find(".//ul[@class='conditions']") is not None, name
    # one inline <svg> per figure, as the header says, and nothing else drawn
    figures = sum(1 for _, has in DESIGNS if has)
    assert len(list(tree.iter(f"{SVG}svg"))) == figures
    assert f"{len(DESIGNS)} designs, {figures} figures." in text_of(tree.find(".//header"))
    # ids stay unique although every figure comes from matplotlib's same id scheme
    ids = [el.get("id") for el in tree.iter() if el.get("id")]
    assert len(ids) == len(set(ids))


def test_the_numbers_are_the_engines_paper_000_section_2_4(made: dict[str, Any]) -> None:
    # 000 §2.4 (as corrected): a 1% simple random sample and ε = 1 give ε′ = 0.017037,
    # and target ε′ = 1 certifies ε = 5.1523 (Theorem 2.2: ε′ = ln(1 + (m/N)(e^ε − 1))).
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    upper = mp.log(1 + mp.mpf(100) / 10000 * (mp.e - 1))
    certified = mp.log(1 + (mp.e - 1) / (mp.mpf(100) / 10000))
    tree = parse(made["text"])
    srs = sections(tree)[0]
    bounds = rows(table(srs, "bounds"))
    assert bounds["ε′ upper bound (the guarantee)"] == f"{float(upper):.6g}" == "0.0170369"
    assert bounds["ε′ lower bound (some M is this bad)"] == "0.0170369"
    assert bounds["verdict"].startswith("amplifies ")
    inverse = rows(table(srs, "inverse"))
    assert inverse["target ε′ (given for this report)"] == "1"
    assert inverse["certified ε (largest M's ε that meets the target)"] == "5.1523"
    assert f"{float(certified):.6g}" == "5.1523"
    # the summary repeats the table's figures
    summary = next(t for t in tree.iter("table") if t.get("class") == "summary")
    first = [text_of(td) for td in summary.find("tbody").find("tr").iter("td")]
    assert first == [
        "1% secret simple random sample",
        *("srswor", "1", "0.0170369", "amplifies", "1", "5.1523"),
    ]


def test_mechanism_and_sampling_are_in_words(made: dict[str, Any]) -> None:
    srs = sections(parse(made["text"]))[0]
    assert rows(table(srs, "mechanism")) == {
        "ε (M's privacy parameter)": "1",
        "δ (the chance M's ε may fail)": "0",
        "holds under": "both add-remove and replace-one",
    }
    sampling = rows(table(srs, "sampling"))
    assert sampling["population"] == "10,000 population size N (public)"
    assert sampling["sample"] == "100 sample size m, at most N"
    assert "Simple random sample of m of N records without replacement" in text_of(srs)
    pws = sections(parse(made["text"]))[-1]
    assert rows(table(pws, "mechanism"))["mechanism"] == (
        "built by the scheme itself, calibrated to the target (ε′ = 0.1, δ′ = 0.001)"
    )


def test_warnings_and_references(made: dict[str, Any]) -> None:
    from ampcalc import api

    tree = parse(made["text"])
    pps = sections(tree)[3]
    warnings = [text_of(li) for li in pps.find(".//ul[@class='warnings']").iter("li")]
    design = api.load_designs(FILES[2])[0]
    assert len(api.bound(design).warnings) == 1  # the inclusion remark is a note
    # the bound's warnings, then the inverse's own (each once)
    assert warnings == [
        *api.bound(design).warnings,
        "the theory gives no upper bound for this design: no ε is certified",
    ]
    assert "the theory gives no upper bound for this design: no ε is certified" in (
        api.invert(design, 1.0).warnings
    )
    # no upper bound: the figure draws the lower bound only and says so
    caption = text_of(pps.find(".//figcaption"))
    assert caption.startswith(
        "Population ε′ as M's ε varies (log scale), for this design's sampling. The theory "
        "gives no upper bound here: only the lower bound is drawn."
    )
    refs = tree.find(".//section[@id='references']")
    listed = [text_of(li.find("strong")) for li in refs.iter("li")]
    cited = {
        b.reference.short for f in FILES for d in api.load_designs(f) for b in api.bound(d).basis
    }
    assert sorted(listed) == sorted(cited)


def test_nothing_is_loaded_from_the_network(made: dict[str, Any]) -> None:
    tree = parse(made["text"])
    remote = re.compile(r"^\s*(https?:)?//", re.I)
    for el in tree.iter():
        tag = el.tag.split("}")[-1] if isinstance(el.tag, str) else ""
        assert tag not in ("script", "iframe", "object", "embed", "img", "link"), tag
        for name, value in el.attrib.items():
            if name.split("}")[-1] in ("src", "href", "srcset", "data", "poster"):
                assert tag == "a" or not remote.match(value), (tag, name, value)
    styles = " ".join(text_of(s) for s in tree.iter("style"))
    assert "@import" not in styles and "url(" not in styles
    assert not re.search(r"<(script|link|img)\b", made["text"], re.I)


def test_wrote_file_on_stderr_and_the_page_is_written_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    out.write_text("old", encoding="utf-8")
    assert main(["report", str(FILES[0]), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err == f"wrote {out}\n"
    assert out.read_text(encoding="utf-8").rstrip().endswith("</html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]  # no temporary left
    # the input itself is never the output
    assert main(["report", str(out), "-o", str(out)]) == 2


def test_to_standard_output_and_reproducible_with_source_date_epoch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    pages = []
    for _ in range(2):
        assert main(["report", str(FILES[0]), "-o", "-"]) == 0
        run = capsys.readouterr()
        assert run.err == ""
        pages.append(run.out)
    assert pages[0] == pages[1]  # same input, same bytes (figures included)
    assert "Made by ampcalc" in pages[0] and " on 1970-01-01 00:00 UTC from " in pages[0]
    parse(pages[0])


def test_no_target_and_a_design_outside_its_conditions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    code = main(
        [
            "report",
            str(EXAMPLES / "srswr-subsample.yaml"),
            "--set",
            "mechanism.delta=1e-6",
            "-o",
            str(out),
        ]
    )
    assert code == 2  # as `bound`: the page is written, the error is reported
    assert "with-replacement 1% subsample: srswr: M has δ > 0" in capsys.readouterr().err
    s = sections(parse(out.read_text(encoding="utf-8")))[0]
    assert "No bounds: srswr: M has δ > 0" in text_of(s)
    assert not list(s.iter(f"{SVG}svg"))
    assert main(["report", str(FILES[0]), "-o", str(out)]) == 0
    s = sections(parse(out.read_text(encoding="utf-8")))[0]
    assert "No target: no target ε′ was given for this report or in the design" in text_of(s)
    assert len(list(s.iter(f"{SVG}svg"))) == 1


def test_notes_are_shown_when_a_result_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ampcalc import engine

    bound = engine.bound

    class WithNotes:
        def __init__(self, result: Any) -> None:
            self._result = result
            self.notes = ("000 §2.4 prints 0.01 for this ε′; it is 0.017037",)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._result, name)

    monkeypatch.setattr(engine, "bound", lambda *a, **k: WithNotes(bound(*a, **k)))
    out = tmp_path / "r.html"
    assert main(["report", str(FILES[0]), "-o", str(out)]) == 0
    s = sections(parse(out.read_text(encoding="utf-8")))[0]
    notes = [text_of(li) for li in s.find(".//ul[@class='notes']").iter("li")]
    assert notes == ["000 §2.4 prints 0.01 for this ε′; it is 0.017037"]


def test_text_is_escaped(tmp_path: Path) -> None:
    design = tmp_path / "d.yaml"
    design.write_text(
        "name: '<script>alert(1)</script> & <b>co</b>'\n"
        "mechanism: {epsilon: 1.0, neighbours: both}\n"
        "sampling: {scheme: srswor, population: 100, sample: 10}\n",
        encoding="utf-8",
    )
    out = tmp_path / "r.html"
    assert main(["report", str(design), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;co&lt;/b&gt;" in text
    tree = parse(text)
    assert not list(tree.iter("script")) and not list(tree.iter("b"))
    assert text_of(sections(tree)[0].find("h2")) == "<script>alert(1)</script> & <b>co</b>"


def test_without_output_or_jinja2_it_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(FILES[0])]) == 2
    assert capsys.readouterr().err == (
        "ampcalc: error: give the page's file name with -o FILE (e.g. -o report.html)\n"
    )
    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 -> ImportError
    out = tmp_path / "r.html"
    assert main(["report", str(FILES[0]), "-o", str(out)]) == 2
    assert "pip install 'ampcalc[report]'" in capsys.readouterr().err
    assert not out.exists()


def test_citation_takes_strings_and_reference_objects() -> None:
    from ampcalc import api
    from ampcalc.analyses.report import evaluate
    from ampcalc.output.report import citation, entry_text, references, render

    assert citation("Bun et al., Theorem 2.2") == (
        "Bun et al., Theorem 2.2",
        "",
    )
    assert citation({"reference": "Bun et al.", "where": "Theorem 2.2"}) == (
        "Bun et al.",
        "Theorem 2.2",
    )
    # a result whose basis holds {reference, where} objects and a references map
    entry = {"authors": ["A. One", "B. Two"], "title": "A <title>", "year": 2022, "arxiv": "1"}
    (report,) = evaluate(api.load_designs(FILES[0]))
    report.bound["basis"] = [
        {"reference": "One et al.", "where": "Theorem 1"},
        {"reference": "One et al.", "where": "Lemma 2"},
    ]
    report.bound["references"] = {"One et al.": entry}
    (ref,) = references([report])
    assert (ref.key, ref.places, ref.designs) == (
        "One et al.",
        ["Theorem 1", "Lemma 2"],
        ["1% secret simple random sample"],
    )
    assert entry_text(ref.entry) == [
        ("authors", "A. One, B. Two"),
        ("title", "A <title>"),
        ("year", "2022"),
        ("arxiv", "1"),
    ]
    tree = parse(render([report]))
    basis = [text_of(li) for li in sections(tree)[0].find(".//ul[@class='basis']").iter("li")]
    assert basis == ["One et al., Theorem 1", "One et al., Lemma 2"]
    (listed,) = tree.find(".//section[@id='references']").iter("li")
    shown = re.sub(r"\s+", " ", "".join(listed.itertext())).strip()  # as a reader sees it
    assert shown.startswith("One et al. A. One, B. Two, “A <title>”, 2022, arXiv:1. Cited for")
    assert "Cited for: Theorem 1; Lemma 2." in shown
    assert shown.endswith("Used by: 1% secret simple random sample.")


def test_starting_the_cli_does_not_load_the_report_dependencies() -> None:
    code = (
        "import sys, ampcalc.cli.app\n"
        "print(sorted(m for m in ('jinja2', 'markupsafe', 'matplotlib') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_template_ships_with_the_package() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["ampcalc"]
    assert "output/templates/*.j2" in globs
    assert (ROOT / "ampcalc" / "output" / "templates" / "report.html.j2").is_file()
    extras = config["project"]["optional-dependencies"]
    assert {"jinja2>=3.1", "matplotlib>=3.7"} <= set(extras["report"]) <= set(extras["test"])
    assert "html5lib>=1.1" in extras["test"]


# --- the browser test ---------------------------------------------------------------------

#: Appended to a copy of the page: writes the rendered box and visibility of every
#: figure and table (and the drawn paths in each figure) into the DOM as JSON.
PROBE = """<script>
(function () {
  var out = {figures: [], tables: []};
  function box(e) {
    var r = e.getBoundingClientRect(), cs = getComputedStyle(e);
    return {cls: e.getAttribute("class"), w: r.width, h: r.height, visibility: cs.visibility,
            display: cs.display, opacity: cs.opacity};
  }
  document.querySelectorAll("svg.figure").forEach(function (e) {
    var b = box(e), drawn = 0;
    e.querySelectorAll("path").forEach(function (p) {
      var bb = p.getBBox(); if (bb.width > 0 || bb.height > 0) { drawn += 1; }
    });
    b.drawn = drawn; b.text = e.querySelectorAll("text").length; out.figures.push(b);
  });
  document.querySelectorAll("table").forEach(function (e) { out.tables.push(box(e)); });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""
CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_headless_chromium_shows_every_figure_and_table(
    made: dict[str, Any], tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    page = tmp_path / "probe.html"
    page.write_text(made["text"].replace("</body>", PROBE + "\n</body>"), encoding="utf-8")
    started = time.perf_counter()
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-extensions",
            "--disable-background-networking",
            "--no-first-run",
            "--no-default-browser-check",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1000,800",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.perf_counter() - started
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, f"no probe output (exit {done.returncode}): {done.stderr[-2000:]}"
    facts = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    figures = sum(1 for _, has in DESIGNS if has)
    assert len(facts["figures"]) == figures
    for f in facts["figures"]:
        assert f["visibility"] == "visible" and f["display"] == "block" and f["opacity"] == "1"
        # the figure scales to the page: about as wide as the text column, 6.6 x 3.7 in
        assert 600 <= f["w"] <= 1000 and math.isclose(f["h"] / f["w"], 3.7 / 6.6, rel_tol=0.05)
        assert f["drawn"] >= 3 and f["text"] >= 5  # curves drawn, axes labelled
    # summary, then per design mechanism + sampling + bounds (+ inverse when no error)
    assert len(facts["tables"]) == 1 + 4 * len(DESIGNS)
    for t in facts["tables"]:
        assert t["visibility"] == "visible" and t["display"] == "table", t
        assert t["w"] > 200 and t["h"] > 40, t
    assert seconds < 30, f"chromium took {seconds:.1f} s"
