"""smem_bytes (kernels/bytes_realign.cu) is bit-exact on the GPU for every dtype it takes (int8,
uint8, int16, float16) on odd, prime, 1 x N and N x 1 shapes and 5000x7001 (through the generic
benchmark's check against NumPy), at every config of its space on odd shapes, and with input and
output pointers 0..15 bytes off a 16-byte boundary (launched directly on offset views, guard
bytes around the output untouched). The CPU runs the same in tests/test_bytes_realign.py."""

import numpy as np
import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.measure.benchmark import Benchmark
from autotune.measure.device import open_device

pytestmark = pytest.mark.gpu

KERNEL = KERNELS["smem_bytes"]
SHAPES = [(1, 1), (1, 300), (300, 1), (33, 17), (67, 131), (129, 257), (64, 64), (128, 128), (1000, 1003),
          (2003, 1999), (3001, 7919), (5000, 7001)]


@pytest.fixture(scope="module")
def device():
    with open_device(0) as info:
        yield info


def configs():
    """The default and the corners the CPU test runs (tests/test_bytes_realign.py)."""
    d = KERNEL.defaults
    picks = [d, {**d, "TILE_BYTES": 64, "BLOCK_ROWS": 4, "STREAMING": 1, "DIAGONAL": 1},
             {**d, "TILE_BYTES": 128, "BLOCK_ROWS": 32, "DIAGONAL": 1}, {**d, "TILE_BYTES": 64, "BLOCK_ROWS": 16}]
    return [Config.of(KERNEL.name, p) for p in picks]


@pytest.mark.parametrize("dtype", KERNEL.dtypes)
def test_exact_for_every_dtype_and_shape(device, dtype):
    for shape in SHAPES:
        bench = Benchmark(device, KERNEL, {"rows": shape[0], "cols": shape[1]}, get_dtype(dtype),
                          warmup=1, repeats=20, seed=3, bounds=False)
        try:
            for config in configs():
                bench.verify(*bench.compile(config))  # raises TrialFailed on any mismatch
        finally:
            bench.free()


@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_every_config_of_the_space_is_exact(device, dtype):
    for shape in [(67, 131), (1000, 1003)]:
        bench = Benchmark(device, KERNEL, {"rows": shape[0], "cols": shape[1]}, get_dtype(dtype),
                          warmup=1, repeats=20, seed=4, bounds=False)
        try:
            for config in KERNEL.space().configs():
                bench.verify(*bench.compile(config))
        finally:
            bench.free()


@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_exact_with_pointers_off_16_bytes(device, dtype):
    import pycuda.driver as drv

    dt = get_dtype(dtype)
    rng = np.random.default_rng(5)
    guard = 64
    bench = Benchmark(device, KERNEL, {"rows": 8, "cols": 8}, dt, warmup=1, repeats=20, seed=0, bounds=False)
    try:
        for config in configs():
            compiled, _, block, shared = bench.compile(config)
            for rows, cols in [(131, 77), (64, 96), (1, 33), (45, 1), (129, 257)]:
                grid, _, _ = KERNEL.geometry(config, {"rows": rows, "cols": cols}, dt)
                for ioff, ooff in [(1, 0), (0, 3), (2, 14), (15, 15), (6, 9), (13, 4), (8, 8), (14, 2)]:
                    if ioff % dt.itemsize or ooff % dt.itemsize:
                        continue
                    src = rng.integers(0, 256, size=rows * cols * dt.itemsize, dtype=np.uint8).view(dt.numpy)
                    n = rows * cols * dt.itemsize
                    d_in, d_out = drv.mem_alloc(n + 2 * guard), drv.mem_alloc(n + 2 * guard)
                    drv.memcpy_htod(int(d_in) + guard + ioff, src)
                    drv.memset_d8(d_out, 0xA5, n + 2 * guard)
                    compiled.function.prepared_call(grid, block, np.uintp(int(d_out) + guard + ooff),
                                                    np.uintp(int(d_in) + guard + ioff), np.int32(rows),
                                                    np.int32(cols), shared_size=shared)
                    got = np.empty(n + 2 * guard, np.uint8)
                    drv.memcpy_dtoh(got, d_out)
                    want = src.reshape(rows, cols).T.copy().view(np.uint8).ravel()
                    start = guard + ooff
                    assert np.array_equal(got[start:start + n], want), (config, rows, cols, ioff, ooff)
                    assert (got[:start] == 0xA5).all() and (got[start + n:] == 0xA5).all()  # nothing written around
                    d_in.free()
                    d_out.free()
    finally:
        bench.free()
