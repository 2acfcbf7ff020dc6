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
           "copy_async", "fill_async", "stream_capturing", "create_event", "destroy_event", "record_event",
           "event_done", "elapsed_ms", "push_context", "pop_context", "alloc", "free"]

_U = ctypes.c_uint
_PTR = ctypes.c_void_p
CUDA_SUCCESS, CUDA_ERROR_NOT_READY = 0, 600
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
    # the recording's events (autotune.runtime.recording.events): handles are pointers, which ctypes
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
    lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]  # the guard's scratch copies
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
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


def alloc(nbytes: int) -> int:
    """``nbytes`` of device memory in the current context (``cuMemAlloc``), its address.

    Raises:
        AutotuneError: the driver refused it (e.g. out of memory).
    """
    pointer = ctypes.c_uint64(0)
    status = libcuda().cuMemAlloc_v2(ctypes.byref(pointer), nbytes)
    if status != CUDA_SUCCESS:
        raise AutotuneError(f"cuMemAlloc of {nbytes} bytes failed with CUDA error {status}")
    return pointer.value


def free(pointer: int) -> None:
    """Free device memory :func:`alloc` gave (``cuMemFree``); a refusal is ignored: nothing
    else holds it."""
    libcuda().cuMemFree_v2(pointer)


# -- CUDA events: the recording's samples (autotune.runtime.recording.events) ------------------

def stream_capturing(stream: int) -> bool:
    """Whether ``stream`` is capturing a CUDA graph (``cuStreamIsCapturing``): events recorded
    there time nothing.

    Raises:
        AutotuneError: the driver refused the query.
    """
    status = ctypes.c_int(0)
    result = libcuda().cuStreamIsCapturing(stream, ctypes.byref(status))
    if result != CUDA_SUCCESS:
        raise AutotuneError(f"cuStreamIsCapturing failed with CUDA error {result}")
    return status.value != 0


def create_event() -> int:
    """A new CUDA event in the current context (``cuEventCreate``, default flags: timing on).

    Raises:
        AutotuneError: the driver refused it.
    """
    event = _PTR()
    status = libcuda().cuEventCreate(ctypes.byref(event), 0)
    if status != CUDA_SUCCESS:
        raise AutotuneError(f"cuEventCreate failed with CUDA error {status}")
    return event.value


def destroy_event(event: int) -> None:
    """Destroy ``event`` (``cuEventDestroy``; its context current); a refusal is ignored: the
    event is gone either way."""
    libcuda().cuEventDestroy_v2(event)


def record_event(event: int, stream: int) -> None:
    """Record ``event`` on ``stream`` (``cuEventRecord``).

    Raises:
        AutotuneError: the driver refused it.
    """
    status = libcuda().cuEventRecord(event, stream)
    if status != CUDA_SUCCESS:
        raise AutotuneError(f"cuEventRecord failed with CUDA error {status}")


def event_done(event: int, wait: bool = False) -> bool:
    """Whether the work before ``event`` has completed (``cuEventQuery``); ``wait``: wait for it
    first (``cuEventSynchronize``).

    Raises:
        AutotuneError: the driver answered an error (not "not ready").
    """
    lib = libcuda()
    status = lib.cuEventSynchronize(event) if wait else lib.cuEventQuery(event)
    if status == CUDA_ERROR_NOT_READY:
        return False
    if status != CUDA_SUCCESS:
        raise AutotuneError(f"{'cuEventSynchronize' if wait else 'cuEventQuery'} failed with CUDA error {status}")
    return True


def elapsed_ms(start: int, end: int) -> float:
    """The GPU time between two completed events, in ms (``cuEventElapsedTime``).

    Raises:
        AutotuneError: the driver refused it.
    """
    ms = ctypes.c_float(0.0)
    status = libcuda().cuEventElapsedTime(ctypes.byref(ms), start, end)
    if status != CUDA_SUCCESS:
        raise AutotuneError(f"cuEventElapsedTime failed with CUDA error {status}")
    return ms.value


def push_context(context: int) -> bool:
    """Make ``context`` current on this thread above the one there (``cuCtxPushCurrent``);
    ``False`` where the driver refused it (a context already destroyed, at exit)."""
    return libcuda().cuCtxPushCurrent_v2(context) == CUDA_SUCCESS


def pop_context() -> None:
    """Take the context :func:`push_context` made current off this thread (``cuCtxPopCurrent``)."""
    libcuda().cuCtxPopCurrent_v2(ctypes.byref(_PTR()))
