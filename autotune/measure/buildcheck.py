"""Checking a kernel without a GPU: every config of its space built with ``nvcc -cubin``.

:func:`check_builds` is what ``autotune check`` runs after the kernel file has loaded (the
loader has already checked every field). For each config of the space and each dtype it:

1. compiles the config with ``nvcc -cubin -arch=<arch>`` (:func:`~autotune.measure.compile.compile_cubin`);
2. checks the cubin has the kernel's entry point ``function`` (and, for the default config,
   the ``reference_kernel``): an entry point that is not ``extern "C" __global__`` compiles
   but cannot be launched by name;
3. evaluates the launch geometry over the dims' whole range (:func:`probe_dims`: every dim 1;
   every dim 1000; each dim at its largest with the others at 1; a dim's largest is its
   ``[problem] max``, else ``MAX_DIM``, lowered to the most whose arrays fit in
   :data:`FOOTPRINT_LIMIT`) and checks what a launch would refuse
   (a problem at a large dim says up to where that dim launches): empty block or grid dimensions, more than 1024 threads per
   block (1024 x 1024 x 64 per dimension, grid y and z at most 65535), more registers than a
   multiprocessor's 64 Ki for the block, or more shared memory (static plus dynamic) per
   block than ``arch`` allows with the opt-in (:func:`autotune.measure.shared_memory.block_limit`:
   96 KiB on sm_70, 163 KiB on sm_80, 99 KiB on sm_86/sm_89, 227 KiB on sm_90).

Builds run in parallel (``jobs`` nvcc processes). Before them, :func:`check_file` finds
what is wrong with the file as a whole, as one :class:`~autotune.errors.KernelFileError`
naming the field: a Python reference or comparison (``module:function``) that cannot be
loaded, a Python reference that fails when called once on small dims (:data:`REFERENCE_DIM`,
NumPy on the CPU: its signature, and the shapes and dtypes of what it returns), or an entry
point missing from the default config's build.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from autotune.base.files import read_text
from autotune.errors import KernelFileError, SearchSpaceError, TrialFailed
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DType
from autotune.kernel.model import COMPARES, Kernel
from autotune.kernel.space import SAMPLE_WHOLE, WALK_LIMIT
from autotune.measure.compile import compile_cubin
from autotune.measure.shared_memory import block_limit

__all__ = ["BuildFailure", "BuildReport", "BuildPlan", "check_file", "check_builds", "check_reference",
           "plan_builds", "probe_dims", "geometry_problem", "refusal", "PROBE_SIZES", "FOOTPRINT_LIMIT", "REFERENCE_DIM"]

PROBE_SIZES = (1, 1000)
"""Every dim is set to each of these to evaluate the launch geometry (and see :func:`probe_dims`)."""
FOOTPRINT_LIMIT = 256 * 2**30
"""Bytes of arrays no GPU holds: larger problems are not probed (a dim's largest value is lowered
until its arrays fit)."""
REFERENCE_DIM = 16
"""Every dim's value (at most its max) when ``check`` calls a Python reference once."""
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_THREADS = 1024
REGISTERS_PER_SM = 64 * 1024  # 32-bit registers per multiprocessor (sm_50 and later)


@dataclass(frozen=True)
class BuildFailure:
    """One config that cannot run: ``stage`` is ``compile``, ``entry point`` or ``launch``;
    ``reason`` one line (the compiler's first error line, or what a launch would refuse)."""

    config: Config
    dtype: str
    stage: str
    reason: str

    def __str__(self) -> str:
        return f"{self.config.key} {self.dtype}: {self.stage}: {self.reason}"


@dataclass
class BuildReport:
    """What :func:`check_builds` found.

    Attributes:
        configs: configs built (all of the space, or a sample); space_size: configs of the
            space (``None``: more than :data:`~autotune.kernel.space.SAMPLE_WHOLE`, not counted); dtypes: the dtypes built; builds: ``configs x dtypes``.
        failures: one per failed build, in the space's order.
        registers: ``(min, max)`` registers per thread over the builds that compiled.
    """

    kernel: str
    arch: str
    configs: int
    dtypes: tuple[str, ...]
    failures: list[BuildFailure] = field(default_factory=list)
    registers: tuple[int, int] | None = None
    space_size: int | None = 0


    @property
    def builds(self) -> int:
        return self.configs * len(self.dtypes)

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class BuildPlan:
    """The configs :func:`check_builds` builds: ``configs`` of the space (all, or a sample), and
    ``space_size`` (``None``: more than :data:`~autotune.kernel.space.SAMPLE_WHOLE`, or too large to
    count)."""

    configs: tuple[Config, ...]
    space_size: int | None


