"""``module:function`` references of kernel files (a reference or a comparison).

``module`` is an importable module (``autotune.kernel.references``) or a ``.py`` file
relative to the kernel file's folder (``ref.py:softmax``), loaded once per process.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from pathlib import Path

from autotune.errors import KernelFileError

__all__ = ["load_callable"]

_lock = threading.Lock()
_loaded: dict[tuple[str, Path | None], object] = {}


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
    try:
        if module_name.endswith(".py"):
            path = (base or Path.cwd()) / module_name
            loader_spec = importlib.util.spec_from_file_location(f"autotune_user_{path.stem}_{abs(hash(path))}",
                                                                 path)
            if loader_spec is None or not path.is_file():
                raise FileNotFoundError(path)
            module = importlib.util.module_from_spec(loader_spec)
            loader_spec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            module = importlib.import_module(module_name)
        fn = getattr(module, attr)
    except (ImportError, OSError, AttributeError, SyntaxError) as exc:
        raise KernelFileError(f"cannot load {spec!r}: {type(exc).__name__}: {exc}") from None
    if not callable(fn):
        raise KernelFileError(f"{spec!r} is not callable")
    with _lock:
        return _loaded.setdefault(key, fn)
