"""Compiling one config with ``nvcc -cubin`` (cached on disk); loading it through the CUDA backend on a GPU.

Each config is compiled with its macros as ``-D`` options (validated integers only, see
:meth:`autotune.kernel.catalog.Kernel.macros`) and the device's ``-arch`` by ``nvcc -cubin``
(:func:`build_cubin`). :class:`Compiler` keeps one module per distinct (config, dtype, arch) in
the process; the on-disk cubin cache (:mod:`autotune.measure.cubin_cache`) keeps the cubins
across processes, so a config compiled once (or ahead, in parallel) is only loaded. Compiler
errors and launches over the device's limits are the expected failures of a trial and become
:class:`~autotune.errors.TrialFailed`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autotune.kernel.config import Config
from autotune.measure import cubin_cache
from autotune.measure.device import DeviceInfo, cuda_driver, nvcc_version
from autotune.kernel.dtypes import DType
from autotune.errors import TrialFailed
from autotune.kernel.catalog import get_kernel
from autotune.kernel.model import Kernel
from autotune.measure.occupancy import occupancy
from autotune.measure.phases import PhaseClock

__all__ = ["COMPILE_FLAGS", "COMPILE_DEADLINE", "compile_flags", "nvcc_options", "CompiledKernel", "Compiler",
           "compile_cubin", "build_cubin", "cubin_of_source", "cubin_digest"]

COMPILE_FLAGS: tuple[str, ...] = ("-O3",)
"""Flags besides the macros and ``-arch``; part of every stored result's key."""

COMPILE_DEADLINE = "compile deadline"
"""How the reason of a config whose nvcc run was cut at its deadline begins (status ``timeout``;
:class:`autotune.measure.pipeline.CompileDeadline`): it was not compiled, so a later search
of the study (``resume``) may try it again."""


def cubin_digest(cubin: bytes) -> str:
    """The hex SHA-256 of a cubin's bytes: two builds alike here are the same binary."""
    return hashlib.sha256(cubin).hexdigest()


def compile_flags(arch: str) -> str:
    """The flags of a build for ``arch`` as stored with results, e.g. ``-O3 -arch=sm_90``."""
    return " ".join((*COMPILE_FLAGS, f"-arch={arch}"))


def nvcc_options(kernel: Kernel, config: Config, dtype: DType) -> list[str]:
    """``-D`` options for the macros of ``config`` and ``dtype``, :data:`COMPILE_FLAGS`, then the
    options ``config`` sets through the kernel's flag tunables (``[flags]``:
    :meth:`~autotune.kernel.model.Kernel.nvcc_flags`); all of them key the cubin cache."""
    return ([f"-D{k}={v}" for k, v in kernel.macros(config, dtype).items()] + list(COMPILE_FLAGS)
            + kernel.nvcc_flags(config))


def _one_line(message: str) -> str:
    lines = [l.strip() for l in str(message).splitlines() if "error" in l.lower()]
    return (lines[0] if lines else str(message).strip().splitlines()[0])[:300]


@dataclass(frozen=True)
class CompiledKernel:
    """A loaded kernel and its resource use.

    Attributes:
        function: the backend's :class:`~autotune.measure.backends.base.Function`, prepared with
            the kernel's ``signature`` (``(out, in, rows, cols)`` for a transpose).
        registers: registers per thread.
        shared_bytes: static shared memory per block, bytes.
        local_bytes: local memory per thread (spills), bytes.
        max_threads_per_block: the most threads per block this binary can launch with.
        blocks_per_sm, occupancy: active blocks per SM and theoretical occupancy (0..1) of
            the config's block size, from the CUDA driver (:mod:`autotune.measure.occupancy`).
    """

    kernel: Kernel
    config: Config
    dtype: DType
    function: Any
    registers: int
    shared_bytes: int
    local_bytes: int
    max_threads_per_block: int
    blocks_per_sm: int = 0
    occupancy: float = 0.0
    module: Any = None  # the backend's loaded Module: ``function`` is valid while it lives

    def check_launch(self, device: DeviceInfo, block: tuple[int, int, int], dynamic_shared: int = 0) -> None:
        """Raise ``TrialFailed('resources')`` if ``block`` (threads x, y, z) or the shared
        memory (static plus ``dynamic_shared`` bytes) exceeds the device or binary limits (shared
        memory: the device's limit with the opt-in, :attr:`DeviceInfo.shared_limit`)."""
        x, y, z = block
        limit = min(self.max_threads_per_block, device.max_threads_per_block)
        if min(block) < 1:
            raise TrialFailed("resources", f"block {block} has an empty dimension")
        if x * y * z > limit:
            raise TrialFailed("resources", f"{x * y * z} threads per block > {limit} allowed "
                              f"({self.registers} registers per thread)")
        if self.shared_bytes + dynamic_shared > device.shared_limit:
            raise TrialFailed("resources", f"{self.shared_bytes + dynamic_shared} B shared memory per block "
                              f"({self.shared_bytes} static + {dynamic_shared} dynamic) > {device.shared_limit} B "
                              f"allowed on {device.name} ({device.arch})")


