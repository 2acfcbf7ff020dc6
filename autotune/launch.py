"""Launching tuned kernels: ``transpose(a)`` transposes a GPUArray with its tuned config."""

from __future__ import annotations

import threading

import numpy as np

from .benchmark import MAX_DIM
from .compile import Compiler
from .device import current_device
from .dtypes import get_dtype
from .errors import AutotuneError, InvalidInputError, TrialFailed
from .kernels import get_kernel
from .tuned import LaunchConfig, lookup

__all__ = ["transpose"]

_lock = threading.Lock()
_compilers: dict[tuple[str, str], Compiler] = {}


def _compiler(bus_id: str, arch: str) -> Compiler:
    with _lock:
        return _compilers.setdefault((bus_id, arch), Compiler(arch))


def transpose(a, *, kernel: str = "smem_pad", db: str | None = None, out=None):
    """Return ``a.T`` as a new C-contiguous GPUArray, launched with the tuned config.

    Args:
        a: 2-D C-contiguous ``pycuda.gpuarray.GPUArray`` of rows x cols, any supported dtype,
            on the device of the current context.
        kernel: a transpose kernel of the catalog (default ``smem_pad``).
        db: results database URL (see :func:`autotune.lookup`).
        out: optional C-contiguous cols x rows GPUArray of the same dtype to write into.

    Returns:
        The cols x rows GPUArray (``out`` if given). ``autotune.lookup`` with the same
        arguments tells which config was used.

    Raises:
        InvalidInputError: not 2-D, not contiguous, empty, unsupported dtype, wrong ``out``,
            or a kernel that is not a transpose.
        GPUUnavailableError: no current CUDA context.
    """
    from pycuda import gpuarray

    k = get_kernel(kernel)
    if k.op != "transpose":
        raise InvalidInputError(f"kernel {kernel!r} is not a transpose")
    if not isinstance(a, gpuarray.GPUArray) or a.ndim != 2 or not a.flags.c_contiguous:
        raise InvalidInputError("transpose takes a 2-D C-contiguous pycuda GPUArray")
    rows, cols = a.shape
    if not (1 <= rows <= MAX_DIM and 1 <= cols <= MAX_DIM):
        raise InvalidInputError(f"shape {rows}x{cols} is not allowed; rows and cols are 1..{MAX_DIM}")
    dtype = get_dtype(a.dtype)
    if out is None:
        out = gpuarray.empty((cols, rows), a.dtype)
    elif out.shape != (cols, rows) or out.dtype != a.dtype or not out.flags.c_contiguous:
        raise InvalidInputError(f"out must be a C-contiguous {cols}x{rows} {dtype.name} GPUArray")
    device = current_device()
    chosen: LaunchConfig = lookup(kernel, (rows, cols), dtype.name, device=device, db=db)
    try:
        compiled = _compiler(device.name + str(device.ordinal), device.arch)(chosen.config, dtype)
        compiled.check_launch(device)
    except TrialFailed as exc:
        raise AutotuneError(f"config {chosen.config} cannot run on {device.name}: {exc}") from None
    compiled.function.prepared_call(k.grid(chosen.config, rows, cols), k.block(chosen.config),
                                    out.gpudata, a.gpudata, np.int32(rows), np.int32(cols))
    return out
