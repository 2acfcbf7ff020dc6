"""One kernel's launch for one shape, made ready once: handle, geometry and a packed argument buffer.

:class:`PackedLaunch` keeps the kernel's arguments in one 8-byte aligned buffer: the array
pointers first, 8 bytes each, packed by one precompiled ``struct`` per call, then the scalars
(fixed for the shape, written once, each at its alignment). The ``void **`` that
``cuLaunchKernel`` reads points into that buffer, and every other argument of the call is a
ctypes object made once (only the stream is refilled), so a call is one ``pack_into`` and one
foreign call (the method of :class:`~autotune.runtime.prepared.PreparedTranspose`, with the
pointers packed in one step instead of one ctypes value each).

The call itself goes through NVIDIA's ``cuda.bindings`` (``cuda-python``) where it is installed:
its ``cuLaunchKernel`` with the function as a ``CUfunction`` made once, the stream as a
``CUstream`` cached per handle, and the packed ``void **`` by address cost about 2 µs less host
time per launch than the same call through ctypes on the H100 machine
(``benchmarks/launch_overhead.py``); without it, ctypes. ``AUTOTUNE_LAUNCH_API=ctypes`` (or
``cuda.bindings``) chooses, read when a launch is prepared.

Instances are not shared between threads (the buffer is refilled per call):
:class:`~autotune.runtime.launcher.KernelLauncher` keeps one per thread.
"""

from __future__ import annotations

import ctypes
import os
import struct

from autotune.errors import AutotuneError, InvalidInputError
from autotune.kernel.model import Array
from autotune.kernel.resets import fill_ops
from autotune.runtime import driver
from autotune.runtime.launch import Launcher

__all__ = ["PackedLaunch", "SCALAR_FORMATS", "launch_api"]

SCALAR_FORMATS = {"int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "float32": "f", "float64": "d"}
"""The ``struct`` code of each scalar argument type of a kernel file."""


def launch_api() -> str:
    """``"cuda.bindings"`` where ``cuda.bindings`` (cuda-python) imports, else ``"ctypes"``;
    ``AUTOTUNE_LAUNCH_API`` (``ctypes`` or ``cuda.bindings``) overrides.

    Raises:
        InvalidInputError: ``AUTOTUNE_LAUNCH_API`` is something else.
    """
    chosen = os.environ.get("AUTOTUNE_LAUNCH_API", "")
    if chosen not in ("", "ctypes", "cuda.bindings"):
        raise InvalidInputError(f"AUTOTUNE_LAUNCH_API={chosen!r} is not allowed; allowed: ctypes, cuda.bindings")
    if chosen == "ctypes":
        return chosen
    try:
        from cuda.bindings import driver  # noqa: F401
    except ImportError:
        if chosen:
            raise InvalidInputError("AUTOTUNE_LAUNCH_API=cuda.bindings, but cuda.bindings does not import; "
                                    "pip install cuda-python, or unset it") from None
        return "ctypes"
    return "cuda.bindings"


class PackedLaunch:
    """A :class:`~autotune.runtime.launch.Launcher` (kernel, config, dims, dtype, loaded function)
    ready to launch on any arrays of its shapes.

    Attributes:
        launcher: what it was made from (``chosen``: the config and the lookup rung).
        resets: ``(array index, fills)`` of the arrays whose kernel file gives ``reset``
            (:func:`autotune.kernel.resets.fill_ops`).
    """

    __slots__ = ("launcher", "resets", "pack", "buf", "argv", "stream", "call", "run", "name", "unpack", "api",
                 "_bound", "_streams", "_success")

    def __init__(self, launcher: Launcher) -> None:
        k = launcher.kernel
        self.launcher, self.name = launcher, k.name
        arrays = [a for a in k.args if isinstance(a, Array)]
        offsets, end = {a.name: 8 * i for i, a in enumerate(arrays)}, 8 * len(arrays)
        for a in k.args:
            if not isinstance(a, Array):
                size = struct.calcsize(SCALAR_FORMATS[a.ctype])
                end = -(-end // size) * size
                offsets[a.name], end = end, end + size
        self.buf = (ctypes.c_uint64 * max(1, -(-end // 8)))()  # 8-byte aligned
        for a in k.args:
            if not isinstance(a, Array):
                struct.pack_into(SCALAR_FORMATS[a.ctype], self.buf, offsets[a.name], launcher.scalars[a.name].value)
        base = ctypes.addressof(self.buf)
        self.argv = (ctypes.c_void_p * len(k.args))(*[base + offsets[a.name] for a in k.args])
        self.pack = struct.Struct(f"={len(arrays)}Q").pack_into
        self.unpack = struct.Struct(f"={len(arrays)}Q").unpack_from
        (gx, gy, gz), (bx, by, bz) = launcher.grid, launcher.block
        self.stream = ctypes.c_void_p()
        self.call = (ctypes.c_void_p(launcher.function), ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(gz),
                     ctypes.c_uint(bx), ctypes.c_uint(by), ctypes.c_uint(bz), ctypes.c_uint(launcher.shared),
                     self.stream, self.argv, None)
        self.run = driver.libcuda().cuLaunchKernel
        self.api = launch_api()
        self._streams: dict = {}
        if self.api == "cuda.bindings":
            from cuda.bindings import driver as cb

            self._bound = (cb.cuLaunchKernel, (cb.CUfunction(launcher.function), gx, gy, gz, bx, by, bz,
                                               launcher.shared), ctypes.addressof(self.argv), cb.CUstream)
            self._success = cb.CUresult.CUDA_SUCCESS
        self.resets = [(i, fill_ops(a.reset, dt.numpy, nbytes))
                       for i, (a, (_, shape, dt, _w)) in enumerate(zip(arrays, launcher.expected))
                       if a.reset is not None
                       for nbytes in [int(dt.itemsize * _count(shape))]]

    def __call__(self, pointers, stream: int, reset: bool = False) -> None:
        """Launch on the arrays at device addresses ``pointers`` (one per array argument, in
        order) on ``stream``; with ``reset``, first queue the resets of the arrays that have one.

        Raises:
            AutotuneError: the driver refused the launch or a memset.
        """
        self.pack(self.buf, 0, *pointers)
        if reset:
            self.clear(stream)
        if self.api == "ctypes":
            self.stream.value = stream
            status = self.run(*self.call)
            if status != 0:
                raise AutotuneError(f"cuLaunchKernel of {self.name} failed with CUDA error {status}")
            return
        run, geometry, argv, make_stream = self._bound
        s = self._streams.get(stream)
        if s is None:
            if len(self._streams) >= 64:
                self._streams.clear()
            s = self._streams[stream] = make_stream(stream)
        status = run(*geometry, s, argv, 0)[0]
        if status is not self._success:
            raise AutotuneError(f"cuLaunchKernel of {self.name} failed with CUDA error {int(status)} ({status.name})")

    def clear(self, stream: int) -> None:
        """Queue on ``stream`` the resets of the arrays last packed (see :attr:`resets`)."""
        pointers = self.unpack(self.buf, 0)
        for i, fills in self.resets:
            driver.fill_async(fills, pointers[i], stream)


def _count(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
