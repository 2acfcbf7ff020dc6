"""kernels/bytes_realign.cu (smem_bytes) run on the CPU.

The .cu text is compiled as C++ with the CUDA keywords defined away (tests/cuda_on_cpu.py): each
thread of a block is a std::thread, a std::barrier is __syncthreads and carries the warp
shuffles (the emulated intrinsics are checked in test_cuda_on_cpu.py), blocks run one after
another with the grid and block of the kernel file's [launch].
Every item size the kernel takes (1 and 2) runs on shapes whose rows start anywhere relative to
4 and 16 bytes (odd, prime, 1 x N, N x 1, tiles larger and smaller than the matrix) with input
and output pointers 0..15 bytes off a 16-byte boundary, under the address and UB sanitizers
where g++ has them: the input is allocated exactly (a read past its end fails the run), the
output has guard bytes on both sides that must stay untouched, and the output is compared
bit for bit with NumPy's transpose. The device runs the same in tests/gpu/test_gpu_bytes_realign.py.
"""

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from cuda_on_cpu import Harness
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

KERNEL = KERNELS["smem_bytes"]

_MAIN = r"""static bool io(const char *path, unsigned char *p, size_t n, bool write)
{
    FILE *f = fopen(path, write ? "wb" : "rb");
    if (!f) return false;
    const size_t done = write ? fwrite(p, 1, n, f) : fread(p, 1, n, f);
    fclose(f);
    return done == n;
}

int main(int argc, char **argv)  // bx by {rows cols blocks in_offset out_offset in_file out_file}...
{
    const unsigned bx = atoi(argv[1]), by = atoi(argv[2]);
    constexpr size_t GUARD = 16;
    blockDim = {bx, by, 1};
    for (int a = 3; a + 6 < argc; a += 7) {
        const int rows = atoi(argv[a]), cols = atoi(argv[a + 1]);
        const unsigned blocks = atoi(argv[a + 2]), ioff = atoi(argv[a + 3]), ooff = atoi(argv[a + 4]);
        const size_t bytes = (size_t)rows * cols * sizeof(elem_t);
        // the input exactly sized past its offset (the sanitizer sees a read past its end); the
        // output GUARD + ooff bytes into its block, GUARD bytes after it
        void *ibuf, *obuf;
        if (posix_memalign(&ibuf, 16, ioff + bytes) || posix_memalign(&obuf, 16, GUARD + ooff + bytes + GUARD))
            return 2;
        unsigned char *in = (unsigned char *)ibuf + ioff, *out = (unsigned char *)obuf + GUARD + ooff;
        if (!io(argv[a + 5], in, bytes, false))
            return 3;
        memset(obuf, 0xA5, GUARD + ooff + bytes + GUARD);
        std::barrier<> barrier(bx * by);
        bar = &barrier;
        auto thread = [&](unsigned x, unsigned y) {
            threadIdx = {x, y, 0};
            for (unsigned b = 0; b < blocks; ++b) {
                blockIdx = {b, 0, 0};
                ENTRY((elem_t *)out, (const elem_t *)in, rows, cols);
                barrier.arrive_and_wait();  // the next block starts after this one
            }
        };
        std::vector<std::thread> ts;
        for (unsigned y = 0; y < by; ++y)
            for (unsigned x = 0; x < bx; ++x)
                ts.emplace_back(thread, x, y);
        for (auto &t : ts) t.join();
        const unsigned char *o = (const unsigned char *)obuf;
        for (size_t i = 0; i < GUARD + ooff + bytes + GUARD; ++i)
            if ((i < GUARD + ooff || i >= GUARD + ooff + bytes) && o[i] != 0xA5) {
                printf("%dx%d (offsets %u, %u): a guard byte %zd from the output's start was written\n", rows, cols,
                       ioff, ooff, (ptrdiff_t)i - (ptrdiff_t)(GUARD + ooff));
                fflush(stdout);
                free(ibuf);
                free(obuf);
                return 1;
            }
        if (!io(argv[a + 6], out, bytes, true))
            return 4;
        free(ibuf);
        free(obuf);
    }
    return 0;
}
"""
_WORDS = {1: "unsigned char", 2: "unsigned short"}
SHAPES = [(1, 1), (1, 300), (300, 1), (3, 5), (5, 3), (33, 17), (17, 33), (64, 64), (67, 131), (131, 67),
          (128, 128), (129, 257), (200, 7)]
