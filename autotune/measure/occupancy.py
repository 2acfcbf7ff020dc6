"""Theoretical occupancy of a compiled kernel, as the CUDA driver computes it.

``cuOccupancyMaxActiveBlocksPerMultiprocessor`` (CUDA driver API) gives how many blocks of a
function fit on one SM at once given its registers, shared memory and block size; occupancy
is those blocks' warps over the SM's maximum warps (:func:`occupancy`). The backend asks the
driver (:meth:`autotune.measure.backends.base.Function.active_blocks_per_sm`): ``cuda-bindings``
with the function's own handle; PyCUDA does not expose it (and its
``pycuda.tools.OccupancyRecord`` predates current GPUs: 8 blocks and 48 KiB per SM), so for it
the same cubin is loaded once more through ``libcuda`` with ctypes, in the current context, and
asked directly (:func:`active_blocks`).
"""

from __future__ import annotations

import ctypes
import functools

from autotune.errors import no_driver

__all__ = ["occupancy", "active_blocks"]


@functools.cache
def _libcuda() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise no_driver(exc) from None
    lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
    lib.cuOccupancyMaxActiveBlocksPerMultiprocessor.argtypes = [
        ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    lib.cuModuleUnload.argtypes = [ctypes.c_void_p]
    return lib


def _check(status: int, call: str) -> None:
    if status != 0:
        raise RuntimeError(f"{call} failed with CUDA error {status}")


def occupancy(blocks: int, threads_per_block: int, max_threads_per_sm: int) -> float:
    """Theoretical occupancy (0..1): the warps of ``blocks`` resident blocks of
    ``threads_per_block`` threads over the SM's most warps."""
    warps = -(-threads_per_block // 32)
    return blocks * warps / (max_threads_per_sm // 32)


def active_blocks(cubin: bytes, function: str, threads_per_block: int, dynamic_shared: int = 0) -> int:
    """Active blocks per SM of ``function`` in ``cubin`` (loaded once more through ``libcuda``).

    Must run with a current CUDA context on the device the cubin is for.

    Raises:
        RuntimeError: the driver refused a call (its error code is in the message).
    """
    lib = _libcuda()
    module, fn, blocks = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
    buf = ctypes.create_string_buffer(cubin, len(cubin))
    _check(lib.cuModuleLoadData(ctypes.byref(module), buf), "cuModuleLoadData")
    try:
        _check(lib.cuModuleGetFunction(ctypes.byref(fn), module, function.encode()), "cuModuleGetFunction")
        _check(lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(blocks), fn, threads_per_block,
                                                               dynamic_shared), "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    finally:
        lib.cuModuleUnload(module)
    return blocks.value
