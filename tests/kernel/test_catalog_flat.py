"""kernels/flat.cu (naive_flat) run on the CPU (tests/transposes_on_cpu.py): every item size (1 to 16
bytes) on small, odd, one-row and one-column shapes, with pointer offsets, row-pitched views and
batches, under the address and UB sanitizers where g++ has them; every matrix bit for bit against
NumPy. The device runs the same in tests/gpu/test_gpu_flat.py."""

import shutil

import pytest

from transposes_on_cpu import transpose_failures
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

KERNEL = KERNELS["naive_flat"]
SHAPES = [(1, 1), (3, 5), (33, 65), (65, 33), (1, 300), (300, 1), (16, 16), (9, 401), (100, 37)]
OFFSETS = [(0, 0), (4, 12), (8, 8), (2, 14), (1, 3)]
VIEWS = [(3, 1, 0), (0, 2, 0), (0, 3, 5), (1, 2, 3), (0, 7, 0), (2, 5, 3)]
"""(row pitch - cols, matrices, elements between matrices): pitched views, contiguous batches and
batches with gaps, up to 7 matrices (one per blockIdx.z)."""


def configs():
    """The default, one element a thread, and the most elements a thread (a block longer than most
    of the matrices here: its last elements past the end)."""
    return [Config.of(KERNEL.name, c) for c in ({"THREADS": 256, "ELEMS": 4}, {"THREADS": 128, "ELEMS": 1},
                                                 {"THREADS": 128, "ELEMS": 8})]


def test_the_configs_are_in_the_space_and_the_grid_covers_the_output():
    assert all(KERNEL.space().violations(c) == [] for c in configs())
    grid, block, shared = KERNEL.geometry(KERNEL.default_config(), {"rows": 9, "cols": 200003}, get_dtype("float64"))
    assert grid == (-(-9 * 200003 // 1024), 1, 1) and block == (256, 1, 1) and shared == 0


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8, 16])
def test_flat_transpose_is_exact_for_every_item_size_shape_pointer_offset_view_and_batch(tmp_path, itemsize):
    failures = transpose_failures(tmp_path, KERNEL, itemsize, configs(), SHAPES, OFFSETS, VIEWS)
    assert not failures, "\n".join(failures)
