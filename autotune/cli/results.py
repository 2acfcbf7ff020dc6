"""``autotune best``, ``list``, ``trials`` and ``kernels``: what is tuned, and what can be.

Each command parses its options, asks the store (or the catalog) and prints; what each table
shows of a record, and how, is :mod:`autotune.report.result_tables`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from autotune.errors import GPUUnavailableError, InvalidInputError, NotTunedError, nothing_tuned
from autotune.kernel.catalog import KERNELS, resolve_kernel
from autotune.kernel.dtypes import get_dtype
from autotune.store import stale
from autotune.store.key import format_shape
from autotune.report.result_tables import best_columns, kernel_columns, trial_columns
from .root import app
from .output import STALE_STYLE, Format, FormatOption, WideOption, emit
from ._common import open_db, Db, DType, KernelRef, err, handle_errors, out
from ._common import Kernel as KernelOption
from .fronts import emit_front, pareto_fronts
from .shape import DimsOption, Shape, shape_args, shape_options

if TYPE_CHECKING:
    from autotune.store.records import BestRecord


@app.command(short_help="Show the stored best config for a problem.")
@handle_errors
@shape_options
def best(
    shape: Shape = Shape(),
    kernel: KernelRef = None,
    device: Annotated[Optional[str], typer.Option("--device", "-d", metavar="ORDINAL|NAME",
                                                  help="Device ordinal or part of its name (default: all).")] = None,
    dtype: DType = "float32",
    include_stale: Annotated[bool, typer.Option(stale.INCLUDE_STALE,
                                                help="Also show stale results (another kernel source or "
                                                     "description, nvcc, flags), marked with why.")] = False,
    db: Db = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Show the stored best config for a problem (and kernel, device, dtype). Without --kernel,
    every kernel whose dims the options give: --size alone shows transposes of size x size
    and matrix products of size^3. Stale results are left out, and counted with why
    (--include-stale shows them, marked).

    \b
    Examples:
      autotune best --size 4096
      autotune best --kernel smem_pad --rows 8192 --cols 4096 --dtype float16
      autotune best --kernel matmul_reg --size 4096 --format json
    """
    kernels = _kernels(kernel)
    if not kernel and not shape.given:  # which problem? none given: an empty database says so first
        if not open_db(db, "read").find_best():
            raise NotTunedError(nothing_tuned())
        raise InvalidInputError("give the problem: --size N, --rows R --cols C, --m M --n N --k K or --dims "
                                "NAME=N,... (and --kernel K); autotune list shows every tuned key")
    shapes = shape.shapes(next(iter(kernels.values())) if kernel else None)
    dt = get_dtype(dtype)
    name = _device_filter(device)
    store = open_db(db, "read")
    found = [b for b in store.find_best(kernel=next(iter(kernels)) if kernel else None, dtype=dt.name,
                                        device_name=name) if dict(b.dims) in shapes]
    judged = stale.partition(found, kernels, stale.current_nvcc())
    unknown = judged.unknown
    note = stale.left_out(judged.reasons, "shows them")
    shown_records = [v.record for v in judged.verdicts if v.current or (include_stale and v.reason is not None)]
    if unknown:
        err.print(f"skipped {len(unknown)} result(s) of kernels this autotune does not know "
                  f"({', '.join(sorted({b.kernel for b in unknown}))}); give a kernel's file with --kernel",
                  markup=False, soft_wrap=True)
    shown = " or ".join(format_shape(tuple(s.items())) for s in shapes)
    if not shown_records:
        where = f" on {name}" if name else ""
        what = f"{kernel or 'any kernel'} {shown} {dt.name}{where}"
        run = f"autotune search --kernel {kernel or 'KERNEL'} {shape_args(shapes[0])} --dtype {dt.name}"
        if note:
            raise NotTunedError(f"nothing current is tuned for {what}: {note}, or run: {run} again")
        raise NotTunedError(nothing_tuned(what, run))
    if note and not include_stale:
        err.print(note, markup=False, soft_wrap=True)
    shown_records.sort(key=lambda b: (len(b.dims), b.shape, b.time_ms))
    marks = None
    if include_stale:
        why = {id(v.record): v.reason for v in judged.verdicts}
        marks = [f"yes ({why[id(b)]})" if why.get(id(b)) else "" for b in shown_records]
    emit_bests(shown_records, f"best configs for {shown} {dt.name}", fmt, wide, stale=marks,
               fronts=pareto_fronts(store, shown_records))


