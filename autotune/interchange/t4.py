"""Every stored trial of a selection of keys in the T4 results format of Kernel Tuner and KTT.

T4 ("Open Autotuning Results Schema", version 1.0.0; its JSON schema ships with Kernel Tuner as
``kernel_tuner/schema/T4/1.0.0/results-schema.json``) is a list of evaluated configurations::

    {"schema_version": "1.0.0",
     "metadata": {"timeunit": "milliseconds", "autotune": {...}},
     "results": [{"timestamp": "...", "configuration": {"TILE_DIM": 32, ...},
                  "objectives": ["time"], "invalidity": "correct", "correctness": 1,
                  "times": {"compilation_time": 812.0, "validation": 3.1, "framework": 0.4, "runtimes": []},
                  "measurements": [{"name": "time", "value": 0.0489, "unit": "ms"}, ...],
                  "autotune": {"key": 0, "status": "ok", "reason": null}}, ...]}

T4 has no place for what a result was measured on: autotune's key (device model, kernel and
its hashes, dims, dtype, nvcc, compile flags) goes in ``metadata.autotune.keys`` and each result
names its key by index (``results[i].autotune.key``), with autotune's own status and reason;
both are properties the schema allows and other readers ignore. Mapping of statuses:
``ok`` -> ``correct``, ``compile_error`` -> ``compile``, ``wrong_result`` -> ``correctness``
(``correctness`` 0), ``timeout`` -> ``timeout``, ``resources``/``launch_error``/``crash`` ->
``runtime``. Measurements: ``time`` (the median, ms: the objective), ``min_ms``, ``max_ms``,
``gbps`` (GB/s), ``gflops`` (GFLOP/s), ``pct_memcpy``, ``pct_copy`` (%), ``occupancy``,
``registers``, ``shared_bytes`` (B), ``launches``, where stored. ``times`` come from the
trial's phases (ms); ``runtimes`` stays empty (autotune keeps the median, not each run).

Reading and importing such a file: :mod:`autotune.interchange.t4_read`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


from autotune.errors import InvalidInputError
from autotune.store import queries, stale
from autotune.store.records import StoredSearch, TrialRecord
from autotune.store.repository import Store
from autotune.base.files import write_atomically
from autotune.interchange.share import ExportReport, _iso, known_kernels

__all__ = ["T4_VERSION", "FORMAT", "INVALIDITY", "MEASUREMENTS", "export_t4", "t4_document", "select_keys"]

T4_VERSION = "1.0.0"
"""The T4 schema version written (and read)."""
FORMAT = "autotune-t4"
"""``metadata.autotune.format`` of a T4 file written by autotune."""
INVALIDITY = {"ok": "correct", "compile_error": "compile", "wrong_result": "correctness", "timeout": "timeout",
              "resources": "runtime", "launch_error": "runtime", "crash": "runtime"}
"""T4 ``invalidity`` of each trial status."""
MEASUREMENTS = (("median_ms", "time", "ms"), ("min_ms", "min_ms", "ms"), ("max_ms", "max_ms", "ms"),
                ("gbps", "gbps", "GB/s"), ("gflops", "gflops", "GFLOP/s"), ("pct_memcpy", "pct_memcpy", "%"),
                ("pct_copy", "pct_copy", "%"), ("occupancy", "occupancy", ""), ("registers", "registers", ""),
                ("shared_bytes", "shared_bytes", "B"), ("launches", "launches", ""))
"""(trial column, T4 measurement name, unit) of each measured figure."""


def _key_of(search: StoredSearch) -> dict[str, Any]:
    d = search.device
    return {"device": {"name": d.name, "compute_capability": d.compute_capability, "sm_count": d.sm_count,
                       "total_memory": d.total_memory, "driver_version": d.driver_version,
                       "cuda_version": d.cuda_version},
            "kernel": {"name": search.kernel, "source_hash": search.source_hash, "spec_hash": search.spec_hash},
            "dims": search.dims_key, "dtype": search.dtype, "nvcc_version": search.nvcc_version,
            "compile_flags": search.compile_flags}


def _times(phases: Mapping[str, float] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"runtimes": []}
    if phases:
        for name, field in (("compile", "compilation_time"), ("verify", "validation")):
            if name in phases:
                out[field] = float(phases[name])
        rest = [phases[n] for n in ("load", "store") if n in phases]
        if rest:
            out["framework"] = float(sum(rest))
    return out


def _result(trial: TrialRecord, key_index: int) -> dict[str, Any]:
    return {
        "timestamp": _iso(trial.created_at),
        "configuration": trial.config.as_dict(),
        "objectives": ["time"],
        "times": _times(trial.phases),
        "invalidity": INVALIDITY[trial.status],
        "correctness": 0 if trial.status == "wrong_result" else 1,
        "measurements": [{"name": name, "value": getattr(trial, column), "unit": unit}
                         for column, name, unit in MEASUREMENTS if getattr(trial, column) is not None],
        "autotune": {"key": key_index, "status": trial.status, "reason": trial.reason},
    }


def t4_document(keys: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The T4 document of ``keys`` (``metadata.autotune.keys``) and ``results`` (T4 entries)."""
    from autotune import __version__

    return {"schema_version": T4_VERSION,
            "metadata": {"timeunit": "milliseconds",
                         "autotune": {"format": FORMAT, "autotune_version": __version__,
                                      "exported_at": _iso(datetime.now(UTC)), "keys": keys}},
            "results": results}


