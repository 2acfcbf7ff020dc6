"""Tuned configs looked up at runtime: ``lookup`` gives the config to launch a kernel with.

``lookup`` climbs a ladder and says which rung it took (:attr:`LaunchConfig.rung`):

1. ``exact``: the stored best of the exact key (device model, kernel source hash, shape,
   dtype, nvcc version and compile flags; :mod:`autotune.store.key`).
2. ``nearest_shape``: the same device, kernel source, dtype and toolchain, tuned for the
   nearest shape by log-distance ``sqrt(ln(r/r')^2 + ln(c/c')^2)`` (rows, cols; a matrix
   product adds ``ln(k/k')^2`` for its K and uses only results of matrix products): a ratio
   measure, so 2048 and 8192 are equally far from 4096 (a heuristic of this project, issue 4:
   tile counts and cache footprints scale with the ratio). Ties: larger area, then more
   rows, then more cols.
3. ``same_arch``: another device of the same compute capability (same binary), same shape
   if tuned there, else the nearest by the same distance; ties: device name, then as above.
4. ``default``: the kernel's built-in default config.

Results whose kernel source hash, nvcc version or compile flags no longer match (or whose
macros no longer fit the kernel) are stale: never used, counted in the note. Answers are
cached per process on the call's arguments (a warm call is one dict lookup under a lock);
device info for an ordinal is queried once per process. :func:`clear_cache` forgets answers.
"""

from __future__ import annotations

import math
import operator
import os
import threading
import warnings
from collections import Counter
from dataclasses import dataclass, replace

from autotune.kernel.config import Config
from autotune.measure.device import DeviceInfo, query_device
from autotune.kernel.dtypes import get_dtype
from autotune.errors import InvalidInputError
from autotune.store.key import TuningKey, tuning_key
from autotune.kernel.catalog import Kernel, get_kernel
from autotune.kernel.problem import Problem, format_shape, problem_of
from autotune.store.records import BestRecord
from autotune.store.repository import Store

__all__ = ["LaunchConfig", "RUNGS", "lookup", "clear_cache"]

RUNGS = ("exact", "nearest_shape", "same_arch", "default")
MAX_CACHED = 65536
"""Answers kept per process; the cache starts afresh when full."""


@dataclass(frozen=True)
class LaunchConfig:
    """The config to launch a kernel with, and where it came from.

    Attributes:
        config: kernel name and macro values.
        source: ``"tuned"`` (rungs exact, nearest_shape, same_arch) or ``"default"``.
        gbps: effective bandwidth measured when the used result was tuned, GB/s, for
            ``tuned_shape`` on ``tuned_device`` (``None`` for default; for a matrix product
            its minimum traffic per time, see ``gflops``).
        pct_memcpy: that bandwidth as % of that device's memcpy then (``None`` for default).
        note: one line saying what was found (and how many stale results were skipped).
        rung: one of :data:`RUNGS`.
        tuned_shape: ``(rows, cols)`` the used result was tuned for, ``(M, N, K)`` for a
            matrix product (``None`` for default).
        tuned_device: name of the device it was tuned on (``None`` for default).
        gflops: GFLOP/s measured there, for a matrix product (else ``None``).
    """

    config: Config
    source: str
    gbps: float | None = None
    pct_memcpy: float | None = None
    note: str = ""
    rung: str = "default"
    tuned_shape: tuple[int, ...] | None = None
    tuned_device: str | None = None
    gflops: float | None = None


_lock = threading.Lock()  # guards _cache only: a warm call holds it for one dict lookup
_cache: dict[tuple, LaunchConfig] = {}
_open_lock = threading.Lock()  # guards _stores and _devices (slow to fill; never blocks warm calls)
_stores: dict[str, Store] = {}
_warned: set[str] = set()  # databases whose older schema was warned about
_devices: dict[int, DeviceInfo] = {}


def clear_cache() -> None:
    """Forget cached answers and close the databases opened for them (call after tuning in
    the same process: a database created or upgraded since is then read afresh). Device info
    stays."""
    with _lock:
        _cache.clear()
    with _open_lock:
        for store in _stores.values():
            store.close()
        _stores.clear()


