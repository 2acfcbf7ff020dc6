// Register- and warp-tiled SIMT matrix product C[M,N] = A[M,K] @ B[K,N] (row-major), the
// steps of S. Boehm's "How to optimize a CUDA matmul kernel" as compile-time tunables:
//
//   BM x BN   block tile of C; K is walked in tiles of BK (A: BM x BK, B: BK x BN in shared memory)
//   WM x WN   warp tile: the block's (BM / WM) x (BN / WN) warps each compute a WM x WN piece
//   TM x TN   thread tile: the 32 lanes of a warp form (WM / TM) x (WN / TN) = 32 lanes, each
//             keeping TM x TN accumulators in registers. A lane's tile is made of 4 x 4 chunks:
//             chunk (i, j) covers rows i * 4 * (WM / TM) + 4 * lane_m + 0..3 and columns
//             j * 4 * (WN / TN) + 4 * lane_n + 0..3 of the warp tile, so every shared-memory read
//             of a fragment is 4 consecutive elements (one 128-bit LDS for float32, two for
//             float64) and the lanes of a warp read few distinct addresses (broadcast).
//   VEC       1: 128-bit global loads and stores where the operands allow (K and N multiples of
//             16 / itemsize, 16-byte aligned pointers); 0 (or operands that do not allow): scalar
//             loads, consecutive threads on consecutive elements
//   A_SMEM    A is stored transposed in shared memory (As[k][m], so that a lane reads 4
//             consecutive rows of one k at once); 0: plain, 1: each k row padded by 16 bytes,
//             2: XOR swizzle of the m index by the k row (m ^ 4 * (k % 8)), both against the
//             bank conflicts of the transposing stores
//   STAGES    shared-memory buffers of A and B tiles (1: load, sync, compute, sync; 2+: the next
//             tiles load while the current one is computed). Capped at what fits the 48 KiB of
//             static shared memory for the dtype (float64 tiles take twice the bytes of float32
//             ones), at least 1
//   ASYNC     0: global -> registers -> shared memory (with STAGES = 2 the next tile is held in
//             registers during the compute); 1: cp.async (sm_80+; plain loads elsewhere), STAGES
//             deep, zero-filling what lies outside A or B
//   GROUP_M   blocks walk C in bands of GROUP_M block rows (column by column inside a band) so
//             that blocks running together share tiles of A and B in L2; 1: row by row
//   MINB      minimum resident blocks per SM asked of the compiler (__launch_bounds__)
//
// Per K tile the fragments of A and B are double-buffered in registers (the reads of k + 1 go
// out before the products of k), and the barrier that brings in the next tile sits before the
// last k's products, so the next tile's first reads hide behind them; the loads of the next
// tile (registers or cp.async) are issued before the current tile's products.
//
// Bounds: any M, N, K >= 1. The partial K tile (K % BK, if any) is computed first, loaded with
// zero fill, so every later K tile is whole. Blocks wholly inside C take unchecked loads (128-bit
// when VEC and the operands allow); edge blocks check every element (slower path). Accumulation
// is one fused multiply-add per term in ascending k within each thread.
//
// Launch: grid (cdiv(M, BM) * cdiv(N, BN), 1, 1), block (32 * (BM / WM) * (BN / WN), 1, 1), no
// dynamic shared memory. Arguments: (C, A, B, M, N, K).
#include "matmul.cuh"

// Defaults (for compiling by hand): the fastest float32 config found on the H100 at 4096^3.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 128
#endif
#ifndef WN
#define WN 32
#endif
#ifndef TM
#define TM 16
#endif
#ifndef TN
#define TN 8
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef A_SMEM
#define A_SMEM 0
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef ASYNC
#define ASYNC 0
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef MINB
#define MINB 1
#endif

#define WARPS_M (BM / WM)
#define WARPS_N (BN / WN)
#define THREADS (32 * WARPS_M * WARPS_N)
#define LANES_M (WM / TM)
#define LANES_N (WN / TN)

