"""``autotune export`` and ``autotune import``: move tuned results between machines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from autotune.base import signals as stop
from autotune.base.files import check_writable, is_stdout
from autotune.errors import InvalidInputError
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.dtypes import problem_dtype
from autotune.report.tuned_header import export_header
from autotune.store import stale
from .root import app
from ._common import (open_db, Db, KernelRef, SpaceFile, complete_dtype, complete_json, complete_workload, err, handle_errors,
                      on_interrupt, out)
from .db import _say_labelled
from .shape import Shape, shape_options
from .workloads import WorkloadName


@app.command("export", short_help="Write tuned configs to JSON, a C/C++ header or a workload's bundle.")
@handle_errors(interrupted="no file is half written (the target is its old self or the whole new file)")
@shape_options
def export(
    workload: Annotated[Optional[WorkloadName], typer.Argument(
        parser=WorkloadName, metavar="NAME", autocompletion=complete_workload, help="With --bundle: the recorded workload whose chosen configs the bundle holds.",
        show_default=False)] = None,
    bundle: Annotated[Optional[Path], typer.Option("--bundle", metavar="DIR",
                                                   help="Write workload NAME's bundle to the folder DIR: every "
                                                        "problem's chosen config with its provenance, as JSON and a "
                                                        "C header per kernel, read by autotune.launcher(kernel, "
                                                        "bundle=DIR) or AUTOTUNE_BUNDLE without a database.")] = None,
    out_path: Annotated[Optional[Path], typer.Option("--out", "-o", dir_okay=False, metavar="FILE.json",
                                                     help="JSON file to write (replaced whole if it exists); "
                                                          "- for standard output.")] = None,
    header: Annotated[Optional[Path], typer.Option("--header", dir_okay=False, metavar="FILE.h",
                                                   help="C/C++ header to write with --kernel's tuned configs per "
                                                        "device model, dtype and shape, and a nearest-shape "
                                                        "selection function (replaced whole if it exists; - for "
                                                        "standard output).")] = None,
    t4: Annotated[Optional[Path], typer.Option("--t4", dir_okay=False, metavar="FILE.json",
                                               help="T4 results file (JSON, the format of Kernel Tuner and KTT) to "
                                                    "write with every trial, ok and failed, of the selected keys "
                                                    "(replaced whole if it exists; - for standard output).")] = None,
    kt_cache: Annotated[Optional[Path], typer.Option("--kt-cache", dir_okay=False, metavar="FILE.json",
                                                     help="Kernel Tuner cache file (JSON) to write with the trials "
                                                          "of one key, for Kernel Tuner's simulation mode "
                                                          "(tune_kernel with simulation_mode=True and cache=FILE; "
                                                          "- for standard output). Kernel Tuner's simulation asks "
                                                          "for any config of the space and fails on one not in "
                                                          "the cache: sweep the key first for a whole cache.")] = None,
    space: SpaceFile = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", metavar="DTYPE", autocompletion=complete_dtype,
                                                 help="Only keys of this element type "
                                                                  "(--t4 and --kt-cache).")] = None,
    kernel: KernelRef = None,
    shape: Shape = Shape(),
    device: Annotated[Optional[str], typer.Option("--device", "-d", metavar="NAME",
                                                  help="Part of the device name (default: all).")] = None,
    include_stale: Annotated[bool, typer.Option("--include-stale",
                                                help="Also write stale results (another kernel source or "
                                                     "description, nvcc, flags).")] = False,
    db: Db = None,
) -> None:
    """Write the stored best configs, with their provenance and figures, to a JSON file (stale
    ones only with --include-stale), every trial of the selected keys to a T4 file (--t4), one
    kernel's bests to a C/C++ header (--header), or a recorded workload's chosen configs to a
    deployment bundle (NAME --bundle DIR).

    \b
    Examples:
      autotune export app --bundle deploy/app
      autotune export --out tuned.json
      autotune export --out h100.json --device H100 --kernel smem_pad
      autotune export --header smem_pad_tuned.h --kernel smem_pad
      autotune export --t4 trials.json --kernel smem_pad
    """
    if workload is not None or bundle is not None:
        _export_bundle(workload, bundle, (out_path, header, t4, kt_cache, space, dtype, kernel, include_stale,
                                          shape.given), device, db)
        return
    if sum(p is not None for p in (out_path, header, t4, kt_cache)) != 1:
        raise InvalidInputError("give --out FILE.json or --header FILE.h or --t4 FILE.json or --kt-cache FILE.json "
                                "(one of them), or NAME --bundle DIR")
    if dtype is not None and t4 is None and kt_cache is None:
        raise InvalidInputError("--dtype applies to --t4 and --kt-cache only")
    if space is not None and kt_cache is None:
        raise InvalidInputError("--space applies to --kt-cache only (the space the key was searched in)")
    if dtype is not None:
        dtype = problem_dtype(dtype).name  # before the database: --dtype float17 selects nothing, silently
    kern = resolve_kernel(kernel) if kernel is not None else None  # before the database: a typo creates none
    target, flag = next((p, f) for p, f in ((out_path, "--out"), (header, "--header"), (t4, "--t4"),
                                             (kt_cache, "--kt-cache")) if p is not None)
    check_writable(target, flag)  # a device node, a folder
    say = err if is_stdout(target) else out  # the file is on stdout (| jq): what was done goes to stderr
    if header is not None:
        _export_header(header, kern, device, include_stale, shape.given, db, say)
        return
    shapes = shape.shapes(kern) if shape.given else None
    if kt_cache is not None:
        _export_kt_cache(kt_cache, kern, space, shapes, device, dtype, include_stale, db, say)
        return
    if t4 is not None:
        from autotune.interchange.t4 import export_t4 as write
    else:
        from autotune.interchange.share import export_results as write

    target = t4 if t4 is not None else out_path
    extra = {"dtype": dtype} if t4 is not None else {"empty": False}  # a results file of nothing: exit 2, none written
    report = write(open_db(db, "existing"), target, kernel=kern, dims=shapes, device_name=device,
                   include_stale=include_stale, nvcc_version=stale.current_nvcc(), **extra)
    count = report.exported
    what = "trial" if t4 is not None else "result"
    say.print(f"exported {count} {what}{'s' if count != 1 else ''} to {'stdout' if is_stdout(target) else target}",
              markup=False)
    if report.stale:
        err.print(stale.left_out(report.reasons, "writes them too"), markup=False, soft_wrap=True)
    if report.unchecked:
        err.print(f"{report.unchecked} of them are of kernels this autotune does not know: written unchecked",
                  markup=False)
    if count == 0:
        err.print(f"nothing {'current ' if report.stale else ''}is tuned for those filters; the file holds no "
                  f"{what}s", markup=False)


def _export_bundle(workload: str | None, bundle: Path | None, others: tuple, device: str | None,
                   db: str | None) -> None:
    from autotune.store.workload_records import check_name

    if workload is None or bundle is None:
        raise InvalidInputError("a bundle needs the workload and the folder: autotune export NAME --bundle DIR")
    if any(o not in (None, False) for o in others):
        raise InvalidInputError("--bundle takes NAME, --device and --db only: a bundle holds every problem of "
                                "the workload")
    check_name(workload, "workload")
    from autotune.report.bundle import export_bundle

    store = open_db(db, "existing")
    try:
        report = export_bundle(store, workload, bundle, device_name=device)
    finally:
        store.close()
    rungs = ", ".join(f"{n} {rung}" for rung, n in sorted(report.rungs.items()))
    out.print(f"wrote bundle {report.path}: {report.entries} problems of workload {workload} for "
              f"{report.device.name} ({rungs}), {len(report.headers)} header{'s' * (len(report.headers) != 1)}",
              markup=False, soft_wrap=True)
    for line in report.left_out:
        err.print(f"left out {line}", markup=False, soft_wrap=True)


def _export_kt_cache(path: Path, kern, space: str | None, shapes, device: str | None, dtype: str | None,
                     include_stale: bool, db: str | None, say=out) -> None:
    if kern is None:
        raise InvalidInputError("--kt-cache needs --kernel: a Kernel Tuner cache holds one kernel's configs")
    from autotune.kernel.space import load_space
    from autotune.interchange.kt_cache import export_cache

    chosen_space = load_space(kern, space) if space is not None else None
    count, failed = export_cache(open_db(db, "existing"), path, kernel=kern, space=chosen_space, dims=shapes,
                                 device_name=device, dtype=dtype, include_stale=include_stale,
                                 nvcc_version=stale.current_nvcc())
    say.print(f"wrote {count} config(s) ({failed} failed) of {kern.name} to {path} for Kernel Tuner's "
              "simulation mode", markup=False)
    whole = (chosen_space or kern.space()).count_within(1_000_000)
    if whole is not None and count < whole:  # Kernel Tuner 1.5.0: "kernel configuration ... not in cache"
        err.print(f"note: the cache holds {count} of the space's {whole} configs; Kernel Tuner's simulation mode "
                  f"fails on a config not in it (kernel configuration ... not in cache): run autotune sweep "
                  f"--kernel {kern.name} with the same problem first for a cache of the whole space, or restrict "
                  "Kernel Tuner's strategy to what is cached", markup=False, soft_wrap=True)


def _export_header(path: Path, kern, device: str | None, include_stale: bool, shaped: bool, db: str | None,
                   say=out) -> None:
    if kern is None:
        raise InvalidInputError("--header needs --kernel: a header holds one kernel's tuned configs")
    if shaped or include_stale:
        flag = "--include-stale" if include_stale else "--dims/--size"
        raise InvalidInputError(f"{flag} does not apply to --header: it holds every fresh shape tuned for the kernel")
    store = open_db(db, "existing")
    report = export_header(store, path, kern, device_name=device, nvcc_version=stale.current_nvcc(),
                           database=store.safe_url)
    n = report.entries
    say.print(f"wrote {n} tuned config{'s' if n != 1 else ''} of {kern.name} to {path}", markup=False)
    if report.stale:  # a header is compiled into a program: it never holds stale configs (no --include-stale)
        err.print(f"left out {report.stale_note}; a header holds current results only", markup=False, soft_wrap=True)
    if n == 0:
        err.print(f"nothing is tuned for {kern.name}; the header selects its default config only", markup=False)


@app.command("import", short_help="Add the results of an exported JSON file.")
@handle_errors(interrupted="nothing was imported (an import is all or nothing)")
def import_(
    path: Annotated[Path, typer.Argument(dir_okay=False, metavar="FILE.json", autocompletion=complete_json,
                                         help="A file written by autotune export (--out or --t4; told apart by content).")],
    kernel: Annotated[Optional[list[str]], typer.Option(
        "--kernel", metavar="KERNEL_FILE", help="A kernel file (path/to/kernel.toml) whose results the file may hold "
                               "(repeatable); the catalog's kernels are always known.")] = None,
    db: Db = None,
) -> None:
    """Add the results of an exported JSON file, or the trials of a T4 file, to the database
    (duplicates are skipped).

    \b
    Examples:
      autotune import tuned.json
      autotune import tuned.json --kernel my_kernel.toml
      autotune import trials_t4.json
    """
    kernels = [resolve_kernel(value) for value in kernel or ()]
    from autotune.interchange.share import import_results
    from autotune.interchange.t4_read import T4File, read_import

    loaded = read_import(path, kernels)  # read once and checked whole before the database is opened
    if isinstance(loaded, T4File):
        _import_t4(loaded, db)
        return
    store = open_db(db)
    report = _written(lambda: import_results(store, loaded), "result(s)")
    line = f"imported {report.imported} result(s) from {path}, skipped {report.skipped} already stored"
    if report.imported:
        line += f"; {report.best} became the best of their key"
    out.print(line, markup=False)
    if report.stale:
        out.print(f"{report.stale} of them are stale here (another kernel source or description, compile flags "
                  "or macros): kept, but lookups use only current results", markup=False)
    _say_labelled(store)
    _say_import_studies(store, report)


def _say_import_studies(store, report) -> None:
    """Make the Optuna studies of the imported trials (optuna-dashboard shows them) and say so."""
    from autotune.store.study_labels import make_import_studies

    made = make_import_studies(store, report.searches) if report.imported else []
    if made:
        out.print(f"made {len(made)} Optuna stud{'ies' if len(made) != 1 else 'y'} of the imported trials for "
                  f"optuna-dashboard, named after the key and '{report.searches}' (a search of the key on this "
                  "machine keeps its own study)", markup=False, soft_wrap=True)


def _written(write, what: str):
    """``write()``'s import (one transaction), a signal during it acted on once it is done: until
    then an interrupted import says nothing was imported; after, what it imported."""
    with stop.deferred():
        report = write()
        on_interrupt(f"the import was done first: {report.imported} {what} imported, {report.skipped} "
                     "already stored")
    return report


def _import_t4(loaded, db: str | None) -> None:
    from autotune.interchange.t4_read import import_t4

    path = loaded.path
    store = open_db(db)
    report = _written(lambda: import_t4(store, loaded), "trial(s)")
    line = f"imported {report.imported} trial(s) from T4 file {path}, skipped {report.skipped} already stored"
    if report.best:
        line += f"; an imported trial became the best of {report.best} key(s)"
    out.print(line, markup=False)
    if loaded.constraints:
        out.print(f"left out {loaded.constraints} result(s) of invalidity 'constraints' (not trials in autotune)",
                  markup=False)
    if report.stale:
        out.print(f"{report.stale} of them are stale here (another kernel source or description, compile flags "
                  "or macros): kept, but lookups use only current results", markup=False)
    _say_labelled(store)
    _say_import_studies(store, report)
