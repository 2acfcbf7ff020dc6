"""kernels/bytes_realign.cu (smem_bytes) run on the CPU.

The .cu text is compiled as C++ with the CUDA keywords defined away (tests/cuda_on_cpu.py): each
thread of a block is a fiber, the block barrier is __syncthreads and carries the warp
shuffles (the emulated intrinsics are checked in test_cuda_on_cpu.py), blocks run one after
another with the grid and block of the kernel file's [launch].
Every item size the kernel takes (1 and 2) runs on shapes whose rows start anywhere relative to
4 and 16 bytes (odd, prime, 1 x N, N x 1, tiles larger and smaller than the matrix) with input
and output pointers 0..15 bytes off a 16-byte boundary, as row-pitched views (ld > cols) and
batches (one matrix per blockIdx.z, with and without gaps between them), under the address and
UB sanitizers where g++ has them: the input is allocated as exactly the view's span, first to
last element (a read past its end fails the run), with the bytes between two matrices' spans
poisoned for the address sanitizer; the output has guard bytes on both sides that must stay
untouched, and every matrix of the output is compared bit for bit with NumPy's transpose. The device runs the same in tests/gpu/test_gpu_bytes_realign.py.
"""

import shutil

import pytest

from transposes_on_cpu import BYTE_OFFSETS, BYTE_SHAPES, BYTE_VIEWS, transpose_failures
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

KERNEL = KERNELS["smem_bytes"]

def configs():
    """The default and corners: the small tile with the fewest rows per block, streaming and the
    diagonal order; the large tile with the most rows; the small tile with 16 rows."""
    d = KERNEL.defaults
    picks = [d, {**d, "TILE_BYTES": 64, "BLOCK_ROWS": 4, "STREAMING": 1, "DIAGONAL": 1},
             {**d, "TILE_BYTES": 128, "BLOCK_ROWS": 32, "DIAGONAL": 1}, {**d, "TILE_BYTES": 64, "BLOCK_ROWS": 16}]
    return [Config.of(KERNEL.name, p) for p in picks]


def test_the_configs_are_in_the_space():
    space = KERNEL.space()
    assert all(space.violations(c) == [] for c in configs())


@pytest.mark.parametrize("itemsize", [1, 2])
def test_byte_transpose_is_exact_for_every_item_size_shape_pointer_offset_view_and_batch(tmp_path, itemsize):
    failures = transpose_failures(tmp_path, KERNEL, itemsize, configs(), BYTE_SHAPES, BYTE_OFFSETS, BYTE_VIEWS)
    assert not failures, "\n".join(failures)
