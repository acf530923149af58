"""The old name of ``records.pws_sanitize``, still imported by ``api.py`` and
``cli/pws.py``; remove once they import ``records.pws_sanitize``."""

from __future__ import annotations

from ampcalc.records.pws_sanitize import PwsSanitiser, pws_sanitize

__all__ = ["PwsSanitiser", "pws_sanitize"]