def select_keys(store: Store, *, kernel: Any = None, dims: Mapping[str, int] | str | list | None = None,
                device_name: str | None = None, include_stale: bool = False,
                nvcc_version: str | None = None, dtype: str | None = None) -> tuple[list, list[str], int]:
    """The stored bests (:class:`~autotune.store.records.BestRecord`, one per key) selected as by
    :func:`autotune.interchange.share.export_results` (and of ``dtype`` where given); with the stale reasons of those left out (or
    kept, with ``include_stale``) and how many are of kernels this machine does not know.

    Raises:
        InvalidInputError: unknown kernel name or dtype.
    """
    from autotune.kernel.catalog import get_kernel
    from autotune.kernel.dtypes import problem_dtype

    dtype = None if dtype is None else problem_dtype(dtype).name  # an unknown dtype is refused, not "no match"
    k = get_kernel(kernel) if isinstance(kernel, str) else kernel
    kernels = known_kernels([k] if k is not None and not isinstance(kernel, str) else [])
    records = [r for one in (dims if isinstance(dims, list) else [dims])
               for r in store.find_best(kernel=None if k is None else k.name, dims=one, device_name=device_name,
                                        dtype=dtype)]
    reasons, chosen, unchecked = [], [], 0
    for record in records:
        current = kernels.get(record.kernel)
        reason = None if current is None else stale.stale_reason(record, current, nvcc_version)
        if reason is not None:
            reasons.append(reason)
            if not include_stale:
                continue
        unchecked += current is None
        chosen.append(record)
    return chosen, reasons, unchecked


def export_t4(store: Store, path: str | os.PathLike[str], *, kernel: Any = None,
              dims: Mapping[str, int] | str | list | None = None, device_name: str | None = None,
              include_stale: bool = False, nvcc_version: str | None = None, dtype: str | None = None) -> ExportReport:
    """Write every trial (ok and failed, of every search) of the keys selected as by
    :func:`autotune.interchange.share.export_results` (``kernel``, ``dims``, ``device_name``, and
    ``dtype`` where given; stale keys only with ``include_stale``) to the T4 file ``path``, key by key, trials in stored order.
    The file is replaced whole or not at all. ``ExportReport.exported`` counts trials.

    Raises:
        InvalidInputError: unknown kernel; ``path`` cannot be written.
        StoreError: the database cannot be read.
    """
    chosen, reasons, unchecked = select_keys(store, kernel=kernel, dims=dims, device_name=device_name,
                                             include_stale=include_stale, nvcc_version=nvcc_version, dtype=dtype)
    keys, results = [], []
    for search, trials in queries.key_history(store, chosen):
        results += [_result(t, len(keys)) for t in trials]
        keys.append(_key_of(search))
    try:
        text = json.dumps(t4_document(keys, results), indent=1, allow_nan=False) + "\n"
    except ValueError as exc:
        raise InvalidInputError(f"cannot export: the database holds a value JSON cannot carry ({exc})") from None
    write_atomically(Path(path), text, "T4 file")
    left = () if include_stale else tuple(reasons)
    return ExportReport(len(results), len(left), unchecked, stale.summary(left), left)
