"""``autotune best``, ``list`` and ``kernels``: what is tuned, and what can be."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from autotune.kernel.dtypes import get_dtype
from autotune.measure.device import nvcc_version
from autotune.errors import GPUUnavailableError, NotTunedError
from autotune.kernel.catalog import KERNELS
from autotune.store.repository import BestRecord, Store
from . import app
from autotune.kernel.problem import PROBLEMS, format_shape, problem_of
from ._common import Cols, Db, DType, K, M, N, Rows, Size, dims, err, handle_errors, out


@app.command()
@handle_errors
def best(
    size: Size = None, rows: Rows = None, cols: Cols = None, m: M = None, n: N = None, k: K = None,
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Kernel (default: all).")] = None,
    device: Annotated[Optional[str], typer.Option("--device", "-d",
                                                  help="Device ordinal or part of its name (default: all).")] = None,
    dtype: DType = "float32",
    db: Db = None,
) -> None:
    """Show the stored best config for a shape (and kernel, device, dtype). ``--size`` without
    ``--kernel`` shows transposes of size x size and matrix products of size^3."""
    if kernel is not None:
        problem, what = problem_of(kernel), f"kernel {kernel}"
    else:  # --m/--n/--k: the products; --rows/--cols: the transposes; --size: both
        problem, what = PROBLEMS["matmul" if {m, n, k} != {None} else "move"], "best"
    r, c, depth = dims(problem, what, size, rows, cols, m, n, k)
    dt = get_dtype(dtype)
    name = _device_filter(device)
    both = kernel is None and size is not None
    found = [b for b in Store(db).find_best(kernel=kernel, rows=r, cols=c, dtype=dt.name, device_name=name,
                                            depth=None if both else depth)
             if b.depth in (0, size) or not both]
    current, stale = _split_stale(found)
    if stale:
        err.print(f"skipped {len(stale)} stale result(s): tuned with a kernel source or nvcc that has changed since")
    if not current:
        what = f"{kernel or 'any kernel'} {format_shape(r, c, depth)} {dt.name}" + (f" on {name}" if name else "")
        args = f"--m {r} --n {c} --k {depth}" if depth else f"--rows {r} --cols {c}"
        raise NotTunedError(f"nothing is tuned for {what}; run: autotune search --kernel "
                            f"{kernel or ('matmul_reg' if depth else 'smem_pad')} {args} --dtype {dt.name}")
    current.sort(key=lambda b: (b.depth, -b.gbps))
    out.print(best_table(current, f"best configs for {format_shape(r, c, depth)} {dt.name}"))


@app.command("list")
@handle_errors
def list_(db: Db = None) -> None:
    """List everything tuned in the database (stale results are marked)."""
    found = Store(db).find_best()
    if not found:
        out.print("nothing is tuned yet; run: autotune search --kernel smem_pad --size 2048")
        return
    _, stale = _split_stale(found)
    out.print(best_table(found, f"{len(found)} tuned keys", stale=[b in stale for b in found]))


@app.command()
def kernels() -> None:
    """List the kernel catalog and the default config of each kernel."""
    table = Table(title="kernels")
    for col in ("kernel", "what it is", "default config", "source"):
        table.add_column(col)
    for k in KERNELS.values():
        table.add_row(k.name, k.summary, k.default_config().key, str(k.path))
    out.print(table)


def _device_filter(device: str | None) -> str | None:
    if device is None or not device.isdigit():
        return device
    from autotune.measure.device import query_device

    try:
        return query_device(int(device)).name
    except GPUUnavailableError as exc:
        raise GPUUnavailableError(f"--device {device} needs a GPU to resolve ({exc}); "
                                  "pass part of the device name instead") from None


def _split_stale(records: list[BestRecord]) -> tuple[list[BestRecord], list[BestRecord]]:
    """Current bests, and stale ones: tuned with a kernel source or an nvcc that has changed
    since (nvcc is compared only where one is on PATH to compare with)."""
    hashes = {name: k.source_hash for name, k in KERNELS.items()}
    try:
        nvcc = nvcc_version()
    except GPUUnavailableError:
        nvcc = None
    current = [b for b in records if hashes.get(b.kernel) == b.source_hash and nvcc in (None, b.nvcc_version)]
    return current, [b for b in records if b not in current]


def best_table(records: list[BestRecord], title: str, stale: list[bool] | None = None) -> Table:
    """A table of stored bests (with a ``stale`` column when ``stale`` flags are given).
    Transposes show GB/s and % of memcpy and copy; matrix products (shape MxNxK) GFLOP/s,
    in a column of their own, shown when there are any."""
    table = Table(title=title)
    flops = ("GFLOP/s",) if any(b.depth for b in records) else ()
    numeric = ("median ms", *flops, "GB/s", "% memcpy", "% copy", "spread %", "regs", "smem B")
    for col in ("device", "kernel", "shape", "dtype", "config", *numeric, "tie group", "tuned") + \
            (("stale",) if stale else ()):
        table.add_column(col, justify="right" if col in numeric else "left", no_wrap=col == "config")
    for i, b in enumerate(records):
        gbps = b.pooled_gbps or b.gbps
        move = not b.depth
        cells = [b.device_name, b.kernel, format_shape(b.rows, b.cols, b.depth), b.dtype, b.config.key,
                 f"{b.pooled_median_ms or b.median_ms:.4f}",
                 *((f"{b.pooled_gflops:.0f}" if b.depth else "",) if flops else ()),
                 f"{gbps:.0f}" if move else "",
                 f"{100 * gbps / b.memcpy_gbps if b.memcpy_gbps else b.pct_memcpy:.1f}" if move else "",
                 f"{100 * gbps / b.copy_gbps:.1f}" if b.copy_gbps else "",
                 f"{100 * b.spread:.2f}" if b.spread is not None else "", str(b.registers),
                 str(b.shared_bytes), " | ".join(t for t in b.tie_group if t != b.config.key),
                 f"{b.updated_at:%Y-%m-%d %H:%M}"]
        table.add_row(*cells, *(("yes" if stale[i] else "",) if stale else ()))
    return table
