"""What a user reads when an input is wrong, and the conventions shared by commands.

Each test pins a defect seen from the command line: the exact message, the exit code or
the column name, as a user reads it.
"""

from __future__ import annotations

import pytest
from conftest import EXAMPLES, run_main

SRS = str(EXAMPLES / "srswor.yaml")
COMPARE = str(EXAMPLES / "compare.yaml")


@pytest.mark.parametrize(
    ("design", "override", "line"),
    [
        (
            SRS,
            "mechansim.epsilon=2",
            "--set mechansim.epsilon=2: mechansim: unknown key in a design; expected one of: "
            "name, mechanism, sampling, guarantee, target (did you mean 'mechanism'?)",
        ),
        (
            COMPARE,
            "designs[1].mechansim.epsilon=2",
            "--set designs[1].mechansim.epsilon=2: designs[1].mechansim: unknown key in a "
            "design; expected one of: name, mechanism, sampling, guarantee, target "
            "(did you mean 'mechanism'?)",
        ),
    ],
)
def test_typo_in_an_override_path_is_blamed_on_the_override(
    capsys: pytest.CaptureFixture[str], design: str, override: str, line: str
) -> None:
    """A key that only ``--set`` created is the override's mistake: it used to be
    reported at the design file's first key (``srswor.yaml:3:1``)."""
    run = run_main(capsys, "bound", design, "--set", override, expect=2)
    assert run.stderr.strip() == line
    assert ".yaml:" not in run.stderr