class Compiler:
    """Compiles and loads configs into the current CUDA context, once per distinct config.

    Args:
        arch: nvcc target, e.g. ``sm_90`` (:attr:`DeviceInfo.arch`).
    """

    def __init__(self, arch: str, max_threads_per_sm: int = 2048) -> None:
        self.arch = arch
        self.max_threads_per_sm = max_threads_per_sm
        self._cache: dict[tuple[Config, str], CompiledKernel] = {}

    def __call__(self, config: Config, dtype: DType, threads: int = 0, kernel: Kernel | None = None,
                 clock: PhaseClock | None = None) -> CompiledKernel:
        """Compile (or fetch from cache) ``config`` for ``dtype``; ``threads`` per block (if
        known) give the occupancy; ``kernel`` defaults to the one ``config`` names; ``clock``
        adds the time of nvcc to its ``compile`` phase and of loading the module to ``load``.

        Raises:
            TrialFailed: ``compile_error`` with the compiler's first error line.
        """
        kernel = kernel or get_kernel(config.kernel)
        key = (id(kernel), config, dtype.name)
        if key not in self._cache:
            self._cache[key] = self._build(kernel, config, dtype, threads, clock or PhaseClock())
        return self._cache[key]

    def _build(self, kernel: Kernel, config: Config, dtype: DType, threads: int, clock: PhaseClock) -> CompiledKernel:
        drv = cuda_driver()
        with clock("compile"):  # a cache hit (e.g. compiled ahead: autotune.measure.pipeline) reads a file
            cubin, _, _ = build_cubin(kernel, config, dtype, self.arch)
        with clock("load"):
            return self._load(drv, kernel, config, dtype, threads, cubin)

    def _load(self, drv, kernel: Kernel, config: Config, dtype: DType, threads: int, cubin: bytes) -> CompiledKernel:
        module = drv.load_module(cubin)
        fn = module.function(kernel.function, kernel.signature)
        blocks, occupied = (0, 0.0)
        if 0 < threads <= fn.max_threads_per_block:
            blocks = fn.active_blocks_per_sm(threads)
            occupied = occupancy(blocks, threads, self.max_threads_per_sm)
        return CompiledKernel(kernel, config, dtype, fn, fn.registers, fn.static_shared,
                              fn.local_bytes, fn.max_threads_per_block, blocks, occupied, module)




def compile_cubin(config: Config, dtype: DType, arch: str = "sm_90", nvcc: str = "nvcc",
                  kernel: Kernel | None = None) -> dict[str, int]:
    """Compile ``config`` (of ``kernel``, default the one it names) to a cubin with nvcc alone
    (no CUDA backend, no GPU needed).

    Used by CI and ``autotune check`` to check that every config of a space compiles. A
    build is kept in the on-disk cubin cache (:mod:`autotune.measure.cubin_cache`): the same
    source, options, arch and nvcc release are not compiled twice.

    Returns:
        ``{"registers": int, "shared_bytes": int}`` from ptxas' resource report (of the
        kernel ``function`` where the source has several entry points),
        ``"entry_points"``: the names of the cubin's kernels (``__global__`` functions), sorted,
        ``"digest"``: the cubin's :func:`cubin_digest`, and ``"cached"``: whether it came from
        the cache.

    Raises:
        TrialFailed: ``compile_error`` with the first error line (failures are not cached).
        GPUUnavailableError: ``nvcc`` is not on PATH.
    """
    kernel = kernel or get_kernel(config.kernel)
    cubin, info, cached = build_cubin(kernel, config, dtype, arch, nvcc)
    return {**info, "entry_points": _entry_points(cubin), "digest": cubin_digest(cubin), "cached": cached}


