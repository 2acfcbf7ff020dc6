"""The real kernel sources of the catalog's transposes and copies, run on the CPU.

The .cu text is compiled as C++ with the CUDA keywords defined away: each thread of a block
is a fiber (__syncthreads switches back to the block's scheduler), blocks run one after another,
launched with the grid and block of the kernel file's [launch]. Checks the index math of every kernel
on odd, rectangular and 1-row / 1-column shapes without a GPU (under the address and UB
sanitizers where g++ has them); tests/gpu/ checks the same on the device.
"""

import math
import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

import catalog_before as before
from cuda_on_cpu import Harness
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

_MAIN = r"""int main(int argc, char **argv)  // bx by transpose threaded {rows cols blocks}...
{
    const unsigned bx = atoi(argv[1]), by = atoi(argv[2]);
    const bool transpose = atoi(argv[3]), threaded = atoi(argv[4]);
    for (int a = 5; a + 2 < argc; a += 3) {
        const int rows = atoi(argv[a]), cols = atoi(argv[a + 1]);
        const unsigned blocks = atoi(argv[a + 2]);
        const size_t n = (size_t)rows * cols;
        std::vector<elem_t> in(n), out(n, 0);
        for (size_t i = 0; i < n; ++i) in[i] = (elem_t)(i + 1);
        if (threaded)  // a fiber per thread of a block, the blocks one after another
            emu_grid(bx, by, blocks, 1, [&] { ENTRY(out.data(), in.data(), rows, cols ENTRY_TAIL); });
        else  // no barrier: each thread runs all its blocks, one thread after another
            for (unsigned y = 0; y < by; ++y)
                for (unsigned x = 0; x < bx; ++x) {
                    threadIdx = {x, y, 0};
                    for (unsigned b = 0; b < blocks; ++b) {
                        blockIdx = {b, 0, 0};
                        ENTRY(out.data(), in.data(), rows, cols ENTRY_TAIL);
                    }
                }
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



def _emulated_configs():
    """Each kernel's default, its smallest and largest block tile, and its default in the diagonal
    and grouped tile orders where those are tunable."""
    out = []
    for name in sorted(before.MOVES):
        k = KERNELS[name]
        configs = k.space().configs()
        size = lambda c: (math.prod(before.tile_shape(name, c.as_dict())), -c["BLOCK_ROWS"], c.key)  # noqa: E731
        picks = [k.default_config(), min(configs, key=size), max(configs, key=size)]
        for macro in ("DIAGONAL", "GROUP"):  # the default in another tile order
            picks += [c for c in configs if macro in k.defaults and c[macro] > 0
                      and c.as_dict() == {**picks[0].as_dict(), macro: c[macro]}][:1]
        out += [(name, c) for c in dict.fromkeys(picks)]
    return out


def test_every_move_kernel_source_is_exact_when_emulated_on_the_cpu(tmp_path):
    harness = Harness(tmp_path, _MAIN)
    int32 = get_dtype("int32")  # the harness's elements are 4-byte unsigned

    def run(job):
        i, (name, config) = job
        k = KERNELS[name]
        d = tmp_path / str(i)
        text = k.source_text()
        macros = {**k.macros(config, int32), k.dtype_macro: "unsigned", "ENTRY": k.function,
                  # the word-moving transposes also take the input's row pitch and batch stride
                  "ENTRY_TAIL": ",(long long)cols,(long long)rows*cols" if k.signature.endswith("qq") else ""}
        failed = harness.build(d, text, macros)
        if failed:
            return f"{config}: {failed}"
        _, block, _ = k.geometry(config, {"rows": 1, "cols": 1}, int32)
        transposes = k.check_spec.reference == "autotune.kernel.references:transpose"
        args = [str(block[0]), str(block[1]), str(int(transposes)), str(int("__syncthreads" in text))]
        for rows, cols in _EMULATED_SHAPES:
            grid, _, _ = k.geometry(config, {"rows": rows, "cols": cols}, int32)
            assert grid[1:] == (1, 1) and block[2] == 1, (config, grid, block)  # a 1-D grid of 2-D blocks
            args += [str(rows), str(cols), str(grid[0])]
        failed = harness.run(d, args)  # a wrong element or a sanitizer report
        return f"{config}: {failed}" if failed else None

    jobs = list(enumerate(_emulated_configs()))
    assert {name for _, (name, _) in jobs} == set(before.MOVES) and len(jobs) >= 3 * len(before.MOVES)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        failures = [f for f in pool.map(run, jobs) if f]
    assert not failures, "\n".join(failures)
