"""Pure numeric kernels: numpy in, numpy out.

Job: outward rounding and stable log-space helpers (``numeric``), tilted-binomial
group kernels (``groups``), per-record importance kernels (``importance``), the
private weighted sampling kernels (``pws``) and the accuracy planner (``accuracy``).
Imports nothing of ampcalc outside this package: no model, no files, no printing.
"""
