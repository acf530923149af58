"""Accuracy of private weighted samples: the unbiased estimator, the SbH baseline's
bias and variance, and the expected number of reported keys (Cohen et al. 2021 §7, §8.1).

Basis: Cohen et al. 2021, §7.1 (the unbiased estimator: the triangular system
Σ_{j<=i} π_{i,j} a_j = g(i); the MLE, Eq. 9, is in ``pws_kernels``), §8.1 (SbH, Alg. 6,
and sampled-SbH with estimator (7) applied to the sanitized frequency), Fig. 2 and 4
(expected reported keys for Zipf frequencies); spec importance-and-weighted-sampling.md
B8–B10. g(i) = i throughout (the sum of frequencies).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.table import missing_column, read_table
from ampcalc.math import pws as K
from ampcalc.model.errors import ConditionError, DesignError
from ampcalc.model.references import DERIVATIONS, PWS
from ampcalc.schemes import pws

_NODES = 20
_FAST_NODES = 10  # e^{−ε|u|}·smooth on a panel of width 1/ε: error ~1/20!
_TAIL = 60.0  # Laplace scales kept on either side: e^{−60} of the mass dropped


def unbiased_estimates(rows: K.Rows, upto: int | None = None) -> np.ndarray:
    """The unique unbiased per-key estimates a_1..a_m (Cohen et al. 2021 §7.1), g(i) = i:
    a_i = (i − Σ_{j<i} π_{i,j} a_j)/π_{i,i}. NaN from the first i with π_{i,i} = 0 (the
    system is then singular). Entries can be negative and large (spec B8: ε = 1,
    δ = 1e-3, q ≡ 1 gives a_2 = −718.28)."""
    m = upto if upto is not None else rows.n
    a = np.full(m, np.nan)
    for i in range(1, m + 1):
        lo, b = rows.lo[i], rows.band[i]
        hi = lo + b.size - 1
        if hi < i or b[i - lo] <= 0.0:
            break
        js = np.arange(lo, i)  # j < i inside the band
        rest = float(np.dot(b[: js.size], a[js - 1])) if js.size else 0.0
        a[i - 1] = (i - rest) / b[i - lo]
    return a


def _q_real(y: np.ndarray, method: str, tau: float, power: float) -> np.ndarray:
    """q(y) of threshold sampling at a real sanitized frequency y (Cohen et al. 2021 Eq. 1)."""
    if method == "none":
        return np.ones_like(y)
    with np.errstate(over="ignore"):
        f = y**power
    if method == "ppswor":
        out: np.ndarray = -np.expm1(-tau * f)
        return out
    return np.minimum(1.0, tau * f)


def sbh_moments(
    freqs: np.ndarray,
    eps: float,
    delta: float,
    *,
    method: str = "none",
    threshold: float = 1.0,
    weight_power: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """E[a] − i and E[a²] − i² of sampled-SbH's per-key estimate at each frequency i
    (spec B9), centred so that large frequencies keep their precision.

    SbH (Cohen et al. 2021 Alg. 6): w* = i + Lap(1/ε), reported iff w* >= T = 1 + ln(1/δ)/ε; then
    sampled with probability q(w*) and estimated by (7), a = w*/q(w*). So
    E[a] = ∫_T^∞ y·Lap_i(y) dy (q cancels: independent of τ, as Cohen et al. 2021 Fig. 5 notes) and
    E[a²] = ∫_T^∞ y²/q(y)·Lap_i(y) dy; centred: E[a] − i = ∫_T (y − i)Lap_i − i·Pr(w* < T),
    E[a²] − i² = ∫_T ((y − i)(y + i) + i²(1 − q(y)))/q(y)·Lap_i − i²·Pr(w* < T).
    q ≡ 1 (``none``) is SbH without sampling.
    Numerics: composite Gauss–Legendre (20 nodes) on panels of width 1/ε over
    [max(T, i − 60/ε), max(T, i) + 60/ε], split at T, i and (priority) the kink
    τ y^p = 1 (frequencies far from T and the kink share one grid in y − i); checked
    against mpmath quadrature in the tests.
    """
    x, w = np.polynomial.legendre.leggauss(_NODES)
    i_all = np.asarray(freqs, dtype=float).ravel()
    T = K.sbh_threshold(eps, delta)
    kink = math.inf
    if method == "priority":
        kink = (1.0 / threshold) ** (1.0 / weight_power)
    c1 = np.zeros(i_all.size)
    c2 = np.zeros(i_all.size)
    width = 1.0 / eps
    reach = _TAIL * width

    def centred(y: np.ndarray, ii: np.ndarray, wd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = _q_real(y, method, threshold, weight_power)
        d = y - ii
        one = (d * wd).sum(axis=-1)
        two = (((d * (y + ii)) + ii * ii * (1.0 - q)) / q * wd).sum(axis=-1)
        return one, two

    # far from T and from the kink every frequency has the same panels in u = y − i
    fast = (i_all - reach >= T) & ((i_all + reach <= kink) | (i_all - reach >= kink))
    flat = fast & ((method == "none") | (i_all - reach >= kink))
    # q = 1 over the whole window: E[a] − i = 0, E[a²] − i² = Var(Lap(1/ε)) = 2/ε²
    c2[flat] = 2.0 / (eps * eps)
    fast &= ~flat
    if np.any(fast):
        xf, wf = np.polynomial.legendre.leggauss(_FAST_NODES)  # smooth: fewer nodes
        panels = np.arange(-_TAIL, _TAIL) * width  # panel starts, width 1/ε, split at 0
        u = (panels[:, None] + width * (xf[None, :] + 1.0) / 2.0).ravel()
        wu = np.broadcast_to(width / 2.0 * wf, (panels.size, _FAST_NODES)).ravel()
        dens = 0.5 * eps * np.exp(-eps * np.abs(u)) * wu
        idx = np.flatnonzero(fast)
        for s0 in range(0, idx.size, 512):
            sl = idx[s0 : s0 + 512]
            ii = i_all[sl][:, None]
            c1[sl], c2[sl] = centred(ii + u[None, :], ii, dens[None, :])
    for k in np.flatnonzero(~fast).tolist():
        i = float(i_all[k])
        lo = max(T, i - reach)
        hi = max(T, i) + reach
        cuts = {lo, hi, *(c for c in (i, kink) if lo < c < hi)}
        pts: list[np.ndarray] = []
        wts: list[np.ndarray] = []
        for a, b in itertools.pairwise(sorted(cuts)):
            n_panels = max(1, math.ceil((b - a) / width))
            starts = a + (b - a) * np.arange(n_panels) / n_panels
            h = (b - a) / n_panels
            pts.append((starts[:, None] + h * (x[None, :] + 1.0) / 2.0).ravel())
            wts.append(np.broadcast_to(h / 2.0 * w, (n_panels, _NODES)).ravel())
        y = np.concatenate(pts)
        wd = np.concatenate(wts) * 0.5 * eps * np.exp(-eps * np.abs(y - i))
        one, two = centred(y, np.asarray(i), wd)
        # Pr(w* < T): the key is not reported, and the estimate is 0
        below = 0.5 * math.exp(-eps * (i - T)) if i >= T else 1.0 - 0.5 * math.exp(-eps * (T - i))
        c1[k] = float(one) - i * below
        c2[k] = float(two) - i * i * below
    return c1, c2


def sbh_bias_variance(
    freqs: np.ndarray, eps: float, delta: float, **sampling: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Bias_i = E[a] − i and Var_i = E[a²] − E[a]² of sampled-SbH (spec B9), from the
    centred moments: Var_i = (E[a²] − i²) − 2i·Bias_i − Bias_i²."""
    i = np.asarray(freqs, dtype=float).ravel()
    c1, c2 = sbh_moments(i, eps, delta, **sampling)
    return c1, c2 - 2.0 * i * c1 - c1 * c1


