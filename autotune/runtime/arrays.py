"""Device arrays the library launches on: PyCUDA GPUArrays and any object exporting the
``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors, Numba device arrays, ...).

The interface (Numba's CUDA Array Interface, version 2 and 3) gives a device pointer, a
shape, a NumPy type string and strides; :func:`describe` reads and checks it without
touching CUDA, for :func:`autotune.compiled`'s launchers (C-contiguous arrays of the
kernel's dtypes). ``autotune.transpose`` reads any strided view of any element size
through :mod:`autotune.runtime.views` instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autotune.kernel.dtypes import DType, get_dtype
from autotune.errors import InvalidInputError

__all__ = ["DeviceArray", "describe", "describe_torch"]


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


def describe_torch(tensor, what: str = "input") -> DeviceArray:
    """A PyTorch tensor read through its own attributes (``data_ptr()``, ``shape``, ``dtype``,
    ``is_contiguous()``): also a tensor that requires grad, whose ``__cuda_array_interface__``
    PyTorch refuses.

    Raises:
        InvalidInputError: not on a CUDA device, not C-contiguous, empty, or of a dtype autotune
            does not support; ``what`` names it.
    """
    shape = tuple(int(n) for n in tensor.shape)
    if not getattr(tensor, "is_cuda", False):
        raise InvalidInputError(f"{what} is a PyTorch tensor on {tensor.device}; allowed: a CUDA tensor")
    if 0 in shape:
        raise InvalidInputError(f"{what} of shape {'x'.join(map(str, shape))} is empty")
    name = str(tensor.dtype).removeprefix("torch.")
    try:
        dtype = get_dtype(name)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{what}: {exc}") from None
    if not tensor.is_contiguous():
        raise InvalidInputError(f"{what} has strides {tuple(tensor.stride())} elements; allowed: C-contiguous "
                                "(make it contiguous first)")
    return DeviceArray(int(tensor.data_ptr()), shape, dtype, "torch", False)
