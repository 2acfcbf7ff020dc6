"""``autotune report``: PNG plots made from the results database.

Three plots, each from what is stored (nothing is measured here):

- :func:`plot_heatmap` (``heatmap_<kernel>_<R>x<C>_<dtype>.png``): effective bandwidth by
  block shape, TILE_DIM across and BLOCK_ROWS up, each cell the best ``ok`` trial over the
  kernel's other macros (IPAD, DIAGONAL, UNROLL, ...); data: :func:`heatmap_data`.
- :func:`plot_kernels` (``kernels_<R>x<C>_<dtype>.png``): every kernel of the latest bench run
  of a shape, default and tuned config side by side, the CPU as a bar too, with the device
  memcpy and the copy_row / copy_col bounds of that run as reference lines; data:
  :func:`bench_data`.
- :func:`plot_scaling` (``scaling_<kernel>_<dtype>.png``): the tuned best of every stored
  shape of a kernel against its size (rows * cols, log axis), with the memcpy of each best's
  search; data: :func:`scaling_data`.

A plot whose data is missing raises :class:`MissingData`, whose message says what to run to
get it; :func:`write_report` writes every plot it can, collects those notes, and raises
:class:`~autotune.errors.NotTunedError` when it can write none.

The plots are of transposes and copies (matrix products, ``depth`` > 0, are left out: their
figures are in ``autotune best`` and ``autotune bench``).

Matplotlib is imported inside the plotting functions only, and drawn through its ``Agg``
canvas on a :class:`matplotlib.figure.Figure` (no pyplot, no global backend switch), so
importing autotune never imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy import func, select

from autotune.report.bench import BenchLine
from autotune.kernel.dtypes import get_dtype
from autotune.errors import InvalidInputError, NotTunedError
from autotune.kernel.catalog import get_kernel
from autotune.store.models import BenchRow, BenchRun, Device, Kernel, Search, Trial
from autotune.store.records import BestRecord
from autotune.store.repository import Store

__all__ = [
    "MissingData", "Heatmap", "BenchData", "ScalingPoint", "Scaling", "Report",
    "heatmap_data", "bench_data", "scaling_data", "largest_shape",
    "plot_heatmap", "plot_kernels", "plot_scaling", "write_report",
    "DPI", "FIGSIZE",
]

DPI = 110
"""Resolution of every PNG, dots per inch."""
FIGSIZE = {"heatmap": (9.0, 6.5), "kernels": (12.0, 6.5), "scaling": (9.0, 6.0)}
"""Size of each plot, inches (the PNG is ``FIGSIZE * DPI`` pixels)."""

BLOCK_MACROS = ("TILE_DIM", "BLOCK_ROWS")


class MissingData(NotTunedError):
    """The data of one plot is not stored; the message says what to run to get it."""


# --------------------------------------------------------------------------- hints


def _shape_args(rows: int, cols: int) -> str:
    return f"--size {rows}" if rows == cols else f"--rows {rows} --cols {cols}"


def _dtype_arg(dtype: str) -> str:
    return "" if dtype == "float32" else f" --dtype {dtype}"


def _on(device: str | None) -> str:
    return f" on a device matching {device!r}" if device else ""


def _search_hint(kernel: str, rows: int | None, cols: int | None, dtype: str) -> str:
    shape = _shape_args(rows, cols) if rows is not None and cols is not None else "--size N"
    return f"autotune search --kernel {kernel} {shape}{_dtype_arg(dtype)}"


def _device_filter(device: str | None) -> tuple:
    if device is None:
        return ()
    return (func.lower(Device.name).contains(device.lower(), autoescape=True),)


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Heatmap:
    """Best effective bandwidth (GB/s) per block shape of one kernel, shape and dtype.

    Attributes:
        cells: ``(TILE_DIM, BLOCK_ROWS) -> GB/s``, the best ``ok`` trial of that block shape
            over every other macro; block shapes with no ``ok`` trial are absent.
        configs: ``(TILE_DIM, BLOCK_ROWS) ->`` the config key of that best trial.
        tried: every block shape with a trial, ok or failed (a tried shape absent from
            ``cells`` failed every time).
        tile_dims, block_rows: the axis values: every value tried (failed trials included),
            sorted.
        other_macros: the kernel's macros besides TILE_DIM and BLOCK_ROWS that the best is
            taken over.
        ok_trials, failed_trials: how many trials the plot is made of.
    """

    device: str
    kernel: str
    source_hash: str
    rows: int
    cols: int
    dtype: str
    tile_dims: tuple[int, ...]
    block_rows: tuple[int, ...]
    cells: dict[tuple[int, int], float]
    configs: dict[tuple[int, int], str]
    tried: frozenset[tuple[int, int]]
    other_macros: tuple[str, ...]
    ok_trials: int
    failed_trials: int

    @property
    def best(self) -> tuple[tuple[int, int], float]:
        """The block shape of the highest bandwidth and that bandwidth."""
        cell = max(self.cells, key=lambda c: (self.cells[c], -c[0] * c[1]))
        return cell, self.cells[cell]


def heatmap_data(store: Store, kernel: str, rows: int, cols: int, dtype: str,
                 device: str | None = None) -> Heatmap:
    """The data of the heatmap: every ``ok`` trial of ``kernel`` on ``rows x cols`` ``dtype``.

    Only one device and one kernel source are used: those of the most recent search of that
    kernel, shape and dtype that has an ``ok`` trial (``device``: a case-insensitive part of
    the device name the search must match). Every search on a device of that name with that
    kernel source counts (a resumed study has several).

    Raises:
        MissingData: no such search.
    """
    kernel = get_kernel(kernel).name
    where = (Kernel.name == kernel, Search.rows == rows, Search.cols == cols, Search.depth == 0,
             Search.dtype == dtype, *_device_filter(device))
    has_ok = select(Trial.id).where(Trial.search_id == Search.id, Trial.status == "ok").exists()
    with store.session() as session:
        latest = session.execute(
            select(Device.name, Kernel.id, Kernel.source_hash)
            .select_from(Search).join(Device, Search.device_id == Device.id)
            .join(Kernel, Search.kernel_id == Kernel.id)
            .where(*where, has_ok).order_by(Search.started_at.desc(), Search.id.desc()).limit(1)
        ).first()
        if latest is None:
            raise MissingData(f"no trials of {kernel} {rows}x{cols} {dtype}{_on(device)}: "
                              f"run {_search_hint(kernel, rows, cols, dtype)}")
        device_name, kernel_id, source_hash = latest
        trials = session.execute(
            select(Trial.macros, Trial.status, Trial.gbps, Trial.config_key)
            .join(Search, Trial.search_id == Search.id).join(Device, Search.device_id == Device.id)
            .where(Search.kernel_id == kernel_id, Device.name == device_name, Search.rows == rows,
                   Search.cols == cols, Search.depth == 0, Search.dtype == dtype)
            .order_by(Trial.id)
        ).all()
    cells: dict[tuple[int, int], float] = {}
    configs: dict[tuple[int, int], str] = {}
    tiles, blocks, others, tried = set(), set(), set(), set()
    ok = failed = 0
    for macros, status, gbps, config_key in trials:
        cell = (int(macros["TILE_DIM"]), int(macros["BLOCK_ROWS"]))
        tried.add(cell)
        tiles.add(cell[0])
        blocks.add(cell[1])
        others.update(m for m in macros if m not in BLOCK_MACROS)
        if status != "ok":
            failed += 1
            continue
        ok += 1
        if cell not in cells or gbps > cells[cell]:
            cells[cell], configs[cell] = gbps, config_key
    return Heatmap(device_name, kernel, source_hash, rows, cols, dtype, tuple(sorted(tiles)),
                   tuple(sorted(blocks)), cells, configs, frozenset(tried), tuple(sorted(others)), ok, failed)


@dataclass(frozen=True)
class BenchData:
    """One stored bench run (GB/s throughout; see :mod:`autotune.report.bench`)."""

    run_id: int
    device: str
    rows: int
    cols: int
    dtype: str
    memcpy_gbps: float
    l2_mode: str
    nvcc_version: str
    created_at: datetime
    lines: tuple[BenchLine, ...]

    def kernel_lines(self) -> list[BenchLine]:
        return [line for line in self.lines if line.kind == "kernel"]

    def bound(self, kernel: str) -> float | None:
        """The best GB/s of ``kernel``'s lines in this run (``None``: not there or failed)."""
        values = [line.gbps for line in self.kernel_lines() if line.name == kernel and line.gbps is not None]
        return max(values) if values else None


