"""Load and validate design files: YAML text -> tuple of frozen ``Design`` objects.

Reading is ``yaml12.parse_yaml`` (PyYAML's safe loader with the YAML 1.2 core schema,
marks and limits); files over ``MAX_BYTES`` are refused before parsing. The blocks
(``mechanism:``, ``target:``, ``sampling:``) are read by ``sections``.
Validation checks types and domains field by field (the scheme's ``Field`` specs),
suggests the closest known key for typos, then runs the scheme's cross-field check.
Every failure raises ``DesignError`` naming the file, line, column and field.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ampcalc.designs.sections import (
    MECHANISM_KEYS,
    TARGET_FIELDS,
    parse_mechanism,
    parse_sampling,
    parse_target,
)
from ampcalc.designs.yaml12 import not_a_design, parse_yaml
from ampcalc.load.fields import (
    MarkedDict,
    Reader,
    check_keys,
    describe,
    field_value,
    mapping,
)
from ampcalc.load.files import note_stdin, nul_in_name, open_input, stdin, stdin_unreadable
from ampcalc.model.design import Design, Neighbours, Target
from ampcalc.model.errors import DesignError, Where, quote
from ampcalc.model.limits import limit
from ampcalc.schemes.base import Field, Scheme

MAX_BYTES = limit("file_bytes")
DEFAULT_FILE = "ampcalc.yaml"

DESIGN_KEYS = ("name", "mechanism", "sampling", "guarantee", "target")
MULTI_KEYS = ("designs", "mechanism", "guarantee", "target", "name")


TOP_KEYS = (*DESIGN_KEYS, *(k for k in MULTI_KEYS if k not in DESIGN_KEYS), "statistic")


def _shape(doc: Any) -> str:
    """What a document that is not a mapping is, in words (never its content)."""
    if isinstance(doc, str):
        return "it reads as plain text"
    if isinstance(doc, Sequence):
        return "it is a list"
    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        return "it is a number"
    return "it is a single value"


def _looks_like_a_design(doc: Mapping[Any, Any]) -> bool:
    """Whether one of the top-level keys is a design's (or close to one: a typo)."""

    for key in doc:
        if not isinstance(key, str):
            continue
        if key in TOP_KEYS or difflib.get_close_matches(key[:100], TOP_KEYS, n=1, cutoff=0.6):
            return True
    return False


# --------------------------------------------------------------------------------------
# Reading sources
# --------------------------------------------------------------------------------------


