"""smem_vec_realign (kernels/vec_realign.cu) is bit-exact on the GPU for every dtype on odd,
prime, 1 x N and N x 1 shapes (through the generic benchmark's check against NumPy), and
with input and output pointers off a 16-byte boundary (launched directly on offset views)."""

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from gpu_transposes import check_exact, check_launched

pytestmark = pytest.mark.gpu_slow

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
    check_exact(device, KERNEL, dtype, SHAPES, configs(), seed=3)


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "float64"])
def test_exact_with_pointers_off_16_bytes(device, dtype):
    es = get_dtype(dtype).itemsize
    cases = [(0, 1, 0, i, o) for i, o in [(es, 0), (0, 3 * es), (8, 8)]]
    check_launched(device, KERNEL, dtype, configs()[:3], [(131, 77), (64, 96), (1, 33), (45, 1)], cases, seed=5)

