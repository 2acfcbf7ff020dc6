// Transpose of skinny matrices (one dimension short, e.g. 7 x 1000003 or 65536 x 33), of row-pitched
// views and batches (ld, batch_stride, one matrix per blockIdx.z), any rows x cols >= 1, elements of
// 1, 2, 4 or 8 bytes.
//
// A square-tile transpose of a 7 x N matrix wastes most of each tile (7 of 64 rows) and moves
// 7-element output rows element by element. Here the short dimension n = min(rows, cols) is taken
// whole: a block moves a chunk of W consecutive positions along the long dimension L of all n
// short rows (a band of NB = min(n, NBMAX) of them for a wide matrix, which only a search of a
// square shape meets). The two sides of a chunk are then:
//   * the "rows side": n rows of L elements, of which the chunk is a segment of W elements of
//     each row (the input when rows <= cols, the output otherwise);
//   * the "packed side": L rows of n elements, of which the chunk is W * n consecutive elements,
//     one contiguous run (the output when rows <= cols, the input otherwise).
// Both are moved with 16-byte vectors at 16-byte-aligned addresses, whatever the row lengths:
//   * rows side: a row segment begins s elements past a 16-byte boundary (s per row); its aligned
//     window of W / VEC + 1 vectors is copied whole into tile row r (LDS/STS.128 against
//     LDG/STG.128), so that the segment sits s elements into the tile row;
//   * packed side: the run begins so elements past a boundary; its aligned window is copied whole
//     into the stage buffer, the run so elements into it.
// A window vector that reaches outside the matrix's span (first to last element of the view) is
// read element by element; one that holds elements of the neighbouring chunks is written element by
// element (only this chunk's): no byte outside [out, out + rows * cols) is written and none outside
// the view's span is read.
// Between the two, one element moves per lane per step between the tile (tile[r][s_r + l]) and the
// stage (stage[so + l * NB + r]): warps walk pieces of G = 32 * U consecutive positions l of one
// row, U elements a lane (U = 4 / itemsize for 1- and 2-byte elements, else 1), so that the tile
// side is conflict-free (consecutive lanes, consecutive elements of a row) and the stage side is
// lanes NB elements apart. Rows of the tile are W + VEC elements apart: W * itemsize is a multiple
// of 128 bytes, so consecutive rows start 16 bytes (4 banks) apart.
//
// Per element: one shared store and one shared load of the element in the middle step; the global
// accesses and the other shared accesses are 16-byte vectors.
//
// Geometry (kernel file, same formula; BLOCK_BYTES = 1024 * BLOCK_KIB): NB = min(n, 64, BLOCK_BYTES / (G * itemsize)),
// W = (BLOCK_BYTES / (NB * G * itemsize)) * G, so that NB * W * itemsize <= BLOCK_BYTES; the grid
// is cdiv(L, W) chunks times cdiv(n, NB) bands (one band whenever n <= NBMAX). A block is THREADS
// threads. Where the packed side is not one run (several bands, or the input of a tall matrix,
// rows > cols, with a row pitch other than cols), it is moved element by element (consecutive
// threads on consecutive elements).
#include "words.cuh"

#ifndef BLOCK_KIB
#define BLOCK_KIB 8
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef STREAMING
#define STREAMING 0
#endif

#if COLUMNWISE || UNROLL != 1 || GROUP || DIAGONAL
#error "the skinny transpose takes chunks in order: COLUMNWISE=0, UNROLL=1, GROUP=0, DIAGONAL=0"
#endif
#if BLOCK_KIB < 1 || BLOCK_KIB > 16
#error "BLOCK_KIB must be 1..16 (2 * BLOCK_KIB KiB of static shared memory)"
#endif
#if THREADS < 32 || THREADS % 32 != 0 || THREADS > 1024
#error "THREADS must be a multiple of 32, at most 1024"
#endif
#if STREAMING != 0 && STREAMING != 1
#error "STREAMING must be 0 or 1"
#endif

