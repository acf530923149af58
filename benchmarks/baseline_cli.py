"""The unavoidable cost of ampcalc's stack: a minimal typer command that imports numpy,
yaml and rich, reads a design file and prints ``{}``. ``bench_startup.py`` compares
``ampcalc bound --json`` against it."""

from __future__ import annotations

import numpy  # noqa: F401
import rich  # noqa: F401
import typer
import yaml

app = typer.Typer(add_completion=False)


@app.command()
def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        yaml.safe_load(f)
    print("{}")


if __name__ == "__main__":
    app()
