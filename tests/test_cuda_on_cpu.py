"""The CUDA intrinsics that tests/cuda_on_cpu.py emulates, against their definitions (CUDA Math
API, PTX ISA) written here in Python: __byte_perm, __funnelshift_r/l on fixed and random
words, and the warp shuffles (__shfl_sync, __shfl_down_sync, __shfl_up_sync, with widths)
over blocks of several warps."""

import shutil
import subprocess

import numpy as np
import pytest

from cuda_on_cpu import Harness

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

_INTRINSICS_MAIN = r"""int main(int argc, char **argv)  // x y s ... (hex): byte_perm, funnelshift_r, funnelshift_l
{
    for (int a = 1; a + 2 < argc; a += 3) {
        const unsigned x = strtoul(argv[a], 0, 16), y = strtoul(argv[a + 1], 0, 16), s = strtoul(argv[a + 2], 0, 16);
        printf("%08x %08x %08x\n", __byte_perm(x, y, s), __funnelshift_r(x, y, s), __funnelshift_l(x, y, s));
    }
    return 0;
}
"""


def byte_perm(x: int, y: int, s: int) -> int:
    """Result byte n is byte s<4n+2:4n> of the eight bytes x (bytes 0-3), y (bytes 4-7)."""
    source = (y << 32 | x).to_bytes(8, "little")
    return int.from_bytes(bytes(source[(s >> 4 * n) & 7] for n in range(4)), "little")


def funnelshift_r(lo: int, hi: int, shift: int) -> int:
    """The low 32 bits of the 64 bits {hi, lo} shifted right by shift & 31."""
    return ((hi << 32 | lo) >> (shift & 31)) & 0xFFFFFFFF


def funnelshift_l(lo: int, hi: int, shift: int) -> int:
    """The high 32 bits of the 64 bits {hi, lo} shifted left by shift & 31."""
    return ((hi << 32 | lo) << (shift & 31)) >> 32 & 0xFFFFFFFF


def test_byte_perm_and_funnel_shifts_are_the_cuda_ones(tmp_path):
    rng = np.random.default_rng(7)
    cases = [(0x03020100, 0x07060504, s) for s in (0x3210, 0x7654, 0x5140, 0x7362, 0x5410, 0x7632, 0x0000, 0x7531,
                                                 0xFFFF3210, 0x8888, 0xBA98)]  # the upper half and nibble msbs unused
    cases += [(0xDEADBEEF, 0x01234567, shift) for shift in (0, 1, 8, 16, 24, 31, 32, 33, 40, 63, 0xFFFFFFFF)]
    cases += [tuple(int(v) for v in rng.integers(0, 2**32, 3, dtype=np.uint64)) for _ in range(200)]
    harness = Harness(tmp_path, _INTRINSICS_MAIN)
    assert harness.build(tmp_path / "b", "", {}) is None
    done = subprocess.run([str(tmp_path / "b" / "h"), *[f"{v:x}" for case in cases for v in case]],
                          capture_output=True, text=True, check=True)
    got = [tuple(int(v, 16) for v in line.split()) for line in done.stdout.splitlines()]
    want = [(byte_perm(x, y, s), funnelshift_r(x, y, s), funnelshift_l(x, y, s)) for x, y, s in cases]
    assert got == want
    assert byte_perm(0x03020100, 0x07060504, 0x7531) == 0x07050301  # cub::PRMT's documented example


_SHUFFLE_MAIN = r"""int main(int argc, char **argv)  // bx by width: per thread, its shuffles of 5 kinds
{
    const unsigned bx = atoi(argv[1]), by = atoi(argv[2]);
    const int width = atoi(argv[3]);
    std::vector<unsigned> got(bx * by * 5);
    emu_grid(bx, by, 1, 1, [&] {
        const unsigned id = threadIdx.y * bx + threadIdx.x, v = id * 2654435761u + 17, lane = id % width;
        unsigned *g = &got[id * 5];
        g[0] = __shfl_sync(0xffffffffu, v, (lane + width - 1) % width, width);  // the previous lane, wrapping
        g[1] = __shfl_down_sync(0xffffffffu, v, 1, width);
        g[2] = __shfl_up_sync(0xffffffffu, v, 2, width);
        g[3] = __shfl_sync(0xffffffffu, v, 5, width);                            // mod width
        g[4] = __shfl_down_sync(0xffffffffu, v, 3);
    });
    for (unsigned i = 0; i < bx * by; ++i)
        printf("%u %u %u %u %u\n", got[i * 5], got[i * 5 + 1], got[i * 5 + 2], got[i * 5 + 3], got[i * 5 + 4]);
    return 0;
}
"""


