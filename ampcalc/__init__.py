"""ampcalc: privacy amplification by sampling, as sound bounds and their inverses.

Python API::

    >>> import ampcalc
    >>> designs = ampcalc.load_designs('''
    ... mechanism: {epsilon: 1.0, neighbours: both}
    ... sampling: {scheme: srswor, population: 10000, sample: 100}
    ... ''')
    >>> round(ampcalc.bound(designs[0]).upper, 6)
    0.017037
    >>> round(ampcalc.invert(designs[0], target=1.0).certified, 4)
    5.1523
"""

from __future__ import annotations

from ._version import __version__
from .errors import AmpcalcError, ConditionError, DesignError, Where
from .model import Design, Mechanism, Neighbours, Target


def load_designs(source=None, *, overrides=()):  # type: ignore[no-untyped-def]
    """Load and validate designs (see ``ampcalc.design.load_designs``)."""
    from .design import load_designs as _load

    return _load(source, overrides=overrides)


def bound(design, epsilon=None):  # type: ignore[no-untyped-def]
    """Bounds on ε′ for one design (see ``ampcalc.engine.bound``)."""
    from .engine import bound as _bound

    return _bound(design, epsilon)


def invert(design, target=None, target_delta=None):  # type: ignore[no-untyped-def]
    """Certified and impossible-above ε for a target (see ``ampcalc.engine.invert``)."""
    from .engine import invert as _invert

    return _invert(design, target, target_delta)


def load_design(source=None, *, overrides=()):  # type: ignore[no-untyped-def]
    """Load a file, YAML text or dict holding exactly one design and return it."""
    found = load_designs(source, overrides=overrides)
    if len(found) != 1:
        raise DesignError(f"expected one design, found {len(found)}; use load_designs")
    return found[0]


def __getattr__(name):  # type: ignore[no-untyped-def]
    if name == "designs":
        import importlib

        return importlib.import_module(".designs", __name__)
    raise AttributeError(f"module 'ampcalc' has no attribute {name!r}")


__all__ = [
    "AmpcalcError",
    "ConditionError",
    "Design",
    "DesignError",
    "Mechanism",
    "Neighbours",
    "Target",
    "Where",
    "__version__",
    "bound",
    "invert",
    "load_design",
    "load_designs",
]
