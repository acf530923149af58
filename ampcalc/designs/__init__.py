"""Designs: design documents (YAML files, text, dicts) and direct constructors -> ``Design``.

Job: ``document`` reads a design file (YAML with line marks, ``--set`` overrides) and
validates each block through the scheme registry; ``sources`` takes whatever the Python
API accepts as a design (a ``Design``, a path, YAML text, a dict) to ``Design`` objects
and a built ``Design`` back to its document; ``catalogue`` lists every scheme's fields
(``ampcalc schemes``); ``ledger`` reads a budget ledger (``ampcalc budget``) into a
``Ledger``, ``plan`` a planner design (``ampcalc plan``) into a ``PlannerDesign``; this
module offers the same designs without YAML. May import
``accounting``, ``schemes``, ``load``, ``model`` and ``math``.

Direct constructors: designs without YAML, validated exactly as a design file is.

Examples::

    >>> from ampcalc import Mechanism, designs
    >>> d = designs.SRSWOR(population=10_000, sample=100,
    ...                    mechanism=Mechanism(epsilon=1.0, neighbours="both"))
    >>> d.scheme, d.params.sample
    ('srswor', 100)
    >>> designs.make("poisson", rate=0.01, mechanism={"epsilon": 1.0}).params.rate
    0.01

Every registered scheme has a constructor named after it in CamelCase
(``srswor`` → ``SRSWOR``, ``poisson`` → ``Poisson``, ``random-size`` → ``RandomSize``);
``make(scheme, ...)`` takes the scheme name. Errors are the loader's ``DesignError``s
(field paths as in a file, no line numbers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ampcalc import schemes
from ampcalc.designs.document import load_document
from ampcalc.model.design import Design, Mechanism, Neighbours, Target

_SPECIAL = {
    "srswor": "SRSWOR",
    "srswr": "SRSWR",
    "pps": "PPS",
    "pps-cluster": "PPSCluster",
    "pws": "PWS",
}


def mechanism_dict(mechanism: Any) -> Any:
    if isinstance(mechanism, Mechanism):
        out: dict[str, Any] = {
            "neighbours": Neighbours(mechanism.neighbours).value,
        }
        if mechanism.releases is not None:
            out["releases"] = [
                {"epsilon": r.epsilon, "delta": r.delta} for r in mechanism.releases
            ]
        else:
            out["epsilon"] = mechanism.epsilon
            if mechanism.delta:
                out["delta"] = mechanism.delta
        if mechanism.epsilon_replace_one is not None:
            out["epsilon_replace_one"] = mechanism.epsilon_replace_one
        if mechanism.delta_replace_one is not None:
            out["delta_replace_one"] = mechanism.delta_replace_one
        for extra in ("group_size",):
            value = getattr(mechanism, extra, None)
            if value not in (None, 1):
                out[extra] = value
        return out
    if dataclasses.is_dataclass(mechanism) and not isinstance(mechanism, type):
        return {k: v for k, v in dataclasses.asdict(mechanism).items() if v is not None}
    return mechanism


def make(
    scheme: str,
    *,
    mechanism: Mechanism | Mapping[str, Any] | None = None,
    name: str | None = None,
    guarantee: str | None = None,
    target: Target | Mapping[str, Any] | None = None,
    **params: Any,
) -> Design:
    """Build and validate one design of ``scheme`` from keyword parameters."""
    doc: dict[str, Any] = {"sampling": {"scheme": scheme, **params}}
    if mechanism is not None:
        doc["mechanism"] = mechanism_dict(mechanism)
    if name is not None:
        doc["name"] = name
    if guarantee is not None:
        doc["guarantee"] = guarantee
    if target is not None:
        doc["target"] = (
            {k: v for k, v in dataclasses.asdict(target).items() if v is not None}
            if isinstance(target, Target)
            else dict(target)
        )
    (design,) = load_document(doc, filename="<python>")
    if name is None:
        design = dataclasses.replace(design, name=scheme)
    return design


def constructor_name(scheme: str) -> str:
    """``random-size`` → ``RandomSize`` (with a few acronyms kept upper-case)."""
    if scheme in _SPECIAL:
        return _SPECIAL[scheme]
    return "".join(part.capitalize() for part in scheme.split("-"))


def _constructor(scheme: str) -> Callable[..., Design]:
    def build(**kwargs: Any) -> Design:
        return make(scheme, **kwargs)

    build.__name__ = constructor_name(scheme)
    build.__doc__ = f"A validated ``{scheme}`` design: ``make({scheme!r}, **kwargs)``."
    return build


def __getattr__(attr: str) -> Callable[..., Design]:
    for name in schemes.names():
        if constructor_name(name) == attr:
            return _constructor(name)
    raise AttributeError(f"module 'ampcalc.designs' has no attribute {attr!r}")


def __dir__() -> list[str]:
    return sorted(["make", "constructor_name", *(constructor_name(n) for n in schemes.names())])
