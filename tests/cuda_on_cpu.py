"""The catalog's real .cu text run on the CPU, for the emulation tests (tests/kernel/test_catalog_*.py:
emulated, words_emulated, vec_realign, bytes_realign; tests/transposes_on_cpu.py).

The source is compiled as C++20 with the CUDA keywords defined away: each thread of a block is
a fiber with its own stack, all on one OS thread, scheduled round-robin by ``emu_grid``;
__syncthreads switches back to the scheduler, which resumes each fiber once all have arrived, so a
barrier costs user-level switches rather than OS context switches (a std::thread per CUDA thread
made a barrier of a 512-thread block hundreds of context switches on a 2-core machine). Blocks run
one after another; the caching and streaming load/store intrinsics are plain accesses; the integer
intrinsics (__byte_perm, the funnel shifts) are computed as the CUDA Math API defines them, and
32-bit warp shuffles are an exchange through a slot per thread and the block barrier (emu_grid sets
blockDim). Each test gives its own ``main`` (what it launches and checks) after :data:`PRELUDE`;
builds run under the address and UB sanitizers where g++ has them, so an access outside the exactly
sized buffers (or a kernel's shared or local arrays) fails the run: every fiber switch is announced
to AddressSanitizer (test_cuda_on_cpu.py plants such accesses and checks that they are caught).
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

PRELUDE = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_START_SWITCH(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define EMU_FINISH_SWITCH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define EMU_START_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define EMU_FINISH_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif
struct Idx { unsigned x, y, z; };
Idx threadIdx, blockIdx;  // the running fiber's: each one keeps its own across a barrier (emu_barrier)
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
// The threads of a block are fibers, each on its own stack (mmap, a PROT_NONE guard page below it),
// all on the main thread: emu_block resumes each fiber in turn and a fiber runs until it waits at
// the block barrier (it switches back) or returns, so a barrier costs two user-level switches, not a
// round of the OS scheduler. A round goes up the linear thread ids, the next one down, so code
// between two barriers runs in both orders (a read of another thread's write that lacks its
// barrier shows in one of them). The fibers are made once, up to the largest block, and kept for
// the next launch.
// A switch saves what the x86-64 System V ABI has a call preserve (rbx, rbp, r12-r15, the stack
// pointer, MXCSR and the x87 control word) and loads the other fiber's (emu_switch); elsewhere, or
// with CET shadow stacks (__CET__), or with EMU_UCONTEXT defined, it is swapcontext, which also
// makes a system call (the signal mask) each time. Every switch is announced to AddressSanitizer
// (__sanitizer_start/finish_switch_fiber), which then checks each fiber's frames on its own stack;
// a ucontext's uc_stack.ss_size is 0 once made, else ASan's swapcontext interceptor clears the
// whole shadow of the stack it switches to, the redzones of that fiber's live frames with it.
extern "C" void emu_fiber_main(int i);
#if defined(__x86_64__) && !defined(__CET__) && !defined(EMU_UCONTEXT)
struct EmuContext { void *sp; };
extern "C" void emu_switch(void **save, void *to);  // saves this fiber's sp in *save, resumes `to`
extern "C" void emu_fiber_start();                  // a new fiber's first return: emu_fiber_main(r12)
asm(R"(
    .text
    .globl emu_switch
    .type emu_switch, @function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_switch, .-emu_switch
    .globl emu_fiber_start
    .type emu_fiber_start, @function
emu_fiber_start:
    movl %r12d, %edi
    call emu_fiber_main
    ud2
    .size emu_fiber_start, .-emu_fiber_start
)");
inline void emu_switch_to(EmuContext *save, EmuContext *to) { emu_switch(&save->sp, to->sp); }
void emu_make_context(EmuContext *c, char *stack, size_t size, int i)
{
    // what emu_switch pops, from the saved sp up: MXCSR and the x87 control word (their defaults),
    // r15, r14, r13, r12 (the fiber's index), rbx, rbp (0: the end of the frame chain), the
    // return address; it leaves the stack 16-byte aligned at emu_fiber_start's call, as the ABI wants
    unsigned long long *sp = (unsigned long long *)(stack + size) - 10;
    sp[0] = 0x037F00001F80ull;
    sp[1] = sp[2] = sp[3] = sp[5] = sp[6] = 0;
    sp[4] = (unsigned long long)i;
    sp[7] = (unsigned long long)emu_fiber_start;
    c->sp = sp;
}
#else
struct EmuContext { ucontext_t uc; };
inline void emu_switch_to(EmuContext *save, EmuContext *to) { swapcontext(&save->uc, &to->uc); }
void emu_make_context(EmuContext *c, char *stack, size_t size, int i)
{
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, (void (*)())emu_fiber_main, 1, i);
    c->uc.uc_stack.ss_size = 0;
}
#endif
struct EmuFiber { EmuContext context; char *stack; unsigned x, y; bool running; };
constexpr size_t EMU_STACK = 256 << 10;
EmuContext emu_scheduler;
const void *emu_scheduler_stack;  // the main thread's stack, as ASan sees it
size_t emu_scheduler_stack_size;
EmuFiber *emu_fibers[1024], *emu_current;
unsigned emu_fiber_count;
void (*emu_body)(void *, unsigned, unsigned);  // the running launch's thread (x, y)
void *emu_body_arg;
__attribute__((noinline)) void emu_yield()
{
    if (!emu_current) {
        fprintf(stderr, "emulation: a barrier outside emu_grid\n");
        abort();
    }
    void *fake;
    EMU_START_SWITCH(&fake, emu_scheduler_stack, emu_scheduler_stack_size);
    emu_switch_to(&emu_current->context, &emu_scheduler);
    EMU_FINISH_SWITCH(fake, nullptr, nullptr);
}
extern "C" void emu_fiber_main(int i)
{
    EMU_FINISH_SWITCH(nullptr, &emu_scheduler_stack, &emu_scheduler_stack_size);
    for (EmuFiber *f = emu_fibers[i];;) {
        emu_body(emu_body_arg, f->x, f->y);
        f->running = false;
        emu_yield();
    }
}
void emu_resume(EmuFiber *f)
{
    void *fake;
    emu_current = f;
    EMU_START_SWITCH(&fake, f->stack, EMU_STACK);
    emu_switch_to(&emu_scheduler, &f->context);
    EMU_FINISH_SWITCH(fake, nullptr, nullptr);
    emu_current = nullptr;
}
EmuFiber *emu_new_fiber(int i)
{
    const size_t page = sysconf(_SC_PAGESIZE);
    char *base = (char *)mmap(nullptr, page + EMU_STACK, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED || mprotect(base, page, PROT_NONE)) {
        perror("emulation: a fiber's stack");
        abort();
    }
    EmuFiber *f = new EmuFiber{};
    f->stack = base + page;
    emu_make_context(&f->context, f->stack, EMU_STACK, i);
    return f;
}
// Runs body(arg, x, y) for each thread (x, y) of a bx x by block, the threads as fibers, to the end:
// every barrier is reached by all threads or by none (a thread returning while others wait at a
// barrier aborts: on the device that block would hang).
void emu_block(unsigned bx, unsigned by, void (*body)(void *, unsigned, unsigned), void *arg)
{
    const unsigned n = bx * by;
    if (n == 0 || n > 1024) {
        fprintf(stderr, "emulation: a block of %u x %u threads\n", bx, by);
        abort();
    }
    for (; emu_fiber_count < n; ++emu_fiber_count)
        emu_fibers[emu_fiber_count] = emu_new_fiber(emu_fiber_count);
    emu_body = body;
    emu_body_arg = arg;
    for (unsigned i = 0; i < n; ++i) {
        emu_fibers[i]->x = i % bx;
        emu_fibers[i]->y = i / bx;
        emu_fibers[i]->running = true;
    }
    for (unsigned round = 0, waiting = n; waiting; ++round) {
        waiting = 0;
        for (unsigned k = 0; k < n; ++k) {
            EmuFiber *f = emu_fibers[round & 1 ? n - 1 - k : k];
            emu_resume(f);
            waiting += f->running;
        }
        if (waiting && waiting < n) {
            fprintf(stderr, "emulation: %u of %u threads of a block wait at a barrier the others never reach\n",
                    waiting, n);
            abort();
        }
    }
}
Idx blockDim;
unsigned emu_round;  // the running fiber's count of shuffles (emu_shuffle)
// __syncthreads: back to the scheduler, which resumes this fiber once every thread of the block has
// arrived; the fiber's indices and shuffle count are its own again after the switch.
inline void emu_barrier()
{
    const Idx t = threadIdx, b = blockIdx;
    const unsigned r = emu_round;
    emu_yield();
    threadIdx = t;
    blockIdx = b;
    emu_round = r;
}
inline void __syncthreads() { emu_barrier(); }
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
// Warp shuffles of 32-bit values, inside emu_grid (which sets blockDim, the block's shape). Every
// thread of the block must make the same shuffle calls in the same order (all the kernels' shuffles
// are block-uniform, full-mask): each call writes the thread's value into one of two slot arrays,
// in turn, and waits on the block barrier; a slot array is written again only two calls later,
// after every thread has passed the barrier of the call between, so no reader of the old values is
// left. Lanes are linear thread ids mod 32 and shuffles stay inside segments of `width` lanes, as
// on the device.
unsigned emu_slots[2][1024];
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
    emu_barrier();
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
// A launch of `blocks` x 1 x `batch` blocks (blockIdx.x, blockIdx.z) of bx x by threads: one fiber
// per thread of a block, the blocks one after another (each thread calls `kernel` once per block,
// then waits for the whole block). Sets blockDim.
template <class F> void emu_grid(unsigned bx, unsigned by, unsigned blocks, unsigned batch, F kernel)
{
    blockDim = {bx, by, 1};
    auto thread = [&](unsigned x, unsigned y) {
        threadIdx = {x, y, 0};
        emu_round = 0;
        for (unsigned z = 0; z < batch; ++z)
            for (unsigned b = 0; b < blocks; ++b) {
                blockIdx = {b, 0, z};
                kernel();
                emu_barrier();  // the next block starts after this one
            }
    };
    emu_block(bx, by, [](void *t, unsigned x, unsigned y) { (*(decltype(thread) *)t)(x, y); }, &thread);
}
#include "k.cu"
"""


