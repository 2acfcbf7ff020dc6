"""``autotune bench``: every kernel beside memcpy, the copy bounds, the CPU and host transfers."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from .. import benchmark
from ..bench import BenchLine, run_bench, save_bench
from ..dtypes import get_dtype
from ..errors import InvalidInputError
from ..kernels import KERNELS, get_kernel
from ..key import tuning_key
from ..store import Store
from . import app
from ._common import Cols, Db, Device, DType, Rows, Size, handle_errors, out, parse_int, shape


@app.command()
@handle_errors
def bench(
    size: Size = None, rows: Rows = None, cols: Cols = None, dtype: DType = "float32",
    device: Device = 0,
    kernel: Annotated[Optional[list[str]], typer.Option("--kernel", "-k",
                                                        help="Kernels to include (repeatable; default: all).")] = None,
    repeats: Annotated[int, typer.Option(parser=parse_int, help="Timed samples per line (>= 20).")] = 50,
    db: Db = None,
) -> None:
    """Time every kernel (default and tuned config) against memcpy, the CPU and transfers; store it."""
    r, c = shape(size, rows, cols)
    dt = get_dtype(dtype)
    if kernel:  # named kernels must take the dtype; by default, every kernel that does
        names = [get_kernel(k).name for k in kernel]
        for name in names:
            get_kernel(name).check_dtype(dt)
    else:
        names = [n for n, k in KERNELS.items() if k.dtypes is None or dt.name in k.dtypes]
    if device < 0:
        raise InvalidInputError(f"--device {device} is not allowed; give a CUDA device ordinal 0, 1, ...")
    if repeats < 20:
        raise InvalidInputError(f"--repeats {repeats} is not allowed; give 20 or more")
    with benchmark.open_benchmark(device, r, c, dt, repeats=repeats) as b:
        store = Store(db)
        key_for = lambda k: tuning_key(k, b.device, r, c, dt.name)  # noqa: E731
        nvcc = key_for(names[0]).nvcc_version
        out.print(f"bench {r}x{c} {dt.name} on {b.device.name} (driver {b.device.driver_version}, nvcc {nvcc}); "
                  f"L2: {b.l2_mode} buffers")
        lines = run_bench(b, names, key_for, store)
        run_id = save_bench(store, b, nvcc, lines)
    out.print(bench_table(lines, f"{r}x{c} {dt.name} on {b.device.name}"))
    out.print(f"stored as bench run {run_id}")


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
