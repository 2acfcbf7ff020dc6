"""Theoretical occupancy of a compiled kernel, as the CUDA driver computes it.

``cuOccupancyMaxActiveBlocksPerMultiprocessor`` (CUDA driver API) gives how many blocks of a
function fit on one SM at once given its registers, shared memory and block size; occupancy
is those blocks' warps over the SM's maximum warps. PyCUDA does not expose a function's
CUfunction handle (and its ``pycuda.tools.OccupancyRecord`` predates current GPUs: 8 blocks
and 48 KiB per SM), so the same cubin is loaded once more through ``libcuda`` with ctypes,
in the current context, and asked directly.
"""

from __future__ import annotations

import ctypes
import functools

__all__ = ["theoretical_occupancy"]


@functools.cache
def _libcuda() -> ctypes.CDLL:
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
    lib.cuOccupancyMaxActiveBlocksPerMultiprocessor.argtypes = [
        ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    lib.cuModuleUnload.argtypes = [ctypes.c_void_p]
    return lib


def _check(status: int, call: str) -> None:
    if status != 0:
        raise RuntimeError(f"{call} failed with CUDA error {status}")


def theoretical_occupancy(cubin: bytes, function: str, threads_per_block: int,
                          max_threads_per_sm: int) -> tuple[int, float]:
    """Active blocks per SM and theoretical occupancy (0..1) of ``function`` in ``cubin``.

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
        _check(lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(blocks), fn, threads_per_block, 0),
               "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    finally:
        lib.cuModuleUnload(module)
    warps = -(-threads_per_block // 32)
    return blocks.value, blocks.value * warps / (max_threads_per_sm // 32)
