"""The relation M's ε must hold under is stated once per family (its module's
``RELATION``): the theorems it analyses with state that relation, and ``ampcalc
schemes`` prints it in words."""

from __future__ import annotations

import dataclasses

import pytest

import ampcalc
from ampcalc import engine, schemes
from ampcalc.designs.catalogue import relation_words, scheme_catalogue
from ampcalc.model.design import Neighbours
from ampcalc.schemes.base import Scheme

ONE_RELATION = [
    n for n in schemes.names() if isinstance(schemes.mechanism_relation(n), Neighbours)
]


def test_the_scheme_entry_no_longer_repeats_the_relation() -> None:
    assert "mechanism_relation" not in {f.name for f in dataclasses.fields(Scheme)}


def test_families_stating_one_relation() -> None:
    """Seven families' theorems share one relation; pps, pps-cluster and
    general-lower-bound put no single condition on it; the other four say it in words."""
    known = [
        "allocation-test",
        "cluster",
        "data-dependent-size",
        "poisson",
        "srswor",
        "srswr",
        "systematic",
    ]
    assert ONE_RELATION == known, (
        "the families whose RELATION is one relation changed: a new family adds its "
        "scheme name to `known` in tests/test_scheme_relation.py (its example's analysis "
        "must then state that relation: the test below checks it)"
    )
    none = [n for n in schemes.names() if schemes.mechanism_relation(n) is None]
    assert none == ["general-lower-bound", "pps", "pps-cluster"], (
        "the families with `RELATION = None` changed: list a new one here in "
        "tests/test_scheme_relation.py"
    )


@pytest.mark.parametrize("name", ONE_RELATION)
def test_the_theorem_of_the_example_states_the_family_relation(name: str) -> None:
    """The analysis of the family's example states M's relation as ``RELATION``."""
    relation = schemes.mechanism_relation(name)
    design = ampcalc.load_designs(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": "both"},
            "sampling": {"scheme": name, **schemes.get(name).example},
        }
    )[0]
    stated = [c for c in engine.analyse(design).conditions if c.startswith("M is ε-DP")]
    assert stated and all(f" under {relation}" in c for c in stated), stated


def test_the_catalogue_words_follow_the_relation() -> None:
    words = {e["name"]: e["mechanism_neighbours"] for e in scheme_catalogue()}
    assert words["srswor"] == "replace-one (add-remove M: ε_R = epsilon_replace_one or 2ε)"
    assert words["poisson"] == words["cluster"] == "add-remove (or both)"
    assert words["pps"] == "replace-one or add-remove"
    assert words["pws"] == "none (the sanitiser is built for the design's target)"
    assert relation_words(Neighbours.BOTH) == "both"
