"""Kernels and readers shared by the cluster-type schemes (cluster, pps, pps-cluster,
systematic, general-lower-bound).

Basis: Bun et al., §5–§6 and Appendix D; spec §0 (ratio form B), §6, §7.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ampcalc.load.fields import MAX_EXACT_INT, MarkedList, check_keys, describe, is_whole
from ampcalc.load.files import open_input
from ampcalc.math import numeric
from ampcalc.model.limits import LIMITS

#: inline ``sizes:`` lists are read item by item (with marks); files have no cap.
INLINE_MAX = LIMITS["inline_list"].value


def ratio_bound(frac: Any, k: Any, eps: Any) -> np.ndarray:
    """B(A, K, ε) = log[(A e^ε + (1 − A)e^{−Kε}) / (A + (1 − A)e^{−Kε})] (not rounded).

    Basis: Bun et al., Theorems 5.1/5.2 (cluster sampling) and 5.3 (with
        Kε replaced by the test's ε′); spec §0 "ratio form".
    Numerics: ``log1p(A·expm1(ε)/(A + (1 − A)e^{−Kε}))`` while ε <= 700 (a few ulps
        relative, also at ε = 1e-12, where the difference of two logsumexps loses ~1e-4
        relative; for Kε > 700 the e^{−Kε} term underflows harmlessly to 0, the
        denominator stays >= A and nothing overflows); the overflow-free difference of
        ``logaddexp`` forms only where ε > 700 (absolute error a few ulps of the terms
        that matter, see ``_slack``).
    """
    a, kk, e = np.broadcast_arrays(
        np.asarray(frac, dtype=float), np.asarray(k, dtype=float), np.asarray(eps, dtype=float)
    )
    return _ratio(a, e, kk * e)


def ratio_bound_at(frac: Any, eps1: Any, d: Any) -> np.ndarray:
    """log[(A e^{ε₁} + (1 − A)e^{−d}) / (A + (1 − A)e^{−d})] (not rounded): B(A, K, ε)
    with the within-cluster loss ε₁ of x's cluster and the loss d of swapping one chosen
    cluster's sample for another's in place of ε and Kε (two-stage designs; ampcalc
    derivations, §6). Same numerics as ``ratio_bound``."""
    a, e, dd = np.broadcast_arrays(
        np.asarray(frac, dtype=float), np.asarray(eps1, dtype=float), np.asarray(d, dtype=float)
    )
    return _ratio(a, e, dd)


def _ratio(a: np.ndarray, e: np.ndarray, ke: np.ndarray) -> np.ndarray:
    small = e <= numeric.LOG_SPACE_FROM
    out = np.empty(a.shape, dtype=float)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        s = small
        den = a[s] + (1.0 - a[s]) * np.exp(-ke[s])
        out[s] = np.log1p(a[s] * np.expm1(e[s]) / den)
        b = ~small
        if np.any(b):
            la, l1a = np.log(a[b]), np.log1p(-a[b])
            out[b] = np.logaddexp(la + e[b], l1a - ke[b]) - np.logaddexp(la, l1a - ke[b])
    return out


def _slack(frac: Any, k: Any, eps: Any) -> np.ndarray:
    a, kk, e = np.broadcast_arrays(
        np.asarray(frac, dtype=float), np.asarray(k, dtype=float), np.asarray(eps, dtype=float)
    )
    return _slack_of(a, e, kk * e)


def _slack_of(a: np.ndarray, e: np.ndarray, ke: np.ndarray) -> np.ndarray:
    big = e > numeric.LOG_SPACE_FROM
    with np.errstate(divide="ignore", invalid="ignore"):
        la = np.abs(np.log(a))
        # a term below the other by > 50 nats changes nothing; cap Kε's contribution
        scale = np.maximum(np.maximum(np.abs(e), la), np.minimum(np.abs(ke), e + la + 50.0))
    return np.where(big, 8.0 * np.spacing(np.where(np.isfinite(scale), scale, 0.0)), 0.0)


def _product_slack(frac: Any, k: Any, eps: Any) -> np.ndarray:
    """Relative error allowance for the rounding of K·ε.

    The float K·ε is within 2^-53·Kε of the exact product, so e^{−Kε} is off by that much
    relatively, and B by at most 1.72 times it (|∂B/∂log t| <= min(1, e^B − 1), t the
    e^{−Kε} term). Where Kε > |log A| + 50, t is below A·e^{−50} and its error is
    negligible, so the allowance is capped there. (Kε = 17, A = 8e-10: ~4e-15, more
    than the 8 ulps of ``round_up``.)
    """
    a, kk, e = np.broadcast_arrays(
        np.asarray(frac, dtype=float), np.asarray(k, dtype=float), np.asarray(eps, dtype=float)
    )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cap = np.abs(np.log(a)) + 50.0
        ke = np.abs(kk * e)
    slack: np.ndarray = 2.0**-52 * np.where(np.isfinite(cap), np.minimum(ke, cap), ke)
    return slack


def ratio_upper(frac: Any, k: Any, eps: Any) -> np.ndarray:
    """B(A, K, ε) rounded up (a guarantee never goes low); capped at ε (B <= ε, spec §0)."""
    e = np.asarray(eps, dtype=float)
    raw = ratio_bound(frac, k, eps)
    val = numeric.round_up(raw * (1.0 + _product_slack(frac, k, eps)) + _slack(frac, k, eps))
    # B <= ε holds exactly for K >= 0; taking the min never lowers the exact value
    capped: np.ndarray = np.minimum(val, np.broadcast_to(e, val.shape))
    return capped


def ratio_lower(frac: Any, k: Any, eps: Any) -> np.ndarray:
    """B(A, K, ε) rounded down (never above the exact value)."""
    raw = ratio_bound(frac, k, eps)
    return numeric.round_down(raw * (1.0 - _product_slack(frac, k, eps)) - _slack(frac, k, eps))


def ratio_upper_at(frac: Any, eps1: Any, d: Any) -> np.ndarray:
    """``ratio_bound_at`` rounded up, capped at ε₁ (the bound never exceeds it for d >= 0).
    The caller passes ε₁ and d rounded up: the bound increases in both."""
    a, e, dd = np.broadcast_arrays(
        np.asarray(frac, dtype=float), np.asarray(eps1, dtype=float), np.asarray(d, dtype=float)
    )
    val = numeric.round_up(_ratio(a, e, dd) + _slack_of(a, e, dd))
    capped: np.ndarray = np.where(dd >= 0.0, np.minimum(val, e), val)
    return capped


def ratio_lower_at(frac: Any, eps1: Any, d: Any) -> np.ndarray:
    """``ratio_bound_at`` rounded down; the caller passes ε₁ and d rounded down."""
    a, e, dd = np.broadcast_arrays(
        np.asarray(frac, dtype=float), np.asarray(eps1, dtype=float), np.asarray(d, dtype=float)
    )
    return numeric.round_down(_ratio(a, e, dd) - _slack_of(a, e, dd))


def capped_inclusion(sizes: np.ndarray, m: float) -> tuple[np.ndarray, int]:
    """First-order PPS inclusion probabilities a_i = min(1, m r_i / Σ r) with iterative
    capping: units reaching 1 become certainty units, the rest are re-scaled to the
    remaining expected sample size.

    Basis: spec §7.2 (derived; Bun et al., §6.1 gives no formula).
    Returns (a, number of certainty units). O(k log k): one sort, no loop over units.
    """
    r = np.asarray(sizes, dtype=float)
    n = r.size
    order = np.argsort(-r, kind="stable")
    rs = r[order]
    # tail sums T_j = Σ_{i >= j} rs_i; with c certainty units (the c largest), the rest get
    # (m − c) rs_i / T_c; c is the smallest count with (m − c) rs_c / T_c < 1.
    tail = np.concatenate([np.cumsum(rs[::-1])[::-1], [0.0]])
    c_idx = np.arange(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = (m - c_idx) * rs / tail[:-1] < 1.0
    ok &= m - c_idx > 0
    c = int(np.argmax(ok)) if ok.any() else n
    a_sorted = np.ones(n)
    if c < n:
        a_sorted[c:] = np.minimum(1.0, (m - c) * rs[c:] / tail[c])
    a = np.empty(n)
    a[order] = a_sorted
    return a, int(np.count_nonzero(a >= 1.0))


@dataclass(frozen=True, slots=True)
class ClusterSizes:
    """Summary of a list of cluster sizes: all the bounds need (O(k) to build).

    Attributes:
        count: k, the number of clusters.
        largest: the two largest sizes n₍₁₎ >= n₍₂₎.
        smallest: the smallest size.
        total: Σ n_i.
        source: ``inline``, ``count x size`` or the file name.
        sizes: the sizes themselves (None for ``{count, size}``).
    """

    count: int
    largest: tuple[int, int]
    smallest: int
    total: int
    source: str
    sizes: np.ndarray | None = None

    @property
    def equal(self) -> bool:
        return self.largest[0] == self.smallest


def summarise(sizes: np.ndarray, source: str) -> ClusterSizes:
    """Top two, minimum and total in O(k) (``np.partition``; no Python loop)."""
    k = sizes.size
    top = np.partition(sizes, k - 2)[k - 2 :] if k >= 2 else np.array([sizes[0], 0])
    return ClusterSizes(
        count=k,
        largest=(int(top.max()), int(top.min())),
        smallest=int(sizes.min()),
        total=int(sizes.sum(dtype=np.int64)),
        source=source,
        sizes=sizes,
    )


def _read_size_file(path: Any, err: Any, *, integer: bool = True) -> np.ndarray:
    """One size per row, or a CSV with a column named ``size``; names the bad line.

    Read by ``load.table.numeric_block`` (numpy's C parser): 10⁷ rows in about a second.
    """
    try:
        with open_input(path, what="cluster-size file", binary=True, error=err) as fh:
            first = fh.readline().decode("utf-8", "replace").strip()
        if not first:
            raise err(f"{path}: the file is empty (expected one size per row)")
    except OSError as exc:
        raise err(f"cannot read cluster-size file {str(path)!r}: {exc.strerror}") from None
    from ampcalc.load.table import (  # lazy: start-up (bound)
        data_line,
        is_number,
        missing_column,
        numeric_block,
        split_line,
    )

    header = 0
    col = 0
    delim = "," if "," in first else None
    cells = split_line(first, delim) if delim else [first]
    if not is_number(cells[0]):
        names = [c.lower() for c in cells]
        if "size" not in names:
            raise err(
                f"{path}:1: {missing_column('size', names)}; expected one size per row or a "
                "'size' column"
            )
        header, col = 1, names.index("size")
    data = numeric_block(
        path,
        name=str(path),
        first_line=header + 1,
        delimiter=delim,
        columns=(col,),
        labels=("size",),
        dtype=np.int64 if integer else np.float64,
        skip=header,
        error=err,
        blank_ok=True,
    )[:, 0]
    if data.size == 0:
        raise err(f"{path}: no cluster sizes in the file")
    # integers: the parser already refused anything but whole numbers (fast path, 10⁷ rows)
    bad = data < 0 if integer else ~np.isfinite(data) | (data < 0)
    if bad.any():
        i = int(np.argmax(bad))
        kind = "whole number" if integer else "finite number"
        line = data_line(path, header, i)
        raise err(f"{path}:{line}: size {float(data[i]):g} is not a {kind} >= 0")
    return data


def read_clusters(raw: Any, reader: Any, path: str, *, minimum: int = 2) -> ClusterSizes:
    """Validate a ``clusters:`` block: ``{sizes: [...]}``, ``{count, size}`` or ``{file}``."""
    container = raw

    def at(key: str | None = None) -> Any:
        def make(msg: str, hint: str | None = None) -> Any:
            if key is None:
                return reader.error(path, msg, container=container, hint=hint)
            return reader.error(f"{path}.{key}", msg, container=container, key=key, hint=hint)

        return make

    if not isinstance(raw, Mapping):
        raise at()(
            f"expected a mapping {{sizes: [...]}}, {{count: k, size: n}} or {{file: ...}}, "
            f"got {describe(raw)}"
        )
    check_keys(raw, ("sizes", "count", "size", "file"), reader, path, "clusters")
    given = [key for key in ("sizes", "file") if key in raw]
    if ("count" in raw) != ("size" in raw):
        raise at("count" if "count" in raw else "size")(
            "`count` and `size` go together: {count: k, size: n} (k clusters of n records)"
        )
    if "count" in raw:
        given.append("count")
    if len(given) != 1:
        raise at()(
            "give exactly one of `sizes: [...]`, `count` with `size`, or `file:`"
            + (f" (got {', '.join(given)})" if given else "")
        )
    if "count" in raw:
        for key, low in (("count", minimum), ("size", 0)):
            v = raw[key]
            if not is_whole(v, low):
                raise at(key)(
                    f"expected a whole number >= {low}, got {describe(v)} (at most 2^53)"
                )
        k, c = int(raw["count"]), int(raw["size"])
        return ClusterSizes(count=k, largest=(c, c), smallest=c, total=k * c, source=f"{k} x {c}")
    if "file" in raw:
        f = raw["file"]
        if not isinstance(f, str):
            raise at("file")(f"expected a file name, got {describe(f)}")
        sizes = _read_size_file(reader.resolve(f), at("file"))
        source = f
    else:
        items = raw["sizes"]
        if not isinstance(items, list) or not items:
            raise at("sizes")(f"expected a non-empty list of cluster sizes, got {describe(items)}")
        if len(items) > INLINE_MAX:
            raise at("sizes")(LIMITS["inline_list"].message(len(items)))
        for i, v in enumerate(items):
            if not is_whole(v):
                mark = items if isinstance(items, MarkedList) else None
                raise reader.error(
                    f"{path}.sizes[{i}]",
                    f"cluster size {i}: expected a whole number >= 0, got {describe(v)} "
                    "(at most 2^53)",
                    container=mark,
                    key=i,
                )
        sizes = np.asarray(items, dtype=np.int64)
        source = "inline"
    if sizes.size < minimum:
        raise at("file" if "file" in raw else "sizes")(
            f"{sizes.size} cluster(s); expected at least {minimum}"
        )
    if int(sizes.max()) == 0:
        raise at("file" if "file" in raw else "sizes")("every cluster is empty")
    if float(sizes.sum(dtype=np.float64)) > MAX_EXACT_INT:
        raise at("file" if "file" in raw else "sizes")(
            "the clusters hold more than 2^53 records in all; sizes this large are not exact "
            "as numbers"
        )
    return summarise(sizes, source)
