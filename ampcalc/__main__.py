"""``python -m ampcalc``."""

from ampcalc.cli.app import run

run()
