"""Properties every scheme must have, checked on the example designs of each scheme.

For every registered scheme (``ampcalc.schemes.names()``) the example designs in
``examples/designs/`` are the seeds; a scheme without one fails
``test_every_scheme_has_a_seed``. Over hypothesis-drawn ε (and the scheme's rate or size
knob, where it has one):

- lower ≤ upper where both exist, both finite and non-decreasing in ε;
- rate 1 gives no amplification: upper == ε under the guarantee relation
  (``details.reference_epsilon``, which is g·ε for a group of g), lower == it as well;
  srswr and schemes whose sample can never be the whole population are skipped;
- ``invert`` then ``bound`` at the certified ε reaches the target from below, and at the
  impossible ε the lower bound reaches it from above;
- the results do not depend on YAML formatting (key order, flow or block style);
- the JSON output of ``bound``, ``invert`` and every other command with ``--json``
  validates against ``ampcalc/schema/result.schema.json``.

Exhaustive runs are marked ``slow`` (``pytest -m slow tests/test_properties_schemes.py``).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import os
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import yaml
from conftest import EXAMPLES, ROOT
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ampcalc
from ampcalc import engine, schemes
from ampcalc.designs.document import parse_yaml

SCHEMA = json.loads((ROOT / "ampcalc" / "schema" / "result.schema.json").read_text())
REL = 1e-9  # relative tolerance where a property is an equality of two rounded bounds

FAST = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
# seeds whose evaluation costs seconds (a record file, an LP per ε): fewer default examples
COSTLY = {"importance-kmeans": 1, "importance-laplace": 2, "allocation-test": 2}


def fast(seed: Seed) -> settings:
    return settings(FAST, max_examples=COSTLY.get(seed.id, FAST.max_examples))


def slow(seed: Seed) -> settings:
    return settings(SLOW, max_examples=10 * COSTLY[seed.id] if seed.id in COSTLY else 200)


# ---- seeds ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """One design of an example file: ``designs[index]`` (or the file's only design)."""

    path: Path
    index: int
    multi: bool  # the file holds `designs:`
    scheme: str

    @property
    def id(self) -> str:
        return f"{self.path.stem}[{self.index}]" if self.multi else self.path.stem

    def field(self, path: str) -> str:
        """An override path for this design (``designs[i].`` prefixed in a multi file)."""
        return f"designs[{self.index}].{path}" if self.multi else path

    def load(self, *overrides: str) -> Any:
        return ampcalc.load_designs(self.path, overrides=list(overrides))[self.index]


@functools.cache
def seeds() -> tuple[Seed, ...]:
    out = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        designs = ampcalc.load_designs(path)
        doc = parse_yaml(path.read_text(), filename=str(path))
        multi = "designs" in doc
        # a named mechanism (a privacy profile) has no M's ε to vary: its noise is
        # calibrated instead (tests/test_accounting_calibrate.py, test_report_named.py)
        out += [
            Seed(path, i, multi, d.scheme)
            for i, d in enumerate(designs)
            if getattr(d.mechanism, "profile", None) is None
        ]
    return tuple(out)


def seeds_of(name: str) -> list[Seed]:
    return [s for s in seeds() if s.scheme == name]


ALL_SEEDS = seeds()
SEED_IDS = [s.id for s in ALL_SEEDS]


@functools.cache
def seed_design(seed: Seed) -> Any:
    return seed.load()


# ---- knobs: each scheme's rate or size field -----------------------------------------------


@dataclass(frozen=True)
class Knob:
    """A rate/size field of a design: hypothesis values and the overrides for rate 1."""

    field: str
    values: st.SearchStrategy[Any]
    full: tuple[str, ...] | None  # --set overrides (relative) giving rate 1; None: none
    loose_at_full: str | None = None  # why the upper bound is sound but not ε at rate 1


def knob(seed: Seed) -> Knob | None:
    d = seed_design(seed)
    p = d.params
    name = d.scheme
    if name == "srswor":
        n = p.population
        return Knob("sampling.sample", st.integers(1, n), (f"sampling.sample={n}",))
    if name == "srswr":  # no "rate 1": m draws with replacement never are the population
        return Knob("sampling.sample", st.integers(1, 3 * p.population), None)
    if name == "poisson":
        return Knob("sampling.rate", st.floats(1e-9, 1.0), ("sampling.rate=1",))
    if name in ("cluster", "pps-cluster"):  # chosen = k is refused: no sample
        k = p.clusters.count
        return Knob("sampling.chosen", st.integers(1, k - 1), None) if k > 2 else None
    if name == "systematic":  # interval >= 2: never the whole population
        return Knob("sampling.interval", st.integers(2, p.population), None)
    if name == "stratified" and p.rate is not None:
        loose = None
        if p.allocation == "proportional":
            loose = (
                "000 Theorem 7.2 (rounding of r·N_h) is stated for every r and is not tight "
                "at r = 1; ampcalc applies it as stated"
            )
        return Knob("sampling.rate", st.floats(0.01, 1.0), ("sampling.rate=1",), loose)
    if name == "random-size":
        n = p.population
        full = None
        if p.size.kind == "pmf":
            full = (f"sampling.size={{distribution: pmf, values: [{n}], probabilities: [1]}}",)
        return Knob("sampling.population", st.integers(n, 10 * n), full)
    if name == "importance" and p.probabilities == "uniform":
        n = int(p.population)
        return Knob("sampling.expected_size", st.integers(1, n), (f"sampling.expected_size={n}",))
    if name == "pps" and p.method == "pps":
        units = len(p.inclusion)
        return Knob("sampling.sample", st.integers(1, units), (f"sampling.sample={units}",))
    if name == "pps" and p.threshold is not None and p.max_size_measure is not None:
        top = 1.0 / p.max_size_measure  # threshold·max size = 1: every record kept
        return Knob(
            "sampling.threshold", st.floats(top * 1e-6, top), (f"sampling.threshold={top!r}",)
        )
    if name == "general-lower-bound" and p.result == "theorem-5.3":
        # ε″ is the attack's own figure (required); above every swept ε it is capped at ε
        full = ("sampling.fraction=1", "sampling.conditional_epsilon=1e300")
        return Knob("sampling.fraction", st.floats(1e-6, 1.0), full)
    return None


def load_with(seed: Seed, *overrides: str) -> Any:
    """The seed design with ``--set`` overrides (paths relative to the design)."""
    if not overrides:
        return seed_design(seed)
    return seed.load(*(seed.field(o) for o in overrides))


def knob_override(seed: Seed, value: Any) -> tuple[str, ...]:
    k = knob(seed)
    if k is None or value is None:
        return ()
    return (f"{k.field}={value!r}",)


def knob_values(seed: Seed) -> st.SearchStrategy[Any]:
    k = knob(seed)
    return st.none() if k is None else st.one_of(st.none(), k.values)


# ---- evaluation helpers --------------------------------------------------------------------


def arr(x: Any) -> np.ndarray | None:
    return None if x is None else np.asarray(x, dtype=float)


def bounds_over(seed: Seed, design_overrides: tuple[str, ...], eps: np.ndarray) -> Any:
    """(lower, upper, reference) arrays over ε; pws (calibrated) varies its target ε′."""
    if seed.scheme == "pws":
        rows = [
            engine.bound(load_with(seed, *design_overrides, f"target.epsilon_prime={float(e)!r}"))
            for e in eps
        ]
        for r, e in zip(rows, eps, strict=True):
            assert r.verdict == "calibrated" and r.upper == r.lower == e
        lo = np.array([r.lower for r in rows], dtype=float)
        return lo, lo.copy(), eps
    r = engine.bound(load_with(seed, *design_overrides), eps)
    assume(r.error is None)
    return arr(r.lower), arr(r.upper), np.asarray(r.details["reference_epsilon"], dtype=float)


# random-size with an explicit pmf: the tilted mean's rounding enclosure widens linearly in
# ε while the mean itself saturates at the largest size, so for ε >~ 20 the (sound) lower
# bound can fall by a few 1e-12 relative as ε grows; every other lower bound is exact.
LOWER_SLACK = {"random-size": 1e-10}

EPSILONS = st.lists(st.floats(1e-9, 700.0), min_size=2, max_size=12)
PWS_EPSILONS = st.lists(st.floats(1e-3, 5.0), min_size=2, max_size=4)


def check_ordered_and_monotone(seed: Seed, value: Any, eps_list: list[float]) -> None:
    eps = np.array(sorted(eps_list))
    lower, upper, _ = bounds_over(seed, knob_override(seed, value), eps)
    assert lower is not None or upper is not None
    for b in (lower, upper):
        if b is not None:
            assert b.shape == eps.shape
            assert np.all(np.isfinite(b))
            slack = LOWER_SLACK.get(seed.scheme, 0.0) if b is lower else 0.0
            assert np.all(np.diff(b) >= -slack * b[1:]), (seed.id, eps, b)
    if lower is not None and upper is not None:
        assert np.all(lower <= upper), (seed.id, eps, lower, upper)


@pytest.mark.parametrize("seed", ALL_SEEDS, ids=SEED_IDS)
def test_lower_le_upper_and_monotone_in_epsilon(seed: Seed) -> None:
    strategy = PWS_EPSILONS if seed.scheme == "pws" else EPSILONS

    @fast(seed)
    @given(value=knob_values(seed), eps_list=strategy)
    def prop(value: Any, eps_list: list[float]) -> None:
        check_ordered_and_monotone(seed, value, eps_list)

    prop()


@pytest.mark.slow
@pytest.mark.parametrize("seed", ALL_SEEDS, ids=SEED_IDS)
def test_lower_le_upper_and_monotone_in_epsilon_exhaustive(seed: Seed) -> None:
    strategy = PWS_EPSILONS if seed.scheme == "pws" else EPSILONS

    @slow(seed)
    @given(value=knob_values(seed), eps_list=strategy)
    def prop(value: Any, eps_list: list[float]) -> None:
        check_ordered_and_monotone(seed, value, eps_list)

    prop()


# ---- rate 1 --------------------------------------------------------------------------------

FULL_SEEDS = [s for s in ALL_SEEDS if (k := knob(s)) is not None and k.full is not None]


def check_rate_one(seed: Seed, eps_list: list[float]) -> None:
    k = knob(seed)
    assert k is not None and k.full is not None
    eps = np.array(sorted(eps_list))
    lower, upper, ref = bounds_over(seed, k.full, eps)
    # the whole population is the sample: nothing is amplified ...
    if lower is not None:
        assert np.all(lower <= ref * (1 + REL)), (seed.id, eps, lower, ref)
        assert np.all(lower >= ref * (1 - REL)), (seed.id, eps, lower, ref)
    if upper is not None:
        assert np.all(upper >= ref * (1 - 1e-15)), (seed.id, eps, upper, ref)
        if k.loose_at_full is None:  # ... and the bound says exactly that
            assert np.all(upper <= ref * (1 + REL)), (seed.id, eps, upper, ref)


def test_rate_one_covers_every_scheme_with_a_full_sample() -> None:
    have = {s.scheme for s in FULL_SEEDS}
    # srswr never samples the population; cluster, pps-cluster and systematic refuse the
    # full sample; pws is calibrated; allocation-test and data-dependent-size have no rate
    assert {"srswor", "poisson", "stratified", "random-size", "importance", "pps"} <= have
    assert "srswr" not in have


@pytest.mark.parametrize("seed", FULL_SEEDS, ids=[s.id for s in FULL_SEEDS])
def test_rate_one_gives_no_amplification(seed: Seed) -> None:
    @fast(seed)
    @given(eps_list=EPSILONS)
    def prop(eps_list: list[float]) -> None:
        check_rate_one(seed, eps_list)

    prop()


def test_rate_one_group_designs_compare_against_g_epsilon() -> None:
    (seed0, seed1) = [s for s in ALL_SEEDS if s.path.name == "group-household.yaml"]
    for seed, g, eps_r in ((seed0, 2, 1.0), (seed1, 3, 0.5)):
        k = knob(seed)
        assert k is not None and k.full is not None
        r = engine.bound(load_with(seed, *k.full))
        assert r.details["reference_epsilon"] == g * eps_r
        assert math.isclose(r.upper, g * eps_r, rel_tol=REL)
        assert math.isclose(r.lower, g * eps_r, rel_tol=REL)


# ---- invert then bound ---------------------------------------------------------------------

INVERT_SEEDS = [s for s in ALL_SEEDS if s.scheme != "pws"]
TARGETS = st.floats(1e-6, 50.0)


def check_invert_round_trip(seed: Seed, value: Any, target: float) -> None:
    over = knob_override(seed, value)
    if schemes.get(seed.scheme).bind_target is not None:
        # calibrated to the design's target (importance, privacy-constrained): `invert`
        # re-tunes the design to ε* = target, so the round trip binds the same target
        over = (*over, f"target.epsilon_prime={target!r}")
    d = load_with(seed, *over)
    inv = engine.invert(d, target)
    assume(inv.error is None)
    cert = inv.certified
    imp = inv.impossible_above
    cert = None if cert is None or not math.isfinite(cert) else cert
    imp = None if imp is None or not math.isfinite(imp) else imp
    if cert is not None:
        assert cert > 0
        assert engine.bound(d, cert).upper <= target, (seed.id, over, target, cert)
    if imp is not None:
        r = engine.bound(d, max(imp, 1e-300))
        # a privacy-constrained importance design refuses ε > ε* (Assumption 8 fails: the
        # domain is infeasible), so beyond ε* the lower bound cannot be read back
        if r.error is None or "Assumption 8" not in r.error:
            assert r.lower is not None and r.lower >= target, (seed.id, over, target, imp)
    if cert is not None and imp is not None:
        assert cert <= imp * (1 + 1e-12)


@pytest.mark.parametrize("seed", INVERT_SEEDS, ids=[s.id for s in INVERT_SEEDS])
def test_invert_then_bound_reaches_target_from_below(seed: Seed) -> None:
    @fast(seed)
    @given(value=knob_values(seed), target=TARGETS)
    def prop(value: Any, target: float) -> None:
        check_invert_round_trip(seed, value, target)

    prop()


@pytest.mark.slow
@pytest.mark.parametrize("seed", INVERT_SEEDS, ids=[s.id for s in INVERT_SEEDS])
def test_invert_then_bound_reaches_target_from_below_exhaustive(seed: Seed) -> None:
    @slow(seed)
    @given(value=knob_values(seed), target=TARGETS)
    def prop(value: Any, target: float) -> None:
        check_invert_round_trip(seed, value, target)

    prop()


def test_calibrated_pws_certifies_nothing_and_meets_its_target() -> None:
    for seed in seeds_of("pws"):
        d = seed_design(seed)
        r = engine.bound(d)
        assert r.verdict == "calibrated"
        assert r.upper == r.lower == d.target.epsilon_prime


# ---- schemes without a seed, and the seed of allocation-test -------------------------------


def test_every_scheme_has_a_seed() -> None:
    missing = [n for n in schemes.names() if not seeds_of(n)]
    assert not missing, (
        f"schemes without an example design in examples/designs/: {missing}. Add a design "
        "file for each (e.g. examples/designs/<scheme>.yaml with `sampling: {scheme: <scheme>, "
        "...}`); every test over the examples then runs it. See docs/contributing.md, step 3 "
        "(an example design)."
    )


def test_allocation_test_seed_matches_its_closed_form() -> None:
    # randomised rounding 0.6/0.4 against 0.5/0.5: adv* = 0.1·tanh(ε/2) (spec §4.3)
    (seed,) = seeds_of("allocation-test")
    eps = np.array([0.1, 1.0, 3.0])
    r = engine.bound(seed_design(seed), eps)
    assert r.upper is None
    np.testing.assert_allclose(r.lower, np.log1p(0.1 * np.tanh(eps / 2)), rtol=1e-9)


# ---- YAML formatting -----------------------------------------------------------------------


def plain(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [plain(v) for v in x]
    return x


def shuffled(x: Any, rnd: random.Random) -> Any:
    if isinstance(x, dict):
        keys = list(x)
        rnd.shuffle(keys)
        return {k: shuffled(x[k], rnd) for k in keys}
    if isinstance(x, list):
        return [shuffled(v, rnd) for v in x]
    return x


def run_cli(*args: str) -> tuple[int, str]:
    from ampcalc.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue()


@functools.cache
def reformat_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="ampcalc-yaml-"))
    os.symlink(EXAMPLES / "data", d / "data")  # relative data files resolve as before
    return d


EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


def check_formatting(path: Path, seed: int, flow: bool | None, width: int, indent: int) -> None:
    doc = plain(parse_yaml(path.read_text(), filename=str(path)))
    text = yaml.safe_dump(
        shuffled(doc, random.Random(seed)),
        default_flow_style=flow,
        sort_keys=False,
        allow_unicode=True,
        width=width,
        indent=indent,
    )
    copy = reformat_dir() / path.name  # same stem: same default design names
    copy.write_text(text, encoding="utf-8")
    want = run_cli("bound", str(path), "--json")
    got = run_cli("bound", str(copy), "--json")
    assert got == want, text


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_results_do_not_depend_on_yaml_formatting(path: Path) -> None:
    @settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        seed=st.integers(0, 2**32 - 1),
        flow=st.sampled_from([True, False, None]),
        width=st.sampled_from([40, 80, 10_000]),
        indent=st.sampled_from([2, 4]),
    )
    def prop(seed: int, flow: bool | None, width: int, indent: int) -> None:
        check_formatting(path, seed, flow, width, indent)

    prop()


# ---- JSON schema ---------------------------------------------------------------------------


def validate(doc: dict[str, Any]) -> None:
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_bound_and_invert_json_validate(path: Path) -> None:
    code, out = run_cli("bound", str(path), "--json")
    assert code == 0
    doc = json.loads(out)
    validate(doc)
    assert [r["scheme"] for r in doc["results"]] == [d.scheme for d in ampcalc.load_designs(path)]
    # a design calibrated to its target is rebuilt for --target: ε* = 0.5 is infeasible
    # for the privacy-constrained importance example (sup ε(1, x) = 0.75), so ask for 2
    calibrated = any(schemes.get(d.scheme).bind_target for d in ampcalc.load_designs(path))
    target = "2" if calibrated else "0.5"
    # a named Gaussian is inverted by calibrating its σ (`invert` refuses it otherwise)
    named = any(
        getattr(d.mechanism, "profile", None) is not None for d in ampcalc.load_designs(path)
    )
    solve = ["--solve", "sigma"] if named else []
    code, out = run_cli(
        "invert", str(path), *solve, "--target", target, "--target-delta", "1e-6", "--json"
    )
    assert code == 0
    validate(json.loads(out))