def bench_data(store: Store, rows: int, cols: int, dtype: str, device: str | None = None) -> BenchData:
    """The latest stored bench run of ``rows x cols`` ``dtype`` (on a device whose name
    contains ``device``, case-insensitive).

    Raises:
        MissingData: there is none.
    """
    fields = ("name", "kind", "median_ms", "gbps", "pct_memcpy", "config_key", "source", "registers",
              "shared_bytes", "occupancy", "note")
    with store.session() as session:
        run = session.scalars(
            select(BenchRun).join(Device, BenchRun.device_id == Device.id)
            .where(BenchRun.rows == rows, BenchRun.cols == cols, BenchRun.depth == 0, BenchRun.dtype == dtype,
                   *_device_filter(device))
            .order_by(BenchRun.created_at.desc(), BenchRun.id.desc()).limit(1)
        ).first()
        if run is None:
            raise MissingData(f"no bench run for {rows}x{cols} {dtype}{_on(device)}: "
                              f"run autotune bench {_shape_args(rows, cols)}{_dtype_arg(dtype)}")
        rows_ = session.scalars(select(BenchRow).where(BenchRow.run_id == run.id).order_by(BenchRow.position)).all()
        lines = tuple(BenchLine(**{f: getattr(r, f) for f in fields}) for r in rows_)
        return BenchData(run.id, run.device.name, run.rows, run.cols, run.dtype, run.memcpy_gbps, run.l2_mode,
                         run.nvcc_version, run.created_at, lines)


