"""Launching any kernel with its tuned config: ``f = compiled(kernel, dims, dtype); f(*arrays)``.

:func:`compiled` looks the config up (:func:`autotune.lookup`), compiles it (nvcc through
PyCUDA's compiler and its disk cache), loads the cubin into the CUDA context current on the
calling thread (the primary context CuPy and PyTorch use, or a PyCUDA context) through the
driver API, and returns a :class:`Launcher`. Its call checks the arrays' shapes and dtypes
against the kernel's arguments and launches with ``cuLaunchKernel`` on the caller's current
stream: PyTorch's ``torch.cuda.current_stream()``, CuPy's current stream, the legacy default
stream for PyCUDA arrays, or ``stream=`` (a handle, or an object with ``cuda_stream``,
``ptr`` or ``handle``). Launchers are cached per (context, kernel, dims, dtype, database).
"""

from __future__ import annotations

import ctypes
import functools
import threading
from dataclasses import dataclass

from autotune.errors import AutotuneError, GPUUnavailableError, InvalidInputError, TrialFailed
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.dims import Dims, make_dims
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.model import Array, Kernel
from autotune.measure.buffers import scalar_values
from autotune.runtime.arrays import describe

__all__ = ["Launcher", "compiled"]

_lock = threading.Lock()
_launchers: dict[tuple, Launcher] = {}
_CTYPES = {"int32": ctypes.c_int32, "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
           "float32": ctypes.c_float, "float64": ctypes.c_double}


@functools.cache
def _libcuda():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 6, ctypes.c_uint, ctypes.c_void_p,
                                   ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    return lib


def _stream_handle(stream, first) -> int:
    """The CUstream to launch on: ``stream`` if given, else the current stream of ``first``'s library."""
    if stream is None:
        kind = type(first).__module__.split(".")[0]
        if kind == "torch":
            import torch

            return int(torch.cuda.current_stream(first.device).cuda_stream)
        if kind == "cupy":
            import cupy

            return int(cupy.cuda.get_current_stream().ptr)
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise InvalidInputError(f"stream {stream!r} is not allowed; give a stream handle (int), a torch or CuPy "
                            "stream, or a PyCUDA Stream")


@dataclass
class Launcher:
    """A loaded kernel with its tuned config for one context, dims and dtype.

    Attributes:
        kernel: the kernel; ``dims``: its named dims; ``chosen``: the
            :class:`~autotune.runtime.lookup.LaunchConfig` used (config, rung, note).
        grid, block, shared: the launch geometry (blocks, threads, dynamic shared bytes).
    """

    kernel: Kernel
    dims: Dims
    dtype: object
    chosen: object
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    function: int
    module: int
    expected: list[tuple[str, tuple[int, ...], object, bool]]
    scalars: dict

    def __call__(self, *arrays, stream=None) -> None:
        """Launch on ``arrays``: one device array per array argument of the kernel, in order
        (PyTorch, CuPy, PyCUDA or any ``__cuda_array_interface__``), C-contiguous, of the
        argument's shape and dtype. Scalars come from the dims.

        Raises:
            InvalidInputError: wrong number of arrays, a shape, dtype or read-only output
                that does not fit, or a bad ``stream``.
            AutotuneError: the driver refused the launch.
        """
        if len(arrays) != len(self.expected):
            names = ", ".join(name for name, *_ in self.expected)
            raise InvalidInputError(f"{self.kernel.name} takes {len(self.expected)} arrays ({names}); "
                                    f"got {len(arrays)}")
        values = []
        for obj, (name, shape, dtype, written) in zip(arrays, self.expected):
            a = describe(obj, name, None)
            if a.shape != shape or a.dtype.name != dtype.name or (written and a.readonly):
                raise InvalidInputError(f"{name} must be a{' writable' if written else 'n'} C-contiguous "
                                        f"{'x'.join(map(str, shape))} {dtype.name} array, not "
                                        f"{'x'.join(map(str, a.shape))} {a.dtype.name}")
            values.append(ctypes.c_void_p(a.pointer))
        pointers = iter(values)
        params = [next(pointers) if isinstance(arg, Array) else self.scalars[arg.name] for arg in self.kernel.args]
        argv = (ctypes.c_void_p * len(params))(*[ctypes.cast(ctypes.pointer(p), ctypes.c_void_p) for p in params])
        status = _libcuda().cuLaunchKernel(self.function, *self.grid, *self.block, self.shared,
                                           _stream_handle(stream, arrays[0]), argv, None)
        if status != 0:
            raise AutotuneError(f"cuLaunchKernel of {self.kernel.name} failed with CUDA error {status}")