def plan_builds(kernel: Kernel, space_path: str | None = None, sample: int | None = None) -> BuildPlan:
    """The configs to build, chosen before anything is compiled: every config of ``kernel``'s
    space (or of the file ``space_path``), or a sample of ``sample`` (the default, the corners
    and evenly spaced ones: :meth:`~autotune.kernel.space.SearchSpace.sample`). Bounded: a
    space of 10^8 combinations is never enumerated.

    Raises:
        SearchSpaceError: the space file is malformed or does not fit the kernel; no config
            satisfies its constraints (or none was found in a bounded walk); more than
            :data:`~autotune.kernel.space.SAMPLE_WHOLE` valid configs and no ``sample``.
    """
    space = kernel.space(space_path)
    size = space.count_within(SAMPLE_WHOLE)
    if sample is None and (size is None or size > SAMPLE_WHOLE):
        where = f" in {space.path}" if space.path else ""
        what = f"has more than {SAMPLE_WHOLE:,} valid configs" if size is not None else \
            f"is too large to count ({WALK_LIMIT:,} checks did not suffice)"
        raise SearchSpaceError(f"the space{where} {what} ({space.raw_size:,} combinations before its constraints); "
                               "building them all is not allowed: give --sample N")
    configs = space.configs() if sample is None else space.sample(sample, (kernel.default_config(),))
    return BuildPlan(tuple(configs), size if size is not None and size <= SAMPLE_WHOLE else None)


def check_builds(kernel: Kernel, dtypes: Sequence[DType], *, arch: str = "sm_90", space_path: str | None = None,
                 jobs: int | None = None, progress: Callable[[int, int], None] | None = None,
                 sample: int | None = None, plan: BuildPlan | None = None) -> BuildReport:
    """Build every config of ``kernel``'s space (or of the space file ``space_path``) for each
    of ``dtypes`` and check each build's entry points and launch geometry.

    Args:
        progress: called with ``(done, total)`` after each build.
        sample: build at most this many configs: the default, the corners and evenly spaced
            ones (:meth:`~autotune.kernel.space.SearchSpace.sample`), for spaces too large to
            build whole; ``None``: every config.
        plan: the configs, chosen already (:func:`plan_builds`; ``space_path`` and ``sample``
            are then not used).

    Raises:
        SearchSpaceError: as :func:`plan_builds`.
    """
    plan = plan or plan_builds(kernel, space_path, sample)
    default = kernel.default_config()
    configs = list(plan.configs)
    jobs_list = [(c, d) for c in configs for d in dtypes]
    report = BuildReport(kernel.name, arch, len(configs), tuple(d.name for d in dtypes), space_size=plan.space_size)
    done = 0
    # compile_cubin builds a temporary copy (includes inlined): name the user's file instead
    inlined = kernel.source_text() != read_text(kernel.source, "source")
    source_name = f"{kernel.source.name} (includes inlined)" if inlined else kernel.source.name

    probes = {d.name: probe_dims(kernel, d) for d in dtypes}

    def build(job: tuple[Config, DType]) -> tuple[list[BuildFailure], int | None]:
        config, dtype = job
        try:
            built = compile_cubin(config, dtype, arch, kernel=kernel)
        except TrialFailed as exc:
            reason = re.sub(r"^\S*[/\\]k\.cu(?=[:(])", lambda _: source_name, exc.reason)
            return [BuildFailure(config, dtype.name, "compile", reason)], None
        problems = [BuildFailure(config, dtype.name, "entry point", p)
                    for p in _entry_point_problems(kernel, built["entry_points"], config == default)]
        problems += [BuildFailure(config, dtype.name, "launch", p)
                     for p in _launch_problems(kernel, config, dtype, built, arch, probes[dtype.name])]
        return problems, built["registers"]

    registers = []
    with ThreadPoolExecutor(max_workers=max(1, jobs or os.cpu_count() or 2)) as pool:
        for problems, regs in pool.map(build, jobs_list):
            report.failures += problems
            if regs is not None:
                registers.append(regs)
            done += 1
            if progress:
                progress(done, len(jobs_list))
    if registers:
        report.registers = (min(registers), max(registers))
    return report


def check_file(kernel: Kernel, dtype: DType, arch: str = "sm_90") -> None:
    """What the loader cannot see: the ``module:function`` callables load, and the default
    config's build for ``dtype`` has the entry points (skipped if it does not compile: that
    is a build failure of :func:`check_builds`).

    Raises:
        KernelFileError: naming the file, the field and the problem.
    """
    from autotune.kernel.callables import load_callable

    where = f"kernel file {kernel.path or kernel.name}"
    base = kernel.path.parent if kernel.path else None
    spec = kernel.check_spec
    for field, value in (("[check] reference", spec.reference),
                         ("[check] compare", None if spec.compare in COMPARES else spec.compare)):
        if value is not None:
            try:
                load_callable(value, base)
            except KernelFileError as exc:
                raise KernelFileError(f"{where}: {field}: {exc}") from None
    if spec.reference is not None:
        check_reference(kernel, dtype)
    try:
        built = compile_cubin(kernel.default_config(), dtype, arch, kernel=kernel)
    except TrialFailed:
        return
    problems = _entry_point_problems(kernel, built["entry_points"], True)
    if problems:
        raise KernelFileError(f"{where}: {problems[0]}")


