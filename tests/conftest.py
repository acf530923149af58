"""Shared test fixtures: hypothesis profile, CLI runners, example designs."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
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


#: How far apart two float64 results may be when the two sides run *different* code for
#: the same formula: ``ampcalc.engine.fastpath`` (Python floats with ``math``, i.e. the C
#: library's expm1/log1p/exp/log) against the array path (numpy's ufunc loops, which on
#: an AVX-512 machine are SVML's, elsewhere the C library's). The two implementations of
#: each of these functions are at most 1 ulp apart (measured over 4e5 arguments, glibc
#: 2.36 and numpy 2.4's AVX-512 loops); log1p(q·expm1(ε)) and its inverse have condition
#: number <= 1, so the results are at most ~3 ulps apart (2 seen in 6e4 random designs).
#: 4 ulps is half the outward rounding (``numeric.OUTWARD_ULPS`` = 8): a lost rounding
#: step still fails. Where both sides run the same code, tests compare bits instead.
FAST_PATH_ULPS = 4


def within_ulps(a: object, b: object, ulps: int = FAST_PATH_ULPS, where: str = "") -> None:
    """Assert ``a`` and ``b`` (floats, or dicts/lists of them as ``to_dict`` gives) are
    equal except that floats may be ``ulps`` units in the last place apart (NaN = NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return
        if a == b:  # and -0.0 is not 0.0
            assert math.copysign(1.0, a) == math.copysign(1.0, b), (where, a, b)
            return
        assert math.isfinite(a) and math.isfinite(b), (where, a, b)
        gap = abs(a - b) / math.ulp(max(abs(a), abs(b)))
        assert gap <= ulps, f"{where}: {a!r} and {b!r} are {gap:g} ulps apart (> {ulps})"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), (where, list(a), list(b))
        for key in a:
            within_ulps(a[key], b[key], ulps, f"{where}.{key}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            within_ulps(x, y, ulps, f"{where}[{i}]")
    else:
        assert type(a) is type(b) and a == b, (where, a, b)


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


@pytest.fixture
def ampcalc_cli():
    return run_ampcalc


def example_designs() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml"))
