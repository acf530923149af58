"""ampcalc: privacy amplification by sampling, as sound bounds and their inverses.

Python API (every CLI command has an equivalent; see ``docs/api.md``)::

    >>> import ampcalc
    >>> design = ampcalc.load_design('''
    ... mechanism: {epsilon: 1.0, neighbours: both}
    ... sampling: {scheme: srswor, population: 10000, sample: 100}
    ... ''')
    >>> round(ampcalc.bound(design).upper, 6)
    0.017037
    >>> round(ampcalc.invert(design, target=1.0).certified, 4)
    5.1523
    >>> ampcalc.bound(design, epsilon=[0.5, 1.0]).epsilon_prime.upper.round(6)
    array([0.006466, 0.017037])
    >>> len(ampcalc.sweep(design, vary={"epsilon": "0.1:2:20"}))
    20

Everything but the error types, the model classes and ``__version__`` is imported on
first use, so ``import ampcalc`` stays cheap (no scipy, no pandas, no typer).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from ampcalc._version import __version__
from ampcalc.model.design import Design, Mechanism, Neighbours, Target
from ampcalc.model.errors import AmpcalcError, ConditionError, DesignError, Where

if TYPE_CHECKING:  # the lazily imported names, for type checkers and IDEs
    from ampcalc import designs, kernels
    from ampcalc.api import (
        SweepResult,
        Weights,
        bound,
        check,
        compare,
        invert,
        load_design,
        load_designs,
        plan,
        pws_estimate,
        pws_sanitize,
        pws_table,
        weights,
    )
    from ampcalc.model.results import BoundResult, InvertResult

#: name -> module it lives in (imported on first attribute access).
_LAZY = {
    "load_designs": "api",
    "load_design": "api",
    "bound": "api",
    "invert": "api",
    "compare": "api",
    "check": "api",
    "plan": "api",
    "weights": "api",
    "pws_table": "api",
    "pws_sanitize": "api",
    "pws_estimate": "api",
    "SweepResult": "api",
    "Weights": "api",
    "BoundResult": "results",
    "InvertResult": "results",
}
_MODULES = ("designs", "kernels", "api")

# ``ampcalc.sweep``, ``ampcalc.validate`` and ``ampcalc.verify`` are also submodules,
# and importing a submodule sets the package attribute of that name. So these
# submodules are made callable: ``ampcalc.sweep(...)`` is ``ampcalc.api.sweep(...)``
# while ``from ampcalc import sweep`` still gives the module, whatever the import order.
_CALLABLE = ("sweep", "validate", "verify")


class _CallableModule(types.ModuleType):
    """A submodule that, called, runs the API function of the same name."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        api = importlib.import_module(".api", __name__)
        return getattr(api, self.__name__.rsplit(".", 1)[1])(*args, **kwargs)


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _CALLABLE and type(value) is types.ModuleType:
            value.__class__ = _CallableModule
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name in _CALLABLE:
        return importlib.import_module(f".{name}", __name__)
    if name in _MODULES:
        return importlib.import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ampcalc' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_MODULES})


__all__ = [
    "AmpcalcError",
    "BoundResult",
    "ConditionError",
    "Design",
    "DesignError",
    "InvertResult",
    "Mechanism",
    "Neighbours",
    "SweepResult",
    "Target",
    "Weights",
    "Where",
    "__version__",
    "bound",
    "check",
    "compare",
    "designs",
    "invert",
    "kernels",
    "load_design",
    "load_designs",
    "plan",
    "pws_estimate",
    "pws_sanitize",
    "pws_table",
    "sweep",
    "validate",
    "verify",
    "weights",
]
