// Shared-memory transpose of 1- and 2-byte elements whose output row segments start on an
// OUT_ALIGN-byte boundary (smem_bytes_aligned_out): every store of an interior tile is a whole,
// aligned 4-byte word, and no output word (OUT_ALIGN = 4) or sector (OUT_ALIGN = 32) is split
// between two blocks. smem_bytes (bytes_realign.cu) writes each output row's segment from wherever
// it begins: the segment's first and last words are partial, written element by element by one
// lane while its warp waits, and on the H100 that kernel issued about 170 instructions per word
// moved (10007 x 10009 uint8: 85 % of issue slots busy at 31 % of DRAM bandwidth).
//
// A tile is SIDE x SIDE elements (SIDE = TILE_BYTES / itemsize), rows row0.., columns col0...
// Output row k of the tile (input column col0 + k) takes input rows [row0 + d_k, row0 + SIDE +
// d_k), where d_k (elements, 0 <= d_k < OUT_ALIGN / itemsize) moves the segment's start in the
// output to the next OUT_ALIGN-byte boundary; TILE_BYTES is a multiple of OUT_ALIGN, so d_k is
// the same for the next tile down and the segments of the tiles of one output row meet without a
// gap or overlap. The first tile row starts at row 0 and the last ends at `rows` (their ends are
// written element by element). As in smem_aligned_out (aligned_out.cu), the tile therefore loads
// SIDE + OUT_ALIGN / itemsize input rows.
//
// Three passes, each over every thread of the block, separated by __syncthreads:
//  1. Load: input row row0 + i as its NW + 1 window words: 4-byte aligned words from the one at or
//     before column col0 (it starts r_i bytes before it). Whole words where they lie inside the
//     view's span (first to last element); element by element at its ends, so no byte outside
//     the span is read. One coalesced 32-bit load per word, all of a thread's issued first.
//  2. Realign and transpose: K = 4 / itemsize rows x one word (K x K elements): each row's word is
//     two window words funnel-shifted by r_i bytes (SHF), the block transposed by byte permutes
//     (PRMT, 8 for 4 x 4 bytes), giving word g of columns K w .. K w + K - 1 in column-major
//     order: rows K g .. K g + K - 1 of that column.
//  3. Store: word x of output row k is 4 bytes of column k from row d_k + 4 x / itemsize: two
//     column words funnel-shifted by (d_k * itemsize) % 4 bytes; one aligned 32-bit store.
//
// Shared memory: the window words (rows x RS = NW + 1 words) and the columns (SIDE x TS words,
// word 0 of each a guard for the first tile row's head). Pass 2's lanes cover K words x 32 / K
// row groups of one warp: RS = 1 (mod 32 / K) and K TS = 32 / K (mod 32) make its loads and
// stores free of bank conflicts; passes 1 and 3 touch consecutive words.
//
// Views and batches: input rows ld >= cols elements apart, matrices batch_stride apart, one per
// blockIdx.z; contiguous cols x rows outputs. Elements are moved as raw bytes (bit-exact for every
// 1- and 2-byte dtype); any rows x cols >= 1; DIAGONAL=1 takes the tiles in diagonal order.
// Method: the sector-aligned output tile of aligned_out.cu with the word moves and byte-permute
// block transpose of bytes_realign.cu; the column-major staging is ours.
#include "byte_words.cuh"

#ifndef TILE_BYTES
#define TILE_BYTES 128
#endif
#ifndef OUT_ALIGN
#define OUT_ALIGN 32
#endif

#if COLUMNWISE || UNROLL != 1 || GROUP
#error "the byte transpose reads rows, one tile per block: COLUMNWISE=0, UNROLL=1, GROUP=0"
#endif
#if TILE_BYTES != 64 && TILE_BYTES != 128
#error "TILE_BYTES must be 64 or 128"
#endif
#if OUT_ALIGN != 4 && OUT_ALIGN != 32
#error "OUT_ALIGN must be 4 (a word) or 32 (a sector)"
#endif
#if BLOCK_ROWS < 1 || BLOCK_ROWS > 32 || (TILE_BYTES / 4 * BLOCK_ROWS) % 32 != 0
#error "BLOCK_ROWS must be 1..32 with TILE_BYTES / 4 x BLOCK_ROWS threads a multiple of 32"
#endif

