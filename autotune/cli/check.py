"""``autotune check``: validate a kernel file and build every config of its space (no GPU)."""

from __future__ import annotations

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
from . import app
from ._common import EXIT_ERROR, err, handle_errors, out, parse_int

MAX_LISTED = 20
"""Failures printed one per line; the rest are counted."""


@app.command("check")
@handle_errors
def check(
    kernel_file: Annotated[str, typer.Argument(help="A kernel file (.toml), or a catalog kernel's name.")],
    dtype: Annotated[Optional[list[str]], typer.Option(
        "--dtype", help="Build for this dtype only (repeatable or comma-separated; default: every dtype "
                        "the kernel takes).")] = None,
    arch: Annotated[str, typer.Option("--arch", help="nvcc target, e.g. sm_90 or sm_80.")] = "sm_90",
    space: Annotated[Optional[str], typer.Option("--space", help="A search-space TOML file to build instead of "
                                                                 "the kernel file's own [space].")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", parser=parse_int,
                                                help="nvcc processes at once (default: one per core).")] = None,
    sample: Annotated[Optional[int], typer.Option(
        "--sample", parser=parse_int, help="Build at most N configs: the default, the first and last, the first "
                                           "holding each listed value, then evenly spaced ones (for spaces too "
                                           "large to build whole).")] = None,
) -> None:
    """Check a kernel file: every field, then every config of its space built with nvcc -cubin
    for each dtype, its entry points and its launch geometry. Needs nvcc, not a GPU.

    Exit code 0 if every build is good, 2 on a bad file or a failed build (each failed config
    is listed with the compiler's first error line, or what a launch would refuse)."""
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
    out.print(f"{k.name} ({where}): kernel file ok; source {k.source}; {k.function} on dims {', '.join(k.dims)}, "
              f"tunables {', '.join(k.tunables)}", markup=False)
    started = time.monotonic()
    report = check_builds(k, dtypes, arch=arch, jobs=jobs, plan=plan)
    seconds = time.monotonic() - started
    built = report.builds - len({(f.config, f.dtype) for f in report.failures if f.stage == "compile"})
    regs = f", {report.registers[0]}-{report.registers[1]} registers per thread" if report.registers else ""
    sampled = report.space_size is None or report.configs < report.space_size
    total = f"more than {SAMPLE_WHOLE:,} or uncounted" if report.space_size is None else report.space_size
    of = f" (a sample of the space's {total})" if sampled else ""
    out.print(f"compiled {built} of {report.builds} builds ({report.configs} configs{of} x {len(report.dtypes)} "
              f"dtype{'s' if len(report.dtypes) != 1 else ''}: {', '.join(report.dtypes)}) for {arch} in "
              f"{seconds:.1f} s{regs}; launch geometry checked at every dim = "
              f"{' and '.join(map(str, PROBE_SIZES))}", markup=False)
    if report.ok:
        which = "every sampled config" if sampled else "every config"
        out.print(f"ok: {which} of {k.name} builds and can be launched", markup=False)
        return
    for failure in report.failures[:MAX_LISTED]:
        out.print(f"  failed: {failure}", markup=False, soft_wrap=True)
    if len(report.failures) > MAX_LISTED:
        out.print(f"  ... and {len(report.failures) - MAX_LISTED} more", markup=False)
    bad = len({(f.config, f.dtype) for f in report.failures})
    err.print(f"error: {bad} of {report.builds} builds of {k.name} failed", markup=False)
    raise typer.Exit(EXIT_ERROR)


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
