"""The scheme catalogue: what a design may say, scheme by scheme (``ampcalc schemes``).

One entry per registered scheme: its summary, its ``sampling:`` fields (name, domain,
default, doc), the neighbour relation its theorems take M under, the guarantees it
gives and the theorems it rests on. The ``schemes --json`` payload's ``results``.
"""

from __future__ import annotations

from typing import Any

from ampcalc import schemes as registry


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
            "mechanism_neighbours": s.mechanism_relation_words(),
            "guarantee_neighbours": [str(g) for g in s.guarantees],
            "basis": [c.to_dict() for c in s.basis],
        }
        for s in registry.all_schemes()
    ]
