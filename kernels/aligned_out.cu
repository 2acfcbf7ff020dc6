// Shared-memory transpose whose output row segments start on 32-byte sector boundaries, for rows
// misaligned on both sides (smem_aligned_out).
//
// In the padded-tile transpose (smem.cu), output row k of a tile is out + (col0 + k) * rows + row0:
// when rows is not a multiple of 32 / itemsize, each such segment starts part-way into a 32-byte
// sector and ends part-way into another, so every warp store touches one sector more than it fills
// and each edge sector is written in two halves by two blocks, at different times. On the H100 that
// costs the transpose of rows odd on both sides 10 to 20 points of memcpy against rows odd on the
// input side only (float32 12345x6789: 76.5 %; 5000x7001, whose output rows are aligned: 94.4 %).
//
// Here the tile is skewed along the output rows instead: output row c's segment of tile row t is
// elements [t * TILE_DIM - m_c, (t + 1) * TILE_DIM - m_c), m_c = how many elements row c's first
// element lies past a 32-byte boundary (SHIFT = 32 / itemsize elements a sector, m_c < SHIFT). Every
// segment then covers whole sectors (but the matrix's first and last), and the segments of a row
// partition it: tile rows t = 0 .. cdiv(rows + SHIFT - 1, TILE_DIM) - 1. The block holds input rows
// t * TILE_DIM - SHIFT .. (t + 1) * TILE_DIM - 1 (TILE_DIM + SHIFT rows, SHIFT more than it writes;
// their neighbours read them too, so the extra reads are mostly L2 hits), read with coalesced row
// loads as smem.cu does; output element (c, r) comes from tile row r - (t * TILE_DIM - SHIFT).
//
// Elements are moved as words of their size, 16-byte ones as two 8-byte parts (words.cuh); batches
// (blockIdx.z) and row-pitched input views (ld) as smem.cu; the tile is dynamic shared memory of
// (TILE_DIM + SHIFT) x (TILE_DIM + IPAD) parts (the kernel file's [launch] shared).
#include "dynamic_shared.cuh"
#include "words.cuh"

#if COLUMNWISE || UNROLL != 1 || GROUP
#error "smem_aligned_out reads rows, one tile per block: COLUMNWISE=0, UNROLL=1, GROUP=0"
#endif

namespace aligned_out {
constexpr unsigned ES = sizeof(elem_t);
constexpr unsigned SHIFT = 32 / ES;                // elements of a 32-byte sector (2 .. 32)
constexpr unsigned TILE_ROWS = TILE_DIM + SHIFT;  // input rows a block holds
static_assert(TILE_DIM % SHIFT == 0, "TILE_DIM must be a multiple of 32 / sizeof(element)");
}  // namespace aligned_out

extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
    transpose_aligned_out(elem_t *__restrict__ out_, const elem_t *__restrict__ in_, int rows, int cols, long long ld_,
                          long long batch_stride)
{
    using namespace aligned_out;
    // tile[i][k] holds part p of input (base + i, col0 + k), base = row0 - SHIFT
    DYNAMIC_SHARED(smem_bytes_);
    part_t(*tile)[TILE_DIM + IPAD] = reinterpret_cast<part_t(*)[TILE_DIM + IPAD]>(smem_bytes_);
    const unsigned R = rows, C = cols;
    const size_t ld = ld_;
    const elem_t *out_first = out_ + (size_t)blockIdx.z * R * C;  // matrix z's first element
    part_t *__restrict__ out = reinterpret_cast<part_t *>(out_) + (size_t)blockIdx.z * R * C * PARTS;
    const part_t *__restrict__ in = reinterpret_cast<const part_t *>(in_) + (size_t)blockIdx.z * batch_stride * PARTS;
    unsigned row0, col0;
    tile_origin(blockIdx.x, R + SHIFT - 1, C, row0, col0);  // row0 = t * TILE_DIM
    const long long base = (long long)row0 - SHIFT;

#pragma unroll
    for (int p = 0; p < PARTS; ++p) {
        if (p > 0)
            __syncthreads();  // every thread has stored the previous part
        const unsigned c = col0 + threadIdx.x;
#pragma unroll
        for (unsigned j = 0; j < TILE_ROWS; j += BLOCK_ROWS) {
            const unsigned i = threadIdx.y + j;
            const long long r = base + i;
            if (i < TILE_ROWS && r >= 0 && r < (long long)R && c < C)
                tile[i][threadIdx.x] = in[((size_t)r * ld + c) * PARTS + p];
        }
        __syncthreads();

        // Output row oc (input column col0 + threadIdx.y + j): its segment of this tile row starts
        // m elements before row0, on a sector boundary.
#pragma unroll
        for (unsigned j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
            const unsigned oc = col0 + threadIdx.y + j;
            if (oc >= C)
                continue;
            const unsigned m = (unsigned)(reinterpret_cast<size_t>(out_first + (size_t)oc * R) % 32) / ES;
            const long long r = (long long)row0 - m + threadIdx.x;
            if (r >= 0 && r < (long long)R)
                out[((size_t)oc * R + r) * PARTS + p] = tile[SHIFT - m + threadIdx.x][threadIdx.y + j];
        }
    }
}
