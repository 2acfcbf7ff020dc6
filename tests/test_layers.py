"""The floors and rules of docs/architecture.md, asserted over the package's imports.

Every import of every module under ``autotune/`` is read with ``ast``: module-level ones, those
inside functions (lazy) and those under ``TYPE_CHECKING`` alike, since each is a dependency.
The floors come from the table of docs/architecture.md itself, so the page and the code cannot
drift apart without this test failing.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autotune"
DOC = (ROOT / "docs" / "architecture.md").read_text()

THIRD_PARTY = {  # library -> the folders it may be imported under (docs/architecture.md, "Rules")
    "sqlalchemy": ("store",),
    "alembic": ("store",),
    "pycuda": ("measure", "runtime"),
    "cuda": ("measure", "runtime"),  # cuda.bindings (cuda-bindings)
    "optuna": ("store", "search", "cli"),
}
VERSION_SOURCE = ("autotune", "__version__")  # `from autotune import __version__`: allowed anywhere


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


@cache
def _floors() -> dict[str, tuple[int, str]]:
    """``{entry: (floor, entry)}`` from the doc's table: an entry is a folder (``autotune/kernel/``)
    or a module file (``autotune/errors.py``), as a dotted prefix."""
    floors = {}
    for number, paths in re.findall(r"^\| (\d+) \| ([^|]+) \|", DOC, re.M):
        for path in re.findall(r"`(autotune/[^`]*)`", paths):
            entry = path.rstrip("/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            floors[entry + ("." if path.endswith("/") else "")] = (int(number), entry)
    return floors


def _floor(module: str) -> tuple[int, str]:
    """The floor and the table entry ``module`` belongs to: a module file named in the table, or
    the folder (``autotune.kernel.``) it is in, the deepest one."""
    entry = max((e for e in _floors() if module == e or e.endswith(".") and (module + ".").startswith(e)),
                key=len, default=None)
    if entry is None:
        raise AssertionError(f"{module} is on no floor of docs/architecture.md")
    return _floors()[entry]


def _resolve(name: str) -> str | None:
    """The module of the package an imported name lives in (``autotune.store.stale`` for
    ``from autotune.store import stale``; ``autotune.cli`` for ``from autotune.cli import app``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@cache
def _imports() -> tuple[tuple[str, str, str, int], ...]:
    """Every ``(module, imported name, resolved module or '', line)`` of the package."""
    found = []
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                names = [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                target = _resolve(name) if name.split(".")[0] == "autotune" else None
                found.append((module, name, target or "", node.lineno))
    return tuple(found)


def test_the_ground_floor_is_what_the_guide_says():
    assert (PACKAGE / "base" / "__init__.py").read_text() == (
        '"""Ground floor: process-wide pieces every other floor may use (files, signals, caches)."""\n')


def test_every_folder_and_module_the_doc_names_exists():
    named = set(re.findall(r"`(autotune/[^`\s]*)`", DOC))
    assert named, "docs/architecture.md names no folder"
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert missing == []
    # and every folder of the package is on a floor, itself or inside a folder of the table (a
    # new top-level folder needs its line in the doc)
    folders = {p.parent for p in PACKAGE.rglob("*.py")} - {PACKAGE}
    entries = [e for e in _floors() if e.endswith(".")]
    assert sorted(str(f.relative_to(ROOT)) for f in folders
                  if not any((f.relative_to(ROOT).as_posix().replace("/", ".") + ".").startswith(e)
                             for e in entries)) == []


def test_every_module_is_on_a_floor():
    for module in MODULES:
        _floor(module)


def test_no_upward_import_and_no_import_between_siblings():
    wrong = []
    for module, name, target, line in _imports():
        if not target or target == module or tuple(name.rsplit(".", 1)) == VERSION_SOURCE:
            continue
        (mine, my_entry), (theirs, their_entry) = _floor(module), _floor(target)
        if theirs > mine:
            wrong.append(f"{module}:{line} imports {name} from floor {theirs} (it is on floor {mine})")
        elif theirs == mine and my_entry != their_entry and mine != 0:
            wrong.append(f"{module}:{line} imports {name} from its sibling {their_entry}")
    assert wrong == []


@pytest.mark.parametrize("library", sorted(THIRD_PARTY))
def test_third_party_libraries_stay_on_their_floors(library):
    allowed = THIRD_PARTY[library]
    line = next((text for text in DOC.splitlines() if library.lower() in text.lower() and "only under" in text), "")
    assert all(f"`{folder}/`" in line for folder in allowed), f"docs/architecture.md states no rule for {library}"
    wrong = [f"{module}:{n}" for module, name, _, n in _imports() if name.split(".")[0] == library
             and module.split(".")[1:2] not in [[folder] for folder in allowed]]
    assert wrong == []


def _edges() -> dict[str, set[str]]:
    """``module -> the modules it imports`` (lazy ones too), a package's ``__init__`` included:
    importing ``autotune.search.strategies`` runs its ``__init__``, and so imports what that
    imports. Nothing is left out."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, name, target, _ in _imports():
        if target and target != module:
            edges[module].add(target)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycles_not_even_through_lazy_imports():
    """Not through a package's ``__init__`` either (the edges of issue 38's cycle: search.options
    imported ``autotune.search.strategies``, whose ``__init__`` imports its registry, which imported
    search.options lazily); the command line's neither (its root app imports no command module:
    each registers on it, and ``autotune.cli.commands`` imports them all)."""
    assert _cycles(_edges()) == []


def test_a_cycle_through_a_packages_init_is_caught():
    """The rule's own check: a cycle one of whose edges is a package ``__init__`` importing its
    own module (as issue 38's was) is found. search.tuner imports ``autotune.search.strategies``
    (the package); a lazy import of the tuner by the registry would close the cycle."""
    edges = _edges()
    assert "autotune.search.strategies.registry" in edges["autotune.search.strategies"]
    edges["autotune.search.strategies.registry"].add("autotune.search.tuner")
    wanted = {"autotune.search.tuner", "autotune.search.strategies", "autotune.search.strategies.registry"}
    assert any(wanted <= set(c) for c in _cycles(edges))


def test_the_root_app_imports_no_command_module_and_the_commands_module_imports_every_one():
    edges = _edges()
    commands = {m for m in MODULES if m.startswith("autotune.cli.") and "autotune.cli.root" in edges[m]
                and m != "autotune.cli.commands"}
    assert "autotune.cli.search" in commands
    assert not edges["autotune.cli.root"] & commands
    assert commands <= edges["autotune.cli.commands"]


def test_import_autotune_imports_no_heavy_library():
    code = ("import sys, autotune; autotune.__all__; "
            "print(sorted(m for m in ('pycuda', 'sqlalchemy', 'optuna', 'alembic') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_process_spawned_by_the_console_script_imports_no_command_line(tmp_path):
    # multiprocessing's spawn runs the parent's main script again in each child (as
    # "__mp_main__"): the `autotune` script's `from autotune.cli import main` must not import
    # Typer, Rich or the commands in every measuring process and GPU worker
    (tmp_path / "probe.py").write_text(
        "import sys\n"
        "def loaded(_):\n"
        "    return sorted(m for m in ('typer', 'rich', 'autotune.cli.root', 'autotune.cli.search') if m in sys.modules)\n")
    script = tmp_path / "autotune"
    script.write_text("import sys\nfrom autotune.cli import main\nif __name__ == '__main__':\n"
                      "    import multiprocessing, probe\n"
                      "    print(multiprocessing.get_context('spawn').Pool(1).map(probe.loaded, [0])[0])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    app = subprocess.run([sys.executable, "-c", "from autotune.cli import app; print(type(app).__name__)"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    assert app.stdout.strip() == "Typer"
