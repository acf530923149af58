"""The package's layer rules, checked over the import statements of every module.

The rules (docs/architecture.md, "How the code is organised"):

1. imports only go downward: each package may import the packages listed for it in
   ``ALLOWED`` and nothing above; docs/architecture.md's picture draws every package below the
   ones that may import it;
2. only ``cli/`` imports typer; only ``cli/`` and ``output/`` import rich and jinja2
   (the template engine of the optional report, with its markupsafe);
3. no module imports another package's ``_private`` module or name;
4. no import circles between modules (imports inside functions and under
   ``TYPE_CHECKING`` count: a circle is a circle however late it closes);
5. inside ``schemes/``: ``base``, ``assembly`` and ``exact`` import only each other; the
   private kernel modules (``_cluster_kernels``, ``_allocation``, ...) import those and
   each other; a family module (one the registry names, or a module of a family's
   package) imports those and its own family, another family only as listed in
   ``SCHEMES_CROSS`` (with the reason); the registry imports families by name only;
6. inside ``cli/``: ``conventions`` imports no other command-line module, ``app`` only
   ``conventions`` (the command modules through its lazy loader, by name), a command
   module only ``app`` and ``conventions``, another command only as listed in
   ``CLI_CROSS``;
7. inside ``analyses/``: a module imports another analysis only as listed in
   ``ANALYSES_EDGES`` (with the reason).

An import is an ``import`` or ``from ... import`` statement, and a call of
``importlib.import_module`` or ``__import__`` with a literal name (an f-string whose
unknown part follows ``"ampcalc.pkg."`` counts as an import of ``ampcalc.pkg`` for
rules 1 to 3). Each broken rule is reported with its number, the file and line, and
the import.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent / "ampcalc"
PICTURE = ROOT.parent / "docs" / "architecture.md"

#: package (or top-level module) -> the ampcalc packages it may import.
ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "math": set(),
    "load": {"model", "math"},
    "schemes": {"load", "model", "math"},
    "accounting": {"schemes", "load", "model", "math"},
    "designs": {"accounting", "schemes", "load", "model", "math"},
    "engine": {"designs", "accounting", "schemes", "load", "model", "math"},
    "analyses": {"engine", "designs", "accounting", "schemes", "load", "model", "math"},
    # output/ draws analyses/ results (sweeps, the report's curves): it sits above analyses/
    # (and the version, which a figure file names in its metadata)
    "output": {"analyses", "load", "model", "math", "_version"},
    # records/ writes its tables through output/'s column writers: it sits above output/
    "records": {"output", "engine", "designs", "schemes", "load", "model", "math"},
    "kernels": {"math", "model"},
    "api": {
        "accounting",
        "analyses",
        "records",
        "output",
        "engine",
        "designs",
        "schemes",
        "load",
        "model",
        "math",
        "kernels",
    },
    "cli": {
        "api",
        "accounting",
        "analyses",
        "records",
        "output",
        "engine",
        "designs",
        "schemes",
        "load",
        "model",
        "math",
        "kernels",
        "_version",
    },
    # the package's own face: the version, the model and the lazy public names
    "__init__": {"_version", "model", "api", "designs", "kernels"},
    "__main__": {"cli"},
    "_version": set(),
}
TYPER = {"cli"}
RICH = {"cli", "output"}
TEMPLATES = {"cli", "output"}

# --- rule 5: inside schemes/ ---------------------------------------------------------------

#: what every scheme is built from; these import only each other.
SCHEMES_FOUNDATION = {
    "ampcalc.schemes.base",
    "ampcalc.schemes.assembly",
    "ampcalc.schemes.exact",
    # the theorem record (assembly re-exports it) and the exact verifier's pieces (exact
    # re-exports them)
    "ampcalc.schemes._theorem",
    "ampcalc.schemes._exact_data",
    "ampcalc.schemes._exact_lp",
    "ampcalc.schemes._exact_plans",
}
# the private kernel modules are the ``_``-named modules directly in schemes/ (``_kernel``)

#: (importer, imported) -> why a family (or kernel) module imports another family's module.
SCHEMES_CROSS: dict[tuple[str, str], str] = {
    ("ampcalc.schemes.pps", "ampcalc.schemes.srswor"): (
        "with equal size measures PPS sampling is simple random sampling without "
        "replacement (Bun et al. 2022, §6.1): srswor's Theorem 2.2 is the bound"
    ),
    ("ampcalc.schemes.random_size", "ampcalc.schemes.poisson"): (
        "a binomial sample size over the population followed by a simple random sample is "
        "Poisson sampling (ampcalc derivations, §1.2): poisson's results are the bound"
    ),
    ("ampcalc.schemes.pps_cluster", "ampcalc.schemes.pps"): (
        "PPS cluster sampling draws whole clusters by pps's methods: its method names "
        "(successive sampling's inclusion probabilities are the _pps_designs kernel's)"
    ),
    ("ampcalc.schemes.stratified.fixed", "ampcalc.schemes.poisson"): (
        "stratified Poisson sampling is the poisson family's result at the largest rate "
        "(Bun et al. 2020, working paper, Lemma 3.3)"
    ),
    ("ampcalc.schemes.stratified.fixed", "ampcalc.schemes.srswor"): (
        "fixed allocation is srswor's Theorem 2.2 in the stratum of the largest sampling "
        "fraction (a replacement inside a stratum is a simple random sample's)"
    ),
    ("ampcalc.schemes.systematic", "ampcalc.schemes.random_size"): (
        "systematic sampling's size is random (floor or ceiling of N/k): random_size's "
        "Theorem 3.1 witness and size-mixture plan"
    ),
}

# --- rule 6: inside cli/ -------------------------------------------------------------------

CLI_SHARED = {"ampcalc.cli.app", "ampcalc.cli.conventions"}
#: (importer, imported) -> why a command module imports another command module.
CLI_CROSS: dict[tuple[str, str], str] = {
    ("ampcalc.cli.pws_keys", "ampcalc.cli.pws"): (
        "``pws keys`` is a subcommand: it adds itself to the pws group"
    ),
}

# --- rule 7: inside analyses/ --------------------------------------------------------------

#: (importer, imported) -> why one analysis imports another; every other analysis
#: module imports no other (they share engine/, designs/ and model/, not each other).
ANALYSES_EDGES: dict[tuple[str, str], str] = {
    ("ampcalc.analyses.budget_solve", "ampcalc.analyses.budget"): (
        "solving for a budget's unknown re-evaluates budget's ledger"
    ),
    ("ampcalc.analyses.budget_solve", "ampcalc.analyses.calibrate"): (
        "an unknown noise scale is set through calibrate's noise for a target"
    ),
    ("ampcalc.analyses.checks", "ampcalc.analyses.verify"): (
        "validate's exact check on tiny designs is verify's row"
    ),
    ("ampcalc.analyses.report", "ampcalc.analyses.calibrate"): (
        "a named mechanism's report calibrates its noise to the target, as `invert "
        "--solve sigma` does"
    ),
    ("ampcalc.analyses.report", "ampcalc.analyses.sweep"): (
        "the report's curve is a sweep of the design along ε"
    ),
    ("ampcalc.analyses.sweep_result", "ampcalc.analyses.sweep"): (
        "the Python API's sweep wraps the sweep the command evaluates"
    ),
    ("ampcalc.analyses.sweep", "ampcalc.analyses.vary"): (
        "a sweep evaluates the grid its `--vary` options give"
    ),
    ("ampcalc.analyses.sweep", "ampcalc.analyses.sweep_points"): (
        "a sweep's columns are the engine evaluated at its grid points"
    ),
    ("ampcalc.analyses.sweep", "ampcalc.analyses.sweep_stream"): (
        "a sweep too large to hold is evaluated in blocks"
    ),
    ("ampcalc.analyses.sweep_points", "ampcalc.analyses.vary"): (
        "the grid points evaluated are the varied fields' values"
    ),
    ("ampcalc.analyses.sweep_stream", "ampcalc.analyses.vary"): (
        "a streamed sweep evaluates the grid its `--vary` options give"
    ),
    ("ampcalc.analyses.sweep_stream", "ampcalc.analyses.sweep_points"): (
        "a streamed sweep evaluates the same grid pieces, a block at a time"
    ),
}


class Import(NamedTuple):
    """One import: a statement, a call with a literal name, or an f-string's package."""

    line: int
    module: str
    name: str | None
    how: str  # "statement", "call" or "prefix" (only the package before an f-string's hole)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def unit_of(module: str) -> str:
    """The layer a module belongs to: its package below ``ampcalc``, or itself."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _relative(name: str, package: str) -> str:
    """``importlib``'s resolution of ``.name`` / ``..name`` against ``package``."""
    level = len(name) - len(name.lstrip("."))
    if not level:
        return name
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    rest = name[level:]
    return f"{base}.{rest}" if rest else base


