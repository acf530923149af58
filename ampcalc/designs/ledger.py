"""Budget ledgers: a YAML ledger file -> a validated, frozen ``Ledger``.

A ledger lists entries, each a design (a path to a design file, or inline) with a
``count`` of identical releases, each release on its own, independently drawn sample::

    target: {epsilon: 3.0, delta: 1e-6}   # the budget; epsilon is optional
    neighbours: add-remove                # one relation for every entry
    discretization: 1e-4                  # the accountant's interval (optional)
    entries:
      - {name: monthly wave, design: wave.yaml, count: 12}
      - design: {mechanism: {gaussian: {sigma: 1.0}}, sampling: {scheme: poisson, rate: 0.01}}
        count: 1000

Reading checks every field as a design file's are checked (``load.fields``); a failure
is a ``DesignError`` at the file, line, column and field. ``analyses.budget`` composes
the ``Ledger`` this returns.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ampcalc.designs.document import (
    _apply,
    load_designs,
    load_document,
    parse_override,
    parse_yaml,
    read_source,
)
from ampcalc.load.fields import Field, Reader, check_keys, field_value, mapping, number
from ampcalc.load.files import nul_in_name
from ampcalc.model.design import Design, Neighbours
from ampcalc.model.errors import DesignError, Where

#: the accountant's default discretisation interval (dp_accounting's default)
DEFAULT_DISCRETIZATION = 1e-4
#: the intervals accepted (the ledger's ``discretization:`` and ``--discretization``)
DISCRETIZATION_RANGE = (1e-7, 0.1)

LEDGER_KEYS = ("target", "neighbours", "discretization", "entries", "name")
ENTRY_KEYS = ("name", "design", "index", "count", "delta_prime")

#: ``target.epsilon`` (and ``budget --target``): the ε budget
EPSILON_BUDGET = Field(name="epsilon", kind="float", doc="ε budget", low=0.0, low_open=True)
#: ``discretization`` (and ``budget --discretization``): the accountant's interval
DISCRETIZATION = Field(
    name="discretization",
    kind="float",
    doc="interval",
    low=DISCRETIZATION_RANGE[0],
    high=DISCRETIZATION_RANGE[1],
)
_DELTA = Field(name="delta", kind="float", doc="total δ", low=0.0, high=1.0, high_open=True)
_NEIGHBOURS = Field(
    name="neighbours",
    kind="choice",
    doc="relation of the total",
    choices=("add-remove", "replace-one"),
)
_COUNT = Field(name="count", kind="int", doc="releases", low=1, high=10**7)
_DELTA_PRIME = Field(name="delta_prime", kind="float", doc="δ′", low=0.0, high=1.0)


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One ledger line: ``count`` releases of ``design``, each on its own sample.

    Attributes:
        name: the entry's ``name:`` (the design's name when absent).
        design: the one validated design it releases.
        count: identical releases, each on an independently drawn sample.
        delta_prime: the δ′ to read the entry's guarantee at (``None``: its own).
        where: the entry's ``design:`` in the ledger file (for messages).
    """

    name: str
    design: Design
    count: int
    delta_prime: float | None = None
    where: Where | None = None


@dataclass(frozen=True, kw_only=True)
class Ledger:
    """A validated budget file.

    Attributes:
        name: the ledger's ``name:`` (the file's stem when absent).
        entries: its entries, in file order (at least one).
        delta: the total δ the ε is reported at, in [0, 1).
        epsilon: the ε budget (``None``: no budget stated).
        neighbours: the one relation every entry's guarantee holds under.
        discretization: the PLD accountant's interval, in ``DISCRETIZATION_RANGE``.
    """

    name: str
    entries: tuple[Entry, ...]
    delta: float
    epsilon: float | None
    neighbours: Neighbours
    discretization: float


def load_ledger(path: str, overrides: Sequence[str] = ()) -> Ledger:
    """Read and validate a budget file (``-``: standard input).

    Args:
        path: the ledger file.
        overrides: ``--set PATH=VALUE`` strings (``split_overrides`` says where each
            goes: the ledger's own fields, one entry's design, or every entry's design).
    Returns:
        The validated ledger.
    Raises:
        DesignError: unreadable or invalid, at the file, line and field.
    """

    text, name = read_source(path)
    return parse_ledger(parse_yaml(text, filename=name), name, overrides)


