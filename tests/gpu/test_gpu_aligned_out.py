"""smem_aligned_out (kernels/aligned_out.cu) is bit-exact on the GPU for every dtype, on shapes odd on
both sides, even, one row or column and a few tiles, at its default and its largest tile, at every
config of its space, and through autotune.transpose on PyTorch views and batches (against torch). The
CPU runs the same kernel in tests/kernel/test_catalog_aligned_out.py."""

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from gpu_transposes import check_exact, check_views_and_batches

pytestmark = pytest.mark.gpu_slow

KERNEL = KERNELS["smem_aligned_out"]
SHAPES = [(1, 1), (1, 1000), (1000, 1), (33, 65), (127, 1031), (1031, 127), (64, 64), (4093, 4099)]


@pytest.mark.parametrize("dtype", KERNEL.dtypes)
def test_exact_for_every_dtype_and_shape(device, dtype):
    largest = Config.of(KERNEL.name, {"TILE_DIM": 128, "BLOCK_ROWS": 8, "IPAD": 2, "DIAGONAL": 0})
    check_exact(device, KERNEL, dtype, SHAPES, [KERNEL.default_config(), largest], seed=3)


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "complex128"])
def test_every_config_of_the_space_is_exact(device, dtype):
    check_exact(device, KERNEL, dtype, [(1001, 3001)], KERNEL.space().configs(), seed=4)


@pytest.mark.parametrize("dtype", ["int8", "bfloat16", "float32", "float64", "complex128"])
def test_views_and_batches_match_torch(dtype, tmp_path):
    """autotune.transpose(x, kernel="smem_aligned_out") on odd views and batches: each output row's
    skew comes from its own address, so a batch's matrices (rows * cols elements apart) differ."""
    torch = pytest.importorskip("torch")
    check_views_and_batches(torch, "smem_aligned_out", dtype, f"sqlite:///{tmp_path / 'none.db'}")
