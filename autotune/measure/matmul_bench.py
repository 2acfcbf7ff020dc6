"""Verifying and timing matrix-product configs on a GPU: the :class:`Benchmark` of ``C = A @ B``.

Same machinery as the transposes (:class:`autotune.measure.benchmark.Benchmark`: compile, check the
block, verify, time with CUDA events in batches, interleaved re-timing), with the product's
own buffers, check and figures (:mod:`autotune.kernel.problem`):

1. Buffers: A (M x K), B (K x N) and C (M x N, with guard bytes on both sides), row-major.
2. Verify: fresh uniform(-1, 1) A and B; C poisoned with NaN bytes; one launch; the guards
   must be intact and C within the relative-error tolerance of NumPy's float64 product
   (:func:`autotune.kernel.problem.check_product`).
3. Time: as the transposes; GFLOP/s ``= 2 * M * N * K / median``. There is no memcpy or
   copy bound for a product (the vendor library is the yardstick, in ``autotune bench``), and
   no rotation of buffers: a product is meant to reuse its operands from cache, and at the
   sizes it is tuned for (4096^3 float32: 192 MiB) they exceed the L2 anyway.
"""

from __future__ import annotations

import numpy as np

from autotune.measure.benchmark import MAX_DIM, Benchmark, Timing
from autotune.measure.compile import CompiledKernel, Compiler
from autotune.kernel.config import Config
from autotune.measure.device import DeviceInfo, cuda_driver
from autotune.kernel.dtypes import DType
from autotune.errors import InvalidInputError, TrialFailed
from autotune.measure.measurement import Measurement
from autotune.kernel.problem import NAN_POISON, check_product, matmul_gbps, matmul_gflops
from autotune.measure.verify import GUARD_BYTES, poisoned_run

__all__ = ["MAX_GRID_Y", "MatmulBenchmark", "matmul_bytes", "random_operands"]

MAX_GRID_Y = 65535
"""CUDA's limit of blocks along y (the rows of C)."""


def matmul_bytes(m: int, n: int, k: int, itemsize: int) -> int:
    """Device bytes a product of this shape needs: A, B, C and C's guards."""
    return (m * k + k * n + m * n) * itemsize + 2 * GUARD_BYTES


def random_operands(rng: np.random.Generator, m: int, n: int, k: int, dtype: DType) -> tuple[np.ndarray, np.ndarray]:
    """Fresh A (M x K) and B (K x N), uniform in [-1, 1), of ``dtype``."""
    a = rng.uniform(-1.0, 1.0, size=(m, k)).astype(dtype.numpy)
    b = rng.uniform(-1.0, 1.0, size=(k, n)).astype(dtype.numpy)
    return a, b


