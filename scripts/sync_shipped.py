"""Copy the examples and the documentation pages into the package, so a wheel ships them.

An installed ampcalc has no ``examples/`` or ``docs/`` next to it, yet the help texts run
``examples/designs/srswor.yaml`` and results cite ``docs/derivations.md``. The package
therefore carries copies under ``ampcalc/share/`` (``ampcalc examples`` copies the examples
out, ``ampcalc docs`` prints a page). ``examples/`` and ``docs/`` stay the pages one edits;
this script refreshes the copies, and ``tests/test_shipped.py`` fails while they differ.

    python scripts/sync_shipped.py          # refresh ampcalc/share/
    python scripts/sync_shipped.py --check  # exit 1 and list the differences
"""

from __future__ import annotations

import filecmp
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARE = ROOT / "ampcalc" / "share"
#: what is shipped: (source folder, its copy under ampcalc/share, the files' suffixes).
#: The examples a help text or a page runs; not the figures (their PNGs are the README's)
#: nor ``examples/bad`` (a broken file the tests read).
SHIPPED = (
    *((ROOT / "examples" / d, SHARE / "examples" / d, None) for d in (
        "designs", "budget", "plans", "mechanisms",
    )),
    (ROOT / "docs", SHARE / "docs", ".md"),
)  # fmt: skip


def wanted() -> dict[Path, Path]:
    """Each copy under ``ampcalc/share`` -> its source."""
    out: dict[Path, Path] = {}
    for src, dst, suffix in SHIPPED:
        for f in sorted(src.rglob("*")):
            if f.is_file() and (suffix is None or f.suffix == suffix):
                out[dst / f.relative_to(src)] = f
    return out


def differences() -> list[str]:
    """What is stale, missing or left over under ``ampcalc/share`` (empty: in sync)."""
    want = wanted()
    have = {f for f in SHARE.rglob("*") if f.is_file()} if SHARE.exists() else set()
    out = [
        f"{copy.relative_to(ROOT)}: missing"
        if not copy.exists()
        else f"{copy.relative_to(ROOT)}: differs from {src.relative_to(ROOT)}"
        for copy, src in want.items()
        if not copy.exists() or not filecmp.cmp(copy, src, shallow=False)
    ]
    out += [f"{f.relative_to(ROOT)}: has no source" for f in sorted(have - set(want))]
    return out


def sync() -> None:
    want = wanted()
    if SHARE.exists():
        shutil.rmtree(SHARE)
    for copy, src in want.items():
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, copy)


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        diff = differences()
        for line in diff:
            print(line)
        return 1 if diff else 0
    if argv:
        print("usage: python scripts/sync_shipped.py [--check]", file=sys.stderr)
        return 2
    sync()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
