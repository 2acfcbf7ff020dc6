"""The catalog as kernel files (kernels/*.toml): the 15 kernels load, keep the source hashes and
launch geometry they had before the kernel model (tests/catalog_before.py), and users' kernel
files resolve once, by path, beside them."""

import itertools

import numpy as np
import pytest

import autotune.kernel.catalog as catalog
import catalog_before as before
from autotune.errors import InvalidInputError, KernelFileError
from autotune.kernel import Kernel, resolve_kernel
from autotune.kernel.catalog import ALIASES, KERNELS, get_kernel
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES, get_dtype
from autotune.kernel.references import copy, tile_of_block, transpose
from autotune.resources import data_dir

from kernel_files import catalog_doc, write_kernel

CATALOG = sorted([*before.DEFAULTS, "matmul_warp", "smem_vec_realign", "smem_bytes", "skinny", "smem_aligned_out",
                  "naive_flat", "smem_bytes_aligned_out"])
"""The 15 kernels of the catalog before the kernel model, and those added as kernel files since."""
REALIGN = "smem_vec_realign"
BYTES = "smem_bytes"
BYTES_OUT = "smem_bytes_aligned_out"
SKINNY = "skinny"
ALIGNED = "smem_aligned_out"
FLAT = "naive_flat"
NEW = {"matmul_warp"}
MOVES = sorted(before.MOVES)
ITEMSIZE_DTYPES = [get_dtype(d) for d in ("int8", "float16", "float32", "float64")]


def cfg(kernel, **macros):
    """The kernel's default config with some macros changed."""
    return Config.of(kernel, {**KERNELS[kernel].defaults, **macros})


def geometry(kernel, config, rows, cols, dtype="float32", depth=None):
    k = KERNELS[kernel]
    dims = dict(zip(k.dims, (rows, cols) if depth is None else (rows, cols, depth)))
    return k.geometry(config, dims, get_dtype(dtype))


@pytest.fixture
def user_registry(monkeypatch):
    """A clean registry of users' kernels for one test."""
    monkeypatch.setattr(catalog, "_user", {})
    monkeypatch.setattr(catalog, "_files", {})


# --- the catalog -------------------------------------------------------------------------------