def read_source(path: str | Path | None) -> tuple[str, str]:
    """Read a design file (``-`` = standard input). Returns (text, display name)."""
    if path is None:
        path = DEFAULT_FILE
    name = str(path)
    if name == "-":
        note_stdin()
        try:
            raw = stdin().buffer.read(MAX_BYTES + 1)
        except OSError as exc:  # e.g. a descriptor open for writing only
            raise DesignError(stdin_unreadable(exc)) from None
        name = "<stdin>"
    else:
        if (nul := nul_in_name(name, "design file")) is not None:
            raise DesignError(nul)
        p = Path(name)
        try:
            if p.is_dir():
                raise DesignError("is a directory; expected a design file", where=Where(file=name))
            size = p.stat().st_size
            if size > MAX_BYTES:
                raise DesignError(
                    f"file is {size / 1e6:.0f} MB; design files are limited to "
                    f"{MAX_BYTES // (1024 * 1024)} MB",
                    where=Where(file=name),
                )
            with open_input(p, what="design file", binary=True, error=DesignError) as fh:
                raw = fh.read(MAX_BYTES + 1)  # a file growing while read stops here
        except FileNotFoundError:
            hint = None
            if path == DEFAULT_FILE:
                hint = "give a design file, or '-' to read standard input"
            raise DesignError("no such file", where=Where(file=name), hint=hint) from None
        except PermissionError:
            raise DesignError("permission denied", where=Where(file=name)) from None
        except OSError as err:
            raise DesignError(f"cannot read: {err.strerror}", where=Where(file=name)) from None
    if len(raw) > MAX_BYTES:
        raise DesignError(
            f"input exceeds {MAX_BYTES // (1024 * 1024)} MB; design files are small",
            where=Where(file=name),
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DesignError(
            f"not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start})",
            where=Where(file=name, line=line),
        ) from None
    if "\x00" in text:  # no text file holds NUL: /proc/self/environ, an .npy array, …
        line = text[: text.index("\x00")].count("\n") + 1
        raise DesignError(
            "a binary file (a NUL byte, U+0000), not YAML text",
            where=Where(file=name, line=line),
        )
    return text, name


# --------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------


_GUARANTEE = Field(
    name="guarantee",
    kind="choice",
    doc="relation of the guarantee",
    choices=("add-remove", "replace-one"),
)


def _parse_design(raw: Any, ctx: Reader, name: str, container: Any, key: Any) -> Design:
    """One design: its keys, ``name``, ``sampling``, ``mechanism``, ``guarantee`` and
    ``target`` in that order, each as its scheme wants it."""
    raw = mapping(raw, ctx, "", container, key, "a design")
    _check_design_keys(raw, ctx, container, key)
    if "name" in raw:
        name = _read_name(raw, ctx)
    scheme, params = parse_sampling(raw["sampling"], ctx, raw, "sampling")
    mechanism = _read_mechanism(raw, ctx, scheme, params, container, key)
    guarantee = _read_guarantee(raw, ctx, scheme) if "guarantee" in raw else None
    target = _read_target(raw, ctx, scheme, container, key)
    start = getattr(raw, "mark", None)
    return Design(
        name=name,
        scheme=scheme.name,
        params=params,
        mechanism=mechanism,
        guarantee=guarantee,
        target=target,
        where=Where(
            file=ctx.filename,
            line=start[0] if start else None,
            column=start[1] if start else None,
            field=ctx.prefix.rstrip(".") or None,
        ),
        field_where=dict(ctx.field_where),
    )


def _check_design_keys(raw: Mapping[Any, Any], ctx: Reader, container: Any, key: Any) -> None:
    """A design's keys are ``DESIGN_KEYS`` (no plan's ``statistic:``), ``sampling`` among
    them."""
    if "statistic" in raw:
        raise DesignError(
            "`statistic:` belongs to an accuracy plan, not a design for bound/invert",
            where=ctx.where("statistic", raw, "statistic"),
            hint="run `ampcalc plan FILE` on it",
        )
    check_keys(raw, DESIGN_KEYS, ctx, "", "a design")
    if "sampling" not in raw:
        raise DesignError(
            "missing required key 'sampling' (a block with `scheme:` and its parameters)",
            where=ctx.where("", container, key),
        )


def _read_name(raw: Mapping[Any, Any], ctx: Reader) -> str:
    """``name:``: text (a number is read as its text)."""
    nm = raw["name"]
    if not isinstance(nm, (str, int, float)) or isinstance(nm, bool):
        raise DesignError(
            f"expected a name (text), got {describe(nm)}",
            where=ctx.where("name", raw, "name"),
        )
    return str(nm)


def _read_mechanism(
    raw: Mapping[Any, Any], ctx: Reader, scheme: Scheme, params: Any, container: Any, key: Any
) -> Any:
    """``mechanism:`` as the scheme takes it: none (it builds its own), its own form, or
    the common one."""
    form = scheme.mechanism_form
    if form == "none":
        if "mechanism" in raw:
            raise DesignError(
                f"scheme {scheme.name!r} builds its mechanism to meet the `target:` block; "
                "it takes no `mechanism:`",
                where=ctx.where("mechanism", raw, "mechanism"),
            )
        return None
    if "mechanism" not in raw:
        raise DesignError(
            "missing required key 'mechanism' (M's `epsilon`, and `neighbours`)",
            where=ctx.where("", container, key),
        )
    if form == "custom":
        assert scheme.parse_mechanism is not None
        return scheme.parse_mechanism(raw["mechanism"], ctx, params)
    return parse_mechanism(raw["mechanism"], ctx, raw, "mechanism")


def _read_guarantee(raw: Mapping[Any, Any], ctx: Reader, scheme: Scheme) -> Neighbours:
    """``guarantee:``: a relation the scheme gives guarantees under."""
    where = ctx.where("guarantee", raw, "guarantee")
    guarantee = Neighbours(field_value(_GUARANTEE, raw["guarantee"], where))
    if guarantee not in scheme.guarantees:
        allowed = ", ".join(str(x) for x in scheme.guarantees)
        raise DesignError(
            f"scheme {scheme.name!r} gives guarantees under: {allowed}; no valid "
            f"conversion to {guarantee} is known for it",
            where=ctx.where("guarantee", raw, "guarantee"),
        )
    return guarantee


def _read_target(
    raw: Mapping[Any, Any], ctx: Reader, scheme: Scheme, container: Any, key: Any
) -> Target | None:
    """``target:``, checked by a scheme calibrated to it (which needs one with ε′)."""
    target = parse_target(raw["target"], ctx, raw, "target") if "target" in raw else None
    check_target = scheme.check_target
    if check_target is not None and "target" in raw:
        # schemes calibrated to the target validate it (e.g. δ′ > 0) at its YAML line
        check_target(target, ctx, raw["target"])
    if scheme.needs_target and (target is None or target.epsilon_prime is None):
        raise DesignError(
            f"scheme {scheme.name!r} is calibrated to a target: add a top-level "
            "`target: {epsilon_prime: ..., delta_prime: ...}` block",
            where=ctx.where("", container, key),
        )
    return target


_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _split_path(path: str) -> list[str | int]:
    parts: list[str | int] = []
    pos = 0
    for m in _SEGMENT.finditer(path):
        if m.start() != pos and path[pos : m.start()] != ".":
            raise ValueError(path)
        parts.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if pos != len(path) or not parts:
        raise ValueError(path)
    return parts


def parse_override(text: str) -> tuple[str, Any]:
    """Parse one ``--set PATH=VALUE`` (VALUE is read as YAML, so lists work)."""
    where = Where(file="--set", field=text)
    if "=" not in text:
        raise DesignError("expected PATH=VALUE, e.g. sampling.sample=500", where=where)
    path, value_text = text.split("=", 1)
    path = path.strip()
    try:
        _split_path(path)
    except ValueError:
        raise DesignError(
            f"{quote(path)} is not a field path; expected e.g. sampling.sample or "
            "designs[1].mechanism.epsilon",
            where=where,
        ) from None
    value = parse_yaml(value_text, filename="--set")
    return path, value


def _apply(doc: Any, path: str, value: Any) -> None:
    parts = _split_path(path)
    node = doc
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list) and not isinstance(part, int):
            raise DesignError(
                f"cannot set key {quote(str(part))} inside a list; expected an index [n]",
                where=Where(file="--set", field=path),
            )
        nxt = node[part] if _has(node, part) else None
        if nxt is None:
            if isinstance(part, int):
                raise DesignError(
                    f"no item [{part}] to set", where=Where(file="--set", field=path)
                )
            nxt = MarkedDict()
            node[part] = nxt
        if not isinstance(nxt, (dict, list)):
            raise DesignError(
                f"cannot set inside {'.'.join(str(p) for p in parts[: i + 1])}: it is "
                f"{describe(nxt)}",
                where=Where(file="--set", field=path),
            )
        node = nxt
    last = parts[-1]
    if isinstance(node, list):
        if not isinstance(last, int):
            raise DesignError(
                f"cannot set key {quote(str(last))} inside a list; expected an index [n]",
                where=Where(file="--set", field=path),
            )
        if not 0 <= last < len(node):
            raise DesignError(f"no item [{last}] to set", where=Where(file="--set", field=path))
    elif isinstance(last, int):
        raise DesignError("expected a key, got an index", where=Where(file="--set", field=path))
    node[last] = value


