"""Contract tests run over every registered scheme with an ``epsilon`` mechanism.

Each scheme declares ``example`` parameters; for them: lower <= upper where both
exist, both non-decreasing in ε, and invert then bound reaches the target from below.
A scheme that returns an error for its own example fails the contract (it is not
skipped); only a scheme that gives no upper bound at all may certify no ε.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import ampcalc
from ampcalc import engine, schemes

CONTRACT = [
    s.name
    for s in schemes.all_schemes()
    if s.example and s.mechanism_form == "epsilon" and not s.needs_target
]
EPS = np.array([1e-12, 1e-6, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0, 100.0, 700.0, 800.0])
#: where a contributor reads what a family module provides
GUIDE = "docs/contributing.md, step 1 (the family module)"


def module_of(name: str) -> str:
    """The file a scheme's contract failures point to (where its ``analyse`` is)."""
    path = Path(inspect.getsourcefile(schemes.get(name).analyse) or name)
    root = Path(__file__).resolve().parent.parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def design_for(name: str, neighbours: str):
    return ampcalc.load_designs(
        {
            "mechanism": {"epsilon": 1.0, "neighbours": neighbours},
            "sampling": {"scheme": name, **schemes.get(name).example},
        }
    )[0]


@pytest.mark.parametrize("name", CONTRACT)
@pytest.mark.parametrize("neighbours", ["both", "add-remove"])
def test_bounds_ordered_and_monotone(name: str, neighbours: str) -> None:
    r = engine.bound(design_for(name, neighbours), EPS)
    if r.error:
        pytest.fail(
            f"{name} ({neighbours}) returned an error for its own SCHEME.example "
            f"{dict(schemes.get(name).example)} at ε = 1: {r.error}. The example must be a "
            f"design the scheme analyses: fix SCHEME.example or analyse() in "
            f"{module_of(name)} ({GUIDE})."
        )
    lower = None if r.lower is None else np.asarray(r.lower, dtype=float)
    upper = None if r.upper is None else np.asarray(r.upper, dtype=float)
    where = f"{name} ({neighbours}), SCHEME.example of {module_of(name)}, over ε = {EPS.tolist()}"
    for label, b in (("lower", lower), ("upper", upper)):
        if b is not None:
            assert np.all(np.diff(b) >= 0), f"{where}: {label} bound not non-decreasing: {b}"
            assert np.all(np.isfinite(b)), f"{where}: {label} bound not finite: {b}"
    if lower is not None and upper is not None:
        assert np.all(lower <= upper), f"{where}: lower {lower} above upper {upper}"


@pytest.mark.parametrize("name", CONTRACT)
@pytest.mark.parametrize("target", [1e-6, 0.1, 1.0, 5.0])
def test_invert_then_bound_reaches_target_from_below(name: str, target: float) -> None:
    d = design_for(name, "both")
    inv = engine.invert(d, target)
    if inv.error:
        pytest.fail(
            f"{name}: invert at target {target} returned an error for its own SCHEME.example: "
            f"{inv.error}. Fix SCHEME.example or analyse() in {module_of(name)} ({GUIDE})."
        )
    where = f"{name} (SCHEME.example of {module_of(name)}), target ε′ = {target}"
    if inv.certified is None:
        # only a lower-bound-only design may certify nothing
        assert engine.bound(d, EPS).upper is None, (
            f"{where}: an upper bound but no certified ε ({inv.warnings}); the Theorem's "
            f"`inverse` (or the upper bound the engine inverts) fails ({GUIDE})"
        )
    else:
        up = engine.bound(d, inv.certified).upper
        assert up <= target, (
            f"{where}: the certified ε {inv.certified} gives upper {up} > target: the "
            f"Theorem's `inverse` is not the upper bound's inverse ({GUIDE})"
        )
    if inv.impossible_above is not None and np.isfinite(inv.impossible_above):
        if inv.certified is not None:
            assert inv.impossible_above >= inv.certified, (
                f"{where}: impossible above {inv.impossible_above} < certified "
                f"{inv.certified}: lower and upper bounds cross ({GUIDE})"
            )
        lo = engine.bound(d, inv.impossible_above).lower
        assert lo >= target, (
            f"{where}: at impossible-above ε {inv.impossible_above} the lower bound {lo} is "
            f"below the target: the Theorem's `inverse`/`lower_inverse` is not the lower "
            f"bound's inverse ({GUIDE})"
        )


def test_every_scheme_documents_its_fields_and_basis() -> None:
    for s in schemes.all_schemes():
        where = f"{s.name}: in SCHEME of {module_of(s.name)}"
        assert s.basis, (
            f"{where}, give `basis`: the works and theorems it rests on, e.g. "
            f'(cite(BUN_2020_WP, "Lemma 3.3"),) ({GUIDE})'
        )
        assert s.summary, f"{where}, give `summary`: one line for `ampcalc schemes` ({GUIDE})"
        for f in s.fields:
            assert f.doc, (
                f"{s.name}: field {f.name!r} of FIELDS in {module_of(s.name)} has no `doc`: "
                f"one line for `ampcalc schemes` and error messages ({GUIDE})"
            )


def test_every_family_module_is_named_after_its_scheme() -> None:
    """A contributor finds a scheme's module from its name alone (hyphens as underscores)."""
    for name in schemes.names():
        module = inspect.getmodule(schemes.get(name).analyse)
        assert module is not None, name
        family = module.__name__.removeprefix("ampcalc.schemes.").split(".")[0]
        assert family == name.replace("-", "_"), (name, module.__name__)