class Harness:
    """One test's harness in ``tmp``: :data:`PRELUDE` then ``main``; :meth:`build` compiles it
    against one kernel source with ``-D`` macros, :meth:`run` runs the build."""

    def __init__(self, tmp: Path, main: str) -> None:
        self.tmp = tmp
        (tmp / "cuda_fp16.h").write_text("struct __half { unsigned short x; };\n")
        (tmp / "h.cpp").write_text(f'#include "{SYSTEM_HEADERS}"\n' + PRELUDE + main)
        self.flags = cxx_flags(tmp)
        self.headers = system_headers(tuple(self.flags))
        self.linker = [GOLD] if gold_links(tuple(self.flags)) else []

    def build(self, folder: Path, source: str, macros: Mapping[str, object]) -> str | None:
        """Compile the harness with ``source`` as ``k.cu`` into ``folder``; the compiler's
        errors (first 1,500 characters), or ``None``."""
        folder.mkdir()
        (folder / "k.cu").write_text(source)
        done = subprocess.run(["g++", *CXX_OPTIONS, *self.flags, *self.linker, f"-I{self.headers}", f"-I{self.tmp}",
                               f"-I{folder}",
                               *[f"-D{m}={v}" for m, v in macros.items()], str(self.tmp / "h.cpp"),
                               "-o", str(folder / "h")], capture_output=True, text=True)
        return f"does not build: {done.stderr[:1500]}" if done.returncode else None

    def run(self, folder: Path, args: Sequence[object]) -> str | None:
        """Run the build in ``folder``; what it printed (a wrong element, a sanitizer report)
        when it failed, or ``None``."""
        done = subprocess.run([str(folder / "h"), *map(str, args)], capture_output=True, text=True)
        return f"{done.stdout}{done.stderr[:1500]}" if done.returncode else None


SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
CXX_OPTIONS = ("-std=c++20", "-O1")
SYSTEM_HEADERS = "emu_system.h"
"""The system headers :data:`PRELUDE` includes, included first by each harness: g++ reads them
from a precompiled header (:func:`system_headers`): about 0.3 s saved of a build's 1 s of CPU
(its compile and link)."""
_HEADERS_TEXT = "".join(line + "\n" for line in PRELUDE.splitlines()
                        if line.startswith("#include <") and "sanitizer/" not in line) + \
    "#if defined(__SANITIZE_ADDRESS__)\n#include <sanitizer/common_interface_defs.h>\n#endif\n"


def system_headers(flags: tuple[str, ...]) -> Path:
    """A folder holding :data:`SYSTEM_HEADERS` and, where g++ can make it, its precompiled
    ``.gch`` built with the harness's options and ``flags`` (a PCH is used only by a build with the
    same options; none where g++ cannot make it: the header is then read as text, the same
    declarations). Made once a process, removed at its exit."""
    return Path(_precompiled(flags).name)


@functools.cache
def _precompiled(flags: tuple[str, ...]) -> tempfile.TemporaryDirectory:
    folder = tempfile.TemporaryDirectory(prefix="emu-pch-")  # kept by the cache until the process ends
    header = Path(folder.name) / SYSTEM_HEADERS
    header.write_text(_HEADERS_TEXT)
    subprocess.run(["g++", *CXX_OPTIONS, *flags, "-x", "c++-header", str(header), "-o", f"{header}.gch"],
                   capture_output=True)
    return folder


def cxx_flags(tmp: Path) -> list[str]:
    """Address and UB sanitizers (out-of-bounds reads and writes) where g++ has them (:func:`sanitizers_link`)."""
    return list(SANITIZERS) if sanitizers_link() else []


GOLD = "-fuse-ld=gold"
"""The linker of a build where g++ links with it (:func:`gold_links`): gold links a sanitized
harness in about 0.05 s of CPU, ld.bfd in 0.2 s; the program is the same."""


@functools.cache
def gold_links(flags: tuple[str, ...]) -> bool:
    """Whether g++ links a program with ``flags`` (:func:`cxx_flags`) and :data:`GOLD`: probed
    once a process."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp, "probe.cpp")
        probe.write_text("int main() { return 0; }\n")
        return subprocess.run(["g++", *flags, GOLD, str(probe), "-o", str(Path(tmp, "probe"))],
                              capture_output=True).returncode == 0


@functools.cache
def sanitizers_link() -> bool:
    """Whether g++ builds and links a program with :data:`SANITIZERS`: probed once a process
    (the toolchain does not change during a run), not once a harness."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp, "probe.cpp")
        probe.write_text("int main() { return 0; }\n")
        return subprocess.run(["g++", *SANITIZERS, str(probe), "-o", str(Path(tmp, "probe"))],
                              capture_output=True).returncode == 0
