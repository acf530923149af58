"""Load and validate design files: YAML text -> tuple of frozen ``Design`` objects.

The only module that imports yaml. Loading is PyYAML's safe loader, extended to
 - resolve plain scalars by the YAML 1.2 core schema (``1e-6`` and ``0100`` are the
   numbers 1e-06 and 100; ``0b101``, ``1_000``, ``1:40``, ``yes`` and dates are strings);
 - remember the line and column of every mapping key, so errors point at the spot;
 - refuse duplicate keys, alias bombs (> ``MAX_ALIASES`` aliases), huge documents
   (> ``MAX_NODES`` nodes) and files over ``MAX_BYTES``.
Validation checks types and domains field by field (the scheme's ``Field`` specs),
suggests the closest known key for typos, then runs the scheme's cross-field check.
Every failure raises ``DesignError`` naming the file, line, column and field.
"""

from __future__ import annotations

import copy
import difflib
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ampcalc import schemes
from ampcalc.accounting.names import is_named
from ampcalc.load.fields import (
    MarkedDict,
    MarkedList,
    Reader,
    check_keys,
    describe,
    field_value,
    mapping,
    number,
    read_fields,
)
from ampcalc.load.files import note_stdin, nul_in_name, open_input, stdin, stdin_unreadable
from ampcalc.model.design import (
    MAX_EPSILON,
    Design,
    Mechanism,
    Neighbours,
    Release,
    Target,
    check_epsilon,
    check_epsilon_limit,
)
from ampcalc.model.errors import AmpcalcError, DesignError, Where, quote
from ampcalc.model.limits import LIMITS, limit
from ampcalc.schemes.base import Field, Scheme

MAX_BYTES = limit("file_bytes")
MAX_ALIASES = limit("yaml_aliases")
MAX_NODES = limit("yaml_nodes")
MAX_DEPTH = limit("yaml_depth")
MAX_RELEASES = limit("releases")
DEFAULT_FILE = "ampcalc.yaml"

DESIGN_KEYS = ("name", "mechanism", "sampling", "guarantee", "target")
MULTI_KEYS = ("designs", "mechanism", "guarantee", "target", "name")
MECHANISM_KEYS = (
    "epsilon",
    "delta",
    "neighbours",
    "epsilon_replace_one",
    "delta_replace_one",
    "releases",
    "group_size",
)


# --------------------------------------------------------------------------------------
# YAML with marks
# --------------------------------------------------------------------------------------


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
TOP_KEYS = (*DESIGN_KEYS, *(k for k in MULTI_KEYS if k not in DESIGN_KEYS), "statistic")


def not_a_design(filename: str, got: str, hint: str | None = None) -> DesignError:
    """The error for a file that is plainly not a design (plain text, a list, a mapping
    of none of a design's keys): said so, without quoting any of its content."""
    return DesignError(
        "does not look like an ampcalc design (expected a design: a YAML mapping with "
        f"keys such as `mechanism:` and `sampling:`, or `designs:`); {got}",
        where=Where(file=filename),
        hint=hint,
    )


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
# Mechanism, target, sampling
# --------------------------------------------------------------------------------------

_EPS_R = Field(
    name="epsilon_replace_one",
    kind="float",
    doc="M's replace-one ε",
    low=0.0,
    low_open=True,
    high=MAX_EPSILON,
)
_GROUP = Field(name="group_size", kind="int", doc="records of one unit that change", low=1)
_NEIGHBOURS = Field(
    name="neighbours",
    kind="choice",
    doc="relation M's ε holds under",
    choices=tuple(n.value for n in Neighbours),
)


def _delta_field(name: str, scheme: Scheme | None) -> Field:
    high = getattr(scheme, "max_delta", 1.0)
    return Field(name=name, kind="float", doc="δ", low=0.0, high=high, high_open=True)


