"""Search spaces: the shipped ones fit their kernels (every config launchable, within the
limits, the default among them); space files and inline spaces are read strictly."""

import math
from pathlib import Path

import pytest

import catalog_before as before
from autotune.errors import InvalidInputError, SearchSpaceError
from autotune.kernel.catalog import ALIASES, KERNELS, get_kernel
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.loader import load_kernel
from autotune.kernel.space import SearchSpace, kernel_space, load_space
from autotune.resources import data_dir

from kernel_files import catalog_doc, write_kernel


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "space.toml"
    p.write_text(text)
    return p


LARGE = {"matmul_warp"}
"""Spaces of thousands of configs (the matrix-product issue's): sampled where CI compiles."""

GOOD = """
kernel = "smem_pad"
constraints = ["TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024"]
[params]
TILE_DIM = [16, 32]
BLOCK_ROWS = [4, 8, 32]
IPAD = [1]
DIAGONAL = [0]
"""


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_shipped_spaces_load_and_hold_the_default(kernel):
    k = KERNELS[kernel]
    space = k.space()
    from_file = load_space(k, data_dir("configs") / f"{kernel}.toml")
    assert space.path == str(k.space_file) and (space.params, space.constraints) == (from_file.params,
                                                                                    from_file.constraints)
    configs = space.configs()
    assert configs, kernel
    assert k.default_config() in configs
    assert len(set(configs)) == len(configs)
    assert len(configs) <= 60 or kernel in LARGE  # CI compiles every one (of LARGE: a sample)
    assert [n for n, _ in space.params] == sorted(k.defaults) and space.tunables == k.tunables
    for c in (space.sample(200, (k.default_config(),)) if kernel in LARGE else configs):
        assert space.violations(c) == []
        for dtype in k.dtypes:
            dt = get_dtype(dtype)
            grid, block, shared = k.geometry(c, dict.fromkeys(k.dims, 8192), dt)
            assert math.prod(block) <= 1024 and all(g >= 1 for g in grid)
            assert math.prod(block) >= 32 or dt.itemsize < 8  # a warp at least (vectors of small elements: fewer)
            part = min(dt.itemsize, 8)  # 16 B: 8 B parts
            if kernel == "smem_aligned_out":  # its tile: TILE_DIM + one 32-byte sector of rows, padded by IPAD
                tile = (c["TILE_DIM"] + 32 // dt.itemsize) * (c["TILE_DIM"] + c["IPAD"]) * part
                assert shared == tile <= 227 * 1024
            else:
                assert shared == (before.dynamic_shared_bytes(kernel, c.as_dict(), part) if kernel in before.DEFAULTS
                                  else 0)
            if kernel in before.DEFAULTS:  # static within 48 KiB; dynamic tiles within sm_90's 227 KiB
                assert before.static_shared_bytes(kernel, c.as_dict(), part) <= 48 * 1024
                assert before.shared_bytes(kernel, c.as_dict(), part) <= 227 * 1024
        if kernel in before.MOVES:
            assert c["TILE_DIM"] % c["BLOCK_ROWS"] == 0
            assert c.as_dict().get("UNROLL", 1) >= 1 and c.as_dict().get("DIAGONAL", 0) in (0, 1)
    for name, values in space.params:  # every listed value is used by some config
        assert {c[name] for c in configs} == set(values), name


def test_shipped_spaces_stay_small_enough_to_compile_in_ci():
    small = [k for k in KERNELS.values() if k.name not in LARGE]
    # 530 today (skinny added 18, smem_aligned_out 16, naive_flat 12, smem_bytes_aligned_out 8): CI compiles each one
    assert sum(len(k.space().configs()) for k in small) <= 530
    assert all(len(KERNELS[name].space().configs()) >= 1000 for name in LARGE)  # sampled (tests/measure/test_compile.py)


def test_tiled_kernels_search_the_diagonal_order():
    for kernel in ("smem", "smem_pad", "smem_unroll_pad"):
        assert dict(KERNELS[kernel].space().params)["DIAGONAL"] == (0, 1)


def test_aliases_are_not_spaces():
    assert not any((data_dir("configs") / f"{alias}.toml").exists() for alias in ALIASES)
    assert sorted(p.stem for p in data_dir("configs").glob("*.toml")) == sorted(KERNELS)


def test_constraints_filter_configs(tmp_path):
    space = load_space(KERNELS["smem_pad"], write(tmp_path, GOOD))
    keys = {c.key for c in space.configs()}
    # 16x32 breaks divisibility; 32x32 = 1024 threads is allowed
    assert keys == {"BLOCK_ROWS=4,DIAGONAL=0,IPAD=1,TILE_DIM=16", "BLOCK_ROWS=8,DIAGONAL=0,IPAD=1,TILE_DIM=16",
                    "BLOCK_ROWS=4,DIAGONAL=0,IPAD=1,TILE_DIM=32", "BLOCK_ROWS=8,DIAGONAL=0,IPAD=1,TILE_DIM=32",
                    "BLOCK_ROWS=32,DIAGONAL=0,IPAD=1,TILE_DIM=32"}


def test_violations_name_the_broken_rule(tmp_path):
    space = load_space(KERNELS["smem_pad"], write(tmp_path, GOOD))
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
    (GOOD.replace("TILE_DIM * BLOCK_ROWS", "TILE_DIM * WARPS"), "names WARPS; allowed names: BLOCK_ROWS"),
    (GOOD.replace("TILE_DIM * BLOCK_ROWS <= 1024", "__import__('os')"), "calls '__import__'"),
    (GOOD.replace("TILE_DIM * BLOCK_ROWS <= 1024", "TILE_DIM.real > 1"), "not allowed"),
    (GOOD.replace('"TILE_DIM * BLOCK_ROWS <= 1024"', "1024"), "must be a list of strings"),
    (GOOD.replace("TILE_DIM * BLOCK_ROWS <= 1024", "TILE_DIM <"), "not a valid expression"),
    (GOOD.replace("<= 1024", "<= 1"), "no config .* satisfies"),
    (GOOD.replace('kernel = "smem_pad"', 'kernel = "naive_row"'), "is for kernel 'naive_row'"),
    ("kernel = ", "not valid TOML"),
    ('kernel = "smem_pad"\n', "no \\[params\\] table"),
])
def test_malformed_spaces_are_refused_clearly(tmp_path, text, message):
    with pytest.raises(SearchSpaceError, match=message):
        load_space(KERNELS["smem_pad"], write(tmp_path, text))


