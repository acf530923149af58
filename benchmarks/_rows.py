"""One row of a benchmark table: a figure, its measured value and unit, and the target.

Every ``bench_*.py`` module exposes ``measure(quick: bool = False) -> list[dict]`` built
from ``row``; ``benchmarks/run.py`` collects them and ``print_rows`` prints them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any


def row(
    figure: str,
    value: float,
    unit: str,
    *,
    at_most: float | None = None,
    at_least: float | None = None,
    issue: str = "",
    note: str = "",
) -> dict[str, Any]:
    """A table row; ``at_most``/``at_least`` give the target (None: informational)."""
    target: str | None = None
    met: bool | None = None
    if at_most is not None:
        target, met = f"<= {at_most:g} {unit}", bool(value <= at_most)
    elif at_least is not None:
        target, met = f">= {at_least:g} {unit}", bool(value >= at_least)
    return {
        "figure": figure,
        "value": float(value),
        "unit": unit,
        "target": target,
        "met": met,
        "issue": issue,
        "note": note,
    }


def fmt_value(value: float) -> str:
    if value == 0 or 1e-3 <= abs(value) < 1e6:
        return f"{value:.4g}"
    return f"{value:.3e}"


def print_rows(rows: list[dict[str, Any]]) -> None:
    header = ("figure", "measured", "unit", "target", "met?")
    cells = [
        (
            r["figure"],
            fmt_value(r["value"]),
            r["unit"],
            r["target"] or "-",
            "-" if r["met"] is None else ("yes" if r["met"] else "NO"),
        )
        for r in rows
    ]
    widths = [max(len(str(c[i])) for c in [header, *cells]) for i in range(5)]
    for c in [header, tuple("-" * w for w in widths), *cells]:
        print("  ".join(str(x).ljust(w) for x, w in zip(c, widths, strict=True)).rstrip())


def replace_between(path: Path, begin: str, end: str, body: str) -> bool:
    """Replace the text between two markers of ``path`` (False: a marker is missing).

    Written to a temporary file beside it and renamed into place.
    """
    if not path.exists():
        return False
    text = path.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        return False
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"{head}{begin}\n{body}\n{end}{tail}")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