#if BM % WM != 0 || BN % WN != 0
#error "WM must divide BM and WN must divide BN"
#endif
#if TM % 4 != 0 || TN % 4 != 0 || WM % TM != 0 || WN % TN != 0 || LANES_M * LANES_N != 32
#error "TM, TN must be multiples of 4 dividing WM, WN, with (WM / TM) * (WN / TN) == 32 lanes"
#endif
#if BK % 4 != 0 || BK < 4
#error "BK must be a positive multiple of 4"
#endif
#if THREADS > 1024
#error "at most 1024 threads per block (32 * (BM / WM) * (BN / WN))"
#endif
#if A_SMEM < 0 || A_SMEM > 2 || (A_SMEM == 2 && BM % 32 != 0)
#error "A_SMEM must be 0, 1 or 2 (2 needs BM % 32 == 0)"
#endif
#if STAGES < 1 || (ASYNC == 0 && STAGES > 2) || ASYNC < 0 || ASYNC > 1
#error "STAGES must be 1..2 with ASYNC=0, >= 1 with ASYNC=1"
#endif
#if GROUP_M < 1 || MINB < 1
#error "GROUP_M and MINB must be at least 1"
#endif

#if ASYNC && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define USE_CP_ASYNC 1
#else
#define USE_CP_ASYNC 0
#endif

namespace mw {

constexpr int VE = 16 / (int)sizeof(elem_t);             // elements per 128-bit vector
constexpr int APAD = A_SMEM == 1 ? VE : 0;               // padding of an A row, elements (16 bytes)
constexpr int AS_LD = BM + APAD;                         // leading dimension of As[k][m]
constexpr int A_TILE = BK * AS_LD, B_TILE = BK * BN;      // elements per stage

constexpr int STAGE_BYTES = (A_TILE + B_TILE) * (int)sizeof(elem_t);
constexpr int NSTAGES = STAGES * STAGE_BYTES <= 49152 ? STAGES : (49152 / STAGE_BYTES > 1 ? 49152 / STAGE_BYTES : 1);

static_assert(BK % VE == 0 && BN % VE == 0, "tiles must hold whole vectors");
static_assert(NSTAGES * STAGE_BYTES <= 49152, "one stage of the A and B tiles exceeds 48 KiB of shared memory");

// Column of element (k, m) of the transposed A tile: 4-element groups stay together.
__device__ __forceinline__ int a_col(int k, int m)
{
#if A_SMEM == 2
    return m ^ ((k & 7) << 2);
#else
    return m;
#endif
}

struct __align__(16) Vec16 {  // 16 bytes of elements
    elem_t v[VE];
};

__device__ __forceinline__ void load4(elem_t (&dst)[4], const elem_t *p)
{
#pragma unroll
    for (int h = 0; h < 4; h += VE) {
        const Vec16 t = *reinterpret_cast<const Vec16 *>(p + h);
#pragma unroll
        for (int e = 0; e < VE; ++e)
            dst[h + e] = t.v[e];
    }
}

__device__ __forceinline__ void store4(elem_t *p, const elem_t (&src)[4])
{
#pragma unroll
    for (int h = 0; h < 4; h += VE) {
        Vec16 t;
#pragma unroll
        for (int e = 0; e < VE; ++e)
            t.v[e] = src[h + e];
        *reinterpret_cast<Vec16 *>(p + h) = t;
    }
}

#if USE_CP_ASYNC
__device__ __forceinline__ void cp_async_elem(elem_t *dst, const elem_t *src, bool pred)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(src),
                 "n"((int)sizeof(elem_t)), "r"(pred ? (int)sizeof(elem_t) : 0));
}
__device__ __forceinline__ void cp_async_vec(elem_t *dst, const elem_t *src, bool pred)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
#endif

constexpr int cdiv_c(int a, int b) { return (a + b - 1) / b; }

