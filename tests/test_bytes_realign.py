"""kernels/bytes_realign.cu (smem_bytes) run on the CPU.

The .cu text is compiled as C++ with the CUDA keywords defined away (tests/cuda_on_cpu.py): each
thread of a block is a std::thread, a std::barrier is __syncthreads and carries the warp
shuffles (the emulated intrinsics are checked in test_cuda_on_cpu.py), blocks run one after
another with the grid and block of the kernel file's [launch].
Every item size the kernel takes (1 and 2) runs on shapes whose rows start anywhere relative to
4 and 16 bytes (odd, prime, 1 x N, N x 1, tiles larger and smaller than the matrix) with input
and output pointers 0..15 bytes off a 16-byte boundary, as row-pitched views (ld > cols) and
batches (one matrix per blockIdx.z, with and without gaps between them), under the address and
UB sanitizers where g++ has them: the input is allocated as exactly the view's span, first to
last element (a read past its end fails the run), with the bytes between two matrices' spans
poisoned for the address sanitizer; the output has guard bytes on both sides that must stay
untouched, and every matrix of the output is compared bit for bit with NumPy's transpose. The device runs the same in tests/gpu/test_gpu_bytes_realign.py.
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

_MAIN = r"""#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#endif
static bool io(const char *path, unsigned char *p, size_t n, bool write)
{
    FILE *f = fopen(path, write ? "wb" : "rb");
    if (!f) return false;
    const size_t done = write ? fwrite(p, 1, n, f) : fread(p, 1, n, f);
    fclose(f);
    return done == n;
}

