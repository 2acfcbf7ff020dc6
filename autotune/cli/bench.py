"""``autotune bench``: every kernel beside memcpy, the copy bounds, the CPU and host transfers."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from autotune.measure import benchmark
from autotune.report.bench import BenchLine, run_bench, run_matmul_bench, save_bench
from autotune.kernel.dtypes import get_dtype
from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS, get_kernel
from autotune.store.key import tuning_key
from autotune.store.repository import Store
from . import app
from autotune.kernel.problem import PROBLEMS, Problem, format_shape, problem_of
from ._common import K, M, N, Cols, Db, Device, DType, Rows, Size, dims, handle_errors, out, parse_int


@app.command()
@handle_errors
def bench(
    size: Size = None, rows: Rows = None, cols: Cols = None, m: M = None, n: N = None, k: K = None,
    dtype: DType = "float32",
    device: Device = 0,
    kernel: Annotated[Optional[list[str]], typer.Option("--kernel", "-k",
                                                        help="Kernels to include (repeatable; default: all).")] = None,
    repeats: Annotated[int, typer.Option(parser=parse_int, help="Timed samples per line (>= 20).")] = 50,
    db: Db = None,
) -> None:
    """Time every kernel (default and tuned config) against memcpy, the CPU and transfers; store it.
    Matmul kernels (named, or all of them with --m --n --k) against the vendor's cuBLAS instead."""
    dt = get_dtype(dtype)
    problem = _family(kernel, m, n, k)
    if kernel:  # named kernels must take the dtype; by default, every kernel of the family that does
        names = [get_kernel(name).name for name in kernel]
        for name in names:
            get_kernel(name).check_dtype(dt)
    else:
        names = [name for name, kern in KERNELS.items() if problem_of(kern) == problem
                 and (kern.dtypes is None or dt.name in kern.dtypes)]
        if not names:
            allowed = sorted({d for kern in KERNELS.values() if problem_of(kern) == problem for d in kern.dtypes or ()})
            raise InvalidInputError(f"no {problem.family} kernel takes dtype {dt.name!r}; allowed: {', '.join(allowed)}")
    r, c, depth = dims(problem, f"kernel {names[0]}" if kernel else "bench", size, rows, cols, m, n, k)
    if device < 0:
        raise InvalidInputError(f"--device {device} is not allowed; give a CUDA device ordinal 0, 1, ...")
    if repeats < 20:
        raise InvalidInputError(f"--repeats {repeats} is not allowed; give 20 or more")
    with benchmark.open_benchmark(device, r, c, dt, depth, repeats=repeats) as b:
        store = Store(db)
        key_for = lambda name: tuning_key(name, b.device, (r, c, depth) if depth else (r, c), dt.name)  # noqa: E731
        nvcc = key_for(names[0]).nvcc_version
        out.print(f"bench {format_shape(r, c, depth)} {dt.name} on {b.device.name} (driver "
                  f"{b.device.driver_version}, nvcc {nvcc}); L2: {b.l2_mode} buffers")
        lines = (run_matmul_bench if problem.is_matmul else run_bench)(b, names, key_for, store)
        run_id = save_bench(store, b, nvcc, lines, key_for(names[0]).dims)
    title = f"{format_shape(r, c, depth)} {dt.name} on {b.device.name}"
    out.print(matmul_table(lines, title) if problem.is_matmul else bench_table(lines, title))
    out.print(f"stored as bench run {run_id}")


def _family(kernels: list[str] | None, m, n, k) -> Problem:
    """The one op family of the named kernels (or of the shape options when none is named).

    Raises:
        InvalidInputError: unknown kernel, or kernels of both families.
    """
    if not kernels:
        return PROBLEMS["matmul" if {m, n, k} != {None} else "move"]
    families = {name: problem_of(name) for name in kernels}
    first = families[kernels[0]]
    other = next((name for name, p in families.items() if p != first), None)
    if other is not None:
        raise InvalidInputError(f"kernel {other} is not of the same kind as {kernels[0]}; bench matmul kernels "
                                "and transposes in separate runs")
    return first


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
