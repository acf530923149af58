"""The package's single error type and the place in the input it points at."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Where:
    """A place in the user's input.

    Attributes:
        file: the design file's path, ``<stdin>``, or ``--set`` for an override.
        line: 1-based line of the offending key or value, when known.
        column: 1-based column, when known.
        field: dotted path of the field, e.g. ``designs[1].sampling.sample``.
    """

    file: str | None = None
    line: int | None = None
    column: int | None = None
    field: str | None = None

    def prefix(self) -> str:
        """GNU-style ``file:line:col: field: `` prefix (parts that are known)."""
        parts: list[str] = []
        if self.file is not None:
            loc = self.file
            if self.line is not None:
                loc += f":{self.line}"
                if self.column is not None:
                    loc += f":{self.column}"
            parts.append(loc)
        if self.field:
            parts.append(self.field)
        return "".join(p + ": " for p in parts)


class AmpcalcError(Exception):
    """Every error ampcalc reports to a user: bad input or a failed theorem condition.

    Args:
        message: what is wrong, in words, including what was expected.
        where: the file/line/field it concerns, when known.
        hint: an extra sentence (e.g. a "did you mean" suggestion).
    """

    def __init__(self, message: str, *, where: Where | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    @property
    def field(self) -> str | None:
        return self.where.field if self.where else None

    @property
    def line(self) -> int | None:
        return self.where.line if self.where else None

    def __str__(self) -> str:
        text = (self.where.prefix() if self.where else "") + self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


class DesignError(AmpcalcError):
    """A design file, a ``--set`` override or a Python-built design is not valid."""


class ConditionError(AmpcalcError):
    """A valid design falls outside the conditions of the theorem that would bound it.

    Raised by a scheme's ``analyse``; the engine records it on the result
    (``error``) with null bounds instead of evaluating anything.
    """


def describe(value: Any) -> str:
    """An offending input value in words, for messages (``the string 'one'``, ``a list``)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int) and abs(value) >= 10**21:
        return f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, str):
        # a quote, not a paste: the first line, at most 60 characters
        line = value.split("\n", 1)[0]
        cut = len(line) > 60 or line != value
        return f"the string {line[:60]!r}" + ("…" if cut else "")
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, Sequence):
        return "a list"
    return repr(value)
