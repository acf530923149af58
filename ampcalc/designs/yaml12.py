"""YAML for design files: PyYAML's safe loader with the YAML 1.2 core schema, marks and
limits.

The only module that imports yaml. ``parse_yaml`` extends the safe loader to
 - resolve plain scalars by the YAML 1.2 core schema (``1e-6`` and ``0100`` are the
   numbers 1e-06 and 100; ``0b101``, ``1_000``, ``1:40``, ``yes`` and dates are strings);
 - remember the line and column of every mapping key and list item (``MarkedDict``,
   ``MarkedList``), so errors point at the spot;
 - refuse duplicate keys, alias bombs (> ``MAX_ALIASES`` aliases), huge documents
   (> ``MAX_NODES`` nodes) and deep nesting (> ``MAX_DEPTH`` levels).
Every failure raises ``DesignError`` naming the file, line and column.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from ampcalc.load.fields import (
    MarkedDict,
    MarkedList,
)
from ampcalc.model.errors import DesignError, Where, quote
from ampcalc.model.limits import LIMITS, limit

MAX_ALIASES = limit("yaml_aliases")
MAX_NODES = limit("yaml_nodes")
MAX_DEPTH = limit("yaml_depth")


# The YAML 1.2 core schema (YAML 1.2.2, §10.3.2), the only plain scalars that are not
# strings. YAML 1.1's extra forms (0b101, 0777 as octal, 1_000, 1:40 in base 60,
# yes/no/on/off, dates) are strings here; a number field given one says how to write it
# (``model.errors.describe``). docs/cli-conventions.md states this grammar.
_NULL_12 = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL_12 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_12 = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT_12 = re.compile(
    r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


try:  # libyaml scans and parses ~100x faster; events and marks are the same
    from yaml._yaml import CParser as _Parser  # what yaml.cyaml's loaders are built on

    _Scanning: tuple[type, ...] = (_Parser,)
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _Scanning = (yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser)


class _Loader(
    yaml.composer.Composer,
    *_Scanning,  # type: ignore[misc]  # bases chosen at import: libyaml or pure Python
    yaml.constructor.SafeConstructor,
    yaml.resolver.Resolver,
):
    """Safe loader with the YAML 1.2 core schema, marks, and limits (nodes, aliases, depth)."""

    def __init__(self, stream: str) -> None:
        for base in _Scanning:
            base.__init__(self, stream)  # type: ignore[misc]  # each scanning base, explicitly
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._aliases = 0
        self._nodes = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                event = self.peek_event()
                raise _LimitError(
                    f"more than {MAX_ALIASES} YAML aliases; refusing a document that could "
                    "expand without bound",
                    event.start_mark,
                )
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _LimitError(
                f"more than {MAX_NODES:,} YAML nodes; a design is far smaller "
                f"({LIMITS['yaml_nodes'].alternative})",
                self.peek_event().start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _LimitError(
                    f"YAML nested more than {MAX_DEPTH} levels deep; a design is far flatter",
                    self.peek_event().start_mark,
                )
            return yaml.composer.Composer.compose_node(self, parent, index)
        finally:
            self._depth -= 1


class _LimitError(Exception):
    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


def _construct_null(loader: _Loader, node: yaml.ScalarNode) -> None:
    _core(loader, node, _NULL_12, "null")


def _construct_bool(loader: _Loader, node: yaml.ScalarNode) -> bool:
    return _core(loader, node, _BOOL_12, "boolean").lower() == "true"


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    text = _core(loader, node, _INT_12, "integer")
    base = {"0o": 8, "0x": 16}.get(text[:2], 10)
    return int(text if base == 10 else text[2:], base)


def _construct_float(loader: _Loader, node: yaml.ScalarNode) -> float:
    text = _core(loader, node, _FLOAT_12, "float").lower()
    if text.endswith(".inf"):
        return -math.inf if text[0] == "-" else math.inf
    return math.nan if text == ".nan" else float(text)


def _core(loader: _Loader, node: yaml.ScalarNode, rx: re.Pattern[str], kind: str) -> str:
    """The text of a scalar resolved (or explicitly tagged) as a core-schema ``kind``;
    a tagged scalar outside the core grammar (``!!int 0b101``) is refused at its place."""
    text = str(loader.construct_scalar(node))
    if not rx.match(text):
        raise yaml.constructor.ConstructorError(
            None, None, f"{text!r} is not a YAML 1.2 {kind}", node.start_mark
        )
    return text


# Only the core schema's resolvers, and YAML 1.1's merge key `<<` (designs may share
# blocks through anchors and merges): no 1.1 bool, int, float, timestamp or value forms.
_Loader.yaml_implicit_resolvers = {}
_Loader.add_implicit_resolver("tag:yaml.org,2002:null", _NULL_12, ["~", "n", "N", ""])
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL_12, list("tTfF"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", _INT_12, list("-+0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))
_Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])
_Loader.yaml_constructors = dict(yaml.SafeLoader.yaml_constructors)
_Loader.add_constructor("tag:yaml.org,2002:null", _construct_null)
_Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def _mark(node: yaml.Node) -> tuple[int, int]:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Any:
    data = MarkedDict()
    data.mark = _mark(node)
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise _LimitError("a mapping key must be a plain value", key_node.start_mark) from None
        if key in data:
            raise _LimitError(f"duplicate key {quote(str(key))}", key_node.start_mark)
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_marks[key] = _mark(key_node)


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> Any:
    data = MarkedList()
    data.mark = _mark(node)
    yield data
    for item in node.value:
        data.append(loader.construct_object(item, deep=True))
        data.item_marks.append(_mark(item))


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def _char(c: Any) -> str:
    code = c if isinstance(c, int) else ord(c) if isinstance(c, str) and len(c) == 1 else None
    return f"character U+{code:04X}" if code is not None else "a control character"


def parse_yaml(text: str, *, filename: str = "<string>") -> Any:
    """Parse YAML text safely, keeping marks; errors become ``DesignError``."""
    try:
        loader = _Loader(text)
    except UnicodeError:
        raise DesignError(
            "not valid UTF-8 text (undecodable bytes)", where=Where(file=filename)
        ) from None
    try:
        doc = loader.get_single_data()
        if isinstance(doc, str) and filename != "--set" and "\n" in text.strip():
            raise _plain_text(text, filename)
        return doc
    except _LimitError as err:
        raise DesignError(
            err.message,
            where=Where(file=filename, line=err.mark.line + 1, column=err.mark.column + 1),
        ) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or "invalid YAML"
        if err.context:
            problem = f"{err.context}: {problem}"
        problem = " ".join(problem.split())
        raise DesignError(
            f"YAML syntax error: {problem}",
            where=Where(
                file=filename,
                line=mark.line + 1 if mark else None,
                column=mark.column + 1 if mark else None,
            ),
        ) from None
    except yaml.reader.ReaderError as err:
        line = text[: err.position].count("\n") + 1 if isinstance(err.position, int) else None
        raise DesignError(
            f"YAML error: {_char(err.character)} is not allowed in YAML text",
            where=Where(file=filename, line=line),
        ) from None
    except yaml.YAMLError as err:
        problem = " ".join(str(err).split())
        raise DesignError(f"YAML error: {problem}", where=Where(file=filename)) from None
    except RecursionError:
        raise DesignError("YAML nested too deeply", where=Where(file=filename)) from None
    except ValueError:  # e.g. an integer of more than 4300 digits
        raise DesignError(
            "YAML error: a value that cannot be read (an integer of more than 4300 digits?)",
            where=Where(file=filename),
        ) from None
    except UnicodeError:
        raise DesignError(
            "not valid UTF-8 text (undecodable bytes)", where=Where(file=filename)
        ) from None
    finally:
        loader.dispose()


def _plain_text(text: str, filename: str) -> DesignError:
    """Several lines of text that YAML reads as one string: not a design (a data file,
    a password or ``.env`` file given by mistake). Its content is not quoted."""
    data = Path(filename).suffix.lower() in (".csv", ".tsv", ".txt")
    lines = sum(1 for ln in text.splitlines() if ln.strip() and ln.lstrip()[0] != "#")
    return not_a_design(
        filename,
        f"it reads as {lines} lines of plain text",
        hint=(
            "this looks like a data file; a design names its data files in `file:`, "
            "`records:` or `data:`"
            if data
            else None
        ),
    )


#: the top-level keys of a design file (one design, or `designs:`) and of an accuracy plan
def not_a_design(filename: str, got: str, hint: str | None = None) -> DesignError:
    """The error for a file that is plainly not a design (plain text, a list, a mapping
    of none of a design's keys): said so, without quoting any of its content."""
    return DesignError(
        "does not look like an ampcalc design (expected a design: a YAML mapping with "
        f"keys such as `mechanism:` and `sampling:`, or `designs:`); {got}",
        where=Where(file=filename),
        hint=hint,
    )
