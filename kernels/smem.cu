// Shared-memory transpose: a block reads its tile with coalesced row loads into shared
// memory, then writes the transposed tile with coalesced row stores. With IPAD = 0 the
// column reads of the tile hit one bank per warp (bank conflicts); IPAD > 0 pads each
// tile row so consecutive rows start in different banks.
#include "common.cuh"

extern "C" __global__ void transpose_smem(elem_t *__restrict__ out, const elem_t *__restrict__ in,
                                          int rows, int cols)
{
    __shared__ elem_t tile[TILE_DIM][TILE_DIM + IPAD];
    int row0, col0;
    tile_origin(cols, row0, col0);

    const int c = col0 + threadIdx.x;
#pragma unroll
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        const int r = row0 + threadIdx.y + j;
        if (r < rows && c < cols)
            tile[threadIdx.y + j][threadIdx.x] = in[(size_t)r * cols + c];
    }
    __syncthreads();

    // Output element (orow, ocol) = input (ocol, orow); orow runs over the tile's input
    // columns, ocol over its input rows.
    const int ocol = row0 + threadIdx.x;
#pragma unroll
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        const int orow = col0 + threadIdx.y + j;
        if (orow < cols && ocol < rows)
            out[(size_t)orow * rows + ocol] = tile[threadIdx.x][threadIdx.y + j];
    }
}
