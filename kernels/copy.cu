// Coalesced copy through the transpose's tiling: the bandwidth upper bound of a transpose
// (every load and every store is a row segment; no shared memory, no transpose).
#include "common.cuh"

extern "C" __global__ void copy_tiled(elem_t *__restrict__ out, const elem_t *__restrict__ in,
                                      int rows, int cols)
{
    int row0, col0;
    tile_origin(cols, row0, col0);
    const int c = col0 + threadIdx.x;
    if (c >= cols)
        return;
#pragma unroll
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        const int r = row0 + threadIdx.y + j;
        if (r < rows)
            out[(size_t)r * cols + c] = in[(size_t)r * cols + c];
    }
}
