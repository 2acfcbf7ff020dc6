"""The public API as editors and type checkers see it: ``dir(autotune)``, the ``TYPE_CHECKING``
imports of autotune/__init__.py, the ``py.typed`` marker in the wheel, and annotations on
every public signature (issue 39, item 2)."""

from __future__ import annotations

import ast
import importlib
import inspect
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import autotune

ROOT = Path(__file__).resolve().parent.parent
INIT = ROOT / "autotune" / "__init__.py"
PUBLIC = [name for name in autotune.__all__ if name != "__version__"]


def test_dir_lists_every_public_name_before_any_is_imported():
    code = ("import sys, autotune; names = dir(autotune); "
            "print(sorted(set(autotune.__all__) - set(names))); "
            "print(sorted(m for m in ('pycuda', 'sqlalchemy', 'optuna', 'alembic') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "[]"], done.stdout


def test_dir_is_sorted_and_names_resolve():
    names = dir(autotune)
    assert names == sorted(names)
    for name in PUBLIC:
        assert getattr(autotune, name) is getattr(importlib.import_module(autotune._NAMES[name]), name)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        autotune.not_a_name  # noqa: B018


def _type_checking_imports() -> dict[str, str]:
    """``{name: module}`` of the imports under ``if TYPE_CHECKING:`` in autotune/__init__.py."""
    found: dict[str, str] = {}
    for node in ast.parse(INIT.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.dump(stmt)
                for alias in stmt.names:
                    found[alias.asname or alias.name] = stmt.module
    return found


def test_type_checking_imports_every_public_name_from_where_it_is_loaded():
    assert _type_checking_imports() == autotune._NAMES


def test_all_is_a_literal_list_and_every_import_an_explicit_re_export():
    """Issue 49 item 4: ``__all__ = [*_NAMES, ...]`` could not be read statically, so ``mypy
    --strict`` (no implicit re-export) refused every ``autotune.X``. A literal list of the lazy
    names and ``__version__``, and ``from m import X as X`` under ``TYPE_CHECKING``."""
    [value] = [node.value for node in ast.parse(INIT.read_text()).body if isinstance(node, ast.Assign)
               and [getattr(t, "id", None) for t in node.targets] == ["__all__"]]
    assert isinstance(value, ast.List) and all(isinstance(e, ast.Constant) for e in value.elts), ast.dump(value)
    assert sorted(e.value for e in value.elts) == sorted([*autotune._NAMES, "__version__"])
    for node in ast.parse(INIT.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            assert all(alias.asname == alias.name for stmt in node.body for alias in stmt.names)


def test_module_getattr_is_hidden_from_type_checkers():
    """A module ``__getattr__`` visible to a checker makes every misspelt name pass as ``Any``."""
    tree = ast.parse(INIT.read_text())
    top_level = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "__getattr__" not in top_level and "__dir__" in top_level
    hidden = [n for n in tree.body if isinstance(n, ast.If) and isinstance(n.test, ast.UnaryOp)
              and isinstance(n.test.op, ast.Not) and getattr(n.test.operand, "id", None) == "TYPE_CHECKING"]
    assert [f.name for n in hidden for f in n.body if isinstance(f, ast.FunctionDef)] == ["__getattr__"]


def test_py_typed_marker_is_in_the_package_and_the_wheel_takes_the_package():
    assert (ROOT / "autotune" / "py.typed").is_file()
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["autotune"] and "exclude" not in wheel
    if (ROOT / ".git").exists() and shutil.which("git") is not None:  # a checkout (not an sdist or a copy)
        ignored = subprocess.run(["git", "check-ignore", "-q", "autotune/py.typed"], cwd=ROOT)
        assert ignored.returncode == 1  # not ignored by git, so hatch (which reads .gitignore) ships it


def test_the_built_wheel_holds_py_typed(tmp_path):
    """Builds the wheel with hatchling, where it is installed (``pip install hatchling``)."""
    builder = pytest.importorskip("hatchling.builders.wheel")
    if shutil.which("git") is None:
        pytest.skip("no git")
    wheel = builder.WheelBuilder(str(ROOT))
    built = list(wheel.build(directory=str(tmp_path), versions=["standard"]))
    names = zipfile.ZipFile(built[0]).namelist()
    assert "autotune/py.typed" in names and "autotune/__init__.py" in names


def _public_callables():
    """``(qualified name, function)`` of every public function, and every public method (and
    ``__init__``, ``__call__``) of the public classes and of the classes they return."""
    seen: set[int] = set()
    classes = []
    for name in PUBLIC:
        obj = getattr(autotune, name)
        if inspect.isclass(obj):
            classes.append(obj)
        elif inspect.isfunction(obj):
            yield name, obj
            ret = inspect.get_annotations(obj, eval_str=False).get("return")
            module = importlib.import_module(obj.__module__)
            cls = getattr(module, ret, None) if isinstance(ret, str) else None
            if inspect.isclass(cls) and cls.__module__.startswith("autotune"):
                classes.append(cls)
    for cls in classes:
        if id(cls) in seen or issubclass(cls, BaseException):
            continue
        seen.add(id(cls))
        for key, value in vars(cls).items():
            if key.startswith("_") and key not in ("__init__", "__call__"):
                continue
            if isinstance(value, (classmethod, staticmethod)):
                value = value.__func__
            elif isinstance(value, property):
                value = value.fget
            if inspect.isfunction(value) and value.__module__.startswith("autotune"):
                yield f"{cls.__name__}.{key}", value


def test_every_public_signature_is_annotated():
    names = dict(_public_callables())
    # the walk reaches what it is meant to: functions, methods, returned classes
    assert {"tune", "lookup", "compiled", "launcher", "transpose", "load_kernel", "SearchOptions.of",
            "KernelLauncher.__call__", "Launcher.__call__", "Kernel.space"} <= set(names)
    missing = []
    for qual, func in names.items():
        sig = inspect.signature(func)
        missing += [f"{qual}({p.name})" for p in sig.parameters.values()
                    if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
        if sig.return_annotation is inspect.Signature.empty:
            missing.append(f"{qual} -> ?")
    assert missing == []


def test_public_classes_annotate_every_field():
    for name in ("SearchOptions", "LaunchConfig", "Config", "Kernel"):
        cls = getattr(autotune, name)
        assert [f for f in cls.__dataclass_fields__.values() if f.type in ("", "object", "Any")] == [], name


USER_SCRIPT = """\
import autotune
reveal_type(autotune.lookup)
reveal_type(autotune.SearchOptions().top_k)
autotune.lookpu


def main() -> None:
    options: autotune.SearchOptions = autotune.SearchOptions(trials=10)
    kernel: autotune.Kernel = autotune.resolve_kernel("smem_pad")
    cfg: autotune.LaunchConfig = autotune.lookup(kernel, (64, 64), "float32", device=0)
    config: autotune.Config = cfg.config
    print(options, config.key, autotune.__version__, sorted(autotune.KERNELS), autotune.DTYPES)
    autotune.clear_cache()
"""


UNFOLLOWED = ("sqlalchemy", "matplotlib", "psycopg", "alembic", "PIL")
"""Libraries that autotune imports but no module defining a public name does (the store's and
the plots'), so no public signature names a type of theirs: the type checker does not follow
them (``follow_imports = skip``), about 12 s of its 21 spent reading their modules. numpy and
Optuna are followed: ``dtype=`` takes numpy's dtypes, ``SearchOptions(strategy=)`` Optuna's
samplers."""


def test_a_type_checker_sees_the_api(tmp_path):
    """mypy --strict (what a user's project may run) reads the signatures through ``import
    autotune``, takes every public name (no ``does not explicitly export``) and refuses a
    misspelt one: the misspelt name is the script's one error."""
    pytest.importorskip("mypy")
    defining = {getattr(autotune, name).__module__ for name in PUBLIC
                if inspect.isclass(getattr(autotune, name)) or inspect.isfunction(getattr(autotune, name))}
    for module in defining:  # what is not followed (UNFOLLOWED) is in no public signature
        tree = ast.parse(inspect.getsource(sys.modules[module]))
        imported = {(alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
                    for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                    for alias in node.names}
        assert not imported & set(UNFOLLOWED), module
    user = tmp_path / "user.py"
    user.write_text(USER_SCRIPT)
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\n[mypy-{','.join(f'{lib}.*' for lib in UNFOLLOWED)}]\nfollow_imports = skip\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--strict",
                           "--follow-imports=silent", "--ignore-missing-imports", "--no-error-summary",
                           "--cache-dir", str(tmp_path / "cache"), str(user)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    lines = done.stdout.splitlines()
    assert [line for line in lines if ": error:" in line and ":4: " not in line] == [], done.stdout
    assert any(":2: note: Revealed type is \"def (kernel: str | pathlib.Path | autotune.kernel.model.Kernel" in line
               and "-> autotune.runtime.lookup.LaunchConfig" in line for line in lines), done.stdout
    assert any(':3: note: Revealed type is "int"' in line for line in lines), done.stdout
    assert any(':4: error: Module has no attribute "lookpu"' in line for line in lines), done.stdout


def _public_docstrings():
    """``(where, docstring)`` of every name of ``autotune.__all__`` and of the public members of
    each class among them, as ``help()`` and an editor's hover show them."""
    for name in PUBLIC:
        obj = getattr(autotune, name)
        yield f"autotune.{name}", inspect.getdoc(obj) or ""
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if not member.startswith("_") or member == "__call__":
                    yield f"autotune.{name}.{member}", inspect.getdoc(value) or ""
    yield "autotune", inspect.getdoc(autotune) or ""


def test_public_docstrings_hold_no_cross_reference_markup():
    """Issue 49 item 11: ``help(autotune.lookup)`` showed ``A [`LaunchConfig`][autotune.runtime.
    lookup.LaunchConfig]``. A docstring says `` `LaunchConfig` ``; the docs site links it
    (docs/_hooks/plain_crossrefs.py)."""
    docs = dict(_public_docstrings())
    assert "autotune.SearchOptions.replace" in docs and "autotune.Kernel.check" in docs
    assert "`LaunchConfig`" in docs["autotune.lookup"]
    bad = [f"{where}: {line.strip()}" for where, doc in docs.items() for line in doc.splitlines()
           if "][autotune." in line]
    assert bad == []