def build_cubin(kernel: Kernel, config: Config, dtype: DType, arch: str,
                nvcc: str = "nvcc", deadline: float | None = None) -> tuple[bytes, dict[str, int], bool]:
    """The cubin of ``config`` for ``dtype`` and ``arch``: from the on-disk cache, else built
    with ``nvcc -cubin`` (a subprocess: threads may run several at once) and cached; an nvcc
    run past ``deadline`` seconds (``None``: none) is killed.

    Returns:
        ``(cubin, {"registers": int, "shared_bytes": int}, cached)``.

    Raises:
        TrialFailed: ``compile_error`` with the first error line (failures are not cached);
            ``timeout`` past ``deadline`` (reason :data:`COMPILE_DEADLINE`, nothing cached).
        GPUUnavailableError: ``nvcc`` is not on PATH.
    """
    return cubin_of_source(kernel.source_text(), nvcc_options(kernel, config, dtype), arch, nvcc, kernel.function,
                           deadline)


def cubin_of_source(source: str, options: list[str], arch: str, nvcc: str = "nvcc",
                    function: str | None = None, deadline: float | None = None) -> tuple[bytes, dict[str, int], bool]:
    """The cubin of CUDA ``source`` built with ``options`` for ``arch``: from the on-disk cache,
    else ``nvcc -cubin`` and cached (what :func:`build_cubin` does for a kernel's config; also
    the package's own helper kernels, e.g. :mod:`autotune.measure.device_compare`).

    Returns:
        ``(cubin, {"registers": int, "shared_bytes": int}, cached)``, the resources those of
        entry point ``function`` where given (else ptxas' first report).

    Raises:
        TrialFailed: ``compile_error`` with the first error line (failures are not cached);
            ``timeout``: nvcc ran past ``deadline`` seconds and was killed (:data:`COMPILE_DEADLINE`).
        GPUUnavailableError: ``nvcc`` is not on PATH.
    """
    # nvcc's NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS reach its command line: they key the entry too
    key = cubin_cache.entry_key(source, options, arch, nvcc_version(nvcc), cubin_cache.nvcc_environment())
    hit = cubin_cache.load(key)
    if hit is not None:
        return hit[0], hit[1], True
    with cubin_cache.building(key):  # a build of this entry running elsewhere is waited for
        hit = cubin_cache.load(key)
        if hit is not None:
            return hit[0], hit[1], True
        return _nvcc(key, source, options, arch, nvcc, function, deadline)


def _run(cmd: list[str], deadline: float | None) -> tuple[int, str]:
    """Run ``cmd``, returning its exit status and stderr; past ``deadline`` seconds its whole
    process group (nvcc and the cicc or ptxas it started) is killed.

    Raises:
        TrialFailed: ``timeout`` (:data:`COMPILE_DEADLINE`) past the deadline.
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:  # it ended meanwhile
            pass
        proc.communicate()
        raise TrialFailed("timeout", f"{COMPILE_DEADLINE}: nvcc ran past {deadline:.1f} s and was stopped "
                                     "(not compiled: a later run may try it again)") from None
    except BaseException:  # a signal: nvcc does not outlive the search
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return proc.returncode, err


def _nvcc(key: str, source: str, options: list[str], arch: str, nvcc: str,
          function: str | None, deadline: float | None = None) -> tuple[bytes, dict[str, int], bool]:
    """Build ``source`` with nvcc and cache it under ``key`` (see :func:`cubin_of_source`)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.cu"
        src.write_text(source)
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-Xptxas", "-v", *options,
               "-o", str(Path(tmp) / "k.cubin"), str(src)]
        returncode, stderr = _run(cmd, deadline)
        cubin = (Path(tmp) / "k.cubin").read_bytes() if returncode == 0 else b""
    if returncode != 0:
        raise TrialFailed("compile_error", _one_line(stderr))
    report = stderr  # ptxas reports each entry point: take the kernel's own where there are several
    own = re.search(rf"Compiling entry function '{re.escape(function)}'.*?(?=Compiling entry function|\Z)",
                    report, re.S) if function else None
    used = re.search(r"Used (\d+) registers", own.group(0) if own else report)
    smem = re.search(r"(\d+) bytes smem", own.group(0) if own else report)
    info = {"registers": int(used.group(1)) if used else 0, "shared_bytes": int(smem.group(1)) if smem else 0}
    cubin_cache.store(key, cubin, info)
    return cubin, info, False


def _entry_points(cubin: bytes) -> tuple[str, ...]:
    """The names of the kernels (``__global__`` functions) in ``cubin``, sorted."""
    return tuple(sorted({m.decode() for m in re.findall(rb"\.nv\.info\.([A-Za-z_$][\w$]*)\0", cubin)}))