def _text(node: ast.expr | None, here: str, package: str) -> tuple[str, bool] | None:
    """A name argument's text and whether it is whole: a literal, ``__name__``,
    ``__package__``, or an f-string of those (cut at its first other hole)."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, True
    if isinstance(node, ast.Name) and node.id in ("__name__", "__package__"):
        return (here if node.id == "__name__" else package), True
    if isinstance(node, ast.JoinedStr):
        text = ""
        for part in node.values:
            if isinstance(part, ast.Constant):
                text += str(part.value)
                continue
            known = (
                _text(part.value, here, package) if isinstance(part, ast.FormattedValue) else None
            )
            if known is None or part.format_spec is not None:
                return text, False
            text += known[0]
        return text, True
    return None


def _dynamic(tree: ast.Module, here: str, package: str) -> Iterator[Import]:
    """``importlib.import_module(...)`` and ``__import__(...)`` calls as imports."""
    modules: set[str] = set()
    functions = {"__import__": "__import__"}  # a name called -> what it is
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "importlib"}
        elif isinstance(node, ast.ImportFrom) and node.module == "importlib":
            functions |= {
                a.asname or a.name: a.name
                for a in node.names
                if a.name in ("import_module", "__import__")
            }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in functions:
            kind = functions[f.id]
        elif (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id in modules
            and f.attr in ("import_module", "__import__")
        ):
            kind = f.attr
        else:
            continue
        found = _text(node.args[0], here, package)
        if found is None:
            continue  # a name only known at run time: the start-up test sees those
        name, whole = found
        keywords = {k.arg: k.value for k in node.keywords}
        if kind == "import_module":
            anchor = _text(
                node.args[1] if len(node.args) > 1 else keywords.get("package"), here, package
            )
            if name.startswith(".") and anchor is not None and anchor[1]:
                name = _relative(name, anchor[0])
        else:
            level = node.args[4] if len(node.args) > 4 else keywords.get("level")
            if isinstance(level, ast.Constant) and isinstance(level.value, int) and level.value:
                name = _relative("." * level.value + name, package)
        if name.startswith("."):
            continue
        if whole:
            yield Import(node.lineno, name, None, "call")
        elif "." in name:
            yield Import(node.lineno, name.rpartition(".")[0], None, "prefix")


def imports(path: Path, root: Path) -> Iterator[Import]:
    """Every import in the file (statements and calls with a literal name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(node.lineno, alias.name, None, "statement")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                yield Import(node.lineno, module, alias.name, "statement")
    yield from _dynamic(tree, here, package)


def resolve(module: str, name: str | None, known: set[str]) -> str:
    """The ampcalc module an import refers to (``from pkg import mod`` -> ``pkg.mod``)."""
    if name is not None and f"{module}.{name}" in known:
        return f"{module}.{name}"
    return module


def scheme_families(root: Path) -> set[str]:
    """The family modules the registry names (``_MODULES`` in ``schemes/__init__.py``)."""
    init = root / "schemes" / "__init__.py"
    if not init.exists():
        return set()
    for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
        target = getattr(node, "target", None) or (getattr(node, "targets", None) or [None])[0]
        if isinstance(target, ast.Name) and target.id == "_MODULES":
            value = ast.literal_eval(node.value)  # type: ignore[attr-defined]
            return {f"{root.name}.schemes.{m}" for m in value.values()}
    return set()


def _family(module: str, families: set[str]) -> str | None:
    """The family a schemes module belongs to (a family package's modules are its own)."""
    for f in families:
        if module == f or module.startswith(f + "."):
            return f
    return None


def _kernel(module: str) -> bool:
    """A private kernel module: a ``_``-named module directly in schemes/."""
    parts = module.split(".")
    return len(parts) == 3 and parts[2].startswith("_") and not parts[2].startswith("__")


def _inside(here: str, target: str, families: set[str], top: str) -> tuple[str | None, str]:
    """Rules 5 to 7 for one import inside a package: (the rule, why) when it is broken;
    (None, "") when it keeps them; (None, "listed") when it is a listed exception."""
    pair = (here.replace(f"{top}.", "ampcalc.", 1), target.replace(f"{top}.", "ampcalc.", 1))
    unit = unit_of(here)
    if unit == "schemes":
        registry, (a, b) = f"{top}.schemes", pair
        if here == registry:
            if b in SCHEMES_FOUNDATION:
                return None, ""
            return (
                "rule 5",
                "the registry imports only base, assembly and exact (families by name)",
            )
        if target == registry:
            return "rule 5", "imports the registry, which is above every scheme module"
        if a in SCHEMES_FOUNDATION:
            if b in SCHEMES_FOUNDATION:
                return None, ""
            return "rule 5", "base, assembly and exact import only each other"
        if b in SCHEMES_FOUNDATION or _kernel(target):
            return None, ""
        if pair in SCHEMES_CROSS:
            return None, "listed"
        if _kernel(here):
            return "rule 5", "a private kernel module imports a family module (see SCHEMES_CROSS)"
        own = _family(here, families)
        if own is None or _family(target, families) != own:
            return "rule 5", "a family imports another family's module (see SCHEMES_CROSS)"
        return None, ""
    if unit == "cli":
        if pair[0] == "ampcalc.cli.conventions":
            return "rule 6", "cli.conventions imports no other command-line module"
        if pair[0] == "ampcalc.cli.app":
            if pair[1] == "ampcalc.cli.conventions":
                return None, ""
            return "rule 6", "cli.app imports only conventions (the commands through its loader)"
        if pair == ("ampcalc.cli", "ampcalc.cli.app") or pair[1] in CLI_SHARED:
            return None, ""
        if pair in CLI_CROSS:
            return None, "listed"
        return "rule 6", "a command module imports another command module (see CLI_CROSS)"
    if unit == "analyses":
        if pair in ANALYSES_EDGES:
            return None, "listed"
        if pair[0] == "ampcalc.analyses":
            return None, ""
        return "rule 7", "an analysis imports another analysis (see ANALYSES_EDGES)"
    return None, ""


def scan(root: Path = ROOT) -> tuple[list[str], set[tuple[str, str]]]:
    """Every broken rule in the package at ``root``, one message each, and the listed
    exceptions (rules 5 to 7) some import uses."""
    files = sorted(root.rglob("*.py"))
    known = {module_name(f, root) for f in files}
    top = root.name
    families = scheme_families(root)
    broken: list[str] = []
    used: set[tuple[str, str]] = set()
    graph: dict[str, dict[str, str]] = {m: {} for m in known}
    for path in files:
        here = module_name(path, root)
        unit = unit_of(here)
        where = f"{path.relative_to(root.parent)}"
        for line, module, name, how in imports(path, root):
            head = module.split(".")[0]
            seen = "" if how == "statement" else f" (through a {how} import)"
            if head == "typer" and unit not in TYPER:
                broken.append(f"rule 2: {where}:{line}: imports typer outside cli/{seen}")
            if head == "rich" and unit not in RICH:
                broken.append(
                    f"rule 2: {where}:{line}: imports rich outside cli/ and output/{seen}"
                )
            if head in ("jinja2", "markupsafe") and unit not in TEMPLATES:
                broken.append(
                    f"rule 2: {where}:{line}: imports {head} outside cli/ and output/{seen}"
                )
            if head != top:
                continue
            target = resolve(module, name, known)
            if target not in known:
                continue
            other = unit_of(target)
            if other != unit and other not in ALLOWED.get(unit, set()):
                broken.append(
                    f"rule 1: {where}:{line}: {unit}/ imports {target}{seen} ({other}/ is not "
                    f"below {unit}/; allowed: {', '.join(sorted(ALLOWED.get(unit, ()))) or '-'})"
                )
            if other != unit:
                private = [p for p in target.split(".")[1:] if p.startswith("_")]
                private = [p for p in private if not p.startswith("__")]
                if private or (name is not None and name.startswith("_") and name != "*"):
                    shown = f"{target}" + (f".{name}" if name and target == module else "")
                    if not shown.endswith("_version") and not shown.endswith("__version__"):
                        broken.append(
                            f"rule 3: {where}:{line}: imports {shown}, private to {other}/"
                        )
            if how == "prefix" or target == here:
                continue  # only the package is known, or a module's own name
            graph[here].setdefault(target, f"{where}:{line}")
            if other == unit:
                rule, why = _inside(here, target, families, top)
                if rule is not None:
                    broken.append(f"{rule}: {where}:{line}: {here} imports {target}{seen}: {why}")
                elif why:
                    used.add((here, target))
    for path in files:
        m = module_name(path, root)
        if unit_of(m) != "schemes" or m == f"{top}.schemes" or _kernel(m):
            continue
        if m.replace(f"{top}.", "ampcalc.", 1) in SCHEMES_FOUNDATION:
            continue
        if _family(m, families) is None:
            broken.append(
                f"rule 5: {path.relative_to(root.parent)}:1: neither a family the registry "
                "names (_MODULES), a private kernel module (_name) nor base/assembly/exact"
            )
    for comp in circles({m: set(t) for m, t in graph.items()}):
        path = cycle(comp, graph)
        edges = ", ".join(graph[a][b] for a, b in itertools.pairwise(path))
        broken.append(f"rule 4: import circle: {' -> '.join(path)} ({edges})")
    return broken, used


def check(root: Path = ROOT) -> list[str]:
    """Every broken rule in the package at ``root``, one message each."""
    return scan(root)[0]


def cycle(comp: list[str], graph: dict[str, dict[str, str]]) -> list[str]:
    """One circle through the component's first module (breadth first, so a short one)."""
    start, inside = comp[0], set(comp)
    before: dict[str, str] = {}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(before[path[-1]])
                return [*reversed(path), start]
            if w in inside and w not in before:
                before[w] = v
                queue.append(w)
    return [*comp, comp[0]]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def picture(page: Path = PICTURE) -> list[str]:
    """The packages and modules the layer picture draws, top to bottom."""
    text = page.read_text(encoding="utf-8")
    section = text[text.index("# How the code is organised") :]
    block = section[section.index("```") + 3 :]
    block = block[: block.index("```")]
    return re.findall(r"^([a-z_]+)(?:/|\.py)\s", block, flags=re.MULTILINE)


# --- the tests ----------------------------------------------------------------------------


def test_every_package_is_a_known_layer() -> None:
    units = {unit_of(module_name(f, ROOT)) for f in ROOT.rglob("*.py")}
    assert units <= set(ALLOWED), f"packages without a layer rule: {units - set(ALLOWED)}"


def test_every_package_says_its_job_and_what_it_may_import() -> None:
    for init in ROOT.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and "import" in doc, f"{init}: docstring must say what it may import"


def test_the_readme_picture_draws_the_allowed_table() -> None:
    """Rule 1 as drawn: every package sits above each package it may import, and every
    package of the table is in the picture (top-level modules other than api.py and
    kernels.py are the package's own face and left out)."""
    drawn = picture()
    assert len(drawn) == len(set(drawn)), f"the layer picture draws a package twice: {drawn}"
    where = {u: i for i, u in enumerate(drawn)}
    broken = [
        f"rule 1: docs/architecture.md picture: {u} may import {v} but is drawn below it"
        for u in drawn
        for v in sorted(ALLOWED[u])
        if v in where and where[v] < where[u]
    ]
    missing = set(ALLOWED) - set(drawn) - {"__init__", "__main__", "_version"}
    assert not missing, f"rule 1: docs/architecture.md picture leaves out {sorted(missing)}"
    assert set(drawn) <= set(ALLOWED), f"picture draws {set(drawn) - set(ALLOWED)}"
    assert broken == []


def test_records_is_above_output_and_output_never_imports_records() -> None:
    # records/ writes through output/'s column writers (so output/ must not import it)
    assert "output" in ALLOWED["records"] and "records" not in ALLOWED["output"]
    drawn = picture()
    assert drawn.index("records") < drawn.index("output") < drawn.index("analyses")


def test_the_layer_rules_hold() -> None:
    assert check() == []


def test_every_listed_exception_is_still_needed() -> None:
    _, used = scan()
    listed = set(SCHEMES_CROSS) | set(CLI_CROSS) | set(ANALYSES_EDGES)
    assert sorted(listed - used) == [], "listed exceptions no import needs any more"


def test_the_registry_names_the_families() -> None:
    families = scheme_families(ROOT)
    assert {"ampcalc.schemes.srswor", "ampcalc.schemes.stratified"} <= families
    assert not any(_kernel(f) for f in families)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "ampcalc"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_deliberate_upward_import_is_named(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "math/__init__.py": "",
            "math/numeric.py": "from ampcalc.schemes import srswor\n",
            "schemes/__init__.py": "",
            "schemes/srswor.py": "from ampcalc.math import numeric\n",
        },
    )
    broken = check(root)
    assert any(
        m.startswith("rule 1: ampcalc/math/numeric.py:1: math/ imports ampcalc.schemes.srswor")
        for m in broken
    ), broken
    assert (
        "rule 4: import circle: ampcalc.math.numeric -> ampcalc.schemes.srswor -> "
        "ampcalc.math.numeric (ampcalc/math/numeric.py:1, ampcalc/schemes/srswor.py:1)"
    ) in broken, broken


