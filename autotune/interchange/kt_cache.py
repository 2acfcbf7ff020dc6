"""Kernel Tuner's cache file, written from a recorded table, and its simulation mode run on it.

Kernel Tuner (van Werkhoven, "Kernel Tuner: A search-optimizing GPU code auto-tuner", FGCS
2019) replays a cache file in its simulation mode (``tune_kernel(..., simulation_mode=True,
cache=FILE)``, ``kernel_tuner.runners.simulation``), so that its strategies run on a space
measured before without a GPU. The file (``kernel_tuner.util.process_cache``/``read_cache``) is
JSON::

    {"device_name": ..., "kernel_name": ..., "problem_size": [...], "tune_params_keys": [...],
     "tune_params": {name: [values]}, "objective": "time",
     "cache": {"v1,v2,...": {name: value, ..., "time": ms, "times": [ms], "compile_time": 0, ...}}}

with one entry per config, keyed by its values joined by commas in ``tune_params_keys`` order;
a failed config has ``"time": "RuntimeFailedConfig"`` (or ``CompilationFailedConfig``), which
Kernel Tuner reads as an error, never a best. In simulation mode every config that passes the
restrictions must be in the cache: :func:`simulate` therefore restricts Kernel Tuner's space to
exactly the table's configs, failed ones included (they cost an evaluation, as in our replay).

Kernel Tuner is not a dependency of autotune (extra ``[interchange]``): :func:`write_cache`
needs only JSON; :func:`simulate` imports ``kernel_tuner`` when called.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Mapping, Sequence
from typing import Any

from autotune.base.files import write_atomically
from autotune.errors import InvalidInputError
from autotune.interchange.score import best_so_far
from autotune.interchange.table import table_configs

__all__ = ["FAILED", "write_cache", "export_cache", "simulate", "evaluated", "cache_key"]

FAILED = "RuntimeFailedConfig"
"""The ``time`` of a failed config in the cache (one of ``kernel_tuner.util``'s error names)."""


def cache_key(names: Sequence[str], params: Mapping[str, int]) -> str:
    """Kernel Tuner's cache key of a config: its values in ``names`` order joined by commas."""
    return ",".join(str(params[n]) for n in names)


def write_cache(table: Mapping[str, float | None], space, path: str | os.PathLike[str], *,
                kernel_name: str | None = None, device_name: str = "autotune table",
                problem_size: Sequence[int] = (1,)) -> dict[str, Any]:
    """Write ``table`` (config key -> median ms, ``None`` = failed) of ``space`` (a
    :class:`~autotune.kernel.space.SearchSpace`) as a Kernel Tuner cache file at ``path`` (a
    ``.json`` name: Kernel Tuner appends ``.json`` otherwise); returns the document written.

    ``tune_params`` are the space's params (macro -> list of values, macros sorted by name);
    each entry holds its macros, ``time`` (ms; :data:`FAILED` for a failed config), ``times``
    (``[ms]``: the table holds one median per config) and zero compile, verification and
    benchmark times (the table does not record them, so the simulation's budget must be in
    evaluations, ``max_fevals``, not in time).

    Raises:
        InvalidInputError: a key of the table is not a valid config of the space, or its time
            is not a finite number > 0 (``inf`` would be written as ``Infinity``, which is not
            JSON); ``path`` cannot be written.
    """
    names = [n for n, _ in space.params]
    configs = table_configs(table, space)
    cache = {}
    for key, config in configs.items():
        params = config.as_dict()
        ms = table[key]
        if ms is not None and (isinstance(ms, bool) or not isinstance(ms, (int, float)) or not math.isfinite(ms)
                               or ms <= 0):
            raise InvalidInputError(f"config {key} has time {ms!r} ms; a Kernel Tuner cache holds a finite time "
                                    "> 0 ms (or a failed config), and JSON has no infinity or NaN")
        cache[cache_key(names, params)] = {
            **params, "time": FAILED if ms is None else float(ms), "times": [] if ms is None else [float(ms)],
            "compile_time": 0.0, "verification_time": 0.0, "benchmark_time": 0.0,
            "strategy_time": 0.0, "framework_time": 0.0, "timestamp": "",
        }
    doc = {"device_name": device_name, "kernel_name": kernel_name or space.kernel,
           "problem_size": list(problem_size), "tune_params_keys": names,
           "tune_params": {n: list(v) for n, v in space.params}, "objective": "time", "cache": cache}
    write_atomically(path, json.dumps(doc, indent=1, allow_nan=False) + "\n", "Kernel Tuner cache file")
    return doc


def export_cache(store, path: str | os.PathLike[str], *, kernel: Any, space=None, dims: Any = None,
                 device_name: str | None = None, dtype: str | None = None, include_stale: bool = False,
                 nvcc_version: str | None = None) -> tuple[int, int]:
    """Write the trials of exactly one stored key (selected as by
    :func:`autotune.interchange.t4.select_keys`: ``kernel``, ``dims``, ``device_name``, ``dtype``) as a
    Kernel Tuner cache file at ``path`` (:func:`write_cache`): its table
    (:func:`autotune.interchange.table.table_from_trials`) over ``space`` (a SearchSpace; default the
    kernel's own), the device's name, the kernel's name and its dims as the problem size.
    Returns (configs written, failed ones among them).

    Raises:
        InvalidInputError: no key or several keys match (the message lists them); a trial's
            config is not in ``space`` (give the space file the search used); ``path`` cannot be
            written.
    """
    from autotune.kernel.catalog import get_kernel
    from autotune.interchange.table import table_from_trials
    from autotune.interchange.t4 import select_keys
    from autotune.store import queries, stale

    k = get_kernel(kernel) if isinstance(kernel, str) else kernel
    chosen, reasons, _ = select_keys(store, kernel=k, dims=dims, device_name=device_name,
                                     include_stale=include_stale, nvcc_version=nvcc_version, dtype=dtype)
    filters = _filters(dims, device_name, dtype)
    if not chosen and reasons and not include_stale:
        raise InvalidInputError(f"a Kernel Tuner cache holds one key; no current stored key of {k.name}{filters} "
                                f"matches: {stale.left_out(reasons, 'writes them')}")
    if not chosen:
        raise InvalidInputError(f"a Kernel Tuner cache holds one key; no stored key of {k.name}{filters} matches: "
                                "search it first, or widen the filters (--dims/--size, --dtype, --device)")
    if len(chosen) > 1:
        found = "; ".join(f"{r.device_name} {r.display} {r.dtype}" for r in chosen[:8])
        raise InvalidInputError(f"a Kernel Tuner cache holds one key; {len(chosen)} stored keys of {k.name}{filters} "
                                f"match ({found}): narrow them with --dims/--size, --dtype or --device")
    record = chosen[0]
    [(_, trials)] = queries.key_history(store, [record])
    table = table_from_trials(trials)
    space = space if space is not None else k.space()
    try:
        write_cache(table, space, path, kernel_name=k.name, device_name=record.device_name,
                    problem_size=[v for _, v in record.dims])
    except InvalidInputError as exc:
        if "is not in the space" not in str(exc):
            raise
        raise InvalidInputError(f"{exc}; give the space file the search used (--space FILE)") from None
    return len(table), sum(v is None for v in table.values())


def _filters(dims: Any, device_name: str | None, dtype: str | None) -> str:
    """`` (dims rows=64,cols=64, dtype float32, device 'A100')``: the filters given, for messages."""
    from autotune.kernel.dims import dims_key

    shapes = dims if isinstance(dims, list) else [] if dims is None else [dims]
    parts = [f"dims {' or '.join(dims_key(tuple(d.items()) if isinstance(d, Mapping) else tuple(d)) for d in shapes)}"
             ] if shapes else []
    parts += [f"dtype {dtype}"] if dtype is not None else []
    parts += [f"device {device_name!r}"] if device_name is not None else []
    return f" ({', '.join(parts)})" if parts else ""


def simulate(path: str | os.PathLike[str], strategy: str, budget: int, *, seed: int = 0,
             strategy_options: Mapping[str, Any] | None = None) -> list[float]:
    """Run Kernel Tuner's ``strategy`` in simulation mode on the cache file ``path`` (written by
    :func:`write_cache`) for ``max_fevals = budget`` evaluations (``brute_force``: all); the best-so-far curve (ms)
    after each distinct config it evaluated, in its order (failed ones count; a config served
    again from the cache does not). Python's and NumPy's global generators are seeded with
    ``seed`` (Kernel Tuner's strategies draw from them) and ``seed`` is passed to ``tune_kernel``.

    Raises:
        ModuleNotFoundError: Kernel Tuner is not installed (``pip install 'cuda-autotune[interchange]'``).
    """
    from autotune.base.files import read_text

    doc = json.loads(read_text(path, "Kernel Tuner cache file"))
    worst = max(e["time"] for e in doc["cache"].values() if not isinstance(e["time"], str))
    return best_so_far([ms for _, ms in evaluated(path, strategy, budget, seed=seed,
                                                   strategy_options=strategy_options)], worst)


def evaluated(path: str | os.PathLike[str], strategy: str, budget: int, *, seed: int = 0,
              strategy_options: Mapping[str, Any] | None = None) -> list[tuple[str, float | None]]:
    """What :func:`simulate` runs, as the distinct configs Kernel Tuner evaluated, in its order,
    at most ``budget``: each as (autotune's config key, :attr:`~autotune.kernel.config.Config.key`;
    its ms, ``None`` where it failed).

    Raises:
        ModuleNotFoundError: Kernel Tuner is not installed (``pip install 'cuda-autotune[interchange]'``).
    """
    import numpy as np
    import kernel_tuner

    from autotune.base.files import read_text
    from autotune.kernel.config import Config

    doc = json.loads(read_text(path, "Kernel Tuner cache file"))
    names = doc["tune_params_keys"]
    keys = set(doc["cache"])

    def recorded(p) -> bool:  # exactly the table's configs, failed ones included
        return cache_key(names, p) in keys

    options = dict(strategy_options or {})
    if strategy != "brute_force":  # the one strategy that takes no max_fevals (it visits all)
        options["max_fevals"] = budget
    random.seed(seed)
    np.random.seed(seed)
    results, _ = kernel_tuner.tune_kernel(
        doc["kernel_name"], "", tuple(doc["problem_size"]), [], doc["tune_params"], restrictions=recorded,
        strategy=strategy, strategy_options=options,
        cache=str(path), simulation_mode=True, quiet=True, seed=seed)
    seen, out = set(), []
    for r in results:
        if not r:
            continue
        key = cache_key(names, r)
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time")
        ms = t if isinstance(t, (int, float)) and "__error__" not in r else None
        out.append((Config.of(doc["kernel_name"], {n: int(r[n]) for n in names}).key, ms))
    return out[:budget]
