"""Importance sampling per record: q(x), w(x) = 1/q(x) and ε̂(x) (``ampcalc weights``).

``importance_design`` picks the one ``scheme: importance`` design of a file;
``importance_setup`` binds its ε* and refuses what ``bound`` refuses;
``record_weights`` evaluates every record (``ampcalc.math.importance`` via the
scheme's ``record_figures``) into ``Weights``. The Dask engine (``distributed``) and
the ``weights`` command share these. No printing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ampcalc.designs.sources import as_designs
from ampcalc.load.records import iter_chunks
from ampcalc.math.importance import uniforms
from ampcalc.model.design import Design, Neighbours
from ampcalc.model.errors import DesignError
from ampcalc.schemes import importance as imp


@dataclasses.dataclass(frozen=True)
class Weights:
    """Per-record figures of an importance design (``ampcalc weights``).

    Attributes:
        design: the design's name.
        probability: q(x) per record (row order of the record file).
        weight: w(x) = 1/q(x).
        epsilon_hat: ε̂(x), rounded up (the importance-sampling paper, Theorem 6 / Theorem 10).
        outside: records outside the domain or infeasible (written with q = 1 under
            ``privacy-constrained``; their q otherwise, never clipped).
    """

    design: str
    probability: np.ndarray
    weight: np.ndarray
    epsilon_hat: np.ndarray
    outside: np.ndarray

    def __len__(self) -> int:
        return int(self.probability.size)

    def sample(self, seed: int) -> np.ndarray:
        """The 0-based rows of the Poisson sample drawn with ``seed`` (as ``--sample``).

        Row i is kept when U_i < q(x_i), U_i from numpy's Philox generator keyed by the
        seed with counter i: the same rows however the file is split.
        """
        return np.flatnonzero(uniforms(int(seed), 0, len(self)) < self.probability)

    def to_dict(self) -> dict[str, Any]:
        """Columns as lists: row, probability, weight, epsilon_hat (the CSV's)."""
        return {
            "row": list(range(len(self))),
            "probability": self.probability.tolist(),
            "weight": self.weight.tolist(),
            "epsilon_hat": self.epsilon_hat.tolist(),
        }


def importance_design(designs: Sequence[Design]) -> Design:
    """The one ``scheme: importance`` design of a file (the ``weights`` command's rule)."""
    chosen = [d for d in designs if d.scheme == "importance"]
    if not chosen:
        raise DesignError("`ampcalc weights` needs a design with `scheme: importance`")
    if len(chosen) > 1:
        raise DesignError(
            f"the file holds {len(chosen)} importance designs; `ampcalc weights` takes one "
            "(select it with a file of its own)"
        )
    return chosen[0]


def importance_setup(d: Design) -> tuple[Any, Any, float, float | None]:
    """(params with ε* bound, profile, profile scaling k0, ε* or None) of an importance
    design, refusing (``ConditionError``) a privacy-constrained design whose declared ε
    exceeds ε*, with the message ``bound`` gives."""
    params: Any = imp.bind_target(d.params, d.target)
    profile: Any = d.mechanism
    eps_star = None
    if params.probabilities == "privacy-constrained":
        eps_star = imp._target_of(params)
        if profile.epsilon > eps_star:
            # the same refusal as `bound` (names the largest feasible radius)
            imp.analyse(params, profile, d.guarantee or Neighbours.ADD_REMOVE)
    k0 = profile.epsilon / profile.natural
    return params, profile, k0, eps_star


def record_weights(design: Any, threads: int = 1) -> Weights:
    """q(x), w(x) = 1/q(x) and ε̂(x) for every record of an importance design
    (``threads``: the privacy-constrained weights' blocks on that many threads).

    Raises:
        DesignError: not an importance design.
        ConditionError: the design is outside Theorem 10's conditions (the message
            ``bound`` gives, naming the largest feasible radius).
    """
    d = importance_design(as_designs(design))
    params, profile, k0, eps_star = importance_setup(d)
    fig = imp.record_figures(params, profile, k0, eps_star, threads=threads)
    return Weights(
        design=d.name,
        probability=fig.q,
        weight=fig.w,
        epsilon_hat=fig.eps_hat,
        outside=fig.outside,
    )


def planning_values(params: Any) -> list[tuple[str, float | int]]:
    """What ``weights --suggest`` reports: the record count and dimension, x̃ (the mean
    ‖x‖₂², the lightweight coreset's ``mean_sq_norm``) and the largest ‖x‖₁ and ‖x‖₂
    (candidates for ``radius``). Computed from the data: for planning only, since a
    ``q(·)`` built from them is data-dependent."""
    data = params.data
    return [
        ("records", int(data.count)),
        ("dimension", int(data.dimension)),
        ("mean_sq_norm (x̃ = mean ‖x‖₂²)", float(np.mean(data.sq_l2))),
        ("max ‖x‖₁", float(np.max(data.l1))),
        ("max ‖x‖₂", float(np.max(np.sqrt(data.sq_l2)))),
    ]


def sampled_blocks(
    source: Any, q: np.ndarray, w: np.ndarray, seed: int
) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The Poisson sample of the records, block by block: ``(records read so far, row
    indices, records, q, w)`` of the kept rows. Row i is kept when its Philox uniform
    (``math.importance.uniforms``: a pure function of (seed, i)) is below q_i, so any
    chunking, streaming or partitioning keeps the same rows."""

    def chunk_error(msg: str) -> Exception:
        return DesignError(msg)

    for start, x, _ in iter_chunks(source, chunk_error):
        n = x.shape[0]
        qs = q[start : start + n]
        idx = np.flatnonzero(uniforms(int(seed), start, n) < qs)
        yield start + n, start + idx, x[idx], qs[idx], w[start : start + n][idx]
