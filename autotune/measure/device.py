"""Identity and limits of a CUDA device, and the toolchain that builds for it.

The device is reached through the chosen backend (:mod:`autotune.measure.backends`:
``cuda-bindings`` or PyCUDA), imported only inside the functions that need a GPU, never at
import time, so the package imports, tests and compile-checks kernels on machines without one.
"""

from __future__ import annotations

import contextlib
import functools
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from . import nvml
from autotune.errors import GPUUnavailableError, InvalidInputError, no_driver
from autotune.measure.shared_memory import block_limit

__all__ = ["DeviceInfo", "cuda_driver", "device_count", "query_device", "current_device", "open_device",
           "nvcc_version"]


@dataclass(frozen=True)
class DeviceInfo:
    """What identifies a GPU for stored results, and the limits a launch must respect.

    Attributes:
        name: marketing name (``NVIDIA H100 80GB HBM3``).
        compute_capability: ``"9.0"``.
        sm_count: streaming multiprocessors.
        total_memory: device memory, bytes.
        driver_version: CUDA driver API version, e.g. ``"13.0"``.
        cuda_version: the CUDA release the backend's binding was built for, e.g. ``"13.0"``
            (``cuda.bindings.driver.CUDA_VERSION``; PyCUDA's ``get_version()``).
        uuid: the GPU's UUID from NVML (``""`` where NVML is not available).
        max_threads_per_block: launch limit on threads per block.
        max_shared_per_block: shared memory per block without the opt-in (48 KiB), bytes.
        max_shared_optin: shared memory per block with the opt-in (static plus dynamic),
            bytes, from the driver (0: unknown, the arch's figure is used; see :attr:`shared_limit`).
        ordinal: index of the device in this process (not part of the identity).
        pci_bus_id: where the device sits (not part of the identity; NVML finds it by it).
        l2_bytes: L2 cache size, bytes (not part of the identity).
        max_threads_per_sm: resident threads per multiprocessor (for occupancy).
    """

    name: str
    compute_capability: str
    sm_count: int
    total_memory: int
    driver_version: str
    cuda_version: str
    uuid: str = ""
    max_threads_per_block: int = 1024
    max_shared_per_block: int = 48 * 1024
    ordinal: int = 0
    pci_bus_id: str = ""
    l2_bytes: int = 50 * 2**20
    max_threads_per_sm: int = 2048
    max_shared_optin: int = 0

    @property
    def shared_limit(self) -> int:
        """Bytes of shared memory (static plus dynamic) one block may use, the opt-in above
        48 KiB included (:mod:`autotune.measure.shared_memory`): the driver's figure where
        known, else the architecture's."""
        return max(self.max_shared_per_block, self.max_shared_optin or block_limit(self.arch))

    @property
    def arch(self) -> str:
        """nvcc target for this device, e.g. ``sm_90``."""
        return "sm_" + self.compute_capability.replace(".", "")


def cuda_driver():
    """The chosen backend (:func:`autotune.measure.backends.get`), its driver initialised.

    Raises:
        GPUUnavailableError: no backend is installed, or the CUDA driver cannot be loaded or
            initialised.
        InvalidInputError: ``AUTOTUNE_BACKEND`` names no backend.
    """
    from autotune.measure import backends

    backend = backends.get()
    backend.init()
    return backend


def device_count() -> int:
    """Number of CUDA devices (raises :class:`GPUUnavailableError` where there is no driver)."""
    return cuda_driver().device_count()


def _version(code: int) -> str:
    return f"{code // 1000}.{code % 1000 // 10}"


def query_device(ordinal: int = 0) -> DeviceInfo:
    """Read the identity and limits of CUDA device ``ordinal``.

    Raises:
        GPUUnavailableError: no driver, no backend installed, or no device at all.
        InvalidInputError: ``ordinal`` is no ordinal (an integer >= 0), said before any backend is
            asked (``plan --device -1`` named the missing backend), or is not in ``0 .. count-1``.
    """
    from autotune.kernel.arguments import check_ordinal_arg

    check_ordinal_arg(ordinal, "--device")
    drv = cuda_driver()
    count = drv.device_count()
    if count == 0:
        raise GPUUnavailableError("no CUDA device is present")
    if not 0 <= ordinal < count:
        raise InvalidInputError(f"--device {ordinal} is out of range; allowed: 0..{count - 1}")
    return _describe(drv, ordinal)


def current_device() -> DeviceInfo:
    """Identity of the device of the current CUDA context (the one a GPU array lives on).

    Raises:
        GPUUnavailableError: no current context (create one, e.g. a PyTorch or CuPy array on the GPU).
    """
    bus = cuda_driver().current_pci_bus_id()
    if bus is None:
        raise GPUUnavailableError("no current CUDA context; create one first (e.g. a PyTorch or CuPy array on "
                                  "the GPU, or import pycuda.autoinit)")
    return _describe_bus(bus)


@functools.cache
def _cu_ctx_get_current():
    import ctypes

    try:
        fn = ctypes.CDLL("libcuda.so.1").cuCtxGetCurrent
    except OSError as exc:
        raise no_driver(exc) from None
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    return fn


def current_context_handle() -> int:
    """The CUcontext handle current on this thread (0 if none), from the driver via ctypes.

    Modules are loaded per context: a kernel compiled in PyCUDA's own context cannot run
    in the primary context CuPy and PyTorch use, so launch caches are keyed by this.
    """
    import ctypes

    ctx = ctypes.c_void_p()
    if _cu_ctx_get_current()(ctypes.byref(ctx)) != 0:
        return 0
    return ctx.value or 0


@functools.cache
def _describe_bus(bus: str) -> DeviceInfo:
    """DeviceInfo of the device at PCI ``bus`` (cached: identity and limits do not change)."""
    drv = cuda_driver()
    ordinal = next(i for i in range(drv.device_count()) if drv.device_properties(i).pci_bus_id == bus)
    return _describe(drv, ordinal)


def _describe(drv, ordinal: int) -> DeviceInfo:
    p = drv.device_properties(ordinal)
    return DeviceInfo(
        name=p.name,
        compute_capability=f"{p.major}.{p.minor}",
        sm_count=p.sm_count,
        total_memory=p.total_memory,
        driver_version=_version(drv.driver_version()),
        cuda_version=drv.cuda_version(),
        max_threads_per_block=p.max_threads_per_block,
        max_shared_per_block=p.max_shared_per_block,
        ordinal=ordinal,
        pci_bus_id=p.pci_bus_id,
        l2_bytes=p.l2_bytes,
        max_threads_per_sm=p.max_threads_per_sm,
        max_shared_optin=p.max_shared_optin,
        uuid=nvml.device_uuid(p.pci_bus_id),
    )


@contextlib.contextmanager
def open_device(ordinal: int = 0) -> Iterator[DeviceInfo]:
    """Make device ``ordinal``'s primary context current for the ``with`` block."""
    info = query_device(ordinal)
    with cuda_driver().primary_context(ordinal):
        yield info


@functools.cache
def nvcc_version(nvcc: str = "nvcc") -> str:
    """Release of the nvcc on PATH, e.g. ``"13.0.88"`` (part of every stored result's key).

    Raises:
        GPUUnavailableError: nvcc is not on PATH (nothing can be compiled).
    """
    path = shutil.which(nvcc)
    if path is None:
        raise GPUUnavailableError(f"{nvcc} is not on PATH; the CUDA toolkit is needed to compile kernels")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return match.group(1) if match else out.strip().splitlines()[-1]