def test_a_deliberate_typer_private_and_relative_import_is_named(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "engine.py": "import typer\nfrom .schemes._kernels import f\nimport jinja2\n",
            "schemes/__init__.py": "",
            "schemes/_kernels.py": "",
            "output/__init__.py": "",
            "output/render.py": "from ..schemes import _helper\n",
        },
    )
    broken = check(root)
    assert "rule 2: ampcalc/engine.py:1: imports typer outside cli/" in broken
    assert any(m.startswith("rule 3: ampcalc/engine.py:2:") for m in broken), broken
    assert "rule 2: ampcalc/engine.py:3: imports jinja2 outside cli/ and output/" in broken
    assert any(m.startswith("rule 1: ampcalc/output/render.py:1:") for m in broken), broken


def test_import_module_and_dunder_import_calls_count(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "math/__init__.py": "",
            "math/numeric.py": (
                "import importlib\n"
                "def f():\n"
                "    return importlib.import_module('ampcalc.engine.core')\n"
                "def g():\n"
                "    return __import__('ampcalc.output.render')\n"
                "def h(name):\n"
                "    return importlib.import_module(f'ampcalc.cli.{name}')\n"
                "def i(name):\n"
                "    return importlib.import_module(name)\n"
            ),
            "math/types.py": (
                "from importlib import import_module as _m\n"
                "x = _m('..engine.core', __package__)\n"
                "y = _m('rich')\n"
            ),
            "engine/__init__.py": "",
            "engine/core.py": "",
            "output/__init__.py": "",
            "output/render.py": "",
            "cli/__init__.py": "",
        },
    )
    broken = check(root)
    assert any(
        m.startswith(
            "rule 1: ampcalc/math/numeric.py:3: math/ imports ampcalc.engine.core "
            "(through a call import)"
        )
        for m in broken
    ), broken
    assert any(
        m.startswith("rule 1: ampcalc/math/numeric.py:5: math/ imports ampcalc.output.render")
        for m in broken
    ), broken
    assert any(
        m.startswith(
            "rule 1: ampcalc/math/numeric.py:7: math/ imports ampcalc.cli (through a prefix"
        )
        for m in broken
    ), broken
    assert not any("numeric.py:9" in m for m in broken), broken  # a run-time name
    # relative to the package argument, as importlib resolves it: ampcalc.engine.core
    assert any(
        m.startswith("rule 1: ampcalc/math/types.py:2: math/ imports ampcalc.engine.core")
        for m in broken
    ), broken
    assert (
        "rule 2: ampcalc/math/types.py:3: imports rich outside cli/ and output/ "
        "(through a call import)"
    ) in broken


