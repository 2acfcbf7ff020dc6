// Shared-memory transpose: a block reads its tiles with coalesced row loads into shared
// memory, then writes each transposed tile with coalesced row stores. With IPAD = 0 the
// column reads of a tile hit one bank per warp (bank conflicts); IPAD > 0 pads each tile
// row so consecutive rows start in different banks. A block moves UNROLL tiles that lie
// side by side along the input rows (smem, smem_pad: UNROLL 1; smem_unroll_pad: tunable).
// Elements are moved as words of their size; 16-byte ones as two 8-byte parts, one pass
// each (words.cuh: part_t, PARTS), so the tile never outgrows one of 8-byte elements.
// Batches (blockIdx.z) and row-pitched input views (ld): words.cuh.
// The tiles are dynamic shared memory (the kernel files' shared = UNROLL * TILE_DIM * (TILE_DIM + IPAD)
// * part size), so that a 128 x 128 tile (64 KiB of 4-byte elements) may exceed the 48 KiB static
// limit: 128-element row segments cut the share of partly used 32-byte sectors where rows are
// misaligned on both sides (9 sectors per 8 of data at 64 float32 elements, 17 per 16 at 128).
// __launch_bounds__ keeps every block launchable: a 128 x 8 block of 16-byte elements would
// otherwise take more registers than 1024 threads may have.
#include "dynamic_shared.cuh"
#include "words.cuh"

#if COLUMNWISE
#error "the shared-memory transpose reads rows: COLUMNWISE must be 0"
#endif

extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
    transpose_smem(elem_t *__restrict__ out_, const elem_t *__restrict__ in_, int rows, int cols, long long ld_,
                   long long batch_stride)
{
    // tile[u][i][k] holds part p of input (row0 + i, col0 + u * TILE_DIM + k)
    DYNAMIC_SHARED(smem_bytes_);
    part_t(*tile)[TILE_DIM][TILE_DIM + IPAD] = reinterpret_cast<part_t(*)[TILE_DIM][TILE_DIM + IPAD]>(smem_bytes_);
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