namespace skinny {

constexpr unsigned BLOCK_BYTES = 1024 * BLOCK_KIB;  // the most data of one block
constexpr unsigned IS = sizeof(word_t);
static_assert(IS <= 8, "the skinny transpose takes elements of 1, 2, 4 or 8 bytes");
constexpr unsigned VEC = 16 / IS;                   // elements per 16-byte vector
constexpr unsigned U = IS >= 4 ? 1 : 4 / IS;        // elements per lane per piece
constexpr unsigned G = 32 * U;                      // a piece: G consecutive positions of one row
constexpr unsigned NB_FIT = BLOCK_BYTES / (G * IS);
constexpr unsigned NBMAX = NB_FIT < 64 ? NB_FIT : 64;
constexpr unsigned DATA = BLOCK_BYTES / IS;         // elements of one chunk, at most
constexpr unsigned WARPS = THREADS / 32;
static_assert(NBMAX >= 1, "BLOCK_BYTES must hold one piece of a row (G * itemsize bytes)");

union vec_t {
    uint4 raw;
    word_t e[VEC];
};

__device__ __forceinline__ uint4 load16(const word_t *p)
{
#if STREAMING
    return __ldcs(reinterpret_cast<const uint4 *>(p));
#else
    return __ldg(reinterpret_cast<const uint4 *>(p));
#endif
}

__device__ __forceinline__ void store16(word_t *p, uint4 v)
{
#if STREAMING
    __stcs(reinterpret_cast<uint4 *>(p), v);
#else
    *reinterpret_cast<uint4 *>(p) = v;
#endif
}

// Elements a pointer lies past a 16-byte boundary (element pointers are itemsize-aligned).
__device__ __forceinline__ unsigned shift_of(const word_t *p)
{
    return (unsigned)(reinterpret_cast<size_t>(p) & 15) / IS;
}

// A THREADS- (or WARPS-) strided walk over the items (r, c) of a grid with nc columns, r-major.
struct Walk {
    unsigned r, c, dr, dc, nc;
    __device__ __forceinline__ Walk(unsigned start, unsigned step, unsigned nc_)
        : r(start / nc_), c(start % nc_), dr(step / nc_), dc(step % nc_), nc(nc_) {}
    __device__ __forceinline__ void next()
    {
        c += dc;
        r += dr;
        if (c >= nc) {
            c -= nc;
            ++r;
        }
    }
};

// One chunk: rows b0 .. b0 + nrows - 1 of the rows side (row gr at base + gr * pitch), positions
// l0 .. l0 + wlen - 1 along them.
struct Chunk {
    unsigned b0, nrows, l0, wlen, W, P;
};

// Rows side -> tile: each row's aligned window, whole vectors inside [lo, hi) (the view's span).
__device__ __forceinline__ void rows_to_tile(word_t *tile, const word_t *base, size_t pitch, const Chunk &k,
                                             const word_t *lo, const word_t *hi)
{
    const unsigned nv = k.W / VEC + 1;
    for (Walk w(threadIdx.x, THREADS, nv); w.r < k.nrows; w.next()) {
        const word_t *row = base + (size_t)(k.b0 + w.r) * pitch + k.l0;
        const int j0 = (int)(w.c * VEC) - (int)shift_of(row);  // segment index of the vector's first element
        if (j0 >= (int)k.wlen)
            continue;
        const word_t *v = row + j0;
        vec_t x;
        if (v >= lo && v + VEC <= hi) {
            x.raw = load16(v);
        } else {
            x.raw = make_uint4(0, 0, 0, 0);
#pragma unroll
            for (unsigned e = 0; e < VEC; ++e)
                if (j0 + (int)e >= 0 && j0 + (int)e < (int)k.wlen)
                    x.e[e] = row[j0 + (int)e];
        }
        *reinterpret_cast<uint4 *>(tile + w.r * k.P + w.c * VEC) = x.raw;
    }
}

// Tile -> rows side: whole vectors where all of theirs are in the segment, else element by element.
__device__ __forceinline__ void tile_to_rows(word_t *base, size_t pitch, const word_t *tile, const Chunk &k)
{
    const unsigned nv = k.W / VEC + 1;
    for (Walk w(threadIdx.x, THREADS, nv); w.r < k.nrows; w.next()) {
        word_t *row = base + (size_t)(k.b0 + w.r) * pitch + k.l0;
        const int j0 = (int)(w.c * VEC) - (int)shift_of(row);
        if (j0 >= (int)k.wlen)
            continue;
        vec_t x;
        x.raw = *reinterpret_cast<const uint4 *>(tile + w.r * k.P + w.c * VEC);
        if (j0 >= 0 && j0 + VEC <= k.wlen) {
            store16(row + j0, x.raw);
        } else {
#pragma unroll
            for (unsigned e = 0; e < VEC; ++e)
                if (j0 + (int)e >= 0 && j0 + (int)e < (int)k.wlen)
                    row[j0 + (int)e] = x.e[e];
        }
    }
}

// Packed run [run, run + count) -> stage, so = shift_of(run) elements in; whole vectors inside [lo, hi).
__device__ __forceinline__ void run_to_stage(word_t *stage, const word_t *run, unsigned count, const word_t *lo,
                                             const word_t *hi)
{
    const unsigned so = shift_of(run), nv = (so + count + VEC - 1) / VEC;
    for (unsigned k = threadIdx.x; k < nv; k += THREADS) {
        const int q0 = (int)(k * VEC) - (int)so;
        const word_t *v = run + q0;
        vec_t x;
        if (v >= lo && v + VEC <= hi) {
            x.raw = load16(v);
        } else {
            x.raw = make_uint4(0, 0, 0, 0);
#pragma unroll
            for (unsigned e = 0; e < VEC; ++e)
                if (q0 + (int)e >= 0 && q0 + (int)e < (int)count)
                    x.e[e] = run[q0 + (int)e];
        }
        *reinterpret_cast<uint4 *>(stage + k * VEC) = x.raw;
    }
}

// Stage -> packed run: whole vectors inside the run, the partial head and tail element by element.
__device__ __forceinline__ void stage_to_run(word_t *run, unsigned count, const word_t *stage)
{
    const unsigned so = shift_of(run), nv = (so + count + VEC - 1) / VEC;
    for (unsigned k = threadIdx.x; k < nv; k += THREADS) {
        const int q0 = (int)(k * VEC) - (int)so;
        vec_t x;
        x.raw = *reinterpret_cast<const uint4 *>(stage + k * VEC);
        if (q0 >= 0 && q0 + VEC <= count) {
            store16(run + q0, x.raw);
        } else {
#pragma unroll
            for (unsigned e = 0; e < VEC; ++e)
                if (q0 + (int)e >= 0 && q0 + (int)e < (int)count)
                    run[q0 + (int)e] = x.e[e];
        }
    }
}

// The middle step: tile[r][s_r + l] <-> stage[so + l * NB + r] for every r < NB, l < W (positions
// past the chunk's edge move garbage that nothing writes out). Lanes on consecutive l of one row.
template <bool TO_STAGE>
__device__ __forceinline__ void shuffle_chunk(word_t *tile, word_t *stage, unsigned so, const word_t *rows_base,
                                              size_t pitch, const Chunk &k, unsigned nb)
{
    const unsigned lane = threadIdx.x % 32;
    for (Walk w(threadIdx.x / 32, WARPS, k.W / G); w.r < nb; w.next()) {
        const unsigned s = shift_of(rows_base + (size_t)(k.b0 + w.r) * pitch + k.l0);
        const unsigned l = w.c * G + lane;
        word_t *t = tile + w.r * k.P + s + l;
        word_t *g = stage + so + l * nb + w.r;
#pragma unroll
        for (unsigned u = 0; u < U; ++u) {
            if (TO_STAGE)
                g[32 * u * nb] = t[32 * u];
            else
                t[32 * u] = g[32 * u * nb];
        }
    }
}

}  // namespace skinny