def _schemes(extra: dict[str, str]) -> dict[str, str]:
    files = {
        "__init__.py": "",
        "schemes/__init__.py": (
            "from ampcalc.schemes.base import Scheme\n"
            "_MODULES = {'a': 'fam_a', 'b': 'fam_b', 'st': 'strat'}\n"
        ),
        "schemes/base.py": "",
        "schemes/assembly.py": "from ampcalc.schemes.base import x\n",
        "schemes/exact.py": "",
        "schemes/_kern.py": "from ampcalc.schemes import assembly\n",
        "schemes/fam_a.py": "from ampcalc.schemes import _kern, base, exact\n",
        "schemes/fam_b.py": "",
        "schemes/strat/__init__.py": "from ampcalc.schemes.strat import common\n",
        "schemes/strat/common.py": "from ampcalc.schemes import _kern\n",
    }
    files.update(extra)
    return files


def test_a_tidy_schemes_package_keeps_rule_5(tmp_path: Path) -> None:
    assert check(_tree(tmp_path, _schemes({}))) == []


def test_schemes_inner_rules_are_named(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        _schemes(
            {
                "schemes/base.py": "from ampcalc.schemes import fam_b\n",
                "schemes/_kern.py": (
                    "import importlib\nimportlib.import_module('ampcalc.schemes.fam_b')\n"
                ),
                "schemes/fam_a.py": "from ampcalc.schemes.strat import common\n",
                "schemes/loose.py": "",
                "schemes/__init__.py": (
                    "from ampcalc.schemes import fam_a\n"
                    "_MODULES = {'a': 'fam_a', 'b': 'fam_b', 'st': 'strat'}\n"
                ),
            }
        ),
    )
    broken = check(root)
    expected = [
        "rule 5: ampcalc/schemes/base.py:1: ampcalc.schemes.base imports ampcalc.schemes.fam_b",
        "rule 5: ampcalc/schemes/_kern.py:2: ampcalc.schemes._kern imports ampcalc.schemes.fam_b",
        "rule 5: ampcalc/schemes/fam_a.py:1: ampcalc.schemes.fam_a imports "
        "ampcalc.schemes.strat.common",
        "rule 5: ampcalc/schemes/__init__.py:1: ampcalc.schemes imports ampcalc.schemes.fam_a",
        "rule 5: ampcalc/schemes/loose.py:1: neither a family",
    ]
    for start in expected:
        assert any(m.startswith(start) for m in broken), (start, broken)
    assert len(broken) == len(expected), broken


