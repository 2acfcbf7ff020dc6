// Shared-memory tiled matrix product (the classic TILE_WIDTH kernel): a block of
// TILE_WIDTH x TILE_WIDTH threads computes a TILE_WIDTH x TILE_WIDTH tile of C. In each
// phase the block loads a tile of A and a tile of B into shared memory (one element per
// thread, coalesced), synchronises, and every thread accumulates TILE_WIDTH products from
// shared memory: global traffic falls by a factor of TILE_WIDTH. Elements outside A or B
// (edge tiles, K not a multiple of TILE_WIDTH) are loaded as zeros; stores are guarded.
#include "matmul.cuh"

#ifndef TILE_WIDTH
#define TILE_WIDTH 16
#endif
#if TILE_WIDTH < 1 || TILE_WIDTH * TILE_WIDTH > 1024
#error "TILE_WIDTH must be 1..32 (TILE_WIDTH^2 threads per block)"
#endif

extern "C" __global__ void __launch_bounds__(TILE_WIDTH * TILE_WIDTH)
matmul_tiled(elem_t *__restrict__ C, const elem_t *__restrict__ A, const elem_t *__restrict__ B,
             int M, int N, int K)
{
    __shared__ elem_t As[TILE_WIDTH][TILE_WIDTH];
    __shared__ elem_t Bs[TILE_WIDTH][TILE_WIDTH];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE_WIDTH + ty;
    const int col = blockIdx.x * TILE_WIDTH + tx;
    elem_t acc = 0;
    for (int k0 = 0; k0 < K; k0 += TILE_WIDTH) {
        const int ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : elem_t(0);
        Bs[ty][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : elem_t(0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE_WIDTH; ++k)
            acc = fma(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}