@FAST
@given(eps=st.floats(1e-9, 700.0), target=st.floats(1e-6, 50.0))
def test_bound_and_invert_json_validate_at_any_epsilon(eps: float, target: float) -> None:
    for path in (EXAMPLES / "compare.yaml", EXAMPLES / "cluster-census-tracts.yaml"):
        _, out = run_cli("bound", str(path), "--epsilon", repr(eps), "--json")
        validate(json.loads(out))
        _, out = run_cli("invert", str(path), "--target", repr(target), "--json")
        validate(json.loads(out))


def test_a_design_outside_its_conditions_validates_with_its_error() -> None:
    text = (
        "mechanism: {epsilon: 1, neighbours: replace-one}\n"
        "sampling: {scheme: poisson, rate: 0.1}\n"  # Poisson needs M's add-remove ε
    )
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "d.yaml"
        f.write_text(text)
        code, out = run_cli("bound", str(f), "--json")
        assert code == 2
        doc = json.loads(out)
        validate(doc)
        assert doc["results"][0]["error"] and doc["results"][0]["epsilon_prime"]["upper"] is None
        code, out = run_cli("invert", str(f), "--target", "1", "--json")
        assert code == 2
        validate(json.loads(out))


def _sanitized(tmp: Path) -> str:
    out = tmp / "private.csv"
    code, _ = run_cli(
        "pws",
        "sanitize",
        str(EXAMPLES / "data" / "pws-sample.csv"),
        "--design",
        str(EXAMPLES / "pws.yaml"),
        "--seed",
        "1",
        "--frequencies",
        "-o",
        str(out),
    )
    assert code == 0
    return str(out)