class MatmulBenchmark(Benchmark):
    """Verifies and times configs of the ``matmul`` kernels for one device, M, N, K and dtype.

    ``rows, cols, depth`` are ``M, N, K``. Must be used inside a current CUDA context.

    Args:
        device: the current device.
        m, n, k: the product's shape, each in ``1 .. 2**31-1``.
        dtype: float32 or float64.
        warmup, repeats, seed: as :class:`Benchmark`.

    Raises:
        InvalidInputError: bad shape or repeats, or the buffers do not fit in free device memory.
    """

    def __init__(self, device: DeviceInfo, m: int, n: int, k: int, dtype: DType, *,
                 warmup: int = 10, repeats: int = 50, seed: int | None = None) -> None:
        # Benchmark.__init__ allocates a transpose's buffers: set up the shared state here.
        if not all(1 <= d <= MAX_DIM for d in (m, n, k)):
            raise InvalidInputError(f"shape {m}x{n}x{k} is not allowed; M, N and K are 1..{MAX_DIM}")
        if repeats < 20:
            raise InvalidInputError(f"repeats={repeats} is too few; at least 20 launches are timed")
        self.drv = cuda_driver()
        self.device, self.rows, self.cols, self.depth, self.dtype = device, m, n, k, dtype
        self.warmup, self.repeats = warmup, repeats
        self.nbytes = m * n * dtype.itemsize  # of C
        free, _ = self.drv.mem_get_info()
        need = matmul_bytes(m, n, k, dtype.itemsize)
        if need > 0.9 * free:
            raise InvalidInputError(f"shape {m}x{n}x{k} {dtype.name} needs {need / 2**30:.1f} GiB on the GPU; "
                                    f"{free / 2**30:.1f} GiB is free")
        self.rng = np.random.default_rng(seed)
        self.compiler = Compiler(device.arch, device.max_threads_per_sm)
        self.d_a = self.drv.mem_alloc(m * k * dtype.itemsize)
        self.d_b = self.drv.mem_alloc(k * n * dtype.itemsize)
        self.d_out_full = self.drv.mem_alloc(self.nbytes + 2 * GUARD_BYTES)
        self.d_out = int(self.d_out_full) + GUARD_BYTES
        self.pairs = [(int(self.d_a), self.d_out)]  # one set of buffers: l2_mode "single"
        self._extra = []
        self._filled = False

    @property
    def memcpy_gbps(self) -> None:  # type: ignore[override]
        """No memcpy bound for a product."""
        return None

    @property
    def copy_gbps(self) -> None:  # type: ignore[override]
        """No copy bound for a product."""
        return None

    def free(self) -> None:
        """Release the device buffers."""
        for buf in (self.d_a, self.d_b, self.d_out_full):
            buf.free()

    def operands(self) -> tuple[np.ndarray, np.ndarray]:
        """Fresh random A and B (see :func:`random_operands`), also copied to the device."""
        a, b = random_operands(self.rng, self.rows, self.cols, self.depth, self.dtype)
        self.drv.memcpy_htod(self.d_a, a)
        self.drv.memcpy_htod(self.d_b, b)
        self._filled = True
        return a, b

    def time(self, launch) -> Timing:
        """Per-launch times (ms) of ``launch``, timed like every config (warm-up, ``repeats``
        samples between CUDA events on the default stream, batches of >= 0.2 ms)."""
        return self._time(launch)

    def _fill(self) -> None:
        if not self._filled:
            self.operands()

    def measure(self, config: Config) -> Measurement:
        """Compile, verify and time ``config``; ``gflops`` is set, ``pct_memcpy`` is ``None``.

        Raises:
            TrialFailed: compile error, block or grid over the device limits, failed launch,
                or a result outside the tolerance (or not written).
        """
        compiled, launch = self.check(config)
        t = self._time(launch)
        m, n, k = self.rows, self.cols, self.depth
        return Measurement(t.median_ms, t.min_ms, t.max_ms, matmul_gbps(m, n, k, self.dtype.itemsize, t.median_ms),
                           None, compiled.registers, compiled.shared_bytes, t.launches, None, compiled.occupancy,
                           matmul_gflops(m, n, k, t.median_ms))

    def check(self, config: Config):
        """Compile ``config``, check its block and grid, and verify one launch on fresh inputs.

        Returns:
            ``(compiled, launch)``: the compiled kernel and a function launching it once.

        Raises:
            TrialFailed: as :meth:`measure`.
        """
        compiled = self.compiler(config, self.dtype)
        compiled.check_launch(self.device)
        launch = self._launcher(compiled)
        self.verify(compiled, launch)
        return compiled, launch

    def verify(self, compiled: CompiledKernel, launch) -> None:
        """Run ``launch`` once on fresh random A and B into the NaN-poisoned C and check C
        against NumPy's float64 product (:func:`autotune.kernel.problem.check_product`).

        Raises:
            TrialFailed: ``wrong_result``, ``launch_error`` or ``resources``.
        """
        a, b = self.operands()
        raw = poisoned_run(self.drv, launch, self.d_out_full, self.nbytes, NAN_POISON)
        got = raw.view(self.dtype.numpy).reshape(self.rows, self.cols)
        check_product(got, compiled.kernel.reference(a, b), self.depth)

    def _grid_block(self, compiled: CompiledKernel):
        k, c = compiled.kernel, compiled.config
        grid, block = k.grid(c, self.rows, self.cols), k.block(c, compiled.dtype.itemsize)
        if grid[1] > MAX_GRID_Y or grid[0] > MAX_DIM:
            raise TrialFailed("resources", f"grid {grid[0]} x {grid[1]} blocks exceeds CUDA's {MAX_DIM} x "
                                           f"{MAX_GRID_Y}")
        return grid, block

    def _launcher(self, compiled: CompiledKernel):
        """One launch of the product ``C = A @ B`` (the same buffers every time)."""
        grid, block = self._grid_block(compiled)
        fn = compiled.function
        args = (self.d_out, int(self.d_a), int(self.d_b), np.int32(self.rows), np.int32(self.cols),
                np.int32(self.depth))
        return lambda: fn.prepared_async_call(grid, block, None, *args)

    def _launch_on(self, compiled: CompiledKernel, inp: int, out: int):
        return self._launcher(compiled)

    def memcpy(self):
        raise InvalidInputError("a matrix product has no memcpy bound")

    def copy_bound(self):
        raise InvalidInputError("a matrix product has no copy bound")

