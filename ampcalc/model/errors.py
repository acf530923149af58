"""The package's single error type, the place in the input it points at, and how a
user's text is shown in anything a person reads.

``printable`` escapes the characters a terminal would act on instead of showing (C0 and
C1 controls, ESC, CR, BEL, NUL, DEL, Unicode bidirectional and other format characters,
line and paragraph separators); ``quote`` is the one way a message quotes text taken
from a user's input: escaped and at most ``QUOTE_CHARS`` characters long.
"""

from __future__ import annotations

import re
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


#: longest quote of a user's text in a message (characters, before escaping)
QUOTE_CHARS = 60

_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(ch: str) -> str:
    named = _NAMED_ESCAPES.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str, *, keep: str = "") -> str:
    """``text`` safe to write to a terminal: every character that is not printable
    (``str.isprintable``: C0/C1 controls such as ESC, CR, BEL, NUL and DEL; bidirectional
    controls U+202A–U+202E, U+2066–U+2069, U+200E/U+200F, U+061C; zero-width and other
    format characters; line and paragraph separators; lone surrogates) is shown as its
    escape (``\\x1b``, ``\\r``, ``\\u202e``). Characters in ``keep`` (e.g. ``"\\n"``
    for a block of lines) are left as they are. Printable text is returned unchanged."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape(ch) for ch in text)


def quote(text: str | bytes, limit: int = QUOTE_CHARS) -> str:
    """A user's text quoted in a message: ``'...'`` with every non-printable character
    escaped (as ``repr`` does), cut to ``limit`` characters with the full length noted
    (``'xxxx'… (5,000,000 characters)``). Bytes are decoded as UTF-8, undecodable bytes
    shown as ``\\xNN``. Nothing a user gives is pasted into a message any other way."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "backslashreplace")
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def describe(value: Any) -> str:
    """An offending input value in words, for messages (``the string 'one'``, ``a list``)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int) and abs(value) >= 10**21:
        return f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, str):
        advice = number_advice(value)
        # a quote, not a paste: capped and escaped
        return f"the string {quote(value)}" + (f" ({advice})" if advice else "")
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, Sequence):
        return "a list"
    return repr(value)


# YAML 1.1 wrote numbers a YAML 1.2 reader keeps as text (the design loader reads 1.2).
_SEPARATED = re.compile(r"[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?")
_THOUSANDS = re.compile(r"[-+]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?")
_BINARY = re.compile(r"([-+]?)0b([01_]+)")
_BASED = re.compile(r"([-+]?)0([xXoO])([0-9a-fA-F_]+)")
_BASE_60 = re.compile(r"([-+]?)([1-9][0-9_]*(?::[0-5]?[0-9])+)(\.[0-9_]*)?")


def number_advice(text: str) -> str | None:
    """How to write the number ``text`` meant, when it is a YAML 1.1 number that YAML 1.2
    reads as a string (``1_000``, ``1,000``, ``0b101``, ``-0x10``, ``1:40``), else None.

    >>> number_advice("1_000")
    'YAML numbers have no digit separators: write 1000'
    >>> number_advice("1:40")
    'YAML 1.2 reads 1:40 as text, not as the base-60 number 100 of YAML 1.1: write 100'
    """
    t = text.strip()
    if len(t) > QUOTE_CHARS:  # no advice that would paste a long input back
        return None
    if ("_" in t and _SEPARATED.fullmatch(t)) or _THOUSANDS.fullmatch(t):
        return (
            f"YAML numbers have no digit separators: write {t.replace('_', '').replace(',', '')}"
        )
    if m := _BINARY.fullmatch(t):
        digits = m.group(2).replace("_", "")
        if digits:
            return f"YAML 1.2 has no binary numbers: write {m.group(1)}{int(digits, 2)}"
    if m := _BASED.fullmatch(t):
        base = 16 if m.group(2) in "xX" else 8
        digits = m.group(3).replace("_", "")
        try:
            n = int(digits, base)
        except ValueError:  # 0o9: not a number in any YAML
            return None
        prefix = "0x" if base == 16 else "0o"
        if not m.group(1) and m.group(2) in "xo":  # only separators: 0x_ff
            return f"YAML numbers have no digit separators: write {prefix}{digits}"
        return (
            f"YAML 1.2 reads {prefix} numbers only unsigned and with a lower-case {prefix}: "
            f"write {m.group(1).replace('+', '')}{n}"
        )
    if m := _BASE_60.fullmatch(t):
        n = 0
        for part in m.group(2).replace("_", "").split(":"):
            n = n * 60 + int(part)
        frac = (m.group(3) or "").replace("_", "")
        value = f"{m.group(1).replace('+', '')}{n}{frac if frac not in ('', '.') else ''}"
        return (
            f"YAML 1.2 reads {t} as text, not as the base-60 number {value} of YAML 1.1: "
            f"write {value}"
        )
    return None
