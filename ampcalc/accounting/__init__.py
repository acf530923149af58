"""Named noise mechanisms and their privacy profiles δ_M(ε).

A privacy profile is the smallest δ for which M is (ε, δ)-DP, as a function of ε
(the hockey-stick divergence of M's dominating pair). Every profile here is computed
by ampcalc itself (no accounting library), vectorised over ε and rounded outward: the
``delta`` methods return an upper bound on the exact profile, ``delta_lower`` a
lower bound. scipy is not imported here.

Modules:
    names: the named mechanisms' names (read without importing the profiles).
    profiles: the mechanisms (laplace, gaussian, discrete-laplace, discrete-gaussian,
        randomized-response, zcdp) and their profiles.
    compose: closed-form composition of releases run on one sample.
    parse: the named ``mechanism:`` forms of a design file.
    pmf: privacy-loss distributions of ampcalc's own (connect-the-dots, an optimistic
        side, FFT composition); no accounting library.
    fastpld: the Poisson-sampled Gaussian and Laplace as distributions, from their exact
        dominating pairs per direction.
    meter: the accountant's cost limits, checked before each array is allocated.

A profile is carried through a sampling scheme's (ε, δ) theorem by
``engine.profiles.bound_profile``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ampcalc.accounting.names import MECHANISM_NAMES

if TYPE_CHECKING:
    from ampcalc.accounting.profiles import (
        DiscreteGaussian,
        DiscreteLaplace,
        Gaussian,
        Laplace,
        Profile,
        RandomizedResponse,
        Zcdp,
        epsilon_at_delta,
    )

__all__ = [
    "MECHANISM_NAMES",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Gaussian",
    "Laplace",
    "Profile",
    "RandomizedResponse",
    "Zcdp",
    "epsilon_at_delta",
]


def __getattr__(name: str) -> Any:
    """The profiles' names, imported on first use: reading a design whose mechanism is a
    plain (ε, δ) pair never loads them (start-up)."""
    if name in __all__:  # MECHANISM_NAMES is bound above
        from ampcalc.accounting import profiles  # lazy: start-up (bound)

        return getattr(profiles, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
