"""Device arrays the library launches on: PyCUDA GPUArrays and any object exporting the
``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors, Numba device arrays, ...).

The interface (Numba's CUDA Array Interface, version 2 and 3) gives a device pointer, a
shape, a NumPy type string and strides; :func:`describe` reads and checks it without
touching CUDA, for :func:`autotune.compiled`'s launchers (C-contiguous arrays of the
kernel's dtypes). ``autotune.transpose`` reads any strided view of any element size
through :mod:`autotune.runtime.transpose.views` instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from autotune.kernel.dtypes import DType, get_dtype
from autotune.errors import InvalidInputError

__all__ = ["DeviceArray", "Interface", "read_interface", "describe", "describe_torch"]


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


MAX_NDIM = 64
"""Most dimensions an array may have (NumPy's own limit)."""


@dataclass(frozen=True)
class Interface:
    """A ``__cuda_array_interface__`` read and checked (:func:`read_interface`): the data
    ``pointer`` (0 only for an empty array), ``shape``, element ``dtype`` (from ``typestr``),
    ``strides`` in bytes (``None``: C-contiguous) and whether the exporter marked it ``readonly``."""

    pointer: int
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...] | None
    readonly: bool


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


GPU_ARRAYS = "a PyCUDA GPUArray or an object with __cuda_array_interface__ (CuPy, PyTorch)"
"""What :func:`read_interface` says is allowed instead of an object without the interface."""


def read_interface(obj, what: str = "input", allowed: str = GPU_ARRAYS) -> Interface:
    """``obj.__cuda_array_interface__`` (Numba's CUDA Array Interface, versions 0 to 3), every
    field checked: ``shape`` a tuple of integers >= 0 (at most :data:`MAX_NDIM`), ``typestr`` a
    NumPy type string, ``data`` a ``(pointer, read-only flag)`` pair (a pointer > 0 unless the
    array is empty), ``strides`` ``None`` or one integer per dim, ``mask`` ``None``.

    Raises:
        InvalidInputError: ``obj`` exports no interface, reading it raised, or a field is
            missing or of another type (naming ``what``, the field and what is allowed).
    """
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        raise InvalidInputError(f"{what} of type {type(obj).__name__} is not a GPU array; allowed: {allowed}") from None
    except Exception as exc:  # a property that raises: PyTorch's for a tensor that requires grad, a user's own
        raise InvalidInputError(f"{what}: reading its __cuda_array_interface__ raised {type(exc).__name__}: "
                                f"{str(exc)[:200]}") from None

    def bad(field: str, allowed: str) -> InvalidInputError:
        value = cai.get(field, "<missing>") if isinstance(cai, dict) else cai
        text = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        return InvalidInputError(f"{what}: __cuda_array_interface__{'' if field == '' else '[' + repr(field) + ']'} "
                                 f"is {text}; allowed: {allowed}")

    if not isinstance(cai, dict):
        raise bad("", "a dict with 'shape', 'typestr' and 'data' (the CUDA Array Interface)")
    version = cai.get("version", 0)
    if not _is_int(version) or version < 0:
        raise bad("version", "an integer 0..3")
    shape = cai.get("shape")
    if not isinstance(shape, (tuple, list)) or len(shape) > MAX_NDIM or not all(_is_int(n) and n >= 0 for n in shape):
        raise bad("shape", f"a tuple of at most {MAX_NDIM} integers >= 0")
    typestr = cai.get("typestr")
    if not isinstance(typestr, str) or len(typestr) > 64:
        raise bad("typestr", "a NumPy type string such as '<f4'")
    try:
        dtype = np.dtype(typestr)
    except (TypeError, ValueError):
        raise bad("typestr", "a NumPy type string such as '<f4'") from None
    if dtype.itemsize == 0 or dtype.hasobject:
        raise bad("typestr", "a type of elements of 1 byte or more, not objects")
    data = cai.get("data")
    if (not isinstance(data, (tuple, list)) or len(data) != 2 or not (data[0] is None or _is_int(data[0]))
            or not isinstance(data[1], bool)):
        raise bad("data", "a pair (pointer, read-only flag): an integer and a bool")
    pointer = data[0] or 0
    if not 0 <= pointer < 2**64 or (pointer == 0 and 0 not in shape):
        raise bad("data", "a pointer 1..2**64-1 (0 only for an empty array)")
    strides = cai.get("strides")
    if strides is not None and (not isinstance(strides, (tuple, list)) or len(strides) != len(shape)
                                or not all(_is_int(n) for n in strides)):
        raise bad("strides", f"None or a tuple of {len(shape)} integers (bytes)")
    if cai.get("mask") is not None:
        raise InvalidInputError(f"{what} is a masked array; allowed: unmasked")
    if 0 not in shape:  # the last byte it claims must be an address
        steps = strides if strides is not None else [math.prod(shape[i + 1:]) * dtype.itemsize
                                                     for i in range(len(shape))]
        last = pointer + sum((n - 1) * abs(step) for n, step in zip(shape, steps)) + dtype.itemsize - 1
        if last >= 2**64:
            raise bad("shape", "an array that fits the 64-bit address space from its pointer (with its strides)")
    return Interface(pointer, tuple(shape), dtype, None if strides is None else tuple(strides), bool(data[1]))


def describe(obj, what: str = "input", ndim: int | None = 2) -> DeviceArray:
    """Read ``obj``'s ``__cuda_array_interface__`` (PyCUDA GPUArrays export it too), checked by
    :func:`read_interface`.

    Raises:
        InvalidInputError: ``obj`` exports no interface or a malformed one, or has not ``ndim``
            dimensions (``None``: any number), is not C-contiguous, empty, masked, or of a dtype
            autotune does not support; ``what`` names it.
    """
    cai = read_interface(obj, what)
    shape = cai.shape
    if ndim is not None and len(shape) != ndim:
        raise InvalidInputError(f"{what} has {len(shape)} dimensions {shape}; allowed: {ndim}")
    if 0 in shape:
        raise InvalidInputError(f"{what} of shape {'x'.join(map(str, shape))} is empty")
    npdtype = cai.dtype
    try:
        dtype = get_dtype(npdtype)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{what}: {exc}") from None
    strides = cai.strides
    contiguous = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * npdtype.itemsize for i in range(len(shape)))
    if strides is not None and any(n > 1 and s != c for n, s, c in zip(shape, strides, contiguous)):
        raise InvalidInputError(f"{what} has strides {tuple(strides)} bytes; allowed: C-contiguous "
                                f"{contiguous} (make it contiguous first)")
    return DeviceArray(cai.pointer, shape, dtype, _kind(obj), cai.readonly)


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
