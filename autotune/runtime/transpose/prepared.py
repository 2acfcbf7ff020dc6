"""A transpose launch made ready once and repeated cheaply: handle, geometry, packed arguments.

:class:`PreparedTranspose` keeps, for one (context, kernel, rows, cols, element size), the
kernel's function handle, its grid and block, and its arguments packed once
(:class:`~autotune.measure.packing.PackedArguments`), of which a call only refills the two
pointers, and the row pitch and batch stride where the kernel takes them (through views of
their bytes). A call is then one ``cuLaunchKernel`` (one per 65,535 matrices
of a batch: the most blocks in z). Instances are per thread (the slots are refilled per
call), cached by :mod:`autotune.runtime.transpose.op`.
"""

from __future__ import annotations

import ctypes

from autotune.errors import AutotuneError
from autotune.kernel.model import Array
from autotune.measure.packing import PackedArguments, kernel_layout
from autotune.runtime import driver, recording
from autotune.runtime.compiled import Launcher

__all__ = ["PreparedTranspose", "MAX_GRID_Z"]

MAX_GRID_Z = 65535
"""The most blocks of a grid in z: matrices of a batch per launch."""


class PreparedTranspose:
    """One transpose kernel's launch for rows x cols matrices, ready to repeat.

    Attributes:
        launcher: the :class:`~autotune.runtime.compiled.Launcher` it was made from (its
            ``chosen`` tells the config and the lookup rung).
        pitched: the kernel takes a row pitch and batch stride (``ld``, ``batch_stride``),
            so it can read views and batches.
        matrix_bytes: bytes of one rows x cols output matrix.
        unsettled: the launcher's same_arch guard is to run (or its verdict to be taken) before
            the first launch (:mod:`autotune.runtime.guard`; :func:`autotune.transpose` does it).
    """

    __slots__ = ("launcher", "pitched", "matrix_bytes", "_argv", "_out", "_src", "_ld", "_batch_stride", "_name",
                 "_itemsize", "_packed", "_launch", "_grid_z", "_stream", "_call", "unsettled")

    def __init__(self, launcher: Launcher, itemsize: int) -> None:
        k = launcher.kernel
        self.launcher = launcher
        self._name = k.name
        self._launch = driver.libcuda().cuLaunchKernel
        packed = PackedArguments(kernel_layout(k.args))
        for a in k.args:
            if not isinstance(a, Array):
                packed.put(a.name, launcher.scalars[a.name].value)
        arrays = [a.name for a in k.args if isinstance(a, Array)]
        # views aliasing the refilled arguments' bytes: one ``.value =`` each per call
        self._out, self._src = packed.view(arrays[0]), packed.view(arrays[1])
        self.pitched = "ld" in packed.offsets and "batch_stride" in packed.offsets
        self._ld, self._batch_stride = (packed.view("ld"), packed.view("batch_stride")) if self.pitched else (None, None)
        self._packed = packed  # argv points into its buffer: it lives as long as this does
        self._argv = packed.argv
        rows, cols = launcher.dims[0][1], launcher.dims[1][1]
        self.matrix_bytes, self._itemsize = rows * cols * itemsize, itemsize
        self._grid_z, self._stream = ctypes.c_uint(1), ctypes.c_void_p()
        self.unsettled = launcher.pending is not None  # the same_arch guard to run (or apply) at the first call
        self.refresh()

    def refresh(self) -> None:
        """Launch the launcher's function, geometry and shared memory as they are now (after the
        same_arch guard chose the default's: :mod:`autotune.runtime.guard`)."""
        # cuLaunchKernel's arguments as ctypes objects made once (none is converted per call);
        # grid z and the stream are refilled per call
        launcher = self.launcher
        (gx, gy, _), (bx, by, bz) = launcher.grid, launcher.block
        self._call = (ctypes.c_void_p(launcher.function), ctypes.c_uint(gx), ctypes.c_uint(gy), self._grid_z,
                      ctypes.c_uint(bx), ctypes.c_uint(by), ctypes.c_uint(bz), ctypes.c_uint(launcher.shared),
                      self._stream, self._argv, None)

    def __call__(self, out: int, src: int, ld: int, batch: int, batch_stride: int, stream: int) -> None:
        """Transpose ``batch`` matrices at device address ``src`` (rows ``ld`` elements apart,
        matrices ``batch_stride`` elements apart) into contiguous ones at ``out``, on ``stream``.
        A kernel that is not :attr:`pitched` must only be given contiguous single matrices.

        Raises:
            AutotuneError: the driver refused the launch.
        """
        if self.pitched:
            self._ld.value = ld
            self._batch_stride.value = batch_stride
        self._stream.value = stream or None
        for first in range(0, batch, MAX_GRID_Z):
            self._out.value = out + first * self.matrix_bytes
            self._src.value = src + first * batch_stride * self._itemsize
            self._grid_z.value = min(MAX_GRID_Z, batch - first)
            status = self._launch(*self._call)
            if status != 0:
                raise AutotuneError(f"cuLaunchKernel of {self._name} failed with CUDA error {status}")


recording.register_method(PreparedTranspose, "__call__", recording.transpose_call)  # counted while recording
