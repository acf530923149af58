"""Analyses over designs: sweeps, the exact-LP check, plans, comparisons.

Job: evaluate the engine over grids (``sweep``; ``sweep_result`` for any design source
and the ``SweepResult`` wrapper), check a design's bounds against the exact worst case
on tiny instances (``verify``), validate designs and gate a budget (``checks``), plan
accuracy (``plan``), compare designs (``compare``), budgets, calibration and reports.
Pure: no printing, no exits. May import ``engine``, ``designs``, ``accounting``,
``schemes``, ``load``, ``math`` and ``model``.
"""
