"""``autotune bench``: kernels of one problem at their default and tuned configs, beside their bounds."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS, resolve_kernel
from autotune.kernel.dims import dims_key, format_shape
from autotune.kernel.dtypes import get_dtype
from autotune.measure import device as gpus
from autotune.report.bench import BenchLine, run_bench
from . import app
from ._common import open_store, K, M, N, Cols, Db, Device, Dims, DType, Rows, Size, handle_errors, out, parse_dims, parse_int


@app.command()
@handle_errors
def bench(
    dims: Dims = None,
    size: Size = None, rows: Rows = None, cols: Cols = None, m: M = None, n: N = None, k: K = None,
    dtype: DType = "float32",
    device: Device = 0,
    kernel: Annotated[Optional[list[str]], typer.Option("--kernel", "-k", help="Kernels to include: catalog names or "
                                                        "kernel files (repeatable; default: every catalog kernel of "
                                                        "the problem the dims give).")] = None,
    repeats: Annotated[int, typer.Option(parser=parse_int, help="Timed samples per line (>= 20).")] = 50,
    db: Db = None,
) -> None:
    """Time kernels of one problem (default and tuned config) against their bounds: memcpy, the
    CPU and transfers for memory-bound kernels; the vendor's cuBLAS for matrix products. Stored."""
    dt = get_dtype(dtype)
    kernels = _kernels(kernel, dt, dims, rows, cols, m, n, k)
    problem = parse_dims(kernels[0], dims, size, rows, cols, m, n, k)
    if device < 0:
        raise InvalidInputError(f"--device {device} is not allowed; give a CUDA device ordinal 0, 1, ...")
    if repeats < 20:
        raise InvalidInputError(f"--repeats {repeats} is not allowed; give 20 or more")
    gpus.query_device(device)  # the environment first (PyCUDA, a GPU): a command that cannot run writes nothing
    store = open_store(db)  # a database fault is said before a kernel is built or timed
    shape, key_text = format_shape(tuple(problem.items())), dims_key(tuple(problem.items()))

    def opened(bench, nvcc):
        out.print(f"bench {shape} ({key_text}) {dt.name} on {bench.device.name} "
                  f"(driver {bench.device.driver_version}, nvcc {nvcc})")

    lines, context = run_bench(device, kernels, problem, dt, store, repeats, on_open=opened)
    info = context["device"]
    run_id = store.save_bench_run(info, key_text, dt.name, context["nvcc"], context["memcpy_gbps"],
                                  context["l2_mode"], lines)
    title = f"{shape} {dt.name} on {info.name}; L2: {context['l2_mode']} buffers"
    flops = any(kern.objective.flops for kern in kernels)
    out.print(matmul_table(lines, title) if flops else bench_table(lines, title))
    out.print(f"stored as bench run {run_id}")


def _kernels(names: list[str] | None, dt, dims, rows, cols, m, n, k) -> list:
    """The kernels to bench: those named (one kind of problem: the same dims), or every
    catalog kernel that takes ``dt`` with the dims the options name (rows/cols by default).

    Raises:
        InvalidInputError: unknown kernel, kernels of different dims, or none taking ``dt``.
    """
    if names:
        kernels = [resolve_kernel(name) for name in names]
        other = next((kern for kern in kernels if kern.dims != kernels[0].dims), None)
        if other is not None:
            raise InvalidInputError(f"kernel {other.name} (dims {', '.join(other.dims)}) is not of the same kind as "
                                    f"{kernels[0].name} (dims {', '.join(kernels[0].dims)}); bench them in separate runs")
        for kern in kernels:
            kern.check_dtype(dt)
        return kernels
    named = {d.partition("=")[0].strip() for opt in dims or () for d in opt.split(",")}
    named |= {flag for flag, v in (("m", m), ("n", n), ("k", k)) if v is not None}
    want = ("m", "n", "k") if named & {"m", "n", "k"} else ("rows", "cols")
    family = [kern for kern in KERNELS.values() if kern.dims == want]
    kernels = [kern for kern in family if dt.name in kern.dtypes]
    if not kernels:
        allowed = sorted({d for kern in family for d in kern.dtypes})
        raise InvalidInputError(f"no catalog kernel of dims {', '.join(want)} takes dtype {dt.name!r}; "
                                f"allowed: {', '.join(allowed)}")
    return kernels


def matmul_table(lines: list[BenchLine], title: str) -> Table:
    """The matmul bench table: what, config, ms, GFLOP/s, % of the vendor line, regs, smem, occupancy."""
    vendor = next((line.gflops for line in lines if line.kind == "vendor" and line.gflops), None)
    table = Table(title=title + " (GFLOP/s = 2*M*N*K / time)")
    for col in ("what", "config", "ms", "GFLOP/s", "% vendor", "regs", "smem B", "occupancy"):
        table.add_column(col, justify="left" if col in ("what", "config") else "right", no_wrap=col == "config")
    for line in lines:
        what = line.name + (f" ({line.source})" if line.source else "")
        if line.note:
            table.add_row(what, line.config_key or "", "", "", "", "", "", "")
            table.add_row("", f"[red]{escape(line.note)}[/]", "", "", "", "", "", "")
            continue
        table.add_row(what, line.config_key or "", f"{line.median_ms:.4f}", f"{line.gflops:.0f}",
                      f"{100 * line.gflops / vendor:.1f}" if vendor else "",
                      "" if line.registers is None else str(line.registers),
                      "" if line.shared_bytes is None else str(line.shared_bytes),
                      "" if line.occupancy is None else f"{100 * line.occupancy:.0f} %")
    return table


def bench_table(lines: list[BenchLine], title: str) -> Table:
    """The bench table: what, config, ms, GB/s, % of memcpy, registers, shared memory, occupancy."""
    table = Table(title=title)
    for col in ("what", "config", "ms", "GB/s", "% memcpy", "regs", "smem B", "occupancy"):
        table.add_column(col, justify="left" if col in ("what", "config") else "right", no_wrap=col == "config")
    for line in lines:
        what = line.name + (f" ({line.source})" if line.source else "")
        if line.note:
            table.add_row(what, line.config_key or "", "", "", "", "", "", "", )
            table.add_row("", f"[red]{line.note}[/]", "", "", "", "", "", "")
            continue
        table.add_row(what, line.config_key or "", f"{line.median_ms:.4f}", f"{line.gbps:.0f}",
                      "" if line.pct_memcpy is None else f"{line.pct_memcpy:.1f}",
                      "" if line.registers is None else str(line.registers),
                      "" if line.shared_bytes is None else str(line.shared_bytes),
                      "" if line.occupancy is None else f"{100 * line.occupancy:.0f} %")
    return table
