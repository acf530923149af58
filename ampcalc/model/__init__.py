"""Plain frozen data shared by every layer.

Job: the design (mechanism, neighbouring relation, target, design), result objects,
the error family, the size limits and the reference list. May import nothing of
ampcalc outside this package (numpy only for array-valued fields).
"""
