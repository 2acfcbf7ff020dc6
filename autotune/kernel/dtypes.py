"""Element types: the name users type, the NumPy dtype, and the C type the kernels get.

The kernels are compiled with ``-DELEM_T=<ctype>``; nothing else in the package assumes
an element size. A transpose only moves elements, so the C type only has to match the
size (and, for readability of the generated code, the meaning) of the NumPy dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autotune.errors import InvalidInputError

__all__ = ["DType", "DTYPES", "ARG_DTYPES", "WORD_DTYPES", "get_dtype", "problem_dtype", "word_dtype"]


@dataclass(frozen=True)
class DType:
    """An element type.

    Attributes:
        name: NumPy name (``float32``), the one used on the command line and in the DB.
        ctype: the C/CUDA type passed as ``ELEM_T``.
        itemsize: bytes per element.
    """

    name: str
    ctype: str
    itemsize: int

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype."""
        return np.dtype(self.name)


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("int8", "signed char", 1),
        DType("uint8", "unsigned char", 1),
        DType("int16", "short", 2),
        DType("float16", "__half", 2),
        DType("int32", "int", 4),
        DType("float32", "float", 4),
        DType("int64", "long long", 8),
        DType("float64", "double", 8),
        DType("complex128", "double2", 16),
    )
}
"""The problem dtypes, by NumPy name: ``int8``, ``uint8``, ``int16``, ``float16``, ``int32``,
``float32``, ``int64``, ``float64``, ``complex128``, each a `DType`
(its C type is what the kernel's dtype macro, ``ELEM_T`` by default, is set to)."""

WORD_DTYPES: dict[int, str] = {1: "uint8", 2: "float16", 4: "float32", 8: "float64", 16: "complex128"}
"""The canonical dtype of each element size (bytes): a transpose only moves elements, so an
element type that is not in :data:`DTYPES` (bool, bfloat16, the float8 types, complex64, the
unsigned ones) is moved as words of its size with the kernel built, and the config tuned, for
the canonical dtype of that size (:func:`word_dtype`)."""


ARG_DTYPES: dict[str, DType] = {
    **DTYPES,
    **{d.name: d for d in (DType("uint16", "unsigned short", 2), DType("uint32", "unsigned int", 4),
                           DType("uint64", "unsigned long long", 8))},
}
"""Element types a kernel's array arguments may have: :data:`DTYPES` (the problem dtypes every
catalog transpose takes) and the unsigned types workspaces use (counters, indices)."""


def get_dtype(name: str | np.dtype | DType) -> DType:
    """Return the :class:`DType` for a name, a NumPy dtype or a DType.

    Raises:
        InvalidInputError: the dtype is not one of :data:`DTYPES`.
    """
    if isinstance(name, DType):
        return name
    if name is None or isinstance(name, bool):  # np.dtype(None) is float64: never a silent default
        raise InvalidInputError(f"dtype {name!r} is not allowed; allowed: {', '.join(DTYPES)}")
    try:
        key = np.dtype(name).name if not isinstance(name, str) else name
    except (TypeError, ValueError):
        raise InvalidInputError(f"dtype {name!r} is not allowed; allowed: {', '.join(DTYPES)}") from None
    try:
        return ARG_DTYPES[key]
    except KeyError:
        raise InvalidInputError(
            f"unknown dtype {str(name)!r}; allowed: {', '.join(DTYPES)}"
        ) from None


def problem_dtype(name: str | np.dtype | DType) -> DType:
    """:func:`get_dtype` of a problem's dtype: one of :data:`DTYPES` (not the unsigned types only
    a workspace argument may have: nothing is tuned for them).

    Raises:
        InvalidInputError: anything else, naming it and what is allowed.
    """
    dt = get_dtype(name)
    if dt.name not in DTYPES:
        raise InvalidInputError(f"dtype {dt.name!r} is not a problem dtype; allowed: {', '.join(DTYPES)}")
    return dt


def word_dtype(itemsize: int) -> DType:
    """The canonical :class:`DType` of elements of ``itemsize`` bytes (:data:`WORD_DTYPES`).

    Raises:
        InvalidInputError: ``itemsize`` is not 1, 2, 4, 8 or 16.
    """
    try:
        return DTYPES[WORD_DTYPES[itemsize]]
    except KeyError:
        raise InvalidInputError(f"elements of {itemsize} bytes are not allowed; allowed: "
                                f"{', '.join(map(str, WORD_DTYPES))} bytes") from None
