"""Keep the docs' example output real: re-run every marked command and paste its output.

A block in README.md or docs/*.md of the form

    <!-- run: ampcalc bound examples/designs/srswor.yaml -->
    ```console
    $ ampcalc bound examples/designs/srswor.yaml
    ...output...
    ```

is regenerated from a real run (stdout, not a terminal, so plain text). The README's blocks
are rendered at 80 columns, the width a pipe or an unset ``COLUMNS`` gives, so a reader sees
what their own first run prints; the pages in docs/ at 120, where wide tables (``compare``,
``sweep``, ``schemes``) keep one line per row. Tables adapt to the width (at 80 a column
holding one value in every row becomes an "… in every row" line, a long one is folded under
its row): docs/cli-conventions.md says so. Usage:
``python scripts/readme.py`` rewrites the files; ``--check`` exits 1 if any block differs
(the test suite runs the check).

Full-precision numbers (``repr`` of a float: 12 or more significant digits) may differ in
their last units between processors: numpy's vectorised ``log1p``/``expm1`` loops are not
bit-identical across instruction sets. ``--check`` therefore compares such numbers to a
relative 1e-13 and everything else, shorter numbers included, exactly.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


#: the terminal width (COLUMNS) a document's blocks are rendered at (module docstring)
README_COLUMNS = 80
DOCS_COLUMNS = 120


def columns(path: Path) -> int:
    return README_COLUMNS if path.resolve() == README else DOCS_COLUMNS


NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+")
LAST_UNITS = 1e-13


def same_output(old: str, new: str) -> bool:
    """Equal, but for the last units of full-precision numbers (see the module docstring)."""
    if old == new:
        return True
    old_parts, new_parts = NUMBER.split(old), NUMBER.split(new)
    if old_parts != new_parts:
        return False
    for a, b in zip(NUMBER.findall(old), NUMBER.findall(new), strict=True):
        if a == b:
            continue
        digits = len(re.sub(r"[^0-9]", "", a.split("e")[0].split("E")[0]).lstrip("0"))
        if digits < 12 or abs(float(a) - float(b)) > LAST_UNITS * max(abs(float(a)), 1e-300):
            return False
    return True


BLOCK = re.compile(r"(<!-- run: (?P<cmd>.+?) -->\n```console\n)(?P<body>.*?)(```)", re.DOTALL)


def run(cmd: str, width: int = DOCS_COLUMNS) -> str:
    env = {**os.environ, "COLUMNS": str(width), "NO_COLOR": "1"}
    env.pop("AMPCALC_DEBUG", None)
    args = shlex.split(cmd)
    if args[0] == "ampcalc":
        args = [sys.executable, "-m", "ampcalc", *args[1:]]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    text = proc.stdout
    if proc.returncode != 0:
        text += proc.stderr
        text += f"[exit {proc.returncode}]\n"
    return f"$ {cmd}\n{text}"


#: a command that fails on one of these is a broken example, never output worth showing
BROKEN = re.compile(
    r"Got unexpected extra argument|No such (?:option|command)|Missing argument|"
    r": no such file|\[Errno 2\]"
)


Outputs = dict[tuple[str, int], str]


def broken(outputs: Outputs) -> list[str]:
    """The marked commands whose run failed on their own command line or a missing file."""
    return sorted(
        {cmd for (cmd, _), out in outputs.items() if "[exit " in out and BROKEN.search(out)}
    )


def render(text: str, outputs: Outputs, width: int = DOCS_COLUMNS) -> str:
    return BLOCK.sub(lambda m: m.group(1) + outputs[m.group("cmd"), width] + m.group(4), text)


def run_all(texts: list[str], widths: list[int] | None = None) -> Outputs:
    """Run every marked command once per width, on all cores: the runs are independent."""
    widths = widths or [DOCS_COLUMNS] * len(texts)
    runs = sorted(
        {
            (m.group("cmd"), w)
            for text, w in zip(texts, widths, strict=True)
            for m in BLOCK.finditer(text)
        }
    )
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(runs, pool.map(lambda r: run(*r), runs), strict=True))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    parser.add_argument("files", nargs="*", type=Path, help="default: README.md and docs/*.md")
    args = parser.parse_args()
    stale = []
    paths = args.files or documents()
    texts = [path.read_text(encoding="utf-8") for path in paths]
    widths = [columns(path) for path in paths]
    outputs = run_all(texts, widths)
    bad = broken(outputs)
    if bad:
        first = {cmd: out for (cmd, _), out in outputs.items()}
        sys.stderr.write("broken example commands (fix the command, not the output):\n")
        sys.stderr.writelines(f"  {cmd}\n  -> {first[cmd].splitlines()[1]}\n" for cmd in bad)
        return 1
    for path, old, width in zip(paths, texts, widths, strict=True):
        new = render(old, outputs, width)
        if same_output(old, new):
            continue
        if args.check:
            stale.append(str(path.relative_to(ROOT)) if path.is_absolute() else str(path))
        else:
            path.write_text(new, encoding="utf-8")
    if stale:
        sys.stderr.write(
            "output blocks are stale in " + ", ".join(stale) + ": run python scripts/readme.py\n"
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
