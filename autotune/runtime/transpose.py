"""``autotune.transpose(x)``: a catalog transpose launched with its tuned config."""

from __future__ import annotations

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.dims import MAX_DIM
from autotune.runtime.arrays import describe, empty_like_kind
from autotune.runtime.launch import compiled

__all__ = ["transpose"]


def transpose(a, *, kernel: str = "smem_vec", db: str | None = None, out=None, stream=None):
    """Return ``a.T`` as a new C-contiguous array of ``a``'s kind, launched with the tuned config.

    Args:
        a: 2-D C-contiguous rows x cols device array of a supported dtype: a
            ``pycuda.gpuarray.GPUArray``, or any object with ``__cuda_array_interface__``
            (a CuPy array, a PyTorch CUDA tensor, ...), on the device of the current CUDA
            context (CuPy and PyTorch make their device's primary context current).
        kernel: a transpose of the catalog, or a kernel file of one (dims ``rows, cols``,
            arguments ``out`` cols x rows, ``src`` rows x cols); default ``smem_vec``.
        db: results database URL (see :func:`autotune.lookup`).
        out: optional C-contiguous cols x rows array of the same dtype to write into (any
            accepted kind).
        stream: stream to launch on (default: the caller's current stream of ``a``'s library;
            the legacy default stream for PyCUDA arrays).

    Returns:
        ``out`` if given, else a new cols x rows array: CuPy for a CuPy input, a PyTorch
        tensor on the same device for a PyTorch one, a PyCUDA GPUArray otherwise.
        ``autotune.compiled(kernel, (rows, cols), dtype).chosen`` tells which config was used.

    Raises:
        InvalidInputError: not a device array, not 2-D, not contiguous, empty, unsupported
            dtype, a wrong or read-only ``out``, or a kernel that is not a transpose.
        GPUUnavailableError: no current CUDA context.
    """
    k = resolve_kernel(kernel)
    if k.dims != ("rows", "cols") or k.check_spec.reference != "autotune.kernel.references:transpose":
        raise InvalidInputError(f"kernel {kernel!r} is not a transpose")
    src = describe(a)
    (rows, cols), dtype = src.shape, src.dtype
    if not (rows <= MAX_DIM and cols <= MAX_DIM):
        raise InvalidInputError(f"shape {rows}x{cols} is not allowed; rows and cols are 1..{MAX_DIM}")
    launch = compiled(k, (rows, cols), dtype, db=db)
    if out is None:
        out = empty_like_kind(a, (cols, rows), dtype)
    launch(out, a, stream=stream)
    return out
