"""The command line: the typer app (``app.py``) and one module per further command.

Job: parse options, call the library (``ampcalc.api``, ``ampcalc.analyses``,
``ampcalc.records``), render through ``ampcalc.output``, choose the exit code. No maths
here. The only package that imports typer; with ``output`` the only one that imports
rich. May import every other package of ampcalc; nothing imports it.
"""

from ampcalc.cli.app import main, run

__all__ = ["main", "run"]
