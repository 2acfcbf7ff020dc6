"""Launching tuned kernels: ``transpose(a)`` transposes a device array with its tuned config."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from autotune.runtime.arrays import describe, empty_like_kind
from autotune.measure.benchmark import MAX_DIM
from autotune.measure.compile import Compiler
from autotune.measure.device import DeviceInfo, cuda_driver, current_context_handle, current_device
from autotune.errors import AutotuneError, GPUUnavailableError, InvalidInputError, TrialFailed
from autotune.kernel.catalog import get_kernel
from autotune.runtime.lookup import LaunchConfig, lookup

__all__ = ["transpose"]

_lock = threading.Lock()


@dataclass
class _Target:
    """What launching in one CUDA context needs, found once per context.

    ``primary`` is PyCUDA's handle on the device's primary context, retained on first need
    and kept: CuPy and PyTorch make it current through the CUDA runtime, but PyCUDA loads
    modules only in contexts on its own stack, so it is pushed for such launches.
    """

    device: DeviceInfo
    compiler: Compiler
    pycuda_device: object
    primary: object | None = None


_targets: dict[int, _Target] = {}


def _target(drv) -> _Target:
    handle = current_context_handle()
    with _lock:
        found = _targets.get(handle)
    if found is not None:
        return found
    if handle == 0:
        raise GPUUnavailableError("no current CUDA context; create one first (e.g. import pycuda.autoinit, "
                                  "or a CuPy or PyTorch array on the GPU)")
    info = current_device()
    with _lock:
        return _targets.setdefault(handle, _Target(info, Compiler(info.arch), drv.Context.get_device()))


@contextmanager
def _launch_context() -> Iterator[_Target]:
    """The current context's target, with PyCUDA seeing that context for the duration."""
    drv = cuda_driver()
    target = _target(drv)
    if drv.Context.get_current() is not None:  # a PyCUDA context: nothing to do
        yield target
        return
    with _lock:
        if target.primary is None:
            target.primary = target.pycuda_device.retain_primary_context()
    target.primary.push()
    try:
        yield target
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
    with _launch_context() as target:
        device = target.device
        if out is None:
            out = empty_like_kind(a, (cols, rows), dtype)
        dst = describe(out, "out")
        if dst.shape != (cols, rows) or dst.dtype != dtype or dst.readonly:
            raise InvalidInputError(f"out must be a writable C-contiguous {cols}x{rows} {dtype.name} array, "
                                    f"not {dst.shape[0]}x{dst.shape[1]} {dst.dtype.name}")
        chosen: LaunchConfig = lookup(kernel, (rows, cols), dtype.name, device=device, db=db)
        try:
            compiled = target.compiler(chosen.config, dtype)
            compiled.check_launch(device)
        except TrialFailed as exc:
            raise AutotuneError(f"config {chosen.config} cannot run on {device.name}: {exc}") from None
        compiled.function.prepared_call(k.grid(chosen.config, rows, cols), k.block(chosen.config, dtype.itemsize),
                                        np.uintp(dst.pointer), np.uintp(src.pointer), np.int32(rows), np.int32(cols))
    return out
