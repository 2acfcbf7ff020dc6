"""``module:function`` references of kernel files (a reference or a comparison).

``module`` is an importable module (``autotune.kernel.references``) or a ``.py`` file
relative to the kernel file's folder (``ref.py:softmax``), loaded once per process.
"""

from __future__ import annotations

import importlib
import re
import threading
import types
from pathlib import Path

from autotune.base.files import read_text
from autotune.errors import InvalidInputError, KernelFileError

__all__ = ["load_callable"]

_lock = threading.Lock()
_loaded: dict[tuple[str, Path | None], object] = {}
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_ATTR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def load_callable(spec: str, base: Path | None):
    """The function named by ``spec`` (``module:function``); a ``.py`` module is resolved
    relative to ``base``.

    Raises:
        KernelFileError: the module cannot be imported or has no such callable.
    """
    key = (spec, base)
    with _lock:
        if key in _loaded:
            return _loaded[key]
    module_name, _, attr = spec.rpartition(":")
    if not (module_name.endswith(".py") or _MODULE.match(module_name)) or not _ATTR.match(attr):
        raise KernelFileError(f"cannot load {spec!r}: give module:function, the module a dotted name "
                              "(package.module) or a .py file beside the kernel file, the function a name")
    try:
        module = _load_file(spec, (base or Path.cwd()) / module_name) if module_name.endswith(".py") \
            else importlib.import_module(module_name)
        fn = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise KernelFileError(f"cannot load {spec!r}: {type(exc).__name__}: {exc}") from None
    except KernelFileError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's module raised while it was imported
        raise KernelFileError(f"cannot load {spec!r}: importing it raised {type(exc).__name__}: "
                              f"{_first_line(exc)}") from None
    if not callable(fn):
        raise KernelFileError(f"{spec!r} is not callable")
    with _lock:
        return _loaded.setdefault(key, fn)


def _load_file(spec: str, path: Path) -> types.ModuleType:
    """Run the ``.py`` file ``path`` (read by :func:`autotune.base.files.read_text`) as a new module.

    Raises:
        KernelFileError: the file cannot be read or is not valid Python; what the module
            raises while it runs propagates (the caller names it).
    """
    try:
        text = read_text(path, "reference module")
        code = compile(text, str(path), "exec")
    except InvalidInputError as exc:
        raise KernelFileError(f"cannot load {spec!r}: {exc}") from None
    except (SyntaxError, ValueError) as exc:
        raise KernelFileError(f"cannot load {spec!r}: {type(exc).__name__}: {_first_line(exc)}") from None
    module = types.ModuleType(f"autotune_user_{path.stem}_{abs(hash(path))}")
    module.__file__ = str(path)
    exec(code, module.__dict__)  # the user's own reference code, as importing it would run it
    return module


def _first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, at most 200 characters."""
    text = (str(exc).strip().splitlines() or [""])[0]
    return text if len(text) <= 200 else text[:200] + "..."
