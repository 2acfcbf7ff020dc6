"""A fake ``cuda.bindings.driver`` for the CPU tests of the ``cuda-bindings`` backend.

:class:`FakeCu` answers the driver API calls that
:class:`autotune.measure.backends.bindings.BindingsBackend` makes, as ``cuda.bindings`` does:
each returns a tuple whose first item is a ``CUresult``. Device memory is a
:class:`fakes.FakeDriver`'s flat byte array (an address is an offset into it); host memory is
real (the calls read and write it at the addresses given, with ``ctypes``). ``cuLaunchKernel``
reads the ``void **`` argument array the backend packed, decodes each argument by the kernel's
signature and runs the kernel's NumPy model: the comparison kernels of
``autotune/measure/device_compare.cu`` (from :mod:`fakes`) and any given in ``kernels``
(``name -> (signature, run(memory_view, grid, block, args))``). Events read a clock that each
launch advances by ``launch_ms``.
"""

from __future__ import annotations

import ctypes
import enum
import struct
from collections.abc import Iterator

import numpy as np

from autotune.measure.backends.base import SIGNATURE_CODES
from fakes import FakeDriver, _FakeCompare

COMPARE_SIGNATURES = {"not_byte": "PQIP", **{f"exact_u{n}": "PPQP" for n in (1, 2, 4, 8)}}


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NO_DEVICE = 100
    CUDA_ERROR_INVALID_CONTEXT = 201
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_ILLEGAL_ADDRESS = 700
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
    CUDA_ERROR_LAUNCH_FAILED = 719


TEXTS = {0: b"no error", 1: b"invalid argument", 2: b"out of memory", 100: b"no CUDA-capable device is detected",
         201: b"invalid device context", 500: b"named symbol not found",
         700: b"an illegal memory access was encountered", 701: b"too many resources requested for launch",
         719: b"unspecified launch failure"}


class Handle:
    """A driver handle (``CUdevice``, ``CUcontext``, ``CUstream``...): ``int()`` gives its value."""

    def __init__(self, value: int = 0) -> None:
        self.value = int(value)

    def __int__(self) -> int:
        return self.value


class CUdevice_attribute(enum.IntEnum):  # noqa: N801  (the driver's name)
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


class CUfunction_attribute(enum.IntEnum):  # noqa: N801
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


H100 = {1: 1024, 8: 48 * 1024, 16: 132, 38: 50 * 2**20, 39: 2048, 75: 9, 76: 0, 97: 227 * 1024}

OK = CUresult.CUDA_SUCCESS


