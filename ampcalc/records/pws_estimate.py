"""Estimates from sanitized frequencies: the MLE (Cohen et al. 2021, Eq. 9) or the
unbiased estimator (§7.1) of a sum of frequencies, with plug-in bias and variance and
sampled-SbH's figures for comparison (§8.1; ``ampcalc pws estimate``). No printing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ampcalc.designs.sources import as_designs
from ampcalc.math import pws as K
from ampcalc.model.errors import ConditionError, DesignError
from ampcalc.model.references import PWS
from ampcalc.records import pws_estimators as E
from ampcalc.records.pws_tables import pws_design
from ampcalc.schemes import pws


def argmax_column(rows: Any, j: int) -> int:
    """The frequency i_j maximising π_{i,j} down column j of Algorithm 4's rows (the
    MLE's frequency of a key reported as j), scanning while the column lasts."""
    best, arg = -1.0, j
    for h in range(j, rows.n + 1):
        v = rows.entry(h, j)
        if v <= 0 and h > j and rows.lo[h] > j:
            break
        if v > best:
            best, arg = v, h
    return arg


def pws_estimate_params(
    params: Any, tokens: Sequence[int], estimator: str = "mle"
) -> dict[str, Any]:
    """The MLE estimate (Cohen et al. 2021, Eq. 9) from sanitized frequencies, or the
    unbiased one (``estimator="unbiased"``, §7.1), with bias/variance and sampled-SbH's
    per-frequency bias/variance for comparison (§8.1): the ``pws estimate --json``
    payload without ``select``."""
    t = pws.compute_table(params)
    top = max([t.n, *tokens])
    # rows until column `top` has ended (the MLE scans h >= j while π_{h,j} > 0)
    n = top
    while True:
        q = pws.q_of(params, n)
        rows = K.frequency_rows(q, params.epsilon, params.delta, pws.reporting(params, q))
        if rows.lo[n] > top or n > 64 * top + 10_000:
            break
        n = 2 * n
    if estimator == "unbiased":
        a = E.unbiased_estimates(rows, upto=top)
        if not np.all(np.isfinite(a)):
            raise ConditionError(
                "the unbiased estimator is undefined here (π_{i,i} = 0 for some i: the "
                f"triangular system of {PWS}, §7.1 is singular); use the MLE"
            )
    else:
        a = K.mle_estimates(rows, upto=top)
    bias, var, mse = K.bias_variance(rows, a, upto=top)
    samp = E.sampling_of(params, rows.q[:top])
    freqs = np.arange(1, top + 1, dtype=float)
    if samp is not None:
        b_sbh, v_sbh = E.sbh_bias_variance(freqs, params.epsilon, params.delta, **samp)
    else:
        b_sbh = v_sbh = np.full(top, np.nan)
    tok = np.asarray(tokens, dtype=np.int64)
    est = float(np.sum(a[tok - 1])) if tok.size else 0.0
    # plug-in: each reported key's frequency taken as i_j (the MLE's frequency)
    i_of = np.array([argmax_column(rows, j) for j in range(1, top + 1)])
    nrmse: float | None
    if tok.size:
        ii = np.minimum(i_of[tok - 1], top)
        b_plug = float(np.sum(bias[ii - 1]))
        v_plug = float(np.sum(var[ii - 1]))
        nrmse = math.sqrt(v_plug + b_plug**2) / est if est > 0 else None
    else:
        b_plug = v_plug = 0.0
        nrmse = None
    per = [
        {
            "frequency": i + 1,
            "a": float(a[i]),
            "bias": float(bias[i]),
            "variance": float(var[i]),
            "mse": float(mse[i]),
            "nrmse": math.sqrt(mse[i]) / (i + 1),
            "bias_sbh": float(b_sbh[i]) if math.isfinite(b_sbh[i]) else None,
            "variance_sbh": float(v_sbh[i]) if math.isfinite(v_sbh[i]) else None,
        }
        for i in range(top)
    ]
    return {
        "estimator": estimator,
        "estimate": est,
        "reported_keys": int(tok.size),
        "bias_plugin": b_plug,
        "variance_plugin": v_plug,
        "nrmse_plugin": nrmse,
        "frequencies": per,
    }


def pws_estimate(design: Any, frequencies: Any, estimator: str = "mle") -> dict[str, Any]:
    """``ampcalc.api.pws_estimate`` (its arguments, returns and errors are documented there)."""
    _, params = pws_design(as_designs(design))
    tokens = np.asarray(frequencies).ravel()
    if tokens.size and (
        tokens.dtype.kind not in "iuf"
        or np.any(tokens != np.round(tokens))
        or int(tokens.min()) < 1
    ):
        raise DesignError("sanitised frequencies must be whole numbers >= 1")
    if estimator not in ("mle", "unbiased"):
        raise DesignError(f"estimator must be 'mle' or 'unbiased', not {estimator!r}")
    return pws_estimate_params(params, [int(v) for v in tokens.tolist()], estimator)
