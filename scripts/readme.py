"""Keep the docs' example output real: re-run every marked command and paste its output.

A block in README.md or docs/*.md of the form

    <!-- run: ampcalc bound examples/designs/srswor.yaml -->
    ```console
    $ ampcalc bound examples/designs/srswor.yaml
    ...output...
    ```

is regenerated from a real run (stdout, not a terminal, so plain text). Usage:
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


def run(cmd: str) -> str:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
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


def broken(outputs: dict[str, str]) -> list[str]:
    """The marked commands whose run failed on their own command line or a missing file."""
    return [cmd for cmd, out in outputs.items() if "[exit " in out and BROKEN.search(out)]


def render(text: str, outputs: dict[str, str]) -> str:
    return BLOCK.sub(lambda m: m.group(1) + outputs[m.group("cmd")] + m.group(4), text)


def run_all(texts: list[str]) -> dict[str, str]:
    """Run every marked command once, on all cores: the commands are independent."""
    commands = sorted({m.group("cmd") for text in texts for m in BLOCK.finditer(text)})
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(commands, pool.map(run, commands), strict=True))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    parser.add_argument("files", nargs="*", type=Path, help="default: README.md and docs/*.md")
    args = parser.parse_args()
    stale = []
    paths = args.files or documents()
    texts = [path.read_text(encoding="utf-8") for path in paths]
    outputs = run_all(texts)
    bad = broken(outputs)
    if bad:
        sys.stderr.write("broken example commands (fix the command, not the output):\n")
        sys.stderr.writelines(f"  {cmd}\n  -> {outputs[cmd].splitlines()[1]}\n" for cmd in bad)
        return 1
    for path, old in zip(paths, texts, strict=True):
        new = render(old, outputs)
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
