"""The library leaves the application's logging alone.

Composing releases with dp_accounting's PLD accountant (``mechanism.releases`` mixes,
``ampcalc budget``) must not change the root logger's level or handlers, and must log
nothing: dp_accounting's one warning (connect-the-dots asked for with an optimistic
estimate) goes to the root logger through ``logging.warning``, which also installs a
stderr handler when the root has none; ampcalc never asks for that combination.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ampcalc import api
from ampcalc.analyses import budget

pytest.importorskip("dp_accounting")

ROOT = Path(__file__).resolve().parents[1]

#: a Gaussian, a Laplace and a pure release on one sample: the PLD accountant's mix
MIXED_RELEASES = (
    "name: mix\n"
    "mechanism:\n"
    "  releases:\n"
    "    - {gaussian: {sigma: 2.0}, count: 3}\n"
    "    - {laplace: {scale: 5.0}, count: 2}\n"
    "    - {randomized-response: {epsilon: 0.5}}\n"
    "sampling: {scheme: poisson, rate: 0.05}\n"
    "target: {delta_prime: 1e-6}\n"
)


@pytest.fixture
def root_logger() -> Iterator[logging.Logger]:
    """The root logger at DEBUG (so any record would pass), restored afterwards."""
    root = logging.getLogger()
    saved = root.level
    root.setLevel(logging.DEBUG)
    try:
        yield root
    finally:
        root.setLevel(saved)


def _year() -> dict:
    return budget.run(budget.load_ledger(str(ROOT / "examples" / "budget" / "year.yaml")))


def _mixed_releases() -> dict:
    r = api.bound(MIXED_RELEASES)
    return {"lower": r.lower, "upper": r.upper}


@pytest.mark.parametrize("call", [_year, _mixed_releases], ids=["budget", "releases"])
def test_accountant_leaves_root_logger_alone(
    root_logger: logging.Logger, caplog: pytest.LogCaptureFixture, call: Callable[[], dict]
) -> None:
    handlers = list(root_logger.handlers)
    out = call()
    total = out.get("total", out)
    lower = total["accuracy"]["optimistic"] if "accuracy" in total else total["lower"]
    assert 0 < lower <= total["upper"] < math.inf  # the accountant gave an interval
    assert root_logger.level == logging.DEBUG
    assert root_logger.handlers == handlers
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
