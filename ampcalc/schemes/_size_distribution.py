"""The size distribution t of a random-size sample: its record, its ``sampling.size``
block and its exact pmf on tiny populations (for ``ampcalc verify``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc.load.fields import Reader, describe, field_value, is_real
from ampcalc.load.files import excerpt, open_input
from ampcalc.model.limits import LIMITS
from ampcalc.schemes.base import Field

MAX_EXACT_INT = 2**53
KINDS = ("point", "binomial", "poisson", "uniform", "normal", "pmf")
ULP = 2.0**-52
PMF_SUM_TOL = 1e-9
PMF_MAX = LIMITS["pmf_values"].value
SIZE_PATH = "sampling.size"


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
        from ampcalc.load.table import read_npy  # lazy: start-up (bound)

        arr = read_npy(path, what="size pmf file", error=fail, ndims=(1,), mmap=False)
        return np.asarray(arr, dtype=float)
    from ampcalc.load.table import read_table  # lazy: start-up (bound)

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


def _key_error(reader: Reader, raw: Any, key: str) -> Callable[[str], Exception]:
    """Errors at the line of ``sampling.size.KEY``: ``fail(message)``, to be raised."""

    def fail(message: str) -> Exception:
        return reader.error(f"{SIZE_PATH}.{key}", message, container=raw, key=key)

    return fail


def parse_size(raw: Any, n: int, reader: Any) -> SizeDistribution:
    """Validate ``sampling.size`` (errors point at the offending key's line)."""
    kind = _read_kind(raw, n, reader)
    v = reader.fields(raw, _size_fields(kind, n), SIZE_PATH, f"size ({kind})")
    if kind == "point":
        return SizeDistribution(kind=kind, value=v["value"])
    if kind == "binomial":
        return SizeDistribution(kind=kind, p=v["p"])
    if kind == "poisson":
        return SizeDistribution(kind=kind, mean=v["mean"])
    if kind == "uniform":
        if v["low"] > v["high"]:
            raise _key_error(reader, raw, "low")(
                f"low = {v['low']} exceeds high = {v['high']}; expected low <= high"
            )
        if v["low"] == v["high"]:
            return SizeDistribution(kind="point", value=v["low"])
        return SizeDistribution(kind=kind, low=v["low"], high=v["high"])
    if kind == "normal":
        return SizeDistribution(kind=kind, mean=v["mean"], sd=v["sd"])
    return _read_pmf(raw, v, n, reader)


def _read_kind(raw: Any, n: int, reader: Any) -> str:
    """``sampling.size`` is a mapping whose ``distribution`` is one of ``KINDS``."""
    if not isinstance(raw, dict):
        raise reader.error(
            SIZE_PATH, "expected a mapping such as {distribution: normal, mean: 5000, sd: 800}"
        )
    kind = raw.get("distribution")
    if kind not in KINDS:
        if "distribution" not in raw:
            raise reader.error(
                SIZE_PATH,
                "missing required key 'distribution' (one of " + ", ".join(KINDS) + ")",
                container=raw,
            )
        spec = _size_fields("point", n)[0]
        where = reader.where(f"{SIZE_PATH}.distribution", raw, "distribution")
        field_value(spec, kind, where)  # raises with the domain and a did-you-mean
    assert isinstance(kind, str)
    return kind


def _read_pmf(raw: Any, v: dict[str, Any], n: int, reader: Any) -> SizeDistribution:
    """``distribution: pmf``: probabilities from a ``file`` or inline (with optional
    ``values``), checked, in increasing order of size, zeros left out."""
    if v["file"] is not None:
        if v["values"] is not None or v["probabilities"] is not None:
            raise _key_error(reader, raw, "file")(
                "give either `file` or inline `probabilities`, not both"
            )
        probs = _read_prob_file(reader.resolve(v["file"]), _key_error(reader, raw, "file"))
        sizes = np.arange(probs.size, dtype=float)
        source, key = str(v["file"]), "file"
    else:
        if v["probabilities"] is None:
            raise reader.error(
                SIZE_PATH,
                "`distribution: pmf` needs `probabilities` (with optional `values`) or `file`",
                container=raw,
            )
        probs = _number_list(
            v["probabilities"], "probabilities", _key_error(reader, raw, "probabilities")
        )
        sizes = _inline_sizes(v["values"], probs, n, _key_error(reader, raw, "values"))
        source, key = "inline", "probabilities"
    _check_probabilities(probs, n, _key_error(reader, raw, key))
    if v["values"] is not None:
        order = np.argsort(sizes, kind="stable")
        sizes, probs = sizes[order], probs[order]
    keep = probs > 0
    with np.errstate(divide="ignore"):
        logp = np.log(probs[keep])
    return SizeDistribution(kind="pmf", sizes=sizes[keep], log_probs=logp, source=source)


def _inline_sizes(raw: Any, probs: np.ndarray, n: int, fail: Any) -> np.ndarray:
    """The sizes of inline probabilities: ``values`` (distinct whole numbers in [0, N],
    one per probability) or, without it, 0, 1, 2, ..."""
    if raw is None:
        return np.arange(probs.size, dtype=float)
    sizes = _number_list(raw, "sizes", fail)
    if sizes.size != probs.size:
        raise fail(
            f"{sizes.size} values but {probs.size} probabilities; "
            "expected one probability per value"
        )
    bad = (sizes != np.floor(sizes)) | (sizes < 0) | (sizes > n)
    if bad.any():
        i = int(np.argmax(bad))
        raise fail(f"item {i}: size {sizes[i]:g} is not a whole number in [0, {n}]")
    if np.unique(sizes).size != sizes.size:
        raise fail("sizes must be distinct")
    return sizes


def _check_probabilities(probs: np.ndarray, n: int, fail: Any) -> None:
    """At most ``PMF_MAX`` and N + 1 entries, each finite and >= 0, summing to 1."""
    if probs.size > PMF_MAX:
        raise fail(LIMITS["pmf_values"].message(int(probs.size)))
    if probs.size > n + 1:
        raise fail(f"the pmf has {probs.size} entries, longer than N + 1 = {n + 1} (sizes 0..N)")
    bad = ~np.isfinite(probs) | (probs < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise fail(f"entry {i}: probability {probs[i]!r} is not a finite number >= 0")
    total = math.fsum(probs.tolist()) if probs.size < 100_000 else float(np.sum(probs))
    if abs(total - 1.0) > PMF_SUM_TOL:
        raise fail(
            f"probabilities sum to {total!r}, off from 1 by {total - 1.0:+.3g}; "
            f"expected a sum within {PMF_SUM_TOL:g} of 1"
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
