"""Tuned configs looked up at runtime: ``lookup`` gives the config to launch a kernel with.

``lookup`` takes any kernel (a catalog name, or a Kernel object: a user's kernel loaded from
its file by the caller) and its problem as named dims, and climbs a ladder, saying which rung
it took (:attr:`LaunchConfig.rung`):

1. ``exact``: the stored best of the exact key (device model, kernel name, source and spec
   hashes, dims, dtype, nvcc version and compile flags; :mod:`autotune.store.key`).
2. ``dispatch``: the same device model, kernel, dtype and toolchain, tuned for other dims: the
   config the kernel's dispatch picks (:mod:`autotune.dispatch`): a few configs learned
   from every stored trial of those shapes (the default always one of them) and the rule over
   the dims that held-out regret kept (distance-weighted nearest tuned shapes by log-distance
   ``sqrt(sum over the kernel's dims of ln(d/d')^2)``, a decision tree over the dims' logs, or
   the nearest shape's best), which leaves the default only where the trials say another config
   is faster beyond the noise; where its held-out evidence is uncertain, the region's safe
   (minimax) config, the note says so. The dispatch is learned once per process and database
   state (rebuilt when a trial of the kernel is stored: the largest trial id or the count
   changes). ``shape_rung="nearest_shape"`` climbs this project's earlier rung instead, kept for
   comparison: the stored best of the nearest tuned dims by the same distance (a ratio measure,
   so 2048 and 8192 are equally far from 4096; ties: larger product of the dims, then the larger
   values in the kernel's dims order).
3. ``same_arch``: another device of the same compute capability (same binary), the same dims
   if tuned there, else the nearest by the same distance; ties: device name, then as above.
4. ``default``: the kernel's built-in default config.

Stale results (:mod:`autotune.store.stale`: another kernel source or description, nvcc,
compile flags, or macros that no longer fit the kernel) are never used, and counted in the
note. Answers are cached per process on the call's arguments (a warm call is one dict lookup
under a lock); device info for an ordinal is queried once per process, and each database is
opened read-only once (``autotune.runtime.databases``). :func:`autotune.clear_cache` forgets
answers.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from autotune.base import caches
from autotune.errors import InvalidInputError
from autotune.kernel.arguments import (check_db_arg, check_dims_arg, check_dtype_arg, check_kernel_arg,
                                       check_ordinal_arg, shown)
from autotune.kernel.config import Config
from autotune.kernel.dims import shape_distance
from autotune.kernel.problem import Problem
from autotune.measure.device import DeviceInfo, query_device
from autotune.measure.toolchain import Toolchain
from autotune.dispatch import Dispatch, fit_trials
from autotune.dispatch.cache import fitted
from autotune.store import stale
from autotune.kernel.model import Kernel
from autotune.store.key import Dims, TuningKey, format_shape, tuning_key
from autotune.store.urls import given_url
from autotune.runtime import databases
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # SQLAlchemy is imported only for a database that is not a SQLite file
    from collections.abc import Sequence

    from numpy.typing import DTypeLike

    from autotune.kernel.dtypes import DType
    from autotune.store.reader import ResultsReader as Reader
    from autotune.store.records import BestRecord

__all__ = ["LaunchConfig", "RUNGS", "SHAPE_RUNGS", "lookup"]


RUNGS = ("exact", "dispatch", "same_arch", "default")
SHAPE_RUNGS = ("dispatch", "nearest_shape")
"""What the second rung may be (``lookup(..., shape_rung=...)``): the dispatch, or the best of
the nearest tuned shape (this project's rung before the dispatch, kept for comparison)."""
MAX_CACHED = 65536
"""Answers kept per process; the cache starts afresh when full."""


@dataclass(frozen=True)
class LaunchConfig:
    """The config to launch a kernel with, and where it came from.

    Attributes:
        config: kernel name and macro values.
        source: ``"tuned"`` (rungs exact, dispatch, same_arch, nearest_shape) or ``"default"``.
        gbps: effective bandwidth measured when the used result was tuned, GB/s, for
            ``tuned_dims`` on ``tuned_device`` (``None`` for default, for a kernel without a
            bytes objective, or for a dispatch's config not measured at the nearest tuned shape).
        pct_memcpy: that bandwidth as % of that device's memcpy then (``None`` for default).
        note: one line saying what was found (and how many stale results were skipped).
        rung: one of ``RUNGS``: ``"exact"``, ``"dispatch"``, ``"same_arch"``, ``"default"``; or
            ``"nearest_shape"`` where asked for (``shape_rung``).
        tuned_shape: the values of the dims the used result was tuned for, in the kernel's
            dims order, e.g. ``(4096, 4096)`` or ``(M, N, K)`` (``None`` for default); for the
            dispatch, the nearest tuned shape.
        tuned_device: name of the device it was tuned on (``None`` for default).
        gflops: GFLOP/s measured there (``None`` without a flops objective).
        tuned_dims: the named dims the used result was tuned for, e.g. ``(("rows", 4096),
            ("cols", 4096))`` (``None`` for default).
        median_ms: the time measured there, ms (``None`` for default).
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
    tuned_dims: Dims | None = None
    median_ms: float | None = None


_lock = threading.Lock()  # guards _cache only: a warm call holds it for one dict lookup
_cache: dict[tuple, LaunchConfig] = {}
_open_lock = threading.Lock()  # guards _devices (slow to fill; never blocks warm calls)
_devices: dict[int, DeviceInfo] = {}


def _clear_answers() -> None:
    """Forget cached answers and close the databases opened for them (a database created or
    upgraded since is then read afresh). Device info stays. Registered with
    :mod:`autotune.base.caches`, which :func:`autotune.clear_cache` walks."""
    with _lock:
        _cache.clear()
    databases.close_all()


caches.register("lookup", _clear_answers)


def lookup(kernel: str | Path | Kernel | Problem, dims: Mapping[str, int] | Sequence[int] | Dims | None = None,
           dtype: DTypeLike | DType = "float32", *, device: int | DeviceInfo = 0,
           db: str | None = None, shape_rung: str = "dispatch") -> LaunchConfig:
    """The config to launch ``kernel`` with for problem ``dims`` of ``dtype`` on ``device``.

    Args:
        kernel: a catalog name (``"smem_pad"``), a Kernel object (a user's kernel loaded from
            its file, e.g. by `resolve_kernel`), or a
            kernel file's path; or a whole `Problem` (then no
            ``dims`` and ``dtype``).
        dims: the problem: ``{name: value}`` over the kernel's dims (``{"n": 1048576}``), or
            the values in the kernel's dims order (``(rows, cols)``; ``(M, N, K)`` for the
            catalog's matrix products), integers >= 1.
        dtype: NumPy dtype or its name.
        device: CUDA ordinal (queried through the CUDA backend once per process:
            ``cuda-bindings``, or PyCUDA) or a ``DeviceInfo`` (``autotune.measure.device``).
        db: SQLAlchemy URL of the results database (default: ``AUTOTUNE_DB`` or the
            platformdirs default).
        shape_rung: the second rung: ``"dispatch"`` (the default), or ``"nearest_shape"`` (the
            best of the nearest tuned shape; kept to compare with).

    Raises:
        InvalidInputError: unknown kernel or dtype, a kernel or dtype that is neither (``None``, a
            number), dims that do not fit the kernel, bad device, a ``shape_rung`` not in
            ``SHAPE_RUNGS``.
        GPUUnavailableError: no nvcc on PATH, or ``device`` is an ordinal and there is no
            GPU, CUDA driver or CUDA backend (checked after the kernel, dims and dtype).
        StoreError: the database cannot be reached or read, or is of a newer schema than
            this autotune (one line, password masked). The database is opened read-only:
            none, never migrated, or of an older schema answers the ``default`` rung, its
            note saying why (an older schema naming ``autotune db upgrade``, and warned
            about once as a ``RuntimeWarning``).

    Returns:
        A `LaunchConfig`; the same object for the same
            arguments until `clear_cache`. Cold calls query
            the database (milliseconds); warm ones are one dict lookup under a lock (about a
            microsecond, ``benchmarks/lookup_latency.py``).
    """
    # Arguments are checked before anything is opened; on this warm path only what a cached
    # answer could be mistaken for (True == 1, 0.0 == 0, "" for the default database): the
    # rest is checked by the cold path, whose refusals are never cached.
    if type(device) is not int and type(device) is not DeviceInfo:
        check_ordinal_arg(device, "device", also=(DeviceInfo,), also_text=" or a DeviceInfo")
    if db is not None and (type(db) is not str or not db):
        check_db_arg(db)
    if isinstance(kernel, Problem):
        which, dims, dtype = Problem.of(kernel, dims), (), None
    elif isinstance(kernel, (str, Path)) and str(kernel):
        which = kernel
    elif isinstance(kernel, (str, Path)) or not all(hasattr(kernel, a) for a in ("name", "source_hash", "spec_hash")):
        check_kernel_arg(kernel, identity=True)
        raise InvalidInputError(f"kernel {shown(kernel)} is not allowed; give a catalog name (e.g. 'smem_pad'), a "
                                "kernel file's path or a Kernel")
    else:  # a kernel object: its identity, so an edited kernel file is another key
        which = (kernel.name, kernel.source_hash, kernel.spec_hash)
    try:
        if isinstance(dims, Mapping):
            given, values = ("map", *sorted(dims.items())), dims.values()
        else:
            given = values = dims if type(dims) is tuple else tuple(dims)
        hash(given)
    except TypeError:
        check_dims_arg(dims)
        raise InvalidInputError(f"dims {shown(dims)} are not allowed; give a mapping {{name: value}} or a tuple "
                                "of integers in the kernel's dims order") from None
    for v in values:
        if type(v) is not int:  # NumPy integers pass; booleans, floats and strings do not
            check_dims_arg(dims)
            break
    ck = (which, given, dtype, device, given_url(db), shape_rung)
    try:
        with _lock:
            hit = _cache.get(ck)
    except TypeError:  # an unhashable dtype or shape_rung (a list, a dict)
        check_dtype_arg(dtype)
        raise InvalidInputError(f"shape_rung {shown(shape_rung)} is not allowed; allowed: "
                                f"{', '.join(SHAPE_RUNGS)}") from None
    if hit is not None:
        return hit
    if shape_rung not in SHAPE_RUNGS:
        raise InvalidInputError(f"shape_rung {shown(shape_rung)} is not allowed; allowed: {', '.join(SHAPE_RUNGS)}")
    answer = _resolve(kernel, dims, dtype, device, ck[-2], shape_rung, db)
    with _lock:  # a racing cold call may have won: everyone gets the first answer stored
        if len(_cache) >= MAX_CACHED:
            _cache.clear()
        return _cache.setdefault(ck, answer)


def _resolve(kernel, dims, dtype, device, db: str, shape_rung: str = "dispatch",
             given_db: str | None = None) -> LaunchConfig:
    """The cold path: every argument checked (the kernel, dims and dtype, then the device, before the CUDA backend is asked of it), then
    climb the ladder against the database (a few queries; the trials of the kernel's other
    shapes when its dispatch is not learned yet or the database changed)."""
    check_ordinal_arg(device, "device", also=(DeviceInfo,), also_text=" or a DeviceInfo")
    check_db_arg(given_db)
    if not isinstance(kernel, Problem):
        check_kernel_arg(kernel, identity=True)
        check_dims_arg(dims)
        check_dtype_arg(dtype)
    resolved = isinstance(kernel, (Problem, str, Path, Kernel))
    if resolved:  # the names before the GPU: a typo is said as such, also where there is no driver
        problem = Problem.of(kernel, None if isinstance(kernel, Problem) else dims, dtype)
    info = _device(device)
    if resolved:
        key = TuningKey.of(problem, info, Toolchain.of(info.arch))
        k = problem.kernel
    else:  # an object with a kernel's identity only (name, dims, hashes, default_config): a key by its fields
        k, key = kernel, tuning_key(kernel, info, dims, dtype)
    dt = key.dtype
    store = databases.reader(db)
    unusable = databases.unusable(store)
    if unusable:
        return LaunchConfig(k.default_config(), "default", rung="default",
                            note=f"nothing tuned for {k.name} {format_shape(key.dims)} {dt} on {info.name} "
                                 f"({unusable}); using the kernel's default")
    best = store.best(key)
    if best is not None and stale.stale_reason(best, k, key.nvcc_version) is None:
        return _answer(best, "exact", f"tuned for this exact key on {best.updated_at:%Y-%m-%d}")
    fresh, skipped = _fresh(store, k, key)
    want = key.dims
    if shape_rung == "dispatch":
        if any(_same_device(info, r) for r in fresh):  # else no trial of this model to learn from: no query
            d = _dispatch(store, db, k, key)
            if d.shapes:
                return _dispatch_answer(d, key, skipped)
        others = list(fresh)  # none of this device model: every usable result is another device's
    else:
        mine = [r for r in fresh if _same_device(info, r)]
        others = [r for r in fresh if not _same_device(info, r)]
        for r in sorted(mine, key=lambda r: _shape_rank(r, want)):
            if store.best(key.at(r.dims)) is not None:  # the full identity
                n = len({m.dims for m in mine})
                return _answer(r, "nearest_shape", f"tuned for {r.display} on this device "
                                                   f"(nearest of {n} tuned shape{'s' if n > 1 else ''})", skipped)
            others.append(r)  # same as far as the record tells, but not this device (total memory)
    if others:
        r = min(others, key=lambda r: (_distance(r, want), r.device_name, *_shape_rank(r, want)[1:],
                                       r.driver_version, r.cuda_version, r.device_uuid, r.sm_count))
        where = r.device_name if r.device_name != info.name else f"another {r.device_name} ({_differs(info, r)})"
        which = "same shape" if r.dims == want else "nearest shape"
        return _answer(r, "same_arch", f"tuned for {r.display} on {where} "
                                       f"(same compute capability {r.compute_capability}, {which})", skipped)
    return LaunchConfig(k.default_config(), "default", rung="default",
                        note=f"nothing tuned for {k.name} {format_shape(want)} {dt} on {info.name}; "
                             f"using the kernel's default{skipped}")


def _dispatch(store: Reader, db: str, k, key: TuningKey) -> Dispatch:
    """The dispatch of ``key``'s kernel, dtype, device model and toolchain (any dims), fit from
    the store's trials once per store state (:mod:`autotune.dispatch.cache`: one query for the
    state, :mod:`autotune.store.trial_sql`; the trials are read and fit only when it changed)."""
    identity = (db, key.device.name, key.device.compute_capability, key.device.sm_count, key.device.total_memory,
                key.device.driver_version, key.device.cuda_version, key.kernel, key.source_hash, key.spec_hash,
                key.dtype, key.nvcc_version, key.compile_flags)

    def fit() -> Dispatch:
        return fit_trials(store.shape_trials(key), k.default_config(), [n for n, _ in key.dims], k.tunables)

    return fitted(identity, store.trials_state(key.kernel), fit)


def _dispatch_answer(d: Dispatch, key: TuningKey, skipped: str) -> LaunchConfig:
    """The dispatch rung's answer for ``key``'s dims: the config, and what it measured at the
    nearest tuned shape where it was measured there."""
    index, near, uncertain = d.pick(key.shape)
    config, shape = d.configs[index], d.shapes[near]
    ms = d.times[near][index]
    gbps, gflops, pct = d.figures[near][index] if d.figures else (None, None, None)
    measured = ms is not None and ms != float("inf")
    n = len(d.shapes)
    which = "the kernel's default" if index == 0 else f"config {index + 1} of {len(d.configs)}"
    if uncertain:  # the held-out evidence near this shape is uncertain: the safe config of its region
        which += (", the safe one of an uncertain region (its held-out regret went beyond 8 % or below "
                  "the default)")
    dims = tuple(zip(d.dims, shape))
    there = (f"{gflops:.0f} GFLOP/s" if gflops is not None else f"{gbps:.0f} GB/s" if gbps is not None
             else f"{ms:.4g} ms") if measured else "not measured"
    return LaunchConfig(config, "tuned", gbps if measured else None, pct if measured else None,
                        note=f"dispatch of {n} tuned shape{'s' if n > 1 else ''} on this device: {which} "
                             f"(nearest tuned {format_shape(dims)}: {there} there){skipped}",
                        rung="dispatch", tuned_shape=shape, tuned_device=key.device.name,
                        gflops=gflops if measured else None, tuned_dims=dims, median_ms=ms if measured else None)


def _fresh(store: Reader, k, key: TuningKey) -> tuple[list[BestRecord], str]:
    """Usable results of ``key``'s kernel (by name), dtype and compute capability, and the note's
    ``"; skipped N stale results (...)"`` part (empty if none). Other archs are not counted."""
    names = [name for name, _ in key.dims]
    judged = stale.partition([r for r in store.find_best(kernel=k.name, dtype=key.dtype)
                              if r.compute_capability == key.device.compute_capability], {k.name: k}, key.nvcc_version)
    fresh = [r for r in judged.current if [n for n, _ in r.dims] == names]  # (other names: another spec hash)
    text = judged.summary()
    return fresh, f"; skipped {text}" if text else ""


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


def _distance(r: BestRecord, want: Dims) -> float:
    """Log-distance of ``r``'s dims from ``want`` (same names: a result of other dims names has
    another spec hash, so it is stale)."""
    return shape_distance(r.dims, want)


def _shape_rank(r: BestRecord, want: Dims) -> tuple:
    """Sort key: nearest first, then larger product of the dims, then larger values in dims order."""
    return (_distance(r, want), -math.prod(r.shape), *(-v for v in r.shape))


def _figure(r: BestRecord) -> str:
    """The figure a result is shown by: GFLOP/s where it has one, else GB/s, else its time."""
    if r.gflops is not None:
        return f"{r.gflops:.0f} GFLOP/s"
    if r.gbps is not None:
        return f"{r.gbps:.0f} GB/s"
    return f"{r.median_ms:.4g} ms"


def _answer(r: BestRecord, rung: str, what: str, skipped: str = "") -> LaunchConfig:
    there = "" if rung == "exact" else " there"
    return LaunchConfig(r.config, "tuned", r.gbps, r.pct_memcpy, note=f"{what}: {_figure(r)}{there}{skipped}",
                        rung=rung, tuned_shape=r.shape, tuned_device=r.device_name, gflops=r.gflops,
                        tuned_dims=r.dims, median_ms=r.median_ms)
