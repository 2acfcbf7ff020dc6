"""``autotune report``: PNG plots made from the results database.

Three plots, each from what is stored (nothing is measured here; the data come from
:mod:`autotune.report.data`, for any kernel and its named dims):

- :func:`plot_heatmap` (``heatmap_<kernel>_<dims>_<dtype>.png``, dims shown as ``8192x8192``):
  the figure by two tunable macros (TILE_DIM across and BLOCK_ROWS up where the kernel has
  them), each cell the fastest ``ok`` trial over the kernel's other macros.
- :func:`plot_kernels` (``kernels_<dims>_<dtype>.png``): every kernel of the latest bench run of
  those dims, default and tuned config side by side, the CPU as a bar too, with the run's
  memcpy or vendor library and the kernel's bound kernel as reference lines.
- :func:`plot_scaling` (``scaling_<kernel>_<dtype>.png``): the tuned best of every stored dims of
  a kernel against the product of its dims (log axis), with the memcpy of each best's search.
- :func:`plot_pareto` (``pareto_<kernel>_<dims>_<dtype>.png``), where the key was searched with
  ``--objective time,energy``: every valid trial's median time against its energy per launch,
  the Pareto front highlighted and its time-optimal and energy-optimal configs named.

The figure is GFLOP/s, GB/s or the median time, whichever every result involved has
(:func:`autotune.report.data.figure_of`). A plot whose data is missing raises
:class:`MissingData`; :func:`write_report` writes every plot it can, collects those notes,
and raises :class:`~autotune.errors.NotTunedError` when it can write none.

Matplotlib is imported inside the plotting functions only, and drawn through its ``Agg``
canvas on a :class:`matplotlib.figure.Figure` (no pyplot, no global backend switch:
``autotune.report.figure``), so importing autotune never imports matplotlib. The front's plot is
``autotune.report.pareto_plot``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotune.errors import NotTunedError
from autotune.kernel.dtypes import get_dtype
from autotune.report.bench import BenchLine
from autotune.report.data import (BenchData, Heatmap, MissingData, Scaling, ScalingPoint, bench_data, heatmap_data,
                                  kernel_of, largest_shape, on, scaling_data, search_hint)
from autotune.report.figure import DPI as DPI
from autotune.report.figure import FIGSIZE as FIGSIZE
from autotune.report.figure import NOTE_CHARS as NOTE_CHARS
from autotune.report.figure import TITLE_CHARS as TITLE_CHARS
from autotune.report.figure import check_out_dir, new_figure, save
from autotune.report.pareto_plot import pareto_bests as pareto_bests
from autotune.report.pareto_plot import plot_pareto as plot_pareto
from autotune.store.key import Dims, format_shape
from autotune.store.repository import Store

__all__ = [
    "MissingData", "Heatmap", "BenchData", "ScalingPoint", "Scaling", "Report",
    "heatmap_data", "bench_data", "scaling_data", "largest_shape",
    "plot_heatmap", "plot_kernels", "plot_scaling", "plot_pareto", "pareto_bests", "write_report", "heatmap_title",
    "DPI", "FIGSIZE", "TITLE_CHARS", "NOTE_CHARS",
]


def _value_label(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def plot_heatmap(store: Store, out_dir: Path, kernel: Any, dims: Mapping[str, int] | Dims, dtype: str,
                 device: str | None = None, *, include_stale: bool = False, nvcc_version: str | None = None,
                 stale: list[str] | None = None) -> Path:
    """Write ``heatmap_<kernel>_<dims>_<dtype>.png`` into ``out_dir``; returns its path. Stale
    searches are left out as :func:`heatmap_data` says (their reasons appended to ``stale``).

    Raises:
        MissingData: no (current) ``ok`` trial of that kernel, dims and dtype (or fewer than two macros).
    """
    data = heatmap_data(store, kernel, dims, dtype, device, include_stale=include_stale, nvcc_version=nvcc_version)
    if stale is not None:
        stale.extend(data.stale)
    import matplotlib
    import numpy as np
    from matplotlib.patches import Rectangle

    fig = new_figure("heatmap")
    ax = fig.add_subplot()
    values = np.ma.masked_invalid(np.array(
        [[data.cells.get((x, y), np.nan) for x in data.xs] for y in data.ys], dtype=float))
    cmap = matplotlib.colormaps["viridis" if data.figure.higher_is_better else "viridis_r"].with_extremes(bad="white")
    low, high = float(values.min()), float(values.max())
    im = ax.imshow(values, cmap=cmap, origin="lower", aspect="auto", vmin=low, vmax=high if high > low else low + 1)
    ax.set_xticks(range(len(data.xs)), [str(x) for x in data.xs])
    ax.set_yticks(range(len(data.ys)), [str(y) for y in data.ys])
    ax.set_xticks(np.arange(-0.5, len(data.xs)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(data.ys)), minor=True)
    ax.grid(which="minor", color="0.75", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel(data.x_macro)
    ax.set_ylabel(data.y_macro)
    cells = len(data.xs) * len(data.ys)
    size = 11 if cells <= 30 else 9 if cells <= 64 else 7
    for (x, y), value in data.cells.items():
        shade = (value - low) / (high - low) if high > low else 1.0
        shade = shade if data.figure.higher_is_better else 1 - shade
        ax.text(data.xs.index(x), data.ys.index(y), _value_label(value), ha="center", va="center", fontsize=size,
                color="black" if shade > 0.55 else "white")
    for x, y in data.tried - data.cells.keys():
        ax.text(data.xs.index(x), data.ys.index(y), "failed", ha="center", va="center",
                fontsize=size - 2, color="0.45", style="italic")
    for x, y in data.excluded:  # no config of the space has this pair: hatched, unlike a cell not tried
        ax.add_patch(Rectangle((data.xs.index(x) - 0.5, data.ys.index(y) - 0.5), 1, 1, facecolor="0.94",
                               edgecolor="0.72", hatch="///", linewidth=0))
    (bx, by), best = data.best
    ax.add_patch(Rectangle((data.xs.index(bx) - 0.5, data.ys.index(by) - 0.5), 1, 1,
                           fill=False, edgecolor="red", linewidth=2.5))
    ax.set_title(heatmap_title(data), fontsize=11)
    bar = fig.colorbar(im, ax=ax)
    bar.set_label(data.figure.label)
    best_key = data.configs[(bx, by)]
    hatched = "hatched: excluded by the space's constraints; " if data.excluded else ""
    note = (f"red box: the best, {_value_label(best)} {data.figure.unit} ({best_key}); {hatched}blank: not tried; "
            f"'failed': no ok trial. {data.ok_trials} ok and {data.failed_trials} failed trials; kernel source "
            f"{data.source_hash[:12]}")
    fig.supxlabel("\n".join(textwrap.wrap(note, NOTE_CHARS)), fontsize=8, color="0.3")
    return save(fig, Path(out_dir) / f"heatmap_{data.kernel}_{format_shape(data.dims)}_{dtype}.png")


def heatmap_title(data: Heatmap) -> str:
    """The heatmap's title: what, where, the axes, and what each cell is the best over (the
    kernel's other tunables, wrapped at :data:`TITLE_CHARS` so that none is cut off)."""
    over = (f"each cell: the fastest over {', '.join(data.other_macros)}" if data.other_macros
            else "one config per cell")
    return "\n".join([f"{data.kernel} {format_shape(data.dims)} {data.dtype} on {data.device}",
                      f"{data.figure.label} by {data.x_macro} and {data.y_macro}", *textwrap.wrap(over, TITLE_CHARS)])