class FakeCu:
    """``cuda.bindings.driver`` over a :class:`fakes.FakeDriver` (see the module doc).

    Attributes:
        calls: the name of every call made, in order. ``launched``: the kernels launched.
        refuse: ``{call name: CUresult}`` to return instead of success (a planted failure).
        contexts: the stack of current contexts (device ordinals).
    """

    CUresult, CUdevice_attribute, CUfunction_attribute = CUresult, CUdevice_attribute, CUfunction_attribute
    CUDA_VERSION = 13000

    def __init__(self, memory: int = 1 << 24, devices: int = 1, kernels: dict | None = None,
                 launch_ms: float = 0.01, dlopen_fails: bool = False) -> None:
        self.drv = FakeDriver(memory)
        self.devices, self.kernels, self.launch_ms, self.dlopen_fails = devices, dict(kernels or {}), launch_ms, dlopen_fails
        self.calls: list[str] = []
        self.launched: list[tuple[str, tuple, tuple, int, tuple]] = []
        self.refuse: dict[str, CUresult] = {}
        self.contexts: list[int] = []
        self.now = 0.0
        self.events: dict[int, float | None] = {}
        self.event_flags: list[int] = []  # the flags of each cuEventCreate
        self.functions: dict[int, str] = {}
        self.dynamic: dict[int, int] = {}
        self.freed: list[int] = []

    def __getattribute__(self, name: str):
        value = object.__getattribute__(self, name)
        if name.startswith("cu") and callable(value):
            calls, refuse = object.__getattribute__(self, "calls"), object.__getattribute__(self, "refuse")

            def call(*args):
                calls.append(name)
                if name in refuse:
                    return (refuse[name],) + ((Handle(0),) if name in ("cuMemAlloc",) else ())
                return value(*args)
            return call
        return value

    # handles
    def CUstream(self, value=0):  # noqa: N802
        return Handle(value)

    def cuGetErrorString(self, status):
        return OK, TEXTS.get(int(status), b"unknown error")

    def cuInit(self, flags):
        if self.dlopen_fails:
            raise RuntimeError("Failed to dlopen libcuda.so.1")
        return (OK,)

    def cuDriverGetVersion(self):
        return OK, 13000

    def cuDeviceGetCount(self):
        return OK, self.devices

    def cuDeviceGet(self, ordinal):
        if not 0 <= ordinal < self.devices:
            return CUresult.CUDA_ERROR_INVALID_VALUE, Handle(0)
        return OK, Handle(ordinal)

    def cuDeviceGetName(self, length, dev):
        return OK, b"NVIDIA H100 80GB HBM3".ljust(length, b"\0")

    def cuDeviceTotalMem(self, dev):
        return OK, 85_000_000_000

    def cuDeviceGetPCIBusId(self, length, dev):
        return OK, f"0000:{0x1A + int(dev):02X}:00.0".encode().ljust(length, b"\0")

    def cuDeviceGetAttribute(self, attribute, dev):
        return OK, H100[int(attribute)]

    def cuCtxGetCurrent(self):
        return OK, Handle(100 + self.contexts[-1] if self.contexts else 0)

    def cuCtxGetDevice(self):
        if not self.contexts:
            return CUresult.CUDA_ERROR_INVALID_CONTEXT, Handle(0)
        return OK, Handle(self.contexts[-1])

    def cuDevicePrimaryCtxRetain(self, dev):
        return OK, Handle(100 + int(dev))

    def cuCtxPushCurrent(self, ctx):
        self.contexts.append(int(ctx) - 100)
        return (OK,)

    def cuCtxPopCurrent(self):
        return OK, Handle(100 + self.contexts.pop())

    def cuDevicePrimaryCtxRelease(self, dev):
        return (OK,)

    def cuCtxSynchronize(self):
        return (OK,)

    # memory
    def cuMemAlloc(self, nbytes):
        try:
            return OK, Handle(int(self.drv.mem_alloc(nbytes)))
        except FakeDriver.MemoryError:
            return CUresult.CUDA_ERROR_OUT_OF_MEMORY, Handle(0)

    def cuMemFree(self, address):
        self.freed.append(int(address))
        return (OK,)

    def cuMemGetInfo(self):
        return OK, self.drv.memory.size - self.drv.top, self.drv.memory.size

    def cuMemHostAlloc(self, nbytes, flags):
        buf = ctypes.create_string_buffer(nbytes)
        self.__dict__.setdefault("_host", {})[ctypes.addressof(buf)] = buf
        return OK, ctypes.addressof(buf)

    def cuMemFreeHost(self, address):
        self.__dict__.get("_host", {}).pop(int(address), None)
        return (OK,)

    def cuMemsetD8(self, address, value, count):
        self.drv.memset_d8(int(address), value, count)
        return (OK,)

    def cuMemcpyHtoD(self, dst, host, nbytes):
        self.drv.memory[int(dst):int(dst) + nbytes] = np.frombuffer(ctypes.string_at(host, nbytes), np.uint8)
        self.drv.copies["htod"] += nbytes
        return (OK,)

    def cuMemcpyDtoH(self, host, src, nbytes):
        data = np.ascontiguousarray(self.drv.memory[int(src):int(src) + nbytes])
        ctypes.memmove(host, data.ctypes.data, nbytes)
        self.drv.copies["dtoh"] += nbytes
        return (OK,)

    def cuMemcpyDtoD(self, dst, src, nbytes):
        self.drv.memcpy_dtod(int(dst), int(src), nbytes)
        return (OK,)

    def cuMemcpyDtoDAsync(self, dst, src, nbytes, stream):
        self.now += self.launch_ms
        return self.cuMemcpyDtoD(dst, src, nbytes)

    def cuMemsetD8Async(self, address, value, count, stream):
        self.drv.memset_d8_async(int(address), value, count)
        return (OK,)

    def cuMemsetD16Async(self, address, value, count, stream):
        self.drv.memset_d16_async(int(address), value, count)
        return (OK,)

    def cuMemsetD32Async(self, address, value, count, stream):
        self.drv.memset_d32_async(int(address), value, count)
        return (OK,)

    def cuMemsetD2D32Async(self, address, pitch, value, width, height, stream):
        self.drv.memset_d2d32_async(int(address), pitch, value, width, height)
        return (OK,)

    # events
    def cuEventCreate(self, flags):
        self.event_flags.append(int(flags))
        handle = Handle(len(self.events) + 1)
        self.events[handle.value] = None
        return OK, handle

    def cuEventRecord(self, event, stream):
        self.events[int(event)] = self.now
        return (OK,)

    def cuEventSynchronize(self, event):
        return (OK,)

    def cuEventElapsedTime(self, start, end):
        return OK, self.events[int(end)] - self.events[int(start)]

    def cuEventDestroy(self, event):
        return (OK,)

    # modules and launches
    def cuModuleLoadData(self, image):
        return OK, Handle(1)

    def cuModuleGetFunction(self, module, name):
        name = name.decode()
        if name not in self.kernels and name not in COMPARE_SIGNATURES and not name.startswith("tolerance_"):
            return CUresult.CUDA_ERROR_NOT_FOUND, Handle(0)
        handle = Handle(1000 + len(self.functions))
        self.functions[handle.value] = name
        self.dynamic[handle.value] = 48 * 1024
        return OK, handle

    def cuFuncGetAttribute(self, attribute, function):
        values = {0: 1024, 1: 0, 3: 0, 4: 32, 8: self.dynamic[int(function)]}
        return OK, values[int(attribute)]

    def cuFuncSetAttribute(self, function, attribute, value):
        if value > H100[97]:
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        self.dynamic[int(function)] = value
        return (OK,)

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, function, threads, dynamic):
        return OK, min(32, 2048 // threads)

    def signature(self, name: str) -> str:
        if name in self.kernels:
            return self.kernels[name][0]
        return COMPARE_SIGNATURES.get(name, "PPQddP")

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, argv, extra):
        name = self.functions[int(function)]
        signature = self.signature(name)
        pointers = (ctypes.c_void_p * len(signature)).from_address(argv)
        args = tuple(struct.unpack(SIGNATURE_CODES[c], ctypes.string_at(p, struct.calcsize(SIGNATURE_CODES[c])))[0]
                     for c, p in zip(signature, pointers))
        self.launched.append((name, (gx, gy, gz), (bx, by, bz), shared, args))
        if gx * gy * gz == 0 or bx * by * bz > 1024:
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        if name in self.kernels:
            self.kernels[name][1](self.drv, (gx, gy, gz), (bx, by, bz), args)
        else:
            _FakeCompare(self.drv, name, signature).launch((gx, gy, gz), (bx, by, bz), args)
        self.now += self.launch_ms
        return (OK,)


def chosen_bindings(monkeypatch) -> Iterator[FakeCu]:
    """The ``cuda-bindings`` backend over a new :class:`FakeCu`, chosen (``AUTOTUNE_BACKEND``) and
    made, with the device's bus description cleared before and after: a fixture's body
    (``yield from chosen_bindings(monkeypatch)``) yielding the FakeCu."""
    from autotune.measure import backends
    from autotune.measure import device
    from autotune.measure.backends.bindings import BindingsBackend

    cu = FakeCu()
    monkeypatch.setattr(backends, "_made", {"cuda-bindings": BindingsBackend(cu)})
    monkeypatch.setenv(backends.ENV, "cuda-bindings")
    device._describe_bus.cache_clear()
    yield cu
    device._describe_bus.cache_clear()
