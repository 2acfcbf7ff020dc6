"""Device buffers of a kernel's arguments for one problem, and the host values put in them.

:class:`ArgSet` is one set of device arrays for every :class:`~autotune.kernel.model.Array`
argument of a kernel on given dims: each checked output (role ``out``/``inout``) has
``GUARD_BYTES`` of guard on each side, so writes past either end are caught. A benchmark
keeps one set, plus more sets to rotate over when the whole footprint fits in twice the L2
(so no config is credited with cache bandwidth).

Input values (:func:`host_values`) follow each array's ``init``: ``uniform`` (uniform(-1, 1)
floats; integers in -100..99, or 0..199 unsigned), ``bits`` (random bytes: every bit
pattern, NaNs included, for bit-exact kernels), ``zeros``, ``ones``, or a ``.npy`` file of the
values themselves (a user's arrays, :func:`autotune.tune_kernel`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from typing import TYPE_CHECKING

from autotune.errors import InvalidInputError
from autotune.kernel.dtypes import DType
from autotune.kernel.model import Array, Kernel, Scalar

if TYPE_CHECKING:
    from autotune.kernel.problem import Problem
    from autotune.measure.device import DeviceInfo

__all__ = ["GUARD_BYTES", "ArgSet", "array_layout", "check_fits", "host_values", "random_bytes", "scalar_values"]

GUARD_BYTES = 1 << 16
"""Guard bytes on each side of every checked output."""

_NUMPY_SCALARS = {"int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
                  "float32": np.float32, "float64": np.float64}


def array_layout(kernel: Kernel, env: Mapping[str, int], dtype: DType) -> list[tuple[Array, tuple[int, ...], DType]]:
    """Each array argument with its shape and element type for ``env`` (dims, fixed macros, itemsize)."""
    return [(a, a.shape_of(env), a.dtype_of(dtype)) for a in kernel.arrays]


def scalar_values(kernel: Kernel, env: Mapping[str, int]) -> dict[str, np.generic]:
    """Each scalar argument's value, as a NumPy scalar of its C type."""
    return {a.name: _NUMPY_SCALARS[a.ctype](a.value(env)) for a in kernel.args if isinstance(a, Scalar)}


def random_bytes(rng: np.random.Generator, nbytes: int) -> np.ndarray:
    """``nbytes`` uniformly random bytes (uint8): the raw 64-bit words of ``rng``'s bit generator
    (PCG64's every bit is uniform), about 4x faster than ``rng.integers`` of 32-bit words and
    7x faster than ``rng.bytes``."""
    words = rng.bit_generator.random_raw(-(-nbytes // 8))
    return words.view(np.uint8)[:nbytes]


def host_values(array: Array, shape: tuple[int, ...], dtype: DType, rng: np.random.Generator) -> np.ndarray:
    """Fresh host values of ``array`` per its ``init`` (see module doc); an ``init`` that is a
    ``.npy`` file: its values, which must have ``shape`` and ``dtype``.

    Raises:
        KernelFileError: the ``.npy`` file is unreadable or of another shape or element type.
    """
    if array.init.endswith(".npy"):
        return _saved(array, shape, dtype)
    count = math.prod(shape)
    if array.init == "bits":
        return random_bytes(rng, count * dtype.itemsize).view(dtype.numpy).reshape(shape)
    if array.init in ("zeros", "ones"):
        return (np.zeros if array.init == "zeros" else np.ones)(shape, dtype=dtype.numpy)
    kind = dtype.numpy.kind
    if dtype.numpy in (np.float32, np.float64):  # drawn in the type itself: 5x faster than via float64
        values = rng.random(size=shape, dtype=dtype.numpy)
        values *= 2
        values -= 1
        return values
    if kind == "f":
        return rng.uniform(-1.0, 1.0, size=shape).astype(dtype.numpy)
    low = 0 if kind == "u" else -100
    return rng.integers(low, low + 200, size=shape).astype(dtype.numpy)


def _saved(array: Array, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    """The values of ``array`` saved in its ``init`` ``.npy`` file."""
    from autotune.errors import KernelFileError

    try:
        values = np.load(array.init, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise KernelFileError(f"{array.name} init {array.init}: cannot read it ({exc})") from None
    if values.shape != tuple(shape) or values.dtype != dtype.numpy:
        raise KernelFileError(f"{array.name} init {array.init}: {'x'.join(map(str, values.shape))} {values.dtype}; "
                              f"the problem's {array.name} is {'x'.join(map(str, shape))} {dtype.numpy}")
    return values


@dataclass
class ArgSet:
    """Device memory for every array argument of one launch.

    Attributes:
        allocations: the backend's device allocation of each array (an address with ``free()``),
            guards included.
        pointers: device address of element 0 of each array (past the guard of an output).
        nbytes: bytes of each array (guards excluded).
        guarded: whether each array has guards (checked outputs).
    """

    allocations: list
    pointers: list[int]
    nbytes: list[int]
    guarded: list[bool]

    @classmethod
    def allocate(cls, drv, layout: list[tuple[Array, tuple[int, ...], DType]]) -> ArgSet:
        """Allocate one set for ``layout`` (:func:`array_layout`)."""
        allocations, pointers, sizes, guarded = [], [], [], []
        for array, shape, dt in layout:
            n = math.prod(shape) * dt.itemsize
            guard = array.role in ("out", "inout")
            buf = drv.mem_alloc(max(n + (2 * GUARD_BYTES if guard else 0), 1))
            allocations.append(buf)
            pointers.append(int(buf) + (GUARD_BYTES if guard else 0))
            sizes.append(n)
            guarded.append(guard)
        return cls(allocations, pointers, sizes, guarded)

    @staticmethod
    def footprint(layout: list[tuple[Array, tuple[int, ...], DType]]) -> int:
        """Device bytes one set takes, guards included."""
        return sum(math.prod(shape) * dt.itemsize + (2 * GUARD_BYTES if a.role in ("out", "inout") else 0)
                   for a, shape, dt in layout)

    def free(self) -> None:
        """Release the device memory."""
        for buf in self.allocations:
            buf.free()


def check_fits(device: DeviceInfo, problem: Problem, free: int | None = None) -> int:
    """Device bytes one argument set of ``problem`` takes (guards included).

    Raises:
        InvalidInputError: more than the device's memory (or 90 % of ``free`` bytes).
    """
    need = ArgSet.footprint(array_layout(problem.kernel, problem.env(), problem.dtype))
    limit, what = (device.total_memory, f"{device.name} has") if free is None else (0.9 * free, "free:")
    if need > limit:
        have = device.total_memory if free is None else free
        raise InvalidInputError(f"{problem.label} needs {need / 2**30:.1f} GiB on the GPU; "
                                f"{what} {have / 2**30:.1f} GiB")
    return need