def test_the_catalog_kernels_load_from_their_files():
    assert sorted(KERNELS) == CATALOG and len(KERNELS) == 22
    folder = data_dir("kernels").resolve()
    for name, k in KERNELS.items():
        assert isinstance(k, Kernel) and k.name == name and k.path == folder / f"{name}.toml"
        assert get_kernel(name) is k and resolve_kernel(name) is k and resolve_kernel(k) is k
        assert k.space_file.resolve() == (data_dir("configs") / f"{name}.toml").resolve()
        text = k.source_text()  # the entry point's name starts a line after __launch_bounds__(...)
        assert any(f"{sep}{k.function}(" in text for sep in " \n")
        assert set(k.fixed).isdisjoint(k.defaults)
        if name in NEW:
            assert (k.source.name, k.function, k.dims) == (f"{name}.cu", name, ("m", "n", "k"))
            continue
        if name == REALIGN:
            assert (k.source.name, k.function, k.dims) == ("vec_realign.cu", "transpose_vec_realign", ("rows", "cols"))
            assert k.dtypes == tuple(d for d in DTYPES if d != "complex128")  # 16-byte elements: smem_vec
            assert k.signature == "PPiiqq" and dict(k.fixed) == {"UNROLL": 1}  # with row pitch and batch stride
            continue
        if name == FLAT:  # every dtype, no tiles
            assert (k.source.name, k.function, k.dims) == ("flat.cu", "transpose_flat", ("rows", "cols"))
            assert k.dtypes == tuple(DTYPES) and k.signature == "PPiiqq" and dict(k.fixed) == {}
            continue
        if name == ALIGNED:  # every dtype (16-byte elements as two 8-byte parts, like smem.cu)
            assert (k.source.name, k.function, k.dims) == ("aligned_out.cu", "transpose_aligned_out", ("rows", "cols"))
            assert k.dtypes == tuple(DTYPES)
            assert k.signature == "PPiiqq" and dict(k.fixed) == {"UNROLL": 1}  # with row pitch and batch stride
            continue
        if name == SKINNY:  # every dtype of 1 to 8 bytes
            assert (k.source.name, k.function, k.dims) == ("skinny.cu", "transpose_skinny", ("rows", "cols"))
            assert k.dtypes == tuple(d for d in DTYPES if DTYPES[d].itemsize <= 8)
            assert k.signature == "PPiiqq" and dict(k.fixed) == {"UNROLL": 1}  # with row pitch and batch stride
            continue
        if name in (BYTES, BYTES_OUT):  # every 1- and 2-byte dtype of the catalog
            source = "bytes_realign" if name == BYTES else "bytes_aligned_out"
            assert (k.source.name, k.function, k.dims) == (f"{source}.cu", f"transpose_{source}", ("rows", "cols"))
            assert k.dtypes == tuple(d for d in DTYPES if DTYPES[d].itemsize <= 2)
            assert k.signature == "PPiiqq" and dict(k.fixed) == {"UNROLL": 1}  # with row pitch and batch stride
            continue
        assert dict(k.defaults) == before.DEFAULTS[name]
        if name in before.MOVES:
            source, function, op, _, _, _, fixed = before.MOVES[name]
            assert (k.source.name, k.function, dict(k.fixed), k.dims) == (source, function, fixed, ("rows", "cols"))
            # the transposes also take the input's row pitch and batch stride (int64); the copies do not
            assert k.dtypes == tuple(DTYPES) and k.signature == ("PPii" if source == "copy.cu" else "PPiiqq")
        else:
            assert (k.source.name, k.function, k.dims) == (f"{name}.cu", name, ("m", "n", "k"))
            assert k.dtypes == ("float32", "float64") and k.signature == "PPPiii" and dict(k.fixed) == {}


def test_aliases_and_unknown_names():
    assert get_kernel("copy") is KERNELS["copy_row"] and get_kernel("naive") is KERNELS["naive_row"]
    assert resolve_kernel("copy") is KERNELS["copy_row"]
    assert set(ALIASES).isdisjoint(KERNELS)
    with pytest.raises(InvalidInputError, match=r"unknown kernel 'smempad' \(did you mean smem_pad"):
        get_kernel("smempad")
    with pytest.raises(InvalidInputError, match=r"did you mean copy_row.*or a path to a kernel file"):
        resolve_kernel("copyrow")


def test_source_hashes_are_the_ones_before_the_kernel_model():
    # issue 14: 16-byte elements, row pitch and batches (smem.cu, vec.cu), then row pitch and batches in
    # naive.cu, whose shared direct.cuh copy.cu includes too: their stored results are stale
    changed = ("smem.cu", "vec.cu", "naive.cu", "copy.cu")
    for k in (k for k in KERNELS.values() if k.name not in NEW | {REALIGN, BYTES, BYTES_OUT, SKINNY, ALIGNED, FLAT}):
        same = k.source_hash[:12] == before.SOURCE_HASHES[k.source.name]
        assert len(k.source_hash) == 64 and same == (k.source.name not in changed), k.name
    assert KERNELS["smem"].source_hash == KERNELS["smem_pad"].source_hash == KERNELS["smem_unroll_pad"].source_hash
    assert len({k.source_hash for k in KERNELS.values() if k.name not in NEW | {REALIGN, BYTES, BYTES_OUT, SKINNY, ALIGNED, FLAT}}) == len(before.SOURCE_HASHES)


def test_sources_are_inlined_once():
    text = KERNELS["naive_row"].source_text()
    assert "block_tile_origin" in text and "move_direct" in text and '#include "' not in text
    assert "#pragma once" not in text and text.count("typedef ELEM_T elem_t;") == 1  # common.cuh once
    assert "#include <cuda_fp16.h>" in text  # system headers stay for nvcc


