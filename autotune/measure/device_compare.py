"""Comparing a kernel's outputs with the reference on the GPU: only a count and an index come back.

The kernels are in ``device_compare.cu`` beside this module (package data: a wheel carries it
inside ``autotune/measure``). They are compiled once per process with the project's own nvcc
path (:func:`autotune.measure.compile.cubin_of_source`, so through the on-disk cubin cache) and
loaded once per benchmark (per CUDA context). Each launch reduces one array to four unsigned
64-bit words (see the ``.cu`` file): a count and the first flat index of

* :meth:`DeviceComparer.not_byte`: bytes that do not hold a value (guards that must still
  hold the poison);
* :meth:`DeviceComparer.exact`: elements whose raw words of the element size (1, 2, 4 or
  8 bytes) differ from the expected ones (NaN payloads and signed zeros count);
* :meth:`DeviceComparer.tolerance`: elements not finite, and elements with
  ``|got - expected| > atol + rtol * |expected|`` in float64 (expected is float64; the device
  rounds each operation, so the test is NumPy's on the host);
* :meth:`DeviceComparer.norm`: elements not finite, and the two sums of squares of a relative
  Frobenius error ``||got - expected|| / ||expected||`` (a matrix product's check, declared by a
  ``module:function`` comparison's ``relative_norm``: :mod:`autotune.measure.verify`).

The device is reached only through ``drv`` (the CUDA backend, :mod:`autotune.measure.backends`, or the fake of
``tests/fakes.py``, which runs the same reductions in NumPy).
"""

from __future__ import annotations

import math
from importlib import resources

import numpy as np

__all__ = ["SOURCE", "DeviceComparer", "compare_cubin", "TOLERANCE_TYPES", "NORM_TYPES"]