E = str(EXAMPLES)
PLANS = str(ROOT / "examples" / "plans")
COMMANDS: dict[str, list[Callable[[Path], list[str]]]] = {
    "bound": [
        lambda t: ["bound", f"{E}/compare.yaml"],
        lambda t: ["bound", str(EXAMPLES.parent / "mechanisms" / "gaussian-poisson.yaml")],
    ],
    "invert": [
        lambda t: ["invert", f"{E}/compare.yaml", "--target", "1"],
        lambda t: [
            "invert",
            str(EXAMPLES.parent / "mechanisms" / "gaussian-poisson.yaml"),
            "--solve",
            "sigma",
            "--target",
            "1",
        ],
    ],
    "schemes": [lambda t: ["schemes"]],
    "validate": [lambda t: ["validate", f"{E}/stratified-business-survey.yaml"]],
    "sweep": [
        lambda t: ["sweep", f"{E}/compare.yaml", "--vary", "mechanism.epsilon=0.1:2:4"],
        lambda t: ["sweep", f"{E}/srswor.yaml", "--vary", "target=0.1,1", "--of", "invert"],
    ],
    "check": [  # one document per file (several files give a list of them)
        lambda t: ["check", f"{E}/srswor.yaml", "--max-epsilon", "0.05"],
        lambda t: ["check", f"{E}/pws.yaml", "--max-epsilon", "0.05"],
    ],
    "compare": [lambda t: ["compare", f"{E}/stratified-business-survey.yaml", "-t", "1"]],
    "budget": [lambda t: ["budget", str(EXAMPLES.parent / "budget" / "year.yaml")]],
    "verify": [lambda t: ["verify", f"{E}/group-verify-tiny.yaml"]],
    "plan": [lambda t: ["plan", f"{PLANS}/mean.yaml"]],
    "pws table": [lambda t: ["pws", "table", f"{E}/pws.yaml"]],
    "pws estimate": [lambda t: ["pws", "estimate", _sanitized(t), "--design", f"{E}/pws.yaml"]],
    "pws keys": [lambda t: ["pws", "keys", f"{E}/pws.yaml", "--zipf", "1", "--support", "1000"]],
    "pws sanitize": [
        lambda t: [
            "pws",
            "sanitize",
            f"{E}/data/pws-sample.csv",
            "--design",
            f"{E}/pws.yaml",
            "--seed",
            "1",
            "-o",
            str(t / "sanitized.csv"),
        ]
    ],
    "weights": [lambda t: ["weights", f"{E}/importance-laplace.yaml", "-o", str(t / "w.csv")]],
}