// Moves one K tile of A (BM x BK at rows row0.., columns k0..) and of B (BK x BN at rows k0..,
// columns col0..) towards shared memory. V: 16-byte vectors along k (A) and n (B); CHECK: each
// element (vector) is loaded only inside M, N and k < klim, zero otherwise. Without cp.async the
// values pass through registers: fetch() loads them, put() stores them in a stage.
template <bool V, bool CHECK>
struct Tile {
    // A: vectors (or elements) idx = tid + it * THREADS of the tile, row-major (m, k)
    static constexpr int A_PER_ROW = V ? BK / VE : BK;
    static constexpr int A_ITEMS = BM * A_PER_ROW;
    static constexpr int A_IT = cdiv_c(A_ITEMS, THREADS);
    static constexpr int B_PER_ROW = V ? BN / VE : BN;
    static constexpr int B_ITEMS = BK * B_PER_ROW;
    static constexpr int B_IT = cdiv_c(B_ITEMS, THREADS);
    static constexpr int W = V ? VE : 1;  // elements per item

    elem_t ra[A_IT][W], rb[B_IT][W];

    __device__ __forceinline__ static bool a_live(int it, int tid)
    {
        return A_ITEMS % THREADS == 0 || tid + it * THREADS < A_ITEMS;
    }
    __device__ __forceinline__ static bool b_live(int it, int tid)
    {
        return B_ITEMS % THREADS == 0 || tid + it * THREADS < B_ITEMS;
    }

    __device__ __forceinline__ void fetch(const elem_t *__restrict__ A, const elem_t *__restrict__ B, int M,
                                          int N, int K, int row0, int col0, int k0, int klim, int tid)
    {
#pragma unroll
        for (int it = 0; it < A_IT; ++it) {
            const int idx = tid + it * THREADS;
            const int m = idx / A_PER_ROW, k = (idx % A_PER_ROW) * W;
            const elem_t *p = A + (size_t)(row0 + m) * K + (k0 + k);
            if (!a_live(it, tid))
                continue;
            if (V) {
                if (!CHECK || (row0 + m < M && k < klim)) {
                    const Vec16 t = *reinterpret_cast<const Vec16 *>(p);
#pragma unroll
                    for (int e = 0; e < W; ++e)
                        ra[it][e] = t.v[e % VE];
                } else {
#pragma unroll
                    for (int e = 0; e < W; ++e)
                        ra[it][e] = elem_t(0);
                }
            } else {
                ra[it][0] = (!CHECK || (row0 + m < M && k < klim)) ? *p : elem_t(0);
            }
        }
#pragma unroll
        for (int it = 0; it < B_IT; ++it) {
            const int idx = tid + it * THREADS;
            const int k = idx / B_PER_ROW, n = (idx % B_PER_ROW) * W;
            const elem_t *p = B + (size_t)(k0 + k) * N + (col0 + n);
            if (!b_live(it, tid))
                continue;
            if (V) {
                if (!CHECK || (k < klim && col0 + n < N)) {
                    const Vec16 t = *reinterpret_cast<const Vec16 *>(p);
#pragma unroll
                    for (int e = 0; e < W; ++e)
                        rb[it][e] = t.v[e % VE];
                } else {
#pragma unroll
                    for (int e = 0; e < W; ++e)
                        rb[it][e] = elem_t(0);
                }
            } else {
                rb[it][0] = (!CHECK || (k < klim && col0 + n < N)) ? *p : elem_t(0);
            }
        }
    }

