"""kernels/aligned_out.cu (smem_aligned_out) run on the CPU (tests/transposes_on_cpu.py): every item
size (1 to 16 bytes) on shapes odd on both sides, even, 1 and up to a few tiles, with input and output
pointers off a 16-byte boundary (so the skew of each output row differs from its neighbour's), as
row-pitched views and batches, under the address and UB sanitizers where g++ has them; every
matrix bit for bit against NumPy. The device runs the same in tests/gpu/test_gpu_kernels.py."""

import shutil

import pytest

from transposes_on_cpu import transpose_failures
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

KERNEL = KERNELS["smem_aligned_out"]
SHAPES = [(1, 1), (3, 5), (33, 65), (65, 33), (1, 70), (70, 1), (64, 64), (37, 100), (100, 37), (129, 31)]
OFFSETS = [(0, 0), (4, 12), (8, 8), (2, 14), (1, 3), (12, 4)]
VIEWS = [(3, 1, 0), (0, 2, 0), (0, 3, 5), (1, 2, 3)]


def configs():
    """Small blocks (the emulation runs a fiber per thread): both paddings, and the diagonal order."""
    base = {"TILE_DIM": 32, "BLOCK_ROWS": 4, "IPAD": 1, "DIAGONAL": 0}
    return [Config.of(KERNEL.name, c) for c in (base, {**base, "IPAD": 2, "BLOCK_ROWS": 8},
                                                 {**base, "DIAGONAL": 1})]


def test_the_grid_covers_each_output_row_shifted_by_up_to_a_sector():
    """cdiv(rows + 32 / itemsize - 1, TILE_DIM) tile rows: one more than smem_pad's where a shift of up to
    a sector less one element reaches past the last tile; the tile holds TILE_DIM + 32 / itemsize rows."""
    f32, u8 = get_dtype("float32"), get_dtype("uint8")
    grid, block, shared = KERNEL.geometry(KERNEL.default_config(), {"rows": 12345, "cols": 6789}, f32)
    assert grid == (-(-(12345 + 7) // 32) * -(-6789 // 32), 1, 1) and block == (32, 8, 1)
    assert shared == (32 + 8) * 33 * 4
    grid, _, shared = KERNEL.geometry(KERNEL.default_config(), {"rows": 32, "cols": 32}, u8)
    assert grid == (2, 1, 1) and shared == (32 + 32) * 33


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8, 16])
def test_aligned_out_transpose_is_exact_for_every_item_size_shape_pointer_offset_view_and_batch(tmp_path, itemsize):
    failures = transpose_failures(tmp_path, KERNEL, itemsize, configs(), SHAPES, OFFSETS, VIEWS)
    assert not failures, "\n".join(failures)
