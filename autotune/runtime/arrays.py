"""Device arrays the library launches on: PyCUDA GPUArrays and any object exporting the
``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors, Numba device arrays, ...).

The interface (Numba's CUDA Array Interface, version 2 and 3) gives a device pointer, a
shape, a NumPy type string and strides; :func:`describe` reads and checks it without
touching CUDA, and :func:`empty_like_kind` allocates a result of the caller's kind
(CuPy in, CuPy out; PyTorch in, PyTorch out on the same device; anything else: a PyCUDA
GPUArray).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autotune.kernel.dtypes import DType, get_dtype
from autotune.errors import InvalidInputError

__all__ = ["DeviceArray", "describe", "empty_like_kind"]


@dataclass(frozen=True)
class DeviceArray:
    """What a launch needs to know of a C-contiguous device array.

    Attributes:
        pointer: device address of element (0, 0).
        shape: its shape, e.g. ``(rows, cols)``.
        dtype: element type.
        kind: ``"pycuda"``, ``"cupy"``, ``"torch"`` or ``"cai"`` (another exporter).
        readonly: the exporter marked the memory read-only.
    """

    pointer: int
    shape: tuple[int, ...]
    dtype: DType
    kind: str
    readonly: bool = False


def _kind(obj) -> str:
    module = type(obj).__module__.split(".")[0]
    return module if module in ("pycuda", "cupy", "torch") else "cai"


def describe(obj, what: str = "input", ndim: int | None = 2) -> DeviceArray:
    """Read ``obj``'s ``__cuda_array_interface__`` (PyCUDA GPUArrays export it too).

    Raises:
        InvalidInputError: ``obj`` exports no interface, or has not ``ndim`` dimensions
            (``None``: any number), is not C-contiguous,
            empty, masked, or of a dtype autotune does not support; ``what`` names it.
    """
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        raise InvalidInputError(f"{what} of type {type(obj).__name__} is not a GPU array; allowed: a PyCUDA "
                                "GPUArray or an object with __cuda_array_interface__ (CuPy, PyTorch)") from None
    shape = tuple(cai["shape"])
    if ndim is not None and len(shape) != ndim:
        raise InvalidInputError(f"{what} has {len(shape)} dimensions {shape}; allowed: {ndim}")
    if 0 in shape:
        raise InvalidInputError(f"{what} of shape {'x'.join(map(str, shape))} is empty")
    if cai.get("mask") is not None:
        raise InvalidInputError(f"{what} is a masked array; allowed: unmasked")
    npdtype = np.dtype(cai["typestr"])
    try:
        dtype = get_dtype(npdtype)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{what}: {exc}") from None
    strides = cai.get("strides")
    contiguous = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * npdtype.itemsize for i in range(len(shape)))
    if strides is not None and any(n > 1 and s != c for n, s, c in zip(shape, strides, contiguous)):
        raise InvalidInputError(f"{what} has strides {tuple(strides)} bytes; allowed: C-contiguous "
                                f"{contiguous} (make it contiguous first)")
    pointer, readonly = cai["data"]
    return DeviceArray(int(pointer), tuple(int(n) for n in shape), dtype, _kind(obj), bool(readonly))


def empty_like_kind(like, shape: tuple[int, int], dtype: DType):
    """A new C-contiguous ``shape`` array of ``dtype`` of ``like``'s kind, on its device.

    CuPy and PyTorch arrays allocate through their own libraries (their memory pools, in
    the current device's primary context); anything else gets a PyCUDA GPUArray in the
    current context.
    """
    kind = _kind(like)
    if kind == "cupy":
        import cupy

        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=dtype.numpy)
    if kind == "torch":
        import torch

        return torch.empty(shape, dtype=like.dtype, device=like.device)
    from pycuda import gpuarray

    return gpuarray.empty(shape, dtype.numpy)
