"""Griffe extension: a public name in single backticks in a docstring links to its entry of the
API reference, so that the docstrings read cleanly in ``help()`` and an editor's hover (issue 49).

A docstring says `` `LaunchConfig` `` (or `` `SearchOptions.replace` `` for a member); the API
page shows it as a link to ``autotune.runtime.lookup.LaunchConfig``, as if it were written
``[`LaunchConfig`][autotune.runtime.lookup.LaunchConfig]``, the mkdocstrings markup that
``help()`` would show raw. The names linked are those docs/reference/api.md renders
(``::: path`` lines) and the public members of its classes, so every link has a target
(``mkdocs build --strict`` fails on one that has none). Double backticks (``name``) stay code.

Loaded by mkdocstrings' Python handler (``extensions:`` in mkdocs.yml).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

API_PAGE = Path(__file__).resolve().parent.parent / "reference" / "api.md"
# `Name` or `Class.member`, not inside ``double`` backticks nor already a [`link`][...]
CODE = re.compile(r"(?<![`\[])`([A-Za-z_][\w.]*)`(?![`\]])")


def rendered() -> list[str]:
    """The dotted paths the API page renders (``::: autotune.x.y.name``)."""
    return re.findall(r"^::: (autotune(?:\.\w+)+)\s*$", API_PAGE.read_text(), re.M)


def link(doc: str, targets: dict[str, str]) -> str:
    """``doc`` with every `` `name` `` that ``targets`` knows made a cross-reference to it."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        return f"[`{name}`][{targets[name]}]" if name in targets else m.group(0)
    return CODE.sub(one, doc)


def targets_of(package: Any) -> dict[str, str]:
    """Shown name -> identifier: each rendered object by its own name, each public member of a
    rendered class that has a docstring (what the page shows) as ``Class.member``. A name that
    two rendered objects share links to neither."""
    found: dict[str, str] = {}
    shared: set[str] = set()

    def add(name: str, path: str) -> None:
        if name in found and found[name] != path:
            shared.add(name)
        found[name] = path

    for path in rendered():
        obj = package[path.removeprefix(f"{package.path}.")]
        add(path.rsplit(".", 1)[1], path)
        if obj.is_class:
            for name, member in obj.members.items():  # what mkdocstrings shows: public, documented
                if not name.startswith("_") and not member.is_alias and member.docstring:
                    add(f"{obj.name}.{name}", f"{path}.{name}")
    return {name: path for name, path in found.items() if name not in shared}


def _objects(obj: Any):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


class PlainCrossrefs(griffe.Extension):
    """Turns `` `Name` `` into a cross-reference in every docstring of the ``autotune`` package."""

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        """Griffe 2 (and 1.14 on): the package is loaded. Linking twice changes nothing."""
        if pkg.name != "autotune":
            return
        targets = targets_of(pkg)
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = link(obj.docstring.value, targets)

    def on_package_loaded(self, *, pkg: Any, **kwargs: Any) -> None:
        """The same hook under griffe 1's older name."""
        self.on_package(pkg=pkg)
