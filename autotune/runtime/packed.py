"""One kernel's launch for one shape, made ready once: handle, geometry and a packed argument buffer.

:class:`PackedLaunch` keeps the kernel's arguments in one 8-byte aligned buffer: the array
pointers first, 8 bytes each, packed by one precompiled ``struct`` per call, then the scalars
(fixed for the shape, written once, each at its alignment). The ``void **`` that
``cuLaunchKernel`` reads points into that buffer, and every other argument of the call is a
ctypes object made once (only the stream is refilled), so a call is one ``pack_into`` and one
foreign call (the method of :class:`~autotune.runtime.transpose.prepared.PreparedTranspose`, with the
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
import struct

from autotune import settings
from autotune.errors import AutotuneError, InvalidInputError
from autotune.kernel.model import Array
from autotune.kernel.resets import fill_ops
from autotune.measure.packing import POINTER, SCALAR_FORMATS, PackedArguments
from autotune.runtime import driver, recording
from autotune.runtime.compiled import Launcher

__all__ = ["PackedLaunch", "launch_api"]



def launch_api() -> str:
    """``"cuda.bindings"`` where ``cuda.bindings`` (cuda-python) imports, else ``"ctypes"``;
    ``AUTOTUNE_LAUNCH_API`` (``ctypes`` or ``cuda.bindings``) overrides.

    Raises:
        InvalidInputError: ``AUTOTUNE_LAUNCH_API`` is something else.
    """
    chosen = settings.LAUNCH_API.get()
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
    """A :class:`~autotune.runtime.compiled.Launcher` (kernel, config, dims, dtype, loaded function)
    ready to launch on any arrays of its shapes.

    Attributes:
        launcher: what it was made from (``chosen``: the config and the lookup rung).
        resets: ``(array index, fills)`` of the arrays whose kernel file gives ``reset``
            (:func:`autotune.kernel.resets.fill_ops`).
        go: ``go(pointers, stream)``: pack and launch, nothing else (the hot path's call; a
            closure over everything made once). While a recording is active it is a counting
            one (:mod:`autotune.runtime.recording`), ``raw_go`` the original.
        api: ``"cuda.bindings"`` or ``"ctypes"`` (:func:`launch_api`).
    """

    __slots__ = ("launcher", "resets", "pack", "buf", "argv", "stream", "call", "run", "name", "unpack", "api", "go", "raw_go",
                 "__weakref__")

    def __init__(self, launcher: Launcher) -> None:
        k = launcher.kernel
        self.launcher, self.name = launcher, k.name
        arrays = [a for a in k.args if isinstance(a, Array)]
        scalars = [a for a in k.args if not isinstance(a, Array)]
        # the array pointers first, at offsets 0, 8, ...: one pack_into writes them all per call
        packed = PackedArguments([(a.name, POINTER) for a in arrays] + [(a.name, SCALAR_FORMATS[a.ctype]) for a in scalars],
                                 [a.name for a in k.args])
        for a in scalars:
            packed.put(a.name, launcher.scalars[a.name].value)
        self.buf, self.argv = packed.buffer, packed.argv
        self.pack = struct.Struct(f"={len(arrays)}Q").pack_into
        self.unpack = struct.Struct(f"={len(arrays)}Q").unpack_from
        (gx, gy, gz), (bx, by, bz) = launcher.grid, launcher.block
        self.stream = ctypes.c_void_p()
        self.call = (ctypes.c_void_p(launcher.function), ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(gz),
                     ctypes.c_uint(bx), ctypes.c_uint(by), ctypes.c_uint(bz), ctypes.c_uint(launcher.shared),
                     self.stream, self.argv, None)
        self.run = driver.libcuda().cuLaunchKernel
        self.api = launch_api()
        if self.api == "cuda.bindings":
            from cuda.bindings import driver as cb

            self.go = _bindings_launch(self.pack, self.buf, cb.cuLaunchKernel,
                                       (cb.CUfunction(launcher.function), gx, gy, gz, bx, by, bz, launcher.shared),
                                       ctypes.addressof(self.argv), cb.CUstream, cb.CUresult.CUDA_SUCCESS, k.name)
        else:
            self.go = _ctypes_launch(self.pack, self.buf, self.run, self.call, self.stream, k.name)
        self.resets = [(i, fill_ops(a.reset, dt.numpy, nbytes))
                       for i, (a, (_, shape, dt, _w)) in enumerate(zip(arrays, launcher.expected))
                       if a.reset is not None
                       for nbytes in [int(dt.itemsize * _count(shape))]]
        self.raw_go = self.go
        recording.track(self)  # counted while a recording is active (the cold path only)

    def __call__(self, pointers, stream: int, reset: bool = False) -> None:
        """Launch on the arrays at device addresses ``pointers`` (one per array argument, in
        order) on ``stream``; with ``reset``, first queue the resets of the arrays that have one.

        Raises:
            AutotuneError: the driver refused the launch or a memset.
        """
        if reset:
            pointers = list(pointers)
            self.pack(self.buf, 0, *pointers)
            self.clear(stream)
        self.go(pointers, stream)

    def clear(self, stream: int) -> None:
        """Queue on ``stream`` the resets of the arrays last packed (see :attr:`resets`)."""
        pointers = self.unpack(self.buf, 0)
        for i, fills in self.resets:
            driver.fill_async(fills, pointers[i], stream)


def _ctypes_launch(pack, buf, run, call, stream_slot, name: str):
    """``go(pointers, stream)`` through ctypes: ``call`` holds every argument of cuLaunchKernel
    as a ctypes object, ``stream_slot`` the one refilled."""
    def go(pointers, stream: int) -> None:
        pack(buf, 0, *pointers)
        stream_slot.value = stream
        status = run(*call)
        if status != 0:
            raise AutotuneError(f"cuLaunchKernel of {name} failed with CUDA error {status}")
    return go


def _bindings_launch(pack, buf, run, geometry: tuple, argv: int, make_stream, success, name: str):
    """``go(pointers, stream)`` through cuda.bindings: ``geometry`` is the CUfunction, grid, block
    and shared bytes; the CUstream of each handle is made once (at most 64 kept)."""
    streams: dict = {}

    def go(pointers, stream: int) -> None:
        pack(buf, 0, *pointers)
        s = streams.get(stream)
        if s is None:
            if len(streams) >= 64:
                streams.clear()
            s = streams[stream] = make_stream(stream)
        status = run(*geometry, s, argv, 0)[0]
        if status is not success:
            raise AutotuneError(f"cuLaunchKernel of {name} failed with CUDA error {int(status)} ({status.name})")
    return go


def _count(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
