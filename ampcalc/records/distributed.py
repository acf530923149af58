"""Per-record work on Dask: ``--engine dask`` of ``ampcalc weights`` and ``pws sanitize``.

The input is a file, a directory or a glob of partitions (Parquet or CSV; ``.npy`` too
for record files). Each file is one partition, taken in natural name order (``part-2``
before ``part-10``). For ``weights`` the partitions become a ``dask.dataframe``
(``from_map``) and the existing per-record kernels run in ``map_partitions``; for
``pws sanitize`` each partition is one delayed task that runs the one-process byte path
on its file (``pws_stream.sanitize_sample``; Parquet partitions from Arrow's buffers,
``_parquet_chunk``). Every task reads its partition with the same parser as the one-process path,
runs the kernel, writes its part file (``part-00000.csv`` … or ``.parquet``) and returns
a one-row summary (``pws sanitize``: with its keys' hashes, for the duplicate check
across partitions). Only the summaries travel back to the client.

Random draws do not depend on the partitioning:

- ``weights --sample``: row i's uniform is the Philox draw keyed by (seed, i), i the
  global 0-based row index. Partition offsets come from the partition lengths (a cheap
  counting pass: Parquet/npy metadata, CSV non-blank lines), so every task knows the
  global index of its first row (``importance_kernels.uniforms``).
- ``pws sanitize``: a key's uniform is a pure function of (seed, key)
  (``pws_kernels.key_uniforms``); no index is needed.

The engine lives in four modules, re-exported here:

- ``dask_cluster``: importing Dask, the scheduler (local schedulers, a running
  scheduler, or a loopback-only ``LocalCluster`` whose workers ignore SIGINT), the
  workers' memory settings;
- ``dask_parts``: the input partitions and the output directory's part files;
- ``dask_weights``: the ``weights`` job;
- ``dask_sanitize``: the ``pws sanitize`` job.

Dask is imported there only, and only when the engine is used.
"""

from __future__ import annotations

from ampcalc.records.dask_cluster import (
    LOCAL_SCHEDULERS,
    LOOPBACK,
    dask_setup,
    require_dask,
    scheduler,
)
from ampcalc.records.dask_parts import (
    OUTPUT_FORMATS,
    PART_NAME,
    Partition,
    anchored,
    output_format,
    prepare_output,
    resolve_inputs,
    write_summary_text,
)
from ampcalc.records.dask_sanitize import (
    _sanitize_task,
    _SanitizeJob,
    run_sanitize,
    table_token,
)
from ampcalc.records.dask_weights import run_weights

__all__ = [
    "LOCAL_SCHEDULERS",
    "LOOPBACK",
    "OUTPUT_FORMATS",
    "PART_NAME",
    "Partition",
    "_SanitizeJob",
    "_sanitize_task",
    "anchored",
    "dask_setup",
    "output_format",
    "prepare_output",
    "require_dask",
    "resolve_inputs",
    "run_sanitize",
    "run_weights",
    "scheduler",
    "table_token",
    "write_summary_text",
]
