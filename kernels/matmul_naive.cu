// Naive matrix product: one thread per element of C, reading its row of A and its column
// of B straight from global memory (2 K loads per 2 K flops: bandwidth-bound). A block
// is BLOCK_X x BLOCK_Y threads covering BLOCK_Y rows by BLOCK_X columns of C; threadIdx.x
// runs along a row of C, so the loads of B and the stores of C are coalesced and the
// loads of A are broadcasts within a warp row.
#include "matmul.cuh"

#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif
#if BLOCK_X < 1 || BLOCK_Y < 1 || BLOCK_X * BLOCK_Y > 1024
#error "BLOCK_X and BLOCK_Y must be at least 1 and BLOCK_X * BLOCK_Y at most 1024"
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
matmul_naive(elem_t *__restrict__ C, const elem_t *__restrict__ A, const elem_t *__restrict__ B,
             int M, int N, int K)
{
    const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
    const int col = blockIdx.x * BLOCK_X + threadIdx.x;
    if (row >= M || col >= N)
        return;
    const elem_t *a = A + (size_t)row * K;
    elem_t acc = 0;
    for (int k = 0; k < K; ++k)
        acc = fma(a[k], B[(size_t)k * N + col], acc);
    C[(size_t)row * N + col] = acc;
}
