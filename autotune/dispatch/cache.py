"""Each dispatch fit once per store change: :func:`fitted` keeps the last fit of each identity
(a database and a kernel's key without dims) with the store's state it was fit at, and fits
again only when that state changes.

The state is whatever the caller reads cheaply and changes whenever a trial of the kernel is
stored: :meth:`autotune.store.reader.ResultsReader.trials_state`'s largest trial id and number
of trials (one query). So a process's cold lookups of untuned shapes share one fit, and a
search that stores a trial makes the next cold lookup fit again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

from autotune.base import caches
from autotune.dispatch.fit import Dispatch

__all__ = ["fitted", "fits", "clear"]

_lock = threading.Lock()
_fits: dict[Hashable, tuple[Hashable, Dispatch]] = {}
_count = [0]  # fits made by :func:`fitted` in this process, for tests and the microbenchmark


def fitted(identity: Hashable, state: Hashable, fit: Callable[[], Dispatch]) -> Dispatch:
    """The dispatch of ``identity`` fit at ``state``: the one kept if it was fit at this state,
    else ``fit()`` (called outside the lock: two threads racing may both fit; the last kept)."""
    with _lock:
        known = _fits.get(identity)
    if known is not None and known[0] == state:
        return known[1]
    d = fit()
    with _lock:
        _fits[identity] = (state, d)
        _count[0] += 1
    return d


def fits() -> int:
    """How many fits :func:`fitted` has made in this process."""
    return _count[0]


def clear() -> None:
    """Forget every fit (registered with :mod:`autotune.base.caches`)."""
    with _lock:
        _fits.clear()


caches.register("dispatch", clear)
