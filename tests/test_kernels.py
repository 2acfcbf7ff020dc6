import numpy as np
import pytest

from autotune.config import Config
from autotune.dtypes import DTYPES, get_dtype
from autotune.errors import InvalidInputError
from autotune.kernels import KERNELS, get_kernel, source_hash, source_text


def test_sources_are_inlined_and_hashed():
    text = source_text("smem.cu")
    assert "tile_origin" in text and '#include "common.cuh"' not in text
    assert "#pragma once" not in text
    assert "#include <cuda_fp16.h>" in text  # system headers stay for nvcc
    h = source_hash(KERNELS["smem_pad"])
    assert len(h) == 64 and h == source_hash(KERNELS["smem"])  # same file, same hash
    assert h != source_hash(KERNELS["naive"])


def test_macros_add_fixed_ones_and_the_element_type():
    k = get_kernel("smem")
    m = k.macros(k.default_config(), get_dtype("float64"))
    assert m == {"BLOCK_ROWS": "8", "IPAD": "0", "TILE_DIM": "32", "ELEM_T": "double"}


@pytest.mark.parametrize("config, message", [
    (Config.of("smem", {"TILE_DIM": 32, "BLOCK_ROWS": 8}), "not for kernel"),
    (Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8}), "takes"),
    (Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "X": 2}), "takes"),
    (Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": -8, "IPAD": 1}), "non-negative"),
])
def test_macros_refuse_configs_that_do_not_fit(config, message):
    with pytest.raises(InvalidInputError, match=message):
        KERNELS["smem_pad"].macros(config, get_dtype("float32"))


@pytest.mark.parametrize("rows, cols, tile, blocks", [(1, 1, 32, 1), (33, 64, 32, 4), (8192, 8192, 32, 65536),
                                                      (1, 100000, 64, 1563), (100000, 1, 8, 12500)])
def test_grid_has_one_block_per_tile(rows, cols, tile, blocks):
    k = KERNELS["smem_pad"]
    c = Config.of("smem_pad", {"TILE_DIM": tile, "BLOCK_ROWS": 1, "IPAD": 1})
    assert k.grid(c, rows, cols) == (blocks, 1)
    assert k.block(c) == (tile, 1, 1)


def test_reference_and_output_shape():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert KERNELS["naive"].output_shape(2, 3) == (3, 2)
    assert KERNELS["copy"].output_shape(2, 3) == (2, 3)
    np.testing.assert_array_equal(KERNELS["smem_pad"].reference(a), a.T)
    assert KERNELS["smem_pad"].reference(a).flags.c_contiguous
    np.testing.assert_array_equal(KERNELS["copy"].reference(a), a)


def test_unknown_kernel_suggests_close_names():
    with pytest.raises(InvalidInputError, match=r"unknown kernel 'smempad' \(did you mean smem_pad"):
        get_kernel("smempad")


def test_dtypes_match_numpy_itemsizes():
    for d in DTYPES.values():
        assert d.numpy.itemsize == d.itemsize
    assert get_dtype(np.float32).name == "float32"
    with pytest.raises(InvalidInputError, match="unknown dtype 'complex64'"):
        get_dtype("complex64")
