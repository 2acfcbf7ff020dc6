"""kernels/skinny.cu (skinny) run on the CPU.

The .cu text is compiled as C++ with the CUDA keywords defined away (tests/cuda_on_cpu.py, with the
main of tests/transposes_on_cpu.py): each thread of a block is a fiber, blocks run one after
another with the grid and block of the kernel file's [launch]. Every item size the kernel takes (1,
2, 4 and 8 bytes) runs on skinny shapes both ways (n short rows: the input is the rows side; n short
columns: the output is), short sides odd, even, 1 and up to 64 and above (several bands of rows),
long sides that leave partial chunks, with input and output pointers 0..15 bytes off a 16-byte
boundary, as row-pitched views (ld > cols: the packed input of a tall matrix is then moved element by
element) and batches with and without gaps, under the address and UB sanitizers where g++ has them:
the input is allocated as exactly the view's span (a read past its end fails the run), the bytes
between two matrices' spans are poisoned, the output has guard bytes on both sides that must stay
untouched, and every matrix is compared bit for bit with NumPy's transpose. The device runs the
same in tests/gpu/test_gpu_skinny.py.
"""

import shutil

import pytest

from transposes_on_cpu import transpose_failures
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

KERNEL = KERNELS["skinny"]
SHAPES = [(1, 1), (3, 5), (7, 1001), (1001, 7), (2, 300), (300, 2), (33, 517), (517, 33), (1, 700), (700, 1),
          (64, 129), (129, 64), (65, 70), (70, 65), (100, 3)]
"""Short sides 1, 2, 3, 7, 33 (odd: every row a new offset mod 16), 64 (a whole band), 65 and 70 (two
bands at the default, one long row more than a band), long sides that end in a partial chunk."""
OFFSETS = [(0, 0), (1, 3), (8, 8), (2, 14), (15, 1), (4, 12)]
"""Input and output pointers, bytes past a 16-byte boundary; those the item size divides are run."""
VIEWS = [(3, 1, 0), (0, 2, 0), (0, 3, 5), (1, 2, 3)]
"""(row pitch - cols, matrices, elements between matrices) beyond the contiguous (0, 1, 0)."""


def configs():
    """The default (streaming hints), the smallest chunk with the fewest threads, the largest chunk
    with the most threads and no hints."""
    d = KERNEL.defaults
    picks = [d, {**d, "BLOCK_KIB": 4, "THREADS": 128, "STREAMING": 1},
             {**d, "BLOCK_KIB": 16, "THREADS": 512, "STREAMING": 0}]
    return [Config.of(KERNEL.name, p) for p in picks]


def test_the_configs_are_in_the_space():
    space = KERNEL.space()
    assert all(space.violations(c) == [] for c in configs())


def test_a_skinny_shape_is_one_band_and_its_chunks():
    """7 x 1000003 int8 at the default (8 KiB a block): one band of 7 rows, chunks of 1152 positions."""
    grid, block, _ = KERNEL.geometry(KERNEL.default_config(), {"rows": 7, "cols": 1000003}, get_dtype("int8"))
    assert grid == (-(-1000003 // 1152), 1, 1) and block == (256, 1, 1)
    grid, _, _ = KERNEL.geometry(KERNEL.default_config(), {"rows": 65536, "cols": 33}, get_dtype("float32"))
    assert grid == (65536 // 32, 1, 1)  # 33 x 32 float32 = 4224 bytes a chunk


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_skinny_transpose_is_exact_for_every_item_size_shape_pointer_offset_view_and_batch(tmp_path, itemsize):
    failures = transpose_failures(tmp_path, KERNEL, itemsize, configs(), SHAPES, OFFSETS, VIEWS)
    assert not failures, "\n".join(failures)