@dataclass(frozen=True)
class ScalingPoint:
    """The tuned best of one shape: ``gbps`` (pooled when re-timed), the memcpy and copy_row
    bandwidth of its search (GB/s, ``None``: not measured)."""

    rows: int
    cols: int
    gbps: float
    pooled: bool
    memcpy_gbps: float | None
    copy_gbps: float | None
    config_key: str

    @property
    def elements(self) -> int:
        return self.rows * self.cols


@dataclass(frozen=True)
class Scaling:
    device: str
    kernel: str
    dtype: str
    points: tuple[ScalingPoint, ...]  # by size, then rows


def scaling_data(store: Store, kernel: str, dtype: str, device: str | None = None) -> Scaling:
    """The tuned best of every stored shape of ``kernel`` and ``dtype`` on one device: the
    device (by name) of the most recently updated best (among names containing ``device``);
    where a shape has several bests (kernel sources, toolchains), the most recent.

    Raises:
        MissingData: nothing is tuned for that kernel and dtype.
    """
    kernel = get_kernel(kernel).name
    found = store.find_best(kernel=kernel, dtype=dtype, device_name=device, depth=0)
    if not found:
        raise MissingData(f"no tuned result of {kernel} {dtype}{_on(device)}: "
                          f"run {_search_hint(kernel, None, None, dtype)} for a few sizes")
    name = max(found, key=lambda b: b.updated_at).device_name
    latest: dict[tuple[int, int], BestRecord] = {}
    for b in found:
        if b.device_name == name and ((b.rows, b.cols) not in latest
                                      or b.updated_at > latest[(b.rows, b.cols)].updated_at):
            latest[(b.rows, b.cols)] = b
    points = [ScalingPoint(b.rows, b.cols, b.pooled_gbps or b.gbps, b.pooled_gbps is not None, b.memcpy_gbps,
                           b.copy_gbps, b.config.key) for b in latest.values()]
    points.sort(key=lambda p: (p.elements, p.rows))
    return Scaling(name, kernel, dtype, tuple(points))


