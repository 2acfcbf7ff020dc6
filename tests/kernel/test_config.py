import pytest

from autotune.kernel.config import Config


def test_equal_configs_hash_equal_whatever_the_order():
    a = Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1})
    b = Config.of("smem_pad", {"IPAD": 1, "BLOCK_ROWS": 8, "TILE_DIM": 32})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a.key == "BLOCK_ROWS=8,IPAD=1,TILE_DIM=32"
    assert a["TILE_DIM"] == 32 and a.as_dict() == {"BLOCK_ROWS": 8, "IPAD": 1, "TILE_DIM": 32}


def test_configs_are_frozen():
    a = Config.of("copy", {"TILE_DIM": 32, "BLOCK_ROWS": 8})
    with pytest.raises(AttributeError):
        a.kernel = "naive"


@pytest.mark.parametrize("value", [8.0, "8", True, None])
def test_only_ints_are_macro_values(value):
    with pytest.raises(TypeError):
        Config.of("copy", {"TILE_DIM": 32, "BLOCK_ROWS": value})
