"""The catalog's real .cu text run on the CPU, for the emulation tests (test_emulated.py,
test_runtime_emulated.py, test_vec_realign.py).

The source is compiled as C++20 with the CUDA keywords defined away: each thread of a block is
a std::thread (a std::barrier is __syncthreads), blocks run one after another; the caching and
streaming load/store intrinsics are plain accesses. Each test gives its own ``main`` (what it
launches and checks) after :data:`PRELUDE`; builds run under the address and UB sanitizers
where g++ has them, so an access outside the exactly sized buffers fails the run.
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
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
#ifdef NBYTES
struct alignas(NBYTES < 8 ? NBYTES : 8) Elem { unsigned char b[NBYTES]; };
#endif
template <class T> T __ldg(const T *p) { return *p; }
template <class T> T __ldcs(const T *p) { return *p; }
template <class T> void __stcs(T *p, T v) { *p = v; }
inline void __syncthreads() { bar->arrive_and_wait(); }
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
