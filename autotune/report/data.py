"""What ``autotune report`` plots, read from the results database (nothing is measured here).

Every function takes a kernel (a catalog name or a Kernel object) and its named dims; the
figure plotted is the first that every result involved has, of GFLOP/s, GB/s and the median
time (:func:`figure_of`). A plot whose data is missing raises :class:`MissingData`, whose
message says what to run to get it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from autotune.errors import AutotuneError, NotTunedError
from autotune.report.bench import BenchLine
from autotune.store.key import Dims, dims_key, format_shape, parse_dims_key
from autotune.store.records import BestRecord
from autotune.store.queries import latest_bench_run, latest_search_trials, tried_dims
from autotune.store.repository import Store

__all__ = ["MissingData", "Figure", "FIGURES", "figure_of", "Heatmap", "BenchData", "ScalingPoint", "Scaling",
           "HEATMAP_AXES", "heatmap_data", "bench_data", "scaling_data", "largest_shape", "search_hint", "shape_args",
           "kernel_of"]

HEATMAP_AXES = ("TILE_DIM", "BLOCK_ROWS")
"""The heatmap's axes where a kernel has both macros; otherwise its two tunables with the most
values tried."""
_SUGAR = ("rows", "cols", "m", "n", "k")


class MissingData(NotTunedError):
    """The data of one plot is not stored; the message says what to run to get it."""


@dataclass(frozen=True)
class Figure:
    """A figure of merit: the stored field, its axis label and unit; a time is better lower."""

    field: str
    label: str
    unit: str

    @property
    def higher_is_better(self) -> bool:
        return self.field != "median_ms"


FIGURES = (Figure("gflops", "GFLOP/s", "GFLOP/s"), Figure("gbps", "effective bandwidth (GB/s)", "GB/s"),
           Figure("median_ms", "median time per launch (ms)", "ms"))


def figure_of(results: Iterable[Any]) -> Figure:
    """The first of :data:`FIGURES` that every one of ``results`` (mappings or objects) has."""
    rows = list(results)

    def value(row: Any, field: str) -> Any:
        return row.get(field) if isinstance(row, Mapping) else getattr(row, field, None)

    return next(f for f in FIGURES if all(value(r, f.field) is not None for r in rows) or f.field == "median_ms")


def kernel_of(kernel: Any) -> Any:
    """``kernel`` as a Kernel object (a catalog name or a kernel file's path is resolved)."""
    from autotune.kernel.catalog import resolve_kernel

    return resolve_kernel(kernel) if isinstance(kernel, str) else kernel


def shape_args(dims: Dims) -> str:
    """Command-line options giving ``dims``: ``--size N`` (all equal), ``--rows R --cols C``, or ``--dims ...``."""
    values = {v for _, v in dims}
    if len(values) == 1:
        return f"--size {dims[0][1]}"
    if all(name in _SUGAR for name, _ in dims):
        return " ".join(f"--{name} {value}" for name, value in dims)
    return f"--dims {dims_key(dims)}"


def search_hint(kernel: Any, dims: Dims | None, dtype: str) -> str:
    """``autotune search --kernel K --size N [--dtype D]``: what to run for the missing data."""
    from autotune.kernel.catalog import KERNELS

    name = kernel.name if kernel.name in KERNELS else str(getattr(kernel, "path", kernel.name))
    shape = shape_args(dims) if dims else "--size N"
    return f"autotune search --kernel {name} {shape}{dtype_arg(dtype)}"


def dtype_arg(dtype: str) -> str:
    return "" if dtype == "float32" else f" --dtype {dtype}"


def on(device: str | None) -> str:
    return f" on a device matching {device!r}" if device else ""


@dataclass(frozen=True)
class Heatmap:
    """The best trial per pair of values of two tunable macros, over the kernel's other macros.

    Attributes:
        x_macro, y_macro: the macros across and up; ``xs``, ``ys`` every value tried of each.
        cells: ``(x, y) ->`` the figure of the fastest ``ok`` trial of that pair (lowest time);
            pairs with no ``ok`` trial are absent; ``configs``: its config key.
        tried: every pair with a trial, ok or failed (tried but absent from ``cells``: all failed).
        other_macros: the macros the best is taken over.
        figure: what the cells hold.
        excluded: pairs not tried that no config of the kernel's search space has (its
            constraints exclude them: e.g. TILE_DIM * BLOCK_ROWS over 1024 threads); empty where
            the space is too large to tell (:data:`EXCLUDED_LIMIT`).
        stale: why each more recent search was left out (stale), most recent first.
    """

    device: str
    kernel: str
    source_hash: str
    dims: Dims
    dtype: str
    x_macro: str
    y_macro: str
    xs: tuple[int, ...]
    ys: tuple[int, ...]
    cells: dict[tuple[int, int], float]
    configs: dict[tuple[int, int], str]
    tried: frozenset[tuple[int, int]]
    other_macros: tuple[str, ...]
    ok_trials: int
    failed_trials: int
    figure: Figure
    excluded: frozenset[tuple[int, int]] = frozenset()
    stale: tuple[str, ...] = ()

    @property
    def best(self) -> tuple[tuple[int, int], float]:
        """The pair of the best figure and that figure (ties: the smaller product of the pair)."""
        sign = 1 if self.figure.higher_is_better else -1
        cell = max(self.cells, key=lambda c: (sign * self.cells[c], -c[0] * c[1]))
        return cell, self.cells[cell]


def heatmap_data(store: Store, kernel: Any, dims: Mapping[str, int] | Dims, dtype: str,
                 device: str | None = None, *, include_stale: bool = False,
                 nvcc_version: str | None = None) -> Heatmap:
    """Every ``ok`` trial of ``kernel`` on ``dims`` and ``dtype``, by :data:`HEATMAP_AXES`.

    Only one device and one kernel source are used: those of the most recent search of that
    kernel, dims and dtype that has an ``ok`` trial (``device``: a case-insensitive part of the
    device name the search must match) and is not stale (:mod:`autotune.store.stale`, against
    ``nvcc_version`` where given; ``include_stale``: the most recent, stale or not). Every search
    on a device of that name with that kernel row (and, stale ones left out, that nvcc and those
    flags) counts (a resumed study has several). ``Heatmap.stale``: why each more recent search
    was left out.

    Raises:
        MissingData: no such search (the message names the stale ones left out, and
            ``--include-stale``), or the kernel has fewer than two tunable macros.
    """
    from autotune.store import stale

    k = kernel_of(kernel)
    dims = tuple(dims.items()) if isinstance(dims, Mapping) else tuple(dims)
    shown = f"{k.name} {format_shape(dims)} {dtype}"
    judge = None if include_stale else (lambda identity: stale.stale_reason(identity, k, nvcc_version))
    latest = latest_search_trials(store, k.name, dims, dtype, device, judge)
    if latest is None:
        raise MissingData(f"no trials of {shown}{on(device)}: run {search_hint(k, dims, dtype)}")
    if not latest.trials:
        raise MissingData(f"no current trials of {shown}{on(device)}: {stale.left_out(latest.skipped, 'plots them')}")
    device_name, source_hash, trials = latest.device, latest.source_hash, latest.trials
    tried_values: dict[str, set[int]] = {}
    for t in trials:
        for macro, value in t["macros"].items():
            tried_values.setdefault(macro, set()).add(int(value))
    if all(m in tried_values for m in HEATMAP_AXES):
        x_macro, y_macro = HEATMAP_AXES
    elif len(tried_values) >= 2:
        x_macro, y_macro = sorted(tried_values, key=lambda m: (-len(tried_values[m]), m))[:2]
    else:
        raise MissingData(f"kernel {k.name} has fewer than two tunable macros: no heatmap")
    ok = [t for t in trials if t["status"] == "ok"]
    figure = figure_of(ok)
    fastest: dict[tuple[int, int], Mapping] = {}
    for t in ok:
        cell = (int(t["macros"][x_macro]), int(t["macros"][y_macro]))
        if cell not in fastest or t["median_ms"] < fastest[cell]["median_ms"]:
            fastest[cell] = t
    tried = frozenset((int(t["macros"][x_macro]), int(t["macros"][y_macro])) for t in trials)
    xs, ys = tuple(sorted(tried_values[x_macro])), tuple(sorted(tried_values[y_macro]))
    return Heatmap(device_name, k.name, source_hash, dims, dtype, x_macro, y_macro, xs, ys,
                   {c: t[figure.field] for c, t in fastest.items()}, {c: t["config_key"] for c, t in fastest.items()},
                   tried, tuple(sorted(set(tried_values) - {x_macro, y_macro})), len(ok), len(trials) - len(ok), figure,
                   excluded_cells(k, x_macro, y_macro, {(x, y) for x in xs for y in ys} - tried), latest.skipped)


EXCLUDED_LIMIT = 200_000
"""Most valid configs walked to tell which heatmap cells the constraints exclude."""


def excluded_cells(kernel: Any, x_macro: str, y_macro: str, cells: set[tuple[int, int]]) -> frozenset:
    """Those of ``cells`` (pairs of values of ``x_macro`` and ``y_macro``) that no valid config
    of ``kernel``'s search space has: its constraints exclude them. A pair with a value outside
    the space is not judged; nothing is when the space has over :data:`EXCLUDED_LIMIT` valid
    configs and some pair was not yet seen."""
    try:
        space = kernel.space()
    except AutotuneError:  # a kernel file whose space cannot be read now: nothing to tell
        return frozenset()
    values = dict(space.params)
    if x_macro not in values or y_macro not in values:
        return frozenset()
    wanted = {(x, y) for x, y in cells if x in values[x_macro] and y in values[y_macro]}
    for number, config in enumerate(space.iter_configs()):
        if not wanted or number >= EXCLUDED_LIMIT:
            return frozenset()
        m = config.as_dict()
        wanted.discard((m[x_macro], m[y_macro]))
    return frozenset(wanted)


@dataclass(frozen=True)
class BenchData:
    """One stored bench run (lines as :class:`~autotune.report.bench.BenchLine`)."""

    run_id: int
    device: str
    dims: Dims
    dtype: str
    memcpy_gbps: float | None
    l2_mode: str
    nvcc_version: str
    created_at: datetime
    lines: tuple[BenchLine, ...]

    def kernel_lines(self) -> list[BenchLine]:
        return [line for line in self.lines if line.kind == "kernel"]

    def bound(self, kernel: str, field: str = "gbps") -> float | None:
        """The best ``field`` of ``kernel``'s lines in this run (``None``: not there or failed)."""
        values = [getattr(line, field) for line in self.kernel_lines()
                  if line.name == kernel and getattr(line, field) is not None]
        return max(values) if values else None


def bench_data(store: Store, dims: Mapping[str, int] | Dims, dtype: str, device: str | None = None) -> BenchData:
    """The latest stored bench run of ``dims`` and ``dtype`` (on a device whose name contains
    ``device``, case-insensitive).

    Raises:
        MissingData: there is none.
    """
    dims = tuple(dims.items()) if isinstance(dims, Mapping) else tuple(dims)
    fields = ("name", "kind", "median_ms", "gbps", "pct_memcpy", "config_key", "source", "registers",
              "shared_bytes", "occupancy", "note", "gflops")
    run = latest_bench_run(store, dims, dtype, fields, device)
    if run is None:
        raise MissingData(f"no bench run for {format_shape(dims)} {dtype}{on(device)}: "
                          f"run autotune bench {shape_args(dims)}{dtype_arg(dtype)}")
    return BenchData(run.run_id, run.device, dims, run.dtype, run.memcpy_gbps, run.l2_mode, run.nvcc_version,
                     run.created_at, tuple(BenchLine(**row) for row in run.rows))


@dataclass(frozen=True)
class ScalingPoint:
    """The tuned best of one dims: ``value`` of the scaling's figure (pooled when re-timed), the
    memcpy and bound-kernel bandwidth of its search (GB/s, ``None``: not measured)."""

    dims: Dims
    value: float
    pooled: bool
    memcpy_gbps: float | None
    copy_gbps: float | None
    config_key: str

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(v for _, v in self.dims)

    @property
    def elements(self) -> int:
        """The product of the dims."""
        return math.prod(self.shape)


@dataclass(frozen=True)
class Scaling:
    device: str
    kernel: str
    dtype: str
    figure: Figure
    points: tuple[ScalingPoint, ...]  # by the product of the dims, then the dims
    stale: tuple[str, ...] = ()  # why each stale best left out is stale


def _pooled(b: BestRecord, figure: Figure) -> float:
    return {"gflops": b.pooled_gflops, "gbps": b.pooled_gbps or b.gbps, "median_ms": b.time_ms}[figure.field]


def scaling_data(store: Store, kernel: Any, dtype: str, device: str | None = None, *, include_stale: bool = False,
                 nvcc_version: str | None = None) -> Scaling:
    """The tuned best of every stored dims of ``kernel`` (its name) and ``dtype`` on one device:
    the device (by name) of the most recently updated best (among names containing ``device``);
    where dims have several bests (kernel sources, toolchains), the most recent. Stale bests
    (:mod:`autotune.store.stale`, against ``nvcc_version`` where given) are left out unless
    ``include_stale``; ``Scaling.stale``: why each one left out is stale.

    Raises:
        MissingData: nothing (current) is tuned for that kernel and dtype; the message names
            the stale results left out and ``--include-stale``.
    """
    from autotune.store import stale

    k = kernel_of(kernel)
    found = store.find_best(kernel=k.name, dtype=dtype, device_name=device)
    if not found:
        raise MissingData(f"no tuned result of {k.name} {dtype}{on(device)}: "
                          f"run {search_hint(k, None, dtype)} for a few sizes")
    judged = stale.partition(found, {k.name: k}, nvcc_version)
    reasons = () if include_stale else tuple(judged.reasons)
    found = found if include_stale else judged.current
    if not found:
        raise MissingData(f"no current tuned result of {k.name} {dtype}{on(device)}: "
                          f"{stale.left_out(reasons, 'plots them')}")
    name = max(found, key=lambda b: b.updated_at).device_name
    latest: dict[Dims, BestRecord] = {}
    for b in found:
        if b.device_name == name and (b.dims not in latest or b.updated_at > latest[b.dims].updated_at):
            latest[b.dims] = b
    figure = figure_of(latest.values())
    points = [ScalingPoint(b.dims, _pooled(b, figure), b.pooled_median_ms is not None, b.memcpy_gbps, b.copy_gbps,
                           b.config.key) for b in latest.values()]
    points.sort(key=lambda p: (p.elements, p.shape))
    return Scaling(name, k.name, dtype, figure, tuple(points), reasons)


def largest_shape(store: Store, kernel: Any, dtype: str, device: str | None = None) -> Dims | None:
    """The largest dims (product of the values, then the values) with an ``ok`` trial of
    ``kernel`` and ``dtype``; where there is none, the largest dims of a bench run of ``dtype``
    with the kernel's dims names; else ``None``."""
    k = kernel_of(kernel)
    searched, benched = tried_dims(store, k.name, dtype, device)
    for texts in (searched, benched):
        candidates = [d for d in map(parse_dims_key, texts) if tuple(n for n, _ in d) == tuple(k.dims)]
        if candidates:
            return max(candidates, key=lambda d: (math.prod(v for _, v in d), tuple(v for _, v in d)))
    return None
