"""``autotune export`` and ``autotune import``: move tuned results between machines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from autotune.kernel.catalog import get_kernel
from autotune.store.share import export_results, import_results, read_results
from autotune.store.repository import Store
from . import app
from ._common import Db, err, handle_errors, out


@app.command("export")
@handle_errors
def export(
    out_path: Annotated[Path, typer.Option("--out", "-o", dir_okay=False,
                                           help="JSON file to write (replaced whole if it exists).")],
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Kernel (default: all).")] = None,
    device: Annotated[Optional[str], typer.Option("--device", "-d",
                                                  help="Part of the device name (default: all).")] = None,
    db: Db = None,
) -> None:
    """Write the stored best configs, with their provenance and figures, to a JSON file."""
    if kernel is not None:
        get_kernel(kernel)  # before opening the database: a typo must not create one
    count = export_results(Store(db), out_path, kernel=kernel, device_name=device)
    out.print(f"exported {count} result{'s' if count != 1 else ''} to {out_path}", markup=False)
    if count == 0:
        err.print("nothing is tuned for those filters; the file holds no results")


@app.command("import")
@handle_errors
def import_(
    path: Annotated[Path, typer.Argument(dir_okay=False,
                                         help="A file written by autotune export.")],
    db: Db = None,
) -> None:
    """Add the results of an exported JSON file to the database (duplicates are skipped)."""
    loaded = read_results(path)  # the whole file is checked before the database is opened
    report = import_results(Store(db), loaded)
    line = f"imported {report.imported} result(s) from {path}, skipped {report.skipped} already stored"
    if report.imported:
        line += f"; {report.best} became the best of their key"
    out.print(line, markup=False)
    if report.stale:
        out.print(f"{report.stale} of them are for a kernel source that differs from the current one: "
                  "kept, but lookups use only results of the current source", markup=False)