def parse_mechanism(
    data: Any, ctx: Reader, scheme: Scheme | None, container: Any, key: Any
) -> Mechanism:
    """Validate a ``mechanism:`` block (the ``epsilon``/``releases`` form, or a named
    mechanism: ``ampcalc.accounting.parse``)."""
    data = mapping(data, ctx, "mechanism", container, key, "a mechanism")

    if is_named(data):
        from ampcalc.accounting import parse as named  # lazy: start-up (bound)

        return named.parse_named(data, ctx, container, key)
    check_keys(data, MECHANISM_KEYS, ctx, "mechanism", "mechanism")
    has_eps, has_rel = "epsilon" in data, "releases" in data
    if has_eps and has_rel:
        raise DesignError(
            "give either `epsilon` or `releases`, not both",
            where=ctx.where("mechanism.releases", data, "releases"),
        )
    if not has_eps and not has_rel:
        raise DesignError(
            "missing required key 'epsilon' (M's ε, a number > 0), or `releases` "
            "(a list of the ε of each analysis run on the sample)",
            where=ctx.where("mechanism", container, key),
        )
    dfield = _delta_field("delta", scheme)
    releases: tuple[Release, ...] | None = None
    if has_eps:
        eps = check_epsilon(data["epsilon"], where=ctx.where("mechanism.epsilon", data, "epsilon"))
        delta = (
            number(data["delta"], dfield, ctx.where("mechanism.delta", data, "delta"))
            if "delta" in data
            else 0.0
        )
    else:
        rel = data["releases"]
        rpath = "mechanism.releases"
        if not isinstance(rel, Sequence) or isinstance(rel, (str, bytes)) or not rel:
            raise DesignError(
                "expected a non-empty list of releases (numbers ε, or {epsilon, delta})",
                where=ctx.where(rpath, data, "releases"),
            )
        if len(rel) > MAX_RELEASES:
            raise DesignError(
                f"more than {MAX_RELEASES} releases", where=ctx.where(rpath, data, "releases")
            )
        items: list[Release] = []
        for i, item in enumerate(rel):
            ipath = f"{rpath}[{i}]"
            if isinstance(item, Mapping):
                check_keys(item, ("epsilon", "delta"), ctx, ipath, "a release")
                if "epsilon" not in item:
                    raise DesignError(
                        "missing required key 'epsilon'", where=ctx.where(ipath, rel, i)
                    )
                e = check_epsilon(
                    item["epsilon"], where=ctx.where(f"{ipath}.epsilon", item, "epsilon")
                )
                d = (
                    number(item["delta"], dfield, ctx.where(f"{ipath}.delta", item, "delta"))
                    if "delta" in item
                    else 0.0
                )
            else:
                e = check_epsilon(item, where=ctx.where(ipath, rel, i))
                d = 0.0
            items.append(Release(epsilon=e, delta=d))
        if "delta" in data:
            raise DesignError(
                "with `releases`, give each release's δ inside it ({epsilon, delta})",
                where=ctx.where("mechanism.delta", data, "delta"),
            )
        releases = tuple(items)
        eps = math.fsum(r.epsilon for r in items)
        check_epsilon_limit(eps, where=ctx.where(rpath, data, "releases"))
        delta = math.fsum(r.delta for r in items)
        if not delta < getattr(scheme, "max_delta", 1.0):
            raise DesignError(
                f"the releases' δ add up to {delta:g}; expected {dfield.domain()}",
                where=ctx.where(rpath, data, "releases"),
            )
    neighbours = Neighbours.ADD_REMOVE
    if "neighbours" in data:
        neighbours = Neighbours(
            field_value(
                _NEIGHBOURS,
                data["neighbours"],
                ctx.where("mechanism.neighbours", data, "neighbours"),
            )
        )
    eps_r = delta_r = None
    for name in ("epsilon_replace_one", "delta_replace_one"):
        if name in data and neighbours is not Neighbours.ADD_REMOVE:
            raise DesignError(
                f"`{name}` is for `neighbours: add-remove` only; with `neighbours: "
                f"{neighbours}` M's replace-one parameters are `epsilon`/`delta`",
                where=ctx.where(f"mechanism.{name}", data, name),
            )
    if "epsilon_replace_one" in data:
        eps_r = number(
            data["epsilon_replace_one"],
            _EPS_R,
            ctx.where("mechanism.epsilon_replace_one", data, "epsilon_replace_one"),
        )
    if "delta_replace_one" in data:
        if eps_r is None:
            raise DesignError(
                "`delta_replace_one` goes with an explicit `epsilon_replace_one`",
                where=ctx.where("mechanism.delta_replace_one", data, "delta_replace_one"),
            )
        delta_r = number(
            data["delta_replace_one"],
            _delta_field("delta_replace_one", scheme),
            ctx.where("mechanism.delta_replace_one", data, "delta_replace_one"),
        )
    if eps_r is not None and delta > 0 and delta_r is None:
        raise DesignError(
            "M has δ > 0 and an explicit `epsilon_replace_one`: state its replace-one δ as "
            "`delta_replace_one` too (it does not follow from the add-remove δ)",
            where=ctx.where("mechanism.epsilon_replace_one", data, "epsilon_replace_one"),
        )
    group_size = 1
    if "group_size" in data:
        gwhere = ctx.where("mechanism.group_size", data, "group_size")
        group_size = int(number(data["group_size"], _GROUP, gwhere))
    return Mechanism(
        epsilon=eps,
        delta=delta,
        neighbours=neighbours,
        epsilon_replace_one=eps_r,
        delta_replace_one=delta_r,
        releases=releases,
        group_size=group_size,
    )