def test_spec_hashes_tell_kernels_of_one_source_apart(tmp_path):
    hashes = {k.spec_hash for k in KERNELS.values()}
    assert len(hashes) == len(KERNELS) and all(len(h) == 64 for h in hashes)
    again = resolve_kernel(write_kernel(tmp_path / "again.toml", {**catalog_doc("smem_pad"), "name": "smem_pad2"}))
    assert again.spec_hash == KERNELS["smem_pad"].spec_hash and again.source_hash == KERNELS["smem_pad"].source_hash
    doc = catalog_doc("smem_pad")
    doc["space"] = {"params": {"TILE_DIM": [32], "BLOCK_ROWS": [8], "IPAD": [1], "DIAGONAL": [0]},
                    "default": doc["space"]["default"]}  # another space: the same binary and launch
    assert resolve_kernel(write_kernel(tmp_path / "b.toml", {**doc, "name": "b"})).spec_hash == again.spec_hash
    doc["launch"]["grid"] = ["cdiv(rows, TILE_DIM) * cdiv(cols, TILE_DIM)", 1, 1]  # another launch
    assert resolve_kernel(write_kernel(tmp_path / "c.toml", {**doc, "name": "c"})).spec_hash != again.spec_hash


def test_checks_and_objectives():
    for name, k in KERNELS.items():
        c, o = k.check_spec, k.objective
        if name in before.MOVES or name in (REALIGN, BYTES, BYTES_OUT, SKINNY, ALIGNED, FLAT):
            op = before.MOVES[name][2] if name in before.MOVES else "transpose"
            assert (c.reference, c.compare) == (f"autotune.kernel.references:{op}", "exact")
            assert str(o.bytes) == "2 * rows * cols * itemsize" and o.flops is None
            assert (o.bound, o.bound_kernel) == ("memcpy", "copy_row")
            out, src = k.arrays
            assert (out.name, out.role, src.name, src.role, src.init) == ("out", "out", "src", "in", "bits")
            env = {"rows": 3, "cols": 5}
            assert out.shape_of(env) == ((5, 3) if op == "transpose" else (3, 5)) and src.shape_of(env) == (3, 5)
        else:
            assert c.reference == "autotune.kernel.references:matmul"
            assert c.compare == "autotune.kernel.references:product_tolerance"
            assert str(o.flops) == "2 * m * n * k" and (o.bound, o.bound_kernel) == ("cublas", None)
            assert o.bytes is None or str(o.bytes) == "(m * k + k * n + m * n) * itemsize", name
            assert [(a.name, a.role, a.shape_of({"m": 2, "n": 3, "k": 4})) for a in k.arrays] == [
                ("C", "out", (2, 3)), ("A", "in", (2, 4)), ("B", "in", (4, 3))]
    assert KERNELS["smem_pad"].figure("bytes", {"rows": 3, "cols": 5}, get_dtype("float64")) == 240
    assert KERNELS["matmul_reg"].figure("flops", {"m": 2, "n": 3, "k": 4}, get_dtype("float32")) == 48


def test_references_on_numpy_arrays():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = transpose(src=a, out=np.zeros((3, 2), np.int16), rows=2, cols=3)
    np.testing.assert_array_equal(t, a.T)
    assert t.flags.c_contiguous
    np.testing.assert_array_equal(copy(src=a, out=None), a)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.dtype("V2")])
def test_the_blocked_transpose_reference_is_numpys_transpose(dtype):
    """Blocks of 32 x 2048 with partial blocks at both edges; any element type, raw bytes too."""
    rng = np.random.default_rng(0)
    a = np.frombuffer(rng.bytes(70 * 4100 * np.dtype(dtype).itemsize), dtype=dtype).reshape(70, 4100)
    t = transpose(src=a)
    assert t.shape == (4100, 70) and t.dtype == a.dtype and t.flags.c_contiguous
    assert t.tobytes() == np.ascontiguousarray(a.T).tobytes()


# --- macros and configs ------------------------------------------------------------------------


