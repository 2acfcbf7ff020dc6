// Copy (output = input) through the transpose's tiling: the bounds of a transpose.
// copy_row (COLUMNWISE 0): every load and store is a row segment: the upper bound.
// copy_col (COLUMNWISE 1): every load and store is strided by the row length: the lower bound.
#include "direct.cuh"

extern "C" __global__ void copy_tiled(elem_t *__restrict__ out, const elem_t *__restrict__ in,
                                      int rows, int cols)
{
    move_direct<false>(out, in, rows, cols, (unsigned)cols);
}