def parse_ledger(doc: Any, name: str, overrides: Sequence[str] = ()) -> Ledger:
    """Validate a parsed ledger document (``name``: its file, for messages and for the
    entries' relative ``design:`` paths) into a ``Ledger``."""
    own, per_entry, every = split_overrides(overrides)
    if own:
        doc = mapping(doc, Reader(name, "", {}), "", None, None, "a budget ledger")
        doc = copy.deepcopy(doc)
        for path, value, _ in own:
            _apply(doc, path, value)
    over_where = {p: Where(file="--set", field=p) for p, _, _ in own}
    ctx = Reader(name, "", over_where, {p: text for p, _, text in own})
    doc = mapping(doc, ctx, "", None, None, "a budget ledger (`entries:` and `target:`)")
    check_keys(doc, LEDGER_KEYS, ctx, "", "a budget ledger")
    delta, eps_budget = _read_target(doc, ctx)
    neighbours = Neighbours.ADD_REMOVE
    if "neighbours" in doc:
        neighbours = Neighbours(
            field_value(_NEIGHBOURS, doc["neighbours"], ctx.where("neighbours", doc, "neighbours"))
        )
    disc = DEFAULT_DISCRETIZATION
    if "discretization" in doc:
        where = ctx.where("discretization", doc, "discretization")
        disc = float(number(doc["discretization"], DISCRETIZATION, where))
    items = doc.get("entries")
    if not isinstance(items, list) or not items:
        raise DesignError(
            "expected `entries:`, a non-empty list of {design: ..., count: k}",
            where=ctx.where("entries", doc, "entries"),
        )
    base = Path(name).parent if not name.startswith("<") else Path(".")
    for i in per_entry:
        if i >= len(items):
            raise DesignError(
                f"the ledger has {len(items)} entr{'y' if len(items) == 1 else 'ies'} "
                f"(entries[0] to entries[{len(items) - 1}]); there is no entries[{i}]",
                where=Where(file="--set", field=per_entry[i][0][0]),
            )
    entries = tuple(
        _read_entry(
            items,
            i,
            ctx,
            base,
            [*every, *(t for _, t in per_entry.get(i, []))],
            [t.split("=", 1)[0].strip() for _, t in per_entry.get(i, [])],
        )
        for i in range(len(items))
    )
    return Ledger(
        name=str(doc.get("name", Path(name).stem)),
        entries=entries,
        delta=delta,
        epsilon=eps_budget,
        neighbours=neighbours,
        discretization=disc,
    )


#: the first field of a ``--set`` path that is a design's, not the ledger's: such a path is
#: applied to every entry's design (as ``--set`` on a design file)
DESIGN_ROOTS = ("mechanism", "sampling", "guarantee", "designs", "statistic")
#: the design's own ``target:`` fields (the ledger's ``target:`` has ``epsilon``, ``delta``)
DESIGN_TARGET = ("epsilon_prime", "delta_prime")
_ENTRY_DESIGN = re.compile(r"entries\[(\d+)\]\.design(\.|\[)(.+)$", re.S)
_ENTRY = re.compile(r"entries\[(\d+)\]")


def split_overrides(
    overrides: Sequence[str],
) -> tuple[list[tuple[str, Any, str]], dict[int, list[tuple[str, str]]], list[str]]:
    """Sort ``--set PATH=VALUE`` strings by what they reach.

    - ``entries[i].design.FIELD=V``: FIELD inside entry i's design, after it is read (a
      design file's path is loaded first, then overridden; inline designs alike);
    - a path starting with a design's field (``mechanism``, ``sampling``, ``guarantee``,
      ``designs``, ``statistic``, ``target.epsilon_prime``, ``target.delta_prime``):
      every entry's design;
    - anything else is the ledger's own (``target.epsilon``, ``target.delta``,
      ``neighbours``, ``discretization``, ``name``, ``entries[i].count``,
      ``entries[i].design=FILE``, ...), checked as the file's fields are (an unknown key
      gets the closest known one).

    Returns:
        (the ledger's own as (path, value, text), entry index -> [(full path, the
        design's own ``FIELD=V``)], the overrides for every design).
    Raises:
        DesignError: an override that is not ``PATH=VALUE``.
    """
    own: list[tuple[str, Any, str]] = []
    per_entry: dict[int, list[tuple[str, str]]] = {}
    every: list[str] = []
    for text in overrides:
        path, value = parse_override(text)
        head = re.split(r"[.\[]", path, maxsplit=1)[0]
        rest = path[len(head) :].lstrip(".")
        m = _ENTRY_DESIGN.match(path)
        if m:
            inner = (m.group(2) if m.group(2) == "[" else "") + m.group(3)
            value_text = text.split("=", 1)[1]
            per_entry.setdefault(int(m.group(1)), []).append((path, f"{inner}={value_text}"))
        elif head in DESIGN_ROOTS or (head == "target" and rest.split(".")[0] in DESIGN_TARGET):
            every.append(text)
        else:
            if head not in LEDGER_KEYS:
                close = difflib.get_close_matches(head[:100], [*LEDGER_KEYS, *DESIGN_ROOTS], n=1)
                raise DesignError(
                    f"{head!r} is neither one of the ledger's fields ("
                    + ", ".join(LEDGER_KEYS)
                    + ") nor a design's ("
                    + ", ".join(DESIGN_ROOTS)
                    + "); e.g. target.epsilon=2, entries[0].count=6 or "
                    "entries[0].design.mechanism.gaussian.sigma=2",
                    where=Where(file="--set", field=path),
                    hint=f"did you mean '{close[0]}'?" if close else None,
                )
            own.append((path, value, text.strip()))
    return own, per_entry, every


