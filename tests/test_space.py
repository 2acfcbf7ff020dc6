import math
from pathlib import Path

import pytest

from autotune.kernel.config import Config
from autotune.errors import InvalidInputError, SearchSpaceError
from autotune.kernel.catalog import ALIASES, KERNELS
from autotune.resources import data_dir
from autotune.kernel.space import SearchSpace, load_space


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "space.toml"
    p.write_text(text)
    return p


GOOD = """
kernel = "smem_pad"
constraints = ["TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024"]
[params]
TILE_DIM = [16, 32]
BLOCK_ROWS = [4, 8, 32]
IPAD = [1]
DIAGONAL = [0]
"""


@pytest.mark.parametrize("kernel", [name for name, k in KERNELS.items() if k.op != "matmul"])  # test_matmul.py
def test_shipped_spaces_load_and_hold_the_default(kernel):
    k = KERNELS[kernel]
    space = load_space(kernel)
    configs = space.configs()
    assert configs, kernel
    assert k.default_config() in configs
    assert len(set(configs)) == len(configs) and len(configs) <= 60  # CI compiles every one
    assert [n for n, _ in space.params] == sorted(k.defaults)
    for c in configs:
        assert space.violations(c) == []
        for itemsize in (1, 2, 4, 8):
            x, y, z = k.block(c, itemsize)
            assert x * y * z <= 1024 and x * k.vector(itemsize) == c["TILE_DIM"]
        assert c["TILE_DIM"] % c["BLOCK_ROWS"] == 0 and math.prod(k.block(c, 8)) >= 32
        assert k.shared_bytes(c, 8) <= 48 * 1024  # static shared memory of the largest dtype
        assert c.as_dict().get("UNROLL", 1) >= 1 and c.as_dict().get("DIAGONAL", 0) in (0, 1)
    for name, values in space.params:  # every listed value is used by some config
        assert {c[name] for c in configs} == set(values), name


def test_shipped_spaces_stay_small_enough_to_compile_in_ci():
    assert sum(len(load_space(k).configs()) for k in KERNELS) <= 450  # 416 today: CI compiles each one


def test_tiled_kernels_search_the_diagonal_order():
    for kernel in ("smem", "smem_pad", "smem_unroll_pad"):
        assert dict(load_space(kernel).params)["DIAGONAL"] == (0, 1)


def test_aliases_are_not_spaces():
    assert not any((data_dir("configs") / f"{alias}.toml").exists() for alias in ALIASES)
    assert sorted(p.stem for p in data_dir("configs").glob("*.toml")) == sorted(KERNELS)


def test_constraints_filter_configs(tmp_path):
    space = load_space("smem_pad", write(tmp_path, GOOD))
    keys = {c.key for c in space.configs()}
    # 16x32 breaks divisibility; 32x32 = 1024 threads is allowed
    assert keys == {"BLOCK_ROWS=4,DIAGONAL=0,IPAD=1,TILE_DIM=16", "BLOCK_ROWS=8,DIAGONAL=0,IPAD=1,TILE_DIM=16",
                    "BLOCK_ROWS=4,DIAGONAL=0,IPAD=1,TILE_DIM=32", "BLOCK_ROWS=8,DIAGONAL=0,IPAD=1,TILE_DIM=32",
                    "BLOCK_ROWS=32,DIAGONAL=0,IPAD=1,TILE_DIM=32"}


def test_violations_name_the_broken_rule(tmp_path):
    space = load_space("smem_pad", write(tmp_path, GOOD))
    bad = Config.of("smem_pad", {"TILE_DIM": 16, "BLOCK_ROWS": 32, "IPAD": 1, "DIAGONAL": 0})
    assert space.violations(bad) == ["TILE_DIM % BLOCK_ROWS == 0"]
    outside = Config.of("smem_pad", {"TILE_DIM": 64, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0})
    assert "TILE_DIM=64 is not one of [16, 32]" in space.violations(outside)


@pytest.mark.parametrize("text, message", [
    (GOOD.replace("IPAD = [1]", "IPAD = [1]\nUNROLL = [4]"), "unknown macro 'UNROLL'"),
    (GOOD.replace("IPAD = [1]", ""), "no values for IPAD"),
    (GOOD.replace("IPAD = [1]", "IPAD = []"), "IPAD in .* has an empty range"),
    (GOOD.replace("IPAD = [1]", "IPAD = [1.5]"), r"IPAD=1.5 .* not allowed"),
    (GOOD.replace("IPAD = [1]", 'IPAD = ["1; rm -rf /"]'), "not allowed"),
    (GOOD.replace("IPAD = [1]", "IPAD = [-1]"), "not allowed"),
    (GOOD.replace("IPAD = [1]", "IPAD = [100000]"), "not allowed"),
    (GOOD.replace("IPAD = [1]", "IPAD = true"), "empty range"),
    (GOOD.replace("TILE_DIM * BLOCK_ROWS", "TILE_DIM * WARPS"), "refers to WARPS"),
    (GOOD.replace("TILE_DIM * BLOCK_ROWS <= 1024", "__import__('os')"), "not allowed"),
    (GOOD.replace("TILE_DIM * BLOCK_ROWS <= 1024", "TILE_DIM <"), "not a valid expression"),
    (GOOD.replace("<= 1024", "<= 1"), "no config .* satisfies"),
    (GOOD.replace('kernel = "smem_pad"', 'kernel = "naive_row"'), "is for kernel 'naive_row'"),
    ("kernel = ", "not valid TOML"),
    ('kernel = "smem_pad"\n', "no \\[params\\] table"),
])
def test_malformed_spaces_are_refused_clearly(tmp_path, text, message):
    with pytest.raises(SearchSpaceError, match=message):
        load_space("smem_pad", write(tmp_path, text))


def test_missing_file_and_unknown_kernel(tmp_path):
    with pytest.raises(SearchSpaceError, match="cannot read"):
        load_space("smem_pad", tmp_path / "nope.toml")
    with pytest.raises(InvalidInputError, match="did you mean smem_pad"):
        load_space("smem_padd")


def test_division_by_zero_in_a_constraint_means_the_config_is_excluded():
    space = SearchSpace("smem", (("BLOCK_ROWS", (0, 8)), ("DIAGONAL", (0,)), ("TILE_DIM", (32,))),
                        ("TILE_DIM % BLOCK_ROWS == 0",))
    assert [c.key for c in space.configs()] == ["BLOCK_ROWS=8,DIAGONAL=0,TILE_DIM=32"]