def largest_shape(store: Store, kernel: str, dtype: str, device: str | None = None) -> tuple[int, int] | None:
    """The largest shape (rows * cols, then rows) with an ``ok`` trial of ``kernel`` and
    ``dtype``; where there is none, the largest shape of a bench run of ``dtype``; else ``None``."""
    kernel = get_kernel(kernel).name
    size = (Search.rows * Search.cols).desc()
    has_ok = select(Trial.id).where(Trial.search_id == Search.id, Trial.status == "ok").exists()
    with store.session() as session:
        found = session.execute(
            select(Search.rows, Search.cols).join(Device, Search.device_id == Device.id)
            .join(Kernel, Search.kernel_id == Kernel.id)
            .where(Kernel.name == kernel, Search.dtype == dtype, Search.depth == 0, has_ok, *_device_filter(device))
            .order_by(size, Search.rows.desc()).limit(1)
        ).first()
        if found is None:
            found = session.execute(
                select(BenchRun.rows, BenchRun.cols).join(Device, BenchRun.device_id == Device.id)
                .where(BenchRun.dtype == dtype, BenchRun.depth == 0, *_device_filter(device))
                .order_by((BenchRun.rows * BenchRun.cols).desc(), BenchRun.rows.desc()).limit(1)
            ).first()
    return None if found is None else (int(found[0]), int(found[1]))


# --------------------------------------------------------------------------- plots


