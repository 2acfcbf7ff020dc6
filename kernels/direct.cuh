// The kernels without shared memory (copy.cu, naive.cu): each thread moves its elements
// straight from input to output. Only the macros differ between the catalog entries:
//   COLUMNWISE 0 ("row"): threadIdx.x runs along an input row, so a warp reads a row
//                segment (coalesced); a transpose then writes a column (strided by rows).
//   COLUMNWISE 1 ("col"): threadIdx.x runs down an input column, so a warp reads a column
//                (strided by cols); a transpose then writes an output row (coalesced).
//   UNROLL      each thread moves UNROLL elements per row of threads, TILE_DIM apart
//               along threadIdx.x (UNROLL tiles per block).
//   DIAGONAL    order in which blocks take tiles (common.cuh).
#pragma once

#include "common.cuh"

// ld: elements between input rows (cols for a contiguous input; more for a row-pitched view).
template <bool TRANSPOSE>
__device__ __forceinline__ void move_direct(elem_t *__restrict__ out, const elem_t *__restrict__ in,
                                            int rows, int cols, size_t ld)
{
    const unsigned R = rows, C = cols;
    unsigned row0, col0;
    block_tile_origin(R, C, row0, col0);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
        for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            const unsigned along = u * TILE_DIM + threadIdx.x;  // where threadIdx.x runs
            const unsigned across = threadIdx.y + j;
#if COLUMNWISE
            const unsigned r = row0 + along, c = col0 + across;
#else
            const unsigned r = row0 + across, c = col0 + along;
#endif
            if (r < R && c < C)
                out[TRANSPOSE ? (size_t)c * R + r : (size_t)r * C + c] = in[(size_t)r * ld + c];
        }
    }
}
