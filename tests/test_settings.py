"""autotune.settings: every AUTOTUNE_* variable is one Setting, read at each use, and no other
module reads or writes the environment's AUTOTUNE_* variables itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from autotune import settings
from autotune.measure import backends, pipeline
from autotune.store import urls

PACKAGE = Path(settings.__file__).resolve().parent
C_NAMES = {"AUTOTUNE_CUDA_RUNTIME", "AUTOTUNE_REDUCE_SUM_MACRO_BLOCK_SIZE", "AUTOTUNE_RUNG_DEFAULT",
           "AUTOTUNE_RUNG_DISPATCH", "AUTOTUNE_RUNG_EXACT", "AUTOTUNE_RUNG_NEAREST_SHAPE", "AUTOTUNE_RUNG_SAME_ARCH"}
"""Names of the C header autotune writes (report/header.py): macros and enumerators, not variables."""


def _environ_uses(tree: ast.AST):
    """``(line, key)`` of every ``os.environ[...]``, ``os.environ.get/setdefault/pop(...)`` and
    ``os.getenv(...)``; ``key`` is the literal text, or ``None`` where the key is not a literal."""
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            key = node.slice
        elif isinstance(node, ast.Call) and node.args and ast.unparse(node.func) in (
                "os.environ.get", "os.environ.setdefault", "os.environ.pop", "os.getenv"):
            key = node.args[0]
        else:
            continue
        yield node.lineno, key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def test_no_module_but_settings_touches_an_autotune_variable():
    """Before: nine variables read in eight modules, through ``os.environ`` and each module's own
    constant. Now every key given to ``os.environ`` outside settings.py is a literal that is not
    one of ours (``COLUMNS``, ``CUPY_TF32``)."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "settings.py" and path.parent == PACKAGE:
            continue
        for line, key in _environ_uses(ast.parse(path.read_text(), str(path))):
            if key is None or key.startswith("AUTOTUNE_"):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    assert wrong == []


def test_every_variable_the_package_names_is_a_setting():
    named = set()
    for path in PACKAGE.rglob("*.py"):
        named |= set(re.findall(r"\bAUTOTUNE_[A-Z_]*[A-Z]\b", path.read_text()))
    named -= C_NAMES
    assert named == {s.name for s in settings.SETTINGS}
    assert len(settings.SETTINGS) == len(named) and all(s.doc for s in settings.SETTINGS)
    assert all(f"``{s.name}``" in settings.__doc__ for s in settings.SETTINGS)  # the module doc's table


def test_a_setting_is_read_at_each_use(monkeypatch):
    """No value is cached at import: a test's monkeypatch.setenv is seen by the next read."""
    monkeypatch.delenv("AUTOTUNE_COMPILE_WORKERS", raising=False)
    assert settings.COMPILE_WORKERS.get() == ""
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "3")
    assert settings.COMPILE_WORKERS.get() == "3" and pipeline.workers() == 3
    monkeypatch.setenv("AUTOTUNE_DB", "sqlite:///elsewhere.db")
    assert urls.given_url() == "sqlite:///elsewhere.db"


def test_set_reaches_the_environment_the_children_inherit(monkeypatch):
    monkeypatch.delenv("AUTOTUNE_BACKEND", raising=False)
    settings.BACKEND.set("pycuda")
    import os

    assert os.environ["AUTOTUNE_BACKEND"] == "pycuda" == settings.BACKEND.get()
    assert backends.ENV == settings.BACKEND.name and pipeline.WORKERS_ENV == settings.COMPILE_WORKERS.name
