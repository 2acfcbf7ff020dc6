import itertools
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES, get_dtype
from autotune.errors import InvalidInputError
from autotune.kernel.catalog import ALIASES, KERNELS, get_kernel, source_hash, source_text, tile_of_block
from autotune.resources import data_dir

CATALOG = ["copy_row", "copy_col", "naive_row", "naive_col", "unroll_row", "unroll_col", "diagonal_row",
           "diagonal_col", "smem", "smem_pad", "smem_unroll_pad", "smem_vec", "matmul_naive", "matmul_tiled",
           "matmul_reg"]
MOVES = {name: k for name, k in KERNELS.items() if k.op != "matmul"}
"""The transposes and copies (the matrix products are tested in test_matmul.py)."""


def cfg(kernel, **macros):
    """The kernel's default config with some macros changed."""
    return Config.of(kernel, {**KERNELS[kernel].defaults, **macros})


def test_the_catalog_and_its_aliases():
    assert list(KERNELS) == CATALOG
    assert get_kernel("copy") is KERNELS["copy_row"] and get_kernel("naive") is KERNELS["naive_row"]
    assert set(ALIASES).isdisjoint(KERNELS)
    assert KERNELS["smem_pad"].default_config() == Config.of(
        "smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0})
    for k in KERNELS.values():
        text = source_text(k.file)  # the entry point's name starts a line after __launch_bounds__(...)
        assert (data_dir("kernels") / k.file).is_file() and any(f"{sep}{k.function}(" in text for sep in " \n")
    for k in MOVES.values():
        assert k.op == ("copy" if k.name.startswith("copy") else "transpose")
        assert k.layout == ("col" if k.name.endswith("_col") else "row")
        assert k.shared == k.name.startswith("smem")
        assert set(k.fixed).isdisjoint(k.defaults)
        assert ("UNROLL" in k.defaults) == ("unroll" in k.name)
        diagonal = {**k.fixed, **k.defaults}.get("DIAGONAL")
        assert diagonal == (1 if k.name.startswith("diagonal") else 0)
        assert ("DIAGONAL" in k.defaults) == k.shared  # a tunable of the tiled kernels only


def test_sources_are_inlined_and_hashed():
    text = source_text("naive.cu")
    assert "block_tile_origin" in text and "move_direct" in text and '#include "' not in text
    assert "#pragma once" not in text and text.count("typedef ELEM_T elem_t;") == 1  # common.cuh once
    assert "#include <cuda_fp16.h>" in text  # system headers stay for nvcc
    h = source_hash(KERNELS["smem_pad"])
    assert len(h) == 64 and h == source_hash(KERNELS["smem"]) == source_hash(KERNELS["smem_unroll_pad"])
    assert source_hash(KERNELS["naive_row"]) == source_hash(KERNELS["diagonal_col"])  # same file
    assert len({h, source_hash(KERNELS["naive_row"]), source_hash(KERNELS["copy_row"])}) == 3


def test_macros_add_fixed_ones_and_the_element_type():
    k = get_kernel("smem")
    m = k.macros(k.default_config(), get_dtype("float64"))
    assert m == {"BLOCK_ROWS": "8", "DIAGONAL": "0", "IPAD": "0", "TILE_DIM": "32", "UNROLL": "1",
                 "ELEM_T": "double"}
    k = get_kernel("naive_col")
    assert k.macros(k.default_config(), get_dtype("int8")) == {
        "BLOCK_ROWS": "8", "COLUMNWISE": "1", "DIAGONAL": "0", "TILE_DIM": "32", "UNROLL": "1",
        "ELEM_T": "signed char"}


@pytest.mark.parametrize("config, message", [
    (Config.of("smem", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "DIAGONAL": 0}), "not for kernel"),
    (Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1}), "takes"),
    (Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0, "X": 2}), "takes"),
    (Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": -8, "IPAD": 1, "DIAGONAL": 0}), "non-negative"),
])
def test_macros_refuse_configs_that_do_not_fit(config, message):
    with pytest.raises(InvalidInputError, match=message):
        KERNELS["smem_pad"].macros(config, get_dtype("float32"))


@pytest.mark.parametrize("rows, cols, tile, blocks", [(1, 1, 32, 1), (33, 64, 32, 4), (8192, 8192, 32, 65536),
                                                      (1, 100000, 64, 1563), (100000, 1, 8, 12500)])