    __device__ __forceinline__ void put(elem_t *As, elem_t *Bs, int tid) const
    {
#pragma unroll
        for (int it = 0; it < A_IT; ++it) {
            const int idx = tid + it * THREADS;
            const int m = idx / A_PER_ROW, k = (idx % A_PER_ROW) * W;
            if (!a_live(it, tid))
                continue;
#pragma unroll
            for (int e = 0; e < W; ++e)
                As[(k + e) * AS_LD + a_col(k + e, m)] = ra[it][e];
        }
#pragma unroll
        for (int it = 0; it < B_IT; ++it) {
            const int idx = tid + it * THREADS;
            const int k = idx / B_PER_ROW, n = (idx % B_PER_ROW) * W;
            if (!b_live(it, tid))
                continue;
            if (V) {
                Vec16 t;
#pragma unroll
                for (int e = 0; e < W; ++e)
                    t.v[e % VE] = rb[it][e];
                *reinterpret_cast<Vec16 *>(Bs + k * BN + n) = t;
            } else {
                Bs[k * BN + n] = rb[it][0];
            }
        }
    }

#if USE_CP_ASYNC
    // cp.async straight into a stage: A element by element (it is transposed on the way), B
    // in 16-byte vectors (V) or elements. Out-of-range sources are zero-filled.
    __device__ __forceinline__ static void copy(elem_t *As, elem_t *Bs, const elem_t *__restrict__ A,
                                                const elem_t *__restrict__ B, int M, int N, int K,
                                                int row0, int col0, int k0, int klim, int tid)
    {
#pragma unroll
        for (int it = 0; it < A_IT; ++it) {
            const int idx = tid + it * THREADS;
            const int m = idx / A_PER_ROW, k = (idx % A_PER_ROW) * W;
            if (!a_live(it, tid))
                continue;
            const bool rok = !CHECK || row0 + m < M;
            const elem_t *p = A + (size_t)(rok ? row0 + m : 0) * K + k0 + k;
#pragma unroll
            for (int e = 0; e < W; ++e) {
                const bool ok = rok && (!CHECK || k + e < klim);
                cp_async_elem(As + (k + e) * AS_LD + a_col(k + e, m), ok ? p + e : A, ok);
            }
        }
#pragma unroll
        for (int it = 0; it < B_IT; ++it) {
            const int idx = tid + it * THREADS;
            const int k = idx / B_PER_ROW, n = (idx % B_PER_ROW) * W;
            if (!b_live(it, tid))
                continue;
            const bool ok = !CHECK || (k < klim && col0 + n < N);
            const elem_t *p = ok ? B + (size_t)(k0 + k) * N + (col0 + n) : B;
            if (V)
                cp_async_vec(Bs + k * BN + n, p, ok);
            else
                cp_async_elem(Bs + k * BN + n, p, ok);
        }
    }
#endif
};

// The fragments of one k: TM values of A and TN of B, read as 4-element groups.
struct Frag {
    elem_t a[TM], b[TN];
};

__device__ __forceinline__ void load_frag(Frag &f, const elem_t *As, const elem_t *Bs, int k, int a_off, int b_off)
{
#pragma unroll
    for (int i = 0; i < TM / 4; ++i)
        load4(*reinterpret_cast<elem_t(*)[4]>(f.a + 4 * i), As + k * AS_LD + a_col(k, a_off + i * 4 * LANES_M));
#pragma unroll
    for (int j = 0; j < TN / 4; ++j)
        load4(*reinterpret_cast<elem_t(*)[4]>(f.b + 4 * j), Bs + k * BN + b_off + j * 4 * LANES_N);
}

// One K tile of products from a stage: per k, TM / 4 + TN / 4 four-element reads of shared
// memory feed TM * TN fused multiply-adds. The fragments are double-buffered: f[0] holds
// k = 0 on entry, and the reads of k + 1 are issued before the products of k. Before the
// products of the last k, turn(nA, nB) moves on to the next tile (stores it, synchronises)
// and says whether there is one; if so its k = 0 fragments are read into f[0], so that their
// latency hides behind the last k's products rather than after the barrier.
template <class Turn>
__device__ __forceinline__ void compute_tile(elem_t (&acc)[TM][TN], Frag (&f)[2], const elem_t *As,
                                             const elem_t *Bs, int a_off, int b_off, Turn turn)
{
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        if (k < BK - 1) {
            load_frag(f[(k + 1) & 1], As, Bs, k + 1, a_off, b_off);
        } else {
            const elem_t *nA, *nB;
            if (turn(nA, nB))
                load_frag(f[0], nA, nB, 0, a_off, b_off);  // BK is even: f[BK & 1] == f[0]
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j)
                acc[i][j] = fma(f[k & 1].a[i], f[k & 1].b[j], acc[i][j]);
    }
}