def _has(node: Any, part: str | int) -> bool:
    if isinstance(node, dict):
        return part in node
    if isinstance(node, list) and isinstance(part, int):
        return 0 <= part < len(node)
    return False


def load_document(
    doc: Any,
    *,
    filename: str = "<string>",
    overrides: Sequence[str] = (),
) -> tuple[Design, ...]:
    """Validate an already parsed document (a mapping) into designs."""
    stem = Path(filename).stem if filename not in ("<stdin>", "<string>") else "design"
    if doc is None:
        raise DesignError(
            "the file is empty; expected a design (a mapping with `mechanism:` and "
            "`sampling:`) or `designs:`",
            where=Where(file=filename),
        )
    if not isinstance(doc, Mapping):
        raise not_a_design(filename, _shape(doc))
    if doc and not _looks_like_a_design(doc):  # e.g. a shadow or .env file's `KEY:` lines
        raise not_a_design(filename, "none of its top-level keys is a design's")
    top = Reader(filename, "", {})
    parsed = [parse_override(o) for o in overrides]
    texts = dict(zip((path for path, _ in parsed), overrides, strict=True))

    entries: list[tuple[Any, str, str]] = []  # (raw design, default name, prefix)
    if "designs" in doc:
        check_keys(doc, MULTI_KEYS, top, "", "a file with `designs:`")
        items = doc["designs"]
        if not isinstance(items, list) or not items:
            raise DesignError(
                "expected a non-empty list of designs", where=top.where("designs", doc, "designs")
            )
        for i, item in enumerate(items):
            item_ctx = Reader(filename, f"designs[{i}].", {})
            item = mapping(item, item_ctx, "", items, i, "a design")
            merged: Any = copy.copy(item)  # a YAML mapping (a MarkedDict from a file)
            if isinstance(item, MarkedDict):
                merged.key_marks = dict(item.key_marks)
            for inherited in ("mechanism", "target", "guarantee"):
                if inherited not in item and inherited in doc:
                    merged[inherited] = doc[inherited]
                    if isinstance(merged, MarkedDict) and isinstance(doc, MarkedDict):
                        merged.key_marks[inherited] = doc.key_marks.get(inherited, (None, None))
            entries.append((merged, f"{stem}[{i}]", f"designs[{i}]."))
    else:
        entries.append((doc, stem, ""))

    for path, _ in parsed:
        m = re.match(r"designs\[(\d+)\]\.", path)
        if m and int(m.group(1)) >= len(entries):
            raise DesignError(
                f"the file holds {len(entries)} design(s); there is no designs[{m.group(1)}]",
                where=Where(file="--set", field=path),
            )
    designs: list[Design] = []
    for index, (raw, default_name, prefix) in enumerate(entries):
        over_where: dict[str, Where] = {}
        over_text: dict[str, str] = {}
        if parsed:
            raw = copy.deepcopy(raw)
            for path, value in parsed:
                rel = path
                m = re.match(r"designs\[(\d+)\]\.(.+)$", path)
                if m:
                    if not prefix or int(m.group(1)) != index:
                        if not prefix and int(m.group(1)) != 0:
                            raise DesignError(
                                "the file holds one design; there is no designs[...] to set",
                                where=Where(file="--set", field=path),
                            )
                        if prefix:
                            continue
                    rel = m.group(2)
                _apply(raw, rel, value)
                over_where[rel] = Where(file="--set", field=path)
                over_text[rel] = texts[path].strip()
        ctx = Reader(filename, prefix, over_where, over_text)
        designs.append(_parse_design(raw, ctx, default_name, None, None))
    return tuple(designs)


