"""The package version: the single source (pyproject reads it at build time).

Kept as a literal so that start-up needs no package-metadata lookup.
"""

__version__ = "0.3.0"