def test_missing_file_and_unknown_kernel(tmp_path):
    with pytest.raises(SearchSpaceError, match="cannot read"):
        load_space(KERNELS["smem_pad"], tmp_path / "nope.toml")
    with pytest.raises(InvalidInputError, match="did you mean smem_pad"):  # names resolve at the catalog
        get_kernel("smem_padd")


def test_a_space_file_for_a_kernel_object_and_by_path_from_the_kernel(tmp_path):
    path = write(tmp_path, GOOD)
    k = KERNELS["smem_pad"]
    assert k.space(path) == load_space(k, path) == load_space(KERNELS["smem_pad"], str(path))
    assert len(k.space(path).configs()) == 5 and k.space(path).path == str(path)
    no_kernel = write(tmp_path, GOOD.replace('kernel = "smem_pad"', ""))  # the kernel line is optional
    assert load_space(k, no_kernel).configs() == k.space(path).configs()


def test_an_inline_space_of_a_kernel_file(tmp_path):
    doc = catalog_doc("smem_pad")
    doc["space"]["params"]["TILE_DIM"] = [16, 32]
    k = load_kernel(write_kernel(tmp_path / "k.toml", {**doc, "name": "inline_pad"}))
    assert k.space_file is None and k.space() == kernel_space(k)
    assert k.space().path == str(tmp_path / "k.toml") and {c["TILE_DIM"] for c in k.space().configs()} == {16, 32}
    assert all(c.kernel == "inline_pad" for c in k.space().configs())


def test_a_space_must_give_exactly_the_kernels_tunables():
    with pytest.raises(SearchSpaceError, match="gives no values for IPAD; smem_pad takes BLOCK_ROWS, DIAGONAL, IPAD"):
        SearchSpace("smem_pad", (("BLOCK_ROWS", (8,)), ("DIAGONAL", (0,)), ("TILE_DIM", (32,))),
                    tunables=KERNELS["smem_pad"].tunables)
    with pytest.raises(SearchSpaceError, match="unknown macro 'UNROLL'"):
        SearchSpace("smem", (("BLOCK_ROWS", (8,)), ("DIAGONAL", (0,)), ("TILE_DIM", (32,)), ("UNROLL", (2,))),
                    tunables=KERNELS["smem"].tunables)


