"""The trials of every shape of one kernel, dtype, device model and toolchain, as plain SQL: what a
dispatch (:mod:`autotune.dispatch`) is learned from, read by the
:class:`~autotune.store.repository.Store` (through SQLAlchemy) and by the stdlib ``sqlite3``
reader of a process's first lookup (:mod:`autotune.store.reader`), as
:mod:`autotune.store.best_sql` is for the bests.

:func:`select_shape_trials` selects every trial stored for a key's identity at any dims: the same
device model (name, compute capability, SMs, memory, driver, CUDA), the same kernel (name,
source and spec hashes), dtype, nvcc version and compile flags. So a result that is stale for
the key (another kernel source or description, nvcc or flags: :mod:`autotune.store.stale`) is
never read. :func:`select_state` gives what changes whenever a trial of a kernel is stored (the
largest trial id and the number of trials): a dispatch built from the trials is rebuilt when it
changes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autotune.kernel.config import Config
from autotune.store.key import Dims, TuningKey, parse_dims_key

__all__ = ["ShapeTrial", "select_trials", "select_shape_trials", "select_state", "shape_trial_from_row"]


@dataclass(frozen=True)
class ShapeTrial:
    """One stored trial of a kernel at some dims: ``status`` ``ok`` (measured: its ``median_ms``
    in ms, ``gbps`` GB/s and ``gflops`` GFLOP/s where the kernel has those objectives,
    ``pct_memcpy`` % of the search's memcpy) or a failure's status (``compile_error``,
    ``resources``, ...: every figure ``None``); ``trial_id`` the row's id (larger: stored later);
    the rest is its search's key (the device model's name and compute capability, the kernel's
    hashes, dtype, toolchain), so that :func:`autotune.store.stale.stale_reason` judges it as it
    judges a best."""

    dims: Dims
    config: Config
    status: str
    median_ms: float | None
    gbps: float | None
    gflops: float | None
    pct_memcpy: float | None
    trial_id: int
    device_name: str = ""
    compute_capability: str = ""
    source_hash: str = ""
    spec_hash: str = ""
    dtype: str = ""
    nvcc_version: str = ""
    compile_flags: str = ""


_TRIALS = (
    "SELECT s.dims AS dims, k.name AS kernel, t.macros AS macros, t.status AS status, t.median_ms AS median_ms,"
    " t.gbps AS gbps, t.gflops AS gflops, t.pct_memcpy AS pct_memcpy, t.id AS trial_id,"
    " d.name AS device_name, d.compute_capability AS compute_capability, k.source_hash AS source_hash,"
    " k.spec_hash AS spec_hash, s.dtype AS dtype, s.nvcc_version AS nvcc_version, s.compile_flags AS compile_flags"
    " FROM autotune_trials t"
    " JOIN autotune_searches s ON t.search_id = s.id"
    " JOIN autotune_devices d ON s.device_id = d.id"
    " JOIN autotune_kernels k ON s.kernel_id = k.id"
)

_FILTERS = {"device_name": "d.name", "compute_capability": "d.compute_capability", "sm_count": "d.sm_count",
            "total_memory": "d.total_memory", "driver_version": "d.driver_version", "cuda_version": "d.cuda_version",
            "kernel": "k.name", "source_hash": "k.source_hash", "spec_hash": "k.spec_hash", "dtype": "s.dtype",
            "nvcc_version": "s.nvcc_version", "compile_flags": "s.compile_flags"}

_STATE = (
    "SELECT max(t.id) AS last_id, count(t.id) AS trial_count FROM autotune_trials t"
    " JOIN autotune_searches s ON t.search_id = s.id"
    " JOIN autotune_kernels k ON s.kernel_id = k.id"
    " WHERE k.name = :kernel"
)


def select_trials(equal: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The SQL and parameters of every trial whose search's fields equal ``equal`` (keys: the
    device identity fields, kernel, source_hash, spec_hash, dtype, nvcc_version,
    compile_flags), in the order they were stored.

    Raises:
        ValueError: a key that is not a filter.
    """
    unknown = set(equal) - set(_FILTERS)
    if unknown:
        raise ValueError(f"no trial filter {sorted(unknown)}; allowed: {', '.join(_FILTERS)}")
    where = " AND ".join(f"{_FILTERS[name]} = :{name}" for name in equal)
    return _TRIALS + (f" WHERE {where}" if where else "") + " ORDER BY t.id", dict(equal)


def select_shape_trials(key: TuningKey) -> tuple[str, dict[str, Any]]:
    """The SQL and parameters of every trial of ``key``'s identity at any dims (module doc), in
    the order they were stored. ``key.dims`` is not used."""
    d = key.device
    return select_trials({"device_name": d.name, "compute_capability": d.compute_capability,
                          "sm_count": d.sm_count, "total_memory": d.total_memory,
                          "driver_version": d.driver_version, "cuda_version": d.cuda_version, "kernel": key.kernel,
                          "source_hash": key.source_hash, "spec_hash": key.spec_hash, "dtype": key.dtype,
                          "nvcc_version": key.nvcc_version, "compile_flags": key.compile_flags})


def select_state(kernel: str) -> tuple[str, dict[str, Any]]:
    """The SQL and parameters of ``(last_id, trial_count)``: the largest trial id and the number
    of trials stored for kernel name ``kernel`` (any device, dims, dtype), ``(None, 0)`` for none."""
    return _STATE, {"kernel": kernel}


def shape_trial_from_row(row: Mapping[str, Any]) -> ShapeTrial:
    """The ShapeTrial of one row of :func:`select_trials` (JSON as text from SQLite, as a value
    from PostgreSQL)."""
    fields = dict(row)
    macros = fields.pop("macros")
    macros = json.loads(macros) if isinstance(macros, str) else macros
    kernel = fields.pop("kernel")
    fields.update(dims=parse_dims_key(fields["dims"]), config=Config.of(kernel, macros))
    return ShapeTrial(**fields)
