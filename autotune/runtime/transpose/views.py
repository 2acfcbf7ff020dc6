"""Any GPU array as a strided view of raw words: what ``autotune.transpose`` reads of its input.

PyTorch tensors are read through ``data_ptr()``, ``shape``, ``stride()`` and ``dtype``, CuPy
arrays through ``.data.ptr``, ``.shape``, ``.strides`` and ``.dtype`` (no
``__cuda_array_interface__`` dict is built: about 1 µs instead of 5-10 µs), anything else
(PyCUDA GPUArrays, Numba, ...) through ``__cuda_array_interface__``. Element types are
taken by size (1, 2, 4, 8 or 16 bytes), so bfloat16 (``'|V2'`` in the interface), bool, the
float8 types and complex64 are read as well as the NumPy dtypes: a transpose only moves
elements.
"""

from __future__ import annotations

from autotune.errors import InvalidInputError

__all__ = ["View", "view_of", "kind_of"]

_TORCH_TYPES: dict = {}  # torch.dtype -> (name, itemsize)
_READERS: dict = {}  # type -> the function reading its instances


class View:
    """A strided device array.

    Attributes:
        pointer: device address of element (0, ..., 0).
        shape: its shape; ``strides``: in elements, one per dim (may be 0, never negative).
        itemsize: bytes per element (1, 2, 4, 8 or 16); ``type_name``: its element type's
            name in the caller's library (``bfloat16``, ``complex64``, ``float8_e4m3fn``, ...).
        kind: ``"torch"``, ``"cupy"``, ``"pycuda"`` or ``"cai"`` (another exporter).
        readonly: the exporter marked the memory read-only.
        native: the element type object of the caller's library (to allocate a result).
        device: the CUDA ordinal (PyTorch and CuPy; -1 for other kinds).
    """

    __slots__ = ("pointer", "shape", "strides", "itemsize", "type_name", "kind", "readonly", "native", "device")

    def __init__(self, pointer, shape, strides, itemsize, type_name, kind, readonly, native, device=-1) -> None:
        self.pointer, self.shape, self.strides, self.itemsize = pointer, shape, strides, itemsize
        self.type_name, self.kind, self.readonly, self.native = type_name, kind, readonly, native
        self.device = device  # CUDA ordinal where the library tells (torch, CuPy), else -1


def kind_of(obj) -> str:
    """``"torch"``, ``"cupy"``, ``"pycuda"`` or ``"cai"``: the library of ``obj``'s type."""
    module = type(obj).__module__.split(".")[0]
    return module if module in ("pycuda", "cupy", "torch") else "cai"


def view_of(obj, what: str = "input") -> View:
    """The :class:`View` of ``obj``, checked to be a non-empty, unmasked device array of
    1, 2, 4, 8 or 16-byte elements with non-negative strides that are whole elements.

    Raises:
        InvalidInputError: ``obj`` is not a GPU array (a host tensor or array, or no
            interface), is empty or masked, or its elements or strides are not allowed;
            ``what`` names it.
    """
    reader = _READERS.get(type(obj))
    if reader is None:
        kind = kind_of(obj)
        reader = _READERS[type(obj)] = _torch if kind == "torch" else _cupy if kind == "cupy" else _cai
    view = reader(obj, what)
    if 0 in view.shape:
        raise InvalidInputError(f"{what} of shape {'x'.join(map(str, view.shape))} is empty")
    if view.itemsize not in (1, 2, 4, 8, 16):
        raise InvalidInputError(f"{what} has {view.itemsize}-byte elements ({view.type_name}); allowed: 1, 2, 4, "
                                "8 or 16 bytes")
    return view


def _torch(t, what: str) -> View:
    device = t.get_device()
    if device < 0:
        raise InvalidInputError(f"{what} is a PyTorch tensor on {t.device}; allowed: a CUDA tensor")
    dt = t.dtype
    info = _TORCH_TYPES.get(dt)
    if info is None:
        info = _TORCH_TYPES[dt] = (str(dt).removeprefix("torch."), t.element_size())
    return View(t.data_ptr(), tuple(t.shape), t.stride(), info[1], info[0], "torch", False, dt, device)


def _cupy(a, what: str) -> View:
    dt = a.dtype
    size = dt.itemsize
    return View(a.data.ptr, a.shape, _elements(a.strides, size, a.shape, what), size, dt.name, "cupy", False, dt,
                a.device.id)


def _cai(obj, what: str) -> View:
    from autotune.runtime.arrays import read_interface

    cai = read_interface(obj, what, "a PyTorch CUDA tensor, a CuPy array, a PyCUDA GPUArray or an object with "
                         "__cuda_array_interface__")  # every field checked: no KeyError, TypeError, AttributeError
    dt, shape = cai.dtype, cai.shape
    strides = cai.strides
    if strides is None:  # C-contiguous
        strides, step = [], 1
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
    else:
        strides = _elements(strides, dt.itemsize, shape, what)
    name = f"raw {dt.itemsize}-byte words" if dt.kind == "V" else dt.name
    return View(cai.pointer, shape, tuple(strides), dt.itemsize, name, kind_of(obj), cai.readonly, dt)


def _elements(strides, itemsize: int, shape, what: str) -> tuple[int, ...]:
    """Byte strides as element strides (those of dims of one element are moot: 0)."""
    out = []
    for s, n in zip(strides, shape):
        if n > 1 and (s < 0 or s % itemsize):
            raise InvalidInputError(f"{what} has strides {tuple(strides)} bytes; allowed: non-negative multiples "
                                    f"of the element size ({itemsize} bytes)")
        out.append(s // itemsize if n > 1 else 0)
    return tuple(out)