def _read_target(doc: Mapping[Any, Any], ctx: Reader) -> tuple[float, float | None]:
    """(total δ, ε budget or ``None``) from the ledger's ``target:``."""
    if "target" not in doc:
        raise DesignError(
            "missing required key 'target' ({delta: ..., epsilon: ...}: the total δ, and "
            "optionally the ε budget)",
            where=ctx.where("", doc),
        )
    tgt = mapping(doc["target"], ctx, "target", doc, "target", "the budget target")
    check_keys(tgt, ("epsilon", "delta"), ctx, "target", "the budget target")
    if "delta" not in tgt:
        raise DesignError(
            "missing required key 'delta' (the total δ the ε is reported at)",
            where=ctx.where("target", doc, "target"),
        )
    delta = float(number(tgt["delta"], _DELTA, ctx.where("target.delta", tgt, "delta")))
    if "epsilon" not in tgt:
        return delta, None
    where = ctx.where("target.epsilon", tgt, "epsilon")
    return delta, float(number(tgt["epsilon"], EPSILON_BUDGET, where))


def _read_entry(
    items: list[Any],
    i: int,
    ctx: Reader,
    base: Path,
    overrides: Sequence[str],
    own_paths: Sequence[str] = (),
) -> Entry:
    """``entries[i]``: its one design (a file relative to ``base``, or inline) and count."""
    ipath = f"entries[{i}]"
    item = mapping(items[i], ctx, ipath, items, i, "a ledger entry ({design: ..., count: k})")
    check_keys(item, ENTRY_KEYS, ctx, ipath, "a ledger entry")
    if "design" not in item:
        raise DesignError(
            "missing required key 'design' (a design file's path, or a design inline)",
            where=ctx.where(ipath, items, i),
        )
    dwhere = ctx.where(f"{ipath}.design", item, "design")
    try:
        designs = _entry_designs(item["design"], dwhere, ctx, base, overrides)
    except DesignError as err:
        w = err.where
        if w is not None and (w.file or "").startswith("--set") and w.field and own_paths:
            # an override of this entry's design: named by the path the user gave
            inner = w.field
            if any(inner == p or inner.startswith((p + ".", p + "[")) for p in own_paths):
                err.where = dataclasses.replace(w, field=f"{ipath}.design.{inner}")
        raise
    if "index" in item:
        spec = Field(name="index", kind="int", doc="design index", low=0, high=len(designs) - 1)
        k = int(number(item["index"], spec, ctx.where(f"{ipath}.index", item, "index")))
        designs = (designs[k],)
    if len(designs) != 1:
        raise DesignError(
            f"an entry holds one design; this file holds {len(designs)}: choose one "
            "with `index:` (0 for the first)",
            where=dwhere,
        )
    count = 1
    if "count" in item:
        count = int(number(item["count"], _COUNT, ctx.where(f"{ipath}.count", item, "count")))
    dp = None
    if "delta_prime" in item:
        where = ctx.where(f"{ipath}.delta_prime", item, "delta_prime")
        dp = float(number(item["delta_prime"], _DELTA_PRIME, where))
    nm = str(item.get("name", designs[0].name))
    return Entry(name=nm, design=designs[0], count=count, delta_prime=dp, where=dwhere)


def _entry_designs(
    raw: Any, where: Where, ctx: Reader, base: Path, overrides: Sequence[str]
) -> tuple[Design, ...]:
    """The designs an entry's ``design:`` names: a file's, or one given inline."""

    if isinstance(raw, str):
        if (nul := nul_in_name(raw, "design file")) is not None:
            raise DesignError(nul, where=where)
        p = Path(raw)
        p = p if p.is_absolute() else base / p
        return load_designs(str(p), overrides=overrides)
    if isinstance(raw, Mapping):
        return load_document(raw, filename=ctx.filename, overrides=overrides)
    raise DesignError("expected a design file's path or an inline design mapping", where=where)