def load_designs(
    source: str | Path | Mapping[str, Any] | None = None,
    *,
    overrides: Sequence[str] = (),
) -> tuple[Design, ...]:
    """Load and validate designs from a path, ``-`` (stdin), YAML text, or a dict.

    Args:
        source: a file path (default ``ampcalc.yaml``), ``-``, YAML text (a string
            containing a newline), or an already parsed mapping.
        overrides: ``PATH=VALUE`` strings, as ``--set``.
    Returns:
        The validated designs, in file order.
    Raises:
        DesignError: anything unreadable or invalid, with file, line and field.
    """
    if isinstance(source, Mapping):
        return load_document(source, filename="<dict>", overrides=overrides)
    if isinstance(source, str) and "\n" in source:
        return load_document(parse_yaml(source), filename="<string>", overrides=overrides)
    text, name = read_source(source)
    return load_document(parse_yaml(text, filename=name), filename=name, overrides=overrides)


__all__ = [
    "DEFAULT_FILE",
    "DESIGN_KEYS",
    "MAX_BYTES",
    "MECHANISM_KEYS",
    "MULTI_KEYS",
    "TARGET_FIELDS",
    "TOP_KEYS",
    "load_designs",
    "load_document",
    "not_a_design",
    "parse_mechanism",
    "parse_override",
    "parse_sampling",
    "parse_target",
    "parse_yaml",
    "read_source",
]
