"""The CUDA driver API through ctypes: load a cubin, launch a kernel, copy memory (no PyCUDA).

Everything here works in the CUDA context current on the calling thread (the primary context
that PyTorch and CuPy make current, or a PyCUDA context). Each call returns or raises; a
non-zero ``CUresult`` becomes an :class:`~autotune.errors.AutotuneError` naming the call,
the kernel and the CUDA error number.
"""

from __future__ import annotations

import ctypes
import functools
import threading

from autotune.errors import AutotuneError, GPUUnavailableError, no_driver

__all__ = ["libcuda", "current_context", "load_function", "function_attribute", "set_function_attribute", "launch",
           "copy_async", "fill_async"]

_U = ctypes.c_uint
_PTR = ctypes.c_void_p
CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_here = threading.local()


@functools.cache
def libcuda() -> ctypes.CDLL:
    """``libcuda.so.1`` with the argument types of the calls used here.

    Raises:
        GPUUnavailableError: the CUDA driver library is not installed.
    """
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise no_driver(exc) from None
    lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(_PTR)]
    lib.cuModuleLoadData.argtypes = [ctypes.POINTER(_PTR), _PTR]
    lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(_PTR), _PTR, ctypes.c_char_p]
    lib.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, _PTR]
    lib.cuFuncSetAttribute.argtypes = [_PTR, ctypes.c_int, ctypes.c_int]
    lib.cuLaunchKernel.argtypes = [_PTR, _U, _U, _U, _U, _U, _U, _U, _PTR, _PTR, _PTR]
    lib.cuMemcpyDtoDAsync_v2.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, _PTR]
    lib.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, _PTR]
    lib.cuMemsetD16Async.argtypes = [ctypes.c_uint64, ctypes.c_ushort, ctypes.c_size_t, _PTR]
    lib.cuMemsetD32Async.argtypes = [ctypes.c_uint64, _U, ctypes.c_size_t, _PTR]
    lib.cuMemsetD2D32Async.argtypes = [ctypes.c_uint64, ctypes.c_size_t, _U, ctypes.c_size_t, ctypes.c_size_t, _PTR]
    # the recording's events (autotune.runtime.recording): handles are pointers, which ctypes
    # would otherwise pass as 32-bit ints
    lib.cuEventCreate.argtypes = [ctypes.POINTER(_PTR), _U]
    lib.cuEventRecord.argtypes = [_PTR, _PTR]
    lib.cuEventQuery.argtypes = [_PTR]
    lib.cuEventSynchronize.argtypes = [_PTR]
    lib.cuEventElapsedTime.argtypes = [ctypes.POINTER(ctypes.c_float), _PTR, _PTR]
    lib.cuEventDestroy_v2.argtypes = [_PTR]
    lib.cuCtxPushCurrent_v2.argtypes = [_PTR]
    lib.cuCtxPopCurrent_v2.argtypes = [ctypes.POINTER(_PTR)]
    lib.cuStreamIsCapturing.argtypes = [_PTR, ctypes.POINTER(ctypes.c_int)]
    return lib


def current_context() -> int:
    """The ``CUcontext`` current on this thread.

    Raises:
        GPUUnavailableError: there is none (create one first: a PyTorch or CuPy array on the
            GPU, or ``import pycuda.autoinit``).
    """
    slot = getattr(_here, "slot", None)
    if slot is None:  # one ctypes slot per thread, made once (a call is then about 0.3 µs)
        ctx = _PTR()
        slot = _here.slot = (ctx, ctypes.byref(ctx), libcuda().cuCtxGetCurrent)
    ctx, ref, get = slot
    if get(ref) != 0 or not ctx.value:
        raise GPUUnavailableError("no current CUDA context; create one first (e.g. import pycuda.autoinit, or a "
                                  "CuPy or PyTorch array on the GPU)")
    return ctx.value


def load_function(cubin: bytes, name: str) -> tuple[int, int]:
    """Load ``cubin`` into the current context and find its kernel ``name``.

    Returns:
        ``(module, function)`` handles; the module stays loaded for the process.

    Raises:
        AutotuneError: the driver refused the cubin, or it has no kernel ``name``.
    """
    lib, module, function = libcuda(), _PTR(), _PTR()
    buf = ctypes.create_string_buffer(cubin, len(cubin))
    status = lib.cuModuleLoadData(ctypes.byref(module), buf)
    if status != 0:
        raise AutotuneError(f"cuModuleLoadData of {name} failed with CUDA error {status}")
    if lib.cuModuleGetFunction(ctypes.byref(function), module, name.encode()) != 0:
        raise AutotuneError(f"no entry point {name!r} in the compiled module")
    return module.value, function.value


def function_attribute(function: int, attribute: int) -> int:
    """An attribute of a loaded kernel (``cuFuncGetAttribute``), e.g. its most threads per block."""
    value = ctypes.c_int()
    status = libcuda().cuFuncGetAttribute(ctypes.byref(value), attribute, function)
    if status != 0:
        raise AutotuneError(f"cuFuncGetAttribute failed with CUDA error {status}")
    return value.value


def set_function_attribute(function: int, attribute: int, value: int) -> None:
    """Set an attribute of a loaded kernel (``cuFuncSetAttribute``), e.g. its
    ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` (the opt-in above 48 KiB of shared memory).

    Raises:
        AutotuneError: the driver refused the value (e.g. more than the device allows).
    """
    status = libcuda().cuFuncSetAttribute(function, attribute, value)
    if status != 0:
        raise AutotuneError(f"cuFuncSetAttribute({attribute}, {value}) failed with CUDA error {status}")


def launch(function: int, grid, block, shared: int, stream: int, argv, what: str) -> None:
    """``cuLaunchKernel`` of ``function`` on ``stream`` with the packed ``argv`` (an array of
    pointers to the argument values, ``void **``).

    Raises:
        AutotuneError: the driver refused the launch (``what`` names the kernel).
    """
    status = libcuda().cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
                                      stream, argv, None)
    if status != 0:
        raise AutotuneError(f"cuLaunchKernel of {what} failed with CUDA error {status}")


def copy_async(dst: int, src: int, nbytes: int, stream: int) -> None:
    """Copy ``nbytes`` from device address ``src`` to ``dst``, queued on ``stream``
    (``cuMemcpyDtoDAsync``; works inside a stream capture).

    Raises:
        AutotuneError: the driver refused the copy.
    """
    status = libcuda().cuMemcpyDtoDAsync_v2(dst, src, nbytes, stream)
    if status != 0:
        raise AutotuneError(f"cuMemcpyDtoDAsync of {nbytes} bytes failed with CUDA error {status}")


def fill_async(fills, pointer: int, stream: int) -> None:
    """Queue the memsets ``fills`` (:func:`autotune.kernel.resets.fill_ops`) of the array at
    device address ``pointer`` on ``stream`` (``cuMemsetD8/D16/D32Async``, ``cuMemsetD2D32Async``;
    they work inside a stream capture).

    Raises:
        AutotuneError: the driver refused a memset.
    """
    lib = libcuda()
    for f in fills:
        if f.kind == "d2d32":
            status = lib.cuMemsetD2D32Async(pointer + f.offset, f.pitch, f.word, 1, f.count, stream)
        else:
            status = getattr(lib, _MEMSETS[f.kind])(pointer + f.offset, f.word, f.count, stream)
        if status != 0:
            raise AutotuneError(f"the {f.kind} memset of {f.count} units at 0x{pointer:x} failed with CUDA error "
                                f"{status}")


_MEMSETS = {"d8": "cuMemsetD8Async", "d16": "cuMemsetD16Async", "d32": "cuMemsetD32Async"}
