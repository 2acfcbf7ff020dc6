"""``autotune bench``: kernels of one problem at their default and tuned configs, beside their bounds."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from autotune.base import signals as stop
from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS, resolve_kernel
from autotune.kernel.dims import dims_key, format_shape
from autotune.kernel.dtypes import get_dtype
from autotune.measure import device as gpus
from autotune.measure.figures import duration
from autotune.report.bench import BenchLine, run_bench
from .root import app
from .output import Column, Format, FormatOption, WideOption, emit, rate
from ._common import open_db, Db, Device, DType, err, handle_errors, on_interrupt, out, parse_int
from .shape import Shape, shape_options


@app.command(short_help="Time kernels at default and tuned configs against their bounds.")
@handle_errors(interrupted="the bench run is not stored (a run is stored whole, at its end)")
@shape_options
def bench(
    shape: Shape = Shape(),
    dtype: DType = "float32",
    device: Device = 0,
    kernel: Annotated[Optional[list[str]], typer.Option(
        "--kernel", metavar="KERNEL", help="Kernels to include: catalog names or kernel files (repeatable; default: "
                                           "every catalog kernel of the problem the dims give).")] = None,
    repeats: Annotated[int, typer.Option(parser=parse_int, metavar="N", help="Timed samples per line (>= 20).")] = 50,
    db: Db = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Time kernels of one problem (default and tuned config) against their bounds: memcpy, the
    CPU and transfers for memory-bound kernels; the vendor's cuBLAS for matrix products. Stored.

    \b
    Examples:
      autotune bench --size 8192
      autotune bench --kernel smem_pad --kernel copy_row --size 8192 --dtype int8
      autotune bench --kernel matmul_reg --size 4096 --format json
    """
    dt = get_dtype(dtype)
    kernels = _kernels(kernel, dt, shape)
    problem = shape.dims_for(kernels[0])
    if device < 0:
        raise InvalidInputError(f"--device {device} is not allowed; give a CUDA device ordinal 0, 1, ...")
    if repeats < 20:
        raise InvalidInputError(f"--repeats {repeats} is not allowed; give 20 or more")
    gpus.query_device(device)  # the environment first (a CUDA backend, a GPU): a command that cannot run writes nothing
    store = open_db(db)  # a database fault is said before a kernel is built or timed
    shown, key_text = format_shape(tuple(problem.items())), dims_key(tuple(problem.items()))

    say = out if fmt is Format.table else err

    def opened(bench, nvcc):
        say.print(f"bench {shown} ({key_text}) {dt.name} on {bench.device.name} "
                  f"(driver {bench.device.driver_version}, nvcc {nvcc})")

    lines, context = run_bench(device, kernels, problem, dt, store, repeats, on_open=opened)
    info = context["device"]
    with stop.deferred():  # a signal in the one write is acted on after it, saying it is stored
        run_id = store.save_bench_run(info, key_text, dt.name, context["nvcc"], context["memcpy_gbps"],
                                      context["l2_mode"], lines)
        on_interrupt(f"stored as bench run {run_id}")
    title = f"{shown} {dt.name} on {info.name}; L2: {context['l2_mode']} buffers"
    flops = any(kern.objective.flops for kern in kernels)
    if flops:
        title += " (GFLOP/s = 2*M*N*K / time)"
    say.print()
    emit(out, lines, bench_columns(lines, flops), fmt, wide=wide, title=title,
         document={"bench_run": run_id, "dims": problem, "dtype": dt.name, "device": info.name,
                   "nvcc": context["nvcc"], "memcpy_gbps": context["memcpy_gbps"], "l2_mode": context["l2_mode"]})
    say.print(f"stored as bench run {run_id}")


def _kernels(names: list[str] | None, dt, shape: Shape) -> list:
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
    named = {d.partition("=")[0].strip() for opt in shape.dims or () for d in opt.split(",")}
    named |= {flag for flag in ("m", "n", "k") if getattr(shape, flag) is not None}
    want = ("m", "n", "k") if named & {"m", "n", "k"} else ("rows", "cols")
    family = [kern for kern in KERNELS.values() if kern.dims == want]
    kernels = [kern for kern in family if dt.name in kern.dtypes]
    if not kernels:
        allowed = sorted({d for kern in family for d in kern.dtypes})
        raise InvalidInputError(f"no catalog kernel of dims {', '.join(want)} takes dtype {dt.name!r}; "
                                f"allowed: {', '.join(allowed)}")
    return kernels


def bench_columns(lines: list[BenchLine], flops: bool) -> list[Column]:
    """What, ms, the figure (GFLOP/s = 2*M*N*K / time, with % of the vendor line; else GB/s
    with % of memcpy) and occupancy in the row; the config and any note on their own lines;
    registers and shared memory with --wide."""
    vendor = next((line.gflops for line in lines if line.kind == "vendor" and line.gflops), None)
    figure = (Column("GFLOP/s", "gflops", lambda b: b.gflops, text=rate, right=True) if flops
              else Column("GB/s", "gbps", lambda b: b.gbps, text=rate, right=True))
    share = (Column("% vendor", "pct_vendor", lambda b: 100 * b.gflops / vendor if vendor and b.gflops else None,
                    text=lambda v: f"{v:.1f}", right=True) if flops
             else Column("% memcpy", "pct_memcpy", lambda b: b.pct_memcpy, text=lambda v: f"{v:.1f}", right=True))
    return [Column("what", "name", lambda b: b.name + (f" ({b.source})" if b.source else "")),
            Column("kind", "kind", lambda b: b.kind, wide=True),
            Column("time", "median_ms", lambda b: b.median_ms, text=duration, right=True),
            figure, share,
            Column("regs", "registers", lambda b: b.registers, right=True, wide=True),
            Column("smem B", "shared_bytes", lambda b: b.shared_bytes, right=True, wide=True),
            Column("occupancy", "occupancy", lambda b: b.occupancy, text=lambda v: f"{100 * v:.0f} %", right=True),
            Column("config", "config", lambda b: b.config_key, long=True),
            Column("note", "note", lambda b: b.note, long=True, breaks=" ")]
