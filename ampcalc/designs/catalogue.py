"""The scheme catalogue: what a design may say, scheme by scheme (``ampcalc schemes``).

One entry per registered scheme: its summary, its ``sampling:`` fields (name, domain,
default, doc), the neighbour relation its theorems take M under, the guarantees it
gives and the theorems it rests on. The ``schemes --json`` payload's ``results``.
"""

from __future__ import annotations

from typing import Any

from ampcalc import schemes as registry
from ampcalc.model.design import Neighbours


def scheme_catalogue() -> list[dict[str, Any]]:
    """Every sampling scheme: parameters, relations and basis (``ampcalc schemes --json``)."""

    return [
        {
            "name": s.name,
            "summary": s.summary,
            "parameters": [
                {
                    "name": f.name,
                    "required": f.required,
                    "domain": f.domain(),
                    "doc": f.doc,
                    "default": f.default,
                }
                for f in s.fields
            ],
            "mechanism_neighbours": relation_words(registry.mechanism_relation(s.name)),
            "guarantee_neighbours": [str(g) for g in s.guarantees],
            "basis": [c.to_dict() for c in s.basis],
        }
        for s in registry.all_schemes()
    ]


def relation_words(relation: Neighbours | str | None) -> str:
    """The relation M's ε must hold under, in words, from the relation a family's
    theorems take it under (``schemes.mechanism_relation``): an add-remove theorem
    accepts an M declared under both, a replace-one theorem reads an add-remove M at
    ε_R; a family's own words are kept as they are."""
    if relation is None:
        return "replace-one or add-remove"
    if relation is Neighbours.ADD_REMOVE:
        return "add-remove (or both)"
    if relation is Neighbours.REPLACE_ONE:
        return "replace-one (add-remove M: ε_R = epsilon_replace_one or 2ε)"
    return str(relation)
