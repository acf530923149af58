"""Every example design evaluates, and the README shows real output."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT, example_designs, run_ampcalc

import ampcalc
from ampcalc import engine


@pytest.mark.parametrize("path", example_designs(), ids=lambda p: p.name)
def test_example_evaluates_through_the_cli(path) -> None:
    doc = run_ampcalc("bound", str(path), "--json").json()
    assert doc["results"], path
    for r in doc["results"]:
        assert "error" not in r, (path, r.get("error"))
        lo, up = r["epsilon_prime"]["lower"], r["epsilon_prime"]["upper"]
        assert lo is not None or up is not None or r["verdict"] == "calibrated", (path, r)
        if lo is not None and up is not None:
            assert lo <= up, (path, r["name"])


@pytest.mark.parametrize("path", example_designs(), ids=lambda p: p.name)
def test_example_validates_and_inverts_in_process(path) -> None:
    for design in ampcalc.load_designs(path):
        res = engine.bound(design)
        assert res.error is None
        if res.upper is not None and design.mechanism is not None and res.verdict != "calibrated":
            target = float(res.upper)
            inv = engine.invert(design, target=target)
            if inv.certified is not None:
                # the design's own ε is certified for its own upper bound (up to rounding)
                assert engine.bound(design, inv.certified).upper <= target


def test_readme_output_blocks_are_real() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "readme.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, (
        proc.stderr + "(a new or changed scheme changes `ampcalc schemes`: regenerate "
        "docs/schemes.md with python scripts/readme.py docs/schemes.md; see "
        "docs/contributing.md, step 8)"
    )


def test_readme_check_forgives_only_the_last_units_of_full_precision_numbers() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import readme
    finally:
        sys.path.pop(0)
    # numpy's log1p/expm1 loops differ in the last ulp between instruction sets
    assert readme.same_output("lower 0.017036863236176526,", "lower 0.017036863236176522,")
    assert readme.same_output("0.0017168072711331\n", "0.0017168072711330998\n")
    # a change a reader could see is a difference
    assert not readme.same_output("ε′ ≤ 0.017037", "ε′ ≤ 0.017038")
    assert not readme.same_output("0.017036863236176526", "0.017036863236186526")
    assert not readme.same_output("lower 0.017036863236176526", "upper 0.017036863236176526")


def test_bad_example_is_reported_with_its_line() -> None:
    run = run_ampcalc("bound", "examples/bad/typo.yaml", expect=2)
    assert run.stderr.startswith("examples/bad/typo.yaml:9:3: sampling.sampel: unknown key")


def test_readme_is_short_and_its_tables_are_80_columns() -> None:
    """The README reads in ten minutes; its output blocks are what a pipe shows (80 columns)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import readme
    finally:
        sys.path.pop(0)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = len(text.splitlines())
    assert lines <= 300, (
        f"README.md has {lines} lines; at most 300: shorten another passage, or put the "
        "detail in a page under docs/ and link it (a new family joins an existing row of "
        "the family table, see docs/contributing.md)"
    )
    # the quick start is a contract: these two commands, exactly
    assert "\npip install . && ampcalc bound examples/designs/srswor.yaml\n" in text
    assert "\npip install '.[test]' && pytest\n" in text
    assert readme.columns(ROOT / "README.md") == 80
    assert readme.columns(ROOT / "docs" / "sweep.md") == 120
    tables = [
        m
        for m in readme.BLOCK.finditer(text)
        if m.group("cmd").split()[1] in {"bound", "invert", "budget"}
    ]
    assert len(tables) >= 3
    for m in tables:
        body = m.group("body").splitlines()[1:]  # after the `$ command` line
        wide = [line for line in body if len(line) > 80]
        assert not wide, (m.group("cmd"), wide)
