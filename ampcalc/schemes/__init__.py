"""The registry: ``scheme:`` names -> scheme modules (one module per family).

Modules are imported on first use so that ``ampcalc --help`` and a closed-form
design import only what they need. To add a family, add one line to
``_MODULES`` (module name = scheme name with hyphens as underscores).
"""

from __future__ import annotations

import difflib
import importlib

from ampcalc.model.errors import AmpcalcError, Where
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
        close = difflib.get_close_matches(str(name), names(), n=1)
        hint = f"did you mean '{close[0]}'?" if close else None
        raise AmpcalcError(
            f"unknown scheme {name!r}; known schemes: {', '.join(names())}",
            where=where,
            hint=hint,
        )
    if name not in _LOADED:
        module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
        _LOADED[name] = module.SCHEME
    return _LOADED[name]


def all_schemes() -> list[Scheme]:
    """Every registered scheme, in name order."""
    return [get(n) for n in names()]
