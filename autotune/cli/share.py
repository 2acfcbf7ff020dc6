"""``autotune export`` and ``autotune import``: move tuned results between machines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from autotune.base.files import check_writable
from autotune.errors import InvalidInputError
from autotune.kernel.catalog import resolve_kernel
from autotune.report.tuned_header import export_header
from autotune.store import stale
from . import app
from ._common import open_store, Cols, Db, Dims, K, KernelRef, M, N, Rows, Size, err, handle_errors, out, problem_dims


@app.command("export", short_help="Write tuned configs to JSON or a C/C++ header.")
@handle_errors
def export(
    out_path: Annotated[Optional[Path], typer.Option("--out", "-o", dir_okay=False, metavar="FILE.json",
                                                     help="JSON file to write (replaced whole if it exists).")] = None,
    header: Annotated[Optional[Path], typer.Option("--header", dir_okay=False, metavar="FILE.h",
                                                   help="C/C++ header to write with --kernel's tuned configs per "
                                                        "device model, dtype and shape, and a nearest-shape "
                                                        "selection function (replaced whole if it exists).")] = None,
    kernel: KernelRef = None,
    dims: Dims = None,
    size: Size = None, rows: Rows = None, cols: Cols = None, m: M = None, n: N = None, k: K = None,
    device: Annotated[Optional[str], typer.Option("--device", "-d", metavar="NAME",
                                                  help="Part of the device name (default: all).")] = None,
    include_stale: Annotated[bool, typer.Option("--include-stale",
                                                help="Also write stale results (another kernel source or "
                                                     "description, nvcc, flags).")] = False,
    db: Db = None,
) -> None:
    """Write the stored best configs, with their provenance and figures, to a JSON file (stale
    ones only with --include-stale), or one kernel's to a C/C++ header (--header).

    \b
    Examples:
      autotune export --out tuned.json
      autotune export --out h100.json --device H100 --kernel smem_pad
      autotune export --header smem_pad_tuned.h --kernel smem_pad
    """
    if (out_path is None) == (header is None):
        raise InvalidInputError("give --out FILE.json or --header FILE.h (one of them)")
    kern = resolve_kernel(kernel) if kernel is not None else None  # before the database: a typo creates none
    check_writable(out_path or header, "--out" if header is None else "--header")  # a device node, a folder
    if header is not None:
        _export_header(header, kern, device, include_stale, dims or any(v is not None for v in (size, rows, cols, m, n, k)),
                       db)
        return
    shaped = dims or any(v is not None for v in (size, rows, cols, m, n, k))
    shapes = problem_dims(kern, dims, size, rows, cols, m, n, k) if shaped else None
    from autotune.store.share import export_results

    report = export_results(open_store(db), out_path, kernel=kern, dims=shapes, device_name=device,
                            include_stale=include_stale, nvcc_version=stale.current_nvcc())
    count = report.exported
    out.print(f"exported {count} result{'s' if count != 1 else ''} to {out_path}", markup=False)
    if report.stale:
        err.print(f"left out {report.stale_note}; --include-stale writes them too", markup=False, soft_wrap=True)
    if report.unchecked:
        err.print(f"{report.unchecked} of them are of kernels this autotune does not know: written unchecked",
                  markup=False)
    if count == 0:
        err.print("nothing is tuned for those filters; the file holds no results")


def _export_header(path: Path, kern, device: str | None, include_stale: bool, shaped: bool, db: str | None) -> None:
    if kern is None:
        raise InvalidInputError("--header needs --kernel: a header holds one kernel's tuned configs")
    if shaped or include_stale:
        flag = "--include-stale" if include_stale else "--dims/--size"
        raise InvalidInputError(f"{flag} does not apply to --header: it holds every fresh shape tuned for the kernel")
    store = open_store(db)
    report = export_header(store, path, kern, device_name=device, nvcc_version=stale.current_nvcc(),
                           database=store.safe_url)
    n = report.entries
    out.print(f"wrote {n} tuned config{'s' if n != 1 else ''} of {kern.name} to {path}", markup=False)
    if report.stale:
        err.print(f"left out {report.stale_note}", markup=False, soft_wrap=True)
    if n == 0:
        err.print(f"nothing is tuned for {kern.name}; the header selects its default config only", markup=False)


@app.command("import", short_help="Add the results of an exported JSON file.")
@handle_errors
def import_(
    path: Annotated[Path, typer.Argument(dir_okay=False, metavar="FILE.json",
                                         help="A file written by autotune export.")],
    kernel: Annotated[Optional[list[str]], typer.Option(
        "--kernel", metavar="KERNEL_FILE", help="A kernel file (path/to/kernel.toml) whose results the file may hold "
                               "(repeatable); the catalog's kernels are always known.")] = None,
    db: Db = None,
) -> None:
    """Add the results of an exported JSON file to the database (duplicates are skipped).

    \b
    Examples:
      autotune import tuned.json
      autotune import tuned.json --kernel my_kernel.toml
    """
    kernels = [resolve_kernel(value) for value in kernel or ()]
    from autotune.store.share import import_results, read_results

    loaded = read_results(path, kernels)  # the whole file is checked before the database is opened
    report = import_results(open_store(db), loaded)
    line = f"imported {report.imported} result(s) from {path}, skipped {report.skipped} already stored"
    if report.imported:
        line += f"; {report.best} became the best of their key"
    out.print(line, markup=False)
    if report.stale:
        out.print(f"{report.stale} of them are stale here (another kernel source or description, compile flags "
                  "or macros): kept, but lookups use only current results", markup=False)
