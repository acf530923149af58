"""Field-level validation shared by the loader and the scheme modules (no yaml here).

``Reader`` knows where every field stands in the input (file, line, column, or the
``--set`` option that supplied it) so any module can raise a ``DesignError`` that
points at the spot. Scheme modules with nested blocks (size distributions, cluster
lists, strata) validate them through a ``Reader`` in their ``parse_params``.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ampcalc.model.errors import QUOTE_CHARS, DesignError, Where, quote
from ampcalc.model.errors import describe as describe  # re-exported: the scheme modules use it


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """One key of a scheme's ``sampling:`` block, as data.

    Attributes:
        name: the YAML key.
        kind: ``int`` | ``float`` | ``str`` | ``choice`` | ``bool`` | ``any``.
        doc: one line for ``ampcalc schemes`` and error messages.
        required: the key must be present.
        default: value when absent (ignored when required).
        low, high: numeric domain ends; ``low_open``/``high_open`` exclude them.
        choices: allowed values for ``choice``.
    """

    name: str
    kind: str
    doc: str
    required: bool = False
    default: Any = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()

    def domain(self) -> str:
        """The domain in words, e.g. ``a number in (0, 1]``."""
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        noun = {"int": "a whole number", "float": "a number", "str": "a string"}.get(
            self.kind, self.kind
        )
        if self.low is None and self.high is None:
            return noun
        lo = "-inf" if self.low is None else _num(self.low)
        hi = "inf" if self.high is None else _num(self.high)
        left = "(" if self.low_open or self.low is None else "["
        right = ")" if self.high_open or self.high is None else "]"
        return f"{noun} in {left}{lo}, {hi}{right}"

    def contains(self, num: float) -> bool:
        """Whether ``num`` lies between ``low`` and ``high`` (an open end excluded)."""
        below = self.low is not None and (num < self.low or (self.low_open and num == self.low))
        above = self.high is not None and (
            num > self.high or (self.high_open and num == self.high)
        )
        return not (below or above)

    def admits(self, num: float) -> bool:
        """Whether a number read from a data file is a value of this field: finite,
        whole for an ``int``, in the domain."""
        return (
            math.isfinite(num) and (self.kind != "int" or num.is_integer()) and self.contains(num)
        )


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else repr(x)


class MarkedDict(dict[Any, Any]):
    """A mapping that remembers where it and each of its keys stand in the file."""

    mark: tuple[int, int] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (line, column) of each key; (None, None) for a key inherited without a place
        self.key_marks: dict[Any, tuple[int | None, int | None]] = {}


class MarkedList(list[Any]):
    """A sequence that remembers where each item stands in the file."""

    mark: tuple[int, int] | None = None

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.item_marks: list[tuple[int, int]] = []


# --------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------


class Reader:
    """Where things are: the file, per-design field marks, and --set overrides.

    Attributes:
        filename: the design file as given (``<stdin>``, ``<string>`` otherwise).
        prefix: the design's path in the file, e.g. ``designs[1].``.
        base_dir: directory that relative ``file:`` paths in the design resolve
            against (the design file's directory; the working directory otherwise).
    """

    def __init__(
        self,
        filename: str,
        prefix: str,
        overrides: Mapping[str, Where],
        override_text: Mapping[str, str] | None = None,
    ):
        self.filename = filename
        self.prefix = prefix  # e.g. "designs[1]." or ""
        self.overrides = overrides
        #: the ``--set PATH=VALUE`` text of each override path, as the user typed it
        self.override_text = override_text or {}
        self.field_where: dict[str, Where] = {}
        p = Path(filename)
        self.base_dir = p.parent if not filename.startswith("<") and p.parent else Path(".")

    def error(
        self,
        path: str,
        message: str,
        *,
        container: Any = None,
        key: Any = None,
        hint: str | None = None,
    ) -> DesignError:
        """A ``DesignError`` at ``path`` (relative to the design), to be raised."""
        return DesignError(message, where=self.where(path, container, key), hint=hint)

    def _made_by_override(self, path: str) -> Where | None:
        """The ``--set`` that created the key at ``path`` (absent from the file), if any:
        a typo in an override's path is the override's fault, not the file's."""
        for opath, w in self.overrides.items():
            if opath.startswith((path + ".", path + "[")):
                text = self.override_text.get(opath)
                return Where(file=f"--set {text}" if text else w.file, field=self.prefix + path)
        return None

    def resolve(self, file: str) -> Path:
        """A ``file:`` value resolved against the design file's directory."""
        p = Path(file)
        return p if p.is_absolute() else self.base_dir / p

    def fields(
        self, data: Mapping[str, Any], specs: Sequence[Field], path: str, what: str
    ) -> dict[str, Any]:
        """Validate a mapping against ``Field`` specs (see ``read_fields``)."""
        return read_fields(data, specs, self, path, what)

    def where(self, path: str, container: Any = None, key: Any = None) -> Where:
        full = self.prefix + path
        if path in self.overrides:
            w = self.overrides[path]
            return Where(file=w.file, field=full)
        if isinstance(container, MarkedDict) and key not in container.key_marks:
            made = self._made_by_override(path)
            if made is not None:
                return made
        line = col = None
        if isinstance(container, MarkedDict) and key in container.key_marks:
            line, col = container.key_marks[key]
        elif isinstance(container, MarkedList) and isinstance(key, int):
            if 0 <= key < len(container.item_marks):
                line, col = container.item_marks[key]
        elif isinstance(container, (MarkedDict, MarkedList)) and container.mark:
            line, col = container.mark
        w = Where(file=self.filename, line=line, column=col, field=full)
        self.field_where[path] = w
        return w


def check_keys(
    data: Mapping[str, Any], allowed: Iterable[str], ctx: Reader, path: str, what: str
) -> None:
    allowed = tuple(allowed)
    for key in data:
        if key not in allowed:
            shown = str(key)
            if len(shown) > QUOTE_CHARS or not shown.isprintable():
                shown = quote(shown)  # a shadow file's line as a key: quoted, not pasted
            kpath = f"{path}.{shown}" if path else shown
            close = difflib.get_close_matches(str(key)[:100], allowed, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else None
            raise DesignError(
                f"unknown key in {what}; expected one of: {', '.join(allowed)}",
                where=ctx.where(kpath, data, key),
                hint=hint,
            )


def mapping(
    value: Any, ctx: Reader, path: str, container: Any, key: Any, what: str
) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise DesignError(
            f"expected {what} (a mapping of keys to values), got {describe(value)}",
            where=ctx.where(path, container, key),
        )
    return value


#: largest whole number every float represents exactly (sizes and counts stay below it)
MAX_EXACT_INT = 2**53


def is_real(value: Any) -> bool:
    """A finite ``int`` or ``float`` (not a bool) that converts to a finite float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond the float range
        return False


def is_whole(value: Any, low: int = 0, high: int = MAX_EXACT_INT) -> bool:
    """A whole number (``int`` or integral float) in ``[low, high]``."""
    if not is_real(value):
        return False
    if isinstance(value, float) and not value.is_integer():
        return False
    return low <= int(value) <= high


def number(value: Any, spec: Field, where: Where) -> int | float:
    """Validate one numeric value against a ``Field`` spec (type, finiteness, domain)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DesignError(
            f"expected {spec.domain()}, got {describe(value)}",
            where=where,
        )
    if not is_real(value):  # NaN, ±inf, or an int beyond the float range
        shown = value if isinstance(value, float) else describe(value)
        raise DesignError(f"expected a finite number ({spec.domain()}), got {shown}", where=where)
    num: int | float = value
    if spec.kind == "int":
        if isinstance(value, float):
            if not value.is_integer():
                raise DesignError(f"expected {spec.domain()}, got {describe(value)}", where=where)
            num = int(value)
    else:
        num = float(value)
    if not spec.contains(num):
        raise DesignError(f"expected {spec.domain()}, got {describe(num)}", where=where)
    return num


#: YAML 1.1's other booleans: YAML 1.2 (the design loader) reads them as strings
_YAML11_BOOLS = {
    "yes": "true",
    "on": "true",
    "y": "true",
    "no": "false",
    "off": "false",
    "n": "false",
}


def field_value(spec: Field, value: Any, where: Where) -> Any:
    """Validate a value of any ``Field`` kind."""
    if spec.kind in ("int", "float"):
        return number(value, spec, where)
    if spec.kind == "choice":
        if not isinstance(value, str) or value not in spec.choices:
            close = difflib.get_close_matches(str(value)[:100], spec.choices, n=1)
            raise DesignError(
                f"expected {spec.domain()}, got {describe(value)}",
                where=where,
                hint=f"did you mean '{close[0]}'?" if close else None,
            )
        return value
    if spec.kind == "str":
        if not isinstance(value, str):
            raise DesignError(f"expected a string, got {describe(value)}", where=where)
        return value
    if spec.kind == "bool":
        if not isinstance(value, bool):
            hint = None
            if isinstance(value, str) and value.lower() in _YAML11_BOOLS:
                hint = f"YAML 1.2 reads {value} as text: write {_YAML11_BOOLS[value.lower()]}"
            raise DesignError(
                f"expected true or false, got {describe(value)}", where=where, hint=hint
            )
        return value
    return value


def read_fields(
    data: Mapping[str, Any], specs: Sequence[Field], ctx: Reader, path: str, what: str
) -> dict[str, Any]:
    check_keys(data, [s.name for s in specs], ctx, path, what)
    out: dict[str, Any] = {}
    for spec in specs:
        fpath = f"{path}.{spec.name}"
        if spec.name not in data:
            if spec.required:
                raise DesignError(
                    f"missing required key {spec.name!r} ({spec.doc}; {spec.domain()})",
                    where=ctx.where(path, data),
                )
            out[spec.name] = spec.default
            continue
        out[spec.name] = field_value(spec, data[spec.name], ctx.where(fpath, data, spec.name))
    return out