// bx by {rows cols blocks in_offset out_offset pad batch gap in_file out_file}...: a batch of
// `batch` matrices whose rows are ld = cols + pad elements apart, matrices rows * ld + gap apart
int main(int argc, char **argv)
{
    const unsigned bx = atoi(argv[1]), by = atoi(argv[2]);
    constexpr size_t GUARD = 16, ES = sizeof(elem_t);
    for (int a = 3; a + 9 < argc; a += 10) {
        const int rows = atoi(argv[a]), cols = atoi(argv[a + 1]);
        const unsigned blocks = atoi(argv[a + 2]), ioff = atoi(argv[a + 3]), ooff = atoi(argv[a + 4]);
        const long long ld = cols + atoll(argv[a + 5]), batch = atoll(argv[a + 6]);
        const long long stride = rows * ld + atoll(argv[a + 7]);  // elements between matrices
        const size_t mat = (size_t)rows * cols * ES, bytes = batch * mat;  // output bytes: one matrix, all
        const size_t span = ((batch - 1) * stride + (rows - 1) * ld + cols) * ES;  // first to last element
        // the input is exactly the view's span past its offset (the sanitizer sees a read past its
        // end); the output GUARD + ooff bytes into its block, GUARD bytes after it
        void *ibuf, *obuf;
        if (posix_memalign(&ibuf, 16, ioff + span) || posix_memalign(&obuf, 16, GUARD + ooff + bytes + GUARD))
            return 2;
        unsigned char *in = (unsigned char *)ibuf + ioff, *out = (unsigned char *)obuf + GUARD + ooff;
        if (!io(argv[a + 8], in, span, false))
            return 3;
        // between two matrices' spans (the last row's pad and the gap) nothing may be read either:
        // poisoned for the address sanitizer (from the byte past a span's last element; ASan's
        // 8-byte granules leave up to 7 bytes before the next matrix unpoisoned)
        for (long long z = 0; z + 1 < batch; ++z) {
            const size_t from = (z * stride + (rows - 1) * ld + cols) * ES, to = (z + 1) * stride * ES;
            if (to > from)
                ASAN_POISON_MEMORY_REGION(in + from, to - from);
        }
        memset(obuf, 0xA5, GUARD + ooff + bytes + GUARD);
        emu_grid(bx, by, blocks, batch, [&] { ENTRY((elem_t *)out, (const elem_t *)in, rows, cols, ld, stride); });
        ASAN_UNPOISON_MEMORY_REGION(ibuf, ioff + span);
        const unsigned char *o = (const unsigned char *)obuf;
        for (size_t i = 0; i < GUARD + ooff + bytes + GUARD; ++i)
            if ((i < GUARD + ooff || i >= GUARD + ooff + bytes) && o[i] != 0xA5) {
                printf("%dx%d (offsets %u, %u; ld %lld, batch %lld, stride %lld): a guard byte %zd from the "
                       "output's start was written\n", rows, cols, ioff, ooff, ld, batch, stride,
                       (ptrdiff_t)i - (ptrdiff_t)(GUARD + ooff));
                fflush(stdout);
                free(ibuf);
                free(obuf);
                return 1;
            }
        if (!io(argv[a + 9], out, bytes, true))
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
VIEWS = [(1, 1, 0), (3, 1, 0), (5, 1, 0), (0, 2, 0), (0, 3, 0), (0, 2, 3), (0, 3, 7), (1, 3, 0), (3, 2, 5),
         (5, 3, 1)]
"""(row pitch - cols, matrices, elements between matrices) beyond the contiguous (0, 1, 0): pitched
views whose rows' offset mod 4 steps by odd amounts (1, 3, 5 elements a row), contiguous batches,
batches with gaps (odd: the matrices start at different offsets mod 4), pitched batches with and
without gaps. Each shape runs each at one pointer offset (OFFSETS in turn)."""


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
def test_byte_transpose_is_exact_for_every_item_size_shape_pointer_offset_view_and_batch(tmp_path, itemsize):
    harness = Harness(tmp_path, _MAIN)
    dtype = get_dtype({1: "int8", 2: "float16"}[itemsize])
    rng = np.random.default_rng(itemsize)
    offsets = [(i, o) for i, o in OFFSETS if i % itemsize == 0 and o % itemsize == 0]
    cases = []  # (rows, cols, ioff, ooff, pad, batch, gap, input bytes: the view's span, path stem)
    for rows, cols in SHAPES:
        views = [(ioff, ooff, 0, 1, 0) for ioff, ooff in offsets]
        views += [(*offsets[(k + 1) % len(offsets)], *v) for k, v in enumerate(VIEWS)]
        for ioff, ooff, pad, batch, gap in views:
            ld, stride = cols + pad, rows * (cols + pad) + gap
            span = (batch - 1) * stride + (rows - 1) * ld + cols
            src = rng.integers(0, 256, span * itemsize, dtype=np.uint8)
            stem = tmp_path / f"case_{len(cases)}"
            src.tofile(f"{stem}.in")
            cases.append((rows, cols, ioff, ooff, pad, batch, gap, src, stem))

    def run(job):
        i, config = job
        d = tmp_path / str(i)
        macros = {**KERNEL.macros(config, dtype), KERNEL.dtype_macro: _WORDS[itemsize], "ENTRY": KERNEL.function}
        failed = harness.build(d, KERNEL.source_text(), macros)
        if failed:
            return f"{config}: {failed}"
        _, block, _ = KERNEL.geometry(config, {"rows": 1, "cols": 1}, dtype)
        args = [str(block[0]), str(block[1])]
        for rows, cols, ioff, ooff, pad, batch, gap, _, stem in cases:
            grid, _, _ = KERNEL.geometry(config, {"rows": rows, "cols": cols}, dtype)
            args += [rows, cols, grid[0], ioff, ooff, pad, batch, gap, f"{stem}.in", f"{stem}.{i}.out"]
        failed = harness.run(d, args)
        if failed:
            return f"{config}: {failed}"
        for rows, cols, ioff, ooff, pad, batch, gap, src, stem in cases:
            got = np.fromfile(f"{stem}.{i}.out", dtype=np.uint8)
            el = src.view(f"V{itemsize}")
            ld, stride = cols + pad, rows * (cols + pad) + gap
            view = np.lib.stride_tricks.as_strided(el, (batch, rows, cols), (stride * itemsize, ld * itemsize,
                                                                              itemsize), writeable=False)
            want = np.ascontiguousarray(view.transpose(0, 2, 1)).view(np.uint8).ravel()
            if not np.array_equal(got, want):
                wrong = np.flatnonzero(got != want)
                return (f"{config}: {rows}x{cols} offsets ({ioff}, {ooff}), pad {pad}, batch {batch}, gap {gap}: "
                        f"{wrong.size} wrong bytes, first at {wrong[0]} (matrix {wrong[0] // (rows * cols * itemsize)})")
        return None

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        failures = [f for f in pool.map(run, enumerate(configs())) if f]
    assert not failures, "\n".join(failures)
