"""Searches on a decreasing function of a positive scale (a noise scale): the scale
where it crosses a level, by secant steps on log f against log v.

Shared by ``budget --solve`` (a ledger's common noise) and ``invert --solve`` on
releases composed by the accountant, where each evaluation costs a composition.
"""

from __future__ import annotations

import math
from typing import Any


def log_secant_crossing(
    f: Any, level: float, lo: float, hi: float, start: float, rel: float = 1e-3
) -> float | None:
    """A scale v with f(v) <= level, within ``rel`` of the crossing (f decreasing): the
    secant method on log f against log v from ``start`` (total ε falls about like a power
    of the scale), kept inside a bracket once one is known (Illinois steps). ``None``
    when f(hi) > level."""
    cache: dict[float, float] = {}

    def g(x: float) -> float:
        v = math.exp(x)
        if v not in cache:
            cache[v] = f(v)
        y = cache[v]
        if not math.isfinite(y):
            return 745.0
        return (math.log(y) if y > 0 else -745.0) - math.log(level)

    xlo, xhi = math.log(lo), math.log(hi)
    x0 = min(max(math.log(start), xlo), xhi)
    g0 = g(x0)
    a: tuple[float, float] | None = (x0, g0) if g0 > 0 else None  # fails
    b: tuple[float, float] | None = (x0, g0) if g0 <= 0 else None  # meets
    # first step: total ε about proportional to 1/scale
    x1 = min(max(x0 + g0, xlo), xhi) if abs(g0) < 700 else (x0 + (3.0 if g0 > 0 else -3.0))
    prev = (x0, g0)
    side = 0
    for _ in range(60):
        if a is not None and b is not None and b[0] - a[0] <= rel:
            return math.exp(b[0])
        x1 = min(max(x1, xlo), xhi)
        if a is not None and b is not None and not (a[0] < x1 < b[0]):
            x1 = 0.5 * (a[0] + b[0])
        g1 = g(x1)
        if g1 > 0:
            if a is None or x1 > a[0]:
                a = (x1, g1)
            if b is not None and side == 1:
                b = (b[0], 0.5 * b[1])
            side = 1
        else:
            if b is None or x1 < b[0]:
                b = (x1, g1)
            if a is not None and side == -1:
                a = (a[0], 0.5 * a[1])
            side = -1
        if b is None and x1 >= xhi:
            return None
        if a is None and x1 <= xlo:
            return lo
        if a is not None and b is not None:
            # regula falsi (Illinois) inside the bracket
            x1 = b[0] - b[1] * (b[0] - a[0]) / (b[1] - a[1]) if b[1] != a[1] else x1
            # aim a hair past the crossing so that the meeting end moves too
            x1 += 0.25 * rel
        else:
            px, pg = prev
            slope = (g1 - pg) / (x1 - px) if x1 != px and g1 != pg else -1.0
            slope = min(slope, -0.05)
            step = -g1 / slope
            step = max(min(step, 3.0), -3.0)
            prev = (x1, g1)
            x1 = x1 + step
        prev = prev if (a is None or b is None) else (x1, g1)
    return math.exp(b[0]) if b is not None else None
