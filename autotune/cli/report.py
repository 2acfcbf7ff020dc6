"""``autotune report``: PNG plots of what the database holds (heatmap, kernels, scaling)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from autotune.kernel.dtypes import get_dtype
from autotune.kernel.catalog import get_kernel
from autotune.report.plots import write_report
from autotune.store.repository import Store
from . import app
from ._common import Cols, Db, DType, Kernel, Rows, Size, err, handle_errors, out, shape


@app.command()
@handle_errors
def report(
    out_dir: Annotated[Path, typer.Option("--out", "-o", file_okay=False,
                                          help="Directory to write the PNG files to (created if missing).")],
    kernel: Kernel = "smem_pad",
    size: Size = None, rows: Rows = None, cols: Cols = None,
    dtype: DType = "float32",
    device: Annotated[Optional[str], typer.Option("--device", "-d",
                                                  help="Part of the device name (default: the most recent).")] = None,
    db: Db = None,
) -> None:
    """Plot stored results as PNGs: block-shape heatmap, all kernels of a bench run, scaling with size."""
    name = get_kernel(kernel).name  # before opening the database: a typo must not create one
    dt = get_dtype(dtype).name
    given = None if size is None and rows is None and cols is None else shape(size, rows, cols)
    done = write_report(Store(db), out_dir, kernel=name, shape=given, dtype=dt, device=device)
    for note in done.skipped:
        err.print(f"skipped: {note}", markup=False, soft_wrap=True)
    for path in done.written:
        out.print(str(path), markup=False, soft_wrap=True)
