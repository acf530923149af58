"""The five papers ampcalc implements, by file name, and helpers for basis strings.

Results cite a paper as ``"<file name> <theorem>"`` so a reader can open the
exact text the number comes from.
"""

from __future__ import annotations

BUN_2022 = "000_97a39a4c524f603f.txt"
"""Bun, Drechsler, Gaboardi, McMillan, Sarathy: controlling privacy loss in sampling
schemes (stratified and cluster sampling), with appendices A-F."""

BUN_2020_WP = "001_4ef689e3bef19c3a.txt"
"""Bun, Drechsler, Gaboardi, McMillan: controlling privacy loss in survey sampling
(working paper v1)."""

HU_2023 = "002_2b0afa8716090992.txt"
"""Hu, Drechsler, Kim: accuracy gains from privacy amplification through sampling."""

IMPORTANCE = "003_e3b635228222e4e2.txt"
"""Importance sampling with personalised privacy."""

PWS = "004_219872908bad6779.txt"
"""Private weighted sampling."""

BBG18 = "Balle, Barthe, Gaboardi (2018), privacy amplification by subsampling"
"""Standard result cited by the papers (not one of the five files)."""


def cite(paper: str, where: str) -> str:
    """Return a basis string such as ``"000_97a39a4c524f603f.txt Theorem 2.2"``."""
    return f"{paper} {where}"
