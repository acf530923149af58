"""Shared test fixtures: hypothesis profile, CLI runners, example designs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "designs"

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@contextlib.contextmanager
def array_path_only() -> Iterator[None]:
    """``engine.bound``/``engine.invert`` answered by the array path alone: the scalar
    evaluation declines every call (what it does for a design without a scalar form)."""
    from ampcalc.engine import core

    saved = core._scalar_bound, core._scalar_invert
    core._scalar_bound = core._scalar_invert = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        yield
    finally:
        core._scalar_bound, core._scalar_invert = saved


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)


def _exe() -> list[str]:
    """The command that runs ampcalc: this interpreter's ``-m ampcalc``, never a console
    script found on PATH (which may be absent, or belong to another installation)."""
    return [sys.executable, "-m", "ampcalc"]


def run_ampcalc(
    *args: str,
    expect: int = 0,
    stdin: str | None = None,
    env: dict | None = None,
    cwd: Path | None = None,
) -> Run:
    """Run ``python -m ampcalc`` (``_exe``); fail unless it exits with ``expect``."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("AMPCALC_DEBUG", None)
    proc = subprocess.run(
        [*_exe(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd or ROOT,
        timeout=120,
    )
    run = Run(proc.returncode, proc.stdout, proc.stderr)
    assert run.code == expect, (
        f"exit {run.code}, expected {expect}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    )
    assert "Traceback" not in run.stderr
    return run


def run_main(capsys: pytest.CaptureFixture[str], *args: str, expect: int = 0) -> Run:
    """Run ``ampcalc.cli.main`` in-process; fail unless it returns ``expect``."""
    from ampcalc.cli.app import main

    code = main(list(args))
    out, err = capsys.readouterr()
    run = Run(code, out, err)
    assert code == expect, f"exit {code}, expected {expect}\nstdout:\n{out}\nstderr:\n{err}"
    assert "Traceback" not in err
    return run


def run_in_process(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """``ampcalc.cli.main(args)`` in ``cwd``: (exit code, stdout, stderr), whatever the code."""
    from ampcalc.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def ampcalc_cli():
    return run_ampcalc


def example_designs() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml"))


#: the least mpmath precision a test starts with (the oracles' cancellations, e.g.
#: 1 − e^{−qε} at q = 1e-9, ε = 1e-12, need more than 30 digits)
MPMATH_DIGITS = 50


@pytest.fixture(autouse=True)
def _mpmath_precision() -> Iterator[None]:
    """mpmath's precision is one global: modules set it at import and some tests inside
    their functions, so under xdist a test could run at whatever the one before it left
    (30 digits made a 50-digit oracle fail). Every test starts at no fewer than
    ``MPMATH_DIGITS`` and leaves the precision as it found it."""
    try:
        import mpmath
    except ImportError:  # the tests that need it skip
        yield
        return
    before = mpmath.mp.dps
    mpmath.mp.dps = max(before, MPMATH_DIGITS)
    try:
        yield
    finally:
        mpmath.mp.dps = before