def test_macros_add_fixed_ones_and_the_element_type():
    k = get_kernel("smem")
    m = k.macros(k.default_config(), get_dtype("float64"))
    assert m == {"BLOCK_ROWS": "8", "DIAGONAL": "0", "IPAD": "0", "TILE_DIM": "32", "UNROLL": "1",
                 "ELEM_T": "double"}
    assert list(m) == ["BLOCK_ROWS", "DIAGONAL", "IPAD", "TILE_DIM", "UNROLL", "ELEM_T"]
    k = get_kernel("naive_col")
    assert k.macros(k.default_config(), get_dtype("int8")) == {
        "BLOCK_ROWS": "8", "COLUMNWISE": "1", "DIAGONAL": "0", "TILE_DIM": "32", "UNROLL": "1",
        "ELEM_T": "signed char"}
    assert KERNELS["smem_vec"].macros(KERNELS["smem_vec"].default_config(), get_dtype("float16"))["ELEM_T"] == "__half"


@pytest.mark.parametrize("config, message", [
    (Config.of("smem", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "DIAGONAL": 0}), "not for kernel"),
    (Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1}), "takes"),
    (Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0, "X": 2}), "takes"),
    (Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": -8, "IPAD": 1, "DIAGONAL": 0}), "non-negative"),
])
def test_macros_refuse_configs_that_do_not_fit(config, message):
    with pytest.raises(InvalidInputError, match=message):
        KERNELS["smem_pad"].macros(config, get_dtype("float32"))


def test_dtypes():
    for d in DTYPES.values():
        assert d.numpy.itemsize == d.itemsize
    assert get_dtype(np.float32).name == "float32"
    with pytest.raises(InvalidInputError, match="unknown dtype 'complex64'"):
        get_dtype("complex64")
    with pytest.raises(InvalidInputError, match="does not support dtype 'int8'; allowed: float32, float64"):
        KERNELS["matmul_tiled"].check_dtype("int8")
    KERNELS["matmul_tiled"].check_dtype(get_dtype("float64"))


# --- launch geometry: the same as before the kernel model ---------------------------------------

SHAPES = [(1, 1), (1, 1000), (1000, 1), (33, 65), (1000, 3001), (8192, 8192)]


@pytest.mark.parametrize("kernel", sorted(before.DEFAULTS))
def test_every_config_launches_as_before_the_kernel_model(kernel):
    k = KERNELS[kernel]
    configs = k.space().configs()
    for config, (rows, cols), dt in itertools.product(configs, SHAPES, ITEMSIZE_DTYPES):
        if not k.dtypes.count(dt.name):
            continue
        dims = dict(zip(k.dims, (rows, cols, 77)))
        got = k.geometry(config, dims, dt)
        want = (before.grid(kernel, config.as_dict(), rows, cols), before.block(kernel, config.as_dict(), dt.itemsize),
                before.dynamic_shared_bytes(kernel, config.as_dict(), min(dt.itemsize, 8)))
        assert got == want, (config, rows, cols, dt.name)


@pytest.mark.parametrize("rows, cols, tile, blocks", [(1, 1, 32, 1), (33, 64, 32, 4), (8192, 8192, 32, 65536),
                                                      (1, 100000, 64, 1563), (100000, 1, 8, 12500)])
