"""``autotune report``: PNG plots of what the database holds (heatmap, kernels, scaling)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.dtypes import get_dtype
from autotune.store import stale
from .root import app
from ._common import open_db, Db, DType, Kernel, err, handle_errors, out
from .shape import Shape, shape_options


@app.command(short_help="Plot stored results as PNGs.")
@handle_errors(interrupted="no PNG is half written (each is written whole or not at all)")
@shape_options
def report(
    out_dir: Annotated[Path, typer.Option("--out", "-o", file_okay=False, metavar="DIR",
                                          help="Directory to write the PNG files to (created if missing).")],
    kernel: Kernel = "smem_pad",
    shape: Shape = Shape(),
    dtype: DType = "float32",
    device: Annotated[Optional[str], typer.Option("--device", "-d", metavar="NAME",
                                                  help="Part of the device name (default: the most recent).")] = None,
    include_stale: Annotated[bool, typer.Option(stale.INCLUDE_STALE,
                                                help="Also plot stale results (another kernel source or "
                                                     "description, nvcc, flags).")] = False,
    db: Db = None,
) -> None:
    """Plot stored results as PNGs: heatmap by two tunables, all kernels of a bench run, scaling with size.
    Stale results are left out of the heatmap and the scaling plot, and counted with why
    (--include-stale plots them).

    \b
    Examples:
      autotune report --out plots/
      autotune report --out plots/ --kernel smem_pad --size 4096 --device H100
    """
    from autotune.base.files import is_stdout

    if is_stdout(out_dir):
        raise InvalidInputError(f"--out {out_dir}: a report is several PNG files; give a folder (- means standard "
                                "output, for commands that write one file)")
    kern = resolve_kernel(kernel)  # before opening the database: a typo must not create one
    dt = get_dtype(dtype).name
    given = shape.dims_for(kern) if shape.given else None
    from autotune.report.plots import write_report

    done = write_report(open_db(db, "existing"), out_dir, kernel=kern, dims=given, dtype=dt, device=device,
                        include_stale=include_stale, nvcc_version=stale.current_nvcc())
    for plot, reasons in done.stale.items():
        err.print(f"{plot}: {stale.left_out(reasons, 'plots them')}", markup=False, soft_wrap=True)
    for note in done.skipped:
        err.print(f"skipped: {note}", markup=False, soft_wrap=True)
    for path in done.written:
        out.print(str(path), markup=False, soft_wrap=True)
