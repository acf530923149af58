"""Citations a reader can follow: one reference list, basis objects, no file names.

Every example's JSON validates against the schema, cites only listed works and carries
their full references; no output names a file of the project's private sources; the
list in docs/references.md ("The works cited") is the list's own text; every cited section of
docs/derivations.md exists.
"""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from conftest import ROOT, example_designs, run_main

from ampcalc import api
from ampcalc.math import accuracy
from ampcalc.model import references as refs
from ampcalc.model.references import (
    BUN_2020_WP,
    BUN_2022,
    DERIVATIONS,
    IMPORTANCE,
    REFERENCES,
    Citation,
    Reference,
    cite,
    describe,
    keys_used,
    references_used,
)
from ampcalc.output.render import flatten

SCHEMA = json.loads((ROOT / "ampcalc" / "schema" / "result.schema.json").read_text())
#: names of the project's private sources that must never reach a reader
FORBIDDEN = re.compile(r"\.txt\b|spec §|spec [AB]\d|exact-lp|\b00[0-4]_[0-9a-f]{16}")


# The generators of docs/references.md's list and table (the page holds their output;
# the tests below keep them equal to ampcalc/model/references.py).


def _markdown_full(ref: Reference) -> str:
    text = ref.full()
    if ref.url is not None and not ref.url.startswith("http"):  # a page of this repository
        # linked from docs/references.md, so relative to docs/
        text = text.replace(f"<{ref.url}>", f"[{ref.url}]({ref.url.removeprefix('docs/')})")
    return text


def markdown() -> str:
    """docs/references.md's list, "The works cited" (a test keeps the two identical)."""
    lines = []
    for ref in REFERENCES.values():
        lead = "" if ref.short == ref.title else f"**{ref.short}** — "
        lines.append(f"- {lead}{_markdown_full(ref)} (`{ref.key}`)")
    return "\n".join(lines) + "\n"


