"""The two-cluster count witness of Bun et al. 2020, §4, eq. (2).

One of two clusters (sizes a <= b) is chosen uniformly and M(Z) = |Z| + Lap(1/ε) runs on
it; the neighbour P′ has one more record in a cluster. The output density is a mixture
of two Laplace densities, at the two clusters' sizes. The paper evaluates the ratio at
the output 0 with |C_1| = 0 → 1 and |C_2| = b:

    (1 + e^{−εb}) / (e^{−ε} + e^{−εb})                                           (2)

and in general, the record added to the smaller cluster and any output y <= a, the same
with b − a in place of b. The exact loss of this witness is the largest |log p(y) −
log p′(y)| over all outputs y: on each interval between the atoms {a, a + 1, b, b + 1}
both densities are sums of c·e^{εy} and d·e^{−εy}, so the log-ratio is monotone there,
and it is constant beyond the extreme atoms; the supremum is at an atom.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ampcalc.math import numeric


def eq2(a: int, b: int, eps: Any) -> np.ndarray:
    """Bun et al. 2020 eq. (2) with sizes a <= b: log((1 + e^{−ε(b−a)}) / (e^{−ε} + e^{−ε(b−a)})),
    rounded down (a lower bound: the witness's loss at one output)."""
    e = np.asarray(eps, dtype=float)
    d = float(b - a)
    num = np.logaddexp(0.0, -e * d)
    den = np.logaddexp(-e, -e * d)
    out: np.ndarray = numeric.round_down(num - den - 4 * np.spacing(np.maximum(num, 1.0)))
    return out


def _log_density(y: float, atoms: tuple[int, int], eps: np.ndarray) -> np.ndarray:
    """log of ½(ε/2)e^{−ε|y − a|} + ½(ε/2)e^{−ε|y − b|}, without the common factor."""
    out: np.ndarray = np.logaddexp(-eps * abs(y - atoms[0]), -eps * abs(y - atoms[1]))
    return out


def exact(a: int, b: int, eps: Any, added_to: str) -> np.ndarray:
    """The witness's exact loss when the record is added to the ``smaller`` cluster (a)
    or the ``larger`` one (b): the largest |log p(y) − log p′(y)| over the atoms.
    Rounded down."""
    e = np.asarray(eps, dtype=float)
    p_atoms = (a, b)
    q_atoms = (a + 1, b) if added_to == "smaller" else (a, b + 1)
    atoms = sorted({*p_atoms, *q_atoms})
    loss = np.max(
        [np.abs(_log_density(y, p_atoms, e) - _log_density(y, q_atoms, e)) for y in atoms],
        axis=0,
    )
    slack = 8 * np.spacing(np.maximum(e * (b + 1), 1.0))
    out: np.ndarray = numeric.round_down(np.maximum(loss - slack, 0.0))
    return out
