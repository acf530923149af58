"""Warnings (the user should act or reconsider) against notes (context), and the errata
ampcalc corrects, stated as notes on the designs they concern, with oracle numbers.

Rule: a failed or borderline condition, a degraded or missing guarantee, an input to fix
-> ``warnings``; a relation conversion, a proof remark, a correction to a paper applied,
the reading of a theorem used -> ``notes``.
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath as mp
import oracle_stratified as orc
import pytest
from conftest import ROOT, array_path_only, example_designs, run_main

from ampcalc import engine
from ampcalc.designs.document import load_designs

SCHEMA = ROOT / "ampcalc" / "schema" / "result.schema.json"
DESIGNS = ROOT / "examples" / "designs"


def results(path: Path) -> dict[str, object]:
    return {r.name: r for r in (engine.bound(d) for d in load_designs(path))}


def one(doc: dict) -> object:
    return load_designs(doc)[0]


def in_notes(res: object, text: str) -> str:
    """The one note holding ``text``; it must not be a warning too."""
    hits = [n for n in res.notes if text in n]
    assert len(hits) == 1, (text, res.notes)
    assert not any(text in w for w in res.warnings), (text, res.warnings)
    return hits[0]


def in_warnings(res: object, text: str) -> None:
    assert any(text in w for w in res.warnings), (text, res.warnings)
    assert not any(text in n for n in res.notes), (text, res.notes)


# --- the classification ------------------------------------------------------------

#: (example file, design name, text of a note): context, never a warning
NOTE_KINDS = [
    ("compare.yaml", "SRS 100 of 10000, add-remove mechanism", "using ε_R = 2ε"),
    ("compare.yaml", "Poisson 1%, replace-one guarantee", "replace-one guarantee for Poisson"),
    ("cluster-equal.yaml", "2 of 20 households of 5", "is implemented as stated"),
    ("cluster-equal.yaml", "2 of 20 households of 5", "a simple random/Poisson sample"),
    ("data-dependent-size.yaml", None, "Lemma 2.1/3.1 claim"),
    ("data-dependent-size.yaml", None, "moves against the data size"),
    ("general-lower-bound.yaml", "cluster-membership test, as stated", "reading: statement: the"),
    ("general-lower-bound.yaml", "cluster-membership test, as stated", "App. D proof assumes"),
    ("general-lower-bound-prop61.yaml", None, "calls this result 'Theorem 6.1'"),
    ("group-household.yaml", "persons, 1% without replacement, household of 2", "group of 2"),
    ("srswr-bootstrap.yaml", None, "group-privacy relaxation"),
    ("importance-laplace.yaml", None, "it is a public map"),
    ("pps.yaml", None, "with iterative capping"),
    ("pps-successive.yaml", None, "inclusion probabilities of successive sampling"),
    ("pps-threshold.yaml", None, "is a per-record figure"),
    ("pws.yaml", None, "calibrated to it"),
    ("pws.yaml", None, "off by one"),
    ("random-size-binomial.yaml", None, "is Poisson sampling with rate p"),
    ("random-size-normal.yaml", None, "declared ε-DP under both relations"),
    ("random-size-normal.yaml", None, "normal size: t(m)"),
    ("releases.yaml", None, "covers all 3 releases together"),
    ("stratified-business-survey.yaml", "proportional, round to nearest", "no added or removed"),
    ("stratified-business-survey.yaml", "proportional, round to nearest", "with randomised"),
    ("stratified-business-survey.yaml", "Neyman allocation", "allocation rounding"),
    ("stratified-business-survey.yaml", "Neyman allocation", "the worst neighbour is a"),
    ("stratified-rounding.yaml", "rate 1 is a census", "rate 1: the sample is the whole"),
    ("stratified-fixed-total.yaml", "70 of 700 records, floor", "moved across strata is a"),
    ("systematic-random.yaml", None, "divides N = 10000"),
]

#: (example file, design name, text of a warning): the user should act or reconsider
WARNING_KINDS = [
    ("cluster-census-tracts.yaml", "20 of 500 census tracts", "no amplification at ε = 0.5"),
    ("data-dependent-size.yaml", None, "Δ must bound the allocation's change"),
    ("srswr-bootstrap.yaml", None, "accounting a bootstrap sample as `srswor` is unsound"),
    ("srswr-bootstrap.yaml", None, "degrades privacy"),
    ("importance-column-constant.yaml", None, "fixed by a public rule"),
    ("importance-kmeans.yaml", None, "does not amplify them"),
    ("pps.yaml", None, "PPS gives no amplification guarantee"),
    ("pps-cluster.yaml", None, "PPS cluster sampling gives no amplification guarantee"),
    ("random-size-pmf.yaml", None, "must not depend on the data"),
    ("stratified-business-survey.yaml", "Neyman allocation", "degradation: no amplification"),
    ("stratified-rounding.yaml", "14 records, one more takes round(1.5) = 2", "loses ε′ >= ε"),
    ("stratified-fixed-total.yaml", "70 of 700 records, floor", "degradation"),
    ("systematic-fixed.yaml", None, "no theorem gives an upper bound"),
    ("allocation-test.yaml", None, "lower bound only"),
]


def _pick(file: str, name: str | None) -> object:
    found = results(DESIGNS / file)
    return found[name] if name is not None else next(iter(found.values()))


@pytest.mark.parametrize(("file", "name", "text"), NOTE_KINDS, ids=lambda x: str(x)[:30])
def test_note_kind_lands_in_notes(file: str, name: str | None, text: str) -> None:
    in_notes(_pick(file, name), text)


@pytest.mark.parametrize(("file", "name", "text"), WARNING_KINDS, ids=lambda x: str(x)[:30])
def test_warning_kind_stays_a_warning(file: str, name: str | None, text: str) -> None:
    in_warnings(_pick(file, name), text)


def test_relation_remarks_split_warning_and_notes() -> None:
    # ε_R above 2ε: an input to fix (warning); δ_R = (1 + e^ε)δ: a conversion (note)
    over = one(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": "add-remove", "epsilon_replace_one": 3.0},
            "sampling": {"scheme": "srswor", "population": 1000, "sample": 10},
        }
    )
    in_warnings(engine.bound(over), "exceeds 2ε")
    approx = one(
        {
            "mechanism": {"epsilon": 1.0, "delta": 1e-6, "neighbours": "add-remove"},
            "sampling": {"scheme": "srswor", "population": 1000, "sample": 10},
        }
    )
    res = engine.bound(approx)
    in_notes(res, "(1 + e^ε)δ")
    in_notes(res, "using ε_R = 2ε = 2")
    assert res.warnings == ()


def test_invert_notes_and_warnings() -> None:
    d = one(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": "both"},
            "sampling": {"scheme": "srswor", "population": 1000, "sample": 10},
        }
    )
    # a target δ′ that allows any δ < 1 is context; the fast and the array paths agree
    res = engine.invert(d, target=1.0, target_delta=0.5)
    in_notes(res, "does not constrain M's δ")
    with array_path_only():
        slow = engine.invert(d, target=1.0, target_delta=0.5)
    assert slow.notes == res.notes and slow.warnings == res.warnings
    # no δ inversion for a design without δ′: a missing answer, a warning
    random_order = one(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": "both"},
            "sampling": {
                "scheme": "systematic",
                "population": 100,
                "interval": 10,
                "order": "random",
            },
        }
    )
    fixed = one(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": "both"},
            "sampling": {
                "scheme": "systematic",
                "population": 100,
                "interval": 10,
                "order": "fixed",
            },
        }
    )
    in_warnings(engine.invert(fixed, target=0.5), "no upper bound")
    assert engine.invert(random_order, target=0.5).warnings == ()


def test_json_has_notes_and_the_table_prints_them(capsys) -> None:
    doc = json.loads(
        run_main(capsys, "bound", str(DESIGNS / "systematic-random.yaml"), "--json").stdout
    )
    r = doc["results"][0]
    assert r["warnings"] == [] and len(r["notes"]) == 2
    assert list(r).index("notes") == list(r).index("warnings") + 1
    text = " ".join(
        run_main(capsys, "bound", str(DESIGNS / "systematic-fixed.yaml")).stdout.split()
    )
    assert "- warning: fixed, known ordering" in text
    assert '- note: Bun et al., §6.3 prints the interval as "k = |P|/m²"' in text
    inv = json.loads(
        run_main(capsys, "invert", str(DESIGNS / "srswor.yaml"), "-t", "1", "--json").stdout
    )
    assert inv["results"][0]["notes"] and inv["results"][0]["warnings"] == []
    val = json.loads(
        run_main(capsys, "validate", str(DESIGNS / "systematic-random.yaml"), "--json").stdout
    )
    assert len(val["results"][0]["notes"]) == 2


def _schema_check(capsys, *args: str, expect: int = 0) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    doc = json.loads(run_main(capsys, *args, "--json", expect=expect).stdout)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    for r in doc["results"]:
        assert isinstance(r["notes"], list) and all(isinstance(n, str) for n in r["notes"])


#: examples whose bound takes seconds (an exact LP per evaluation): slow tier
SLOW_EXAMPLES = {"allocation-test.yaml"}


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_EXAMPLES else p
        for p in example_designs()
    ],
    ids=lambda p: p.name,
)
def test_every_example_validates_against_the_schema(path: Path, capsys) -> None:
    for command in ("bound", "validate"):
        _schema_check(capsys, command, str(path))


@pytest.mark.slow
@pytest.mark.parametrize("path", example_designs(), ids=lambda p: p.name)
def test_every_example_inverts_to_the_schema(path: Path, capsys) -> None:
    # the privacy-constrained Laplace design is rebuilt for ε* = 0.5, which its public
    # radius cannot meet: a condition failure (exit 2) whose result still fits the schema
    expect = 2 if path.name == "importance-laplace.yaml" else 0
    _schema_check(capsys, "invert", str(path), "--target", "0.5", expect=expect)


# --- errata, as notes on the designs they concern --------------------------------------


def test_000_section_2_4_one_in_100_note() -> None:
    # 000 §2.4 prints ε′ = 0.01 (ε = 1, secret 1/100 sample) and ε = 100 for ε′ = 1
    mp.mp.dps = 40
    q = mp.mpf(1) / 100
    eps_prime = mp.log1p(q * mp.expm1(1))
    eps_for_1 = mp.log1p(mp.expm1(1) / q)
    at_100 = mp.log1p(q * mp.expm1(100))
    assert mp.nstr(eps_prime, 5) == "0.017037" and mp.nstr(eps_for_1, 5) == "5.1523"
    assert mp.nstr(at_100, 5) == "95.395"
    note = in_notes(results(DESIGNS / "srswor.yaml")["1% secret simple random sample"], "§2.4")
    # one short line: the paper's figures, the exact ones, and where the full account is
    assert "ε′ = 0.01 and ε = 100 for ε′ = 1" in note
    assert "Theorem 2.2 gives 0.017037 and 5.1523 (docs/corrections.md)" in note
    corrections = (ROOT / "docs" / "corrections.md").read_text(encoding="utf-8")
    assert "= 0.017037 at ε = 1" in corrections and "ε = 5.1523 reaches ε′ = 1" in corrections
    assert "ε′ = 95.395" in corrections
    inv = engine.invert(load_designs(DESIGNS / "srswor.yaml")[0], target=1.0)
    assert any("§2.4" in n for n in inv.notes)
    assert float(mp.mpf(inv.certified)) == pytest.approx(float(eps_for_1), rel=1e-14)
    # not on another rate
    two = one(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": "both"},
            "sampling": {"scheme": "srswor", "population": 10000, "sample": 200},
        }
    )
    assert not any("§2.4" in n for n in engine.bound(two).notes)


@pytest.mark.parametrize("file", ["systematic-fixed.yaml", "systematic-random.yaml"])
def test_000_section_6_3_interval_note(file: str) -> None:
    # 000 §6.3 prints k = |P|/m²; the ² is footnote marker 2: k = |P|/m (N = 10,000, k = 50)
    res = next(iter(results(DESIGNS / file).values()))
    note = in_notes(res, '"k = |P|/m²"')
    assert "k = 50 for N = 10000, m = N/k = 200" in note
    assert "N/m² = 0.25" in note  # 10000 / 200² = 0.25: no interval


def test_000_section_7_3_shortcut_note_on_invert() -> None:
    # spec §5.1: r = 0.01, target 1: exact λ = 1.90591, the shortcut ε′/(6r) gives 16.67
    d = one(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": "add-remove"},
            "sampling": {
                "scheme": "stratified",
                "rate": 0.01,
                "strata": [{"name": "s", "size": 100000}],
            },
        }
    )
    mp.mp.dps = 40
    t, r = mp.mpf(1), mp.mpf("0.01")
    u = (mp.sqrt(1 + 8 * mp.e**t) - 3) / (4 * r)  # 2r²u² + 3ru + 1 − e^T = 0
    exact = mp.log1p(u) / 2
    assert mp.nstr(exact, 6) == "1.90591"
    res = engine.invert(d, target=1.0)
    # the stratum's exact loss (docs/derivations.md §10.1) is below Theorem 7.2, so its
    # inverse certifies more than λ; at it the exact loss (mpmath) meets the target
    assert res.certified > float(exact)
    loss = orc.rr_exact(0.01, 100000, res.certified, 2 * res.certified)
    assert max(loss.values()) <= 1 and max(loss.values()) > 1 - 1e-9
    note = in_notes(res, "§7.3's shortcut")
    assert "gives ε = 16.6667 at ε′ = 1, r = 0.01" in note
    assert f"certifies ε = {res.certified:.6g}" in note and "exact loss" in note
    assert f"{16.666666666666668 / res.certified:.3g} times" in note
    assert res.details["shortcut"]["epsilon"] == pytest.approx(1 / 0.06, rel=1e-15)
    assert "notes" not in res.details
    bound = engine.bound(d)
    note = in_notes(bound, "approximate this bound as ε′ ≈ 6rε")
    assert "(0.06 at ε = 1, r = 0.01" in note  # 6·0.01·1


def test_000_neyman_vector_sums_note() -> None:
    # 000 §7.2 / App. E.1: the printed vectors sum to 10,004 and 10,005, not m = 10,000
    p = [1261, 621, 517, 1969, 833, 1947, 1058, 762, 257, 248, 306, 225]
    q = [1259, 620, 516, 1965, 831, 1943, 1056, 761, 257, 247, 306, 244]
    assert (sum(p), sum(q)) == (10004, 10005)
    assert max(abs(a - b) for a, b in zip(p, q, strict=True)) == 19
    assert sum(abs(a - b) for a, b in zip(p, q, strict=True)) == 37
    d = one(
        {
            "mechanism": {"epsilon": 0.1, "neighbours": "both"},
            "sampling": {"scheme": "stratified", "allocation": "neyman", "allocations": [p, q]},
            "guarantee": "replace-one",
        }
    )
    note = in_notes(engine.bound(d), "print Neyman allocations")
    assert "sum to 10,004 (P) and 10,005" in note and "Δ∞ = 19, Δ₁ = 37" in note
    assert "the allocations given here sum to 10004 and 10005" in note
    survey = results(DESIGNS / "stratified-business-survey.yaml")["Neyman allocation"]
    sums = survey.details["allocation_sums"]
    note = in_notes(survey, "print Neyman allocations")
    assert f"ampcalc's allocations here sum to {sums[0]} and {sums[1]}" in note


def test_004_sbh_ratio_note() -> None:
    # 004 §8.1: π*_i/φ_i ∈ [2, 2/ε] for i <= L; the top end is 2/(1 − e^{−ε}) (spec B9)
    res = results(DESIGNS / "pws-histogram.yaml")["pws-histogram"]
    eps = mp.mpf("0.01")
    top = 2 / (1 - mp.e ** (-eps))
    assert mp.nstr(top, 6) == "201.002"
    rows = res.details["frequencies"]
    big_l = res.details["L"]
    best = max((r["ratio"], r["frequency"]) for r in rows if r["frequency"] <= big_l)
    i = best[1]
    oracle = 2 * (1 - mp.e ** (-eps * i)) / (1 - mp.e ** (-eps))  # spec B9, q ≡ 1
    assert best[0] == pytest.approx(float(oracle), rel=1e-9) and i == 851
    note = in_notes(res, "puts π*_i/φ_i in [2, 2/ε]")
    assert "2/(1 − e^{−ε}) = 201.002, above 2/ε = 200" in note
    assert f"reaches {mp.nstr(oracle, 6)} at i = 851" in note
    # the paper's claim is about q ≡ 1: no such note on a sampled design
    sampled = results(DESIGNS / "pws.yaml")["pws-queries"]
    assert not any("2/ε]" in n for n in sampled.notes)


def test_two_stage_comparison_uses_the_overall_share() -> None:
    # 20 of 200 schools, each pupil kept with probability 0.2: a record is in the sample with
    # probability 0.1 · 0.2 = 0.02, so the comparison is A(0.02, ε) and says 0.02, not 0.1
    d = one(
        {
            "name": "20 of 200 schools, 20% within",
            "mechanism": {"epsilon": 1.0, "neighbours": "add-remove"},
            "sampling": {
                "scheme": "cluster",
                "clusters": {"count": 200, "size": 30},
                "chosen": 20,
                "within": {"scheme": "poisson", "rate": 0.2},
            },
        }
    )
    res = engine.bound(d)
    oracle = mp.log1p(mp.mpf("0.02") * mp.expm1(1))
    assert float(oracle) == pytest.approx(0.0337883, rel=1e-6)
    assert res.details["srs_same_fraction"] == pytest.approx(float(oracle), rel=1e-12)
    assert res.details["srs_same_fraction"] >= float(oracle)  # rounded up
    note = in_notes(res, "the same expected share of records (0.02)")
    assert f"ε′ = {float(oracle):.6g}" in note and "0.1)" not in note
