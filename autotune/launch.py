"""Launching tuned kernels: ``transpose(a)`` transposes a device array with its tuned config."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .arrays import describe, empty_like_kind
from .benchmark import MAX_DIM
from .compile import Compiler
from .device import cuda_driver, current_context_handle, current_device
from .errors import AutotuneError, GPUUnavailableError, InvalidInputError, TrialFailed
from .kernels import get_kernel
from .tuned import LaunchConfig, lookup

__all__ = ["transpose"]

_lock = threading.Lock()
_compilers: dict[tuple[int, str], Compiler] = {}
_primary: dict[str, object] = {}


def _compiler(arch: str) -> Compiler:
    """The compiler (and its cache of loaded modules) of the current CUDA context."""
    with _lock:
        return _compilers.setdefault((current_context_handle(), arch), Compiler(arch))


@contextmanager
def _pycuda_context() -> Iterator[None]:
    """Make PyCUDA see the driver's current context for the duration of a launch.

    PyCUDA loads modules and allocates only in contexts on its own stack. CuPy and PyTorch
    make their device's primary context current through the CUDA runtime, which PyCUDA
    does not see: that primary context (retained once per device and kept) is pushed for
    the call and popped after it. With a PyCUDA context already current, nothing changes.
    """
    drv = cuda_driver()
    if drv.Context.get_current() is not None:
        yield
        return
    try:
        device = drv.Context.get_device()
    except drv.Error:
        raise GPUUnavailableError("no current CUDA context; create one first (e.g. import pycuda.autoinit, "
                                  "or a CuPy or PyTorch array on the GPU)") from None
    with _lock:
        bus = device.pci_bus_id()
        if bus not in _primary:
            _primary[bus] = device.retain_primary_context()
        ctx = _primary[bus]
    ctx.push()
    try:
        yield
    finally:
        drv.Context.pop()


def transpose(a, *, kernel: str = "smem_vec", db: str | None = None, out=None):
    """Return ``a.T`` as a new C-contiguous array of ``a``'s kind, launched with the tuned config.

    Args:
        a: 2-D C-contiguous rows x cols device array of a supported dtype: a
            ``pycuda.gpuarray.GPUArray``, or any object with ``__cuda_array_interface__``
            (a CuPy array, a PyTorch CUDA tensor, ...), on the device of the current CUDA
            context (CuPy and PyTorch make their device's primary context current).
        kernel: a transpose kernel of the catalog (default ``smem_vec``, the vectorized one).
        db: results database URL (see :func:`autotune.lookup`).
        out: optional C-contiguous cols x rows array of the same dtype to write into (any
            accepted kind).

    Returns:
        ``out`` if given, else a new cols x rows array: CuPy for a CuPy input, a PyTorch
        tensor on the same device for a PyTorch one, a PyCUDA GPUArray otherwise. The kernel
        runs on the legacy default stream, which orders it after work queued on CuPy's and
        PyTorch's default streams. ``autotune.lookup`` with the same arguments tells which
        config was used.

    Raises:
        InvalidInputError: not a device array, not 2-D, not contiguous, empty, unsupported
            dtype, a wrong or read-only ``out``, or a kernel that is not a transpose.
        GPUUnavailableError: no current CUDA context.
    """
    k = get_kernel(kernel)
    if k.op != "transpose":
        raise InvalidInputError(f"kernel {kernel!r} is not a transpose")
    src = describe(a)
    (rows, cols), dtype = src.shape, src.dtype
    if not (rows <= MAX_DIM and cols <= MAX_DIM):
        raise InvalidInputError(f"shape {rows}x{cols} is not allowed; rows and cols are 1..{MAX_DIM}")
    with _pycuda_context():
        device = current_device()
        if out is None:
            out = empty_like_kind(a, (cols, rows), dtype)
        dst = describe(out, "out")
        if dst.shape != (cols, rows) or dst.dtype != dtype or dst.readonly:
            raise InvalidInputError(f"out must be a writable C-contiguous {cols}x{rows} {dtype.name} array, "
                                    f"not {dst.shape[0]}x{dst.shape[1]} {dst.dtype.name}")
        chosen: LaunchConfig = lookup(kernel, (rows, cols), dtype.name, device=device, db=db)
        try:
            compiled = _compiler(device.arch)(chosen.config, dtype)
            compiled.check_launch(device)
        except TrialFailed as exc:
            raise AutotuneError(f"config {chosen.config} cannot run on {device.name}: {exc}") from None
        compiled.function.prepared_call(k.grid(chosen.config, rows, cols), k.block(chosen.config, dtype.itemsize),
                                        np.uintp(dst.pointer), np.uintp(src.pointer), np.int32(rows), np.int32(cols))
    return out
