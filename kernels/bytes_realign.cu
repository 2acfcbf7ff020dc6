// Shared-memory transpose of 1- and 2-byte elements for any row length, of row-pitched views
// and batches (ld, batch_stride, one matrix per blockIdx.z), moving 4-byte words on both
// sides: global loads and stores, shared-memory stores and loads are all whole words (not one
// element at a time), so a byte matrix costs about the instructions of a float32 one per byte
// moved.
//
// A tile is SIDE x SIDE elements, TILE_BYTES bytes a side (SIDE = TILE_BYTES / itemsize);
// a tile row is NW = TILE_BYTES / 4 words. A block is NW x BLOCK_ROWS threads: the NW threads
// of a tile row are NW consecutive lanes of one warp (TILE_BYTES is 64 or 128).
//
// Loads: tile row i begins r bytes past a 4-byte boundary (0 <= r < 4, r per row). Lane x
// loads aligned word x of the row's window (the row's first byte - r + 4x), lane NW - 1
// also word NW when r > 0; lane x takes word x + 1 from lane x + 1 (__shfl_down_sync) and
// funnel-shifts the pair right by 8r bits: word x of the tile row, realigned in registers
// (one SHFL and one SHF per word). The tile row is stored unshifted, one word per lane.
// A window word that would read outside the view's span is read element by element (only
// the elements of the tile row), so no byte outside [in, in + (rows - 1) * ld + cols) is read
// (the span of the matrix's elements, first to last); words wholly outside the tile's width
// are not read. A whole word may hold bytes of the row pitch's padding between two rows: they
// lie inside the span, in the caller's allocation, and are shifted out.
//
// Transpose in registers: K = 4 / itemsize. Lane x of word column w reads word w of the K
// tile rows K x .. K x + K - 1 (K 32-bit shared loads) and transposes the K x K block of
// elements with byte permutes (__byte_perm, PRMT): 8 for a 4 x 4 block of bytes, 2 for a
// 2 x 2 block of halves. Its K words are word x of output rows K w .. K w + K - 1 of the
// tile (output row k holds input column col0 + k, elements of tile rows 0 .. SIDE - 1).
//
// Stores: the tile's part of output row k begins r' bytes past a 4-byte boundary; lane x
// writes aligned word x, whose bytes are the last r' of the row's word x - 1 (from lane
// x - 1, __shfl_sync) and the first 4 - r' of word x: one SHFL, one SHF and one 32-bit store
// a word. Lane 0's neighbour is lane NW - 1 (the shuffle wraps), so lane 0's word holds the
// row's tail (its first r' bytes, which go after word NW - 1) and head (the other 4 - r');
// it writes them element by element, as every lane does for a word that crosses the edge
// of a partial tile. Nothing outside [out, out + rows * cols) is written.
//
// Views and batches: input rows are ld >= cols elements apart (a row-pitched view; each row's
// r comes from its own address, so it changes by ld * itemsize mod 4 from row to row),
// matrices of a batch batch_stride elements apart, one per blockIdx.z; outputs are contiguous
// cols x rows matrices, rows * cols elements apart. The bounds above are those of the
// blockIdx.z-th matrix: its view's span and its output.
//
// Shared layout: tile row i is NW words at (i / K) * (K * NW + SKEW) + (i % K) * NW, with
// SKEW = 32 / NW words of padding per K rows. Loads store a row's NW words across NW lanes
// (consecutive banks); the transpose reads row K x + m, word w across lanes x: bank
// x * SKEW + m * NW + w mod 32, distinct over the 32 lanes of a warp (with NW = 16 a warp
// holds two word columns w, w + 1 and SKEW = 2 keeps them apart): no bank conflicts.
//
// Per 16 bytes moved (per thread, 1-byte elements): 4 LDG.32, 4 SHFL, 4 SHF, 4 STS.32; 4
// LDS.32, 8 PRMT; 4 SHFL, 4 SHF, 4 STG.32. smem_vec_realign gathers each element with its
// own shared load (16 LDS.U8 and their index arithmetic per 16 bytes).
//
// Elements are moved as raw bytes (bit-exact for every 1- and 2-byte dtype); any rows x
// cols >= 1 (edge tiles bounds-checked); STREAMING=1 uses evict-first cache hints;
// DIAGONAL=1 takes the tiles in diagonal order (common.cuh's order for a SIDE x SIDE tile).
#include "byte_words.cuh"

