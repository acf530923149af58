"""The scheme families: one module per family, and the registry of ``scheme:`` names.

Job: each family module states its theorems' formulas, conditions and references;
``base`` defines what a family provides; ``exact`` is the linear programme that gives
the exact worst case on tiny instances. May import ``load``, ``model`` and ``math``.

The registry: ``scheme:`` names -> scheme modules.

Modules are imported on first use so that ``ampcalc --help`` and a closed-form
design import only what they need. To add a family, add one line to
``_MODULES`` (module name = scheme name with hyphens as underscores). A family module
defines ``SCHEME`` (its registry entry) and ``RELATION`` (``mechanism_relation``).
"""

from __future__ import annotations

import difflib
import importlib

from ampcalc.model.design import Neighbours
from ampcalc.model.errors import AmpcalcError, Where, quote
from ampcalc.schemes.base import Scheme

_MODULES: dict[str, str] = {
    "srswor": "srswor",
    "srswr": "srswr",
    "poisson": "poisson",
    "importance": "importance",
    "stratified": "stratified",
    "random-size": "random_size",
    "data-dependent-size": "data_dependent_size",
    "allocation-test": "allocation_test",
    "pws": "pws",
    "cluster": "cluster",
    "systematic": "systematic",
    "pps": "pps",
    "pps-cluster": "pps_cluster",
    "general-lower-bound": "general_lower_bound",
}

_LOADED: dict[str, Scheme] = {}


def names() -> list[str]:
    """Every registered scheme name, sorted."""
    return sorted(_MODULES)


def get(name: str, *, where: Where | None = None) -> Scheme:
    """The scheme registered as ``name``.

    Raises:
        AmpcalcError: unknown name; the message lists the known ones and suggests
            the closest.
    """
    if name not in _MODULES:
        close = similar(str(name))
        hint = None
        if close:
            described = "; ".join(f"'{n}' ({get(n).summary})" for n in close)
            hint = (
                f"did you mean {described}?"
                if len(close) == 1
                else (f"did you mean one of: {described}?")
            )
        raise AmpcalcError(
            f"unknown scheme {quote(str(name))}; known schemes: {', '.join(names())}",
            where=where,
            hint=hint,
        )
    if name not in _LOADED:
        module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
        _LOADED[name] = module.SCHEME
    return _LOADED[name]


def mechanism_relation(name: str) -> Neighbours | str | None:
    """The relation the theorems of the scheme registered as ``name`` take M's ε under:
    its module's ``RELATION``, the one its ``Theorem`` records state (an add-remove M is
    read under a replace-one theorem by the assembly); None where the family puts no
    single condition on it (none, or each theorem its own); words where one relation
    cannot say it (several relations by allocation or result, a privacy profile, no
    mechanism).

    Raises:
        AmpcalcError: unknown name (as ``get``).
    """
    get(name)
    relation: Neighbours | str | None = importlib.import_module(
        f"{__name__}.{_MODULES[name]}"
    ).RELATION
    return relation


def similar(name: str) -> list[str]:
    """Registered names close to ``name``: a case-insensitive match, names it begins
    (``srs`` -> ``srswor``, ``srswr``), and near spellings, all listed rather than
    one guess, since two close names can be very different designs."""
    low = name[:100].strip().lower()  # no scheme name is near a longer text
    if low in _MODULES:
        return [low]
    found = [n for n in names() if low and (n.startswith(low) or low.startswith(n))]
    for n in difflib.get_close_matches(low, names(), n=3, cutoff=0.75):
        if n not in found:
            found.append(n)
    return found


def all_schemes() -> list[Scheme]:
    """Every registered scheme, in name order."""
    return [get(n) for n in names()]