def _context() -> int:
    from autotune.measure.device import current_context_handle

    handle = current_context_handle()
    if handle == 0:
        raise GPUUnavailableError("no current CUDA context; create one first (e.g. import pycuda.autoinit, or a "
                                  "CuPy or PyTorch array on the GPU)")
    return handle


def compiled(kernel, dims, dtype="float32", *, db: str | None = None) -> Launcher:
    """The tuned launch of ``kernel`` for ``dims`` and ``dtype`` on the current context's device.

    Args:
        kernel: a catalog name, a path to a kernel file, or a :class:`Kernel`.
        dims: its named dims: a mapping ``{"n": 1048576}``, pairs, or values in its order.
        dtype: the problem's dtype (NumPy dtype or name).
        db: results database URL (default ``AUTOTUNE_DB`` or the platformdirs default).

    Raises:
        InvalidInputError: unknown kernel or dtype, bad dims.
        GPUUnavailableError: no current CUDA context, PyCUDA or nvcc.
        AutotuneError: the chosen config does not compile or fit on this device.
    """
    k, dt = resolve_kernel(kernel), get_dtype(dtype)
    k.check_dtype(dt)
    d = make_dims(k.dims, dims, f"kernel {k.name}")
    key = (_context(), id(k), d, dt.name, db)
    with _lock:
        found = _launchers.get(key)
    if found is None:
        found = _build(k, d, dt, db)
        with _lock:
            found = _launchers.setdefault(key, found)
    return found


def _build(k: Kernel, d: Dims, dt, db: str | None) -> Launcher:
    from autotune.measure.compile import nvcc_options
    from autotune.measure.device import current_device
    from autotune.runtime.lookup import lookup

    device = current_device()
    chosen = lookup(k, d, dt.name, device=device, db=db)
    config = chosen.config
    env = k.env(dict(d), dt, config)
    grid, block, shared = k.geometry(config, dict(d), dt)
    from pycuda.compiler import compile as nvcc_compile
    import pycuda.driver as drv

    try:
        cubin = nvcc_compile(k.source_text(), options=nvcc_options(k, config, dt), arch=device.arch, no_extern_c=True)
    except drv.CompileError as exc:
        raise AutotuneError(f"config {config} of {k.name} does not compile: {str(exc).splitlines()[0]}") from None
    lib, module, function = _libcuda(), ctypes.c_void_p(), ctypes.c_void_p()
    buf = ctypes.create_string_buffer(cubin, len(cubin))
    for status, call in ((lib.cuModuleLoadData(ctypes.byref(module), buf), "cuModuleLoadData"),):
        if status != 0:
            raise AutotuneError(f"{call} of {k.name} failed with CUDA error {status}")
    if lib.cuModuleGetFunction(ctypes.byref(function), module, k.function.encode()) != 0:
        raise AutotuneError(f"{k.name}: no entry point {k.function!r} in the compiled module")
    expected = [(a.name, a.shape_of(env), a.dtype_of(dt), a.role != "in") for a in k.arrays]
    scalars = {name: _CTYPES[next(s.ctype for s in k.args if s.name == name)](value.item())
               for name, value in scalar_values(k, env).items()}
    if max(block[0] * block[1] * block[2], 1) > device.max_threads_per_block:
        raise AutotuneError(f"config {config} cannot run on {device.name}: "
                            f"{TrialFailed('resources', 'too many threads per block').reason}")
    return Launcher(k, d, dt, chosen, grid, block, shared, function.value, module.value, expected, scalars)
