"""Every relative link in the README and docs/ reaches a file, and every #anchor a heading.

The README sends a newcomer to one page per design family; a moved section must not leave a
link pointing nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "benchmarks").glob("*.md")),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
            found.add(slug)
    return found


def links() -> list[tuple[Path, str]]:
    out = []
    for doc in DOCUMENTS:
        text = FENCE.sub("", doc.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # an absolute URL: not checked offline
            out.append((doc, target))
    return out


@pytest.mark.parametrize(("doc", "target"), links(), ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_link_resolves(doc: Path, target: str) -> None:
    file_part, _, anchor = target.partition("#")
    dest = (doc.parent / file_part).resolve() if file_part else doc
    assert dest.exists(), f"{doc.relative_to(ROOT)}: link to missing {target}"
    if anchor and dest.suffix == ".md":
        where = doc.relative_to(ROOT)
        assert anchor in anchors(dest), f"{where}: no heading #{anchor} in {dest.name}"


def test_anchor_rule_matches_github() -> None:
    # a checked value: GitHub's anchor for this README heading
    assert "sampling-designs-one-example-each" in anchors(ROOT / "README.md")
    assert "neighbouring-relations-pinned-semantics" in anchors(ROOT / "docs" / "simple-random.md")
