"""A word-moving transpose of the catalog run on the CPU (tests/cuda_on_cpu.py, with :data:`MAIN`) over
many shapes, pointer offsets, views and batches, every matrix compared bit for bit with NumPy's
transpose: the checker that tests/kernel/test_catalog_{bytes_realign, bytes_aligned_out, skinny,
aligned_out, flat}.py share, and the cases of the two byte transposes."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from cuda_on_cpu import Harness
from autotune.kernel.dtypes import get_dtype

MAIN = r"""#if defined(__SANITIZE_ADDRESS__)
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
"""The harness's main: launches the kernel on each case's input (exactly the view's span, the bytes
between matrices poisoned) into an output with guard bytes on both sides, which must stay untouched."""

WORDS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long", 16: "uint4"}
"""The element type each item size is built with (a transpose moves raw words)."""
DTYPES = {1: "int8", 2: "float16", 4: "float32", 8: "float64", 16: "complex128"}

BYTE_SHAPES = [(1, 1), (1, 300), (300, 1), (3, 5), (5, 3), (33, 17), (17, 33), (64, 64), (67, 131), (131, 67),
          (128, 128), (129, 257), (200, 7)]
"""Rows starting at every offset mod 4 and 16 (odd and prime lengths), 1 x N and N x 1, one element,
tiles larger than the matrix, exact tiles (64, 128: 128-byte tiles of int8 / float16), partial ones: the
cases of the byte transposes (tests/kernel/test_catalog_bytes_realign.py,
tests/kernel/test_catalog_bytes_aligned_out.py)."""
BYTE_OFFSETS = [(0, 0), (1, 0), (0, 3), (2, 14), (15, 15), (6, 9), (13, 4), (8, 8), (14, 2), (4, 10)]
"""Input and output pointers, bytes past a 16-byte boundary; those the item size divides are run."""
BYTE_VIEWS = [(1, 1, 0), (3, 1, 0), (5, 1, 0), (0, 2, 0), (0, 3, 0), (0, 2, 3), (0, 3, 7), (1, 3, 0), (3, 2, 5),
         (5, 3, 1)]
"""(row pitch - cols, matrices, elements between matrices) beyond the contiguous (0, 1, 0): pitched
views whose rows' offset mod 4 steps by odd amounts (1, 3, 5 elements a row), contiguous batches,
batches with gaps (odd: the matrices start at different offsets mod 4), pitched batches with and
without gaps. Each shape runs each at one pointer offset (OFFSETS in turn)."""


def transpose_failures(tmp_path: Path, kernel, itemsize: int, configs, shapes, offsets, views) -> list[str]:
    """Run ``kernel`` at each of ``configs`` on every case; one line per config that failed (a build
    error, a sanitizer report, a written guard byte, or the first wrong byte of a case).

    ``shapes``: ``(rows, cols)``; ``offsets``: ``(input, output)`` bytes past a 16-byte boundary (those
    the item size divides are run); ``views``: ``(row pitch - cols, matrices, elements between
    matrices)``, each run at the next offset."""
    harness = Harness(tmp_path, MAIN)
    dtype = get_dtype(DTYPES[itemsize])
    rng = np.random.default_rng(itemsize)
    offsets = [(i, o) for i, o in offsets if i % itemsize == 0 and o % itemsize == 0]
    cases = []
    for rows, cols in shapes:
        cases_of_shape = [(ioff, ooff, 0, 1, 0) for ioff, ooff in offsets]
        cases_of_shape += [(*offsets[(k + 1) % len(offsets)], *v) for k, v in enumerate(views)]
        for ioff, ooff, pad, batch, gap in cases_of_shape:
            ld, stride = cols + pad, rows * (cols + pad) + gap
            span = (batch - 1) * stride + (rows - 1) * ld + cols
            src = rng.integers(0, 256, span * itemsize, dtype=np.uint8)
            stem = tmp_path / f"case_{len(cases)}"
            src.tofile(f"{stem}.in")
            cases.append((rows, cols, ioff, ooff, pad, batch, gap, src, stem))

    def run(job):
        i, config = job
        d = tmp_path / str(i)
        macros = {**kernel.macros(config, dtype), kernel.dtype_macro: WORDS[itemsize], "ENTRY": kernel.function}
        failed = harness.build(d, kernel.source_text(), macros)
        if failed:
            return f"{config}: {failed}"
        _, block, _ = kernel.geometry(config, {"rows": 1, "cols": 1}, dtype)
        args = [str(block[0]), str(block[1])]
        for rows, cols, ioff, ooff, pad, batch, gap, _, stem in cases:
            grid, _, _ = kernel.geometry(config, {"rows": rows, "cols": cols}, dtype)
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
        return [f for f in pool.map(run, enumerate(configs)) if f]