def sampling_of(params: Any, q: np.ndarray) -> dict[str, Any] | None:
    """The sampling keywords of ``sbh_moments``/``sbh_phi`` for a pws design; None for an
    explicit ``inclusion`` list (q is then known at whole frequencies only, so sampled-SbH,
    which samples on the real-valued w*, is not defined)."""
    if params.inclusion is not None:
        return None
    sampled = bool(np.any(q < 1.0)) and params.method != "none"
    return {
        "method": params.method if sampled else "none",
        "threshold": params.threshold,
        "weight_power": params.weight_power,
    }


# --------------------------------------------------------------------------------------
# Expected number of reported keys (Cohen et al. 2021 §8.1, Fig. 2 and 4)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Distribution:
    """Distinct frequencies and the number of keys with each (a frequency distribution)."""

    frequency: np.ndarray  # int64, increasing, >= 1
    count: np.ndarray  # float64, > 0
    source: str


def zipf(support: int, alpha: float) -> Distribution:
    """The integer Zipf law of Cohen et al. 2021's experiments (spec B10, the authors'
    ``int_zipf_distribution``): key k = 0..support − 1 has frequency
    ⌊(k + 1)^{−α}/support^{−α}⌋ (so the rarest key has frequency 1)."""
    k = np.arange(support, dtype=float)
    with np.errstate(over="ignore", under="ignore"):
        f = np.floor(((k + 1.0) ** -alpha) / (float(support) ** -alpha))
    if not np.all(np.isfinite(f)) or f.max() >= 2.0**63:
        raise ConditionError(
            f"Zipf[{alpha:g}] over {support} keys has frequencies beyond 2^63; use a smaller "
            "support or α"
        )
    vals, counts = np.unique(f.astype(np.int64), return_counts=True)
    keep = vals >= 1
    return Distribution(
        vals[keep], counts[keep].astype(float), f"Zipf[{alpha:g}] over {support} keys"
    )


