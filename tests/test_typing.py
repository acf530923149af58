"""The package type-checks under ``mypy --strict`` (configuration: ``[tool.mypy]`` in
pyproject.toml) and ships its ``py.typed`` marker."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_py_typed_marker_is_shipped() -> None:
    # PEP 561: the marker in the package and in the wheel's package data
    assert (ROOT / "ampcalc" / "py.typed").is_file()
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["ampcalc"]
    assert config["tool"]["mypy"]["strict"] is True


def test_mypy_strict_reports_no_errors(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    stdout, stderr, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "--no-error-summary",
            str(ROOT / "ampcalc"),
        ]
    )
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 0 and not errors, "\n".join(errors) or stdout + stderr
