"""What help texts run and results cite is installed with ampcalc: the examples
(``ampcalc examples DIR`` copies them out) and the documentation pages (``ampcalc docs
PAGE``). The package's copies (``ampcalc/share/``) must equal ``examples/`` and ``docs/``;
the slow test builds a wheel, installs it into a fresh virtual environment and runs the
help texts' commands in an empty folder.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, run_main

from ampcalc.load import shipped
from ampcalc.model.references import REFERENCES


def _sync_script():
    spec = importlib.util.spec_from_file_location(
        "sync_shipped", ROOT / "scripts" / "sync_shipped.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_package_copies_equal_the_examples_and_docs() -> None:
    assert _sync_script().differences() == [], "run: python scripts/sync_shipped.py"


def test_the_wheel_takes_the_copies() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert '"share/**/*"' in text  # package-data: every file under ampcalc/share


def test_examples_lists_what_it_ships(capsys) -> None:
    run = run_main(capsys, "examples")
    listed = run.stdout.splitlines()
    expected = sorted(
        f"examples/{p.relative_to(ROOT / 'examples').as_posix()}"
        for d in ("designs", "budget", "plans", "mechanisms")
        for p in (ROOT / "examples" / d).rglob("*")
        if p.is_file()
    )
    assert sorted(listed) == expected, (
        "the package's copies of examples/ differ from the repository's: run "
        "`python scripts/sync_shipped.py`"
    )
    assert "examples/designs/srswor.yaml" in listed and "examples/budget/year.yaml" in listed
    assert "ampcalc examples examples" in run.stderr


def test_examples_copies_and_the_copies_run(tmp_path: Path, capsys, monkeypatch) -> None:
    run = run_main(capsys, "examples", str(tmp_path / "ex"))
    n = len(shipped.example_files())
    assert f"copied {n} example files into {tmp_path / 'ex'}/" in run.stderr
    for name in shipped.example_files():
        assert (tmp_path / "ex" / name).read_bytes() == (ROOT / "examples" / name).read_bytes()
    # the help texts' commands, from the folder the examples were copied into
    here = run_main(capsys, "bound", str(EXAMPLES / "srswor.yaml"), "--json").stdout
    monkeypatch.chdir(tmp_path)
    run_main(capsys, "examples", "examples")
    copied = run_main(capsys, "bound", "examples/designs/srswor.yaml", "--json").stdout
    assert json.loads(copied)["results"] == json.loads(here)["results"]
    ledger = json.loads(run_main(capsys, "budget", "examples/budget/year.yaml", "--json").stdout)
    assert [e["name"] for e in ledger["entries"]] == [
        "quarterly business survey",
        "household module",
        "monthly panel counts",
    ]  # the ledger's ../designs/ paths resolve inside the copy
    assert ledger["total"]["upper"] <= ledger["target"]["epsilon"]


def test_examples_never_overwrite_without_force(tmp_path: Path, capsys) -> None:
    mine = tmp_path / "designs" / "srswor.yaml"
    mine.parent.mkdir()
    mine.write_text("my own design\n")
    run = run_main(capsys, "examples", str(tmp_path), expect=2)
    assert "1 example file(s) already exist" in run.stderr and "--force" in run.stderr
    assert "designs/srswor.yaml" in run.stderr
    assert mine.read_text() == "my own design\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["designs", "srswor.yaml"]  # nothing
    run_main(capsys, "examples", str(tmp_path), "--force")
    assert mine.read_bytes() == (EXAMPLES / "srswor.yaml").read_bytes()
    leftovers = [p for p in tmp_path.rglob(".*") if p.is_file()]  # atomic writes' temp files
    assert leftovers == []


def test_examples_into_a_file_is_refused(tmp_path: Path, capsys) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    run = run_main(capsys, "examples", str(f), expect=2)
    assert "is a file; expected a folder" in run.stderr


def test_docs_prints_the_cited_pages(capsys) -> None:
    cited = [r.url for r in REFERENCES.values() if r.url and not r.url.startswith("http")]
    assert "docs/derivations.md" in cited
    for url in cited:  # the name a result cites works as the argument
        page = run_main(capsys, "docs", url).stdout
        assert page == (ROOT / url).read_text(encoding="utf-8")
    assert run_main(capsys, "docs", "derivations").stdout == (
        ROOT / "docs" / "derivations.md"
    ).read_text(encoding="utf-8")
    pages = run_main(capsys, "docs").stdout.splitlines()
    assert pages == sorted(
        p.relative_to(ROOT / "docs").with_suffix("").as_posix()
        for p in (ROOT / "docs").rglob("*.md")
    )


def test_docs_unknown_page_suggests_one(capsys) -> None:
    run = run_main(capsys, "docs", "derivation", expect=2)
    assert run.stdout == ""
    assert "no documentation page 'derivation'" in run.stderr
    assert "did you mean 'derivations'?" in run.stderr


@pytest.mark.slow
def test_an_installed_wheel_runs_its_help_examples(tmp_path: Path) -> None:
    """Build the wheel, install it (with its dependencies) into a fresh environment and,
    in an empty folder, run what the help texts say."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
    )
    (wheel,) = wheels.glob("ampcalc-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in shipped.example_files():
        assert f"ampcalc/share/examples/{name}" in names
    assert "ampcalc/share/docs/derivations.md" in names
    # the new environment sees only what it installs: no PYTHONPATH to this checkout
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, env=env)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)]
    subprocess.run(pip, check=True, env=env)
    work = tmp_path / "empty"
    work.mkdir()

    def ampcalc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bin_dir / "ampcalc"), *args], cwd=work, env=env, capture_output=True, text=True
        )

    assert ampcalc("examples", "examples").returncode == 0
    bound = ampcalc("bound", "examples/designs/srswor.yaml", "--json")
    assert bound.returncode == 0, bound.stderr
    (result,) = json.loads(bound.stdout)["results"]
    # Bun et al. 2022, Theorem 2.2: ε′ = log(1 + (n/N)(e^ε − 1)), a 1% sample at ε = 1
    assert result["epsilon_prime"]["upper"] == pytest.approx(math.log1p(0.01 * math.expm1(1)))
    budget = ampcalc("budget", "examples/budget/year.yaml", "--fail-above", "3")
    assert budget.returncode == 0, budget.stderr
    page = ampcalc("docs", "derivations")
    assert page.stdout == (ROOT / "docs" / "derivations.md").read_text(encoding="utf-8")