namespace {

constexpr unsigned NW = TILE_BYTES / 4;          // words per tile row
constexpr unsigned SIDE = TILE_BYTES / ES;       // tile side, elements
constexpr unsigned LR = SIDE + OUT_ALIGN / ES;   // input rows a tile loads
constexpr unsigned G = LR / K;                   // groups of K rows: words per column
constexpr unsigned RS = NW + 1;                  // window words per input row
constexpr unsigned THREADS = NW * BLOCK_ROWS;

constexpr unsigned column_stride()  // >= G + 2 words (a guard word before, one read past the last)
{
    unsigned t = G + 2;
    while ((K * t) % 32 != 32 / K)
        ++t;
    return t;
}
constexpr unsigned TS = column_stride();
constexpr unsigned LOADS = (LR + BLOCK_ROWS - 1) / BLOCK_ROWS;              // pass 1 rows a thread
constexpr unsigned MID_ITEMS = 32 * (NW / K) * ((G + 32 / K - 1) / (32 / K));
constexpr unsigned MIDS = (MID_ITEMS + THREADS - 1) / THREADS;            // pass 2 items a thread
constexpr unsigned FULL = 0xffffffffu;
static_assert(RS % (32 / K) == 1 && (K * TS) % 32 == 32 / K, "bank-conflict-free strides");
static_assert((LR * RS + SIDE * TS) * 4 <= 49152, "the shared tiles exceed 48 KiB");

// Window word w of a row whose tile part starts at `first`, r = first % 4: bytes [4w - r, 4w - r +
// 4) of the tile row. Whole inside the view's span [in, end); else only bytes [0, width) of the
// tile row, element by element.
__device__ __forceinline__ word32 load_window(const unsigned char *first, unsigned r, unsigned w,
                                              const unsigned char *in, const unsigned char *end, unsigned width)
{
    const size_t p = (size_t)first - r + 4 * w;  // 4-byte aligned
    if (p >= (size_t)in && p + 4 <= (size_t)end)
        return __ldg(reinterpret_cast<const word32 *>(p));
    word32 v = 0;
#pragma unroll
    for (unsigned e = 0; e < 4; e += ES) {
        const int b = (int)(4 * w + e) - (int)r;
        if (b >= 0 && b < (int)width)
            v |= (word32)*reinterpret_cast<const word_t *>(first + b) << (8 * e);
    }
    return v;
}

// One tile. INTERIOR: every input row the tile loads is inside the matrix, every window word inside
// the view's span, the tile whole and not in the first tile row (each output row's segment is NW
// aligned words from d_k): the checks of the ends compile away. Otherwise each word is checked.
template <bool INTERIOR>
__device__ __forceinline__ void move_tile(unsigned char *__restrict__ out, const unsigned char *__restrict__ in,
                                          unsigned R, unsigned C, size_t ldb, unsigned row0, unsigned col0,
                                          word32 *window, word32 *column)
{
    const unsigned width = INTERIOR ? TILE_BYTES : (C - col0 < SIDE ? C - col0 : SIDE) * ES;  // bytes
    const unsigned height = INTERIOR ? LR : (R - row0 < LR ? R - row0 : LR);               // input rows
    const unsigned char *end = in + (size_t)(R - 1) * ldb + (size_t)C * ES;  // one past the view's last element
    const unsigned char *corner = in + (size_t)row0 * ldb + col0 * ES;     // element (row0, col0)
    const unsigned x = threadIdx.x;

    // 1. Input row i = threadIdx.y + j BLOCK_ROWS: lane x loads window word x (lane NW - 1 also word
    // NW), takes word x + 1 from the next lane and stores word x of the row realigned (SHFL + SHF).
    word32 v[LOADS], extra[LOADS];
#pragma unroll
    for (unsigned j = 0; j < LOADS; ++j) {
        const unsigned i = threadIdx.y + j * BLOCK_ROWS;
        v[j] = extra[j] = 0;
        if (i < height) {
            const unsigned char *first = corner + i * ldb;
            const unsigned r = (unsigned)(size_t)first & 3;
            if (INTERIOR) {
                v[j] = __ldg(reinterpret_cast<const word32 *>(first - r) + x);
                if (x == NW - 1 && r)
                    extra[j] = __ldg(reinterpret_cast<const word32 *>(first - r) + NW);
            } else {
                if (4 * x < r + width)
                    v[j] = load_window(first, r, x, in, end, width);
                if (x == NW - 1 && r && 4 * NW < r + width)
                    extra[j] = load_window(first, r, NW, in, end, width);
            }
        }
    }
#pragma unroll
    for (unsigned j = 0; j < LOADS; ++j) {  // every lane shuffles (rows past the tile too, never stored)
        const unsigned i = threadIdx.y + j * BLOCK_ROWS;
        const unsigned r = ((unsigned)(size_t)corner + i * (unsigned)ldb) & 3;
        word32 next = __shfl_down_sync(FULL, v[j], 1, NW);
        next = x == NW - 1 ? extra[j] : next;
        if (i < LR)
            window[i * RS + x] = __funnelshift_r(v[j], next, 8 * r);  // r = 0: v[j]
    }
    __syncthreads();

    // 2. Transpose K x K blocks (K rows of group g, word w) into the columns. A warp covers K words
    // (lane % K) of 32 / K row groups (lane / K).
    const unsigned tid = threadIdx.y * NW + x;
#pragma unroll
    for (unsigned j = 0; j < MIDS; ++j) {
        const unsigned f = tid + j * THREADS, q = f / 32;
        const unsigned w = f % K + K * (q % (NW / K)), g = (f / K) % (32 / K) + (32 / K) * (q / (NW / K));
        if (f >= MID_ITEMS || g >= G)
            continue;
        word32 a[K], o[K];
#pragma unroll
        for (unsigned m = 0; m < K; ++m)
            a[m] = window[(K * g + m) * RS + w];
        transpose_block(a, o);
#pragma unroll
        for (unsigned e = 0; e < K; ++e)
            column[(K * w + e) * TS + 1 + g] = o[e];
    }
    __syncthreads();

    // 3. Output row k: bytes [lo, hi) past s, the place of input row row0 in it; aligned words from
    // the one holding byte lo. Interior tiles: lo = d_k (s + lo is OUT_ALIGN-aligned), NW words.
    unsigned char *tile_out = out + ((size_t)col0 * R + row0) * ES;
#pragma unroll
    for (unsigned j = 0; j < SIDE / BLOCK_ROWS; ++j) {
        const unsigned k = threadIdx.y + j * BLOCK_ROWS;
        if (!INTERIOR && k * ES >= width)
            break;
        unsigned char *s = tile_out + (size_t)k * R * ES;
        const unsigned d = (0u - (unsigned)(size_t)s) & (OUT_ALIGN - 1);
        const word32 *col = column + k * TS;
        if (INTERIOR) {
            const unsigned b0 = d + 4 * x, at = (b0 >> 2) + 1;
            *reinterpret_cast<word32 *>(s + b0) = __funnelshift_r(col[at], col[at + 1], 8 * (b0 & 3));
            continue;
        }
        const unsigned lo = row0 ? d : 0, hi = (R - row0) * ES < TILE_BYTES + d ? (R - row0) * ES : TILE_BYTES + d;
        if (hi <= lo)
            continue;  // the last tile row, whose rows all went to the one above
        const int head = (int)((unsigned)(size_t)(s + lo) & 3);  // 0 but where row0 = 0
        const unsigned n = (hi - lo + head + 3) / 4;
        for (unsigned xx = x; xx < n; xx += NW) {
            const int b0 = (int)lo - head + 4 * (int)xx;  // >= -3: bytes of column k from row row0
            const int at = (b0 >> 2) + 1;                  // floor(b0 / 4) + the guard word
            const word32 word = __funnelshift_r(col[at], col[at + 1], 8 * (b0 & 3));
            if (b0 >= (int)lo && b0 + 4 <= (int)hi) {
                *reinterpret_cast<word32 *>(s + b0) = word;
            } else {  // the ends of the first and last tile rows
#pragma unroll
                for (unsigned e = 0; e < 4; e += ES) {
                    const int b = b0 + (int)e;
                    if (b >= (int)lo && b < (int)hi)
                        *reinterpret_cast<word_t *>(s + b) = (word_t)(word >> (8 * e));
                }
            }
        }
    }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS, 1536 / THREADS) transpose_bytes_aligned_out(elem_t *__restrict__ out_,
                                                                                  const elem_t *__restrict__ in_,
                                                                                  int rows, int cols, long long ld_,
                                                                                  long long batch_stride)
{
    __align__(16) __shared__ word32 window[LR * RS];
    __align__(16) __shared__ word32 column[SIDE * TS];
    const unsigned R = rows, C = cols;
    const size_t ldb = (size_t)ld_ * ES;  // row pitch, bytes
    unsigned char *out = reinterpret_cast<unsigned char *>(out_) + (size_t)blockIdx.z * R * C * ES;
    const unsigned char *in = reinterpret_cast<const unsigned char *>(in_) + (size_t)blockIdx.z * (size_t)batch_stride * ES;
    unsigned row0, col0;
    side_tile_origin(blockIdx.x, R, C, SIDE, row0, col0);
    // interior: rows row0 .. row0 + LR - 1 exist, and the window words of the tile's rows (up to 4 bytes
    // past its last column) lie before the row's end; row0 > 0, so none lies before the view's start
    if (row0 > 0 && row0 + LR <= R && (col0 + SIDE) * ES + 4 <= C * ES)
        move_tile<true>(out, in, R, C, ldb, row0, col0, window, column);
    else
        move_tile<false>(out, in, R, C, ldb, row0, col0, window, column);
}