def read_distribution(path: str) -> Distribution:
    """A CSV with a ``frequency`` column and an optional ``count`` column (keys with
    that frequency, default 1 per row); other columns (e.g. ``key``) are ignored."""
    freq: dict[int, float] = {}
    table = read_table(path, what="frequency file", header=True, delimiter=",", name=path)
    names = list(table.header or ())
    line = table.header_line or 1
    if "frequency" not in names:
        raise DesignError(f"{path}:{line}: {missing_column('frequency', names)}")
    fi = names.index("frequency")
    ci = names.index("count") if "count" in names else None
    want = "expected a whole frequency >= 1" + (" and a count >= 0" if ci is not None else "")
    for i, row in enumerate(table.rows):
        try:
            f = int(row[fi])
            c = float(row[ci]) if ci is not None else 1.0
        except (ValueError, IndexError):
            raise DesignError(f"{table.at(i)}: {want}") from None
        if f < 1 or not math.isfinite(c) or c < 0:
            raise DesignError(f"{table.at(i)}: {want}")
        freq[f] = freq.get(f, 0.0) + c
    if not freq:
        raise DesignError(f"{path}: no frequencies")
    fs = np.array(sorted(freq), dtype=np.int64)
    return Distribution(fs, np.array([freq[int(v)] for v in fs]), path)


def _q_at(params: Any, freqs: np.ndarray) -> np.ndarray:
    """q at whole frequencies (explicit ``inclusion`` list extended by its last value)."""
    if params.inclusion is not None:
        inc = np.asarray(params.inclusion, dtype=float)
        out: np.ndarray = inc[np.minimum(freqs, inc.size) - 1]
        return out
    return _q_real(freqs.astype(float), params.method, params.threshold, params.weight_power)


