"""Renderers: results to table, JSON, CSV and plots.

Job: turn result objects into text or figures (``render``: JSON, CSV and rich tables;
``plot``: matplotlib figures, an optional extra). No maths. May import ``analyses``,
``load`` (for atomic writes) and ``model``; never ``cli``.
"""
