"""The ``cuda-bindings`` backend: NVIDIA's ``cuda.bindings.driver`` (the CUDA driver API, a wheel).

Every call is the driver API's own (``cuMemAlloc``, ``cuLaunchKernel``...) through the
``cuda-bindings`` package, which ships as wheels (no CUDA headers, no compiler needed to
install it): ``pip install 'cuda-autotune[cuda]'``. A launch is made ready once
(:meth:`BindingsFunction.launcher`): the arguments packed into one buffer with a ``void **``
into it (as :mod:`autotune.runtime.packed` does), so a call is one ``cuLaunchKernel``.

Its results are ``(CUresult, value...)`` tuples; a result other than ``CUDA_SUCCESS`` becomes
:class:`~autotune.measure.backends.base.CudaError` (or its launch and memory subclasses),
``"<call> failed: <cuGetErrorString's text>"``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import numpy as np

from autotune.errors import GPUUnavailableError, no_driver
from autotune.measure.packing import PackedArguments
from autotune.measure.backends.base import (EVENT_BLOCKING_SYNC, SIGNATURE_CODES, Backend, CudaError, CudaLaunchError,
                                            CudaMemoryError, DeviceAllocation, DeviceProperties, Event, Function,
                                            Module)

__all__ = ["BindingsBackend", "LAUNCH_ERRORS", "OUT_OF_MEMORY"]

LAUNCH_ERRORS = frozenset({701, 702, 703, 719})
"""``CUresult`` numbers of a failed launch: out of resources, timeout, incompatible texturing,
launch failed (:class:`~autotune.measure.backends.base.CudaLaunchError`)."""
OUT_OF_MEMORY = 2
"""``CUDA_ERROR_OUT_OF_MEMORY``."""


class BindingsBackend(Backend):
    """The backend over ``cuda.bindings.driver``.

    Args:
        driver: the ``cuda.bindings.driver`` module (default: imported at the first call); the
            tests give a fake one.
    """

    name = "cuda-bindings"

    def __init__(self, driver=None) -> None:
        self._cu = driver
        self._ready = False
        self._stream = None

    # -- calls ----------------------------------------------------------------------------------

    @property
    def cu(self):
        """The initialised driver module (``cuInit`` once).

        Raises:
            GPUUnavailableError: cuda-bindings is not installed, libcuda cannot be loaded, or
                ``cuInit`` fails.
        """
        if not self._ready:
            if self._cu is None:
                try:
                    from cuda.bindings import driver
                except ImportError as exc:
                    raise GPUUnavailableError(f"cuda-bindings is not installed ({exc}); install the GPU extra: "
                                              "pip install 'cuda-autotune[cuda]'") from None
                self._cu = driver
            try:
                status = self._cu.cuInit(0)[0]
            except RuntimeError as exc:  # "Failed to dlopen libcuda.so.1": no driver on this machine
                raise no_driver(exc) from None
            if int(status) != 0:
                raise GPUUnavailableError(f"the CUDA driver could not be initialised: cuInit failed: "
                                          f"{self._text(status)}")
            self._stream = self._cu.CUstream(0)
            self._ready = True
        return self._cu

    def _text(self, status) -> str:
        try:
            found, text = self._cu.cuGetErrorString(status)
            if int(found) == 0 and text:
                return text.decode() if isinstance(text, bytes) else str(text)
        except Exception:  # noqa: BLE001  (a message about an error must not fail)
            pass
        return f"CUDA error {int(status)}"

    def error(self, call: str, status) -> CudaError:
        """The exception for ``call``'s result ``status`` (see the module doc)."""
        code = int(status)
        kind = CudaLaunchError if code in LAUNCH_ERRORS else CudaMemoryError if code == OUT_OF_MEMORY else CudaError
        return kind(f"{call} failed: {self._text(status)}", code)

    def call(self, name: str, *args):
        """``cu.<name>(*args)``: its value (``None``, one value, or a tuple of them).

        Raises:
            CudaError: the driver refused the call.
        """
        out = getattr(self.cu, name)(*args)
        if int(out[0]) != 0:
            raise self.error(name, out[0])
        return None if len(out) == 1 else out[1] if len(out) == 2 else out[1:]

    def init(self) -> None:
        self.cu  # noqa: B018  (the property initialises)

    @property
    def stream(self):
        """The default stream's ``CUstream`` (the driver initialised first)."""
        self.cu  # noqa: B018
        return self._stream

    # -- the driver and its devices -------------------------------------------------------------

    def driver_version(self) -> int:
        return int(self.call("cuDriverGetVersion"))

    def cuda_version(self) -> str:
        code = getattr(self.cu, "CUDA_VERSION", None)
        if code is None:
            from cuda import bindings

            return ".".join(bindings.__version__.split(".")[:2])
        return f"{int(code) // 1000}.{int(code) % 1000 // 10}"

    def device_count(self) -> int:
        return int(self.call("cuDeviceGetCount"))

    def _device(self, ordinal: int):
        return self.call("cuDeviceGet", ordinal)

    def _bus_id(self, device) -> str:
        return _text(self.call("cuDeviceGetPCIBusId", 64, device))

    def device_properties(self, ordinal: int) -> DeviceProperties:
        cu, dev = self.cu, self._device(ordinal)
        A = cu.CUdevice_attribute

        def attribute(name: str) -> int:
            return int(self.call("cuDeviceGetAttribute", getattr(A, f"CU_DEVICE_ATTRIBUTE_{name}"), dev))

        return DeviceProperties(
            name=_text(self.call("cuDeviceGetName", 256, dev)),
            major=attribute("COMPUTE_CAPABILITY_MAJOR"), minor=attribute("COMPUTE_CAPABILITY_MINOR"),
            total_memory=int(self.call("cuDeviceTotalMem", dev)), pci_bus_id=self._bus_id(dev),
            sm_count=attribute("MULTIPROCESSOR_COUNT"), max_threads_per_block=attribute("MAX_THREADS_PER_BLOCK"),
            max_shared_per_block=attribute("MAX_SHARED_MEMORY_PER_BLOCK"),
            max_shared_optin=attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"), l2_bytes=attribute("L2_CACHE_SIZE"),
            max_threads_per_sm=attribute("MAX_THREADS_PER_MULTIPROCESSOR"))

    def current_pci_bus_id(self) -> str | None:
        if not int(self.call("cuCtxGetCurrent")):
            return None
        return self._bus_id(self.call("cuCtxGetDevice"))

    def push_primary_context(self, ordinal: int) -> None:
        dev = self._device(ordinal)
        ctx = self.call("cuDevicePrimaryCtxRetain", dev)
        self.call("cuCtxPushCurrent", ctx)

    def pop_primary_context(self, ordinal: int) -> None:
        self.call("cuCtxPopCurrent")
        self.call("cuDevicePrimaryCtxRelease", self._device(ordinal))

    def synchronize(self) -> None:
        self.call("cuCtxSynchronize")

    # -- memory ---------------------------------------------------------------------------------

    def mem_alloc(self, nbytes: int) -> DeviceAllocation:
        buf = DeviceAllocation(int(self.call("cuMemAlloc", nbytes)))
        buf._free = self._free
        return buf

    def _free(self, address: int) -> None:
        self.call("cuMemFree", address)

    def mem_get_info(self) -> tuple[int, int]:
        free, total = self.call("cuMemGetInfo")
        return int(free), int(total)

    def pagelocked_empty(self, count: int, dtype) -> np.ndarray:
        dt = np.dtype(dtype)
        nbytes = max(count * dt.itemsize, 1)
        address = int(self.call("cuMemHostAlloc", nbytes, 0))
        raw = (ctypes.c_uint8 * nbytes).from_address(address)
        raw.release = _HostMemory(self, address)  # freed with the last array viewing it
        return np.frombuffer(raw, dtype=np.uint8)[:count * dt.itemsize].view(dt)

    def memset_d8(self, address: int, value: int, count: int) -> None:
        self.call("cuMemsetD8", int(address), value, count)

    def memcpy_htod(self, address: int, host: np.ndarray) -> None:
        data = np.ascontiguousarray(host)
        self.call("cuMemcpyHtoD", int(address), data.ctypes.data, data.nbytes)

    def memcpy_dtoh(self, host: np.ndarray, address: int) -> None:
        if not host.flags.c_contiguous:
            raise ValueError("memcpy_dtoh needs a C-contiguous host array")
        self.call("cuMemcpyDtoH", host.ctypes.data, int(address), host.nbytes)

    def memcpy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        self.call("cuMemcpyDtoD", int(dst), int(src), nbytes)

    def memcpy_dtod_async(self, dst: int, src: int, nbytes: int) -> None:
        self.call("cuMemcpyDtoDAsync", int(dst), int(src), nbytes, self.stream)

    def memset_d8_async(self, address: int, value: int, count: int) -> None:
        self.call("cuMemsetD8Async", int(address), value, count, self.stream)

    def memset_d16_async(self, address: int, value: int, count: int) -> None:
        self.call("cuMemsetD16Async", int(address), value, count, self.stream)

    def memset_d32_async(self, address: int, value: int, count: int) -> None:
        self.call("cuMemsetD32Async", int(address), value, count, self.stream)

    def memset_d2d32_async(self, address: int, pitch: int, value: int, width: int, height: int) -> None:
        self.call("cuMemsetD2D32Async", int(address), pitch, value, width, height, self.stream)

    # -- events and modules ---------------------------------------------------------------------

    def event(self) -> BindingsEvent:
        return BindingsEvent(self, self.call("cuEventCreate", EVENT_BLOCKING_SYNC))

    def load_module(self, image: bytes) -> BindingsModule:
        return BindingsModule(self, self.call("cuModuleLoadData", image), image)


