"""``autotune best``, ``list`` and ``kernels``: what is tuned, and what can be."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from autotune.errors import GPUUnavailableError, NotTunedError
from autotune.kernel.catalog import KERNELS, resolve_kernel
from autotune.kernel.dtypes import get_dtype
from autotune.store import stale
from autotune.store.key import format_shape
from autotune.measure.figures import unit
from . import app
from .output import Column, Format, FormatOption, WideOption, emit, rate
from ._common import open_db, Db, DType, KernelRef, err, handle_errors, out
from .shape import DimsOption, Shape, shape_args, shape_options

if TYPE_CHECKING:
    from autotune.store.records import BestRecord


@app.command(short_help="Show the stored best config for a problem.")
@handle_errors
@shape_options
def best(
    shape: Shape = Shape(),
    kernel: KernelRef = None,
    device: Annotated[Optional[str], typer.Option("--device", "-d", metavar="ORDINAL|NAME",
                                                  help="Device ordinal or part of its name (default: all).")] = None,
    dtype: DType = "float32",
    include_stale: Annotated[bool, typer.Option(stale.INCLUDE_STALE,
                                                help="Also show stale results (another kernel source or "
                                                     "description, nvcc, flags), marked with why.")] = False,
    db: Db = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Show the stored best config for a problem (and kernel, device, dtype). Without --kernel,
    every kernel whose dims the options give: --size alone shows transposes of size x size
    and matrix products of size^3. Stale results are left out, and counted with why
    (--include-stale shows them, marked).

    \b
    Examples:
      autotune best --size 4096
      autotune best --kernel smem_pad --rows 8192 --cols 4096 --dtype float16
      autotune best --kernel matmul_reg --size 4096 --format json
    """
    kernels = _kernels(kernel)
    shapes = shape.shapes(next(iter(kernels.values())) if kernel else None)
    dt = get_dtype(dtype)
    name = _device_filter(device)
    found = [b for b in open_db(db, "read").find_best(kernel=next(iter(kernels)) if kernel else None, dtype=dt.name,
                                            device_name=name) if dict(b.dims) in shapes]
    judged = stale.partition(found, kernels, stale.current_nvcc())
    unknown = judged.unknown
    note = stale.left_out(judged.reasons, "shows them")
    shown_records = [v.record for v in judged.verdicts if v.current or (include_stale and v.reason is not None)]
    if unknown:
        err.print(f"skipped {len(unknown)} result(s) of kernels this autotune does not know "
                  f"({', '.join(sorted({b.kernel for b in unknown}))}); give a kernel's file with --kernel",
                  markup=False, soft_wrap=True)
    shown = " or ".join(format_shape(tuple(s.items())) for s in shapes)
    if not shown_records:
        where = f" on {name}" if name else ""
        what = f"{kernel or 'any kernel'} {shown} {dt.name}{where}"
        run = f"run: autotune search --kernel {kernel or 'KERNEL'} {shape_args(shapes[0])} --dtype {dt.name}"
        if note:
            raise NotTunedError(f"nothing current is tuned for {what}: {note}, or {run} again")
        raise NotTunedError(f"nothing is tuned for {what}; {run}")
    if note and not include_stale:
        err.print(note, markup=False, soft_wrap=True)
    shown_records.sort(key=lambda b: (len(b.dims), b.shape, b.time_ms))
    marks = None
    if include_stale:
        why = {id(v.record): v.reason for v in judged.verdicts}
        marks = [f"yes ({why[id(b)]})" if why.get(id(b)) else "" for b in shown_records]
    emit_bests(shown_records, f"best configs for {shown} {dt.name}", fmt, wide, stale=marks)


@app.command("list", short_help="List everything tuned in the database.")
@handle_errors
def list_(kernel: KernelRef = None, dims: DimsOption = None, db: Db = None, fmt: FormatOption = Format.table,
          wide: WideOption = False) -> None:
    """List everything tuned in the database (of a kernel, and dims); stale results are marked with
    why, results of kernels this autotune does not know with "?" (give their file with --kernel).

    \b
    Examples:
      autotune list
      autotune list --kernel smem_pad --wide
      autotune list --format csv > tuned.csv
    """
    kernels = _kernels(kernel)
    shapes = Shape(tuple(dims)).shapes(next(iter(kernels.values()))) if kernel and dims else None
    found = open_db(db, "read").find_best(kernel=next(iter(kernels)) if kernel else None)
    found = [b for b in found if shapes is None or dict(b.dims) in shapes]
    if not found:
        if fmt is not Format.table:
            emit(out, [], best_columns([], {}), fmt)
            return
        out.print("nothing is tuned yet; run: autotune search --kernel smem_pad --size 2048" if not kernel
                  else f"nothing is tuned for {kernel}", markup=False)
        return
    marks = ["?" if not v.known else "" if v.reason is None else f"yes ({v.reason})"
             for v in stale.partition(found, kernels, stale.current_nvcc()).verdicts]
    emit_bests(found, f"{len(found)} tuned key{'s' if len(found) != 1 else ''}", fmt, wide, stale=marks)