def test_violations_of_a_config_of_another_kernel():
    space = KERNELS["smem"].space()
    other = Config.of("smem_pad", KERNELS["smem"].defaults)
    assert space.violations(other) == ["config is for smem_pad, space for smem"]


def test_division_by_zero_in_a_constraint_means_the_config_is_excluded():
    space = SearchSpace("smem", (("BLOCK_ROWS", (0, 8)), ("DIAGONAL", (0,)), ("TILE_DIM", (32,))),
                        ("TILE_DIM % BLOCK_ROWS == 0",))
    assert [c.key for c in space.configs()] == ["BLOCK_ROWS=8,DIAGONAL=0,TILE_DIM=32"]


def test_a_large_space_is_walked_lazily_and_counted_no_further_than_asked(monkeypatch):
    import itertools

    space = SearchSpace("smem_pad", (("BLOCK_ROWS", tuple(range(1, 2001))), ("DIAGONAL", (0, 1, 2, 3, 4)),
                                     ("IPAD", (0, 1, 2, 3, 4)), ("TILE_DIM", tuple(range(1, 2001)))),
                        ("TILE_DIM % BLOCK_ROWS == 0",))
    assert space.raw_size == 10**8
    first = list(itertools.islice(space.iter_configs(), 3))
    assert [c["TILE_DIM"] for c in first] == [1, 2, 3] and all(c["BLOCK_ROWS"] == 1 for c in first)
    assert space.count(1000) == 1001  # "more than 1000", without walking the rest
    assert "_valid" not in space.__dict__  # nothing built the whole list


def test_iter_configs_and_count_agree_with_configs():
    space = KERNELS["smem_pad"].space()
    assert list(space.iter_configs()) == space.configs()
    assert space.count(10**6) == len(space.configs()) and space.count(3) in (4, len(space.configs()))


def test_a_space_counted_whole_is_not_walked_again(monkeypatch):
    """count_within that walked the whole space keeps what it found: configs() and sample()
    (which counts, then lists) walk a space once (matmul_warp's 22,944 configs: seconds a walk),
    with the configs of a fresh space's own walk, in its order; a count cut short keeps nothing."""
    fresh = KERNELS["smem_pad"].space()
    whole, sample = fresh.configs(), fresh.sample(4)
    space = KERNELS["smem_pad"].space()
    walks = []
    walk = SearchSpace._walk
    monkeypatch.setattr(SearchSpace, "_walk", lambda self, *a, **kw: walks.append(1) or walk(self, *a, **kw))
    assert space.count_within(10**6) == len(whole) and len(walks) == 1
    assert space.configs() == whole and len(walks) == 1
    assert space.sample(4) == sample and len(walks) == 2  # the sample's first(): bounded, not a count
    cut = KERNELS["smem_pad"].space()
    assert cut.count_within(3) == 4 and "_valid" not in cut.__dict__


def test_holds_answers_what_violations_answers_for_every_combination(monkeypatch):
    """Each constraint's verdicts are kept per combination of the macros it reads; the answer
    is the constraints' own for every combination of a space, also once the kept verdicts are
    dropped (MEMO_LIMIT) and computed again."""
    import itertools

    from autotune.kernel import expr

    space = SearchSpace("smem_pad", (("BLOCK_ROWS", (1, 2, 4, 8, 16)), ("IPAD", (0, 1, 2)), ("TILE_DIM", (8, 16, 32, 64))),
                        ("TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 256", "IPAD < 2 or TILE_DIM > 8"))
    monkeypatch.setattr(expr, "MEMO_LIMIT", 7)
    for _ in range(2):  # the second pass reads kept verdicts (or recomputes those dropped)
        valid = 0
        for combo in itertools.product(*(values for _, values in space.params)):
            point = dict(zip((n for n, _ in space.params), combo))
            expected = (point["TILE_DIM"] % point["BLOCK_ROWS"] == 0 and point["TILE_DIM"] * point["BLOCK_ROWS"] <= 256
                        and (point["IPAD"] < 2 or point["TILE_DIM"] > 8))
            assert space.holds(point) == expected == (not space.violations(Config.of("smem_pad", point))), point
            valid += expected
        assert valid == len(space.configs())
