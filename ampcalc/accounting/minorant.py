"""The greatest convex minorant of points (t, v), in whole-array passes.

Connect-the-dots (``pmf.from_profile_points``) and its optimistic counterpart put a
privacy-loss mass at each vertex of a convex curve through (or below) a profile's points;
the masses are the curve's slope changes, so the vertices kept must have float slopes that
never decrease, or a mass would come out negative (and be clipped). ``convex_minorant``
finds them.
"""

from __future__ import annotations

import bisect

import numpy as np

from ampcalc.math.types import FloatArray


def convex_minorant(t: FloatArray, v: FloatArray) -> np.ndarray:
    """Indices of the vertices of the greatest convex minorant of the points (tᵢ, vᵢ)
    (t increasing), with float slopes that never decrease between kept vertices.

    A point strictly above the segment joining its two current neighbours is no vertex
    (the segment joins two points of the set); every such point is dropped at once, and
    the pass repeated until none is left (the float slopes compared are the ones the
    masses are then computed from, so those masses are never negative).
    """
    keep = np.arange(len(t))
    for _ in range(8):
        if len(keep) <= 2:
            return keep
        tk, vk = t[keep], v[keep]
        s = np.diff(vk) / np.diff(tk)
        bad = np.flatnonzero(s[:-1] > s[1:]) + 1
        if len(bad) == 0:
            return keep
        keep = np.delete(keep, bad)
    # what is left (float noise along straight runs, mostly): one stack pass
    out: np.ndarray = keep[_stack_pass(t[keep], v[keep])]
    return out


def _stack_pass(t: FloatArray, v: FloatArray) -> np.ndarray:
    """The lower hull of the points (tᵢ, vᵢ) by the monotone-chain stack (a point is
    popped while the slope into it is above the slope out of it), with the runs that pop
    nothing pushed whole: while the stack's top two points are the two points before
    point i, the test at i compares the points' own consecutive slopes (the same float
    divisions), so every point up to the next one whose slope in is above its slope out
    is pushed at once. The same indices as testing every point in turn."""
    s = np.diff(v) / np.diff(t)
    turns = (np.flatnonzero(s[:-1] > s[1:]) + 1).tolist()  # slope in > slope out
    tl, vl = t.tolist(), v.tolist()
    n = len(tl)
    st: list[int] = []
    i = 0
    while i < n:
        if len(st) >= 2 and st[-1] == i - 1 and st[-2] == i - 2:
            k = bisect.bisect_left(turns, i - 1)
            f = turns[k] if k < len(turns) else n - 1
            if f >= i:  # points i..f pop nothing: their tests are at i − 1 .. f − 1
                st.extend(range(i, f + 1))
                i = f + 1
                continue
        while len(st) >= 2:
            a, b = st[-2], st[-1]
            if (vl[b] - vl[a]) / (tl[b] - tl[a]) > (vl[i] - vl[b]) / (tl[i] - tl[b]):
                st.pop()
            else:
                break
        st.append(i)
        i += 1
    return np.asarray(st, dtype=np.int64)