def _shuffles(n: int, width: int) -> list[tuple[int, ...]]:
    """What each of n threads gets from the shuffles of _SHUFFLE_MAIN, by the CUDA semantics:
    lanes are linear ids mod 32, a segment is `width` lanes; srcLane wraps mod width; a down or
    up shuffle past the segment's edge returns the caller's own value."""
    value = [(i * 2654435761 + 17) & 0xFFFFFFFF for i in range(n)]
    out = []
    for i in range(n):
        base, lane = i - i % width, i % width

        def rel(delta, w=width):
            b, ln = i - i % w, i % w
            return value[b + ln + delta] if 0 <= ln + delta < w else value[i]

        out.append((value[base + (lane - 1) % width], rel(1), rel(-2), value[base + 5 % width], rel(3, 32)))
    return out


@pytest.mark.parametrize("bx, by, width", [(32, 2, 32), (16, 4, 16), (32, 8, 16), (64, 1, 32), (16, 2, 8)])
def test_emulated_shuffles_are_the_cuda_ones(tmp_path, bx, by, width):
    harness = Harness(tmp_path, _SHUFFLE_MAIN)
    assert harness.build(tmp_path / "b", "", {}) is None
    done = subprocess.run([str(tmp_path / "b" / "h"), str(bx), str(by), str(width)], capture_output=True, text=True,
                          check=True)
    got = [tuple(int(v) for v in line.split()) for line in done.stdout.splitlines()]
    assert got == _shuffles(bx * by, width)


_PLANTED_MAIN = r"""int main(int argc, char **argv)  // kind n: 3 blocks of 32 x 2 threads over n ints
{
    const int kind = atoi(argv[1]), n = atoi(argv[2]);
    int *buf = (int *)malloc(n * sizeof(int));
    emu_grid(32, 2, 3, 1, [&] { planted(buf, n, kind); });
    for (int i = 0; i < n; ++i)
        if (buf[i] != (i + 1) % 64 + i % 8) {
            printf("element %d: %d\n", i, buf[i]);
            fflush(stdout);
            free(buf);
            return 1;
        }
    free(buf);
    return 0;
}
"""
_PLANTED = r"""__global__ void planted(int *buf, int n, int kind)
{
    __shared__ int tile[64];
    int local[8];
    const int t = threadIdx.y * 32 + threadIdx.x, i = blockIdx.x * 64 + t;
    for (int k = 0; k < 8; ++k) local[k] = t + k;
    tile[t] = t;
    __syncthreads();
    int *volatile shared = tile, *volatile own = local;  // opaque to UBSan's bounds checks: ASan's to catch
    volatile int sink = 0;
    if (kind == 1 && i == n) buf[i] = 1;              // a global write one past the end
    if (kind == 2 && i == n) sink = buf[i];           // a global read one past the end
    if (kind == 3 && t == 63) sink = shared[t + 1];   // a shared read past the end
    if (kind == 4 && t == 5) sink = own[t + 3];       // a local read past the end, after a barrier
    if (kind == 5 && t == 5) own[8 + (i & 1)] = 3;    // a local write past the end, after a barrier
    __syncthreads();
    if (kind == 6 && t == 33) sink = own[-1];         // a local read before the start, after two
    if (kind == 7 && t == 40) return;                 // a thread that skips the block's last barrier
    __syncthreads();
    if (i < n) buf[i] = shared[(t + 1) % 64] + own[t % 8] - t + sink;  // = (i + 1) % 64 + i % 8
}
"""
_CAUGHT = {1: "heap-buffer-overflow", 2: "heap-buffer-overflow", 3: "global-buffer-overflow",
           4: "stack-buffer-overflow", 5: "stack-buffer-overflow", 6: "stack-buffer-overflow",
           7: "wait at a barrier the others never reach"}


@pytest.mark.parametrize("switch", [{}, {"EMU_UCONTEXT": 1}], ids=["emu_switch", "ucontext"])
def test_the_harness_catches_out_of_bounds_accesses_in_a_kernel(tmp_path, switch):
    """An access past a global, shared or local array in a kernel (after barriers, so on a fiber that
    has switched away and back) fails the run with AddressSanitizer's report, with either fiber switch;
    a thread that skips a barrier the others wait at fails it too; the same kernel without them runs
    clean and exact (no false positives)."""
    harness = Harness(tmp_path, _PLANTED_MAIN)
    if not harness.flags:
        pytest.skip("g++ has no address sanitizer here")
    assert harness.build(tmp_path / "b", _PLANTED, switch) is None
    assert harness.run(tmp_path / "b", [0, 150]) is None
    for kind, report in _CAUGHT.items():
        failed = harness.run(tmp_path / "b", [kind, 150])
        assert failed is not None and report in failed, (kind, failed)
