"""``autotune best``, ``list`` and ``kernels``: what is tuned, and what can be."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table

from autotune.errors import GPUUnavailableError, NotTunedError
from autotune.kernel.catalog import KERNELS, resolve_kernel
from autotune.kernel.dtypes import get_dtype
from autotune.store import stale
from autotune.store.key import format_shape
from . import app
from ._common import (open_reader, Cols, Db, Dims, DType, K, KernelRef, M, N, Rows, Size, err, handle_errors, out, problem_dims,
                      shape_args)

if TYPE_CHECKING:
    from autotune.store.records import BestRecord


@app.command()
@handle_errors
def best(
    size: Size = None, rows: Rows = None, cols: Cols = None, m: M = None, n: N = None, k: K = None,
    dims: Dims = None,
    kernel: KernelRef = None,
    device: Annotated[Optional[str], typer.Option("--device", "-d",
                                                  help="Device ordinal or part of its name (default: all).")] = None,
    dtype: DType = "float32",
    db: Db = None,
) -> None:
    """Show the stored best config for a problem (and kernel, device, dtype). Without ``--kernel``,
    every kernel whose dims the options give: ``--size`` alone shows transposes of size x size
    and matrix products of size^3."""
    kernels = _kernels(kernel)
    shapes = problem_dims(next(iter(kernels.values())) if kernel else None, dims, size, rows, cols, m, n, k)
    dt = get_dtype(dtype)
    name = _device_filter(device)
    found = [b for b in open_reader(db).find_best(kernel=next(iter(kernels)) if kernel else None, dtype=dt.name,
                                            device_name=name) if dict(b.dims) in shapes]
    current, reasons, unknown = _judge(found, kernels)
    if reasons:
        err.print(f"skipped {stale.summary(reasons)}", markup=False, soft_wrap=True)
    if unknown:
        err.print(f"skipped {len(unknown)} result(s) of kernels this autotune does not know "
                  f"({', '.join(sorted({b.kernel for b in unknown}))}); give a kernel's file with --kernel",
                  markup=False, soft_wrap=True)
    shown = " or ".join(format_shape(tuple(s.items())) for s in shapes)
    if not current:
        where = f" on {name}" if name else ""
        raise NotTunedError(f"nothing is tuned for {kernel or 'any kernel'} {shown} {dt.name}{where}; run: autotune "
                            f"search --kernel {kernel or 'KERNEL'} {shape_args(shapes[0])} --dtype {dt.name}")
    current.sort(key=lambda b: (len(b.dims), b.shape, b.time_ms))
    out.print(best_table(current, f"best configs for {shown} {dt.name}"))


@app.command("list")
@handle_errors
def list_(kernel: KernelRef = None, dims: Dims = None, db: Db = None) -> None:
    """List everything tuned in the database (of a kernel, and dims); stale results are marked with
    why, results of kernels this autotune does not know with "?" (give their file with --kernel)."""
    kernels = _kernels(kernel)
    shapes = problem_dims(next(iter(kernels.values())), dims, None, None, None) if kernel and dims else None
    found = open_reader(db).find_best(kernel=next(iter(kernels)) if kernel else None)
    found = [b for b in found if shapes is None or dict(b.dims) in shapes]
    if not found:
        out.print("nothing is tuned yet; run: autotune search --kernel smem_pad --size 2048" if not kernel
                  else f"nothing is tuned for {kernel}")
        return
    nvcc = stale.current_nvcc()
    marks = []
    for b in found:
        k = kernels.get(b.kernel)
        reason = "?" if k is None else stale.stale_reason(b, k, nvcc)
        marks.append("" if reason is None else reason if reason == "?" else f"yes ({reason})")
    out.print(best_table(found, f"{len(found)} tuned keys", stale=marks))


@app.command()
def kernels() -> None:
    """List the kernel catalog and the default config of each kernel."""
    table = Table(title="kernels")
    for col in ("kernel", "what it is", "default config", "source"):
        table.add_column(col)
    for k in KERNELS.values():
        table.add_row(k.name, k.summary, k.default_config().key, str(k.path))
    out.print(table)


def _kernels(kernel: str | None) -> dict[str, Any]:
    """The kernels results are judged against: the one of ``--kernel`` (a name or a kernel
    file), else the catalog's."""
    if kernel is None:
        return dict(KERNELS)
    k = resolve_kernel(kernel)
    return {k.name: k}


def _judge(records: list[BestRecord], kernels: dict[str, Any]) -> tuple[list[BestRecord], list[str], list[BestRecord]]:
    """Current bests, the reasons of the stale ones (:mod:`autotune.store.stale`; nvcc compared only
    where one is on PATH), and the results of kernels not in ``kernels`` (cannot be judged)."""
    nvcc = stale.current_nvcc()
    current, reasons, unknown = [], [], []
    for b in records:
        k = kernels.get(b.kernel)
        reason = None if k is None else stale.stale_reason(b, k, nvcc)
        if k is None:
            unknown.append(b)
        elif reason:
            reasons.append(reason)
        else:
            current.append(b)
    return current, reasons, unknown


def _device_filter(device: str | None) -> str | None:
    if device is None or not device.isdigit():
        return device
    from autotune.measure.device import query_device

    try:
        return query_device(int(device)).name
    except GPUUnavailableError as exc:
        raise GPUUnavailableError(f"--device {device} needs a GPU to resolve ({exc}); "
                                  "pass part of the device name instead") from None


def best_table(records: list[BestRecord], title: str, stale: list[str] | None = None) -> Table:
    """A table of stored bests (with a ``stale`` column when ``stale`` marks are given). A result
    shows GFLOP/s where it has them, else GB/s with % of memcpy and of copy; the time always."""
    table = Table(title=title)
    flops = ("GFLOP/s",) if any(b.gflops is not None for b in records) else ()
    numeric = ("median ms", *flops, "GB/s", "% memcpy", "% copy", "spread %", "regs", "smem B")
    for col in ("device", "kernel", "shape", "dtype", "config", *numeric, "tie group", "tuned") + \
            (("stale",) if stale else ()):
        table.add_column(col, justify="right" if col in numeric else "left", no_wrap=col in ("config", "stale"))
    for i, b in enumerate(records):
        gbps = (b.pooled_gbps or b.gbps) if b.gflops is None else None
        pct = None if gbps is None else 100 * gbps / b.memcpy_gbps if b.memcpy_gbps else b.pct_memcpy
        cells = [b.device_name, b.kernel, b.display, b.dtype, b.config.key, f"{b.time_ms:.4f}",
                 *((f"{b.pooled_gflops:.0f}" if b.gflops is not None else "",) if flops else ()),
                 "" if gbps is None else f"{gbps:.0f}", "" if pct is None else f"{pct:.1f}",
                 f"{100 * gbps / b.copy_gbps:.1f}" if gbps is not None and b.copy_gbps else "",
                 f"{100 * b.spread:.2f}" if b.spread is not None else "", str(b.registers),
                 str(b.shared_bytes), " | ".join(t for t in b.tie_group if t != b.config.key),
                 f"{b.updated_at:%Y-%m-%d %H:%M}"]
        table.add_row(*cells, *((stale[i],) if stale else ()))
    return table
