"""The example histogram (examples/histogram/histogram.cu) on the CPU (tests/cuda_on_cpu.py's
harness: a fiber per thread of a block, under the sanitizers): every config's private
copies, the 32-bit word loads, the grid-stride loop and the n % 4 tail bytes count every byte.

Two changes to the text, which the harness needs: atomicAdd is a ``std::atomic_ref`` add, and the
dynamic shared array is a static one of its largest size (the harness has no dynamic shared
memory); gridDim is set by the main."""

import shutil
from pathlib import Path

import pytest

from cuda_on_cpu import Harness

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

SOURCE = Path(__file__).resolve().parents[1] / "examples/histogram/histogram.cu"
PREFIX = r"""#include <atomic>
Idx gridDim;
template <class T> T atomicAdd(T *p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
"""
MAIN = r"""int main(int argc, char **argv)  // grid n: n pseudo-random bytes (every 7th 255) counted and compared
{
    const unsigned grid = atoi(argv[1]);
    const long long n = atoll(argv[2]);
    unsigned char *in = (unsigned char *)aligned_alloc(256, (n + 255) / 256 * 256);
    srand(n);
    for (long long i = 0; i < n; ++i) in[i] = rand() % 7 == 0 ? 255 : rand();
    unsigned bins[256] = {0}, want[256] = {0};
    for (long long i = 0; i < n; ++i) want[in[i]]++;
    gridDim = {grid, 1, 1};
    emu_grid(BLOCK_SIZE, 1, grid, 1, [&] { histogram256(bins, in, n); });
    for (int b = 0; b < 256; ++b)
        if (bins[b] != want[b]) {
            printf("bin %d: %u, expected %u\n", b, bins[b], want[b]);
            return 1;
        }
    free(in);
    return 0;
}
"""


@pytest.mark.parametrize("block, copies", [(32, 1), (64, 4), (128, 8)])
def test_every_byte_is_counted(tmp_path, block, copies):
    text = SOURCE.read_text().replace("extern __shared__ unsigned int copies[];",
                                      "__shared__ unsigned int copies[COPIES * BINS];")
    assert "copies[COPIES * BINS]" in text
    harness = Harness(tmp_path, MAIN)
    folder = tmp_path / "build"
    assert harness.build(folder, PREFIX + text, {"BLOCK_SIZE": block, "COPIES": copies}) is None
    for grid, n in [(1, 1), (1, 3), (2, 1001), (3, 4096 + 2), (5, 777)]:
        assert harness.run(folder, [grid, n]) is None, (grid, n)
