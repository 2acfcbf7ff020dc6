"""The word-moving transposes (vec.cu, smem.cu, naive.cu) on the CPU: every element size (1 to 16 bytes),
row-pitched views, batches (blockIdx.z) and unaligned pointers, bit for bit.

As in ``tests/kernel/test_catalog_emulated.py``, the real .cu text is compiled as C++ with the CUDA keywords defined
away (a fiber per thread of a block, a switch to the block's scheduler for __syncthreads), under the address
and UB sanitizers where g++ has them; elements are opaque N-byte structs of random bytes.
"""

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from cuda_on_cpu import Harness
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import word_dtype

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

_MAIN = r"""int main(int argc, char **argv)  // bx by {rows cols ld batch batch_stride offset blocks}...
{
    const unsigned bx = atoi(argv[1]), by = atoi(argv[2]);
    for (int a = 3; a + 6 < argc; a += 7) {
        const long long rows = atoll(argv[a]), cols = atoll(argv[a + 1]), ld = atoll(argv[a + 2]);
        const long long batch = atoll(argv[a + 3]), bs = atoll(argv[a + 4]), offset = atoll(argv[a + 5]);
        const unsigned blocks = atoi(argv[a + 6]);
        const size_t n_in = offset + (batch - 1) * bs + (rows - 1) * ld + cols, n_out = offset + batch * rows * cols;
        Elem *in = (Elem *)aligned_alloc(64, (n_in * NBYTES + 63) / 64 * 64);
        Elem *out = (Elem *)aligned_alloc(64, (n_out * NBYTES + 63) / 64 * 64);
        srand(rows * 131 + cols);
        for (size_t i = 0; i < n_in * NBYTES; ++i) ((unsigned char *)in)[i] = rand();
        memset(out, 0, n_out * NBYTES);
        emu_grid(bx, by, blocks, batch, [&] { ENTRY((ELEM_T *)(out + offset), (const ELEM_T *)(in + offset), rows, cols, ld, bs); });
        for (long long z = 0; z < batch; ++z)
            for (long long r = 0; r < rows; ++r)
                for (long long c = 0; c < cols; ++c)
                    if (memcmp(&out[offset + z * rows * cols + c * rows + r], &in[offset + z * bs + r * ld + c],
                               NBYTES)) {
                        printf("%lldx%lld ld %lld batch %lld: wrong output for input (%lld, %lld, %lld)\n", rows,
                               cols, ld, batch, z, r, c);
                        return 1;
                    }
        free(in);
        free(out);
    }
    return 0;
}
"""

# rows, cols, ld, batch, batch_stride, offset (elements): contiguous and aligned (the vector path),
# row-pitched, batched with gaps, one element off alignment, a broadcast batch (stride 0)
_CASES = [(64, 32, 32, 2, 64 * 32, 0), (33, 65, 70, 3, 33 * 70 + 5, 0), (16, 48, 48, 2, 16 * 48, 1),
          (5, 3, 3, 2, 0, 0), (1, 7, 7, 1, 0, 0), (9, 1, 4, 2, 40, 0)]
_CONFIGS = {"smem_vec": {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "TILES": 2, "STREAMING": 0, "DIAGONAL": 0,
                         "GROUP": 0},
            "smem_pad": {"TILE_DIM": 16, "BLOCK_ROWS": 4, "IPAD": 1, "DIAGONAL": 1},
            "naive_col": {"TILE_DIM": 16, "BLOCK_ROWS": 4}, "unroll_row": {"TILE_DIM": 16, "BLOCK_ROWS": 8, "UNROLL": 2}}



def test_word_transposes_move_every_size_through_views_and_batches_on_the_cpu(tmp_path):
    harness = Harness(tmp_path, _MAIN)
    jobs = [(name, size) for name in _CONFIGS for size in (1, 2, 4, 8, 16)]

    def run(job):
        name, size = job
        k, dt = KERNELS[name], word_dtype(size)
        config = Config.of(name, _CONFIGS[name])
        d = tmp_path / f"{name}_{size}"
        macros = {**k.macros(config, dt), k.dtype_macro: "Elem", "ENTRY": k.function, "NBYTES": size}
        failed = harness.build(d, k.source_text(), macros)
        if failed:
            return f"{name} {size} B: {failed}"
        _, block, _ = k.geometry(config, {"rows": 1, "cols": 1}, dt)
        args = [str(block[0]), str(block[1])]
        for rows, cols, ld, batch, stride, offset in _CASES:
            grid, _, _ = k.geometry(config, {"rows": rows, "cols": cols}, dt)
            args += [str(v) for v in (rows, cols, ld, batch, stride, offset, grid[0])]
        failed = harness.run(d, args)
        return f"{name} {size} B: {failed}" if failed else None

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        failures = [f for f in pool.map(run, jobs) if f]
    assert not failures, "\n".join(failures)
