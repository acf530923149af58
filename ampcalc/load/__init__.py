"""Reading input: files, YAML with line marks, field validation, record files.

Job: open input files safely and write output files atomically (``files``), check
field values and report errors with file, line and field (``fields``), read every
data file (``table``: CSV/TSV/whitespace text, errors at the file's line, columns by
name with a did-you-mean; ``parquet``: Parquet through pyarrow) and record files in
chunks (``records``). May
import ``model`` and ``math`` only; the scheme registry that turns a design document
into a ``Design`` lives above, in ``ampcalc.designs``.
"""