def _entry_point_problems(kernel: Kernel, found: Sequence[str], is_default: bool) -> list[str]:
    wanted = [("function", kernel.function)]  # field: problem
    if is_default and kernel.check_spec.reference_kernel:
        wanted.append(("[check] reference_kernel", kernel.check_spec.reference_kernel))
    have = ", ".join(found) or "none"
    return [f"{field}: {name!r} is not a kernel of {kernel.source.name} (its kernels: {have}); "
            f'give one of them, or declare it extern "C" __global__' for field, name in wanted if name not in found]


def probe_dims(kernel: Kernel, dtype: DType) -> list[dict[str, int]]:
    """The dims at which the launch geometry is checked: every dim 1; every dim 1000; each dim
    at its largest with the others at 1 (a dim's largest: :meth:`Kernel.largest`, lowered to the
    most whose arrays fit in :data:`FOOTPRINT_LIMIT`). Not probed: several dims large at once
    (a 2-D grid's x over 2**31 - 1 blocks needs arrays larger than any GPU holds today)."""
    ones = {d: 1 for d in kernel.dims}
    out = [ones, {d: min(1000, kernel.largest(d)) for d in kernel.dims}]
    for d in kernel.dims:
        out.append({**ones, d: _fitting(kernel, dtype, ones, [d])})
    unique = []
    for dims in out:
        if dims not in unique:
            unique.append(dims)
    return unique


def _fitting(kernel: Kernel, dtype: DType, base: dict[str, int], names: list[str]) -> int:
    """The largest value ``v`` (at most each name's largest) with ``names`` set to ``v`` in ``base``
    whose arrays fit in :data:`FOOTPRINT_LIMIT` (binary search: footprints grow with the dims)."""
    def fits(v: int) -> bool:
        env = kernel.env({**base, **{n: v for n in names}}, dtype)
        try:
            return sum(math.prod(a.shape_of(env)) * a.dtype_of(dtype).itemsize
                       for a in kernel.arrays) <= FOOTPRINT_LIMIT
        except ArithmeticError:
            return False

    return _largest(fits, min(kernel.largest(n) for n in names))


def _largest(ok: Callable[[int], bool], high: int) -> int:
    """The largest ``v`` in ``1..high`` with ``ok(v)``, ``ok`` true up to some value and false after
    (1 if none)."""
    if ok(high):
        return high
    low = 1
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return low


def _launch_problems(kernel: Kernel, config: Config, dtype: DType, built: dict, arch: str = "sm_90",
                     probes: list[dict[str, int]] | None = None) -> list[str]:
    """What a launch of ``config`` would refuse at the probe dims (first problem per launch)."""
    launches = [("[launch]", kernel.launch, config)]
    if kernel.check_spec.reference_launch is not None and config == kernel.default_config():
        launches.append(("[check.launch]", kernel.check_spec.reference_launch, config))
    out = []
    for field, launch, cfg in launches:
        def problem_at(dims: dict[str, int]) -> str | None:
            grid, block, shared = kernel.geometry(cfg, dims, dtype, launch)
            return geometry_problem(grid, block, shared, built if field == "[launch]" else None, arch)

        for dims in probes or probe_dims(kernel, dtype):
            at = ", ".join(f"{d}={v}" for d, v in dims.items())
            try:
                problem = problem_at(dims)
            except (ZeroDivisionError, ArithmeticError, ValueError) as exc:
                out.append(f"{field} cannot be evaluated at {at}: {exc}")
                break
            if problem:
                out.append(f"{field} at {at}: {problem}{_up_to(kernel, dims, problem_at)}")
                break
    return out


def _up_to(kernel: Kernel, dims: dict[str, int], problem_at) -> str:
    """For a problem at one large dim (the others at 1): up to where that dim launches."""
    large = [d for d, v in dims.items() if v > 1000]
    if len(large) != 1 or any(v != 1 for d, v in dims.items() if d != large[0]):
        return ""
    d = large[0]

    def ok(v: int) -> bool:
        try:
            return problem_at({**dims, d: v}) is None
        except ArithmeticError:
            return False

    if not ok(1):
        return ""
    v = _largest(ok, dims[d])
    return f"; {d} launches up to {v}: give [problem] max = {{ {d} = {v} }}, or a grid that stays in the limits"


