// Transposes without shared memory (direct.cuh): naive_row / naive_col read rows / columns
// and write columns / rows; unroll_* move UNROLL tiles per block; diagonal_* take tiles
// in diagonal order.
#include "direct.cuh"

// Batches (blockIdx.z: matrix z at in + z * batch_stride, out + z * rows * cols) and
// row-pitched input views (rows ld elements apart), as autotune.transpose passes them.
extern "C" __global__ void transpose_naive(elem_t *__restrict__ out, const elem_t *__restrict__ in,
                                           int rows, int cols, long long ld, long long batch_stride)
{
    out += (size_t)blockIdx.z * (unsigned)rows * (unsigned)cols;
    in += (size_t)blockIdx.z * batch_stride;
    move_direct<true>(out, in, rows, cols, ld);
}
