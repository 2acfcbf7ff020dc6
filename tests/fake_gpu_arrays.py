"""A fake PyTorch (tensors with ``data_ptr()``, ``shape``, ``dtype``, ``is_contiguous()``,
``get_device()``) and a fake CUDA driver (``libcuda``) recording launches and memsets, so the
launcher's logic runs without a GPU: :func:`install` puts both in place of the real ones, and
:func:`installed` does it for one test, the launchers cleared before and after."""

from __future__ import annotations

import contextlib
import ctypes
import sys
import types
from collections.abc import Iterator
from pathlib import Path

from autotune.kernel.model import Array
from autotune.runtime.compiled import CTYPES

HISTOGRAM = Path(__file__).resolve().parents[1] / "examples/histogram/histogram.toml"
"""The histogram example's kernel file: the kernel the launcher's tests launch."""


class FakeDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"

    __repr__ = __str__


DTYPES = {name: FakeDtype(name) for name in ("float32", "float64", "float16", "int32", "int64", "uint8", "uint32",
                                             "bfloat16")}


class Size(tuple):
    pass


class Tensor:
    """A CUDA tensor of ``shape`` at address ``ptr`` on device ``device`` (-1: on the CPU)."""

    def __init__(self, shape, dtype="float32", ptr=0x10000, device=0, contiguous=True) -> None:
        self.shape, self.dtype, self.ptr = Size(shape), DTYPES[dtype], ptr
        self._device, self._contiguous = device, contiguous

    def data_ptr(self) -> int:
        return self.ptr

    def get_device(self) -> int:
        return self._device

    def is_contiguous(self) -> bool:
        return self._contiguous

    def stride(self):
        return (1,) * len(self.shape)

    @property
    def is_cuda(self) -> bool:
        return self._device >= 0

    @property
    def device(self) -> str:
        return f"cuda:{self._device}" if self._device >= 0 else "cpu"


Tensor.__module__ = "torch"


def fake_torch(streams: dict[int, int]) -> types.ModuleType:
    """A module named torch: ``Tensor``, ``cuda.device`` (a no-op) and the raw stream accessor
    answering ``streams[device]``."""
    torch = types.ModuleType("torch")
    torch.Tensor = Tensor
    torch.cuda = types.SimpleNamespace(device=lambda d: contextlib.nullcontext(),
                                       current_stream=lambda i: types.SimpleNamespace(cuda_stream=streams[i]))
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: streams[i])
    return torch


class FakeLibcuda:
    """Records every ``cuLaunchKernel`` (argument values read back through ``argv``) and memset,
    in order, in :attr:`calls`. A GPU clock (:attr:`clock_ms`) advances by each launch's time
    (:meth:`launch_ms`: 1 µs plus 1 ns per thread of its grid), and CUDA events read it. A host
    clock (:meth:`host_ns`, installed as the recording's) advances :attr:`host_step_ns` a reading,
    so whether a sample's host side counts as stalled never depends on the machine's speed."""

    def __init__(self, kernel, context: int = 0xC0) -> None:
        self.kernel, self.calls, self.context = kernel, [], context
        self.clock_ms, self.events, self.capturing = 0.0, {}, False
        self.destroyed: list[int] = []
        self.host_clock_ns, self.host_step_ns = 0, 1_000

    def host_ns(self) -> int:
        """The host's clock in ns: :attr:`host_step_ns` after the last reading."""
        self.host_clock_ns += self.host_step_ns
        return self.host_clock_ns

    @staticmethod
    def launch_ms(grid, block) -> float:
        threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
        return 1e-3 + threads * 1e-6

    def cuEventCreate(self, ref, flags):
        handle = 0xE0000 + len(self.events)
        self.events[handle] = None
        ctypes.cast(ref, ctypes.POINTER(ctypes.c_void_p)).contents.value = handle
        return 0

    def cuEventRecord(self, event, stream):
        self.events[event] = self.clock_ms
        return 0

    def cuEventQuery(self, event):
        return 0 if self.events.get(event) is not None else 600

    cuEventSynchronize = cuEventQuery

    def cuEventDestroy_v2(self, event):
        self.destroyed.append(event)
        return 0

    def cuEventElapsedTime(self, ref, start, end):
        ctypes.cast(ref, ctypes.POINTER(ctypes.c_float)).contents.value = self.events[end] - self.events[start]
        return 0

    def cuStreamIsCapturing(self, stream, ref):
        ctypes.cast(ref, ctypes.POINTER(ctypes.c_int)).contents.value = int(self.capturing)
        return 0

    def cuCtxPushCurrent_v2(self, context):
        return 0

    def cuCtxPopCurrent_v2(self, ref):
        return 0

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, argv, extra):
        slots = ctypes.cast(argv, ctypes.POINTER(ctypes.c_void_p))
        values = {}
        for i, a in enumerate(self.kernel.args):
            kind = ctypes.c_uint64 if isinstance(a, Array) else CTYPES[a.ctype]
            values[a.name] = ctypes.cast(slots[i], ctypes.POINTER(kind)).contents.value
        gx, gy, gz, bx, by, bz, shared, stream, function = (getattr(v, "value", v) for v in
                                                             (gx, gy, gz, bx, by, bz, shared, stream, function))
        self.clock_ms += self.launch_ms((gx, gy, gz), (bx, by, bz))
        self.calls.append({"call": "launch", "function": function, "grid": (gx, gy, gz), "block": (bx, by, bz),
                           "shared": shared, "stream": stream, **values})
        return 0

    def _memset(kind):
        def memset(self, pointer, word, count, stream):
            self.calls.append({"call": kind, "pointer": pointer, "word": word, "count": count, "stream": stream})
            return 0
        return memset

    cuMemsetD8Async, cuMemsetD16Async, cuMemsetD32Async = _memset("d8"), _memset("d16"), _memset("d32")

    def cuMemsetD2D32Async(self, pointer, pitch, word, width, height, stream):
        self.calls.append({"call": "d2d32", "pointer": pointer, "pitch": pitch, "word": word, "width": width,
                           "count": height, "stream": stream})
        return 0

    def cuMemAlloc_v2(self, ref, nbytes):
        """Device memory (the same_arch guard's scratch copies): an address, recorded."""
        address = 0xD0000000 + 0x1000000 * sum(c["call"] == "alloc" for c in self.calls)
        ctypes.cast(ref, ctypes.POINTER(ctypes.c_uint64)).contents.value = address
        self.calls.append({"call": "alloc", "pointer": address, "count": nbytes})
        return 0

    def cuMemFree_v2(self, pointer):
        self.calls.append({"call": "free", "pointer": pointer})
        return 0

    def cuMemcpyDtoDAsync_v2(self, dst, src, nbytes, stream):
        self.calls.append({"call": "copy", "pointer": dst, "source": src, "count": nbytes, "stream": stream})
        return 0

    def cuFuncGetAttribute(self, value, attribute, function):
        ctypes.cast(value, ctypes.POINTER(ctypes.c_int)).contents.value = 1024 if attribute == 0 else 0
        return 0

    def cuFuncSetAttribute(self, function, attribute, value):
        self.calls.append({"call": "attribute", "attribute": attribute, "value": value})
        return 0

    @property
    def launches(self) -> list[dict]:
        return [c for c in self.calls if c["call"] == "launch"]