@pytest.mark.parametrize("kernel", [k for k in MOVES if "unroll" not in k])
def test_grid_has_one_block_per_tile(kernel, rows, cols, tile, blocks):
    k = KERNELS[kernel]
    c = cfg(kernel, TILE_DIM=tile, BLOCK_ROWS=1)
    assert k.grid(c, rows, cols) == (blocks, 1)
    assert k.block(c, 4) == (tile // k.vector(4), 1, 1)
    assert k.tile_shape(c) == (tile, tile)


@pytest.mark.parametrize("kernel, unroll, rows, cols, tiles", [
    ("unroll_row", 4, 33, 130, (2, 2)),      # block tiles of 32 x 128: along the input rows
    ("unroll_col", 4, 33, 130, (1, 5)),      # block tiles of 128 x 32: down the input columns
    ("smem_unroll_pad", 2, 33, 130, (2, 3)),  # 32 x 64, like unroll_row
    ("unroll_row", 8, 1, 1, (1, 1)),
    ("unroll_col", 2, 100000, 1, (1563, 1)),
    ("smem_unroll_pad", 4, 1, 100000, (1, 782)),
])
def test_grid_has_one_block_per_unroll_tiles(kernel, unroll, rows, cols, tiles):
    k = KERNELS[kernel]
    c = cfg(kernel, UNROLL=unroll)
    along = (32 * unroll, 32) if k.layout == "col" else (32, 32 * unroll)
    assert k.tile_shape(c) == along
    assert k.tiles(c, rows, cols) == tiles and k.grid(c, rows, cols) == (tiles[0] * tiles[1], 1)
    assert k.block(c, 4) == (32, 8, 1)


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


@pytest.mark.parametrize("kernel, config, itemsize, expected", [
    ("smem", {}, 4, 32 * 32 * 4), ("smem_pad", {}, 8, 32 * 33 * 8), ("smem_unroll_pad", {}, 2, 2 * 32 * 33 * 2),
    ("smem_unroll_pad", {"TILE_DIM": 16, "IPAD": 4, "UNROLL": 4}, 1, 4 * 16 * 20),
    ("naive_row", {}, 8, 0), ("unroll_col", {}, 8, 0),
])
def test_shared_bytes(kernel, config, itemsize, expected):
    assert KERNELS[kernel].shared_bytes(cfg(kernel, **config), itemsize) == expected


def test_reference_and_output_shape():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert KERNELS["naive_row"].output_shape(2, 3) == (3, 2)
    assert KERNELS["copy_col"].output_shape(2, 3) == (2, 3)
    np.testing.assert_array_equal(KERNELS["smem_pad"].reference(a), a.T)
    assert KERNELS["smem_pad"].reference(a).flags.c_contiguous
    np.testing.assert_array_equal(KERNELS["copy_row"].reference(a), a)


def test_unknown_kernel_suggests_close_names():
    with pytest.raises(InvalidInputError, match=r"unknown kernel 'smempad' \(did you mean smem_pad"):
        get_kernel("smempad")
    with pytest.raises(InvalidInputError, match=r"did you mean copy_row"):
        get_kernel("copyrow")


def test_dtypes_match_numpy_itemsizes():
    for d in DTYPES.values():
        assert d.numpy.itemsize == d.itemsize
    assert get_dtype(np.float32).name == "float32"
    with pytest.raises(InvalidInputError, match="unknown dtype 'complex64'"):
        get_dtype("complex64")


# --- The real kernel sources, run on the CPU -------------------------------------------------
# The .cu text is compiled as C++ with the CUDA keywords defined away: each thread of a block
# is a std::thread (a std::barrier is __syncthreads), blocks run one after another, launched
# with the Python grid and block. Checks the index math of every kernel on odd, rectangular
# and 1-row / 1-column shapes without a GPU; the GPU tests check the same on the device.

_HARNESS = r"""
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
struct Idx { unsigned x, y, z; };
thread_local Idx threadIdx, blockIdx;
std::barrier<> *bar;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
struct alignas(16) uint4 { unsigned x, y, z, w; };
template <class T> T __ldg(const T *p) { return *p; }
template <class T> T __ldcs(const T *p) { return *p; }
template <class T> void __stcs(T *p, T v) { *p = v; }
inline void __syncthreads() { bar->arrive_and_wait(); }
#include "k.cu"
int main(int argc, char **argv)  // bx by transpose threaded {rows cols blocks}...
{
    const unsigned bx = atoi(argv[1]), by = atoi(argv[2]);
    const bool transpose = atoi(argv[3]), threaded = atoi(argv[4]);
    for (int a = 5; a + 2 < argc; a += 3) {
        const int rows = atoi(argv[a]), cols = atoi(argv[a + 1]);
        const unsigned blocks = atoi(argv[a + 2]);
        const size_t n = (size_t)rows * cols;
        std::vector<elem_t> in(n), out(n, 0);
        for (size_t i = 0; i < n; ++i) in[i] = (elem_t)(i + 1);
        std::barrier<> barrier(threaded ? bx * by : 1);
        bar = &barrier;
        auto thread = [&](unsigned x, unsigned y) {
            threadIdx = {x, y, 0};
            for (unsigned b = 0; b < blocks; ++b) {
                blockIdx = {b, 0, 0};
                ENTRY(out.data(), in.data(), rows, cols);
                if (threaded) barrier.arrive_and_wait();  // the next block starts after this one
            }
        };
        std::vector<std::thread> ts;
        for (unsigned y = 0; y < by; ++y)
            for (unsigned x = 0; x < bx; ++x)
                if (threaded) ts.emplace_back(thread, x, y); else thread(x, y);
        for (auto &t : ts) t.join();
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c)
                if (out[transpose ? (size_t)c * rows + r : (size_t)r * cols + c] != in[(size_t)r * cols + c]) {
                    printf("%dx%d: wrong output for input (%d, %d)\n", rows, cols, r, c);
                    return 1;
                }
    }
    return 0;
}
"""
_EMULATED_SHAPES = [(1, 1), (1, 77), (77, 1), (3, 5), (5, 3), (33, 65), (65, 33), (127, 300), (68, 132)]


def _cxx_flags(cxx, tmp: Path) -> list[str]:
    """Address and UB sanitizers (out-of-bounds reads and writes) where the compiler has them."""
    flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    probe = tmp / "probe.cpp"
    probe.write_text("int main() { return 0; }\n")
    ok = subprocess.run([cxx, *flags, str(probe), "-o", str(tmp / "probe")], capture_output=True).returncode == 0
    return flags if ok else []


def _emulated_configs():
    """Each kernel's default, its smallest and largest block tile, and its default in the diagonal
    and grouped tile orders where those are tunable."""
    from autotune.kernel.space import load_space

    out = []
    for name, k in MOVES.items():
        configs = load_space(name).configs()
        size = lambda c: (np.prod(k.tile_shape(c)), -c["BLOCK_ROWS"], c.key)  # noqa: E731
        picks = [k.default_config(), min(configs, key=size), max(configs, key=size)]
        for macro in ("DIAGONAL", "GROUP"):  # the default in another tile order
            picks += [c for c in configs if macro in k.defaults and c[macro] > 0
                      and c.as_dict() == {**picks[0].as_dict(), macro: c[macro]}][:1]
        out += [(name, c) for c in dict.fromkeys(picks)]
    return out


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_every_kernel_source_is_exact_when_emulated_on_the_cpu(tmp_path):
    (tmp_path / "cuda_fp16.h").write_text("struct __half { unsigned short x; };\n")
    (tmp_path / "h.cpp").write_text(_HARNESS)
    flags = _cxx_flags("g++", tmp_path)

    def run(job):
        i, (name, config) = job
        k = KERNELS[name]
        d = tmp_path / str(i)
        d.mkdir()
        (d / "k.cu").write_text(source_text(k.file))
        macros = {**k.macros(config, get_dtype("int32")), "ELEM_T": "unsigned", "ENTRY": k.function}
        build = subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", *flags, f"-I{tmp_path}", f"-I{d}",
                                *[f"-D{m}={v}" for m, v in macros.items()], str(tmp_path / "h.cpp"),
                                "-o", str(d / "h")], capture_output=True, text=True)
        if build.returncode:
            return f"{config}: does not build: {build.stderr[:1000]}"
        args = [*map(str, k.block(config, 4)[:2]), str(int(k.op == "transpose")), str(int(k.shared))]
        for rows, cols in _EMULATED_SHAPES:
            args += [str(rows), str(cols), str(k.grid(config, rows, cols)[0])]
        res = subprocess.run([str(d / "h"), *args], capture_output=True, text=True)
        return f"{config}: {res.stdout}{res.stderr[:1000]}" if res.returncode else None  # sanitizer report

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        failures = [f for f in pool.map(run, enumerate(_emulated_configs())) if f]
    assert not failures, "\n".join(failures)
