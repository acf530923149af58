"""The examples and documentation pages installed with ampcalc (``ampcalc/share/``).

Help texts run ``examples/designs/srswor.yaml`` and results cite ``docs/derivations.md``:
an installed ampcalc carries both, so ``ampcalc examples DIR`` copies the examples out
and ``ampcalc docs PAGE`` prints a page. ``scripts/sync_shipped.py`` makes the copies from
the repository's ``examples/`` and ``docs/``. Read through ``importlib.resources``, so
this works from any installed form of the package.
"""

from __future__ import annotations

import difflib
import os
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ampcalc.load.files import atomic_write, show_path
from ampcalc.model.errors import AmpcalcError

if TYPE_CHECKING:
    from importlib.abc import Traversable

#: a page is named by its path under ``docs/`` without this (``mechanisms/gaussian``)
DOC_SUFFIX = ".md"


def _share(part: str) -> Traversable:
    return resources.files("ampcalc").joinpath("share").joinpath(part)  # one name a call (3.10)


def _walk(root: Traversable, prefix: str = "") -> dict[str, Traversable]:
    """Every file under ``root``, by its ``/``-separated path, sorted."""
    found: dict[str, Traversable] = {}
    if not root.is_dir():
        return found
    for item in sorted(root.iterdir(), key=lambda t: t.name):
        name = f"{prefix}{item.name}"
        if item.is_dir():
            found.update(_walk(item, f"{name}/"))
        elif item.is_file():
            found[name] = item
    return found


def example_files() -> list[str]:
    """The shipped examples' paths relative to the examples folder
    (``designs/srswor.yaml``, ``budget/year.yaml``, ...)."""
    return list(_walk(_share("examples")))


def copy_examples(dest: str | os.PathLike[str], *, force: bool = False) -> list[str]:
    """Copy the examples into ``dest`` (created if missing), keeping their folders, so
    relative paths between them (a ledger's ``../designs/...``) keep working.

    Each file is written whole through ``atomic_write``. Returns the paths written.

    Raises:
        AmpcalcError: ``dest`` is a file; or (without ``force``) files there already
            have an example's name: nothing is written then.
    """
    root = Path(os.fspath(dest))
    if root.exists() and not root.is_dir():
        raise AmpcalcError(
            f"{show_path(root)!r} is a file; expected a folder to copy the examples into"
        )
    files = _walk(_share("examples"))
    if not files:
        raise AmpcalcError("this installation of ampcalc has no examples (ampcalc/share/)")
    if not force:
        there = [name for name in files if (root / name).exists()]
        if there:
            shown = ", ".join(there[:5]) + (
                f" and {len(there) - 5} more" if len(there) > 5 else ""
            )
            raise AmpcalcError(
                f"{len(there)} example file(s) already exist in {show_path(root)!r} "
                f"({shown}); nothing was copied (pass --force to overwrite them, or "
                "choose another folder)"
            )
    written = []
    for name, item in files.items():
        target = root / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AmpcalcError(
                f"cannot create the folder {show_path(target.parent)!r}: {exc.strerror}"
            ) from None
        with atomic_write(target, binary=True, option="examples") as fh:
            fh.write(item.read_bytes())
        written.append(str(target))
    return written


def doc_pages() -> list[str]:
    """The shipped documentation pages' names (``derivations``, ``mechanisms/gaussian``)."""
    return [n.removesuffix(DOC_SUFFIX) for n in _walk(_share("docs")) if n.endswith(DOC_SUFFIX)]


def doc_page(name: str) -> str:
    """The text of page ``name``; ``docs/derivations.md``, ``derivations.md`` and
    ``derivations`` all name the page results cite as ``docs/derivations.md``.

    Raises:
        AmpcalcError: no page has that name (with the closest name, if one is close).
    """
    key = name.strip().replace("\\", "/").removeprefix("./").removeprefix("docs/")
    key = key.removesuffix(DOC_SUFFIX)
    pages = _walk(_share("docs"))
    item = pages.get(key + DOC_SUFFIX)
    if item is None:
        names = doc_pages()
        close = difflib.get_close_matches(key[:100], names, n=1)
        raise AmpcalcError(
            f"no documentation page {name[:100]!r}; the pages are listed by 'ampcalc docs'",
            hint=f"did you mean '{close[0]}'?" if close else None,
        )
    return item.read_text(encoding="utf-8")