@app.command("list", short_help="List everything tuned in the database.")
@handle_errors
def list_(kernel: KernelRef = None, dims: DimsOption = None, db: Db = None, fmt: FormatOption = Format.table,
          wide: WideOption = False) -> None:
    """List everything tuned in the database (of a kernel, and dims); stale results are marked with
    why, results of kernels this autotune does not know with "?" (give their file with --kernel).

    \b
    Examples:
      autotune list
      autotune list --kernel smem_pad --wide
      autotune list --format csv > tuned.csv
    """
    kernels = _kernels(kernel)
    shapes = Shape(tuple(dims)).shapes(next(iter(kernels.values()))) if kernel and dims else None
    found = open_db(db, "read").find_best(kernel=next(iter(kernels)) if kernel else None)
    found = [b for b in found if shapes is None or dict(b.dims) in shapes]
    if not found:  # one rule for every format: an empty answer is an error line, exit 2
        if not kernel:
            raise NotTunedError(nothing_tuned())
        what = kernel + (f" {' or '.join(format_shape(tuple(s.items())) for s in shapes)}" if shapes else "")
        raise NotTunedError(nothing_tuned(what, f"autotune search --kernel {kernel} "
                                                f"{shape_args(shapes[0]) if shapes else '--size 2048'}"))
    marks = ["?" if not v.known else "" if v.reason is None else f"yes ({v.reason})"
             for v in stale.partition(found, kernels, stale.current_nvcc()).verdicts]
    emit_bests(found, f"{len(found)} tuned key{'s' if len(found) != 1 else ''}", fmt, wide, stale=marks)


