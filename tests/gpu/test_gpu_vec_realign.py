"""smem_vec_realign (kernels/vec_realign.cu) is bit-exact on the GPU for every dtype on odd,
prime, 1 x N and N x 1 shapes (through the generic benchmark's check against NumPy), and
with input and output pointers off a 16-byte boundary (launched directly on offset views)."""

import numpy as np
import pytest

from autotune.kernel.problem import Problem
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.measure.benchmark import Benchmark
from autotune.measure.device import cuda_driver

pytestmark = pytest.mark.gpu

KERNEL = KERNELS["smem_vec_realign"]
SHAPES = [(1, 1), (1, 1001), (1001, 1), (7, 13), (127, 1031), (257, 509), (64, 64), (1000, 1003), (2003, 1999)]


def configs():
    """The default, the smallest tiles, WIDE tiles with no skew, the diagonal order with streaming."""
    d = KERNEL.defaults
    picks = [d, {**d, "TILE_DIM": 32, "BLOCK_ROWS": 4, "WIDE": 0}, {**d, "WIDE": 1, "SKEW": 0, "BLOCK_ROWS": 32},
             {**d, "DIAGONAL": 1, "STREAMING": 1, "SKEW": 2, "BLOCK_ROWS": 8}]
    return [Config.of(KERNEL.name, p) for p in picks]


@pytest.mark.parametrize("dtype", KERNEL.dtypes)  # every dtype but complex128 (smem_vec moves those)
def test_exact_for_every_dtype_and_shape(device, dtype):
    for shape in SHAPES:
        bench = Benchmark(device, Problem.of(KERNEL, {"rows": shape[0], "cols": shape[1]}, get_dtype(dtype)),
                          warmup=1, repeats=20, seed=3, bounds=False)
        try:
            for config in configs():
                bench.verify(*bench.compile(config))  # raises TrialFailed on any mismatch
        finally:
            bench.free()


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "float64"])
def test_exact_with_pointers_off_16_bytes(device, dtype):
    drv = cuda_driver()

    dt = get_dtype(dtype)
    rng = np.random.default_rng(5)
    bench = Benchmark(device, Problem.of(KERNEL, {"rows": 8, "cols": 8}, dt), warmup=1, repeats=20, seed=0, bounds=False)
    try:
        for config in configs()[:3]:
            compiled, _, block, shared = bench.compile(config)
            for rows, cols in [(131, 77), (64, 96), (1, 33), (45, 1)]:
                grid, _, _ = KERNEL.geometry(config, {"rows": rows, "cols": cols}, dt)
                for ioff, ooff in [(dt.itemsize, 0), (0, 3 * dt.itemsize), (8, 8)]:
                    if ioff % dt.itemsize or ooff % dt.itemsize:
                        continue
                    src = rng.integers(0, 256, size=rows * cols * dt.itemsize, dtype=np.uint8).view(dt.numpy)
                    n = rows * cols * dt.itemsize
                    d_in, d_out = drv.mem_alloc(n + 64), drv.mem_alloc(n + 64)
                    drv.memcpy_htod(int(d_in) + ioff, src)
                    drv.memset_d8(d_out, 0xA5, n + 64)
                    compiled.function.launch(grid, block, (np.uintp(int(d_out) + ooff), np.uintp(int(d_in) + ioff),
                                                           np.int32(rows), np.int32(cols),
                                                           np.int64(cols), np.int64(rows * cols)),  # ld, batch_stride
                                             shared)
                    got = np.empty(n + 64, np.uint8)
                    drv.memcpy_dtoh(got, d_out)
                    want = src.reshape(rows, cols).T.copy().view(np.uint8).ravel()
                    assert np.array_equal(got[ooff:ooff + n], want), (config, rows, cols, ioff, ooff)
                    assert (got[:ooff] == 0xA5).all() and (got[ooff + n:] == 0xA5).all()  # nothing written around
                    d_in.free()
                    d_out.free()
    finally:
        bench.free()
