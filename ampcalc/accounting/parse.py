"""The named ``mechanism:`` forms of a design file.

    mechanism: {gaussian: {sigma: 4.0, sensitivity: 1.0}, neighbours: add-remove}
    mechanism: {laplace: {scale: 2.0}}
    mechanism:
      releases:
        - {gaussian: {sigma: 1.0}, count: 10}
      neighbours: add-remove

The sensitivity (and so the profile) is stated under the declared ``neighbours``.
Errors are ``DesignError`` at the offending field's file and line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ampcalc.accounting import compose
from ampcalc.accounting.names import MECHANISM_NAMES
from ampcalc.accounting.profiles import (
    MAX_DISCRETE_SIGMA,
    MAX_INTEGER_SENSITIVITY,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Profile,
    RandomizedResponse,
    Zcdp,
)
from ampcalc.load.fields import Reader, check_keys, field_value, mapping, number
from ampcalc.model.design import Mechanism, Neighbours, check_epsilon, check_epsilon_limit
from ampcalc.model.errors import DesignError
from ampcalc.model.limits import limit
from ampcalc.schemes.base import Field

#: keys a named ``mechanism:`` block may hold besides the mechanism's name
NAMED_KEYS = ("neighbours", "releases")
MAX_COUNT = compose.MAX_PURE_RELEASES * 10

_SCALE = Field(
    name="scale", kind="float", doc="noise scale b", required=True, low=0.0, low_open=True
)
_SIGMA = Field(
    name="sigma",
    kind="float",
    doc="noise standard deviation σ",
    required=True,
    low=0.0,
    low_open=True,
)
_SENS = Field(
    name="sensitivity",
    kind="float",
    doc="the query's sensitivity Δ",
    default=1.0,
    low=0.0,
    low_open=True,
)
_ISENS = Field(
    name="sensitivity",
    kind="int",
    doc="the integer query's sensitivity Δ",
    default=1,
    low=1,
    high=MAX_INTEGER_SENSITIVITY,
)
_DSIGMA = Field(
    name="sigma",
    kind="float",
    doc="the discrete Gaussian's σ",
    required=True,
    low=0.0,
    low_open=True,
    high=MAX_DISCRETE_SIGMA,
)
_CATEGORIES = Field(name="categories", kind="int", doc="number of categories k", default=2, low=2)
_RHO = Field(
    name="rho",
    kind="float",
    doc="the zCDP parameter ρ",
    required=True,
    high=1e6,
    low=0.0,
    low_open=True,
)
_NEIGHBOURS = Field(
    name="neighbours",
    kind="choice",
    doc="relation the sensitivity is stated under",
    choices=tuple(n.value for n in Neighbours),
)

PARAMS: dict[str, tuple[Field, ...]] = {
    "laplace": (_SCALE, _SENS),
    "gaussian": (_SIGMA, _SENS),
    "discrete-laplace": (_SCALE, _ISENS),
    "discrete-gaussian": (_DSIGMA, _ISENS),
    "randomized-response": (_CATEGORIES,),  # and `epsilon`, checked by check_epsilon
    "zcdp": (_RHO,),
}


def _check_implied_epsilon(
    name: str, vals: dict[str, Any], ctx: Reader, path: str, block: Any
) -> None:
    """The ε₀ = sensitivity/scale a Laplace mechanism implies is held to the ε limit."""
    with np.errstate(over="ignore"):
        eps0 = float(np.float64(vals["sensitivity"]) / np.float64(vals["scale"]))
    check_epsilon_limit(  # inf (a scale that underflows the ratio) too
        eps0,
        where=ctx.where(f"{path}.scale", block, "scale"),
        what=f"the {name} mechanism's ε₀ = sensitivity/scale = "
        f"{vals['sensitivity']:g}/{vals['scale']:g}",
    )


def _one(name: str, block: Any, ctx: Reader, path: str, container: Any) -> Profile:
    """One named mechanism from ``{name: {params}}``."""
    block = mapping(block, ctx, path, container, name, f"the {name} mechanism's parameters")
    specs = PARAMS[name]
    allowed = [s.name for s in specs] + (["epsilon"] if name == "randomized-response" else [])
    check_keys(block, allowed, ctx, path, f"a {name} mechanism")
    vals: dict[str, Any] = {}
    for spec in specs:
        if spec.name in block:
            vals[spec.name] = field_value(
                spec, block[spec.name], ctx.where(f"{path}.{spec.name}", block, spec.name)
            )
        elif spec.required:
            raise DesignError(
                f"missing required key {spec.name!r} ({spec.doc}; {spec.domain()})",
                where=ctx.where(path, container, name),
            )
        else:
            vals[spec.name] = spec.default
    if name in ("laplace", "discrete-laplace"):
        _check_implied_epsilon(name, vals, ctx, path, block)
    if name == "laplace":
        return Laplace(scale=vals["scale"], sensitivity=vals["sensitivity"])
    if name == "gaussian":
        g = Gaussian(sigma=vals["sigma"], sensitivity=vals["sensitivity"])
        if not 1e-12 <= g.mu <= 1e6:
            raise DesignError(
                f"sensitivity/σ = {g.mu:g}; expected a ratio in [1e-12, 1e6]",
                where=ctx.where(path, container, name),
            )
        return g
    if name == "discrete-laplace":
        return DiscreteLaplace(scale=vals["scale"], sensitivity=int(vals["sensitivity"]))
    if name == "discrete-gaussian":
        return DiscreteGaussian(sigma=vals["sigma"], sensitivity=int(vals["sensitivity"]))
    if name == "randomized-response":
        if "epsilon" not in block:
            raise DesignError(
                "missing required key 'epsilon' (randomized response's ε₀, a number > 0)",
                where=ctx.where(path, container, name),
            )
        eps = check_epsilon(block["epsilon"], where=ctx.where(f"{path}.epsilon", block, "epsilon"))
        return RandomizedResponse(epsilon=eps, categories=int(vals["categories"]))
    return Zcdp(rho=vals["rho"])


def _named_in(data: Mapping[Any, Any], ctx: Reader, path: str, what: str) -> tuple[str, Any]:
    names = [k for k in data if k in MECHANISM_NAMES]
    if len(names) > 1:
        raise DesignError(
            f"give one named mechanism per {what}, got {', '.join(map(str, names))}",
            where=ctx.where(f"{path}.{names[1]}", data, names[1]),
        )
    if not names:
        raise DesignError(
            f"expected a named mechanism ({', '.join(MECHANISM_NAMES)}) in {what}",
            where=ctx.where(path, data),
        )
    return names[0], data[names[0]]


#: the (epsilon, delta) form's keys, refused in a named block with a word on why
_PLAIN_KEYS = ("epsilon", "delta", "epsilon_replace_one", "delta_replace_one")

_COUNT = Field(name="count", kind="int", doc="identical releases", low=1, high=MAX_COUNT)


def parse_named(data: Mapping[Any, Any], ctx: Reader, container: Any, key: Any) -> Mechanism:
    """A ``Mechanism`` carrying the (composed) profile of a named ``mechanism:`` block."""
    path = "mechanism"
    has_rel = "releases" in data
    _check_named_keys(data, ctx, path)
    neighbours = Neighbours.ADD_REMOVE
    if "neighbours" in data:
        neighbours = Neighbours(
            field_value(
                _NEIGHBOURS,
                data["neighbours"],
                ctx.where(f"{path}.neighbours", data, "neighbours"),
            )
        )
    if has_rel:
        items = _read_releases(data, ctx, f"{path}.releases")
    else:
        name, block = _named_in(data, ctx, path, "mechanism")
        items = [(_one(name, block, ctx, f"{path}.{name}", data), 1)]
    profile = _composed(items, data, ctx, f"{path}.releases")
    pure = profile.pure_epsilon
    # (pure_epsilon is rounded up a few ulps: the limit is held up to that rounding)
    if has_rel and pure is not None:
        check_epsilon_limit(
            pure,
            where=ctx.where(f"{path}.releases", data, "releases"),
            what="the releases' composed ε (Σ count·ε₀ of pure releases)",
            slack=1e-12,
        )
    return Mechanism(
        epsilon=pure if pure is not None else math.nan,
        delta=0.0,
        neighbours=neighbours,
        profile=profile,
        profile_releases=sum(c for _, c in items) if has_rel else None,
    )


def _check_named_keys(data: Mapping[Any, Any], ctx: Reader, path: str) -> None:
    """A named block holds one named mechanism or ``releases``, and ``neighbours``."""
    for k in data:
        if k not in MECHANISM_NAMES and k not in NAMED_KEYS:
            if k in _PLAIN_KEYS:
                raise DesignError(
                    f"`{k}` belongs to the (epsilon, delta) form; a named mechanism states "
                    "its noise and sensitivity instead (its ε and δ follow from its privacy "
                    "profile)",
                    where=ctx.where(f"{path}.{k}", data, k),
                )
            check_keys(data, (*MECHANISM_NAMES, *NAMED_KEYS), ctx, path, "a named mechanism")
    if "releases" in data and any(k in MECHANISM_NAMES for k in data):
        raise DesignError(
            "give either a named mechanism or `releases`, not both",
            where=ctx.where(f"{path}.releases", data, "releases"),
        )


def _read_releases(data: Mapping[Any, Any], ctx: Reader, rpath: str) -> list[tuple[Profile, int]]:
    """``releases:``: a non-empty list (up to the limit) of named mechanisms, each with
    an optional ``count``."""
    rel = data["releases"]
    if not isinstance(rel, Sequence) or isinstance(rel, (str, bytes)) or not rel:
        raise DesignError(
            "expected a non-empty list of releases ({gaussian: {...}, count: k}, ...)",
            where=ctx.where(rpath, data, "releases"),
        )
    if len(rel) > limit("releases"):
        raise DesignError(
            f"more than {limit('releases')} releases",
            where=ctx.where(rpath, data, "releases"),
        )
    return [_read_release(rel, i, ctx, f"{rpath}[{i}]") for i in range(len(rel))]


def _read_release(rel: Sequence[Any], i: int, ctx: Reader, ipath: str) -> tuple[Profile, int]:
    """Release ``i``: ``{name: {params}, count: k}`` as (profile, k)."""
    item = rel[i]
    if not isinstance(item, Mapping) or not any(k in item for k in MECHANISM_NAMES):
        raise DesignError(
            "give every release as a named mechanism ({gaussian: {sigma: 1.0}, "
            "count: 10}) when one is; plain (epsilon, delta) releases and named ones "
            "do not mix",
            where=ctx.where(ipath, rel, i),
        )
    check_keys(item, (*MECHANISM_NAMES, "count"), ctx, ipath, "a release")
    name, block = _named_in(item, ctx, ipath, "release")
    count = 1
    if "count" in item:
        count = int(number(item["count"], _COUNT, ctx.where(f"{ipath}.count", item, "count")))
    return _one(name, block, ctx, f"{ipath}.{name}", item), count


def _composed(
    items: list[tuple[Profile, int]], data: Mapping[Any, Any], ctx: Reader, rpath: str
) -> Profile:
    """The profile of the releases composed (a composition refused at ``releases``)."""
    try:
        return compose.compose(items)
    except compose.CompositionError as err:
        raise DesignError(str(err), where=ctx.where(rpath, data, "releases")) from None
