"""``python -m ampcalc``."""

from .cli import run

run()