#ifndef TILE_BYTES
#define TILE_BYTES 128
#endif
#ifndef STREAMING
#define STREAMING 0
#endif

#if COLUMNWISE || UNROLL != 1 || GROUP
#error "the byte transpose reads rows, one tile per block: COLUMNWISE=0, UNROLL=1, GROUP=0"
#endif
#if TILE_BYTES != 64 && TILE_BYTES != 128
#error "TILE_BYTES must be 64 or 128 (a tile row is 16 or 32 lanes of one warp)"
#endif
#if BLOCK_ROWS < 1 || (TILE_BYTES / 4) % BLOCK_ROWS != 0
#error "BLOCK_ROWS must divide TILE_BYTES / 4"
#endif
#if STREAMING != 0 && STREAMING != 1
#error "STREAMING must be 0 or 1"
#endif

namespace {

constexpr unsigned NW = TILE_BYTES / 4;               // words per tile row: lanes per tile row
constexpr unsigned SIDE = TILE_BYTES / ES;            // tile side, elements
constexpr unsigned SKEW = 32 / NW;                    // padding words per K tile rows
constexpr unsigned GROUP_WORDS = K * NW + SKEW;
constexpr unsigned SMEM_WORDS = (SIDE / K) * GROUP_WORDS;
constexpr unsigned LOADS = SIDE / BLOCK_ROWS;         // tile rows a thread loads
constexpr unsigned STORES = NW / BLOCK_ROWS;          // word columns a thread transposes
constexpr unsigned FULL = 0xffffffffu;
static_assert(SIDE % BLOCK_ROWS == 0 && NW % BLOCK_ROWS == 0, "BLOCK_ROWS must divide TILE_BYTES / 4");
static_assert(SMEM_WORDS * 4 <= 49152, "the shared tile exceeds 48 KiB");

__device__ __forceinline__ unsigned row_word(unsigned i)  // first word of tile row i
{
    return (i / K) * GROUP_WORDS + (i % K) * NW;
}

__device__ __forceinline__ word32 load_word(const unsigned char *p)
{
#if STREAMING
    return __ldcs(reinterpret_cast<const word32 *>(p));
#else
    return __ldg(reinterpret_cast<const word32 *>(p));
#endif
}

__device__ __forceinline__ void store_word(unsigned char *p, word32 v)
{
#if STREAMING
    __stcs(reinterpret_cast<word32 *>(p), v);
#else
    *reinterpret_cast<word32 *>(p) = v;
#endif
}

// Window word w of a tile row: bytes [4w - r, 4w - r + 4) of the row, whose first tile byte is
// `first` (r = its offset past a 4-byte boundary). A word inside the view's span [in, end) is
// loaded whole; one crossing its start or end, element by element (only bytes [0, width) of
// the tile row).
__device__ __forceinline__ word32 load_window(const unsigned char *first, unsigned r, unsigned w,
                                              const unsigned char *in, const unsigned char *end, unsigned width)
{
    const size_t p = (size_t)first - r + 4 * w;  // 4-byte aligned
    if (p >= (size_t)in && p + 4 <= (size_t)end)
        return load_word(reinterpret_cast<const unsigned char *>(p));
    word32 v = 0;
#pragma unroll
    for (unsigned e = 0; e < 4; e += ES) {
        const int b = (int)(4 * w + e) - (int)r;  // byte of the tile row
        if (b >= 0 && b < (int)width)
            v |= (word32)*reinterpret_cast<const word_t *>(first + b) << (8 * e);
    }
    return v;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(NW * BLOCK_ROWS) transpose_bytes_realign(elem_t *__restrict__ out_,
                                                                                      const elem_t *__restrict__ in_,
                                                                                      int rows, int cols,
                                                                                      long long ld_,
                                                                                      long long batch_stride)
{
    __align__(16) __shared__ word32 tile[SMEM_WORDS];
    const unsigned R = rows, C = cols;
    const size_t ld = ld_;
    unsigned char *__restrict__ out = reinterpret_cast<unsigned char *>(out_) + (size_t)blockIdx.z * R * C * ES;
    const unsigned char *__restrict__ in =
        reinterpret_cast<const unsigned char *>(in_) + (size_t)blockIdx.z * (size_t)batch_stride * ES;
    unsigned row0, col0;
    side_tile_origin(blockIdx.x, R, C, SIDE, row0, col0);
    // the tile's extent inside the matrix, bytes
    const unsigned height = (R - row0 < SIDE ? R - row0 : SIDE) * ES, width = (C - col0 < SIDE ? C - col0 : SIDE) * ES;
    const unsigned char *end = in + ((size_t)(R - 1) * ld + C) * ES;  // one past the view's last element
    const unsigned x = threadIdx.x;

    // Loads: every window word of the tile rows this thread owns, all issued before use.
    word32 v[LOADS], extra[LOADS];
#pragma unroll
    for (unsigned j = 0; j < LOADS; ++j) {
        const unsigned i = threadIdx.y + j * BLOCK_ROWS;
        v[j] = extra[j] = 0;
        if (i * ES < height) {
            const unsigned char *first = in + ((size_t)(row0 + i) * ld + col0) * ES;
            const unsigned r = (size_t)first % 4;
            if (4 * x < r + width)  // the word holds a byte of the tile row
                v[j] = load_window(first, r, x, in, end, width);
            if (x == NW - 1 && r > 0 && 4 * NW < r + width)
                extra[j] = load_window(first, r, NW, in, end, width);
        }
    }
    // Realign: word x of tile row i is window words x and x + 1 shifted right by r bytes.
    // Every lane shuffles (rows past the matrix too: their words are never stored).
#pragma unroll
    for (unsigned j = 0; j < LOADS; ++j) {
        const unsigned i = threadIdx.y + j * BLOCK_ROWS;
        const unsigned r = ((size_t)in + ((size_t)(row0 + i) * ld + col0) * ES) % 4;
        word32 next = __shfl_down_sync(FULL, v[j], 1, NW);
        next = x == NW - 1 ? extra[j] : next;
        tile[row_word(i) + x] = __funnelshift_r(v[j], next, 8 * r);  // r = 0: v[j]
    }
    __syncthreads();

    // Stores: word column w = output rows K w .. K w + K - 1 of the tile; lane x holds word x
    // of each (tile rows K x .. K x + K - 1).
#pragma unroll
    for (unsigned j = 0; j < STORES; ++j) {
        const unsigned w = threadIdx.y + j * BLOCK_ROWS;
        word32 a[K], o[K];
#pragma unroll
        for (unsigned m = 0; m < K; ++m)
            a[m] = tile[row_word(K * x + m) + w];
        transpose_block(a, o);
#pragma unroll
        for (unsigned e = 0; e < K; ++e) {
            const unsigned k = K * w + e;  // output row of the tile: input column col0 + k
            const word32 prev = __shfl_sync(FULL, o[e], (x + NW - 1) % NW, NW);  // lane 0: word NW - 1
            if (k * ES >= width)
                continue;
            unsigned char *first = out + ((size_t)(col0 + k) * R + row0) * ES;
            const unsigned r = (size_t)first % 4;
            // aligned word x: bytes [4x - r, 4x - r + 4) of the output row's part in the tile
            const word32 word = r ? __funnelshift_r(prev, o[e], 32 - 8 * r) : o[e];
            const int b0 = (int)(4 * x) - (int)r;
            if (b0 >= 0 && b0 + 4 <= (int)height) {
                store_word(first + b0, word);
            } else {  // the head and tail (lane 0), or the edge of a partial tile
#pragma unroll
                for (unsigned e2 = 0; e2 < 4; e2 += ES) {
                    int b = b0 + (int)e2;
                    b += b < 0 ? (int)TILE_BYTES : 0;  // lane 0's first r bytes: the tail, after word NW - 1
                    if (b < (int)height)
                        *reinterpret_cast<word_t *>(first + b) = (word_t)(word >> (8 * e2));
                }
            }
        }
    }
}