def install(monkeypatch, kernel, device_info, streams=None) -> FakeLibcuda:
    """Fake torch, libcuda, the loading of a cubin and the current device; returns the fake
    libcuda. Configs are not built (``build_cubin`` answers an empty cubin)."""
    from autotune.measure import compile as compile_module
    from autotune.measure import device as device_module
    from autotune.runtime import driver
    from autotune.runtime.recording import events as recording_events

    fake = FakeLibcuda(kernel)
    monkeypatch.setattr(recording_events, "_host_ns", fake.host_ns)  # the machine's speed drops no sample
    monkeypatch.setenv("AUTOTUNE_LAUNCH_API", "ctypes")  # the fake libcuda, also where cuda-bindings is installed
    monkeypatch.setitem(sys.modules, "torch", fake_torch(streams or {0: 0x5000, 1: 0x5001}))
    monkeypatch.setattr(driver, "libcuda", lambda: fake)
    monkeypatch.setattr(driver, "current_context", lambda: fake.context)
    monkeypatch.setattr(driver, "load_function", lambda cubin, name: (0xBA5, 0xF00))
    monkeypatch.setattr(compile_module, "build_cubin", lambda k, config, dtype, arch: (b"", {}, True))
    monkeypatch.setattr(device_module, "current_device", lambda: device_info)
    import autotune.runtime.streams as streams_module

    monkeypatch.setattr(streams_module, "_raw_torch_stream", None)
    from autotune.base.caches import clear_cache

    clear_cache()
    return fake


def installed(monkeypatch, kernel, device_info) -> Iterator[FakeLibcuda]:
    """:func:`install` for one test, every launcher cleared before and after: a fixture's body
    (``yield from installed(monkeypatch, kernel, device_info)``) yielding the fake libcuda."""
    from autotune.runtime import compiled

    compiled.clear_launchers()
    yield install(monkeypatch, kernel, device_info)
    compiled.clear_launchers()


class MemoryPointer:
    def __init__(self, ptr: int, device_id: int) -> None:
        self.ptr, self.device_id = ptr, device_id


class ndarray:  # noqa: N801  (CuPy's name)
    """A CuPy array: ``data.ptr``, ``data.device_id``, ``shape``, ``dtype``, ``_c_contiguous``,
    ``flags`` and ``__cuda_array_interface__``."""

    def __init__(self, shape, dtype="float32", ptr=0x10000, device=0, contiguous=True) -> None:
        import numpy as np

        self.shape, self.dtype, self.data = tuple(shape), np.dtype(dtype), MemoryPointer(ptr, device)
        self._c_contiguous = contiguous
        self.flags = types.SimpleNamespace(c_contiguous=contiguous)

    @property
    def __cuda_array_interface__(self) -> dict:
        strides = None if self._c_contiguous else tuple(2 * self.dtype.itemsize for _ in self.shape)
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data.ptr, False), "strides": strides,
                "version": 3}


ndarray.__module__ = "cupy"


def fake_cupy(stream: int) -> types.ModuleType:
    """A module named cupy: ``ndarray``, ``cuda.Device`` (a no-op) and a current stream ``stream``."""
    cupy = types.ModuleType("cupy")
    cupy.ndarray = ndarray
    cupy.cuda = types.SimpleNamespace(Device=lambda i: contextlib.nullcontext(),
                                      get_current_stream=lambda: types.SimpleNamespace(ptr=stream))
    return cupy