_COLOURS = {"default": "#4C72B0", "tuned": "#DD8452", "default=tuned": "#55A868", "cpu": "#8C8C8C"}


TINY = 0.02
"""A bar under this fraction of the axis is annotated with an arrow (the CPU's, beside a GPU's)."""


def plot_kernels(store: Store, out_dir: Path, dims: Mapping[str, int] | Dims, dtype: str, device: str | None = None,
                 bound_kernel: str | None = None) -> Path:
    """Write ``kernels_<dims>_<dtype>.png`` into ``out_dir``; returns its path. ``bound_kernel``:
    a kernel whose line in the run is drawn as a reference (e.g. a transpose's copy_row).

    Raises:
        MissingData: no bench run of those dims and dtype.
    """
    data = bench_data(store, dims, dtype, device)
    from matplotlib.patches import Patch

    kernel_lines = data.kernel_lines()
    field = "gflops" if any(line.gflops is not None for line in kernel_lines) else "gbps"
    unit, label = ("GFLOP/s", "GFLOP/s") if field == "gflops" else ("GB/s", "effective bandwidth (GB/s)")
    fig = new_figure("kernels")
    ax = fig.add_subplot()
    groups: dict[str, list[BenchLine]] = {}
    for line in kernel_lines:
        groups.setdefault(line.name, []).append(line)
    cpu = [line for line in data.lines if line.kind == "cpu" and field == "gbps"]
    width = 0.4
    labels, top = [], 0.0
    failed = False
    heights: list[tuple[float, float]] = []  # every bar; those too low to see on the linear axis get an arrow

    def bar(x, line: BenchLine, colour: str, w: float) -> None:
        nonlocal top, failed
        value = getattr(line, field)
        if value is None:
            failed = True
            ax.text(x, 0, "failed", rotation=90, ha="center", va="bottom", fontsize=8, color="#C44E52")
            return
        ax.bar(x, value, w, color=colour, edgecolor="white", zorder=2)
        heights.append((x, value))
        ax.annotate(_value_label(value), (x, value), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8, zorder=3,
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
        top = max(top, value)

    for i, (name, lines) in enumerate(groups.items()):
        labels.append(name)
        by_source = {line.source or "default": line for line in lines}
        if "default=tuned" in by_source or len(by_source) == 1:
            line = by_source.get("default=tuned") or next(iter(by_source.values()))
            bar(i, line, _COLOURS.get(line.source or "default", _COLOURS["default"]), width * 2)
        else:
            if "default" in by_source:
                bar(i - width / 2, by_source["default"], _COLOURS["default"], width)
            if "tuned" in by_source:
                bar(i + width / 2, by_source["tuned"], _COLOURS["tuned"], width)
    for line in cpu:
        labels.append("CPU")
        bar(len(labels) - 1, line, _COLOURS["cpu"], width * 2)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.7, len(labels) - 0.3)

    refs = [(line.name, getattr(line, field), "black", "-") for line in data.lines
            if line.kind in ("memcpy", "vendor") and getattr(line, field) is not None]
    bound = data.bound(bound_kernel, field) if bound_kernel else None
    if bound is not None:
        refs.append((f"{bound_kernel} bound", bound, "#C44E52", "--"))
    drawn = [ax.axhline(value, color=colour, linestyle=style, linewidth=1.5, zorder=1,
                        label=f"{name}: {_value_label(value)} {unit}") for name, value, colour, style in refs]
    top = max([top, *(value for _, value, _, _ in refs)]) or 1.0
    ax.set_ylim(0, top * 1.08)
    tallest = max((value for _, value in heights), default=0.0)
    for x, value in heights:
        if value < TINY * top:  # a sliver on the linear axis: an arrow points at it, with its ratio
            ax.annotate(f"bar too low to see:\n{tallest / value:,.0f}x below\nthe tallest bar", (x, value),
                        xytext=(x, 0.2 * top), textcoords="data", ha="center", va="bottom", fontsize=8,
                        color="0.25", arrowprops={"arrowstyle": "->", "color": "0.4", "linewidth": 1,
                                                  "shrinkB": 12})
    ax.set_ylabel(label)
    ax.set_xlabel("kernel")
    ax.grid(axis="y", color="0.9")
    ax.set_axisbelow(True)
    present = {line.source or "default" for ls in groups.values() for line in ls}
    handles = [Patch(color=_COLOURS[s], label={"default=tuned": "default = tuned"}.get(s, s + " config"))
               for s in ("default", "tuned", "default=tuned") if s in present]
    handles += [Patch(color=_COLOURS["cpu"], label=line.name) for line in cpu]
    ax.legend(handles=[*handles, *drawn], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9,
              title=f"bars ({unit} on top) and reference lines", title_fontsize=9, frameon=False)
    ax.set_title(f"all kernels, {format_shape(data.dims)} {data.dtype} on {data.device}\n"
                 f"bench run {data.run_id} of {data.created_at:%Y-%m-%d %H:%M} UTC, "
                 f"nvcc {data.nvcc_version}, L2: {data.l2_mode} buffers", fontsize=12)
    if failed:
        fig.supxlabel("failed: the config did not produce a result (see the notes of autotune bench's table)",
                      fontsize=8, color="0.3")
    return save(fig, Path(out_dir) / f"kernels_{format_shape(data.dims)}_{dtype}.png")


