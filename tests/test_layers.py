"""The package's layer rules, checked over the import statements of every module.

The rules (README, "How the code is organised"):

1. imports only go downward: each package may import the packages listed for it in
   ``ALLOWED`` and nothing above;
2. only ``cli/`` imports typer; only ``cli/`` and ``output/`` import rich and jinja2
   (the template engine of the optional report, with its markupsafe);
3. no module imports another package's ``_private`` module or name;
4. no import circles between modules (imports inside functions and under
   ``TYPE_CHECKING`` count: a circle is a circle however late it closes).

Each broken rule is reported with its number, the file and line, and the import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "ampcalc"

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
    "records": {"output", "engine", "designs", "schemes", "load", "model", "math"},
    "output": {"analyses", "load", "model", "math"},
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


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def unit_of(module: str) -> str:
    """The layer a module belongs to: its package below ``ampcalc``, or itself."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def imports(path: Path, root: Path) -> Iterator[tuple[int, str, str | None]]:
    """(line, imported module, imported name or None) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                yield node.lineno, module, alias.name


def resolve(module: str, name: str | None, known: set[str]) -> str:
    """The ampcalc module an import refers to (``from pkg import mod`` -> ``pkg.mod``)."""
    if name is not None and f"{module}.{name}" in known:
        return f"{module}.{name}"
    return module


def check(root: Path = ROOT) -> list[str]:
    """Every broken rule in the package at ``root``, one message each."""
    files = sorted(root.rglob("*.py"))
    known = {module_name(f, root) for f in files}
    top = root.name
    broken: list[str] = []
    graph: dict[str, set[str]] = {m: set() for m in known}
    for path in files:
        here = module_name(path, root)
        unit = unit_of(here)
        where = f"{path.relative_to(root.parent)}"
        for line, module, name in imports(path, root):
            head = module.split(".")[0]
            if head == "typer" and unit not in TYPER:
                broken.append(f"rule 2: {where}:{line}: imports typer outside cli/")
            if head == "rich" and unit not in RICH:
                broken.append(f"rule 2: {where}:{line}: imports rich outside cli/ and output/")
            if head in ("jinja2", "markupsafe") and unit not in TEMPLATES:
                broken.append(f"rule 2: {where}:{line}: imports {head} outside cli/ and output/")
            if head != top:
                continue
            target = resolve(module, name, known)
            if target not in known:
                continue
            graph[here].add(target)
            other = unit_of(target)
            if other != unit and other not in ALLOWED.get(unit, set()):
                broken.append(
                    f"rule 1: {where}:{line}: {unit}/ imports {target} ({other}/ is not "
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
    broken += [f"rule 4: import circle: {' -> '.join(c)}" for c in circles(graph)]
    return broken


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


# --- the tests ----------------------------------------------------------------------------


def test_every_package_is_a_known_layer() -> None:
    units = {unit_of(module_name(f, ROOT)) for f in ROOT.rglob("*.py")}
    assert units <= set(ALLOWED), f"packages without a layer rule: {units - set(ALLOWED)}"


def test_every_package_says_its_job_and_what_it_may_import() -> None:
    for init in ROOT.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and "import" in doc, f"{init}: docstring must say what it may import"


def test_the_layer_rules_hold() -> None:
    assert check() == []


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
    assert any(m.startswith("rule 4: import circle: ampcalc.math.numeric") for m in broken)


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