def lookup(kernel: str, shape: tuple[int, ...], dtype="float32", *,
           device: int | DeviceInfo = 0, db: str | None = None) -> LaunchConfig:
    """The config to launch ``kernel`` with for a ``shape`` input of ``dtype`` on ``device``.

    Args:
        kernel: catalog name, e.g. ``"smem_pad"``.
        shape: ``(rows, cols)`` of the input in elements, integers >= 1; for a matrix
            product (``matmul_*`` kernels) ``(M, N, K)`` of ``C[M,N] = A[M,K] @ B[K,N]``.
        dtype: NumPy dtype or its name.
        device: CUDA ordinal (queried through PyCUDA once per process) or a :class:`DeviceInfo`.
        db: SQLAlchemy URL of the results database (default: ``AUTOTUNE_DB`` or the
            platformdirs default).

    Raises:
        InvalidInputError: unknown kernel or dtype, bad shape or device.
        GPUUnavailableError: no nvcc on PATH, or ``device`` is an ordinal and there is no
            GPU or PyCUDA.
        StoreError: the database cannot be reached or read, or is of a newer schema than
            this autotune (one line, password masked). The database is opened read-only:
            none, never migrated, or of an older schema answers the ``default`` rung, its
            note saying why (an older schema naming ``autotune db upgrade``, and warned
            about once as a ``RuntimeWarning``).

    Returns:
        A :class:`LaunchConfig`; the same object for the same arguments until
        :func:`clear_cache`. Cold calls query the database (milliseconds); warm ones are one
        dict lookup under a lock (about a microsecond, ``benchmarks/lookup_latency.py``).
    """
    if type(shape) is not tuple:
        shape = tuple(shape)
    ck = (kernel, shape, dtype, device, db or os.environ.get("AUTOTUNE_DB") or "")
    with _lock:
        hit = _cache.get(ck)
    if hit is not None:
        return hit
    answer = _resolve(kernel, shape, dtype, device, ck[-1])
    with _lock:  # a racing cold call may have won: everyone gets the first answer stored
        if len(_cache) >= MAX_CACHED:
            _cache.clear()
        return _cache.setdefault(ck, answer)


def _resolve(kernel: str, shape: tuple, dtype, device, db: str) -> LaunchConfig:
    """The cold path: climb the ladder against the database (one to three queries)."""
    k = get_kernel(kernel)
    rows, cols, depth = _dims(shape, problem_of(k))
    dt, info = get_dtype(dtype).name, _device(device)
    key = tuning_key(k.name, info, rows, cols, dt, depth)
    store = _store(db)
    unusable = _unusable(store)
    if unusable:
        return LaunchConfig(k.default_config(), "default", rung="default",
                            note=f"nothing tuned for {k.name} {format_shape(rows, cols, depth)} {dt} on {info.name} "
                                 f"({unusable}); using the kernel's default")
    best = store.best(key)
    if best is not None and _fits(k, best.config):
        return _answer(best, "exact", f"tuned for this exact key on {best.updated_at:%Y-%m-%d}")
    fresh, skipped = _fresh(store, k, key)
    fresh = [r for r in fresh if (r.depth > 0) == (depth > 0)]
    mine = [r for r in fresh if _same_device(info, r)]
    others = [r for r in fresh if not _same_device(info, r)]
    want = (rows, cols, depth)
    for r in sorted(mine, key=lambda r: _shape_rank(r, *want)):
        if store.best(replace(key, rows=r.rows, cols=r.cols, depth=r.depth)) is not None:  # the full identity
            n = len({(m.rows, m.cols, m.depth) for m in mine})
            return _answer(r, "nearest_shape", f"tuned for {_shape(r)} on this device "
                                               f"(nearest of {n} tuned shape{'s' if n > 1 else ''})", skipped)
        others.append(r)  # same as far as the record tells, but not this device (total memory)
    if others:
        r = min(others, key=lambda r: (_distance(r, *want), r.device_name, *_shape_rank(r, *want)[1:],
                                       r.driver_version, r.cuda_version, r.device_uuid, r.sm_count))
        where = r.device_name if r.device_name != info.name else f"another {r.device_name} ({_differs(info, r)})"
        which = "same shape" if (r.rows, r.cols, r.depth) == want else "nearest shape"
        return _answer(r, "same_arch", f"tuned for {_shape(r)} on {where} "
                                       f"(same compute capability {r.compute_capability}, {which})", skipped)
    return LaunchConfig(k.default_config(), "default", rung="default",
                        note=f"nothing tuned for {k.name} {format_shape(*want)} {dt} on {info.name}; "
                             f"using the kernel's default{skipped}")


def _dims(shape: tuple, problem: Problem) -> tuple[int, int, int]:
    """``(rows, cols, 0)`` of a 2-tuple for a move, ``(M, N, K)`` of a 3-tuple for a product.

    Raises:
        InvalidInputError: wrong length, or not integers >= 1.
    """
    want = "(M, N, K)" if problem.is_matmul else "(rows, cols)"
    try:
        dims = [operator.index(n) for n in shape]
    except (TypeError, ValueError):
        dims = []
    if len(dims) != len(problem.dims) or min(dims) < 1:
        raise InvalidInputError(f"shape {shape!r} is not allowed; give {want}, integers >= 1")
    return dims[0], dims[1], dims[2] if problem.is_matmul else 0


def _shape(r: BestRecord) -> str:
    return format_shape(r.rows, r.cols, r.depth)


