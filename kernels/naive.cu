// Transposes without shared memory (direct.cuh): naive_row / naive_col read rows / columns
// and write columns / rows; unroll_* move UNROLL tiles per block; diagonal_* take tiles
// in diagonal order.
#include "direct.cuh"

extern "C" __global__ void transpose_naive(elem_t *__restrict__ out, const elem_t *__restrict__ in,
                                           int rows, int cols)
{
    move_direct<true>(out, in, rows, cols);
}
