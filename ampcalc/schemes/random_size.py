"""Random, data-independent sample size: m ~ t on {0..N}, then m records without replacement.

Basis: Bun et al., Theorem 3.1 (proof in Appendix B), with the
correction of spec §3 (bun-drechsler-hu-formulas.md): the tilt uses M's add-remove
ε_D and the amplification its replace-one ε_R (default 2ε_D). The paper's formula is
the special case ε_D = ε_R = ε (``neighbours: both``, e.g. a count query).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.load.fields import describe, is_real
from ampcalc.load.files import excerpt, open_input
from ampcalc.math import numeric
from ampcalc.model.design import Mechanism, Neighbours
from ampcalc.model.errors import DesignError, Where
from ampcalc.model.limits import LIMITS
from ampcalc.model.references import BUN_2022, DERIVATIONS, cite, derivation
from ampcalc.schemes.assembly import OfPair, Refusal, Refuses, Theorem, assemble
from ampcalc.schemes.base import Analysis, Field, Scheme

MAX_EXACT_INT = 2**53
BASIS = (cite(BUN_2022, "Theorem 3.1"), derivation("§2.1"))
KINDS = ("point", "binomial", "poisson", "uniform", "normal", "pmf")
ULP = 2.0**-52
#: tails of the tilted pmf left out of a window carry at most e^{-TAIL_LOG} of its mass
TAIL_LOG = 60.0
#: the normal closed form is used when the tilted centre is this many sd inside [0, N]
INTERIOR_SD = 12.0
PMF_SUM_TOL = 1e-9
CHUNK = 1 << 20
WINDOW_MAX = LIMITS["size_window"].value
PMF_MAX = LIMITS["pmf_values"].value


@dataclass(frozen=True, eq=False, kw_only=True)
class SizeDistribution:
    """The data-independent distribution t of the sample size on {0..N}.

    Attributes:
        kind: one of ``point``, ``binomial``, ``poisson``, ``uniform``, ``normal``, ``pmf``.
        value: ``point``: the size.
        p: ``binomial``: m ~ Binomial(N, p).
        mean: ``poisson``: λ (truncated to [0, N]); ``normal``: μ.
        sd: ``normal``: σ > 0. The pmf is proportional to the normal density at the
            integers 0..N: t(m) ∝ exp(−(m − μ)²/(2σ²)) (the discretisation of the spec's
            Figure 2 table; not CDF differences over unit intervals).
        low, high: ``uniform``: integers, t uniform on {low..high}.
        sizes, log_probs: ``pmf``: support points (increasing) and log-probabilities.
        source: ``pmf``: where the probabilities came from (``inline`` or a file).
    """

    kind: str
    value: int | None = None
    p: float | None = None
    mean: float | None = None
    sd: float | None = None
    low: int | None = None
    high: int | None = None
    sizes: np.ndarray | None = None
    log_probs: np.ndarray | None = None
    source: str | None = None


@dataclass(frozen=True, eq=False, kw_only=True)
class Params:
    """A sample of random size: draw m ~ t (independent of the data), then m of N
    records uniformly without replacement. N is fixed and public; m and the sample
    are secret (only M's output on the sample is released).

    Attributes:
        population: N >= 1.
        size: the distribution t of m on {0..N}.
    """

    population: int
    size: SizeDistribution


FIELDS = (
    Field(
        name="population",
        kind="int",
        doc="population size N (public)",
        required=True,
        low=1,
        high=MAX_EXACT_INT,
    ),
    Field(
        name="size",
        kind="any",
        doc="distribution of the sample size: {distribution: point|binomial|poisson|"
        "uniform|normal|pmf, ...}",
        required=True,
    ),
)


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------


def _size_fields(kind: str, n: int) -> tuple[Field, ...]:
    d = Field(name="distribution", kind="choice", doc="size distribution", choices=KINDS)
    spec: dict[str, tuple[Field, ...]] = {
        "point": (
            Field(name="value", kind="int", doc="the sample size", required=True, low=0, high=n),
        ),
        "binomial": (
            Field(name="p", kind="float", doc="m ~ Binomial(N, p)", required=True, low=0, high=1),
        ),
        "poisson": (
            Field(
                name="mean",
                kind="float",
                doc="Poisson mean λ (truncated to [0, N])",
                required=True,
                low=0,
                low_open=True,
                high=1e300,
            ),
        ),
        "uniform": (
            Field(name="low", kind="int", doc="smallest size", required=True, low=0, high=n),
            Field(name="high", kind="int", doc="largest size", required=True, low=0, high=n),
        ),
        "normal": (
            Field(
                name="mean",
                kind="float",
                doc="mean μ of the normal density",
                required=True,
                low=0,
                high=n,
            ),
            Field(
                name="sd",
                kind="float",
                doc="standard deviation σ > 0",
                required=True,
                low=0,
                low_open=True,
                high=1e150,
            ),
        ),
        "pmf": (
            Field(name="values", kind="any", doc="sizes (whole numbers in [0, N])"),
            Field(name="probabilities", kind="any", doc="probabilities (sum 1)"),
            Field(
                name="file",
                kind="str",
                doc="CSV (one probability per line) or .npy, indexed by size 0, 1, ...",
            ),
        ),
    }
    return (d, *spec[kind])


def _read_prob_file(path: Path, fail: Any) -> np.ndarray:
    with open_input(path, what="size pmf file", binary=True, error=fail):
        pass  # a regular file (not a directory, FIFO or device)
    if path.suffix == ".npy":
        from ampcalc.load.table import read_npy

        arr = read_npy(path, what="size pmf file", error=fail, ndims=(1,), mmap=False)
        return np.asarray(arr, dtype=float)
    from ampcalc.load.table import read_table

    table = read_table(
        path,
        what="size pmf file",
        error=fail,
        delimiter=",",
        max_rows=PMF_MAX,
        too_many=lambda n: LIMITS["pmf_values"].message(n),
        name=str(path),
    )
    if not table.rows:
        raise fail(f"{path}: the file is empty (expected one probability per line)")
    out = np.empty(len(table), dtype=float)
    for i, row in enumerate(table.rows):
        if i and table.lines[i] != table.lines[i - 1] + 1:  # sizes are line order
            raise fail(
                f"{path}:{table.lines[i - 1] + 1}: empty line; expected one probability per "
                "line (the k-th is the probability of size k)"
            )
        try:
            if any(row[1:]):
                raise ValueError
            out[i] = float(row[0])
        except ValueError:
            raise fail(
                f"{table.at(i)}: expected one probability per line, got {excerpt(','.join(row))}"
            ) from None
    return out


def _number_list(raw: Any, what: str, fail: Any) -> np.ndarray:
    if not isinstance(raw, (list, tuple)) or not raw:
        raise fail(f"expected a non-empty list of {what}")
    for i, v in enumerate(raw):
        if not is_real(v):
            raise fail(f"item {i}: expected a finite number, got {describe(v)}")
    return np.asarray(raw, dtype=float)


def parse_size(raw: Any, n: int, reader: Any) -> SizeDistribution:
    """Validate ``sampling.size`` (errors point at the offending key's line)."""
    path = "sampling.size"
    if not isinstance(raw, dict):
        raise reader.error(
            path, "expected a mapping such as {distribution: normal, mean: 5000, sd: 800}"
        )
    kind = raw.get("distribution")
    if kind not in KINDS:
        from ampcalc.load.fields import field_value

        if "distribution" not in raw:
            raise reader.error(
                path,
                "missing required key 'distribution' (one of " + ", ".join(KINDS) + ")",
                container=raw,
            )
        spec = _size_fields("point", n)[0]
        where = reader.where(f"{path}.distribution", raw, "distribution")
        field_value(spec, kind, where)  # raises with the domain and a did-you-mean
    assert isinstance(kind, str)
    v = reader.fields(raw, _size_fields(kind, n), path, f"size ({kind})")

    def at(key: str) -> Any:
        return lambda msg: reader.error(f"{path}.{key}", msg, container=raw, key=key)

    if kind == "point":
        return SizeDistribution(kind=kind, value=v["value"])
    if kind == "binomial":
        return SizeDistribution(kind=kind, p=v["p"])
    if kind == "poisson":
        return SizeDistribution(kind=kind, mean=v["mean"])
    if kind == "uniform":
        if v["low"] > v["high"]:
            raise at("low")(f"low = {v['low']} exceeds high = {v['high']}; expected low <= high")
        if v["low"] == v["high"]:
            return SizeDistribution(kind="point", value=v["low"])
        return SizeDistribution(kind=kind, low=v["low"], high=v["high"])
    if kind == "normal":
        return SizeDistribution(kind=kind, mean=v["mean"], sd=v["sd"])
    # pmf
    if v["file"] is not None:
        if v["values"] is not None or v["probabilities"] is not None:
            raise at("file")("give either `file` or inline `probabilities`, not both")
        fpath = reader.resolve(v["file"])
        probs = _read_prob_file(fpath, at("file"))
        sizes = np.arange(probs.size, dtype=float)
        source = str(v["file"])
        key = "file"
    else:
        if v["probabilities"] is None:
            raise reader.error(
                path,
                "`distribution: pmf` needs `probabilities` (with optional `values`) or `file`",
                container=raw,
            )
        probs = _number_list(v["probabilities"], "probabilities", at("probabilities"))
        key = "probabilities"
        source = "inline"
        if v["values"] is None:
            sizes = np.arange(probs.size, dtype=float)
        else:
            sizes = _number_list(v["values"], "sizes", at("values"))
            if sizes.size != probs.size:
                raise at("values")(
                    f"{sizes.size} values but {probs.size} probabilities; "
                    "expected one probability per value"
                )
            bad = (sizes != np.floor(sizes)) | (sizes < 0) | (sizes > n)
            if bad.any():
                i = int(np.argmax(bad))
                raise at("values")(
                    f"item {i}: size {sizes[i]:g} is not a whole number in [0, {n}]"
                )
            if np.unique(sizes).size != sizes.size:
                raise at("values")("sizes must be distinct")
    if probs.size > PMF_MAX:
        raise at(key)(LIMITS["pmf_values"].message(int(probs.size)))
    if probs.size > n + 1:
        raise at(key)(
            f"the pmf has {probs.size} entries, longer than N + 1 = {n + 1} (sizes 0..N)"
        )
    bad = ~np.isfinite(probs) | (probs < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise at(key)(f"entry {i}: probability {probs[i]!r} is not a finite number >= 0")
    total = math.fsum(probs.tolist()) if probs.size < 100_000 else float(np.sum(probs))
    if abs(total - 1.0) > PMF_SUM_TOL:
        raise at(key)(
            f"probabilities sum to {total!r}, off from 1 by {total - 1.0:+.3g}; "
            f"expected a sum within {PMF_SUM_TOL:g} of 1"
        )
    if v["values"] is not None:
        order = np.argsort(sizes, kind="stable")
        sizes, probs = sizes[order], probs[order]
    keep = probs > 0
    with np.errstate(divide="ignore"):
        logp = np.log(probs[keep])
    return SizeDistribution(kind="pmf", sizes=sizes[keep], log_probs=logp, source=source)


def parse_params(values: dict[str, Any], reader: Any) -> Params:
    """Build ``Params``, validating the nested ``size`` block."""
    n = values["population"]
    return Params(population=n, size=parse_size(values["size"], n, reader))


# --------------------------------------------------------------------------------------
# The tilted mean E_t̃[m], with an enclosure [lo, hi] of the exact value
# --------------------------------------------------------------------------------------


def _phi(u: np.ndarray) -> np.ndarray:
    """φ(u) = 1/expm1(u) − 1/u + 1/2 (smooth; series for small u)."""
    u = np.asarray(u, dtype=float)
    out = np.empty_like(u)
    small = u < 0.05
    us = u[small]
    out[small] = us / 12 - us**3 / 720 + us**5 / 30240 - us**7 / 1209600
    ub = u[~small]
    with np.errstate(over="ignore"):
        out[~small] = 1.0 / np.expm1(ub) - 1.0 / ub + 0.5
    return out


def _window_mean(
    logw: Any, mode: int, n: int, h: int, werr: Any
) -> tuple[float, float, float, float, float]:
    """Mean of a log-concave pmf on {0..n} from a window around its mode.

    ``logw(a, b)`` gives w(m) − w(mode) for m = a..b (m as floats). The window grows
    until the tails (geometric bound from the end slopes, valid by log-concavity)
    carry at most e^{-TAIL_LOG} of the window's mass. Returns (mean in the window,
    N − that mean computed directly, its log (log-space, no underflow), log of the
    relative tail mass bound τ, relative error bound of the window sums).
    """
    h = max(int(h), 2)
    while True:
        a, b = max(0, mode - h), min(n, mode + h)
        if b - a + 1 > WINDOW_MAX:
            raise DesignError(
                LIMITS["size_window"].message(b - a + 1),
                where=Where(field="sampling.size"),
            )
        lo_x, hi_x = max(0, a - 1), min(n, b + 1)
        w_ext = logw(lo_x, hi_x)
        w = w_ext[a - lo_x : a - lo_x + (b - a + 1)]
        log_tail = -np.inf
        ok = True
        if b < n:
            s = w_ext[-1] - w[-1]
            if s >= 0:
                ok = False
            else:
                log_tail = np.logaddexp(log_tail, w[-1] + s - np.log(-np.expm1(s)))
        if a > 0:
            s = w_ext[0] - w[0]
            if s >= 0:
                ok = False
            else:
                log_tail = np.logaddexp(log_tail, w[0] + s - np.log(-np.expm1(s)))
        if (ok and log_tail <= -TAIL_LOG) or (a == 0 and b == n):
            break
        h *= 2
    m = np.arange(a, b + 1, dtype=float)
    p = np.exp(w)
    total = float(np.sum(p))
    mean = float(np.sum(m * p)) / total
    gap = float(np.sum((n - m) * p)) / total  # N − mean, accurate when the mean is near N
    inside = m < n
    if np.any(inside):
        lw = w[inside] + np.log(n - m[inside])
        top = float(np.max(lw))
        log_gap = top + math.log(float(np.sum(np.exp(lw - top)))) - math.log(total)
    else:
        log_gap = -math.inf
    log_tau = float(log_tail) - math.log(total)
    k = b - a + 1
    rel = 2.0 * float(werr(w)) + (64.0 + 4.0 * math.log2(k + 2)) * ULP + 2 * k * math.exp(-50)
    return mean, gap, log_gap, log_tau, rel


def _normal_window(mean: float, sd: float, n: int, eps: float) -> tuple[float, ...]:
    c = mean + eps * sd * sd
    if not abs(c) < 1e150:  # (m − c)² would overflow
        raise OverflowError(c)
    mode = int(min(n, max(0, round(c))))
    d = c - n if c > n else 0.0
    h = math.sqrt(2 * TAIL_LOG) * sd
    if d > 0:
        h = min(h, TAIL_LOG * sd * sd / d)
    two_var = 2.0 * sd * sd

    def logw(a: int, b: int) -> np.ndarray:
        m = np.arange(a, b + 1, dtype=float)
        return -((m - c) ** 2 - (mode - c) ** 2) / two_var

    def werr(w: np.ndarray) -> float:
        # each exponent is a difference of squares, ((mode − c)² − (m − c)²)/(2σ²): a few
        # ulps of (m − c)² + (mode − c)² = 2(mode − c)² + |w|·2σ², not of w. When the mass
        # sits at N (or 0) N − E (or E) is carried by terms with |w| far above 50, so
        # their error counts (N = 16, σ = 1.84, c = 883: 3.7e-13 over the old allowance)
        far = 2.0 * (mode - c) ** 2 / two_var + float(np.max(np.abs(w)))
        return 8 * ULP * (50.0 + 1.0) + 4 * ULP * far

    return _window_mean(logw, mode, n, math.ceil(h) + 2, werr)


def _poisson_window(mean: float, n: int, eps: float) -> tuple[float, ...]:
    log_lam = math.log(mean) + eps
    mode = n if log_lam >= math.log(n + 1) else int(min(n, math.floor(math.exp(log_lam))))
    sd = math.exp(0.5 * min(log_lam, math.log(n + 1.0)))
    h = math.sqrt(2 * TAIL_LOG) * sd + 2 * TAIL_LOG

    def logw(a: int, b: int) -> np.ndarray:
        out = np.zeros(b - a + 1)
        if b > mode:
            i = np.arange(mode + 1, b + 1, dtype=float)
            out[mode - a + 1 :] = np.cumsum(log_lam - np.log(i))
        if a < mode:
            i = np.arange(mode, a, -1, dtype=float)  # mode, mode-1, ..., a+1
            out[: mode - a][::-1] = np.cumsum(np.log(i) - log_lam)
        return out

    def werr(w: np.ndarray) -> float:
        # each term: a difference of two logs (a few ulps of max(|log m|, |log λ'|)); the
        # partial sums run monotonically from 0 at the mode, so for the terms that carry
        # mass (|w| <= 50; lighter ones are covered by e^{-50}) each of the <= k additions
        # errs by at most 50 ulps
        scale = max(abs(log_lam), math.log(n + 1.0))
        return ULP * (4 * scale + 50.0) * (w.size + 2)

    return _window_mean(logw, mode, n, math.ceil(h), werr)


def _pmf_mean(
    sizes: np.ndarray, logp: np.ndarray, eps: float, n: int
) -> tuple[float, float, float]:
    """Streaming logsumexp of the tilted pmf: (mean, N − mean, relative error bound)."""
    ref = float(sizes[-1])
    run_max = -np.inf
    s_tot = 0.0
    m_tot = 0.0
    g_tot = 0.0
    for start in range(0, sizes.size, CHUNK):
        sz = sizes[start : start + CHUNK]
        w = eps * (sz - ref) + logp[start : start + CHUNK]
        cmax = float(np.max(w))
        if cmax > run_max:
            scale = math.exp(run_max - cmax) if np.isfinite(run_max) else 0.0
            s_tot *= scale
            m_tot *= scale
            g_tot *= scale
            run_max = cmax
        e = np.exp(w - run_max)
        s_tot += float(np.sum(e))
        m_tot += float(np.sum(sz * e))
        g_tot += float(np.sum((n - sz) * e))
    span = float(sizes[-1] - sizes[0])
    werr = 4 * ULP * (eps * span + float(np.max(np.abs(logp))) + 1.0)
    k = sizes.size
    rel = 2.0 * werr + (64.0 + 4.0 * math.log2(k + 2)) * ULP + (k / CHUNK + 1) * 4 * ULP
    return m_tot / s_tot, g_tot / s_tot, rel


def _enclose(
    mean: float,
    gap: float,
    log_gap: float,
    log_tau: float,
    rel: float,
    shift: float,
    gap_rel: float,
    n: int,
) -> tuple[float, float, float]:
    """[lo, hi] for E and log of an upper bound on N − E, from window sums.

    Left-out tails of relative mass <= τ: E ∈ [(1 − τ)E_in, E_in + τN], and
    N − E <= (N − E_in) + τN. ``shift`` bounds E's error from a rounded parameter,
    ``gap_rel`` the same for N − E, relatively.
    """
    tau = math.exp(log_tau)
    lo1 = (mean * (1 - rel) - shift) * (1 - tau)
    hi1 = mean * (1 + rel) + shift + tau * n
    lo2 = n - (gap * (1 + rel + gap_rel) + tau * n)
    hi2 = n - (gap * (1 - rel - gap_rel)) * (1 - tau)
    log_gap_hi = float(np.logaddexp(log_gap + math.log1p(rel + gap_rel), log_tau + math.log(n)))
    return max(lo1, lo2), min(hi1, hi2), log_gap_hi + 4 * ULP * abs(log_gap_hi)


def tilted_mean_bounds(
    dist: SizeDistribution, population: int, eps: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """E_t̃[m] for t̃(m) ∝ e^{εm} t(m), an enclosure [lo, hi] of it, and a bound on N − E.

    Basis: Bun et al., Theorem 3.1 (the tilted distribution).
    Numerics: closed forms where the tilted family is known (binomial: Binomial(N, p′),
        p′ = p/(p + (1 − p)e^{−ε}); normal well inside [0, N]: centre μ + εσ², with a
        Poisson-summation bound on the lattice offset and a Gaussian tail bound;
        uniform: truncated geometric mean via φ(u) = 1/expm1(u) − 1/u + 1/2); otherwise a
        window around the mode of the log-concave tilted pmf, whose left-out tails are
        bounded geometrically and added to the enclosure (τ·N up, τ·E down); explicit
        pmfs by a streaming logsumexp. Rounding and weight errors widen it outward.

    Args:
        dist: the size distribution. population: N. eps: tilt ε >= 0, any shape.
    Returns:
        (estimate, lo, hi, log_gap_hi), arrays of eps's shape, 0 <= lo <= estimate <= hi
        <= N and log(N − E) <= log_gap_hi (computed directly in log space, not as N − lo,
        where E is near N).
    """
    eps = np.asarray(eps, dtype=float)
    n = population
    flat = eps.ravel()
    est = np.empty(flat.shape)
    lo = np.empty(flat.shape)
    hi = np.empty(flat.shape)
    lg = np.full(flat.shape, np.nan)  # log of an upper bound on N − E, computed directly
    k = dist.kind
    if k == "point":
        assert dist.value is not None
        est[:] = lo[:] = hi[:] = float(dist.value)
        gap0 = n - int(dist.value)  # exact: N − m of the point mass
        lg[:] = math.log(gap0) + 4 * ULP * abs(math.log(gap0)) if gap0 > 0 else -np.inf
    elif k == "binomial":
        assert dist.p is not None
        p = float(dist.p)
        if p in (0.0, 1.0):
            est[:] = lo[:] = hi[:] = p * n
            if p == 1.0:
                lg[:] = -np.inf  # m = N surely: N − E = 0 exactly
        else:
            den = p + (1.0 - p) * np.exp(-flat)
            est[:] = n * (p / den)
            gap = n * ((1.0 - p) * np.exp(-flat) / den)  # N(1 − p′), accurate near N
            lo[:] = np.maximum(est * (1 - 64 * ULP), n - gap * (1 + 64 * ULP))
            hi[:] = np.minimum(est * (1 + 64 * ULP), n - gap * (1 - 64 * ULP))
            with np.errstate(divide="ignore"):
                lg[:] = math.log(n) + math.log1p(-p) - flat - np.log(den)
            lg[:] += 8 * ULP * np.abs(lg) + 8 * ULP
    elif k == "uniform":
        assert dist.low is not None and dist.high is not None
        low, high = float(dist.low), float(dist.high)
        kk = high - low
        e = low + kk / 2 - _phi(flat) + (kk + 1) * _phi((kk + 1) * flat)
        slack = 1e-12 * (kk + 1) + 8 * ULP * high
        est[:] = np.clip(e, low, high)
        lo[:] = np.clip(e - slack, low, high)
        hi[:] = np.clip(e + slack, low, high)
        big = flat >= 1.0
        if high == n and np.any(big):
            # high − E directly: 1/expm1(ε) − (k+1)/expm1((k+1)ε), the second term at most
            # 0.74 of the first for ε >= 1 (a few ulps after the cancellation)
            with np.errstate(over="ignore"):
                g = 1.0 / np.expm1(flat[big]) - (kk + 1) / np.expm1((kk + 1) * flat[big])
            with np.errstate(divide="ignore", invalid="ignore"):
                lg_g = np.log(g * (1 + 64 * ULP))
                # k = 0 (a point mass at N): g = 0 exactly, log 0 = −inf (not −inf + inf)
                lg[big] = np.where(g > 0, lg_g + 4 * ULP * np.abs(lg_g), -np.inf)
    elif k == "normal":
        assert dist.mean is not None and dist.sd is not None
        mu, sd = float(dist.mean), float(dist.sd)
        c = mu + flat * sd * sd
        d = INTERIOR_SD * sd
        interior = (sd >= 3.0) & (c >= d) & (c <= n - d)
        if np.any(interior):
            ci = c[interior]
            lattice = 32.0 * sd**3 * math.exp(-2 * math.pi**2 * sd * sd)
            tails = 2.0 * (d + sd * sd) * math.exp(-(INTERIOR_SD**2) / 2)
            err = (lattice + tails) / 0.88 + 8 * ULP * np.abs(ci) + 4 * ULP * np.abs(ci)
            est[interior] = ci
            lo[interior] = ci - err
            hi[interior] = ci + err
        for i in np.flatnonzero(~interior):
            try:
                mean, gap, log_gap, log_tau, rel = _normal_window(mu, sd, n, float(flat[i]))
            except OverflowError:
                raise DesignError(
                    f"sd = {sd:g} is too large at ε = {float(flat[i]):g}: the tilted centre "
                    "μ + εσ² overflows; a normal this wide is flat on [0, N]: use "
                    "`distribution: uniform`",
                    where=Where(field="sampling.size.sd"),
                ) from None
            # rounding of the centre c: dE/dc = Var/σ² <= 1, and Var <= N(N − E)
            shift = 8 * ULP * abs(c[i])
            gap_rel = min(1.0, n * shift / (sd * sd))
            est[i] = mean
            lo[i], hi[i], lg[i] = _enclose(mean, gap, log_gap, log_tau, rel, shift, gap_rel, n)
    elif k == "poisson":
        assert dist.mean is not None
        for j, e_j in enumerate(flat):
            mean, gap, log_gap, log_tau, rel = _poisson_window(float(dist.mean), n, float(e_j))
            est[j] = mean
            lo[j], hi[j], lg[j] = _enclose(mean, gap, log_gap, log_tau, rel, 0.0, 0.0, n)
    elif k == "pmf":
        assert dist.sizes is not None and dist.log_probs is not None
        for j, e_j in enumerate(flat):
            mean, gap, rel = _pmf_mean(dist.sizes, dist.log_probs, float(e_j), n)
            est[j] = mean
            # a gap that underflows is below N·k·e^{-745}
            floor = math.log(n * (dist.sizes.size + 1.0)) - 745.0
            log_gap = math.log(gap) if gap > 0 else floor
            lo[j], hi[j], lg[j] = _enclose(mean, gap, log_gap, -math.inf, rel, 0.0, 0.0, n)
    else:  # pragma: no cover
        raise ValueError(k)
    # the last operation of each enclosure (e.g. N − gap) rounds to nearest: widen it
    if k != "point":  # a point mass is exact
        lo = numeric.round_down(lo, 2)
        hi = numeric.round_up(hi, 2)
    lo = np.clip(lo, 0.0, n)
    hi = np.clip(hi, 0.0, n)
    est = np.clip(est, lo, hi)
    with np.errstate(divide="ignore"):
        lg_plain = np.log(numeric.round_up(n - lo, 2)) + 4 * ULP
    lg = np.where(np.isnan(lg), lg_plain, np.minimum(lg, lg_plain))
    shape = eps.shape
    return est.reshape(shape), lo.reshape(shape), hi.reshape(shape), lg.reshape(shape)


# --------------------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------------------


def upper_epsilon(
    eps_add_remove: np.ndarray, eps_replace_one: np.ndarray, *, params: Params
) -> np.ndarray:
    """Upper bound (a guarantee) on ε′ for a random, data-independent sample size.

    Basis: Bun et al., Theorem 3.1 (Appendix B), corrected per spec §3.
    Neighbours: M is ε_D-DP under add-remove (so that the secret size is protected)
        and ε_R-DP under replace-one; the bound holds under replace-one on populations
        of fixed, public size N.
    Conditions: t does not depend on the data; ε_R <= 2ε_D (default ε_R = 2ε_D).
    Formula: ε′ = A(E_t̃[m]/N, ε_R) = log(1 + (E_t̃[m]/N)(e^{ε_R} − 1)), t̃(m) ∝ e^{ε_D m}t(m).
        The printed theorem uses ε for both; with M only ε-DP under add-remove that is
        unsound (spec §3 counterexample: 1.4338 > 0.6201).
    Tightness: equal to ``lower_epsilon`` for a point mass (a srswor), in every relation;
        otherwise within the e^ε − 1 vs 1 − e^{−ε} gap when ε_R = ε_D.
    Numerics: the enclosure's upper end of E_t̃[m]; kernel rounded up.
    """
    _, _, e_hi, _ = tilted_mean_bounds(params.size, params.population, eps_add_remove)
    q = np.minimum(e_hi / params.population, 1.0)
    # q = 0 (the sample is always empty): the output ignores the data, ε′ = 0
    safe = np.where(q > 0, q, 1.0)
    return np.where(q > 0, numeric.amplification_upper(safe, eps_replace_one), 0.0)


def _smallest_size(dist: SizeDistribution, n: int) -> float:
    """The smallest size of positive probability: a lower bound on E[m] under any tilt."""
    if dist.kind == "point":
        assert dist.value is not None
        return float(dist.value)
    if dist.kind == "binomial":
        assert dist.p is not None
        return float(n) if dist.p == 1.0 else 0.0
    if dist.kind == "uniform":
        assert dist.low is not None
        return float(dist.low)
    if dist.kind == "pmf":
        assert dist.sizes is not None
        return float(dist.sizes[0])  # sorted by parse_size
    return 0.0  # poisson, normal: every size has positive weight


def lower_epsilon(
    eps_add_remove: np.ndarray,
    eps_replace_one: np.ndarray,
    *,
    params: Params,
    untilted_lo: float | None = None,
) -> np.ndarray:
    """Lower bound on ε′: some M and replace-one pair lose at least this much.

    Basis: Bun et al., Theorem 3.1 (lower half), generalised to ε_D ≠ ε_R,
        and the same witness read at its other tail (docs/random-size.md).
    Witness: P = N records of value a, P′ replaces one with a − c, c = ε_R/ε_D (<= 2),
        M(S) = Σx + Lap(1/ε_D) with a ∈ [c − 1, 1]: its add-remove sensitivity is
        max(|a|, |a − c|) <= 1 and its replace-one sensitivity c, so M is ε_D-DP under
        add-remove and ε_R-DP under replace-one. Below every possible sum the density
        ratio is constant and exact:
        * a = 1, outputs above every sum: −log(1 − (E_{t(ε_D)}[m]/N)(1 − e^{−ε_R}));
        * a = c − 1, outputs below every sum: A(E_{t(ε_D − ε_R)}[m]/N, ε_R),
        with t(s)(m) ∝ e^{sm} t(m). The bound is the larger of the two. The second is
        the simple-random-sample witness: for a point mass it equals the upper bound
        A(m/N, ε_R) in every relation (tight). A negative tilt (ε_R > ε_D, e.g. the
        default ε_R = 2ε_D) is bounded below by the smallest size of positive
        probability (exact for a point mass), which keeps the bound increasing in ε.
    Numerics: the enclosures' lower ends of the tilted means; kernels rounded down.
        ``untilted_lo``: the lower end of E_t[m] when the caller has it (``analyse``
        computes it once for the details). ε_D = +∞ (M's add-remove ε unknown) is
        accepted for a point mass, whose tilted means do not depend on it.
    """
    e_d = np.asarray(eps_add_remove, dtype=float)
    e_r = np.asarray(eps_replace_one, dtype=float)
    e_d, e_r = np.broadcast_arrays(e_d, e_r)
    _, e_lo, _, log_gap_hi = tilted_mean_bounds(params.size, params.population, e_d)
    n = params.population
    q = np.minimum(e_lo / n, 1.0)
    # 1 − q(1 − e^{−ε_R}) = g(1 − e^{−ε_R}) + e^{−ε_R}, g = (N − E)/N: no cancellation
    # when E is near N (the q-form would lose the gap to rounding); in log space
    log_g = np.minimum(log_gap_hi - math.log(n), 0.0)
    with np.errstate(divide="ignore"):
        log_x = np.logaddexp(log_g + np.log(-np.expm1(-e_r)), -e_r)
    gap_form = -(log_x + 4 * ULP * np.abs(log_x))
    near = q * -np.expm1(-e_r) > 0.5  # x < 1/2: −log(x) is well conditioned
    upper_tail = numeric.round_down(np.where(near, gap_form, numeric.neg_log1m(q, e_r)))
    # the other tail: tilt at ε_D − ε_R (untilted under `both`: computed once by analyse)
    tilt = e_d - e_r
    e_lo2 = np.empty(tilt.shape)
    zero = tilt == 0.0
    if np.any(zero):
        if untilted_lo is None:
            untilted_lo = float(tilted_mean_bounds(params.size, n, 0.0)[1])
        e_lo2[zero] = untilted_lo
    pos = tilt > 0.0
    if np.any(pos):
        e_lo2[pos] = tilted_mean_bounds(params.size, n, tilt[pos])[1]
    # a negative tilt: the smallest size. Not the tilted mean itself: E_{t(ε_D − ε_R)}
    # falls as ε grows and the loss read at it can then fall too (a pmf on 0..12 at
    # ε ≈ 3.6 with ε_R = 1.79ε), while a bound must not; A(m_min/N, ε_R) rises with ε
    neg = tilt < 0.0
    if np.any(neg):
        e_lo2[neg] = _smallest_size(params.size, n)
    q2 = np.minimum(e_lo2 / n, 1.0)
    safe = np.where(q2 > 0, q2, 1.0)
    lower_tail = np.where(q2 > 0, numeric.amplification_lower(safe, e_r), 0.0)
    out: np.ndarray = np.maximum(upper_tail, lower_tail)
    return out


def random_size_conditions(params: Params) -> tuple[str, ...]:
    """Theorem 3.1's conditions on the design, with its values."""
    return (
        "the size distribution t does not depend on the data; m and the sample are secret",
        f"the population size N = {params.population} is fixed and public",
    )


REFUSES_GUARANTEE = (
    f"Theorem 3.1 ({BUN_2022}) holds for replace-one neighbours of a "
    "population of fixed, public size N; no theorem covers an add-remove guarantee."
)
REFUSES_DELTA = (
    f"Theorem 3.1 ({BUN_2022}) is stated for pure ε-DP mechanisms "
    "(δ = 0); no δ′ follows from it for δ > 0."
)
REFUSES_REPLACE_ONE_ONLY = (
    f"Theorem 3.1 ({BUN_2022}, footnote 1) needs M to be ε-DP under "
    "add-remove so that the secret sample size is protected; `neighbours: "
    "replace-one` leaves M's add-remove ε unknown. Declare `neighbours: add-remove` "
    "or `both`."
)


def theorem(params: Params, *, untilted_lo: float | None = None) -> Theorem:
    """Theorem 3.1 (corrected) for this design, as data: tilt at ε_D, amplify at ε_R.

    A point mass hides nothing in its size (the design is a srswor), so M's add-remove ε
    is not needed there: where it is unknown ε_D = +∞ enters, which a point mass
    ignores. ``untilted_lo``: the lower end of E_t[m] (``lower_epsilon``).
    """
    refusals = [
        Refusal(Refuses.GUARANTEE, REFUSES_GUARANTEE),
        Refusal(Refuses.DELTA, REFUSES_DELTA),
    ]
    if params.size.kind != "point":
        refusals.append(Refusal(Refuses.ADD_REMOVE_UNKNOWN, REFUSES_REPLACE_ONE_ONLY))
    lo = untilted_lo
    return Theorem(
        name="Theorem 3.1",
        basis=BASIS,
        relation=Neighbours.BOTH,
        guarantee=Neighbours.REPLACE_ONE,
        upper=OfPair(lambda e_d, e_r: upper_epsilon(e_d, e_r, params=params)),
        lower=OfPair(lambda e_d, e_r: lower_epsilon(e_d, e_r, params=params, untilted_lo=lo)),
        conditions=random_size_conditions(params),
        tight=None,
        refusals=tuple(refusals),
    )


def _size_details(e_d: np.ndarray, e_r: np.ndarray, *, params: Params) -> Mapping[str, Any]:
    """The ε-dependent details: the tilted mean size at ε_D, and ε_R."""
    return {
        "tilted_mean_size": tilted_mean_bounds(params.size, params.population, e_d)[0],
        "epsilon_replace_one": e_r,
    }


def binomial_as_poisson(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """A binomial size m ~ Binomial(N, p) over the N records the sample is drawn from,
    then m of them without replacement, is Poisson sampling with rate p: the
    probability of a given sample S is C(N, |S|)p^{|S|}(1 − p)^{N − |S|}/C(N, |S|) =
    p^{|S|}(1 − p)^{N − |S|}, each record kept independently with probability p. So the
    Poisson family's replace-one results hold: exact for pure ε
    (``poisson.replace_one_exact``), and δ > 0 is covered too."""
    from ampcalc.schemes import poisson

    p = params.size.p
    assert p is not None and p > 0.0  # ``analyse`` routes only p > 0 here
    conditions = (
        *random_size_conditions(params),
        f"the binomial's n is the population N = {params.population} the sample is drawn "
        "from, so the sample is a Poisson sample with rate p",
    )
    base = poisson.replace_one_analysis(p, mechanism, conditions=conditions)
    note = (
        f"binomial size m ~ Binomial(N, p) with N the population, then m of the N records "
        f"without replacement, is Poisson sampling with rate p = {p:g} (each sample S has "
        "probability p^|S|(1 − p)^(N − |S|)): the Poisson replace-one results apply "
        "instead of Theorem 3.1."
    )
    return dataclasses.replace(
        base,
        notes=(note, *base.notes),
        warnings=(*base.warnings, SIZE_WARNING),
        details={
            **base.details,
            "distribution": "binomial",
            "population": params.population,
            "mean_size": float(p * params.population),
        },
    )


SIZE_WARNING = (
    "the size distribution must not depend on the data (nor may it be chosen after "
    "seeing it); a data-dependent size is the `data-dependent-size` scheme"
)


def analyse(params: Params, mechanism: Mechanism, guarantee: Neighbours) -> Analysis:
    """Bounds for one random-size design (see ``upper_epsilon`` for the theorem)."""
    dist = params.size
    n = params.population
    if (
        dist.kind == "binomial"
        and dist.p is not None
        and dist.p > 0.0
        and mechanism.epsilon_add_remove_known()
    ):
        return binomial_as_poisson(params, mechanism, guarantee)
    est0, lo0, _, _ = tilted_mean_bounds(dist, n, 0.0)
    warnings = [SIZE_WARNING]
    notes: list[str] = []
    if mechanism.neighbours is Neighbours.ADD_REMOVE:
        notes.append(
            f"correction to {BUN_2022}, Theorem 3.1 ({DERIVATIONS}, §2.1): the printed bound "
            "A(E_t̃[m]/N, ε) is unsound when M is ε-DP only under add-remove (counterexample: "
            "Σx with x ∈ {−1, 1}, point mass at N/2, ε = 1 loses 1.4338 > 0.6201). The tilt "
            f"uses ε_D = ε and the amplification M's replace-one ε_R = "
            f"{mechanism.effective_epsilon_replace_one():g}"
            + (" (default 2ε)" if mechanism.epsilon_replace_one is None else "")
            + ". If M is ε-DP under both relations (e.g. a count query), declare "
            "`neighbours: both` to recover the paper's formula."
        )
    elif mechanism.neighbours is Neighbours.BOTH:
        notes.append(
            "M is declared ε-DP under both relations: the paper's formula A(E_t̃[m]/N, ε) "
            "applies (tilt and amplification at ε)."
        )
    if dist.kind == "normal":
        notes.append(
            "normal size: t(m) ∝ exp(−(m − μ)²/(2σ²)) at the integers 0..N (normal density "
            "at the integers, truncated to [0, N]; not CDF differences over unit intervals)."
        )
    if dist.kind == "poisson":
        notes.append("poisson size: Poisson(λ) truncated to [0, N] and renormalised.")
    details: dict[str, Any] = {
        "distribution": dist.kind,
        "population": n,
        "mean_size": float(est0),  # E_t[m]
    }
    if dist.kind == "pmf":
        assert dist.sizes is not None  # parse_size sets the support of a pmf
        details["pmf_support"] = int(dist.sizes.size)
        details["pmf_source"] = dist.source
    return assemble(
        theorem(params, untilted_lo=float(lo0)),
        mechanism,
        guarantee=guarantee,
        warnings=tuple(warnings),
        notes=tuple(notes),
        details=details,
        details_both=partial(_size_details, params=params),
    )


# --------------------------------------------------------------------------------------
# ``ampcalc verify``: exact sample distributions of tiny instances
# --------------------------------------------------------------------------------------


def size_support(dist: SizeDistribution, n: int) -> Sequence[int]:
    """The sizes of positive probability (without computing the probabilities)."""
    if dist.kind == "point":
        assert dist.value is not None
        return [dist.value]
    if dist.kind == "binomial":
        assert dist.p is not None
        return [0] if dist.p == 0.0 else [n] if dist.p == 1.0 else range(n + 1)
    if dist.kind == "uniform":
        assert dist.low is not None and dist.high is not None
        return range(dist.low, dist.high + 1)
    if dist.kind == "pmf":
        assert dist.sizes is not None
        return [int(m) for m in dist.sizes.tolist()]
    return range(n + 1)  # poisson, normal: every size has positive weight


def size_pmf(dist: SizeDistribution, n: int) -> dict[int, float]:
    """The exact pmf of the sample size on {0..N} (for tiny N; zero entries left out)."""
    sizes = size_support(dist, n)
    if dist.kind in ("point", "uniform") or len(sizes) == 1:
        logw = [0.0] * len(sizes)
    elif dist.kind == "binomial":
        assert dist.p is not None
        lp, lq = math.log(dist.p), math.log1p(-dist.p)
        logw = [
            math.lgamma(n + 1)
            - math.lgamma(m + 1)
            - math.lgamma(n - m + 1)
            + m * lp
            + (n - m) * lq
            for m in sizes
        ]
    elif dist.kind == "poisson":
        assert dist.mean is not None
        logw = [m * math.log(dist.mean) - math.lgamma(m + 1) for m in sizes]
    elif dist.kind == "normal":
        assert dist.mean is not None and dist.sd is not None
        logw = [-((m - dist.mean) ** 2) / (2.0 * dist.sd * dist.sd) for m in sizes]
    else:
        assert dist.log_probs is not None
        logw = [float(v) for v in dist.log_probs.tolist()]
    top = max(logw)
    raw = {m: math.exp(w - top) for m, w in zip(sizes, logw, strict=True)}
    total = math.fsum(raw.values())
    return {m: w / total for m, w in raw.items() if w > 0.0}


def size_mixture_plan(
    n: int, probs: dict[int, float], mechanism: Mechanism, pairs: str, limit: int
) -> Any:
    """Plan of a srswor sample of N records whose size is drawn from ``probs`` first.

    ``default``: P = {N − 1 others, x} vs P′ = {N − 1 others, x′} (replace-one, fixed N;
    symmetric under x ↔ x′). ``all``: also {a×(N − j), b×j} vs {a×(N − j − 1), b×(j + 1)}
    for j = 0..N − 1, samples as value multisets.
    """
    from ampcalc.schemes.exact import (
        Instance,
        Plan,
        check_distinct_sizes,
        relations_of,
        sizes_for,
        srswor_size_mixture,
    )

    rel = relations_of(mechanism)
    sizes = sizes_for(rel, probs)
    check_distinct_sizes(n + 1, sizes, limit)
    syms = (*(f"o{i + 1}" for i in range(n - 1)), "x", "x'")
    others = (1,) * (n - 1)
    insts = [
        Instance(
            label=f"P = {{{n - 1} others, x}} vs P′ = {{{n - 1} others, x′}}",
            symbols=syms,
            caps=(1,) * len(syms),
            p=srswor_size_mixture((*others, 1, 0), probs),
            p_prime=srswor_size_mixture((*others, 0, 1), probs),
            symmetric=True,
        )
    ]
    if pairs == "all":
        top = max(sizes)
        for j in range(n):
            insts.append(
                Instance(
                    label=f"{{a×{n - j}, b×{j}}} vs {{a×{n - j - 1}, b×{j + 1}}}",
                    symbols=("a", "b"),
                    caps=(top, top),
                    p=srswor_size_mixture((n - j, j), probs),
                    p_prime=srswor_size_mixture((n - j - 1, j + 1), probs),
                )
            )
    return Plan(instances=tuple(insts), sizes=sizes, relations=rel)


def _verify_hook(
    params: Params, mechanism: Mechanism, pairs: str = "default", limit: int = 5000
) -> Any:
    """Tiny-instance enumeration for ``ampcalc verify``: a mixture of srswor over sizes."""
    from ampcalc.schemes.exact import check_distinct_sizes, relations_of, sizes_for

    support = size_support(params.size, params.population)
    # refuse a huge domain before listing sizes or computing the pmf: one size s >= 1
    # among N + 1 records already gives C(N + 1, s) >= N + 1 samples
    check_distinct_sizes(params.population + 1, [support[-1]], limit)  # sorted
    check_distinct_sizes(params.population + 1, sizes_for(relations_of(mechanism), support), limit)
    return size_mixture_plan(
        params.population, size_pmf(params.size, params.population), mechanism, pairs, limit
    )


SCHEME = Scheme(
    name="random-size",
    summary="sample size m drawn from a data-independent distribution, then m of N "
    "without replacement",
    params=Params,
    fields=FIELDS,
    mechanism_relation="add-remove (ε_D, tilt) and replace-one (ε_R = epsilon_replace_one "
    "or 2ε, amplification); `both` gives the paper's formula",
    guarantees=(Neighbours.REPLACE_ONE,),
    basis=BASIS,
    analyse=analyse,
    example={"population": 10000, "size": {"distribution": "normal", "mean": 5000, "sd": 800}},
    parse_params=parse_params,
    verify_plan=_verify_hook,
)