def _fresh(store: Store, k: Kernel, key: TuningKey) -> tuple[list[BestRecord], str]:
    """Usable results of ``key``'s kernel, dtype and compute capability, and the note's
    ``"; skipped N stale results (...)"`` part (empty if none). Other archs are not counted."""
    stale: Counter[str] = Counter()
    fresh = []
    for r in store.find_best(kernel=k.name, dtype=key.dtype):
        if r.compute_capability != key.device.compute_capability:
            continue
        reason = _stale_reason(k, key, r)
        if reason:
            stale[reason] += 1
        else:
            fresh.append(r)
    total = sum(stale.values())
    if not total:
        return fresh, ""
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(stale.items()))
    return fresh, f"; skipped {total} stale result{'s' if total > 1 else ''} ({why})"


def _device(device: int | DeviceInfo) -> DeviceInfo:
    """``device`` itself, or the info of ordinal ``device`` (queried once per process)."""
    if isinstance(device, DeviceInfo):
        return device
    if not isinstance(device, int) or isinstance(device, bool):
        raise InvalidInputError(f"device {device!r} is not allowed; give a CUDA ordinal or a DeviceInfo")
    with _open_lock:
        if device not in _devices:
            _devices[device] = query_device(device)
        return _devices[device]


def _store(db: str) -> Store:
    """One :class:`Store` per database URL, opened read-only: no migration, lock file, backup
    or write, so a database on a read-only mount or of another user serves lookups."""
    with _open_lock:
        if db not in _stores:
            _stores[db] = Store(db or None, read_only=True)
        return _stores[db]


def _unusable(store: Store) -> str | None:
    """Why ``store`` holds no usable result (no database, never migrated, an older schema
    that only ``autotune db upgrade`` can bring up to date), or ``None``. An older schema is
    also said once per process as a ``RuntimeWarning``."""
    where = store._safe_url
    if store.schema_state == "missing":
        return f"no results database at {where}"
    if store.schema_state == "empty":
        return f"{where} holds no autotune tables"
    if store.schema_state == "older":
        note = (f"results database {where} is of an older schema, read by no lookup until it is migrated: "
                f"run `autotune db upgrade --db {where}`")
        if where not in _warned:
            _warned.add(where)
            warnings.warn(note, RuntimeWarning, stacklevel=4)
        return note
    return None


def _fits(k: Kernel, config: Config) -> bool:
    """Whether ``config`` sets exactly the kernel's tunable macros (the catalog may change)."""
    return {name for name, _ in config.macros} == set(k.defaults)


def _stale_reason(k: Kernel, key: TuningKey, r: BestRecord) -> str | None:
    """Why a same-arch result cannot be used with today's kernel and toolchain, or ``None``."""
    if r.source_hash != key.source_hash:
        return "kernel source changed"
    if r.nvcc_version != key.nvcc_version:
        return f"built with nvcc {r.nvcc_version}, not {key.nvcc_version}"
    if r.compile_flags != key.compile_flags:
        return f"compile flags {r.compile_flags!r}"
    if not _fits(k, r.config):
        return f"macros no longer those of {k.name}"
    return None


def _same_device(info: DeviceInfo, r: BestRecord) -> bool:
    """Same device identity (the model, not the unit) as far as a BestRecord tells (total
    memory is checked by ``best``)."""
    return (r.device_name, r.sm_count, r.driver_version, r.cuda_version) == (
        info.name, info.sm_count, info.driver_version, info.cuda_version)


def _differs(info: DeviceInfo, r: BestRecord) -> str:
    """What tells a same-named device apart, e.g. ``driver 12.8``."""
    parts = [(r.driver_version != info.driver_version, f"driver {r.driver_version}"),
             (r.cuda_version != info.cuda_version, f"CUDA {r.cuda_version}"),
             (r.sm_count != info.sm_count, f"{r.sm_count} SMs")]
    return ", ".join(text for differs, text in parts if differs) or "another identity"


def _distance(r: BestRecord, rows: int, cols: int, depth: int = 0) -> float:
    """Log-distance of ``r``'s shape from ``rows x cols`` (``x depth`` for a product), rounded
    so equal ratios tie exactly."""
    k = math.log(r.depth / depth) if depth and r.depth else 0.0
    return round(math.hypot(math.log(r.rows / rows), math.log(r.cols / cols), k), 9)


def _shape_rank(r: BestRecord, rows: int, cols: int, depth: int = 0) -> tuple:
    """Sort key: nearest first, then larger area (volume), more rows, more cols, larger K."""
    return (_distance(r, rows, cols, depth), -r.rows * r.cols * max(r.depth, 1), -r.rows, -r.cols, -r.depth)


def _answer(r: BestRecord, rung: str, what: str, skipped: str = "") -> LaunchConfig:
    there = "" if rung == "exact" else " there"
    figure = f"{r.gflops:.0f} GFLOP/s" if r.depth and r.gflops is not None else f"{r.gbps:.0f} GB/s"
    return LaunchConfig(r.config, "tuned", r.gbps, r.pct_memcpy,
                        note=f"{what}: {figure}{there}{skipped}", rung=rung,
                        tuned_shape=(r.rows, r.cols, r.depth) if r.depth else (r.rows, r.cols),
                        tuned_device=r.device_name, gflops=r.gflops)
