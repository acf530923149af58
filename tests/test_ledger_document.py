"""Budget ledgers read into typed ``Ledger`` objects (``ampcalc.designs.ledger``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ampcalc.analyses import budget
from ampcalc.designs.ledger import Ledger, load_ledger, parse_ledger
from ampcalc.model.design import Neighbours
from ampcalc.model.errors import DesignError

INLINE = {
    "mechanism": {"epsilon": 1.0},
    "sampling": {"scheme": "poisson", "rate": 0.01},
    "name": "wave",
}


def test_defaults_from_a_dict() -> None:
    led = parse_ledger({"target": {"delta": 1e-6}, "entries": [{"design": INLINE}]}, "<dict>")
    assert isinstance(led, Ledger)
    assert (led.delta, led.epsilon, led.neighbours) == (1e-6, None, Neighbours.ADD_REMOVE)
    assert led.discretization == 1e-4  # dp_accounting's default interval
    (entry,) = led.entries
    assert (entry.name, entry.count, entry.delta_prime) == ("wave", 1, None)
    assert entry.design.params.rate == 0.01


def test_every_field_read(tmp_path: Path) -> None:
    p = tmp_path / "year.yaml"
    p.write_text(
        "name: year\n"
        "target: {epsilon: 2.0, delta: 1e-6}\n"
        "neighbours: replace-one\n"
        "discretization: 1e-3\n"
        "entries:\n"
        "  - {name: panel, design: {mechanism: {epsilon: 0.5}, sampling: "
        "{scheme: poisson, rate: 0.1}}, count: 12, delta_prime: 1e-9}\n"
    )
    led = load_ledger(str(p))
    assert (led.name, led.epsilon, led.delta) == ("year", 2.0, 1e-6)
    assert (led.neighbours, led.discretization) == (Neighbours.REPLACE_ONE, 1e-3)
    (entry,) = led.entries
    assert (entry.name, entry.count, entry.delta_prime) == ("panel", 12, 1e-9)
    assert entry.design.mechanism.epsilon == 0.5
    assert (entry.where.line, entry.where.column) == (6, 19)  # the entry's `design:`


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "target: {delta: 1e-6}\nentries:\n  - {design: x.yaml, cont: 2}\n",
            "ledger.yaml:3:22: entries[0].cont: unknown key in a ledger entry; expected one of: "
            "name, design, index, count, delta_prime (did you mean 'count'?)",
        ),
        (
            "target: {delta: 1e-6, epsilon: two}\nentries: [{design: x.yaml}]\n",
            "ledger.yaml:1:23: target.epsilon: expected a number in (0, inf), got the string "
            "'two'",
        ),
        (
            "target: {epsilon: 1}\nentries: [{design: x.yaml}]\n",
            "ledger.yaml:1:1: target: missing required key 'delta' (the total δ the ε is "
            "reported at)",
        ),
    ],
    ids=["typo", "wrong-type", "missing"],
)
def test_errors_name_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "ledger.yaml"
    p.write_text(text)
    with pytest.raises(DesignError) as err:
        load_ledger(str(p))
    assert str(err.value) == message.replace("ledger.yaml", str(p))


def test_analyses_budget_reexports_the_reader() -> None:
    assert budget.load_ledger is load_ledger and budget.Ledger is Ledger
