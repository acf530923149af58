"""Progress while record files are read: the hook only, so the command line can set it
without importing the reader (``ampcalc.load.records``) at start-up."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

#: records per chunk of a record file
CHUNK_ROWS = 1 << 20

#: ``progress(records read, 0)``, called after each chunk of a record file (0: the total
#: is not known ahead)
_PROGRESS: contextvars.ContextVar[Callable[[int, int], None] | None] = contextvars.ContextVar(
    "ampcalc_record_progress", default=None
)


@contextlib.contextmanager
def reading_progress(progress: Callable[[int, int], None] | None) -> Iterator[None]:
    """Report the records read through ``progress(done, 0)`` while designs load inside
    the block (after each chunk of ``CHUNK_ROWS`` records: only large files report)."""
    token = _PROGRESS.set(progress)
    try:
        yield
    finally:
        _PROGRESS.reset(token)
