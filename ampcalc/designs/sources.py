"""Design sources: what the Python API takes as a design -> ``Design`` objects.

A source is a ``Design``, a path (``str`` or ``os.PathLike``), YAML text (a string with
a newline, or a one-line flow mapping ``{...}``) or a dict as ``yaml.safe_load`` would
give; ``load_designs`` validates it through ``document``. ``source_document`` goes the
other way for code that needs the document itself (sweeps, plans): a built ``Design``
maps back to a document that loads into an equal design (``design_document``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ampcalc import schemes
from ampcalc.designs import document as _design
from ampcalc.designs import mechanism_dict
from ampcalc.designs.document import load_document, parse_yaml, read_source
from ampcalc.model.design import Design
from ampcalc.model.errors import AmpcalcError, DesignError


def is_yaml_text(text: str) -> bool:
    """A string is YAML text (not a path) when it holds a newline or is a flow mapping."""
    if "\n" in text:
        return True
    stripped = text.strip()
    return stripped.startswith("{") and not Path(text).exists()


def load_designs(source: Any = None, *, overrides: Sequence[str] = ()) -> tuple[Design, ...]:
    """``ampcalc.api.load_designs`` (its arguments, returns and errors are documented there)."""

    if isinstance(source, Design):
        if overrides:
            raise DesignError("overrides apply to a file, text or dict, not to a built Design")
        return (source,)
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, str) and "\n" not in source and is_yaml_text(source):
        source = source + "\n"
    if source is not None and not isinstance(source, (str, Mapping)):
        raise DesignError(
            f"expected a path, YAML text, a dict or a Design, got {type(source).__name__}"
        )
    return _design.load_designs(source, overrides=overrides)


def load_design(source: Any = None, *, overrides: Sequence[str] = ()) -> Design:
    """Load and validate exactly one design (see ``load_designs`` for ``source``).

    Raises:
        DesignError: invalid input (the CLI's message), or not exactly one design.
    """
    found = load_designs(source, overrides=overrides)
    if len(found) != 1:
        raise DesignError(
            f"expected one design, found {len(found)}; use load_designs for a file with `designs:`"
        )
    return found[0]


def as_design(design: Any) -> Design:
    """``design`` itself when built, else the one design ``load_design`` reads from it."""
    return design if isinstance(design, Design) else load_design(design)


def as_designs(designs: Any) -> tuple[Design, ...]:
    """Every design of a ``Design``, a source, or a (nested) list or tuple of them."""
    if isinstance(designs, Design):
        return (designs,)
    if isinstance(designs, (list, tuple)):
        out: list[Design] = []
        for item in designs:
            out.extend(as_designs(item))
        return tuple(out)
    return load_designs(designs)


def plain_doc(value: Any) -> Any:
    """A model value as plain document data (dataclasses as dicts without None fields,
    enums as their values, numpy scalars as Python numbers)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain_doc(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if getattr(value, f.name) is not None
        }
    if isinstance(value, (list, tuple)):
        return [plain_doc(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain_doc(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "value") and isinstance(getattr(value, "value", None), str):
        return value.value
    return value


def same_value(a: Any, b: Any) -> bool:
    """Structural equality: dataclasses field by field, arrays elementwise (NaN = NaN)."""
    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(
            same_value(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, np.ndarray):
        try:
            return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
        except TypeError:
            return a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    try:
        return bool(a == b) or (a != a and b != b)
    except (ValueError, TypeError):
        return False


def same_design(a: Design, b: Design) -> bool:
    """The two designs compute the same: same params, mechanism, target and guarantee."""
    return (
        same_value(a.params, b.params)
        and same_value(a.mechanism, b.mechanism)
        and same_value(a.target, b.target)
        and a.guarantee == b.guarantee
    )


def design_document(design: Design) -> tuple[Any, str]:
    """A document that loads back into ``design`` (for sweeps over a built Design)."""

    scheme = schemes.get(design.scheme)
    sampling: dict[str, Any] = {"scheme": design.scheme}
    for spec in scheme.fields:
        value = getattr(design.params, spec.name, None)
        if value is not None:
            sampling[spec.name] = plain_doc(value)
    doc: dict[str, Any] = {"name": design.name, "sampling": sampling}
    if design.mechanism is not None:
        doc["mechanism"] = mechanism_dict(design.mechanism)
    if design.guarantee is not None:
        doc["guarantee"] = str(design.guarantee)
    if design.target is not None:
        doc["target"] = plain_doc(design.target)
    try:
        (again,) = load_document(doc, filename="<python>")
        if same_design(again, design):
            return doc, "<python>"
    except (AmpcalcError, ValueError, TypeError):
        pass
    # a design read from a file: take its entry of that file (unchanged since)
    where = design.where
    if where is not None and where.file and not where.file.startswith(("<", "-")):
        try:
            text, name = read_source(where.file)
            full = parse_yaml(text, filename=name)
            loaded = load_document(full, filename=name)
        except AmpcalcError:
            loaded = ()
        for i, candidate in enumerate(loaded):
            if candidate.name == design.name and same_design(candidate, design):
                if isinstance(full, Mapping) and "designs" in full:
                    entry = dict(full["designs"][i])
                    for inherited in ("mechanism", "target", "guarantee"):
                        if inherited not in entry and inherited in full:
                            entry[inherited] = full[inherited]
                    entry.setdefault("name", design.name)
                    return entry, name
                return full, name
    raise AmpcalcError(
        f"cannot sweep the built {design.scheme} design {design.name!r}: it does not map "
        "back to a design document; pass the design's file path, YAML text or dict instead"
    )


def built_designs(source: Any) -> tuple[Design, ...] | None:
    """The designs when ``source`` is a ``Design`` or a sequence of them, else None."""
    if isinstance(source, Design):
        return (source,)
    if (
        isinstance(source, Sequence)
        and not isinstance(source, str)
        and source
        and all(isinstance(d, Design) for d in source)
    ):
        return tuple(source)
    return None


def source_document(source: Any) -> tuple[Any, str]:
    """(parsed document, file name for messages) of any source, a built ``Design`` too."""

    if isinstance(source, Design):
        return design_document(source)
    if isinstance(source, os.PathLike):  # a path is read, whatever its name looks like
        text, name = read_source(os.fspath(source))
        return parse_yaml(text, filename=name), name
    if isinstance(source, Mapping):
        return source, "<dict>"
    if isinstance(source, str) and is_yaml_text(source):
        return parse_yaml(source), "<string>"
    if source is not None and not isinstance(source, str):
        raise DesignError(
            f"expected a path, YAML text, a dict or a Design, got {type(source).__name__}"
        )
    text, name = read_source(source)
    return parse_yaml(text, filename=name), name
