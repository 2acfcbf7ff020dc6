"""Tuned configs looked up at runtime: ``lookup`` gives the config to launch a kernel with.

``lookup`` answers with the stored best config for the exact key of the caller's device,
kernel source, toolchain, shape and dtype, or with the kernel's built-in default, saying
which. Answers are cached in the process (thread safe); :func:`clear_cache` forgets them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from .config import Config
from .device import DeviceInfo, query_device
from .dtypes import get_dtype
from .key import TuningKey, tuning_key
from .kernels import get_kernel
from .store import Store

__all__ = ["LaunchConfig", "lookup", "clear_cache"]


@dataclass(frozen=True)
class LaunchConfig:
    """The config to launch a kernel with, and where it came from.

    Attributes:
        config: kernel name and macro values.
        source: ``"tuned"`` (stored best for the exact key) or ``"default"``.
        gbps: effective bandwidth measured when it was tuned, GB/s (``None`` for default).
        pct_memcpy: that bandwidth as % of the device memcpy then (``None`` for default).
        note: one line saying what was found.
    """

    config: Config
    source: str
    gbps: float | None = None
    pct_memcpy: float | None = None
    note: str = ""


_lock = threading.Lock()
_cache: dict[tuple[TuningKey, str], LaunchConfig] = {}
_stores: dict[str, Store] = {}


def _store(db: str | None) -> Store:
    """One open :class:`Store` per database (opening one checks and upgrades its schema)."""
    name = db or os.environ.get("AUTOTUNE_DB") or ""
    with _lock:
        if name not in _stores:
            _stores[name] = Store(db)
        return _stores[name]


def clear_cache() -> None:
    """Forget cached answers (call after tuning in the same process)."""
    with _lock:
        _cache.clear()


def lookup(kernel: str, shape: tuple[int, int], dtype="float32", *,
           device: int | DeviceInfo = 0, db: str | None = None) -> LaunchConfig:
    """The config to launch ``kernel`` with for a ``shape`` input of ``dtype`` on ``device``.

    Args:
        kernel: catalog name, e.g. ``"smem_pad"``.
        shape: ``(rows, cols)`` of the input.
        dtype: NumPy dtype or its name.
        device: CUDA ordinal (queried through PyCUDA) or a :class:`DeviceInfo`.
        db: SQLAlchemy URL of the results database (default: ``AUTOTUNE_DB`` or the
            platformdirs default).

    Raises:
        InvalidInputError: unknown kernel or dtype, bad shape or device ordinal.
        GPUUnavailableError: ``device`` is an ordinal and there is no GPU or PyCUDA.
        StoreError: the database cannot be read.
    """
    info = device if isinstance(device, DeviceInfo) else query_device(device)
    rows, cols = (int(n) for n in shape)
    key = tuning_key(kernel, info, rows, cols, get_dtype(dtype).name)
    store = _store(db)
    with _lock:
        hit = _cache.get((key, store.url))
    if hit is not None:
        return hit
    best = store.best(key)
    if best is None:
        answer = LaunchConfig(get_kernel(kernel).default_config(), "default",
                              note=f"nothing tuned for {kernel} {rows}x{cols} {key.dtype} on {info.name}; "
                                   "using the kernel's default")
    else:
        answer = LaunchConfig(best.config, "tuned", best.gbps, best.pct_memcpy,
                              note=f"tuned {best.updated_at:%Y-%m-%d}: {best.gbps:.0f} GB/s")
    with _lock:
        _cache[(key, store.url)] = answer
    return answer