def test_cli_and_analyses_inner_rules_are_named(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "cli/__init__.py": "from ampcalc.cli import app\n",
            "cli/app.py": "from ampcalc.cli import conventions\nfrom ampcalc.cli import sweep\n",
            "cli/conventions.py": "from ampcalc.cli import app\n",
            "cli/sweep.py": "from ampcalc.cli import app, conventions\n",
            "cli/plan.py": "from ampcalc.cli import app\nfrom ampcalc.cli.sweep import f\n",
            "cli/pws.py": "",
            "cli/pws_keys.py": "from ampcalc.cli import pws\n",
            "analyses/__init__.py": "",
            "analyses/report.py": "from ampcalc.analyses import sweep\n",
            "analyses/sweep.py": "",
            "analyses/plan.py": "from ampcalc.analyses.sweep import g\n",
        },
    )
    broken = check(root)
    expected = [
        "rule 6: ampcalc/cli/app.py:2: ampcalc.cli.app imports ampcalc.cli.sweep",
        "rule 6: ampcalc/cli/conventions.py:1: ampcalc.cli.conventions imports ampcalc.cli.app",
        "rule 6: ampcalc/cli/plan.py:2: ampcalc.cli.plan imports ampcalc.cli.sweep",
        "rule 7: ampcalc/analyses/plan.py:1: ampcalc.analyses.plan imports ampcalc.analyses.sweep",
    ]
    for start in expected:
        assert any(m.startswith(start) for m in broken), (start, broken)
    # the rest are rule 4's circles (app -> conventions -> app, app -> sweep -> app)
    rest = [m for m in broken if not any(m.startswith(e) for e in expected)]
    assert rest and all(m.startswith("rule 4: import circle: ampcalc.cli.") for m in rest), rest
    assert len(broken) == len(expected) + len(rest)
