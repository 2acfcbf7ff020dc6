"""``autotune check``: validate a kernel file and build every config of its space (no GPU)."""

from __future__ import annotations

import os

import shutil
import time
from typing import Annotated, Optional

import typer

from autotune.errors import GPUUnavailableError, InvalidInputError, KernelFileError
from autotune.kernel.catalog import ALIASES, KERNELS, get_kernel, is_kernel_path
from autotune.kernel.loader import load_kernel
from autotune.kernel.model import Kernel
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.space import SAMPLE_WHOLE
from autotune.measure.buildcheck import PROBE_SIZES, check_builds, check_file, plan_builds
from .root import app
from .output import Column, Format, FormatOption, emit, labelled
from ._common import EXIT_ERROR, err, handle_errors, out, parse_int

MAX_LISTED = 20
"""Failures printed one per line; the rest are counted."""


class _PathOrName(str):
    """A kernel file's path or a catalog kernel's name (``--help`` shows this type as ``<path|name>``)."""


_PathOrName.__name__ = "path|name"


@app.command("check", short_help="Check a kernel file and build every config (nvcc, no GPU).")
@handle_errors
def check(
    kernel_file: Annotated[_PathOrName, typer.Argument(
        parser=_PathOrName, metavar="KERNEL", help="A kernel file (.toml), or a catalog kernel's name.")],
    dtype: Annotated[Optional[list[str]], typer.Option(
        "--dtype", metavar="DTYPE", help="Build for this dtype only (repeatable or comma-separated; default: "
                                         "every dtype the kernel takes).")] = None,
    arch: Annotated[str, typer.Option("--arch", metavar="SM", help="nvcc target, e.g. sm_90 or sm_80.")] = "sm_90",
    space: Annotated[Optional[str], typer.Option(
        "--space", metavar="FILE", help="A search-space TOML file to build instead of the kernel file's own "
                                        "\\[space] (the kernel file's table).")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", parser=parse_int, metavar="N",
                                                help="nvcc processes at once (default: one per core).")] = None,
    sample: Annotated[Optional[int], typer.Option(
        "--sample", parser=parse_int, metavar="N",
        help="Build at most N configs: the default, the first and last, the first holding each listed value, then "
             "evenly spaced ones (for spaces too large to build whole).")] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Check a kernel file: every field, then every config of its space built with nvcc -cubin
    for each dtype, its entry points and its launch geometry. Needs nvcc, not a GPU.

    Exit code 0 if every build is good, 2 on a bad file or a failed build (each failed config
    is listed with the compiler's first error line, or what a launch would refuse). JSON is
    the whole report; CSV one line per failed build.

    \b
    Examples:
      autotune check examples/reduction/reduce.toml
      autotune check smem_vec --dtype float16 --arch sm_80 --sample 50
      autotune check my_kernel.toml --format json
    """
    if not arch.startswith(("sm_", "compute_")) or not arch.split("_", 1)[1].rstrip("af").isdigit():
        raise InvalidInputError(f"--arch {arch!r} is not allowed; give an nvcc target such as sm_90")
    if jobs is not None and jobs < 1:
        raise InvalidInputError(f"--jobs {jobs} is not allowed; give an integer >= 1")
    if sample is not None and sample < 3:
        raise InvalidInputError(f"--sample {sample} is not allowed; give an integer >= 3")
    k = _load(kernel_file)
    names = [d.strip() for opt in dtype or () for d in opt.split(",") if d.strip()] or list(k.dtypes)
    dtypes = [get_dtype(n) for n in dict.fromkeys(names)]
    for d in dtypes:
        k.check_dtype(d)
    if shutil.which("nvcc") is None:
        raise GPUUnavailableError("nvcc is not on PATH; autotune check builds with the CUDA toolkit's nvcc")
    plan = plan_builds(k, space, sample)  # the space first: a bad, empty or huge one is said before nvcc runs
    check_file(k, dtypes[0], arch)
    where = kernel_file if is_kernel_path(kernel_file) else k.path
    say = out if fmt is Format.table else err
    say.print(f"{k.name} ({where}): kernel file ok; source {_shown(k.source)}; {k.function} on dims {', '.join(k.dims)}, "
              f"tunables {', '.join(k.tunables)}", markup=False)
    started = time.monotonic()
    report = check_builds(k, dtypes, arch=arch, jobs=jobs, plan=plan)
    seconds = time.monotonic() - started
    built = report.builds - len({(f.config, f.dtype) for f in report.failures if f.stage == "compile"})
    bad = len({(f.config, f.dtype) for f in report.failures})
    if fmt is not Format.table:
        _emit_report(k, str(where), report, built, seconds, fmt)
    else:
        _print_report(k, report, built, seconds, arch)
    if bad:
        err.print(f"error: {bad} of {report.builds} builds of {k.name} failed", markup=False)
        raise typer.Exit(EXIT_ERROR)


def registers_text(registers: tuple[int, int] | None) -> str:
    """``32 registers per thread``, or ``24-40 registers per thread`` over several builds."""
    if not registers:
        return ""
    low, high = registers
    return f"{low if low == high else f'{low}-{high}'} registers per thread"


def _print_report(k: Kernel, report, built: int, seconds: float, arch: str) -> None:
    regs = registers_text(report.registers)
    sampled = report.space_size is None or report.configs < report.space_size
    total = f"more than {SAMPLE_WHOLE:,} or uncounted" if report.space_size is None else report.space_size
    of = f" (a sample of the space's {total})" if sampled else ""
    out.print(f"compiled {built} of {report.builds} builds ({report.configs} configs{of} x {len(report.dtypes)} "
              f"dtype{'s' if len(report.dtypes) != 1 else ''}: {', '.join(report.dtypes)}) for {arch} in "
              f"{seconds:.1f} s{', ' + regs if regs else ''}; launch geometry checked at every dim = "
              f"{' and '.join(map(str, PROBE_SIZES))} and at each dim's largest", markup=False)
    if report.ok:
        which = "every sampled config" if sampled else "every config"
        out.print(f"ok: {which} of {k.name} builds and can be launched", markup=False)
        return
    width = out.width if not out.soft_wrap else 10**6  # a log keeps each failure on one line to grep
    for failure in report.failures[:MAX_LISTED]:  # one record per failure, wrapped under itself
        for line in labelled("failed:", str(failure), 7, width, ", ", indent=2, gap=1):
            out.print(line, markup=False, soft_wrap=True)
    if len(report.failures) > MAX_LISTED:
        out.print(f"  ... and {len(report.failures) - MAX_LISTED} more (--format json lists them all)", markup=False)


FAILURE_COLUMNS = [Column("dtype", "dtype", lambda f: f.dtype), Column("stage", "stage", lambda f: f.stage),
                   Column("config", "config", lambda f: f.config.key, long=True),
                   Column("reason", "reason", lambda f: f.reason, long=True, breaks=" ")]
"""A failed build: dtype and stage in the row, the config and the compiler's line on their own."""


def _emit_report(k: Kernel, where: str, report, built: int, seconds: float, fmt: Format) -> None:
    if fmt is Format.csv:
        emit(out, report.failures, FAILURE_COLUMNS, fmt)
        return
    document = {"kernel": k.name, "file": where, "arch": report.arch, "dtypes": list(report.dtypes),
                "configs": report.configs, "space_size": report.space_size, "builds": report.builds,
                "compiled": built, "seconds": round(seconds, 3), "ok": report.ok,
                "registers": None if report.registers is None else list(report.registers),
                "probe_sizes": list(PROBE_SIZES)}
    emit(out, report.failures, FAILURE_COLUMNS, fmt, document=document)


def _load(kernel_file: str) -> Kernel:
    """The kernel of a file (not registered in the process: checking has no side effects), or
    a catalog kernel by name. A file may not take a catalog kernel's name (search refuses it).

    Raises:
        KernelFileError: the file is malformed, or its name is a catalog kernel's.
        InvalidInputError: an unknown catalog name.
    """
    if not is_kernel_path(kernel_file):
        return get_kernel(kernel_file)
    k = load_kernel(kernel_file)
    catalog = KERNELS.get(ALIASES.get(k.name, k.name))
    if (k.name in KERNELS or k.name in ALIASES) and (catalog is None or catalog.path != k.path):
        raise KernelFileError(f"kernel file {k.path}: name: {k.name!r} is a catalog kernel's name; choose another")
    return k


def _shown(path) -> str:
    """``path`` relative to the working folder where it lies below it, else absolute: where the
    source really is (it may sit outside the kernel file's folder), short where it can be."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative
