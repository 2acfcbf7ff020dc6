"""kernels/bytes_aligned_out.cu (smem_bytes_aligned_out) run on the CPU (tests/transposes_on_cpu.py), on
the cases of the byte transposes (BYTE_SHAPES, BYTE_OFFSETS, BYTE_VIEWS: rows starting anywhere
relative to 4 and 16 bytes, pointers 0 to 15 bytes off, row-pitched views, batches with and without
gaps) and a shape with interior tiles, under the address and UB sanitizers where g++ has them: the input
exactly the view's span, guard bytes around the output, every matrix bit for bit against NumPy. The
device runs the same in tests/gpu/test_gpu_bytes_aligned_out.py."""

import shutil

import pytest

from transposes_on_cpu import BYTE_OFFSETS, BYTE_SHAPES, BYTE_VIEWS, transpose_failures
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

KERNEL = KERNELS["smem_bytes_aligned_out"]

SHAPES = [*BYTE_SHAPES, (301, 333)]
"""The byte transposes' cases and 301 x 333, which has interior tiles (rows below the first tile row and a
tile and its skew rows above the last, columns a tile and a word from the end): the kernel's unchecked
path."""


def configs():
    """The default (128-byte tiles, sector-aligned output rows), 64-byte tiles with word-aligned output
    rows (the rule's config for 1-byte matrices under 20 MiB), word-aligned 128-byte tiles, and 64-byte
    tiles with sectors and 8 block rows (128 threads)."""
    d = KERNEL.defaults
    picks = [d, {**d, "TILE_BYTES": 64, "OUT_ALIGN": 4, "BLOCK_ROWS": 16}, {**d, "OUT_ALIGN": 32},
             {**d, "TILE_BYTES": 64, "OUT_ALIGN": 32, "BLOCK_ROWS": 8}]
    return [Config.of(KERNEL.name, p) for p in picks]


def test_the_configs_are_in_the_space_and_the_grid_covers_the_matrix():
    assert all(KERNEL.space().violations(c) == [] for c in configs())
    assert len(KERNEL.space().configs()) == 8
    grid, block, shared = KERNEL.geometry(KERNEL.default_config(), {"rows": 10007, "cols": 10009}, get_dtype("uint8"))
    assert grid == (-(-10007 // 128) * -(-10009 // 128), 1, 1) and block == (32, 16, 1) and shared == 0  # static
    grid, block, _ = KERNEL.geometry(Config.of(KERNEL.name, {"TILE_BYTES": 64, "BLOCK_ROWS": 8, "OUT_ALIGN": 4}),
                                     {"rows": 100, "cols": 65}, get_dtype("float16"))
    assert grid == (-(-100 // 32) * -(-65 // 32), 1, 1) and block == (16, 8, 1)


@pytest.mark.parametrize("itemsize", [1, 2])
def test_byte_transpose_is_exact_for_every_item_size_shape_pointer_offset_view_and_batch(tmp_path, itemsize):
    failures = transpose_failures(tmp_path, KERNEL, itemsize, configs(), SHAPES, BYTE_OFFSETS, BYTE_VIEWS)
    assert not failures, "\n".join(failures)