// The whole K loop and the store of one block tile. V: vectors allowed; FULL: the block tile
// lies wholly inside C (so only the partial K tile needs checks).
template <bool V, bool FULL>
__device__ __forceinline__ void block_tile(elem_t *__restrict__ C, const elem_t *__restrict__ A,
                                           const elem_t *__restrict__ B, int M, int N, int K, int row0,
                                           int col0, elem_t *As, elem_t *Bs)
{
    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int lm = lane / LANES_N, ln = lane % LANES_N;
    const int a_off = wm * WM + 4 * lm;  // first row of the lane's chunks in the block tile
    const int b_off = wn * WN + 4 * ln;  // first column

    elem_t acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = elem_t(0);

    const int ktiles = (K + BK - 1) / BK;
    const int kres = K - (ktiles - 1) * BK;  // 1..BK columns of the first (partial) tile
    using Main = Tile<V, !FULL>;
    using First = Tile<V, true>;

    Frag f[2];
    auto last = [](const elem_t *&, const elem_t *&) { return false; };
#if USE_CP_ASYNC
    if constexpr (NSTAGES == 1) {
        for (int t = 0; t < ktiles; ++t) {
            if (t == 0)
                First::copy(As, Bs, A, B, M, N, K, row0, col0, 0, kres, tid);
            else
                Main::copy(As, Bs, A, B, M, N, K, row0, col0, kres + (t - 1) * BK, BK, tid);
            cp_async_commit();
            cp_async_wait<0>();
            __syncthreads();
            load_frag(f[0], As, Bs, 0, a_off, b_off);
            compute_tile(acc, f, As, Bs, a_off, b_off, last);
            __syncthreads();
        }
    } else {
        First::copy(As, Bs, A, B, M, N, K, row0, col0, 0, kres, tid);
        cp_async_commit();
#pragma unroll
        for (int s = 1; s < NSTAGES - 1; ++s) {
            if (s < ktiles)
                Main::copy(As + s * A_TILE, Bs + s * B_TILE, A, B, M, N, K, row0, col0, kres + (s - 1) * BK, BK,
                           tid);
            cp_async_commit();
        }
        constexpr int WAIT = NSTAGES >= 2 ? NSTAGES - 2 : 0;
        cp_async_wait<WAIT>();  // tile 0 has landed (this thread's part)
        __syncthreads();        // (everyone's part)
        load_frag(f[0], As, Bs, 0, a_off, b_off);
        int cs = 0;                          // stage computed now
        int ls = NSTAGES - 1;                // stage loaded now (that of the tile before)
        int kn = kres + (NSTAGES - 2) * BK;  // first column of the tile loaded now
        for (int t = 0; t < ktiles - 1; ++t) {  // every tile but the last
            if (t + NSTAGES - 1 < ktiles)
                Main::copy(As + ls * A_TILE, Bs + ls * B_TILE, A, B, M, N, K, row0, col0, kn, BK, tid);
            cp_async_commit();
            const int ns = cs == NSTAGES - 1 ? 0 : cs + 1;
            compute_tile(acc, f, As + cs * A_TILE, Bs + cs * B_TILE, a_off, b_off,
                         [&](const elem_t *&nA, const elem_t *&nB) {
                             cp_async_wait<WAIT>();  // tile t + 1 has landed
                             __syncthreads();        // everyone's part; everyone is done with stage ls
                             nA = As + ns * A_TILE;
                             nB = Bs + ns * B_TILE;
                             return true;
                         });
            kn += BK;
            cs = ns;
            ls = ls == NSTAGES - 1 ? 0 : ls + 1;
        }
        compute_tile(acc, f, As + cs * A_TILE, Bs + cs * B_TILE, a_off, b_off, last);
    }
#else  // global -> registers -> shared memory
    {
        First first;
        first.fetch(A, B, M, N, K, row0, col0, 0, kres, tid);
        first.put(As, Bs, tid);
    }
    __syncthreads();
    if constexpr (NSTAGES == 1) {
        for (int t = 1; t <= ktiles; ++t) {
            load_frag(f[0], As, Bs, 0, a_off, b_off);
            compute_tile(acc, f, As, Bs, a_off, b_off, last);
            __syncthreads();
            if (t < ktiles) {
                Main next;
                next.fetch(A, B, M, N, K, row0, col0, kres + (t - 1) * BK, BK, tid);
                next.put(As, Bs, tid);
                __syncthreads();
            }
        }
    } else {  // two buffers: the next tile waits in registers during the compute
        load_frag(f[0], As, Bs, 0, a_off, b_off);
        int cs = 0;
        for (int t = 1; t < ktiles; ++t) {  // every tile but the last: its loads unconditional, so
            Main next;                        // that they are issued before the products
            next.fetch(A, B, M, N, K, row0, col0, kres + (t - 1) * BK, BK, tid);
            compute_tile(acc, f, As + cs * A_TILE, Bs + cs * B_TILE, a_off, b_off,
                         [&](const elem_t *&nA, const elem_t *&nB) {
                             next.put(As + (cs ^ 1) * A_TILE, Bs + (cs ^ 1) * B_TILE, tid);
                             __syncthreads();  // the next tile is in; everyone is done with stage cs ^ 1
                             nA = As + (cs ^ 1) * A_TILE;
                             nB = Bs + (cs ^ 1) * B_TILE;
                             return true;
                         });
            cs ^= 1;
        }
        compute_tile(acc, f, As + cs * A_TILE, Bs + cs * B_TILE, a_off, b_off, last);
    }
#endif

    // store: chunk (i, j) row r -> C row row0 + a_off + i * 4 * LANES_M + r, columns
    // col0 + b_off + j * 4 * LANES_N + 0..3
#pragma unroll
    for (int i = 0; i < TM / 4; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = row0 + a_off + i * 4 * LANES_M + r;
#pragma unroll
            for (int j = 0; j < TN / 4; ++j) {
                const int col = col0 + b_off + j * 4 * LANES_N;
                elem_t *p = C + (size_t)row * N + col;
                if (FULL && V) {
                    elem_t v[4];
#pragma unroll
                    for (int c = 0; c < 4; ++c)
                        v[c] = acc[4 * i + r][4 * j + c];
                    store4(p, v);
                } else if (FULL || row < M) {
#pragma unroll
                    for (int c = 0; c < 4; ++c)
                        if (FULL || col + c < N)
                            p[c] = acc[4 * i + r][4 * j + c];
                }
            }
        }
}

}  // namespace mw

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_warp(elem_t *__restrict__ C, const elem_t *__restrict__ A, const elem_t *__restrict__ B,
            int M, int N, int K)
{
    using namespace mw;
    __shared__ __align__(16) elem_t As[NSTAGES * A_TILE];
    __shared__ __align__(16) elem_t Bs[NSTAGES * B_TILE];

    // block -> tile of C: bands of GROUP_M tile rows, column-major inside a band
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int bid = blockIdx.x;
    int tm, tn;
    if (GROUP_M == 1) {
        tm = bid / tiles_n;
        tn = bid % tiles_n;
    } else {
        const int band = bid / (GROUP_M * tiles_n), in_band = bid % (GROUP_M * tiles_n);
        const int first = band * GROUP_M;
        const int rows = min(tiles_m - first, GROUP_M);
        tm = first + in_band % rows;
        tn = in_band / rows;
    }
    const int row0 = tm * BM, col0 = tn * BN;

    const bool full = row0 + BM <= M && col0 + BN <= N;
#if VEC
    const bool vec = K % VE == 0 && N % VE == 0 &&
                     ((reinterpret_cast<size_t>(A) | reinterpret_cast<size_t>(B) | reinterpret_cast<size_t>(C)) & 15) == 0;
    if (vec) {
        if (full)
            block_tile<true, true>(C, A, B, M, N, K, row0, col0, As, Bs);
        else
            block_tile<true, false>(C, A, B, M, N, K, row0, col0, As, Bs);
        return;
    }
#endif
    if (full)
        block_tile<false, true>(C, A, B, M, N, K, row0, col0, As, Bs);
    else
        block_tile<false, false>(C, A, B, M, N, K, row0, col0, As, Bs);
}
