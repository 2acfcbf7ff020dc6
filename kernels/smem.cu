// Shared-memory transpose: a block reads its tiles with coalesced row loads into shared
// memory, then writes each transposed tile with coalesced row stores. With IPAD = 0 the
// column reads of a tile hit one bank per warp (bank conflicts); IPAD > 0 pads each tile
// row so consecutive rows start in different banks. A block moves UNROLL tiles that lie
// side by side along the input rows (smem, smem_pad: UNROLL 1; smem_unroll_pad: tunable).
// Elements are moved as words of their size; 16-byte ones as two 8-byte parts, one pass
// each (words.cuh: part_t, PARTS), so the tile never outgrows one of 8-byte elements.
// Batches (blockIdx.z) and row-pitched input views (ld): words.cuh.
#include "words.cuh"

#if COLUMNWISE
#error "the shared-memory transpose reads rows: COLUMNWISE must be 0"
#endif

extern "C" __global__ void transpose_smem(elem_t *__restrict__ out_, const elem_t *__restrict__ in_,
                                          int rows, int cols, long long ld_, long long batch_stride)
{
    // tile[u][i][k] holds part p of input (row0 + i, col0 + u * TILE_DIM + k)
    __shared__ part_t tile[UNROLL][TILE_DIM][TILE_DIM + IPAD];
    const unsigned R = rows, C = cols;
    const size_t ld = ld_;
    part_t *__restrict__ out = reinterpret_cast<part_t *>(out_) + (size_t)blockIdx.z * R * C * PARTS;
    const part_t *__restrict__ in = reinterpret_cast<const part_t *>(in_) + (size_t)blockIdx.z * batch_stride * PARTS;
    unsigned row0, col0;
    block_tile_origin(R, C, row0, col0);

#pragma unroll
    for (int p = 0; p < PARTS; ++p) {
        if (p > 0)
            __syncthreads();  // every thread has stored the previous part
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const unsigned c = col0 + u * TILE_DIM + threadIdx.x;
#pragma unroll
            for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
                const unsigned r = row0 + threadIdx.y + j;
                if (r < R && c < C)
                    tile[u][threadIdx.y + j][threadIdx.x] = in[((size_t)r * ld + c) * PARTS + p];
            }
        }
        __syncthreads();

        // Output element (orow, ocol) = input (ocol, orow): orow runs over the tile's input
        // columns, ocol over its input rows.
        const unsigned ocol = row0 + threadIdx.x;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
                const unsigned orow = col0 + u * TILE_DIM + threadIdx.y + j;
                if (orow < C && ocol < R)
                    out[((size_t)orow * R + ocol) * PARTS + p] = tile[u][threadIdx.x][threadIdx.y + j];
            }
        }
    }
}
