"""Verifying and timing configs on a GPU (PyCUDA, CUDA events).

Method, per config (following the CUDA transpose study's effective-bandwidth metric):

1. Compile (:class:`~autotune.compile.Compiler`) and check the block against the limits.
2. Verify: fresh random bytes as input; the output buffer, with guard bytes on both
   sides, is poisoned with ``0xA5``; the kernel runs once; the output must equal NumPy's
   result bit for bit and the guards must be untouched. Repeated with poison ``0x5A``, so
   an element the kernel never writes cannot pass by matching the poison.
3. Time: warm-up launches, then ``repeats`` samples between CUDA events; each sample
   covers a batch of launches long enough that the GPU never waits for the CPU.
   Median, min and max per launch, in ms.
4. Effective bandwidth ``2 * rows * cols * itemsize / median`` (GB/s) and its % of the
   device-to-device ``cudaMemcpy`` of the same bytes between the same buffers, timed the
   same way in the same run.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .compile import CompiledKernel, Compiler
from .config import Config
from .device import DeviceInfo, cuda_driver, open_device
from .dtypes import DType
from .errors import InvalidInputError, TrialFailed
from .measurement import Measurement, effective_bandwidth_gbps

__all__ = ["Benchmark", "Timing", "open_benchmark", "check_fits", "MAX_DIM"]

GUARD_BYTES = 1 << 16
POISONS = (0xA5, 0x5A)
MAX_DIM = 2**31 - 1
_MIN_SAMPLE_MS = 0.2


@dataclass(frozen=True)
class Timing:
    """Per-launch times of repeated launches, ms."""

    median_ms: float
    min_ms: float
    max_ms: float
    launches: int


class Benchmark:
    """Verifies and times configs of any catalog kernel for one device, shape and dtype.

    Must be used inside a current CUDA context (:func:`autotune.device.open_device`).

    Args:
        device: the current device.
        rows, cols: input shape, each in ``1 .. 2**31-1``.
        dtype: element type.
        warmup: launches before timing.
        repeats: timed samples (>= 20).
        seed: seed of the random inputs (``None``: fresh entropy).

    Raises:
        InvalidInputError: bad shape, or the buffers do not fit in free device memory.
    """

    def __init__(self, device: DeviceInfo, rows: int, cols: int, dtype: DType, *,
                 warmup: int = 10, repeats: int = 50, seed: int | None = None) -> None:
        if not (1 <= rows <= MAX_DIM and 1 <= cols <= MAX_DIM):
            raise InvalidInputError(f"shape {rows}x{cols} is not allowed; rows and cols are 1..{MAX_DIM}")
        if repeats < 20:
            raise InvalidInputError(f"repeats={repeats} is too few; at least 20 launches are timed")
        self.drv = cuda_driver()
        self.device, self.rows, self.cols, self.dtype = device, rows, cols, dtype
        self.warmup, self.repeats = warmup, repeats
        self.nbytes = rows * cols * dtype.itemsize
        free, _ = self.drv.mem_get_info()
        need = 2 * self.nbytes + 2 * GUARD_BYTES
        if need > 0.9 * free:
            raise InvalidInputError(
                f"shape {rows}x{cols} {dtype.name} needs {need / 2**30:.1f} GiB on the GPU; "
                f"{free / 2**30:.1f} GiB is free")
        self.rng = np.random.default_rng(seed)
        self.compiler = Compiler(device.arch)
        self.d_in = self.drv.mem_alloc(self.nbytes)
        self.d_out_full = self.drv.mem_alloc(self.nbytes + 2 * GUARD_BYTES)
        self.d_out = int(self.d_out_full) + GUARD_BYTES
        self._memcpy: Timing | None = None

    def memcpy(self) -> Timing:
        """Device-to-device memcpy of the input buffer into the output buffer (measured once)."""
        if self._memcpy is None:
            self._memcpy = self._time(lambda: self.drv.memcpy_dtod_async(self.d_out, self.d_in, self.nbytes))
        return self._memcpy

    @property
    def memcpy_gbps(self) -> float:
        """Effective bandwidth of :meth:`memcpy`, GB/s (bytes read + bytes written)."""
        return effective_bandwidth_gbps(self.rows, self.cols, self.dtype.itemsize, self.memcpy().median_ms)

    def measure(self, config: Config) -> Measurement:
        """Compile, verify and time ``config``.

        Raises:
            TrialFailed: compile error, block over the device limits, failed launch, or a
                result that differs from NumPy's.
        """
        compiled = self.compiler(config, self.dtype)
        compiled.check_launch(self.device)
        launch = self._launcher(compiled)
        self.verify(compiled, launch)
        t = self._time(launch)
        gbps = effective_bandwidth_gbps(self.rows, self.cols, self.dtype.itemsize, t.median_ms)
        return Measurement(t.median_ms, t.min_ms, t.max_ms, gbps, 100.0 * gbps / self.memcpy_gbps,
                           compiled.registers, compiled.shared_bytes, t.launches)

    def _launcher(self, compiled: CompiledKernel):
        k, c = compiled.kernel, compiled.config
        grid, block = k.grid(c, self.rows, self.cols), k.block(c)
        if grid[0] > MAX_DIM:
            raise TrialFailed("resources", f"{grid[0]} blocks > {MAX_DIM} allowed in one grid")
        fn, out, inp = compiled.function, self.d_out, self.d_in
        rows, cols = np.int32(self.rows), np.int32(self.cols)
        return lambda: fn.prepared_async_call(grid, block, None, out, inp, rows, cols)

    def verify(self, compiled: CompiledKernel, launch) -> None:
        """Run once on fresh random input into poisoned output; compare with NumPy bit for bit.

        Raises:
            TrialFailed: ``wrong_result`` (first mismatch, or guard bytes written) or
                ``launch_error``/``resources`` if the launch itself fails.
        """
        drv, n = self.drv, self.nbytes
        a = np.frombuffer(self.rng.bytes(n), dtype=self.dtype.numpy).reshape(self.rows, self.cols)
        expected = compiled.kernel.reference(a).view(f"u{self.dtype.itemsize}")
        drv.memcpy_htod(self.d_in, a)
        host = np.empty(n + 2 * GUARD_BYTES, dtype=np.uint8)
        for poison in POISONS:
            drv.memset_d8(self.d_out_full, poison, host.size)
            self._run_once(launch)
            drv.memcpy_dtoh(host, self.d_out_full)
            _check_guards(host, poison, n)
            got = host[GUARD_BYTES:GUARD_BYTES + n].view(expected.dtype).reshape(expected.shape)
            _check_equal(got, expected)

    def _run_once(self, launch) -> None:
        drv = self.drv
        try:
            launch()
            drv.Context.synchronize()
        except drv.LaunchError as exc:
            status = "resources" if "resources" in str(exc) else "launch_error"
            raise TrialFailed(status, str(exc).splitlines()[0]) from None

    def _time(self, launch) -> Timing:
        drv = self.drv
        start, end = drv.Event(), drv.Event()
        start.record()
        for _ in range(self.warmup):
            launch()
        end.record()
        end.synchronize()
        per_launch = max(end.time_since(start) / max(self.warmup, 1), 1e-4)
        batch = max(1, math.ceil(_MIN_SAMPLE_MS / per_launch))
        events = [(drv.Event(), drv.Event()) for _ in range(self.repeats)]
        for s, e in events:
            s.record()
            for _ in range(batch):
                launch()
            e.record()
        events[-1][1].synchronize()
        ms = np.array([e.time_since(s) / batch for s, e in events])
        return Timing(float(np.median(ms)), float(ms.min()), float(ms.max()), self.repeats * batch)


def _check_guards(host: np.ndarray, poison: int, n: int) -> None:
    for name, guard in (("before", host[:GUARD_BYTES]), ("after", host[GUARD_BYTES + n:])):
        bad = np.flatnonzero(guard != poison)
        if bad.size:
            raise TrialFailed("wrong_result", f"wrote {bad.size} guard bytes {name} the output buffer")


def _check_equal(got: np.ndarray, expected: np.ndarray) -> None:
    diff = got != expected
    if diff.any():
        count = int(diff.sum())
        r, c = np.unravel_index(int(np.argmax(diff)), diff.shape)
        raise TrialFailed("wrong_result", f"{count} of {diff.size} elements differ from NumPy; first at "
                          f"[{r}, {c}]: got 0x{int(got[r, c]):x}, expected 0x{int(expected[r, c]):x}")


def check_fits(device: DeviceInfo, rows: int, cols: int, dtype: DType) -> None:
    """Refuse a shape whose input and output buffers exceed the device's memory.

    Raises:
        InvalidInputError: naming the shape, the bytes needed and the device's memory.
    """
    need = 2 * rows * cols * dtype.itemsize + 2 * GUARD_BYTES
    if need > device.total_memory:
        raise InvalidInputError(
            f"shape {rows}x{cols} {dtype.name} needs {need / 2**30:.1f} GiB on the GPU; "
            f"{device.name} has {device.total_memory / 2**30:.1f} GiB")


@contextlib.contextmanager
def open_benchmark(ordinal: int, rows: int, cols: int, dtype: DType, **options) -> Iterator[Benchmark]:
    """A :class:`Benchmark` on device ``ordinal``, inside its context, freed on exit.

    ``options`` are passed to :class:`Benchmark` (warmup, repeats, seed).

    Raises:
        GPUUnavailableError: no PyCUDA, driver or device.
        InvalidInputError: ``ordinal`` out of range, bad shape, or too large for the GPU.
    """
    with open_device(ordinal) as device:
        check_fits(device, rows, cols, dtype)
        bench = Benchmark(device, rows, cols, dtype, **options)
        try:
            yield bench
        finally:
            bench.d_in.free()
            bench.d_out_full.free()