extern "C" __global__ void __launch_bounds__(THREADS) transpose_skinny(elem_t *__restrict__ out_,
                                                                        const elem_t *__restrict__ in_, int rows,
                                                                        int cols, long long ld_,
                                                                        long long batch_stride)
{
    using namespace skinny;
    __align__(16) __shared__ word_t tile[DATA + NBMAX * VEC];
    __align__(16) __shared__ word_t stage[DATA + VEC];

    const unsigned R = rows, C = cols;
    const size_t ld = ld_;
    word_t *out = reinterpret_cast<word_t *>(out_) + (size_t)blockIdx.z * R * C;
    const word_t *in = reinterpret_cast<const word_t *>(in_) + (size_t)blockIdx.z * batch_stride;
    const word_t *lo = in, *hi = in + (size_t)(R - 1) * ld + C;  // the view's span

    const bool short_rows = R <= C;  // the input is the rows side (n = R short rows)
    const unsigned n = short_rows ? R : C, L = short_rows ? C : R;
    const unsigned nb = n < NBMAX ? n : NBMAX;
    Chunk k;
    k.W = DATA / (nb * G) * G;
    k.P = k.W + VEC;
    const unsigned chunks = (L + k.W - 1) / k.W, bands = (n + nb - 1) / nb;
    if (blockIdx.x >= chunks * bands)
        return;
    k.l0 = blockIdx.x % chunks * k.W;
    k.b0 = blockIdx.x / chunks * nb;
    k.wlen = L - k.l0 < k.W ? L - k.l0 : k.W;
    k.nrows = n - k.b0 < nb ? n - k.b0 : nb;
    const unsigned count = k.wlen * k.nrows;

    if (short_rows) {
        // input rows (pitch ld) -> tile -> stage -> output rows l0 .. l0 + wlen - 1 of n elements
        rows_to_tile(tile, in, ld, k, lo, hi);
        word_t *run = out + (size_t)k.l0 * n + k.b0;
        const unsigned so = bands == 1 ? shift_of(run) : 0;
        __syncthreads();
        shuffle_chunk<true>(tile, stage, so, in, ld, k, nb);
        __syncthreads();
        if (bands == 1) {
            stage_to_run(run, count, stage);
        } else {
            for (Walk w(threadIdx.x, THREADS, k.nrows); w.r < k.wlen; w.next())
                run[(size_t)w.r * n + w.c] = stage[w.r * nb + w.c];
        }
    } else {
        // input rows l0 .. l0 + wlen - 1 of n elements (pitch ld) -> stage -> tile -> output rows (pitch R)
        const word_t *run = in + (size_t)k.l0 * ld + k.b0;
        const bool packed = bands == 1 && ld == n;
        const unsigned so = packed ? shift_of(run) : 0;
        if (packed) {
            run_to_stage(stage, run, count, lo, hi);
        } else {
            for (Walk w(threadIdx.x, THREADS, k.nrows); w.r < k.wlen; w.next())
                stage[w.r * nb + w.c] = run[(size_t)w.r * ld + w.c];
        }
        __syncthreads();
        shuffle_chunk<false>(tile, stage, so, out, R, k, nb);
        __syncthreads();
        tile_to_rows(out, R, tile, k);
    }
}