def plot_scaling(store: Store, out_dir: Path, kernel: Any, dtype: str, device: str | None = None, *,
                 include_stale: bool = False, nvcc_version: str | None = None,
                 stale: list[str] | None = None) -> Path:
    """Write ``scaling_<kernel>_<dtype>.png`` into ``out_dir``; returns its path. Stale bests are
    left out as :func:`scaling_data` says (their reasons appended to ``stale``).

    Raises:
        MissingData: nothing (current) is tuned for that kernel and dtype, or only one shape.
    """
    data = scaling_data(store, kernel, dtype, device, include_stale=include_stale, nvcc_version=nvcc_version)
    if stale is not None:
        stale.extend(data.stale)
    if len(data.points) < 2:
        only = data.points[0]
        raise MissingData(f"one tuned shape of {data.kernel} {data.dtype}{on(device)} ({format_shape(only.dims)}): "
                          f"a scaling plot needs two or more; run {search_hint(kernel_of(kernel), None, dtype)} "
                          "for another size")
    from matplotlib.ticker import FuncFormatter

    fig = new_figure("scaling")
    ax = fig.add_subplot()
    xs = [p.elements for p in data.points]
    ax.plot(xs, [p.value for p in data.points], "o-", color=_COLOURS["tuned"], linewidth=2, markersize=7,
            label=f"{data.kernel}, tuned best (pooled re-timing where done)")
    refs = []
    if data.figure.field == "gbps":
        refs = [([(p.elements, p.memcpy_gbps) for p in data.points if p.memcpy_gbps is not None], "s--", "black",
                 "device memcpy (same search)"),
                ([(p.elements, p.copy_gbps) for p in data.points if p.copy_gbps is not None], "^:", "#C44E52",
                 "bound kernel (same search)")]
    for points, style, colour, label in refs:
        if points:
            ax.plot(*zip(*points), style, color=colour, markersize=5, label=label)
    for p in data.points:
        ax.annotate(f"{format_shape(p.dims)}: {_value_label(p.value)}", (p.elements, p.value), xytext=(7, -2),
                    textcoords="offset points", ha="left", va="top", fontsize=8, color="0.2")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_elements_label))
    low, high = min(xs), max(xs)
    ax.set_xlim(low / 2, high * 2)
    values = [p.value for p in data.points] + [v for points, *_ in refs for _, v in points]
    ax.set_ylim(0, max(values) * 1.15)
    ax.set_xlabel(f"problem size, {' x '.join(n for n, _ in data.points[0].dims)} (log scale)")
    ax.set_ylabel(data.figure.label)
    ax.grid(True, which="major", color="0.9")
    ax.legend(loc="lower right", fontsize=9, framealpha=0.9)
    ax.set_title(f"{data.kernel} {data.dtype} on {data.device}: {data.figure.unit} against size\n"
                 f"{len(data.points)} tuned shape{'s' if len(data.points) != 1 else ''}", fontsize=12)
    return save(fig, Path(out_dir) / f"scaling_{data.kernel}_{dtype}.png")


