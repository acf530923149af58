"""Per-record pipelines: importance weights, PWS sanitising, and the Dask engine.

Job: run the kernels of ``ampcalc.math`` over record files, in one process or on
Dask (``distributed``). No printing; progress goes through callbacks. May import
``schemes``, ``load``, ``math`` and ``model``; never ``cli``.
"""