def expected_keys(params: Any, dist: Distribution) -> dict[str, Any]:
    """Expected number of keys reported by PWS (Σ count·π_w), by sampled-SbH
    (Σ count·φ_w) and by the non-private sample (Σ count·q_w) (Cohen et al. 2021 Fig. 2 and 4)."""
    # the table until π settles at q for good (a design's max_frequency may stop short)
    t = pws.compute_table(dataclasses.replace(params, max_frequency=None))
    f = dist.frequency
    q = _q_at(params, f)
    pi = np.empty(f.size)
    inside = f <= t.n
    pi[inside] = t.pi[f[inside] - 1]
    if np.any(~inside):
        if t.settled is None:
            raise ConditionError(
                f"π_i has not settled at q_i within {t.n} rows; frequencies up to "
                f"{int(f.max())} are not covered (set `max_frequency`)"
            )
        pi[~inside] = q[~inside]  # π_i = q_i for good past the table
    samp = sampling_of(params, t.q)
    eps, delta = params.epsilon, params.delta
    phi = None
    if samp is not None:
        phi = K.sbh_phi(0, eps, delta, frequencies=f.astype(float), **samp)
    keys = float(dist.count.sum())
    pws_keys = float(np.dot(dist.count, pi))
    sbh_keys = None if phi is None else float(np.dot(dist.count, phi))
    return {
        "distribution": dist.source,
        "keys": keys,
        "distinct_frequencies": int(f.size),
        "max_frequency": int(f.max()),
        "sampled_keys": float(np.dot(dist.count, q)),
        "pws_keys": pws_keys,
        "sbh_keys": sbh_keys,
        "pws_fraction": pws_keys / keys,
        "sbh_fraction": None if sbh_keys is None else sbh_keys / keys,
        "ratio": None if not sbh_keys else pws_keys / sbh_keys,
        "sbh_note": (
            "SbH: threshold 1 + ln(1/δ)/ε on w + Lap(1/ε), (ε, δ/2)-DP, compared at the same "
            f"nominal δ as {PWS} does ({DERIVATIONS}, §2.6)"
            if phi is not None
            else "no SbH figure for an explicit `inclusion` list (q at real frequencies unknown)"
        ),
    }


# --------------------------------------------------------------------------------------
# Per-frequency accuracy of PWS (MLE and unbiased) against SbH
# --------------------------------------------------------------------------------------


def rows_past(params: Any, top: int) -> K.Rows:
    """Algorithm 4 rows far enough that column ``top`` has ended (the MLE scans down
    the column; the same rule as ``api.pws_estimate_params``)."""
    n = max(top, 1)
    while True:
        q = pws.q_of(params, n)
        rows = K.frequency_rows(q, params.epsilon, params.delta, pws.reporting(params, q))
        if rows.lo[n] > top or n > 64 * top + 10_000:
            return rows
        n = 2 * n


def accuracy(params: Any, top: int) -> list[dict[str, Any]]:
    """Per frequency i = 1..top: the MLE's and the unbiased estimator's a_i, Bias_i,
    Var_i (PWS, Cohen et al. 2021 §7.1) and sampled-SbH's Bias_i, Var_i (§8.1)."""
    rows = rows_past(params, top)
    a_mle = K.mle_estimates(rows, upto=top)
    b_mle, v_mle, _ = K.bias_variance(rows, a_mle, upto=top)
    a_unb = unbiased_estimates(rows, upto=top)
    ok = np.isfinite(a_unb)
    n_ok = int(np.argmin(ok)) if not ok.all() else top
    b_unb = np.full(top, np.nan)
    v_unb = np.full(top, np.nan)
    if n_ok:
        b_unb[:n_ok], v_unb[:n_ok], _ = K.bias_variance(rows, a_unb[:n_ok], upto=n_ok)
    samp = sampling_of(params, rows.q[:top])
    freqs = np.arange(1, top + 1, dtype=float)
    if samp is not None:
        b_sbh, v_sbh = sbh_bias_variance(freqs, params.epsilon, params.delta, **samp)
    else:
        b_sbh = v_sbh = np.full(top, np.nan)

    def num(x: float) -> float | None:
        return float(x) if math.isfinite(x) else None

    return [
        {
            "frequency": i + 1,
            "a_mle": num(a_mle[i]),
            "bias_mle": num(b_mle[i]),
            "variance_mle": num(v_mle[i]),
            "a_unbiased": num(a_unb[i]),
            "bias_unbiased": num(b_unb[i]),
            "variance_unbiased": num(v_unb[i]),
            "bias_sbh": num(b_sbh[i]),
            "variance_sbh": num(v_sbh[i]),
        }
        for i in range(top)
    ]
