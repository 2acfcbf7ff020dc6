"""The CUDA backends the measuring code runs on, and the small registry that picks one.

=================  =====================================  ======================================
name               what                                   installed by
=================  =====================================  ======================================
``cuda-bindings``  NVIDIA's ``cuda.bindings.driver``      ``pip install 'cuda-autotune[cuda]'``
                   (wheels only; the default)
``pycuda``         PyCUDA's ``pycuda.driver``             ``pip install 'cuda-autotune[pycuda]'``
                   (builds against the CUDA headers)
=================  =====================================  ======================================

Which one (:func:`chosen`): the one ``AUTOTUNE_BACKEND`` names (``autotune --backend NAME``
sets it; a measuring child inherits it), else the first of :data:`ORDER` that is installed.
Each backend keeps the contract of :class:`~autotune.measure.backends.base.Backend`; another
one is added with :func:`register` (Kernel Tuner's backends are the model: one abstract class,
one module per library).
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Callable

from autotune import settings
from autotune.errors import GPUUnavailableError, InvalidInputError
from autotune.measure.backends.base import Backend

__all__ = ["ENV", "ORDER", "Backend", "register", "names", "installed", "chosen", "get", "use", "created", "reset"]

ENV = settings.BACKEND.name
"""The environment variable that names the backend (read at each :func:`get` without a name)."""
ORDER = ("cuda-bindings", "pycuda")
"""Without ``AUTOTUNE_BACKEND``: the first of these that is installed."""

_FACTORIES: dict[str, tuple[str, str, str]] = {
    "cuda-bindings": ("autotune.measure.backends.bindings:BindingsBackend", "cuda.bindings",
                      "pip install 'cuda-autotune[cuda]'"),
    "pycuda": ("autotune.measure.backends.pycuda_driver:PyCudaBackend", "pycuda",
               "pip install 'cuda-autotune[pycuda]'"),
}
"""name -> (``module:class``, the module it needs, how to install it)."""
_made: dict[str, Backend] = {}
_lock = threading.Lock()


def register(name: str, factory: str | Callable[[], Backend], needs: str = "", install: str = "") -> None:
    """Add (or replace) backend ``name``: ``factory`` is a ``"module:Class"`` path or a callable
    returning a :class:`Backend`; ``needs``: the module it imports (how :func:`installed` tells);
    ``install``: the command that installs it (named in the error when it is missing)."""
    _FACTORIES[name] = (factory, needs, install)  # type: ignore[assignment]
    _made.pop(name, None)


def names() -> list[str]:
    """The registered backends' names."""
    return list(_FACTORIES)


def _installed(needs: str) -> bool:
    if not needs:
        return True
    try:
        return importlib.util.find_spec(needs) is not None
    except (ImportError, ValueError):
        return False


def installed() -> dict[str, bool]:
    """Whether each registered backend's library is installed (nothing is imported or initialised)."""
    return {name: _installed(needs) for name, (_, needs, _) in _FACTORIES.items()}


def chosen() -> str:
    """The backend's name: ``$AUTOTUNE_BACKEND``, else the first of :data:`ORDER` that is installed
    (``cuda-bindings`` where none is: its error then says how to install it).

    Raises:
        InvalidInputError: ``AUTOTUNE_BACKEND`` names no registered backend.
    """
    asked = settings.BACKEND.get().strip()
    if asked:
        if asked not in _FACTORIES:
            raise InvalidInputError(f"{ENV}={asked!r} is not a backend; allowed: {', '.join(_FACTORIES)}")
        return asked
    present = installed()
    return next((name for name in ORDER if present.get(name)), ORDER[0])


def get(name: str | None = None) -> Backend:
    """The backend ``name`` (default :func:`chosen`), made once per process (not initialised:
    its first call initialises the driver, :meth:`Backend.init`).

    Raises:
        InvalidInputError: no backend of that name.
        GPUUnavailableError: its library is not installed (the message says how to install it).
    """
    name = name or chosen()
    if name not in _FACTORIES:
        raise InvalidInputError(f"backend {name!r} is not registered; allowed: {', '.join(_FACTORIES)}")
    with _lock:
        if name in _made:
            return _made[name]
        factory, needs, install = _FACTORIES[name]
        if not _installed(needs):
            others = [n for n, ok in installed().items() if ok and n != name]
            also = f"; installed: {', '.join(others)} ({ENV}={others[0]})" if others else ""
            raise GPUUnavailableError(f"the {name} backend is not installed ({needs} is missing): {install}{also}")
        if isinstance(factory, str):
            module, _, cls = factory.partition(":")
            factory = getattr(importlib.import_module(module), cls)
        _made[name] = backend = factory()
        return backend


def use(name: str) -> Backend:
    """Choose backend ``name`` for this process and the measuring processes it starts (sets
    ``AUTOTUNE_BACKEND``); returns it.

    Raises:
        InvalidInputError, GPUUnavailableError: as :func:`get`.
    """
    backend = get(name)
    settings.BACKEND.set(name)
    return backend


def created() -> list[Backend]:
    """The backends made so far in this process (their error classes are the driver's errors)."""
    return list(_made.values())


def reset() -> None:
    """Forget the backends made (the tests' fakes; a new :func:`get` makes them afresh)."""
    with _lock:
        _made.clear()
