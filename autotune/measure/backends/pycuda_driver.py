"""The ``pycuda`` backend: PyCUDA's ``pycuda.driver``, for installations that have it.

PyCUDA builds from source against the CUDA toolkit's headers (``pip install
'cuda-autotune[pycuda]'``); the default backend, ``cuda-bindings``, installs from wheels. This
one is chosen where it is asked for (``AUTOTUNE_BACKEND=pycuda``, ``autotune --backend
pycuda``), or where it is the only one installed. Its errors are PyCUDA's own
(``pycuda.driver.Error``, ``LaunchError``, ``MemoryError``), whose messages already read
``"<call> failed: <the driver's text>"``.

PyCUDA does not expose a function's ``CUfunction`` handle, so the occupancy query loads the
same cubin once more through ``libcuda`` (:func:`autotune.measure.occupancy.active_blocks`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from autotune.errors import GPUUnavailableError
from autotune.measure.backends.base import Backend, CudaError, DeviceProperties, Event, Function, Module

__all__ = ["PyCudaBackend"]


class PyCudaBackend(Backend):
    """The backend over ``pycuda.driver`` (imported and initialised at the first call)."""

    name = "pycuda"

    def __init__(self) -> None:
        self._drv = None

    @property
    def drv(self):
        """``pycuda.driver``, initialised.

        Raises:
            GPUUnavailableError: PyCUDA is not installed, or the driver cannot be initialised.
        """
        if self._drv is None:
            try:
                import pycuda.driver as drv
            except ImportError as exc:
                raise GPUUnavailableError(f"PyCUDA is not installed ({exc}); install it: "
                                          "pip install 'cuda-autotune[pycuda]'") from None
            try:
                drv.init()
            except drv.Error as exc:
                raise GPUUnavailableError(f"the CUDA driver could not be initialised: {exc}") from None
            self._drv = drv
            self.Error, self.LaunchError, self.MemoryError = drv.Error, drv.LaunchError, drv.MemoryError
        return self._drv

    def init(self) -> None:
        self.drv  # noqa: B018  (the property initialises)

    def driver_version(self) -> int:
        return self.drv.get_driver_version()

    def cuda_version(self) -> str:
        return ".".join(str(p) for p in self.drv.get_version()[:2])

    def device_count(self) -> int:
        return self.drv.Device.count()

    def device_properties(self, ordinal: int) -> DeviceProperties:
        drv = self.drv
        dev, attr = drv.Device(ordinal), drv.device_attribute
        major, minor = dev.compute_capability()
        return DeviceProperties(
            name=dev.name(), major=major, minor=minor, total_memory=dev.total_memory(), pci_bus_id=dev.pci_bus_id(),
            sm_count=dev.get_attribute(attr.MULTIPROCESSOR_COUNT),
            max_threads_per_block=dev.get_attribute(attr.MAX_THREADS_PER_BLOCK),
            max_shared_per_block=dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK),
            max_shared_optin=dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            l2_bytes=dev.get_attribute(attr.L2_CACHE_SIZE),
            max_threads_per_sm=dev.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR))

    def current_pci_bus_id(self) -> str | None:
        try:
            return self.drv.Context.get_device().pci_bus_id()
        except self.drv.Error:
            return None

    def push_primary_context(self, ordinal: int) -> None:
        self.drv.Device(ordinal).retain_primary_context().push()

    def pop_primary_context(self, ordinal: int) -> None:
        self.drv.Context.pop()

    def synchronize(self) -> None:
        self.drv.Context.synchronize()

    def mem_alloc(self, nbytes: int):
        return self.drv.mem_alloc(nbytes)

    def mem_get_info(self) -> tuple[int, int]:
        free, total = self.drv.mem_get_info()
        return int(free), int(total)

    def pagelocked_empty(self, count: int, dtype) -> np.ndarray:
        return self.drv.pagelocked_empty(count, dtype)

    def memset_d8(self, address: int, value: int, count: int) -> None:
        self.drv.memset_d8(int(address), value, count)

    def memcpy_htod(self, address: int, host: np.ndarray) -> None:
        self.drv.memcpy_htod(int(address), np.ascontiguousarray(host))

    def memcpy_dtoh(self, host: np.ndarray, address: int) -> None:
        self.drv.memcpy_dtoh(host, int(address))

    def memcpy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        self.drv.memcpy_dtod(int(dst), int(src), nbytes)

    def memcpy_dtod_async(self, dst: int, src: int, nbytes: int) -> None:
        self.drv.memcpy_dtod_async(int(dst), int(src), nbytes)

    def memset_d8_async(self, address: int, value: int, count: int) -> None:
        self.drv.memset_d8_async(int(address), value, count)

    def memset_d16_async(self, address: int, value: int, count: int) -> None:
        self.drv.memset_d16_async(int(address), value, count)

    def memset_d32_async(self, address: int, value: int, count: int) -> None:
        self.drv.memset_d32_async(int(address), value, count)

    def memset_d2d32_async(self, address: int, pitch: int, value: int, width: int, height: int) -> None:
        self.drv.memset_d2d32_async(int(address), pitch, value, width, height)

    def event(self) -> Event:
        # PyCUDA's Event has record(), synchronize() and time_since()
        return self.drv.Event(self.drv.event_flags.BLOCKING_SYNC)

    def load_module(self, image: bytes) -> Module:
        return PyCudaModule(self, self.drv.module_from_buffer(image), image)


class PyCudaModule(Module):
    """A ``pycuda.driver.Module`` and the cubin it came from (for the occupancy query)."""

    def __init__(self, backend: PyCudaBackend, module, image: bytes) -> None:
        self.backend, self.module, self.image = backend, module, image

    def function(self, name: str, signature: str) -> PyCudaFunction:
        return PyCudaFunction(self, name, signature)


class PyCudaFunction(Function):
    """A prepared ``pycuda.driver.Function``."""

    def __init__(self, module: PyCudaModule, name: str, signature: str) -> None:
        fn = module.module.get_function(name)
        fn.prepare(signature)
        self.module, self.fn, self.name = module, fn, name
        self.registers, self.static_shared = fn.num_regs, fn.shared_size_bytes
        self.local_bytes, self.max_threads_per_block = fn.local_size_bytes, fn.max_threads_per_block

    def max_dynamic_shared(self) -> int:
        return self.fn.get_attribute(self.module.backend.drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES)

    def set_max_dynamic_shared(self, nbytes: int) -> None:
        drv = self.module.backend.drv
        try:
            self.fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
        except drv.Error as exc:
            raise CudaError(str(exc)) from None

    def active_blocks_per_sm(self, threads: int, dynamic_shared: int = 0) -> int:
        from autotune.measure.occupancy import active_blocks

        return active_blocks(self.module.image, self.name, threads, dynamic_shared)

    def launcher(self, grid: Sequence[int], block: Sequence[int], args: Sequence, shared: int = 0) -> Callable[[], None]:
        call, grid, block, args = self.fn.prepared_async_call, tuple(grid), tuple(block), tuple(args)
        return lambda: call(grid, block, None, *args, shared_size=shared)