def _text(raw) -> str:
    """A name the driver wrote into a buffer, up to its first NUL."""
    return raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw)


class _HostMemory:
    """Page-locked host memory, freed (``cuMemFreeHost``) with the object."""

    def __init__(self, backend: BindingsBackend, address: int) -> None:
        self.backend, self.address = backend, address

    def __del__(self) -> None:
        try:
            self.backend._cu.cuMemFreeHost(self.address)
        except Exception:  # noqa: BLE001  (at exit the driver may be gone)
            pass


class BindingsEvent(Event):
    """A ``CUevent`` (destroyed with the object)."""

    def __init__(self, backend: BindingsBackend, handle) -> None:
        self.backend, self.handle = backend, handle

    def record(self) -> None:
        self.backend.call("cuEventRecord", self.handle, self.backend.stream)

    def synchronize(self) -> None:
        self.backend.call("cuEventSynchronize", self.handle)

    def time_since(self, start: Event) -> float:
        return float(self.backend.call("cuEventElapsedTime", start.handle, self.handle))

    def __del__(self) -> None:
        try:
            self.backend._cu.cuEventDestroy(self.handle)
        except Exception:  # noqa: BLE001  (at exit the driver may be gone)
            pass


class BindingsModule(Module):
    """A ``CUmodule`` (kept loaded while the object lives; ``image``: the cubin it came from)."""

    def __init__(self, backend: BindingsBackend, handle, image: bytes) -> None:
        self.backend, self.handle, self.image = backend, handle, image

    def function(self, name: str, signature: str) -> BindingsFunction:
        return BindingsFunction(self, self.backend.call("cuModuleGetFunction", self.handle, name.encode()),
                                name, signature)


