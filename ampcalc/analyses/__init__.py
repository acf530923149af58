"""Analyses over designs: sweeps, the exact-LP check, plans, comparisons.

Job: evaluate the engine over grids (``sweep``), check a design's bounds against the
exact worst case on tiny instances (``verify``), plan accuracy (``plan``). Pure: no
printing, no exits. May import ``engine``, ``designs``, ``schemes``, ``load``,
``math`` and ``model``.
"""