SOURCE = "device_compare.cu"
"""The kernels' source file, in this package."""
BLOCK = 256
"""Threads per block of every comparison launch."""
MAX_BLOCKS = 4096
"""At most this many blocks: each thread then walks the array in a grid-stride loop."""
TOLERANCE_TYPES = ("float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                   "int64", "uint64")
"""Element types :meth:`DeviceComparer.tolerance` takes (others are compared on the host)."""
NORM_TYPES = ("float16", "float32", "float64")
"""Element types :meth:`DeviceComparer.norm` takes."""
_RESULT_INIT = np.array([0, 2**64 - 1, 0, 2**64 - 1], np.uint64)
_NORM_INIT = np.array([0, 2**64 - 1, 0, 0], np.uint64)  # words 2 and 3: float64 0.0
_CUBINS: dict[str, bytes] = {}


def compare_cubin(arch: str) -> bytes:
    """The comparison kernels built for ``arch`` (``sm_90``), once per process.

    Raises:
        TrialFailed: ``compile_error`` (the package's source does not build with this nvcc).
        GPUUnavailableError: ``nvcc`` is not on PATH.
    """
    if arch not in _CUBINS:
        from autotune.measure.compile import cubin_of_source

        source = resources.files("autotune.measure").joinpath(SOURCE).read_text()
        _CUBINS[arch] = cubin_of_source(source, ["-O3"], arch)[0]
    return _CUBINS[arch]


class DeviceComparer:
    """The comparison kernels loaded in the current context, and their 32-byte result buffer.

    Args:
        drv: the CUDA backend (or a fake).
        module: the loaded module of :func:`compare_cubin` (``drv.load_module``).
    """

    def __init__(self, drv, module) -> None:
        self.drv, self.module = drv, module
        self._functions: dict[str, object] = {}
        self._result = drv.mem_alloc(_RESULT_INIT.nbytes)

    @classmethod
    def load(cls, drv, arch: str) -> DeviceComparer:
        """Build (once per process) and load the kernels for ``arch`` into the current context.

        Raises:
            TrialFailed, GPUUnavailableError: as :func:`compare_cubin`.
        """
        return cls(drv, drv.load_module(compare_cubin(arch)))

    def free(self) -> None:
        """Release the result buffer."""
        self._result.free()

    def _run(self, name: str, signature: str, n: int, *args, init: np.ndarray = _RESULT_INIT) -> np.ndarray:
        """Launch ``name`` over ``n`` elements; its four result words (uint64), set to ``init`` before."""
        fn = self._functions.get(name)
        if fn is None:
            fn = self._functions[name] = self.module.function(name, signature)
        self.drv.memcpy_htod(self._result, init)
        if n:
            blocks = max(1, min(MAX_BLOCKS, math.ceil(n / BLOCK)))
            fn.launch((blocks, 1, 1), (BLOCK, 1, 1), (*args, np.uintp(int(self._result))))
        out = np.empty(4, np.uint64)
        self.drv.memcpy_dtoh(out, self._result)  # waits for the launch
        return out

    def not_byte(self, address: int, nbytes: int, value: int) -> tuple[int, int]:
        """``(count, first)``: bytes in ``[address, address + nbytes)`` that are not ``value``,
        and the offset of the first (``count`` 0: ``first`` is meaningless)."""
        out = self._run("not_byte", "PQIP", nbytes, np.uintp(address), np.uint64(nbytes), np.uint32(value))
        return int(out[0]), int(out[1])

    def exact(self, got: int, expected: int, n: int, itemsize: int) -> tuple[int, int]:
        """``(count, first)``: elements of ``n`` (words of ``itemsize`` bytes: 1, 2, 4 or 8) at
        device address ``got`` that differ from those at ``expected``, and the first's index.

        Raises:
            ValueError: another ``itemsize``.
        """
        if itemsize not in (1, 2, 4, 8):
            raise ValueError(f"itemsize {itemsize} is not allowed; allowed: 1, 2, 4, 8")
        out = self._run(f"exact_u{itemsize}", "PPQP", n, np.uintp(got), np.uintp(expected), np.uint64(n))
        return int(out[0]), int(out[1])

    def tolerance(self, got: int, expected: int, n: int, dtype: str, atol: float,
                  rtol: float) -> tuple[int, int, int, int]:
        """``(not_finite, first_not_finite, off, first_off)`` of ``n`` elements of ``dtype``
        (one of :data:`TOLERANCE_TYPES`) at ``got`` against the float64 elements at
        ``expected``; ``off`` counts only finite elements.

        Raises:
            ValueError: ``dtype`` is not one of :data:`TOLERANCE_TYPES`.
        """
        if dtype not in TOLERANCE_TYPES:
            raise ValueError(f"dtype {dtype} is not allowed; allowed: {', '.join(TOLERANCE_TYPES)}")
        out = self._run(f"tolerance_{dtype}", "PPQddP", n, np.uintp(got), np.uintp(expected), np.uint64(n),
                        np.float64(atol), np.float64(rtol))
        return int(out[0]), int(out[1]), int(out[2]), int(out[3])

    def norm(self, got: int, expected: int, n: int, dtype: str) -> tuple[int, int, float, float]:
        """``(not_finite, first_not_finite, diff2, ref2)`` of ``n`` elements of ``dtype`` (one of
        :data:`NORM_TYPES`) at ``got`` against the float64 elements at ``expected``: ``diff2``
        sums ``(got - expected)**2`` over the finite elements, ``ref2`` sums ``expected**2``
        (float64, in the order the atomics land: the last bits may vary from run to run).

        Raises:
            ValueError: ``dtype`` is not one of :data:`NORM_TYPES`.
        """
        if dtype not in NORM_TYPES:
            raise ValueError(f"dtype {dtype} is not allowed; allowed: {', '.join(NORM_TYPES)}")
        out = self._run(f"norm_{dtype}", "PPQP", n, np.uintp(got), np.uintp(expected), np.uint64(n), init=_NORM_INIT)
        sums = out[2:].view(np.float64)
        return int(out[0]), int(out[1]), float(sums[0]), float(sums[1])