def _figure(kind: str):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE[kind], dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` as PNG, creating its directory."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=DPI, format="png")
    except OSError as exc:
        raise InvalidInputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return path


def _check_out_dir(out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidInputError(f"--out {out_dir} is a file; give a directory")
    return out_dir


def plot_heatmap(store: Store, out_dir: Path, kernel: str, rows: int, cols: int, dtype: str,
                 device: str | None = None) -> Path:
    """Write ``heatmap_<kernel>_<R>x<C>_<dtype>.png`` into ``out_dir``; returns its path.

    Raises:
        MissingData: no ``ok`` trial of that kernel, shape and dtype.
    """
    data = heatmap_data(store, kernel, rows, cols, dtype, device)
    import matplotlib
    import numpy as np
    from matplotlib.patches import Rectangle

    fig = _figure("heatmap")
    ax = fig.add_subplot()
    values = np.ma.masked_invalid(np.array(
        [[data.cells.get((t, b), np.nan) for t in data.tile_dims] for b in data.block_rows], dtype=float))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
    low, high = float(values.min()), float(values.max())
    im = ax.imshow(values, cmap=cmap, origin="lower", aspect="auto", vmin=low, vmax=high if high > low else low + 1)
    ax.set_xticks(range(len(data.tile_dims)), [str(t) for t in data.tile_dims])
    ax.set_yticks(range(len(data.block_rows)), [str(b) for b in data.block_rows])
    ax.set_xticks(np.arange(-0.5, len(data.tile_dims)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(data.block_rows)), minor=True)
    ax.grid(which="minor", color="0.75", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("TILE_DIM (block width, threads = tile side, elements)")
    ax.set_ylabel("BLOCK_ROWS (block height, threads)")
    cells = len(data.tile_dims) * len(data.block_rows)
    size = 11 if cells <= 30 else 9 if cells <= 64 else 7
    for (t, b), gbps in data.cells.items():
        x, y = data.tile_dims.index(t), data.block_rows.index(b)
        shade = (gbps - low) / (high - low) if high > low else 1.0
        ax.text(x, y, f"{gbps:.0f}", ha="center", va="center", fontsize=size,
                color="black" if shade > 0.55 else "white")
    for t, b in data.tried - data.cells.keys():
        ax.text(data.tile_dims.index(t), data.block_rows.index(b), "failed", ha="center", va="center",
                fontsize=size - 2, color="0.45", style="italic")
    (bt, bb), best = data.best
    ax.add_patch(Rectangle((data.tile_dims.index(bt) - 0.5, data.block_rows.index(bb) - 0.5), 1, 1,
                           fill=False, edgecolor="red", linewidth=2.5))
    over = f"each cell: the best over {', '.join(data.other_macros)}" if data.other_macros else "one config per cell"
    ax.set_title(f"{data.kernel} {data.rows}x{data.cols} {data.dtype} on {data.device}\n"
                 f"effective bandwidth by block shape ({over})", fontsize=12)
    bar = fig.colorbar(im, ax=ax)
    bar.set_label("effective bandwidth (GB/s)")
    best_key = data.configs[(bt, bb)]
    fig.supxlabel(f"red box: the best, {best:.0f} GB/s ({best_key}); blank: not tried; 'failed': no ok trial\n"
             f"{data.ok_trials} ok and {data.failed_trials} failed trials; kernel source {data.source_hash[:12]}",
             fontsize=8, color="0.3")
    return _save(fig, Path(out_dir) / f"heatmap_{data.kernel}_{rows}x{cols}_{dtype}.png")


_COLOURS = {"default": "#4C72B0", "tuned": "#DD8452", "default=tuned": "#55A868", "cpu": "#8C8C8C"}


def plot_kernels(store: Store, out_dir: Path, rows: int, cols: int, dtype: str, device: str | None = None) -> Path:
    """Write ``kernels_<R>x<C>_<dtype>.png`` into ``out_dir``; returns its path.

    Raises:
        MissingData: no bench run of that shape and dtype.
    """
    data = bench_data(store, rows, cols, dtype, device)
    from matplotlib.patches import Patch

    fig = _figure("kernels")
    ax = fig.add_subplot()
    groups: dict[str, list[BenchLine]] = {}
    for line in data.lines:
        if line.kind == "kernel":
            groups.setdefault(line.name, []).append(line)
    cpu = [line for line in data.lines if line.kind == "cpu"]
    width = 0.4
    labels, top = [], data.memcpy_gbps
    failed = False

    def bar(x, line: BenchLine, colour: str, w: float) -> None:
        nonlocal top, failed
        if line.gbps is None:
            failed = True
            ax.text(x, 0, "failed", rotation=90, ha="center", va="bottom", fontsize=8, color="#C44E52")
            return
        ax.bar(x, line.gbps, w, color=colour, edgecolor="white", zorder=2)
        ax.annotate(_gbps_label(line.gbps), (x, line.gbps), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8, zorder=3,
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
        top = max(top, line.gbps)

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
        labels.append("CPU (NumPy)")
        bar(len(labels) - 1, line, _COLOURS["cpu"], width * 2)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.7, len(labels) - 0.3)

    refs = [("device memcpy", data.memcpy_gbps, "black", "-")]
    for name, style in (("copy_row", "--"), ("copy_col", ":")):
        value = data.bound(name)
        if value is not None:
            refs.append((f"{name} bound", value, "#C44E52" if name == "copy_row" else "#8172B3", style))
    lines = [ax.axhline(value, color=colour, linestyle=style, linewidth=1.5, zorder=1,
                        label=f"{label}: {value:.0f} GB/s") for label, value, colour, style in refs]
    ax.set_ylim(0, top * 1.08)
    ax.set_ylabel("effective bandwidth (GB/s)")
    ax.set_xlabel("kernel")
    ax.grid(axis="y", color="0.9")
    ax.set_axisbelow(True)
    present = {line.source or "default" for ls in groups.values() for line in ls}
    handles = [Patch(color=_COLOURS[s], label={"default=tuned": "default = tuned"}.get(s, s + " config"))
               for s in ("default", "tuned", "default=tuned") if s in present]
    if cpu:
        handles.append(Patch(color=_COLOURS["cpu"], label="CPU, numpy.ascontiguousarray(a.T)"))
    ax.legend(handles=[*handles, *lines], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9,
              title="bars (GB/s on top) and reference lines", title_fontsize=9, frameon=False)
    ax.set_title(f"all kernels, {data.rows}x{data.cols} {data.dtype} on {data.device}\n"
                 f"bench run {data.run_id} of {data.created_at:%Y-%m-%d %H:%M} UTC, "
                 f"nvcc {data.nvcc_version}, L2: {data.l2_mode} buffers", fontsize=12)
    if failed:
        fig.supxlabel("failed: the config did not produce a result (see the notes of autotune bench's table)",
                      fontsize=8, color="0.3")
    return _save(fig, Path(out_dir) / f"kernels_{rows}x{cols}_{dtype}.png")


def plot_scaling(store: Store, out_dir: Path, kernel: str, dtype: str, device: str | None = None) -> Path:
    """Write ``scaling_<kernel>_<dtype>.png`` into ``out_dir``; returns its path.

    Raises:
        MissingData: nothing is tuned for that kernel and dtype.
    """
    data = scaling_data(store, kernel, dtype, device)
    from matplotlib.ticker import FuncFormatter

    fig = _figure("scaling")
    ax = fig.add_subplot()
    xs = [p.elements for p in data.points]
    ax.plot(xs, [p.gbps for p in data.points], "o-", color=_COLOURS["tuned"], linewidth=2, markersize=7,
            label=f"{data.kernel}, tuned best (pooled re-timing where done)")
    memcpy = [(p.elements, p.memcpy_gbps) for p in data.points if p.memcpy_gbps is not None]
    if memcpy:
        ax.plot(*zip(*memcpy), "s--", color="black", markersize=5, label="device memcpy (same search)")
    copy = [(p.elements, p.copy_gbps) for p in data.points if p.copy_gbps is not None]
    if copy:
        ax.plot(*zip(*copy), "^:", color="#C44E52", markersize=5, label="copy_row bound (same search)")
    for p in data.points:
        ax.annotate(f"{p.rows}x{p.cols}: {p.gbps:.0f}", (p.elements, p.gbps), xytext=(7, -2),
                    textcoords="offset points", ha="left", va="top", fontsize=8, color="0.2")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_elements_label))
    low, high = min(xs), max(xs)
    ax.set_xlim(low / 2, high * 2)
    values = [p.gbps for p in data.points] + [v for _, v in memcpy] + [v for _, v in copy]
    ax.set_ylim(0, max(values) * 1.15)
    ax.set_xlabel("matrix size, rows x cols (elements, log scale)")
    ax.set_ylabel("effective bandwidth (GB/s)")
    ax.grid(True, which="major", color="0.9")
    ax.legend(loc="lower right", fontsize=9, framealpha=0.9)
    ax.set_title(f"{data.kernel} {data.dtype} on {data.device}: bandwidth against size\n"
                 f"{len(data.points)} tuned shape{'s' if len(data.points) != 1 else ''}", fontsize=12)
    return _save(fig, Path(out_dir) / f"scaling_{data.kernel}_{dtype}.png")


def _gbps_label(gbps: float) -> str:
    return f"{gbps:.0f}" if gbps >= 100 else f"{gbps:.3g}"


def _elements_label(value: float, _pos) -> str:
    for scale, suffix in ((2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki")):
        if value >= scale:
            v = value / scale
            return f"{v:.0f}{suffix}" if v == int(v) else f"{v:.3g}{suffix}"
    return f"{value:.0f}"


# --------------------------------------------------------------------------- all of it


@dataclass
class Report:
    """What :func:`write_report` did: the files written and a note for each plot skipped."""

    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def write_report(store: Store, out_dir: Path, *, kernel: str = "smem_pad", shape: tuple[int, int] | None = None,
                 dtype: str = "float32", device: str | None = None) -> Report:
    """Write every plot whose data is stored into ``out_dir`` (created if missing).

    Without ``shape``, the heatmap and the kernels plot use :func:`largest_shape`.

    Raises:
        InvalidInputError: unknown kernel or dtype, or a matmul kernel (not plotted); ``out_dir``
            is a file or cannot be written.
        NotTunedError: no plot could be made (the message names what is missing).
    """
    kernel, dtype = get_kernel(kernel).name, get_dtype(dtype).name
    if get_kernel(kernel).op == "matmul":
        raise InvalidInputError(f"report plots transposes and copies, not {kernel}; see its figures with "
                                f"autotune best --kernel {kernel} and autotune bench --kernel {kernel}")
    report = Report()
    if shape is None:
        shape = largest_shape(store, kernel, dtype, device)
    out = _check_out_dir(out_dir)
    jobs: Sequence = []
    if shape is None:
        report.skipped.append(f"no trials of {kernel} {dtype} and no bench run of {dtype}{_on(device)}: "
                              f"run {_search_hint(kernel, None, None, dtype)} (and autotune bench --size N)")
    else:
        rows, cols = shape
        jobs = [lambda: plot_heatmap(store, out, kernel, rows, cols, dtype, device),
                lambda: plot_kernels(store, out, rows, cols, dtype, device)]
    jobs = [*jobs, lambda: plot_scaling(store, out, kernel, dtype, device)]
    for job in jobs:
        try:
            report.written.append(job())
        except MissingData as missing:
            report.skipped.append(str(missing))
    if not report.written:
        raise NotTunedError("nothing to plot: " + "; ".join(report.skipped))
    return report