def _elements_label(value: float, _pos) -> str:
    for scale, suffix in ((2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki")):
        if value >= scale:
            v = value / scale
            return f"{v:.0f}{suffix}" if v == int(v) else f"{v:.3g}{suffix}"
    return f"{value:.0f}"


# --------------------------------------------------------------------------- all of it



@dataclass
class Report:
    """What :func:`write_report` did: the files written, a note for each plot skipped, and for
    each plot that left stale results out, why each one is stale (``stale``: plot -> reasons)."""

    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stale: dict[str, list[str]] = field(default_factory=dict)


def write_report(store: Store, out_dir: Path, *, kernel: Any = "smem_pad",
                 dims: Mapping[str, int] | Dims | None = None, dtype: str = "float32",
                 device: str | None = None, include_stale: bool = False, nvcc_version: str | None = None) -> Report:
    """Write every plot whose data is stored into ``out_dir`` (created if missing).

    ``kernel``: a catalog name, a kernel file's path or a Kernel. Without ``dims``, the heatmap
    and the kernels plot use :func:`largest_shape`; where those dims were searched with
    ``--objective time,energy``, the front is plotted too (:func:`plot_pareto`). The heatmap and the scaling plot leave stale
    results out (:mod:`autotune.store.stale`, against ``nvcc_version`` where given) unless
    ``include_stale``, and say which in :attr:`Report.stale`. The kernels plot shows one stored
    bench run as it was measured (its date and nvcc in its title): a record of a run, not tuned
    results to reuse.

    Raises:
        InvalidInputError: unknown kernel or dtype; ``out_dir`` is a file or cannot be written.
        NotTunedError: no plot could be made (the message names what is missing).
    """
    k, dtype = kernel_of(kernel), get_dtype(dtype).name
    report = Report()
    judging = {"include_stale": include_stale, "nvcc_version": nvcc_version}
    dims = tuple(dims.items()) if isinstance(dims, Mapping) else dims
    if dims is None:
        dims = largest_shape(store, k, dtype, device)
    out = check_out_dir(out_dir)
    jobs: Sequence = []
    if dims is None:
        report.skipped.append(f"no trials of {k.name} {dtype} and no bench run of {dtype}{on(device)}: "
                              f"run {search_hint(k, None, dtype)} (and autotune bench --size N)")
    else:
        bound = getattr(getattr(k, "objective", None), "bound_kernel", None)
        jobs = [lambda: plot_heatmap(store, out, k, dims, dtype, device, stale=report.stale.setdefault("heatmap", []),
                                     **judging),
                lambda: plot_kernels(store, out, dims, dtype, device, bound_kernel=bound)]
    jobs = [*jobs, lambda: plot_scaling(store, out, k, dtype, device, stale=report.stale.setdefault("scaling", []),
                                        **judging)]
    if dims is not None:  # a front only where the key was searched for one: no note for every other report
        jobs += [lambda b=b: plot_pareto(store, out, b) for b in pareto_bests(store, k, dims, dtype, device)[-1:]]
    for job in jobs:
        try:
            report.written.append(job())
        except MissingData as missing:
            report.skipped.append(str(missing))
    report.stale = {plot: reasons for plot, reasons in report.stale.items() if reasons}
    if not report.written:
        raise NotTunedError("nothing to plot: " + "; ".join(report.skipped))
    return report