@pytest.mark.parametrize("kernel", [k for k in MOVES if "unroll" not in k])
def test_one_block_per_tile(kernel, rows, cols, tile, blocks):
    vector = 4 if kernel == "smem_vec" else 1  # 16-byte vectors of 4-byte elements
    c = cfg(kernel, TILE_DIM=tile, BLOCK_ROWS=1)
    shared = before.dynamic_shared_bytes(kernel, c.as_dict(), 4)  # the tiles of smem.cu's kernels
    assert geometry(kernel, c, rows, cols) == ((blocks, 1, 1), (tile // vector, 1, 1), shared)


@pytest.mark.parametrize("kernel, unroll, rows, cols, tiles", [
    ("unroll_row", 4, 33, 130, (2, 2)),      # block tiles of 32 x 128: along the input rows
    ("unroll_col", 4, 33, 130, (1, 5)),      # block tiles of 128 x 32: down the input columns
    ("smem_unroll_pad", 2, 33, 130, (2, 3)),  # 32 x 64, like unroll_row
    ("unroll_row", 8, 1, 1, (1, 1)),
    ("unroll_col", 2, 100000, 1, (1563, 1)),
    ("smem_unroll_pad", 4, 1, 100000, (1, 782)),
])
def test_one_block_per_unroll_tiles(kernel, unroll, rows, cols, tiles):
    c = cfg(kernel, UNROLL=unroll)
    shared = before.dynamic_shared_bytes(kernel, c.as_dict(), 4)
    assert geometry(kernel, c, rows, cols) == ((tiles[0] * tiles[1], 1, 1), (32, 8, 1), shared)


@pytest.mark.parametrize("dtype, threads_x", [("int8", 4), ("float16", 8), ("float32", 16), ("float64", 32)])
def test_the_vectorized_kernel_moves_16_bytes_per_thread(dtype, threads_x):
    c = cfg("smem_vec", TILES=3)  # 64 x 64 tiles, 3 per block
    assert geometry("smem_vec", c, 1000, 3001, dtype) == ((-(-16 * 47 // 3), 1, 1), (threads_x, 16, 1), 0)


def test_matmul_geometry():
    assert geometry("matmul_reg", KERNELS["matmul_reg"].default_config(), 100, 300, depth=5) == \
        ((5, 2, 1), (16, 16, 1), 0)
    assert geometry("matmul_naive", cfg("matmul_naive", BLOCK_X=32, BLOCK_Y=8), 100, 300, depth=1) == \
        ((10, 13, 1), (32, 8, 1), 0)
    assert geometry("matmul_tiled", cfg("matmul_tiled", TILE_WIDTH=32), 1, 1, depth=4096) == ((1, 1, 1), (32, 32, 1), 0)


@pytest.mark.parametrize("name", before.MATMULS)
def test_every_matmul_block_covers_its_tile_of_c_and_the_grid_covers_c(name):
    k = KERNELS[name]
    for config in k.space().configs():
        tile_rows, tile_cols = before.tile_shape(name, config.as_dict())
        for m, n in ((1, 1), (1000, 3), (4097, 4095)):
            (gx, gy, gz), (x, y, z), _ = k.geometry(config, {"m": m, "n": n, "k": 7}, get_dtype("float64"))
            assert z == gz == 1 and 64 <= x * y <= 1024
            assert tile_rows % y == 0 and tile_cols % x == 0  # each thread owns a whole number of outputs
            assert (gx - 1) * tile_cols < n <= gx * tile_cols and (gy - 1) * tile_rows < m <= gy * tile_rows


# --- the block-to-tile orders of kernels/common.cuh ---------------------------------------------

GRIDS = [(1, 1), (1, 7), (7, 1), (4, 4), (3, 5), (5, 3), (2, 8), (8, 2), (6, 4), (64, 3), (17, 17)]


@pytest.mark.parametrize("tiles_y, tiles_x", GRIDS)
@pytest.mark.parametrize("diagonal, group", [(False, 0), (True, 0), (False, 1), (False, 3), (False, 8)])
def test_block_to_tile_mapping_is_a_bijection(tiles_y, tiles_x, diagonal, group):
    got = [tile_of_block(b, tiles_y, tiles_x, diagonal, group) for b in range(tiles_y * tiles_x)]
    assert sorted(got) == list(itertools.product(range(tiles_y), range(tiles_x)))


@pytest.mark.parametrize("tiles_y, tiles_x", GRIDS)
@pytest.mark.parametrize("group", [2, 3])
def test_grouped_order_walks_bands_of_tile_rows_column_by_column(tiles_y, tiles_x, group):
    for b in range(tiles_y * tiles_x - 1):
        (y0, x0), (y1, x1) = (tile_of_block(b + i, tiles_y, tiles_x, False, group) for i in (0, 1))
        if y1 // group == y0 // group:  # within a band: down the column, then the next column's top
            height = min(group, tiles_y - y0 // group * group)
            assert (y1, x1) == ((y0 + 1, x0) if (y0 + 1) % group and y0 + 1 < tiles_y else (y0 - height + 1, x0 + 1))
        else:  # the next band starts at its first row, first column
            assert (y1, x1) == (y0 // group * group + group, 0) and x0 == tiles_x - 1


@pytest.mark.parametrize("tiles_y, tiles_x", GRIDS)
def test_diagonal_order_steps_down_and_right(tiles_y, tiles_x):
    for b in range(tiles_y * tiles_x - 1):
        (y0, x0), (y1, x1) = tile_of_block(b, tiles_y, tiles_x, True), tile_of_block(b + 1, tiles_y, tiles_x, True)
        if y0 + 1 < tiles_y:  # within one diagonal: one tile down, one right (wrapping)
            assert (y1, x1) == (y0 + 1, (x0 + 1) % tiles_x)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_diagonal_order_is_the_classic_one_on_a_square_grid(n):
    # classic: block (bx, by) of a 2-D grid, launched as b = by * n + bx, moves tile
    # column (bx + by) % n of tile row bx
    for by, bx in itertools.product(range(n), repeat=2):
        assert tile_of_block(by * n + bx, n, n, True) == (bx, (bx + by) % n)


# --- users' kernel files ---------------------------------------------------------------------


def test_a_users_kernel_file_resolves_once_by_path(tmp_path, user_registry, monkeypatch):
    path = write_kernel(tmp_path / "mine" / "pad.toml", {**catalog_doc("smem_pad"), "name": "my_pad"})
    k = resolve_kernel(str(path))
    assert k.name == "my_pad" and k.path == path.resolve() and k.source == KERNELS["smem_pad"].source
    assert resolve_kernel(path) is k and resolve_kernel(str(path)) is k and get_kernel("my_pad") is k
    monkeypatch.chdir(tmp_path)
    assert resolve_kernel("mine/pad.toml") is k and resolve_kernel("./mine/../mine/pad.toml") is k
    assert resolve_kernel(k) is k


def test_a_catalog_file_by_path_is_the_catalog_kernel(user_registry):
    path = data_dir("kernels") / "smem_pad.toml"
    assert resolve_kernel(str(path)) is KERNELS["smem_pad"] and resolve_kernel(path.resolve()) is KERNELS["smem_pad"]


def test_a_users_kernel_may_not_take_a_catalog_name(tmp_path, user_registry):
    for name in ("smem_pad", "copy"):  # a catalog kernel's name, or an alias
        path = write_kernel(tmp_path / f"{name}.toml", {**catalog_doc("smem_pad"), "name": name})
        with pytest.raises(KernelFileError, match=f"kernel file {path.resolve()}: name: '{name}' is a catalog "
                                                  "kernel's name; choose another"):
            resolve_kernel(path)
    with pytest.raises(InvalidInputError, match="unknown kernel 'copy_pad'"):
        get_kernel("copy_pad")


def test_two_files_may_not_give_one_name(tmp_path, user_registry):
    first = write_kernel(tmp_path / "a" / "k.toml", {**catalog_doc("smem_pad"), "name": "mine"})
    second = write_kernel(tmp_path / "b" / "k.toml", {**catalog_doc("naive_row"), "name": "mine"})
    k = resolve_kernel(first)
    with pytest.raises(KernelFileError, match=f"kernel file {second.resolve()}: name: 'mine' is already the name of "
                                              f"{first.resolve()} in this process; choose another"):
        resolve_kernel(second)
    assert get_kernel("mine") is k and resolve_kernel(first) is k


def test_a_broken_users_file_is_a_kernel_file_error(tmp_path, user_registry):
    with pytest.raises(KernelFileError, match="cannot read kernel file"):
        resolve_kernel(str(tmp_path / "missing.toml"))
    doc = catalog_doc("smem_pad")
    del doc["function"]
    with pytest.raises(KernelFileError, match="function: missing"):
        resolve_kernel(write_kernel(tmp_path / "broken.toml", {**doc, "name": "broken"}))
    with pytest.raises(InvalidInputError, match="unknown kernel 'broken'"):
        get_kernel("broken")
