"""Private weighted sampling's tables: Algorithm 3's q_i, π_i and Algorithm 4's rows
per frequency, with their DP self-check (Cohen et al. 2021; ``ampcalc pws table``).

``pws_design`` picks the one ``scheme: pws`` design of a file and binds its target;
``pws_table_columns`` gives the table as numpy columns (the CLI streams them),
``pws_table`` as JSON rows; ``pws_self_check`` recomputes the largest hockey-stick
divergence of the keys-only and frequency outputs. No printing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ampcalc.designs.sources import as_designs
from ampcalc.math import pws as K
from ampcalc.model.design import Design
from ampcalc.model.errors import DesignError
from ampcalc.records import pws_estimators as E
from ampcalc.schemes import pws


def pws_design(designs: Sequence[Design]) -> tuple[Design, Any]:
    """The one ``scheme: pws`` design of a file and its params with the target bound."""
    chosen = [d for d in designs if d.scheme == "pws"]
    if len(chosen) != 1:
        raise DesignError(
            "`ampcalc pws` needs a file with exactly one design with `scheme: pws` "
            f"(found {len(chosen)})"
        )
    d = chosen[0]
    return d, pws.bind_target(d.params, d.target)


EXACT_CHECK_ROWS = 50_000


def pws_self_check(
    params: Any, q: Any, pi: Any, rows: Any, frequencies: bool = True
) -> tuple[bool, float, bool]:
    """DP self-check: keys-only outputs (exact rational arithmetic up to
    ``EXACT_CHECK_ROWS`` rows) and, with ``frequencies``, Algorithm 4's rows (float,
    with rounding slack). Returns (ok, largest divergence, keys-only check exact)."""
    eps, delta = params.epsilon, params.delta
    exact = pi.size <= EXACT_CHECK_ROWS
    if exact:
        keys = K.dp_check_pi_exact(pi, eps, q=q, exact=pws.exact_q(params))
    else:
        keys = K.dp_check_pi(pi, eps)
    ok = keys <= delta if exact else keys <= delta + K.dp_tolerance(delta, 1, eps)
    if not frequencies:
        return ok, keys, exact
    if rows is None:
        rows = K.frequency_rows(q, eps, delta, pi)
    freq = K.dp_check(rows)
    width = rows.width
    ok = ok and freq <= delta + K.dp_tolerance(delta, width, eps)
    return ok, max(keys, freq), exact


def pws_table(
    design: Any,
    max_frequency: int | None = None,
    *,
    verify: bool = False,
    accuracy: bool = False,
) -> dict[str, Any]:
    """``ampcalc.api.pws_table`` (its arguments, returns and errors are documented there)."""
    summary, cols = pws_table_columns(design, max_frequency, verify=verify)
    names = list(cols)
    ratio_ok = (cols["phi_sbh"] > 0).tolist()
    rows = [
        dict(zip(names, values, strict=True))
        for values in zip(*(cols[k].tolist() for k in names), strict=True)
    ]
    for row, ok in zip(rows, ratio_ok, strict=True):
        if not ok:
            row["ratio"] = None
    if accuracy:
        _, params = pws_design(as_designs(design))
        for row, extra in zip(rows, E.accuracy(params, len(rows)), strict=True):
            row.update({k: v for k, v in extra.items() if k != "frequency"})
    return {**summary, "frequencies": rows}


def pws_table_columns(
    design: Any, max_frequency: int | None = None, *, verify: bool = False
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``pws_table``'s summary, and its rows as columns (``frequency``, ``q``, ``pi``,
    ``p``, ``phi_sbh``, ``ratio``: NaN where φ_i is not > 0, the rows' null)."""
    d, params = pws_design(as_designs(design))
    t = pws.compute_table(params, max_frequency)
    n = t.n
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(t.q > 0, t.pi / t.q, 0.0)
    sampled = bool(np.any(t.q < 1.0))
    phi = K.sbh_phi(
        n,
        params.epsilon,
        params.delta,
        method=params.method if sampled else "none",
        threshold=params.threshold,
        weight_power=params.weight_power,
    )
    pi = np.asarray(t.pi, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(phi > 0, pi / np.where(phi > 0, phi, 1.0), np.nan)
    cols = {
        "frequency": np.arange(1, n + 1, dtype=np.int64),
        "q": np.asarray(t.q, dtype=float),
        "pi": pi,
        "p": np.asarray(p, dtype=float),
        "phi_sbh": np.asarray(phi, dtype=float),
        "ratio": ratio,
    }
    summary: dict[str, Any] = {
        "design": d.name,
        "epsilon": params.epsilon,
        "delta": params.delta,
        "L": t.L,
        "settled_from": t.settled,
        "privacy_cost_rows": int(np.sum(t.pi < t.q)),
    }
    if verify:
        ok, summary["max_hockey_stick"], summary["keys_only_exact"] = pws_self_check(
            params, t.q, t.pi, None
        )
        summary["verified"] = ok
    return summary, cols
