"""Verifying and timing configs on a GPU (PyCUDA, CUDA events).

Method, per config (following the CUDA transpose study's effective-bandwidth metric):

1. Compile (:class:`~autotune.measure.compile.Compiler`) and check the block against the limits.
2. Verify: fresh random bytes as input; the output buffer, with guard bytes on both
   sides, is poisoned with ``0xA5``; the kernel runs once; the output must equal NumPy's
   result bit for bit and the guards must be untouched. Repeated with poison ``0x5A``, so
   an element the kernel never writes cannot pass by matching the poison.
3. Time: warm-up launches, then ``repeats`` samples between CUDA events; each sample
   covers a batch of launches long enough that the GPU never waits for the CPU.
   Median, min and max per launch, in ms.
4. Effective bandwidth ``2 * rows * cols * itemsize / median`` (GB/s) and its % of the
   device-to-device ``cudaMemcpy`` of the same bytes between the same buffers, and of the
   ``copy_row`` kernel (default config) on the same shape, both timed the same way in the
   same run.

L2: when input plus output fit in twice the L2 cache, launches rotate over enough buffer
pairs (filled with the same random input) to cover four times the L2, so that no config is
credited with cache bandwidth (:attr:`Benchmark.l2_mode` says which was used).
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from autotune.measure.compile import CompiledKernel, Compiler
from autotune.kernel.config import Config
from autotune.measure.device import DeviceInfo, cuda_driver, open_device
from autotune.kernel.dtypes import DType
from autotune.errors import InvalidInputError, TrialFailed
from autotune.kernel.catalog import get_kernel
from autotune.measure.measurement import Measurement, Retiming, effective_bandwidth_gbps
from autotune.measure.verify import GUARD_BYTES, verify

__all__ = ["Benchmark", "Timing", "open_benchmark", "check_fits", "MAX_DIM"]

ROTATE_COVER = 4  # rotating buffers cover this many times the L2
MAX_PAIRS = 64
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

    Must be used inside a current CUDA context (:func:`autotune.measure.device.open_device`).

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

    depth: int = 0
    """K of a matrix product (:class:`~autotune.measure.matmul_bench.MatmulBenchmark`); 0 here."""

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
        self.compiler = Compiler(device.arch, device.max_threads_per_sm)
        self.d_in = self.drv.mem_alloc(self.nbytes)
        self.d_out_full = self.drv.mem_alloc(self.nbytes + 2 * GUARD_BYTES)
        self.d_out = int(self.d_out_full) + GUARD_BYTES
        self._extra = self._rotation_buffers()
        self.pairs = [(int(self.d_in), self.d_out)] + [(int(i), int(o)) for i, o in self._extra]
        self._memcpy: Timing | None = None
        self._copy: Timing | None = None
        self._filled = False

    @property
    def l2_mode(self) -> str:
        """``single`` (one buffer pair: larger than the L2) or ``rotating`` (see module doc)."""
        return "rotating" if len(self.pairs) > 1 else "single"

    def _rotation_buffers(self) -> list:
        footprint = 2 * self.nbytes
        if footprint >= 2 * self.device.l2_bytes:
            return []
        count = min(MAX_PAIRS, math.ceil(ROTATE_COVER * self.device.l2_bytes / footprint)) - 1
        return [(self.drv.mem_alloc(self.nbytes), self.drv.mem_alloc(self.nbytes)) for _ in range(count)]

    def _fill(self) -> None:
        """Random input in every buffer pair (timing on zeros can flatter a kernel)."""
        if not self._filled:
            a = np.frombuffer(self.rng.bytes(self.nbytes), dtype=np.uint8)
            for inp, _ in self.pairs:
                self.drv.memcpy_htod(inp, a)
            self._filled = True

    def free(self) -> None:
        """Release the device buffers."""
        for buf in (self.d_in, self.d_out_full, *itertools.chain.from_iterable(self._extra)):
            buf.free()

    def memcpy(self) -> Timing:
        """Device-to-device memcpy of the input buffer into the output buffer (measured once)."""
        if self._memcpy is None:
            self._fill()
            pairs, n, copy = itertools.cycle(self.pairs), self.nbytes, self.drv.memcpy_dtod_async

            def launch():
                inp, out = next(pairs)
                copy(out, inp, n)

            self._memcpy = self._time(launch)
        return self._memcpy

    def copy_bound(self) -> Timing:
        """The ``copy_row`` kernel at its default config on this shape (verified, measured once)."""
        if self._copy is None:
            compiled = self.compiler(get_kernel("copy_row").default_config(), self.dtype)
            compiled.check_launch(self.device)
            self.verify(compiled, self._launch_on(compiled, int(self.d_in), self.d_out))
            self._fill()
            self._copy = self._time(self._launcher(compiled))
        return self._copy

    @property
    def copy_gbps(self) -> float:
        """Effective bandwidth of :meth:`copy_bound`, GB/s."""
        return effective_bandwidth_gbps(self.rows, self.cols, self.dtype.itemsize, self.copy_bound().median_ms)

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
        self.verify(compiled, self._launch_on(compiled, int(self.d_in), self.d_out))
        self._fill()
        t = self._time(self._launcher(compiled))
        gbps = effective_bandwidth_gbps(self.rows, self.cols, self.dtype.itemsize, t.median_ms)
        return Measurement(t.median_ms, t.min_ms, t.max_ms, gbps, 100.0 * gbps / self.memcpy_gbps,
                           compiled.registers, compiled.shared_bytes, t.launches, 100.0 * gbps / self.copy_gbps,
                           compiled.occupancy)

    def retime(self, configs: list[Config], rounds: int = 5) -> list[Retiming]:
        """Time already verified ``configs`` again, interleaved: in each of ``rounds`` rounds
        every config gets ``repeats`` samples, the starting config rotating round robin.

        Raises:
            TrialFailed: a config no longer compiles or launches (not expected after a search).
        """
        launchers = {c: self._launcher(self.compiler(c, self.dtype)) for c in configs}
        per_round: dict[Config, list[float]] = {c: [] for c in configs}
        pooled: dict[Config, list[np.ndarray]] = {c: [] for c in configs}
        self._fill()
        for r in range(rounds):
            for c in configs[r % len(configs):] + configs[:r % len(configs)]:
                ms, _ = self._samples(launchers[c])
                per_round[c].append(float(np.median(ms)))
                pooled[c].append(ms)
        return [Retiming(c, tuple(per_round[c]), float(np.median(np.concatenate(pooled[c])))) for c in configs]

    def _grid_block(self, compiled: CompiledKernel):
        k, c = compiled.kernel, compiled.config
        grid, block = k.grid(c, self.rows, self.cols), k.block(c, compiled.dtype.itemsize)
        if grid[0] > MAX_DIM:
            raise TrialFailed("resources", f"{grid[0]} blocks > {MAX_DIM} allowed in one grid")
        return grid, block

    def _launch_on(self, compiled: CompiledKernel, inp: int, out: int):
        grid, block = self._grid_block(compiled)
        fn, rows, cols = compiled.function, np.int32(self.rows), np.int32(self.cols)
        return lambda: fn.prepared_async_call(grid, block, None, out, inp, rows, cols)

    def _launcher(self, compiled: CompiledKernel):
        """A launch that moves to the next buffer pair on every call (one pair: always it)."""
        grid, block = self._grid_block(compiled)
        fn, rows, cols = compiled.function, np.int32(self.rows), np.int32(self.cols)
        pairs = itertools.cycle(self.pairs)

        def launch():
            inp, out = next(pairs)
            fn.prepared_async_call(grid, block, None, out, inp, rows, cols)

        return launch

    def verify(self, compiled: CompiledKernel, launch) -> None:
        """Run ``launch`` (which writes the output buffer) on fresh random input and compare
        with NumPy bit for bit (:func:`autotune.measure.verify.verify`).

        Raises:
            TrialFailed: ``wrong_result``, ``launch_error`` or ``resources``.
        """
        a = np.frombuffer(self.rng.bytes(self.nbytes), dtype=self.dtype.numpy).reshape(self.rows, self.cols)
        verify(self.drv, launch, a, compiled.kernel.reference(a), self.d_in, self.d_out_full)

    def _time(self, launch) -> Timing:
        ms, launches = self._samples(launch)
        return Timing(float(np.median(ms)), float(ms.min()), float(ms.max()), launches)

    def _samples(self, launch) -> tuple[np.ndarray, int]:
        """Per-launch times (ms) of ``repeats`` samples, each a batch of launches (see module
        doc), and the number of launches timed."""
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
        return np.array([e.time_since(s) / batch for s, e in events]), self.repeats * batch


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
def open_benchmark(ordinal: int, rows: int, cols: int, dtype: DType, depth: int = 0,
                   **options) -> Iterator[Benchmark]:
    """A :class:`Benchmark` on device ``ordinal``, inside its context, freed on exit:
    of a transpose or copy of ``rows x cols`` (``depth`` 0), or of the matrix product
    ``M, N, K = rows, cols, depth`` (:class:`autotune.measure.matmul_bench.MatmulBenchmark`).

    ``options`` are passed to the benchmark (warmup, repeats, seed).

    Raises:
        GPUUnavailableError: no PyCUDA, driver or device.
        InvalidInputError: ``ordinal`` out of range, bad shape, or too large for the GPU.
    """
    with open_device(ordinal) as device:
        if depth:
            from autotune.measure.matmul_bench import MatmulBenchmark, matmul_bytes

            need = matmul_bytes(rows, cols, depth, dtype.itemsize)
            if need > device.total_memory:
                raise InvalidInputError(f"shape {rows}x{cols}x{depth} {dtype.name} needs {need / 2**30:.1f} GiB "
                                        f"on the GPU; {device.name} has {device.total_memory / 2**30:.1f} GiB")
            bench: Benchmark = MatmulBenchmark(device, rows, cols, depth, dtype, **options)
        else:
            check_fits(device, rows, cols, dtype)
            bench = Benchmark(device, rows, cols, dtype, **options)
        try:
            yield bench
        finally:
            bench.free()
