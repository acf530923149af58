"""Per-record pipelines: importance weights, PWS sanitizing, and the Dask engine.

Job: run the kernels of ``ampcalc.math`` over records, in one process or on Dask
(``distributed``): importance weights (``importance_weights``), PWS tables and their
self-check (``pws_tables``), the sanitizer (``pws_sanitize``), estimates from sanitized
frequencies (``pws_estimate``, with the estimators' accuracy in ``pws_estimators``) and
record files (``pws_files``). No printing; progress goes through callbacks. May import
``output``, ``engine``, ``designs``, ``schemes``, ``load``, ``math`` and ``model``;
never ``cli``.
"""