"""Rows starting at every offset mod 4 and 16 (odd and prime lengths), 1 x N and N x 1, one element,
tiles larger than the matrix, exact tiles (64, 128: 128-byte tiles of int8 / float16), partial ones."""
OFFSETS = [(0, 0), (1, 0), (0, 3), (2, 14), (15, 15), (6, 9), (13, 4), (8, 8), (14, 2), (4, 10)]
"""Input and output pointers, bytes past a 16-byte boundary; those the item size divides are run."""


def configs():
    """The default and corners: the small tile with the fewest rows per block, streaming and the
    diagonal order; the large tile with the most rows; the small tile with 16 rows."""
    d = KERNEL.defaults
    picks = [d, {**d, "TILE_BYTES": 64, "BLOCK_ROWS": 4, "STREAMING": 1, "DIAGONAL": 1},
             {**d, "TILE_BYTES": 128, "BLOCK_ROWS": 32, "DIAGONAL": 1}, {**d, "TILE_BYTES": 64, "BLOCK_ROWS": 16}]
    return [Config.of(KERNEL.name, p) for p in picks]


def test_the_configs_are_in_the_space():
    space = KERNEL.space()
    assert all(space.violations(c) == [] for c in configs())


@pytest.mark.parametrize("itemsize", [1, 2])
def test_byte_transpose_is_exact_for_every_item_size_shape_and_pointer_offset(tmp_path, itemsize):
    harness = Harness(tmp_path, _MAIN)
    dtype = get_dtype({1: "int8", 2: "float16"}[itemsize])
    rng = np.random.default_rng(itemsize)
    cases = []  # (rows, cols, ioff, ooff, input bytes, path stem)
    for rows, cols in SHAPES:
        for ioff, ooff in OFFSETS:
            if ioff % itemsize == 0 and ooff % itemsize == 0:
                src = rng.integers(0, 256, rows * cols * itemsize, dtype=np.uint8)
                stem = tmp_path / f"case_{len(cases)}"
                src.tofile(f"{stem}.in")
                cases.append((rows, cols, ioff, ooff, src, stem))

    def run(job):
        i, config = job
        d = tmp_path / str(i)
        macros = {**KERNEL.macros(config, dtype), KERNEL.dtype_macro: _WORDS[itemsize], "ENTRY": KERNEL.function}
        failed = harness.build(d, KERNEL.source_text(), macros)
        if failed:
            return f"{config}: {failed}"
        _, block, _ = KERNEL.geometry(config, {"rows": 1, "cols": 1}, dtype)
        args = [str(block[0]), str(block[1])]
        for rows, cols, ioff, ooff, _, stem in cases:
            grid, _, _ = KERNEL.geometry(config, {"rows": rows, "cols": cols}, dtype)
            args += [str(rows), str(cols), str(grid[0]), str(ioff), str(ooff), f"{stem}.in", f"{stem}.{i}.out"]
        failed = harness.run(d, args)
        if failed:
            return f"{config}: {failed}"
        for rows, cols, ioff, ooff, src, stem in cases:
            got = np.fromfile(f"{stem}.{i}.out", dtype=np.uint8)
            want = np.ascontiguousarray(src.view(f"V{itemsize}").reshape(rows, cols).T).view(np.uint8).ravel()
            if not np.array_equal(got, want):
                wrong = np.flatnonzero(got != want)
                return (f"{config}: {rows}x{cols} offsets ({ioff}, {ooff}): {wrong.size} wrong bytes, "
                        f"first at {wrong[0]}")
        return None

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        failures = [f for f in pool.map(run, enumerate(configs())) if f]
    assert not failures, "\n".join(failures)
