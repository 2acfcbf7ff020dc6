// Register-blocked tiled matrix product. A block computes a BM x BN tile of C with
// (BN / TN) x (BM / TM) threads; each thread keeps a THREAD_TILE of TM x TN outputs in
// registers. Per K-step of BK, the block stages a BM x BK tile of A (transposed, padded by
// one column against bank conflicts) and a BK x BN tile of B in shared memory; each thread
// then loads TM values of A and TN values of B per k into registers and does TM * TN
// fused multiply-adds: (TM * TN) / (TM + TN) flops per shared-memory load instead of the
// tiled kernel's 1/2. Thread (tx, ty) owns rows ty + i * (BM / TM) and columns
// tx + j * (BN / TN) of the tile, so its stores are coalesced across a warp. Loads outside
// A or B are zeros; stores are guarded.
#include "matmul.cuh"

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#if TM < 1 || TN < 1 || BK < 1 || BM % TM != 0 || BN % TN != 0
#error "TM must divide BM, TN must divide BN, and BK, TM, TN must be at least 1"
#endif
#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define THREADS (THREADS_X * THREADS_Y)
#if THREADS > 1024
#error "(BM / TM) * (BN / TN) threads per block must be at most 1024"
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_reg(elem_t *__restrict__ C, const elem_t *__restrict__ A, const elem_t *__restrict__ B,
           int M, int N, int K)
{
    __shared__ elem_t As[BK][BM + 1];  // As[k][m] = A(row0 + m, k0 + k)
    __shared__ elem_t Bs[BK][BN];      // Bs[k][n] = B(k0 + k, col0 + n)
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * THREADS_X + tx;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    elem_t acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // consecutive threads take consecutive k of a row of A: coalesced reads
#pragma unroll
        for (int idx = tid; idx < BM * BK; idx += THREADS) {
            const int m = idx / BK, k = idx % BK;
            const int r = row0 + m, c = k0 + k;
            As[k][m] = (r < M && c < K) ? A[(size_t)r * K + c] : elem_t(0);
        }
        // consecutive threads take consecutive n of a row of B: coalesced reads
#pragma unroll
        for (int idx = tid; idx < BK * BN; idx += THREADS) {
            const int k = idx / BN, n = idx % BN;
            const int r = k0 + k, c = col0 + n;
            Bs[k][n] = (r < K && c < N) ? B[(size_t)r * N + c] : elem_t(0);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            elem_t a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = As[k][ty + i * THREADS_Y];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = Bs[k][tx + j * THREADS_X];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + ty + i * THREADS_Y;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + tx + j * THREADS_X;
            if (r < M && c < N)
                C[(size_t)r * N + c] = acc[i][j];
        }
    }
}
