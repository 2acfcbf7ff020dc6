"""The one query of stored bests, as plain SQL: read by the :class:`~autotune.store.repository.Store`
(through SQLAlchemy, SQLite or PostgreSQL) and by the stdlib ``sqlite3`` reader of a process's
first lookup (:mod:`autotune.store.reader`), which must not pay for importing SQLAlchemy.

The SQL names the tables and columns of :mod:`autotune.store.models` (their migrations are the
schema; ``tests/store/test_reader.py`` checks each column against the models) and uses named
``:parameters``, which both SQLAlchemy's ``text()`` and ``sqlite3`` bind. Rows become
:class:`~autotune.store.records.BestRecord` through :func:`autotune.store.records.best_from_row`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autotune.store.key import Dims, TuningKey, dims_key
from autotune.store.records import BestRecord

__all__ = ["SELECT_BEST", "COLUMNS", "select_best", "key_columns", "filter_columns", "sorted_bests"]

COLUMNS: dict[str, str] = {
    "device_name": "d.name", "compute_capability": "d.compute_capability", "sm_count": "d.sm_count",
    "total_memory": "d.total_memory", "driver_version": "d.driver_version", "cuda_version": "d.cuda_version",
    "device_uuid": "s.gpu_uuid",
    "kernel": "k.name", "source_hash": "k.source_hash", "spec_hash": "k.spec_hash",
    "dims": "b.dims", "dtype": "b.dtype", "nvcc_version": "b.nvcc_version", "compile_flags": "b.compile_flags",
    "macros": "t.macros", "median_ms": "t.median_ms", "min_ms": "t.min_ms", "max_ms": "t.max_ms",
    "gbps": "t.gbps", "pct_memcpy": "t.pct_memcpy", "registers": "t.registers",
    "shared_bytes": "t.shared_bytes", "pct_copy": "t.pct_copy", "occupancy": "t.occupancy", "gflops": "t.gflops",
    "trial_id": "t.id", "search_id": "s.id", "memcpy_gbps": "s.memcpy_gbps", "copy_gbps": "s.copy_gbps",
    "updated_at": "b.updated_at", "pooled_median_ms": "b.pooled_median_ms", "spread": "b.spread",
    "rounds": "b.rounds", "tie_group": "b.tie_group", "certificate": "b.certificate",
    "ci_low_ms": "t.ci_low_ms", "ci_high_ms": "t.ci_high_ms", "energy_j": "t.energy_j", "samples": "t.samples",
    "objective": "s.objective",
}
"""Each field of a best row and the column it is read from (``b``: autotune_best, ``d``:
autotune_devices, ``k``: autotune_kernels, ``t``: the best trial, ``s``: its search)."""

SELECT_BEST = (
    "SELECT " + ", ".join(f"{column} AS {field}" for field, column in COLUMNS.items()) +
    " FROM autotune_best b"
    " JOIN autotune_devices d ON b.device_id = d.id"
    " JOIN autotune_kernels k ON b.kernel_id = k.id"
    " JOIN autotune_trials t ON b.trial_id = t.id"
    " JOIN autotune_searches s ON t.search_id = s.id"
)

_FILTERS = {"kernel": "k.name", "dims": "b.dims", "dtype": "b.dtype", "source_hash": "k.source_hash",
            "spec_hash": "k.spec_hash", "device_name": "d.name", "compute_capability": "d.compute_capability",
            "sm_count": "d.sm_count", "total_memory": "d.total_memory", "driver_version": "d.driver_version",
            "cuda_version": "d.cuda_version", "nvcc_version": "b.nvcc_version", "compile_flags": "b.compile_flags"}


def select_best(equal: Mapping[str, Any], name_contains: str | None = None) -> tuple[str, dict[str, Any]]:
    """The SQL and parameters of the best rows whose fields equal ``equal`` (keys of the filters:
    kernel, dims, dtype, source_hash, spec_hash, the device identity fields, nvcc_version,
    compile_flags) and whose device name contains ``name_contains`` (case-insensitive, taken
    literally), in the order they were stored.

    Raises:
        ValueError: a key that is not a filter.
    """
    unknown = set(equal) - set(_FILTERS)
    if unknown:
        raise ValueError(f"no best filter {sorted(unknown)}; allowed: {', '.join(_FILTERS)}")
    where = [f"{_FILTERS[name]} = :{name}" for name in equal]
    params = dict(equal)
    if name_contains is not None:
        escaped = name_contains.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        where.append("lower(d.name) LIKE :name_contains ESCAPE '\\'")
        params["name_contains"] = f"%{escaped}%"
    return SELECT_BEST + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY b.id", params


def key_columns(key: TuningKey) -> dict[str, Any]:
    """The filters of exactly ``key``: device identity (the model), kernel name and hashes, dims,
    dtype and toolchain."""
    d = key.device
    return {"device_name": d.name, "compute_capability": d.compute_capability, "sm_count": d.sm_count,
            "total_memory": d.total_memory, "driver_version": d.driver_version, "cuda_version": d.cuda_version,
            "kernel": key.kernel, "source_hash": key.source_hash, "spec_hash": key.spec_hash,
            "dims": key.dims_key, "dtype": key.dtype, "nvcc_version": key.nvcc_version,
            "compile_flags": key.compile_flags}


def filter_columns(*, kernel: str | None = None, dims: Mapping[str, int] | Dims | str | None = None,
                   dtype: str | None = None, source_hash: str | None = None,
                   spec_hash: str | None = None) -> dict[str, Any]:
    """The equality filters of :meth:`~autotune.store.repository.Store.find_best` that are given
    (``dims`` as a mapping or Dims in the kernel's declared order, or their text form)."""
    if dims is not None and not isinstance(dims, str):
        dims = dims_key(tuple(dims.items()) if isinstance(dims, Mapping) else dims)
    given = {"kernel": kernel, "dims": dims, "dtype": dtype, "source_hash": source_hash, "spec_hash": spec_hash}
    return {name: value for name, value in given.items() if value is not None}


def sorted_bests(found: Iterable[BestRecord]) -> list[BestRecord]:
    """``found`` sorted by device name, kernel, dims (by their values), dtype."""
    return sorted(found, key=lambda b: (b.device_name, b.kernel, len(b.dims), b.shape, b.dims_key, b.dtype))