def geometry_problem(grid, block, shared: int, built: dict | None = None, arch: str = "sm_90",
                     shared_limit: int | None = None) -> str | None:
    """What a launch of ``grid`` x ``block`` with ``shared`` bytes of dynamic shared memory
    would refuse, in one line, or ``None``: a size below 1, a block or grid over the limits,
    more than :data:`MAX_THREADS` threads, and shared memory over ``shared_limit`` (default
    ``arch``'s with the opt-in). Without ``built`` (ptxas' ``registers`` and ``shared_bytes``,
    known only after nvcc) the dynamic bytes alone are checked, so a config is refused before
    it is compiled wherever the kernel file's expressions say it cannot launch; with it, the
    static bytes count too, and the registers of a block against a multiprocessor's."""
    if min(block) < 1 or min(grid) < 1:
        return f"block {tuple(block)} and grid {tuple(grid)} need every size >= 1"
    for what, sizes, limits in (("block", block, MAX_BLOCK), ("grid", grid, MAX_GRID)):
        over = [f"{'xyz'[i]}={s} > {m}" for i, (s, m) in enumerate(zip(sizes, limits)) if s > m]
        if over:
            return f"{what} {tuple(sizes)} is over the limits ({', '.join(over)})"
    threads = math.prod(block)
    if threads > MAX_THREADS:
        return f"block {tuple(block)} has {threads} threads > {MAX_THREADS} threads per block allowed"
    if shared < 0:
        return f"dynamic shared memory {shared} B is negative"
    limit = shared_limit or block_limit(arch)
    if built is None:
        if shared > limit:
            return (f"{shared} B shared memory per block ({shared} dynamic, before the static of the build) "
                    f"> {limit} B ({arch}'s limit with the opt-in)")
        return None
    total = built["shared_bytes"] + shared
    if total > limit:
        return f"{total} B shared memory per block > {limit} B ({arch}'s limit with the opt-in)"
    # registers are allocated per warp in units of 256
    per_warp = math.ceil(built["registers"] * 32 / 256) * 256
    if per_warp * math.ceil(threads / 32) > REGISTERS_PER_SM:
        return (f"{threads} threads x {built['registers']} registers > {REGISTERS_PER_SM} registers "
                "of a multiprocessor")
    return None


def refusal(problem, config: Config, arch: str, shared_limit: int | None = None) -> str | None:
    """Why ``config`` cannot launch on ``problem`` (a :class:`~autotune.kernel.problem.Problem`)
    for ``arch``, from the kernel file's launch expressions alone (:func:`geometry_problem`
    without the build), or ``None``: what a search refuses before running nvcc (the registers
    and static shared memory are known only after ptxas; the launch checks them)."""
    try:
        grid, block, shared = problem.geometry(config)
    except ZeroDivisionError:
        return "the launch geometry divides by zero for this config"
    return geometry_problem(grid, block, shared, None, arch, shared_limit)


def check_reference(kernel: Kernel, dtype: DType) -> None:
    """Call the kernel's Python reference once, as a verification does, on small dims (every dim
    :data:`REFERENCE_DIM`, at most its max; NumPy on the CPU), with every argument by name.

    Raises:
        KernelFileError: the reference raises (a wrong signature, say), or returns arrays of
            the wrong names, shapes or dtypes; naming the file, the field and the dims.
    """
    import numpy as np

    from autotune.measure.buffers import array_layout, host_values, scalar_values
    from autotune.measure.reference import python_reference

    dims = {d: min(REFERENCE_DIM, kernel.largest(d)) for d in kernel.dims}
    where = f"kernel file {kernel.path or kernel.name}: [check] reference"
    at = ", ".join(f"{d}={v}" for d, v in dims.items())
    env = kernel.env(dims, dtype)
    layout = array_layout(kernel, env, dtype)
    rng = np.random.default_rng(0)
    values = {i: np.full(shape, a.reset, dt.numpy) if a.reset is not None else host_values(a, shape, dt, rng)
              for i, (a, shape, dt) in enumerate(layout) if a.role != "out" or a.reset is not None}
    try:
        python_reference(kernel, layout, scalar_values(kernel, env), values)
    except KernelFileError as exc:
        raise KernelFileError(f"{where}: {exc} (called at {at}, {dtype.name})") from None
    except Exception as exc:  # noqa: BLE001  (the user's code: anything it raises is the file's fault)
        names = ", ".join(a.name for a in kernel.args)
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise KernelFileError(f"{where}: {kernel.check_spec.reference} raised {type(exc).__name__}: {first} (called "
                              f"once with {names} by name at {at}, {dtype.name})") from None