def json_commands() -> set[str]:
    """Every CLI command (``pws table`` for a subcommand) that takes ``--json``."""
    import typer.main
    from typer.core import TyperGroup

    from ampcalc.cli import app as cli

    found: set[str] = set()

    def visit(group: Any, prefix: str) -> None:
        ctx = typer.Context(group)
        for name in group.list_commands(ctx):  # the lazily built command line, all of it
            command = group.get_command(ctx, name)
            if isinstance(command, TyperGroup):
                visit(command, f"{prefix}{name} ")
            elif "--json" in [o for p in command.params for o in getattr(p, "opts", ())]:
                found.add(f"{prefix}{name}")

    visit(typer.main.get_command(cli.app), "")
    return found


def test_every_json_command_is_checked_against_the_schema() -> None:
    assert json_commands() == set(COMMANDS)
    commands_in_schema = {
        branch["if"]["properties"]["command"]["const"] for branch in SCHEMA["allOf"]
    }
    assert set(COMMANDS) <= commands_in_schema


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_json_validates(command: str, tmp_path: Path) -> None:
    for argv in COMMANDS[command]:
        code, out = run_cli(*argv(tmp_path), "--json")
        assert code in (0, 1), out  # check's budget gate may fail (exit 1)
        doc = json.loads(out)
        assert doc["command"] == command
        validate(doc)
        # the schema is not vacuous: the command's own required keys are enforced
        branch = next(
            b for b in SCHEMA["allOf"] if b["if"]["properties"]["command"]["const"] == command
        )
        for key in branch["then"].get("required", []):
            broken = {k: v for k, v in doc.items() if k != key}
            with pytest.raises(jsonschema.ValidationError):
                validate(broken)
