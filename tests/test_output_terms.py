"""Tables speak in plain words: no JSON key, library identifier or keyword argument in
what ``bound``, ``invert`` and ``budget`` print for people, every ``details`` key an
example produces explained in docs/glossary.md, and JSON/CSV keys left as scripts know
them."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, example_designs, run_ampcalc

from ampcalc.output.render import detail_line
from ampcalc.output.terms import (
    DETAIL_LABELS,
    GLOSSARY,
    GLOSSARY_LINE,
    composed_as,
    detail_label,
    plain_references,
    with_glossary,
)

DESIGNS = [str(p.relative_to(ROOT)) for p in example_designs()]
LEDGER = "examples/budget/year.yaml"
SOLVE = "examples/designs/cluster-two-stage-gaussian.yaml"

#: Identifiers a table must never show (named in the project's list of newcomer problems).
FORBIDDEN = (
    "K_upper",
    "K_lower",
    "srs_same_fraction",
    "φ_SbH",
    "first_frequency_half",
    "settled_from",
    "knob.value",
    "knob.impossible_below",
    "use_connect_dots",
    "=False",
    "=True",
    "details.",
    "discretization interval",
    "randomized response at ε′ (pure)",
    "dp_accounting PLD",
)

#: Words with ``_`` that tables may still show: notation (N_h, q_i, …) and the names of
#: design-file fields a user writes (in notes that tell them what to set). The last group
#: are JSON keys named in prose written by the sampling schemes, left for a later change.
ALLOWED_UNDERSCORED = {
    "C_i", "N_h", "S_h", "a_i", "m_h", "q_i", "r_i", "π_i", "E_t", "ε_R", "ε_D", "2ε_D", "δ_R",
    "dp_accounting",  # the accountant's library, named as a work the output cites
    "epsilon_replace_one", "total_sample", "min_value", "value_bound", "max_frequency",
    "apportionment_sensitivity",
}  # fmt: skip


def _run(*args: str) -> str:
    return run_ampcalc(*args, env={"COLUMNS": "80"}, expect=0).stdout


@pytest.fixture(scope="module")
def tables() -> dict[str, str]:
    # designs with a named mechanism are solved for their noise, not inverted for ε
    named = ("cluster-two-stage-gaussian.yaml", "schools-one-sample.yaml")
    designs_ok = [d for d in DESIGNS if not d.endswith(named)]
    return {
        "bound": _run("bound", *DESIGNS),
        "invert": _run("invert", "--target", "1", *designs_ok),
        "budget": _run("budget", LEDGER),
        "invert --solve": _run("invert", SOLVE, "--solve", "sigma", "--target", "1"),
    }


@pytest.fixture(scope="module")
def bound_json() -> list[dict]:
    docs = json.loads(_run("bound", "--json", *DESIGNS))
    return [r for doc in docs for r in doc["results"]]


@pytest.mark.parametrize("command", ["bound", "invert", "budget", "invert --solve"])
def test_tables_show_no_internal_identifier(tables: dict[str, str], command: str) -> None:
    text = tables[command]
    for word in FORBIDDEN:
        assert word not in text, f"{command} table shows {word!r}"
    for key in DETAIL_LABELS:
        if "_" in key:
            assert not re.search(rf"(?<![\w.`]){re.escape(key)}(?![\w`])", text) or (
                key in ALLOWED_UNDERSCORED
            ), f"{command} table shows the details key {key!r}"
    words = {
        token
        for w in text.split()
        if "/" not in w and ".yaml" not in w
        for token in re.findall(r"[^\W_]+(?:_[^\W_]+)+", w)
    }
    assert words <= ALLOWED_UNDERSCORED, f"{command} table shows {words - ALLOWED_UNDERSCORED}"


@pytest.mark.parametrize("command", ["bound", "invert", "budget", "invert --solve"])
def test_tables_link_the_glossary_once(tables: dict[str, str], command: str) -> None:
    assert tables[command].count(GLOSSARY) == 1
    assert (ROOT / GLOSSARY).is_file()


def test_detail_keys_of_examples_are_labelled_and_in_glossary(bound_json: list[dict]) -> None:
    glossary = (ROOT / GLOSSARY).read_text(encoding="utf-8")
    defined = set(re.findall(r"^\| `([^`]+)` \|", glossary, flags=re.M))
    keys = {k for r in bound_json for k in (r.get("details") or {})}
    assert "K_upper" in keys and "srs_same_fraction" in keys  # the cluster examples ran
    assert keys <= defined, f"not in {GLOSSARY}: {sorted(keys - defined)}"
    assert set(DETAIL_LABELS) <= defined
    scalar = {
        k
        for r in bound_json
        for k, v in (r.get("details") or {}).items()
        if not isinstance(v, (dict, list))
    }
    shown = scalar - {"reference_epsilon", "tight", "inverse", "inverse_lower"}
    assert shown <= set(DETAIL_LABELS), f"no table label: {sorted(shown - set(DETAIL_LABELS))}"


def test_json_and_csv_keep_their_keys(bound_json: list[dict]) -> None:
    cluster = next(r for r in bound_json if r["scheme"] == "cluster")
    assert {"K_upper", "K_lower", "srs_same_fraction"} <= set(cluster["details"])
    text = _run("bound", "--format", "csv", "examples/designs/cluster-equal.yaml")
    header = next(csv.reader(io.StringIO(text)))
    assert "details.K_upper" in header and "details.srs_same_fraction" in header
    doc = json.loads(_run("budget", "--json", LEDGER))
    assert doc["entries"][0]["composed_as"] == "randomized response at ε′ (pure)"
    # JSON names the accountant and its estimates, never a library's keyword argument
    assert doc["total"]["accountant"].startswith("by privacy-loss distributions")
    assert set(doc["total"]["accuracy"]) == {"optimistic", "width", "meaning"}
    assert not re.search(r"\w=\w", json.dumps(doc))  # no keyword=argument (a formula's
    # "π = 0.1" is spaced)


def test_detail_line_uses_labels_and_falls_back_to_the_key() -> None:
    line = detail_line({"population": 100, "K_upper": 10, "new_key": 2, "strata": []})
    assert line == (
        "details: population N = 100, largest group of records a cluster change "
        "moves (K, upper) = 10, new_key = 2"
    )
    assert detail_label("unheard_of") == "unheard_of"


def test_remarks_name_keys_by_their_label() -> None:
    text = plain_references("ε′ = 0.01 (details.srs_same_fraction); see details.unheard_of")
    assert text == (
        "ε′ = 0.01 (“same share sampled at random would give ε′”); see details.unheard_of"
    )
    assert plain_references("at knob.value") == "at “noise scale meeting the target”"


def test_accountant_words() -> None:
    assert composed_as("randomized response at ε′ (pure)") == "exactly, as a pure ε′ release"
    assert composed_as("dp_accounting sampled gaussian PLD") == (
        "by the accountant, as a sampled gaussian mechanism"
    )
    assert composed_as("something new") == "something new"
    assert composed_as(None) is None
    assert GLOSSARY in GLOSSARY_LINE
    assert with_glossary(["references:", "  - Bun et al."]) == [
        f"references (terms explained in {GLOSSARY}):",
        "  - Bun et al.",
    ]
    assert with_glossary(["budget ε = 2"]) == ["budget ε = 2", GLOSSARY_LINE]


def test_glossary_is_linked_from_symbols() -> None:
    assert "(glossary.md)" in (ROOT / "docs" / "symbols.md").read_text(encoding="utf-8")
    assert isinstance(ROOT, Path)
