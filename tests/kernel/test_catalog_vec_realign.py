"""kernels/vec_realign.cu (smem_vec_realign) run on the CPU for every element size.

The .cu text is compiled as C++ with the CUDA keywords defined away (as in tests/kernel/test_catalog_emulated.py):
each thread of a block is a fiber, __syncthreads a switch back to the block's scheduler, blocks run
one after another with the grid and block of the kernel file's [launch]. Unlike tests/kernel/test_catalog_emulated.py (4-byte
elements), every item size 1, 2, 4 and 8 is run, on shapes whose rows start anywhere relative to
16 bytes (odd, prime, 1 x N, N x 1) and with input and output pointers 0..15 bytes off a 16-byte
boundary (a row offset of a larger array), as row-pitched views and batches (the input buffer is
exactly the view's span), under the address and UB sanitizers where g++ has them.
The device runs the same in tests/gpu/test_gpu_vec_realign.py.
"""

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from cuda_on_cpu import Harness
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

_MAIN = r"""int main(int argc, char **argv)  // bx by {rows cols blocks in_offset out_offset pad batch gap}...
{
    const unsigned bx = atoi(argv[1]), by = atoi(argv[2]);
    for (int a = 3; a + 7 < argc; a += 8) {
        const int rows = atoi(argv[a]), cols = atoi(argv[a + 1]);
        const unsigned blocks = atoi(argv[a + 2]), ioff = atoi(argv[a + 3]), ooff = atoi(argv[a + 4]);
        const long long ld = cols + atoi(argv[a + 5]), batch = atoi(argv[a + 6]);
        const long long stride = rows * ld + atoi(argv[a + 7]);  // elements between matrices
        const size_t n = (size_t)rows * cols, span = (size_t)((batch - 1) * stride + (rows - 1) * ld + cols);
        // exactly sized heap blocks (the sanitizer sees any access outside them), at the offsets:
        // the input is the view's span only (first to last element), as a slice of a larger array
        unsigned char *ibuf = (unsigned char *)aligned_alloc(16, (span * sizeof(elem_t) + ioff + 15) / 16 * 16);
        unsigned char *obuf = (unsigned char *)aligned_alloc(16, (batch * n * sizeof(elem_t) + ooff + 15) / 16 * 16);
        elem_t *in = (elem_t *)(ibuf + ioff), *out = (elem_t *)(obuf + ooff);
        for (size_t i = 0; i < span; ++i) in[i] = (elem_t)(i * 2654435761u + 1);
        memset(out, 0, batch * n * sizeof(elem_t));
        emu_grid(bx, by, blocks, batch, [&] { ENTRY(out, in, rows, cols, ld, stride); });
        for (long long z = 0; z < batch; ++z)
            for (int r = 0; r < rows; ++r)
                for (int c = 0; c < cols; ++c)
                    if (out[z * n + (size_t)c * rows + r] != in[z * stride + r * ld + c]) {
                        printf("%dx%d (offsets %u, %u; ld %lld, batch %lld): wrong output for input (%lld, %d, %d)\n",
                               rows, cols, ioff, ooff, ld, batch, z, r, c);
                        fflush(stdout);
                        free(ibuf);
                        free(obuf);
                        return 1;
                    }
        free(ibuf);
        free(obuf);
    }
    return 0;
}
"""
_WORDS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned", 8: "unsigned long long"}
_SHAPES = [(1, 1), (1, 77), (77, 1), (3, 5), (5, 3), (31, 67), (67, 31), (64, 64), (131, 70), (70, 131), (97, 257)]
_OFFSETS = [(0, 0), (0, 8), (4, 0), (2, 6)]  # bytes off 16; used only where the item size divides them
_VIEWS = [(0, 1, 0), (1, 1, 0), (5, 1, 0), (0, 3, 0), (0, 2, 7), (3, 3, 1)]
"""(row pitch - cols, matrices, elements between matrices): contiguous, pitched views (a row
shift that steps by 1 and by 5 elements a row), batches, with a gap, and both."""



def _configs():
    """The default and variants of the tile side, rows per block, skew, WIDE and tile order."""
    k = KERNELS["smem_vec_realign"]
    base = k.defaults
    picks = [base, {**base, "TILE_DIM": 32, "BLOCK_ROWS": 32, "WIDE": 0}, {**base, "WIDE": 1, "BLOCK_ROWS": 8, "SKEW": 0},
             {**base, "DIAGONAL": 1, "SKEW": 2, "BLOCK_ROWS": 4}]
    return [Config.of(k.name, p) for p in picks]


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_realigning_transpose_is_exact_for_every_item_size_shape_and_pointer_offset(tmp_path, itemsize):
    k = KERNELS["smem_vec_realign"]
    harness = Harness(tmp_path, _MAIN)
    dtype = get_dtype({1: "int8", 2: "float16", 4: "float32", 8: "float64"}[itemsize])

    def run(job):
        i, config = job
        d = tmp_path / str(i)
        macros = {**k.macros(config, dtype), k.dtype_macro: _WORDS[itemsize], "ENTRY": k.function}
        failed = harness.build(d, k.source_text(), macros)
        if failed:
            return f"{config}: {failed}"
        _, block, _ = k.geometry(config, {"rows": 1, "cols": 1}, dtype)
        args = [str(block[0]), str(block[1])]
        for rows, cols in _SHAPES:
            grid, _, _ = k.geometry(config, {"rows": rows, "cols": cols}, dtype)
            for ioff, ooff in _OFFSETS:
                if ioff % itemsize == 0 and ooff % itemsize == 0:
                    args += [str(rows), str(cols), str(grid[0]), str(ioff), str(ooff), "0", "1", "0"]
            for pad, batch, gap in _VIEWS[1:]:  # views and batches at one pointer offset each
                ioff = (2 * pad + 4) % 16 // itemsize * itemsize
                args += [str(rows), str(cols), str(grid[0]), str(ioff), "0", str(pad), str(batch), str(gap)]
        failed = harness.run(d, args)
        return f"{config}: {failed}" if failed else None

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        failures = [f for f in pool.map(run, enumerate(_configs())) if f]
    assert not failures, "\n".join(failures)
