"""The catalog's real .cu text run on the CPU, for the emulation tests (test_emulated.py,
test_runtime_emulated.py, test_vec_realign.py, test_bytes_realign.py).

The source is compiled as C++20 with the CUDA keywords defined away: each thread of a block is
a std::thread (a std::barrier is __syncthreads), blocks run one after another; the caching and
streaming load/store intrinsics are plain accesses; the integer intrinsics (__byte_perm, the
funnel shifts) are computed as the CUDA Math API defines them, and 32-bit warp shuffles are an
exchange through a slot per thread and the block barrier (a main that shuffles sets blockDim).
Each test gives its own ``main`` (what it launches and checks) after :data:`PRELUDE`; builds
run under the address and UB sanitizers where g++ has them, so an access outside the exactly
sized buffers fails the run.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

PRELUDE = r"""
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
// dynamic shared memory (kernels/dynamic_shared.cuh): one static buffer, as large as sm_90 allows
#define DYNAMIC_SHARED(name) alignas(16) static unsigned char name[232448]
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
#ifdef NBYTES
struct alignas(NBYTES < 8 ? NBYTES : 8) Elem { unsigned char b[NBYTES]; };
#endif
template <class T> T __ldg(const T *p) { return *p; }
template <class T> T __ldcs(const T *p) { return *p; }
template <class T> void __stcs(T *p, T v) { *p = v; }
inline void __syncthreads() { bar->arrive_and_wait(); }
// Integer intrinsics (CUDA Math API): __byte_perm's result byte n is byte (s >> 4n) & 7 of
// the 8 bytes {y, x} (x the low word); the funnel shifts shift the 64 bits {hi, lo} by
// shift & 31 and keep the low (right) or high (left) 32 bits.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s)
{
    const unsigned long long v = (unsigned long long)y << 32 | x;
    unsigned r = 0;
    for (int n = 0; n < 4; ++n)
        r |= (unsigned)(v >> 8 * ((s >> 4 * n) & 7) & 0xff) << 8 * n;
    return r;
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift)
{
    return (unsigned)(((unsigned long long)hi << 32 | lo) >> (shift & 31));
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift)
{
    return (unsigned)((((unsigned long long)hi << 32 | lo) << (shift & 31)) >> 32);
}
// Warp shuffles of 32-bit values. A main that uses them sets blockDim (the block's shape) before
// its threads start. Every thread of the block must make the same shuffle calls in the same
// order (all the kernels' shuffles are block-uniform, full-mask): each call writes the thread's
// value into one of two slot arrays, in turn, and waits on the block barrier; a slot array is
// written again only two calls later, after every thread has passed the barrier of the call
// between, so no reader of the old values is left. Lanes are linear thread ids mod 32 and
// shuffles stay inside segments of `width` lanes, as on the device.
Idx blockDim;
unsigned emu_slots[2][1024];
thread_local unsigned emu_round;
inline unsigned emu_shuffle(unsigned mask, unsigned v, int src, bool relative, int width)
{
    const unsigned n = blockDim.x * blockDim.y * blockDim.z;
    const unsigned id = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    if (mask != 0xffffffffu || n == 0 || n > 1024 || width < 1 || width > 32 || 32 % width || n % width) {
        fprintf(stderr, "shuffle emulation: mask %#x, %u threads, width %d not supported\n", mask, n, width);
        abort();
    }
    unsigned *slot = emu_slots[emu_round++ & 1];
    slot[id] = v;
    bar->arrive_and_wait();
    const int lane = (int)(id % width), base = (int)id - lane;
    int from = relative ? lane + src : (src % width + width) % width;  // __shfl_sync: srcLane mod width
    if (relative && (from < 0 || from >= width))
        from = lane;  // out of the segment: the caller's own value
    return slot[base + from];
}
template <class T> T emu_shuffle_of(unsigned mask, T v, int src, bool relative, int width)
{
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    unsigned u;
    memcpy(&u, &v, 4);
    u = emu_shuffle(mask, u, src, relative, width);
    memcpy(&v, &u, 4);
    return v;
}
template <class T> T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    return emu_shuffle_of(mask, v, src, false, width);
}
template <class T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return emu_shuffle_of(mask, v, (int)delta, true, width);
}
template <class T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return emu_shuffle_of(mask, v, -(int)delta, true, width);
}
// A launch of `blocks` x 1 x `batch` blocks (blockIdx.x, blockIdx.z) of bx x by threads: one
// std::thread per thread of a block, the blocks one after another (each thread calls `kernel`
// once per block, then waits for the whole block). Sets blockDim and the barrier.
template <class F> void emu_grid(unsigned bx, unsigned by, unsigned blocks, unsigned batch, F kernel)
{
    std::barrier<> barrier(bx * by);
    bar = &barrier;
    blockDim = {bx, by, 1};
    auto thread = [&](unsigned x, unsigned y) {
        threadIdx = {x, y, 0};
        for (unsigned z = 0; z < batch; ++z)
            for (unsigned b = 0; b < blocks; ++b) {
                blockIdx = {b, 0, z};
                kernel();
                barrier.arrive_and_wait();  // the next block starts after this one
            }
    };
    std::vector<std::thread> ts;
    for (unsigned y = 0; y < by; ++y)
        for (unsigned x = 0; x < bx; ++x)
            ts.emplace_back(thread, x, y);
    for (auto &t : ts) t.join();
}
#include "k.cu"
"""


class Harness:
    """One test's harness in ``tmp``: :data:`PRELUDE` then ``main``; :meth:`build` compiles it
    against one kernel source with ``-D`` macros, :meth:`run` runs the build."""

    def __init__(self, tmp: Path, main: str) -> None:
        self.tmp = tmp
        (tmp / "cuda_fp16.h").write_text("struct __half { unsigned short x; };\n")
        (tmp / "h.cpp").write_text(PRELUDE + main)
        self.flags = cxx_flags(tmp)

    def build(self, folder: Path, source: str, macros: Mapping[str, object]) -> str | None:
        """Compile the harness with ``source`` as ``k.cu`` into ``folder``; the compiler's
        errors (first 1,500 characters), or ``None``."""
        folder.mkdir()
        (folder / "k.cu").write_text(source)
        done = subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", *self.flags, f"-I{self.tmp}", f"-I{folder}",
                               *[f"-D{m}={v}" for m, v in macros.items()], str(self.tmp / "h.cpp"),
                               "-o", str(folder / "h")], capture_output=True, text=True)
        return f"does not build: {done.stderr[:1500]}" if done.returncode else None

    def run(self, folder: Path, args: Sequence[object]) -> str | None:
        """Run the build in ``folder``; what it printed (a wrong element, a sanitizer report)
        when it failed, or ``None``."""
        done = subprocess.run([str(folder / "h"), *map(str, args)], capture_output=True, text=True)
        return f"{done.stdout}{done.stderr[:1500]}" if done.returncode else None


def cxx_flags(tmp: Path) -> list[str]:
    """Address and UB sanitizers (out-of-bounds reads and writes) where g++ has them."""
    flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    probe = tmp / "probe.cpp"
    probe.write_text("int main() { return 0; }\n")
    ok = subprocess.run(["g++", *flags, str(probe), "-o", str(tmp / "probe")], capture_output=True).returncode == 0
    return flags if ok else []