#: the target block's fields; ``--target``/``--target-delta`` are checked against them too
TARGET_FIELDS = (
    Field(
        name="epsilon_prime",
        kind="float",
        doc="target ε′",
        low=0.0,
        low_open=True,
        high=float(limit("epsilon")),
    ),
    Field(name="delta_prime", kind="float", doc="target δ′", low=0.0, high=1.0),
)


def parse_target(data: Any, ctx: Reader, container: Any, key: Any) -> Target:
    """Validate a top-level ``target: {epsilon_prime, delta_prime}`` block."""
    data = mapping(data, ctx, "target", container, key, "a target")
    values = read_fields(data, TARGET_FIELDS, ctx, "target", "target")
    return Target(epsilon_prime=values["epsilon_prime"], delta_prime=values["delta_prime"])


def parse_sampling(data: Any, ctx: Reader, container: Any, key: Any) -> tuple[Scheme, Any]:
    """Validate ``sampling:`` against its scheme's fields; returns (scheme, Params)."""
    data = mapping(data, ctx, "sampling", container, key, "a sampling block")
    if "scheme" not in data:
        raise DesignError(
            f"missing required key 'scheme' (one of: {', '.join(schemes.names())})",
            where=ctx.where("sampling", container, key),
        )
    name = data["scheme"]
    swhere = ctx.where("sampling.scheme", data, "scheme")
    if not isinstance(name, str):
        raise DesignError(
            f"expected a scheme name (one of: {', '.join(schemes.names())}), got {describe(name)}",
            where=swhere,
        )
    try:
        scheme = schemes.get(name, where=swhere)
    except DesignError:
        raise
    except AmpcalcError as err:
        raise DesignError(err.message, where=err.where, hint=err.hint) from None
    rest = {k: v for k, v in data.items() if k != "scheme"}
    marked = MarkedDict(rest)
    if isinstance(data, MarkedDict):
        marked.key_marks = data.key_marks
        marked.mark = data.mark
    specs = (Field(name="scheme", kind="str", doc="scheme name"), *scheme.fields)
    values = read_fields(marked, specs, ctx, "sampling", f"sampling ({name})")
    values.pop("scheme", None)
    params = (
        scheme.parse_params(values, ctx)
        if scheme.parse_params is not None
        else scheme.params(**values)
    )
    for problem in scheme.check(params):
        raise DesignError(
            problem.message,
            where=ctx.where(f"sampling.{problem.field}", data, problem.field),
        )
    return scheme, params


# --------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------


def _parse_design(raw: Any, ctx: Reader, name: str, container: Any, key: Any) -> Design:
    raw = mapping(raw, ctx, "", container, key, "a design")
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
    if "name" in raw:
        nm = raw["name"]
        if not isinstance(nm, (str, int, float)) or isinstance(nm, bool):
            raise DesignError(
                f"expected a name (text), got {describe(nm)}",
                where=ctx.where("name", raw, "name"),
            )
        name = str(nm)
    scheme, params = parse_sampling(raw["sampling"], ctx, raw, "sampling")
    mechanism: Any = None
    form = scheme.mechanism_form
    if form == "none":
        if "mechanism" in raw:
            raise DesignError(
                f"scheme {scheme.name!r} builds its mechanism to meet the `target:` block; "
                "it takes no `mechanism:`",
                where=ctx.where("mechanism", raw, "mechanism"),
            )
    elif "mechanism" not in raw:
        raise DesignError(
            "missing required key 'mechanism' (M's `epsilon`, and `neighbours`)",
            where=ctx.where("", container, key),
        )
    elif form == "custom":
        assert scheme.parse_mechanism is not None
        mechanism = scheme.parse_mechanism(raw["mechanism"], ctx, params)
    else:
        mechanism = parse_mechanism(raw["mechanism"], ctx, scheme, raw, "mechanism")
    guarantee = None
    if "guarantee" in raw:
        g = field_value(
            Field(
                name="guarantee",
                kind="choice",
                doc="relation of the guarantee",
                choices=("add-remove", "replace-one"),
            ),
            raw["guarantee"],
            ctx.where("guarantee", raw, "guarantee"),
        )
        guarantee = Neighbours(g)
        if guarantee not in scheme.guarantees:
            allowed = ", ".join(str(x) for x in scheme.guarantees)
            raise DesignError(
                f"scheme {scheme.name!r} gives guarantees under: {allowed}; no valid "
                f"conversion to {guarantee} is known for it",
                where=ctx.where("guarantee", raw, "guarantee"),
            )
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
