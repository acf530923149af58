"""Private weighted sampling's sanitizer in memory (Cohen et al. 2021, Alg. 2–4;
``ampcalc pws sanitize``).

``PwsSanitiser`` holds a design's Algorithm 3/4 tables and extends them on demand to
larger frequencies (the CLI's and the Dask engine's streaming sanitizer share it);
``pws_sanitize`` checks a sample (one whole frequency >= 1 per distinct key) and keeps
or drops each key with ``ampcalc.math.pws.sanitize_keys``. No printing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ampcalc.designs.sources import as_designs
from ampcalc.math import pws as K
from ampcalc.model.errors import DesignError
from ampcalc.model.limits import LIMITS
from ampcalc.records.pws_tables import pws_design
from ampcalc.schemes import pws


class PwsSanitiser:
    """Algorithm 3/4 tables for a design, extended on demand to larger frequencies."""

    def __init__(self, params: Any, frequencies: bool, extend: bool) -> None:
        self.params = params
        self.frequencies = frequencies
        self.extend = extend
        self.table = pws.compute_table(params)
        self.n = self.table.n
        self._build(self.n, f"the design's table ({self.n} rows)")

    def _build(self, n: int, where: str) -> None:
        q = pws.q_of(self.params, n)
        pi = pws.reporting(self.params, q)
        rows = None
        if self.frequencies:
            # the rows are computed one by one until π_i stops changing and a row repeats
            # (``frequency_rows``): refuse a cost above the limit before paying it
            cap = LIMITS["pws_row_entries"]
            eps, delta = self.params.epsilon, self.params.delta
            wide = 2 * math.ceil(min(K.L_eps_delta(eps, delta), 1e12)) + 2
            steady = K.constant_from(pi)
            if steady * wide > cap.value:
                how = f"up to row {steady:,}, where π_i stops changing; about {wide:,} each"
                raise DesignError(f"{where}: {_cost(n, how, steady * wide, cap)}")
            try:
                rows = K.frequency_rows(q, eps, delta, pi, max_entries=cap.value)
            except K.RowsTooLong as exc:
                how = f"{exc.row:,} rows without a repeat"
                raise DesignError(f"{where}: {_cost(n, how, exc.entries, cap)}") from None
        self.q, self.pi, self.rows = q, pi, rows
        self.p = np.divide(pi, q, out=np.zeros_like(q), where=q > 0)  # π_i/q_i, 0 at q = 0
        self.n = n

    def ensure(self, top: int, where: str) -> None:
        if top <= self.n:
            return
        if not self.extend:
            raise DesignError(
                f"{where}: frequency {top} is above max_frequency = {self.n}; its row was "
                "not computed (drop --no-extend to compute it)"
            )
        cap = LIMITS["pws_extend"]
        if top > cap.value:
            raise DesignError(f"{where}: {cap.message(top)}")
        self._build(top, where)


def _cost(n: int, how: str, entries: int, cap: Any) -> str:
    return (
        f"frequency {n:,} needs Algorithm 4's rows computed one by one ({how}): "
        f"{entries:,} entries, above the limit of {cap.value:,}; {cap.alternative}"
    )


def pws_sanitize(
    design: Any,
    keys: Sequence[str],
    frequencies: Any,
    seed: int,
    *,
    report_frequencies: bool = False,
    extend: bool = True,
) -> dict[str, Any]:
    """``ampcalc.api.pws_sanitize`` (its arguments, returns and errors are documented there)."""
    _, params = pws_design(as_designs(design))
    key_list = [str(k) for k in keys]
    freqs = np.asarray(frequencies)
    if freqs.shape != (len(key_list),):
        raise DesignError(
            f"expected one frequency per key ({len(key_list)}), got shape {freqs.shape}"
        )
    if freqs.size and (freqs.dtype.kind not in "iu" or int(freqs.min()) < 1):
        if freqs.dtype.kind == "f" and np.all(freqs == np.round(freqs)) and freqs.min() >= 1:
            freqs = freqs.astype(np.int64)
        else:
            raise DesignError(
                "frequencies must be whole numbers >= 1 (keys with frequency 0 are not in "
                "the data; frequencies count elements)"
            )
    if len(set(key_list)) != len(key_list):
        raise DesignError("duplicate keys: a weighted sample lists each key once")
    freqs = freqs.astype(np.int64)
    san = PwsSanitiser(params, report_frequencies, extend=extend)
    if freqs.size:
        san.ensure(int(freqs.max()), "frequencies")
    kept, tokens = K.sanitize_keys(key_list, freqs, int(seed), p=san.p, rows=san.rows)
    idx = np.flatnonzero(kept).tolist()
    out: dict[str, Any] = {"keys": [key_list[i] for i in idx]}
    if report_frequencies:
        assert tokens is not None
        out["frequency"] = [int(tokens[i]) for i in idx]
    return out
