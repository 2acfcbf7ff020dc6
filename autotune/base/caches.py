"""The registry of process-wide caches, which :func:`clear_cache` walks.

A module that keeps answers for the life of the process (``lookup``'s answers and open
databases, the op choice, prepared launches, launchers) registers a function that forgets them
when it is imported: ``caches.register("lookup", clear)``. A module never imported holds no
cache, so the registry is exactly what there is to clear. :func:`clear_cache` is the public
``autotune.clear_cache()``: call it after tuning in the same process, so that the next lookup
reads the database afresh.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

__all__ = ["register", "registered", "clear_cache", "get_or_make"]

_lock = threading.Lock()
_clears: dict[str, Callable[[], None]] = {}


def register(name: str, clear: Callable[[], None]) -> Callable[[], None]:
    """Register ``clear`` (no arguments; forgets one cache) under ``name``; returns ``clear``.

    Registering a name again replaces its function (a module reloaded by a test).
    """
    with _lock:
        _clears[name] = clear
    return clear


def get_or_make(cache: dict, key, make: Callable[[], object], lock: AbstractContextManager):
    """``cache[key]``, made by ``make()`` (outside ``lock``: it may build and load a module)
    when absent. Two threads that both miss make one each; the first stored is kept and
    returned to both, so every caller of one key gets the same object."""
    found = cache.get(key)
    if found is None:
        made = make()
        with lock:
            found = cache.setdefault(key, made)
    return found


def registered() -> tuple[str, ...]:
    """The registered caches' names, in the order they were first registered."""
    with _lock:
        return tuple(_clears)


def clear_cache() -> None:
    """Forget every registered cache: ``lookup``'s answers (and close the databases it
    opened, so that one created or upgraded since is read afresh), the op choice of
    ``autotune.transpose``, prepared launches and launchers. Device info stays (a device
    does not change in a process)."""
    with _lock:
        clears = list(_clears.values())
    for clear in clears:
        clear()