def provenance_markdown() -> str:
    """docs/references.md's table: where each entry's fields were read."""
    lines = ["| key | short form | where the fields were read |", "|---|---|---|"]
    for ref in REFERENCES.values():
        source = ref.source.replace("|", "\\|")
        lines.append(f"| `{ref.key}` | {ref.short} | {source} |")
    return "\n".join(lines) + "\n"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``ampcalc.cli.main`` in-process, whatever its exit code."""
    from ampcalc.cli.app import main

    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _check_document(doc: dict, where: str) -> None:
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    cited = doc.get("references", {})
    assert set(cited) <= set(REFERENCES), where
    for key in keys_used(doc):
        assert key in cited, (where, key)
    for item in _basis_items(doc):
        assert item["reference"] in REFERENCES, (where, item)
        assert item["reference"] in cited, (where, item)


def _basis_items(value: object) -> list[dict]:
    found: list[dict] = []
    if isinstance(value, dict):
        for key, v in value.items():
            if key == "basis" and isinstance(v, list):
                found.extend(v)
            else:
                found.extend(_basis_items(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_basis_items(v))
    return found


MECHANISM_EXAMPLES = sorted((ROOT / "examples" / "mechanisms").glob("*.yaml"))


@pytest.mark.parametrize("path", example_designs() + MECHANISM_EXAMPLES, ids=lambda p: p.name)
def test_every_example_cites_listed_works_and_no_file(capsys, path) -> None:
    _, out, err = _run(capsys, "bound", str(path), "--json")
    assert not FORBIDDEN.search(out), (path, FORBIDDEN.search(out))
    assert not FORBIDDEN.search(err), path
    doc = json.loads(out)
    _check_document(doc, f"bound {path.name}")
    assert all(r["basis"] for r in doc["results"] if "error" not in r), path


@pytest.mark.slow
@pytest.mark.parametrize("path", example_designs(), ids=lambda p: p.name)
def test_every_example_table_and_inverse_name_no_file(capsys, path) -> None:
    code, out, err = _run(capsys, "invert", str(path), "--json")
    if code == 2 and "no target" in err:  # stdout holds the JSON error document
        _, out, err = _run(capsys, "invert", str(path), "--json", "--target", "1")
    assert not FORBIDDEN.search(out + err), (path, FORBIDDEN.search(out + err))
    _check_document(json.loads(out), f"invert {path.name}")
    _, table, err = _run(capsys, "bound", str(path))
    assert not FORBIDDEN.search(table + err), path


def test_schemes_cite_listed_works(capsys) -> None:
    run = run_main(capsys, "schemes", "--json")
    doc = json.loads(run.stdout)
    _check_document(doc, "schemes")
    assert all(s["basis"] for s in doc["schemes"])
    assert not FORBIDDEN.search(run.stdout)
    text = run_main(capsys, "schemes").stdout
    assert not FORBIDDEN.search(text)
    assert "basis: Bun et al., Theorem 2.2; Hu et al., Theorem 1" in text
    assert "references:" in text


def test_basis_is_objects_with_full_references_at_the_top(capsys) -> None:
    srs = ROOT / "examples" / "designs" / "srswor.yaml"
    doc = json.loads(run_main(capsys, "bound", str(srs), "--json").stdout)
    (r,) = doc["results"]
    assert r["basis"] == [
        {"reference": "bun-sampling-schemes", "where": "Theorem 2.2"},
        {"reference": "hu-accuracy-gains", "where": "Theorem 1"},
    ]
    assert list(doc["references"]) == ["bun-sampling-schemes", "hu-accuracy-gains"]
    assert doc["references"]["bun-sampling-schemes"] == {
        "short": "Bun et al.",
        "authors": [
            "Mark Bun",
            "Jörg Drechsler",
            "Marco Gaboardi",
            "Audra McMillan",
            "Jayshree Sarathy",
        ],
        "title": (
            "Controlling Privacy Loss in Sampling Schemes: an Analysis of Stratified and "
            "Cluster Sampling"
        ),
    }
    table = run_main(capsys, "bound", str(srs)).stdout
    assert "basis: Bun et al., Theorem 2.2; Hu et al., Theorem 1" in table
    assert "Controlling Privacy Loss in Sampling Schemes" in table  # the footer
    csv = run_main(capsys, "bound", str(srs), "--format", "csv").stdout
    assert "Bun et al., Theorem 2.2; Hu et al., Theorem 1" in csv


def test_sweep_designs_cite_objects(capsys) -> None:
    srs = ROOT / "examples" / "designs" / "srswor.yaml"
    run = run_main(capsys, "sweep", str(srs), "--vary", "epsilon=0.5,1", "--json")
    doc = json.loads(run.stdout)
    _check_document(doc, "sweep")
    assert doc["designs"][0]["basis"][0] == {
        "reference": "bun-sampling-schemes",
        "where": "Theorem 2.2",
    }


def test_short_forms() -> None:
    # a field is filled only where the paper's own text states it: 000 states no year,
    # 001 its arXiv stamp, 003 no authors (so its title is its short form)
    assert BUN_2022.short == "Bun et al."
    assert BUN_2020_WP.short == "Bun et al. 2020"
    assert BUN_2020_WP.arxiv == "2007.12674v1"
    assert IMPORTANCE.short == "Personalized Privacy Amplification via Importance Sampling"
    assert IMPORTANCE.authors == () and IMPORTANCE.year is None
    assert REFERENCES["balle-barthe-gaboardi-2018"].short == "Balle et al. 2018"
    assert REFERENCES["balle-wang-2018"].short == "Balle and Wang 2018"
    shorts = [r.short for r in REFERENCES.values()]
    assert len(set(shorts)) == len(shorts)
    assert all(r.source for r in REFERENCES.values())
    assert str(cite(BUN_2022, "Theorem 2.2")) == "Bun et al., Theorem 2.2"
    assert describe({"reference": "bun-survey-sampling", "where": None}) == "Bun et al. 2020"
    assert cite(BUN_2022, "§4.1").to_dict() == {
        "reference": "bun-sampling-schemes",
        "where": "§4.1",
    }


def test_references_named_in_messages_are_listed() -> None:
    # the longer short form is read first: "Bun et al. 2020" is not also "Bun et al."
    doc = {"warnings": ["see Bun et al. 2020, Lemma 3.1"]}
    assert list(references_used(doc)) == ["bun-survey-sampling"]
    doc = {"warnings": ["Bun et al., §4.1 and Bun et al. 2020, Lemma 3.1"]}
    assert list(references_used(doc)) == ["bun-sampling-schemes", "bun-survey-sampling"]
    assert references_used({"warnings": ["nothing cited"]}) == {}


def test_csv_flattens_basis_to_readable_text() -> None:
    row = flatten({"basis": [cite(BUN_2022, "Theorem 2.2").to_dict(), {"reference": "x"}]})
    assert row["basis"] == "Bun et al., Theorem 2.2; x"


def test_math_layer_spells_the_short_forms_of_the_list() -> None:
    # math/ may not import model/: its two spelled-out short forms must stay equal
    assert accuracy.HU_2023 == REFERENCES["hu-accuracy-gains"].short
    assert accuracy.DERIVATIONS == DERIVATIONS.short


def test_docs_references_list_is_the_list() -> None:
    doc = (ROOT / "docs" / "references.md").read_text()
    m = re.search(r"^## The works cited\n\n(.*?)\n(?=## )", doc, re.S | re.M)
    assert m, "docs/references.md has no '## The works cited' section"
    body = m.group(1)
    listed = "".join(line + "\n" for line in body.splitlines() if line.startswith("- "))
    assert listed == markdown(), (
        "docs/references.md's list differs from ampcalc/model/references.py; regenerate it "
        "with: PYTHONPATH=tests python -c 'from test_references import markdown; "
        'print(markdown(), end="")\''
    )


def test_docs_references_table_is_the_list() -> None:
    doc = (ROOT / "docs" / "references.md").read_text()
    assert doc.endswith(provenance_markdown()), (
        "docs/references.md's table differs from ampcalc/model/references.py; regenerate "
        "it from provenance_markdown() in tests/test_references.py"
    )


def _derivation_sections_cited() -> set[str]:
    sections: set[str] = set()
    for path in (ROOT / "ampcalc").rglob("*.py"):
        text = path.read_text()
        sections.update(re.findall(r'derivation\("(§[\d.]+)"\)', text))
        sections.update(re.findall(r"\{DERIVATIONS\}, (§[\d.]+)", text))
        sections.update(re.findall(r"\{DERIVATIONS\}, \"\s*\"(§[\d.]+)", text))
    for scheme in api.schemes():
        for item in scheme["basis"]:
            if item["reference"] == DERIVATIONS.key:
                sections.add(item["where"])
    return sections


def test_every_cited_derivation_section_exists() -> None:
    doc = (ROOT / "docs" / "derivations.md").read_text()
    headings = set(re.findall(r"^#{2,3} (§[\d.]+)", doc, re.M))
    cited = _derivation_sections_cited()
    assert cited, "no derivation cited"
    assert cited <= headings, sorted(cited - headings)
    assert {"§1.2", "§2.1", "§3.2", "§3.3", "§3.4"} <= cited


def test_every_reference_of_a_basis_is_a_citation() -> None:
    for scheme in refs.REFERENCES.values():
        assert isinstance(scheme.key, str) and scheme.key == scheme.key.lower()
    from ampcalc import schemes as registry

    for s in registry.all_schemes():
        assert all(isinstance(c, Citation) for c in s.basis), s.name


#: a paper named by its file number: "(000 Theorem 5.2)", "paper 002", "002 §4.3"
FILE_NUMBER = re.compile(r"\bpaper 00[0-4]\b|\b00[0-4] (?:§|Theorem|Lemma|Fig|Appendix|eq)")


def test_examples_and_docs_cite_by_author_not_file() -> None:
    # what a user reads includes the example files' comments and names, and the docs
    files = [
        *sorted((ROOT / "examples").rglob("*.yaml")),
        *sorted((ROOT / "examples").rglob("*.sh")),
        *sorted((ROOT / "examples").rglob("*.py")),
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
    ]
    bad = []
    for path in files:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            hit = FORBIDDEN.search(line) or FILE_NUMBER.search(line)
            if hit and not ("figures/00" in line or "-figure" in line or "data/" in line):
                bad.append(f"{path.relative_to(ROOT)}:{i}: {hit.group()!r}")
    assert not bad, "\n".join(bad[:20])


#: a paper cited by its file number in the source ("004 Alg. 2", "Lemma 3.3 of 001")
SOURCE_FILE_NUMBER = re.compile(
    r"(?<![\d,.\w])(?:paper )?00[0-4](?![\d\w]|,\d|\.\d)|\b00[0-4]_[0-9a-f]{16}"
)


def test_source_cites_papers_by_author_not_file_number() -> None:
    # comments and docstrings are read by contributors, and docstrings by `help()`:
    # they cite the papers as the output does (Bun et al., Hu et al., Cohen et al. 2021)
    bad = []
    for path in sorted((ROOT / "ampcalc").rglob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            hit = SOURCE_FILE_NUMBER.search(line)
            if hit:
                bad.append(f"{path.relative_to(ROOT)}:{i}: {hit.group()!r}")
    assert not bad, "cite the paper by its authors, as the output does:\n" + "\n".join(bad[:20])
