"""A design's blocks: ``mechanism:``, ``target:`` and ``sampling:``, each validated field by
field (the ``Field`` specs), with errors at the block's YAML line and column.

``parse_mechanism`` reads the ``epsilon``/``releases`` form (or hands a named mechanism
to ``ampcalc.accounting.parse``) in steps: the form, M's ε and δ (one release or a
list), the neighbouring relation, the replace-one parameters, the group size.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ampcalc import schemes
from ampcalc.accounting.names import is_named
from ampcalc.load.fields import (
    MarkedDict,
    Reader,
    check_keys,
    describe,
    field_value,
    mapping,
    number,
    read_fields,
)
from ampcalc.model.design import (
    MAX_EPSILON,
    Mechanism,
    Neighbours,
    Release,
    Target,
    check_epsilon,
    check_epsilon_limit,
)
from ampcalc.model.errors import AmpcalcError, DesignError
from ampcalc.model.limits import limit
from ampcalc.schemes.base import Field, Scheme

MAX_RELEASES = limit("releases")

MECHANISM_KEYS = (
    "epsilon",
    "delta",
    "neighbours",
    "epsilon_replace_one",
    "delta_replace_one",
    "releases",
    "group_size",
)


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


def _delta_field(name: str) -> Field:
    return Field(name=name, kind="float", doc="δ", low=0.0, high=1.0, high_open=True)


def parse_mechanism(data: Any, ctx: Reader, container: Any, key: Any) -> Mechanism:
    """Validate a ``mechanism:`` block (the ``epsilon``/``releases`` form, or a named
    mechanism: ``ampcalc.accounting.parse``)."""
    data = mapping(data, ctx, "mechanism", container, key, "a mechanism")

    if is_named(data):
        from ampcalc.accounting import parse as named  # lazy: start-up (bound)

        mech = named.parse_named(data, ctx, container, key)
        if "releases" in data:  # validated by parse_named: kept release by release
            mech = dataclasses.replace(mech, named_releases=_named_releases(data, ctx))
        return mech
    check_keys(data, MECHANISM_KEYS, ctx, "mechanism", "mechanism")
    _check_form(data, ctx, container, key)
    dfield = _delta_field("delta")
    releases: tuple[Release, ...] | None = None
    if "epsilon" in data:
        eps, delta = _one_release(data, ctx, dfield)
    else:
        releases, eps, delta = _releases(data, ctx, dfield)
    neighbours = _neighbours(data, ctx)
    eps_r, delta_r = _replace_one(data, ctx, neighbours, delta)
    return Mechanism(
        epsilon=eps,
        delta=delta,
        neighbours=neighbours,
        epsilon_replace_one=eps_r,
        delta_replace_one=delta_r,
        releases=releases,
        group_size=_group_size(data, ctx),
    )


def _named_releases(data: Mapping[Any, Any], ctx: Reader) -> tuple[tuple[Any, int], ...]:
    """The (profile, count) of each named release of a ``releases:`` list that
    ``accounting.parse.parse_named`` has read and validated."""
    from ampcalc.accounting import parse as named  # lazy: start-up (bound)

    out = []
    rel = data["releases"]
    for i, item in enumerate(rel):
        one = {k: v for k, v in item.items() if k != "count"}  # one release, as one mechanism
        out.append((named.parse_named(one, ctx, rel, i).profile, int(item.get("count", 1))))
    return tuple(out)


def _check_form(data: Any, ctx: Reader, container: Any, key: Any) -> None:
    """Exactly one of ``epsilon`` (one release) and ``releases`` (a list)."""
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


def _one_release(data: Any, ctx: Reader, dfield: Field) -> tuple[float, float]:
    """M's (ε, δ) from ``epsilon`` and ``delta`` (δ = 0 if absent)."""
    eps = check_epsilon(data["epsilon"], where=ctx.where("mechanism.epsilon", data, "epsilon"))
    delta = (
        number(data["delta"], dfield, ctx.where("mechanism.delta", data, "delta"))
        if "delta" in data
        else 0.0
    )
    return eps, delta


def _releases(data: Any, ctx: Reader, dfield: Field) -> tuple[tuple[Release, ...], float, float]:
    """The ``releases`` list, and M's (ε, δ): the sums of the releases' ε and δ."""
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
    items = [_release(item, rel, i, ctx, dfield) for i, item in enumerate(rel)]
    if "delta" in data:
        raise DesignError(
            "with `releases`, give each release's δ inside it ({epsilon, delta})",
            where=ctx.where("mechanism.delta", data, "delta"),
        )
    eps = math.fsum(r.epsilon for r in items)
    check_epsilon_limit(eps, where=ctx.where(rpath, data, "releases"))
    delta = math.fsum(r.delta for r in items)
    if not delta < 1.0:
        raise DesignError(
            f"the releases' δ add up to {delta:g}; expected {dfield.domain()}",
            where=ctx.where(rpath, data, "releases"),
        )
    return tuple(items), eps, delta


def _release(item: Any, rel: Any, i: int, ctx: Reader, dfield: Field) -> Release:
    """One item of ``releases``: a number ε, or ``{epsilon, delta}``."""
    ipath = f"mechanism.releases[{i}]"
    if not isinstance(item, Mapping):
        return Release(epsilon=check_epsilon(item, where=ctx.where(ipath, rel, i)), delta=0.0)
    check_keys(item, ("epsilon", "delta"), ctx, ipath, "a release")
    if "epsilon" not in item:
        raise DesignError("missing required key 'epsilon'", where=ctx.where(ipath, rel, i))
    e = check_epsilon(item["epsilon"], where=ctx.where(f"{ipath}.epsilon", item, "epsilon"))
    d = (
        number(item["delta"], dfield, ctx.where(f"{ipath}.delta", item, "delta"))
        if "delta" in item
        else 0.0
    )
    return Release(epsilon=e, delta=d)


def _neighbours(data: Any, ctx: Reader) -> Neighbours:
    """The relation M's ε holds under (``add-remove`` if absent)."""
    if "neighbours" not in data:
        return Neighbours.ADD_REMOVE
    return Neighbours(
        field_value(
            _NEIGHBOURS,
            data["neighbours"],
            ctx.where("mechanism.neighbours", data, "neighbours"),
        )
    )


def _replace_one(
    data: Any, ctx: Reader, neighbours: Neighbours, delta: float
) -> tuple[float | None, float | None]:
    """An add-remove M's explicit replace-one (ε, δ), each None if not given."""
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
            _delta_field("delta_replace_one"),
            ctx.where("mechanism.delta_replace_one", data, "delta_replace_one"),
        )
    if eps_r is not None and delta > 0 and delta_r is None:
        raise DesignError(
            "M has δ > 0 and an explicit `epsilon_replace_one`: state its replace-one δ as "
            "`delta_replace_one` too (it does not follow from the add-remove δ)",
            where=ctx.where("mechanism.epsilon_replace_one", data, "epsilon_replace_one"),
        )
    return eps_r, delta_r


def _group_size(data: Any, ctx: Reader) -> int:
    """Records of one unit that change together (1 if absent)."""
    if "group_size" not in data:
        return 1
    gwhere = ctx.where("mechanism.group_size", data, "group_size")
    return int(number(data["group_size"], _GROUP, gwhere))


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