@app.command(short_help="List one key's trials (as optuna trials does).")
@handle_errors
@shape_options
def trials(
    shape: Shape = Shape(),
    kernel: KernelOption = "smem_pad",
    dtype: DType = "float32",
    device: Annotated[Optional[str], typer.Option("--device", "-d", metavar="NAME",
                                                  help="Part of the device name (default: any).")] = None,
    study: Annotated[Optional[str], typer.Option("--study", metavar="NAME",
                                                 help="The key's study name (optuna-dashboard shows it), where "
                                                      "several keys match.")] = None,
    db: Db = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """List every trial of one tuning key (kernel, shape, dtype, device model, toolchain), searched
    or imported, in the order stored: status, time, figure, config, and why a failed one failed.
    Where several keys match (GPUs, nvcc releases, kernel sources), it names them: choose one
    with --device or --study.

    \b
    Examples:
      autotune trials --kernel smem_pad --size 8192
      autotune trials --kernel smem_pad --size 8192 --format json | jq '.records[0]'
      autotune trials --kernel matmul_reg --size 1024 --format csv > trials.csv
    """
    kern = resolve_kernel(kernel)
    dims = shape.dims_for(kern)
    dt = get_dtype(dtype).name
    found = open_db(db, "read").trials_by_key(kernel=kern.name, dims=dims, dtype=dt, device_name=device)
    if study is not None:
        found = {k: v for k, v in found.items() if study in (k.study_name, k.legacy_study_name)}
    what = f"{kern.name} {format_shape(tuple(dims.items()))} {dt}" + (f" on {device}" if device else "")
    if not found:
        raise NotTunedError(nothing_tuned(what + (f" in study {study}" if study else ""),
                                          f"autotune search --kernel {kernel} {shape_args(dict(dims))} --dtype {dt}"))
    nvcc = stale.current_nvcc()
    why = {k: _stale_key(k, records, kern, nvcc) for k, records in found.items()}
    if len(found) > 1:
        names = "; ".join(f"{k.device.name}, nvcc {k.nvcc_version}, source {k.source_hash[:12]}"
                          f"{f' (stale: {why[k]})' if why[k] else ''}: --study '{k.study_name}'" for k in found)
        raise InvalidInputError(f"{len(found)} keys of {what} have trials: {names}")
    [(key, records)] = found.items()
    if why[key]:  # the trials of a kernel edited since are not listed as if current
        err.print(f"stale: these trials are of {key.kernel} as it was built then ({why[key]}); neither best nor "
                  f"lookup uses them; run: autotune search --kernel {kernel} {shape_args(dict(dims))} --dtype {dt}",
                  markup=False, soft_wrap=True)
    columns = trial_columns(records)
    emit(out, records, columns, fmt, wide=wide, title=f"{len(records)} trials of {key.kernel} {key.display} {key.dtype} "
         f"on {key.device.name} (nvcc {key.nvcc_version}){f'; stale: {why[key]}' if why[key] else ''}",
         document={"study": key.study_name, "kernel": key.kernel, "dims": dict(key.dims), "dtype": key.dtype,
                   "device": key.device.name, "nvcc": key.nvcc_version, "compile_flags": key.compile_flags,
                   "stale": why[key]})


def _stale_key(key, records: list, kernel, nvcc: str | None) -> str | None:
    """Why the trials of ``key`` are stale against ``kernel`` and today's nvcc
    (:func:`autotune.store.stale.stale_reason`, its config check on the first trial), or ``None``."""
    from types import SimpleNamespace

    result = SimpleNamespace(source_hash=key.source_hash, spec_hash=key.spec_hash, nvcc_version=key.nvcc_version,
                             compile_flags=key.compile_flags, compute_capability=key.device.compute_capability,
                             config=records[0].config)
    return stale.stale_reason(result, kernel, nvcc)


@app.command(short_help="List the kernel catalog with default configs.")
def kernels(pattern: Annotated[Optional[str], typer.Argument(
                metavar="[PATTERN]", autocompletion=lambda incomplete: [n for n in KERNELS if n.startswith(incomplete)],
                help="Only kernels whose name matches this glob (smem_*), or whose name or summary holds "
                     "this text (case ignored).")] = None,
            fmt: FormatOption = Format.table, wide: WideOption = False) -> None:
    """List the kernel catalog: each kernel's dims, what it is, and its default config (--wide:
    its dtypes, tunables and source too); with PATTERN, the kernels it matches.

    \b
    Examples:
      autotune kernels
      autotune kernels smem
      autotune kernels 'matmul_*' --wide
      autotune kernels --format json
    """
    shown = [k for k in KERNELS.values() if pattern is None or _matches(k, pattern)]
    title = f"{len(KERNELS)} catalog kernels" if pattern is None else \
        f"{len(shown)} of {len(KERNELS)} catalog kernels match {pattern!r}"
    if not shown and fmt is Format.table:
        err.print(f"no catalog kernel matches {pattern!r}; autotune kernels lists them all", markup=False)
        return
    emit(out, shown, kernel_columns(), fmt, wide=wide, title=title)


def _matches(kernel, pattern: str) -> bool:
    """A glob (``*?[``) against the name; other text: a case-insensitive part of the name or summary."""
    import fnmatch

    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(kernel.name, pattern)
    text = pattern.lower()
    return text in kernel.name.lower() or text in (kernel.summary or "").lower()


def _kernels(kernel: str | None) -> dict[str, Any]:
    """The kernels results are judged against: the one of ``--kernel`` (a name or a kernel
    file), else the catalog's."""
    if kernel is None:
        return dict(KERNELS)
    k = resolve_kernel(kernel)
    return {k.name: k}


def _device_filter(device: str | None) -> str | None:
    if device is None or not device.isdigit():
        return device
    from autotune.measure.device import query_device

    try:
        return query_device(int(device)).name
    except GPUUnavailableError as exc:
        raise GPUUnavailableError(f"--device {device} needs a GPU to resolve ({exc}); "
                                  "pass part of the device name instead") from None


def emit_bests(records: list[BestRecord], title: str, fmt: Format, wide: bool, stale: list[str] | None = None,
               fronts: dict[int, list] | None = None) -> None:
    """Print stored bests (:func:`~autotune.report.result_tables.best_columns`), then each front
    of ``fronts`` (:func:`pareto_fronts`); with ``stale``, each record's mark (``""``: current) in
    a ``stale`` column, and a stale record's lines in :data:`~.output.STALE_STYLE`
    where colour is on. One device for all of them is named in the title instead."""
    marks = None if stale is None else {id(b): mark for b, mark in zip(records, stale)}
    devices = {b.device_name for b in records}
    if len(devices) == 1 and fmt is Format.table and not wide:
        title += f" on {next(iter(devices))}"
    emit(out, records, best_columns(records, marks, fronts), fmt, wide=wide, title=title,
         style=None if marks is None else lambda b: STALE_STYLE if marks.get(id(b)) else None)
    if fmt is Format.table:
        for b in records:
            if fronts and id(b) in fronts:
                out.print("", markup=False)
                emit_front(b, fronts[id(b)])
