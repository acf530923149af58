"""One stratum under randomised rounding, as a mixture of simple random samples of
⌊rN⌋ or ⌈rN⌉ records: its replace-one bound (Bun et al., Theorem 2.2 at the larger size)
and the witness below it (``randomized.replace_one_mixture`` states the theorem)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ampcalc.math import numeric


@dataclass(frozen=True)
class SizeMixture:
    """One stratum under randomised rounding: ⌊rN⌋ or ⌈rN⌉ records, then srswor."""

    n: int
    sizes: tuple[int, ...]
    probs: tuple[float, ...]

    @property
    def q_hi(self) -> float:
        return max(self.sizes) / self.n

    def upper(self, er: np.ndarray) -> np.ndarray:
        """A replacement inside the stratum: A(⌈rN⌉/N, ε_R), the per-size bound of Bun et al.
        Theorem 2.2 at the larger size (a mixture with the same weights on both sides
        is no worse than its worst component)."""
        return numeric.amplification_upper(self.q_hi, er)

    def upper_both(self, ed: np.ndarray, er: np.ndarray) -> np.ndarray:
        """``upper`` as a formula of M's two ε (it reads ε_R only)."""
        return self.upper(er)

    def lower(self, ed: np.ndarray, er: np.ndarray) -> np.ndarray:
        """Witness Pr[M(S) = 1] ∝ e^{ε_R·[x ∈ S] + c·|S|}, c = ε_D − ε_R: every record's
        weight is c or ε_R + c, so M is ε_D-DP under add-remove (|c|, |ε_R + c| <= ε_D as
        ε_R <= 2ε_D) and ε_R-DP under replace-one. Loss: log of the e^{c·m}-weighted mean
        of 1 + (m/N)(e^{ε_R} − 1) over the sizes m. Rounded down."""
        e_d, e_r = np.broadcast_arrays(np.asarray(ed, float), np.asarray(er, float))
        c = e_d - e_r
        lo = min(self.sizes)
        logs_w = [
            math.log(pm) + c * (m - lo) for m, pm in zip(self.sizes, self.probs, strict=True)
        ]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            num = np.logaddexp.reduce(
                [
                    lw + numeric.amplification(m / self.n, e_r)
                    for lw, m in zip(logs_w, self.sizes, strict=True)
                ]
            )
            den = np.logaddexp.reduce(logs_w)
        val = num - den
        slack = 8.0 * np.spacing(np.maximum(np.abs(num), 1.0))
        out: np.ndarray = numeric.round_down(np.maximum(val - slack, 0.0))
        return out


def size_mixture(rate: float, n: int) -> SizeMixture:
    """The stratum of N = ``n`` records at rate r: ⌊rN⌋ records with probability
    1 − frac(rN), else ⌈rN⌉ (one size when rN is whole)."""
    x = rate * n
    lo = math.floor(x)
    frac = x - lo
    if frac == 0.0:
        return SizeMixture(n, (min(lo, n),), (1.0,))
    return SizeMixture(n, (lo, min(lo + 1, n)), (1.0 - frac, frac))