class BindingsFunction(Function):
    """A ``CUfunction`` and its signature (``module`` keeps the module loaded)."""

    def __init__(self, module: BindingsModule, handle, name: str, signature: str) -> None:
        unknown = sorted(set(signature) - set(SIGNATURE_CODES))
        if unknown:
            raise ValueError(f"signature {signature!r} has letters {unknown}; allowed: {''.join(SIGNATURE_CODES)}")
        self.module, self.backend, self.handle, self.name, self.signature = module, module.backend, handle, name, signature
        self.registers = self._attribute("NUM_REGS")
        self.static_shared = self._attribute("SHARED_SIZE_BYTES")
        self.local_bytes = self._attribute("LOCAL_SIZE_BYTES")
        self.max_threads_per_block = self._attribute("MAX_THREADS_PER_BLOCK")

    def _attribute(self, name: str) -> int:
        which = getattr(self.backend.cu.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        return int(self.backend.call("cuFuncGetAttribute", which, self.handle))

    def max_dynamic_shared(self) -> int:
        return self._attribute("MAX_DYNAMIC_SHARED_SIZE_BYTES")

    def set_max_dynamic_shared(self, nbytes: int) -> None:
        which = self.backend.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self.backend.call("cuFuncSetAttribute", self.handle, which, nbytes)

    def active_blocks_per_sm(self, threads: int, dynamic_shared: int = 0) -> int:
        return int(self.backend.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", self.handle, threads,
                                     dynamic_shared))

    def launcher(self, grid: Sequence[int], block: Sequence[int], args: Sequence, shared: int = 0) -> Callable[[], None]:
        if len(args) != len(self.signature):
            raise ValueError(f"{self.name} takes {len(self.signature)} arguments ({self.signature}); got {len(args)}")
        buf, argv = pack_arguments(self.signature, args)
        backend, cu = self.backend, self.backend.cu
        run, fn, stream, success = cu.cuLaunchKernel, self.handle, backend.stream, cu.CUresult.CUDA_SUCCESS
        (gx, gy, gz), (bx, by, bz), at = tuple(grid), tuple(block), ctypes.addressof(argv)

        def go(_keep=(buf, argv, self.module)) -> None:
            status = run(fn, gx, gy, gz, bx, by, bz, shared, stream, at, 0)[0]
            if status != success:
                raise backend.error("cuLaunchKernel", status)
        return go


def pack_arguments(signature: str, args: Sequence) -> tuple[ctypes.Array, ctypes.Array]:
    """The values of ``args`` (NumPy scalars or numbers, one per letter of ``signature``) packed
    each at its alignment into one 8-byte aligned buffer, and the ``void **`` array of their
    addresses that ``cuLaunchKernel`` reads: ``(buffer, argv)``
    (:class:`~autotune.measure.packing.PackedArguments`)."""
    packed = PackedArguments([(i, SIGNATURE_CODES[letter]) for i, letter in enumerate(signature)])
    for i, value in enumerate(args[:len(signature)]):
        packed.put(i, value.item() if isinstance(value, np.generic) else value)
    return packed.buffer, packed.argv