@app.command(short_help="List the kernel catalog with default configs.")
def kernels(fmt: FormatOption = Format.table, wide: WideOption = False) -> None:
    """List the kernel catalog: each kernel's dims, what it is, and its default config (--wide:
    its dtypes, tunables and source too).

    \b
    Examples:
      autotune kernels
      autotune kernels --wide
      autotune kernels --format json
    """
    columns = [Column("kernel", "kernel", lambda k: k.name), Column("dims", "dims", lambda k: ",".join(k.dims)),
               Column("objective", "objective", unit),
               Column("about", "summary", lambda k: k.summary, long=True, breaks=" "),
               Column("default", "default_config", lambda k: k.default_config().key, long=True),
               Column("tunables", "tunables", lambda k: list(k.tunables), text=",".join, long=True, wide=True),
               Column("dtypes", "dtypes", lambda k: list(k.dtypes), text=",".join, long=True, wide=True),
               Column("source", "source", lambda k: str(k.path), long=True, wide=True, breaks="/")]
    emit(out, list(KERNELS.values()), columns, fmt, wide=wide, title=f"{len(KERNELS)} catalog kernels")


def _kernels(kernel: str | None) -> dict[str, Any]:
    """The kernels results are judged against: the one of ``--kernel`` (a name or a kernel
    file), else the catalog's."""
    if kernel is None:
        return dict(KERNELS)
    k = resolve_kernel(kernel)
    return {k.name: k}


def _device_filter(device: str | None) -> str | None:
    if device is None or not device.isdigit():
        return device
    from autotune.measure.device import query_device

    try:
        return query_device(int(device)).name
    except GPUUnavailableError as exc:
        raise GPUUnavailableError(f"--device {device} needs a GPU to resolve ({exc}); "
                                  "pass part of the device name instead") from None


def best_columns(records: list[BestRecord], marks: dict[int, str] | None = None) -> list[Column]:
    """The columns of stored bests: kernel, shape, dtype, time and the headline figure (GFLOP/s
    where a result has them, else GB/s) with % of memcpy in the row, the config on its own line;
    the rest with --wide (and always in JSON/CSV). ``marks`` (by ``id()`` of the record): a
    ``stale`` column."""
    devices = {b.device_name for b in records}
    columns = [
        Column("device", "device", lambda b: b.device_name, long=True, wide=len(devices) <= 1),
        Column("kernel", "kernel", lambda b: b.kernel),
        Column("shape", "shape", lambda b: b.display),
        Column("dtype", "dtype", lambda b: b.dtype),
        Column("median ms", "median_ms", lambda b: b.time_ms, text=lambda v: f"{v:.4f}", right=True),
        Column("figure", "figure", _figure, right=True, data=False),
        Column("GFLOP/s", "gflops", lambda b: b.pooled_gflops, table=False),
        Column("GB/s", "gbps", _gbps, table=False),
        Column("% memcpy", "pct_memcpy", _pct_memcpy, text=lambda v: f"{v:.1f}", right=True,
               wide=not any(_pct_memcpy(b) is not None for b in records)),
        Column("% copy", "pct_copy", lambda b: 100 * g / b.copy_gbps if (g := _gbps(b)) and b.copy_gbps else None,
               text=lambda v: f"{v:.1f}", right=True, wide=True),
        Column("spread %", "spread_pct", lambda b: None if b.spread is None else 100 * b.spread,
               text=lambda v: f"{v:.2f}", right=True, wide=True),
        Column("regs", "registers", lambda b: b.registers, right=True, wide=True),
        Column("smem B", "shared_bytes", lambda b: b.shared_bytes, right=True, wide=True),
        Column("tuned", "tuned_at", lambda b: f"{b.updated_at:%Y-%m-%d %H:%M}", wide=True),
        Column("config", "config", lambda b: b.config.key, long=True),
        Column("tie group", "tie_group", lambda b: [t for t in b.tie_group if t != b.config.key] or None,
               text=" | ".join, long=True, wide=True, breaks=", |"),
    ]
    if marks is not None:
        columns.append(Column("stale", "stale", lambda b: marks.get(id(b)) or None, long=True, breaks=" "))
    return columns


def emit_bests(records: list[BestRecord], title: str, fmt: Format, wide: bool, stale: list[str] | None = None) -> None:
    """Print stored bests (:func:`best_columns`); with ``stale``, each record's mark (``""``:
    current) in a ``stale`` column. One device for all of them is named in the title instead."""
    marks = None if stale is None else {id(b): mark for b, mark in zip(records, stale)}
    devices = {b.device_name for b in records}
    if len(devices) == 1 and fmt is Format.table and not wide:
        title += f" on {next(iter(devices))}"
    emit(out, records, best_columns(records, marks), fmt, wide=wide, title=title)


def _figure(b: BestRecord) -> str:
    """``24447 GFLOP/s`` or ``2800 GB/s`` (the re-timed figure where there is one)."""
    if b.gflops is not None:
        return f"{rate(b.pooled_gflops)} GFLOP/s"
    gbps = _gbps(b)
    return "" if gbps is None else f"{rate(gbps)} GB/s"


def _gbps(b: BestRecord) -> float | None:
    return (b.pooled_gbps or b.gbps) if b.gflops is None else None


def _pct_memcpy(b: BestRecord) -> float | None:
    gbps = _gbps(b)
    return None if gbps is None else 100 * gbps / b.memcpy_gbps if b.memcpy_gbps else b.pct_memcpy
