// Vectorized shared-memory transpose for any row length: 16-byte vector accesses on both
// sides even when rows do not start on a 16-byte boundary (rows x cols with cols or rows
// not a multiple of VEC = 16 / sizeof(element), or unaligned pointers), realigning each
// row through shared memory.
//
// A tile is SIDE x SIDE elements (SIDE = TILE_DIM, doubled for 1- and 2-byte elements when
// WIDE=1, so that a tile row of bytes is a whole 128-byte line). A block is TX x BLOCK_ROWS
// threads, TX = SIDE / VEC.
//
// Loads: the SIDE elements of a tile row begin s elements past a 16-byte boundary
// (0 <= s < VEC, different per row). The row's aligned window of TX + 1 vectors covers
// them; thread x loads window vector x (thread 0 also vector TX when s > 0) with one
// 128-bit load and stores it whole into shared memory (STS.128: no per-element shared
// stores, which bound the 1- and 2-byte dtypes of smem_vec). Bytes of a window vector
// that lie outside the matrix are never loaded: such a vector (at the ends of the matrix)
// is loaded element by element. Reading the neighbouring tile's few elements costs L2
// traffic, not DRAM traffic (that tile reads them too).
//
// Stores: output row k of the tile (input column col0 + k) is out + (col0 + k) * rows +
// row0, which begins s' elements past a 16-byte boundary. Its window of TX + 1 vectors is
// gathered element by element from shared memory (element i of the output row is tile
// row i at window column k + s_i); each whole vector inside the tile is written with one
// 128-bit store, the partial first and last vectors element by element (peeled edges),
// both by thread 0 in one pass.
//
// Shared layout: tile row i is TX + 1 chunks of 16 bytes; SKEW chunks of padding follow
// every VEC rows. The gather reads rows VEC * x + e across the threads x of a warp, which
// have the same shift s (a row VEC rows further starts VEC * ld elements further: a
// multiple of 16 bytes), so with the skew they fall in different banks.
//
// Views and batches: input rows are ld >= cols elements apart (a row-pitched view: the shift
// of row i then steps by ld % VEC), matrices of a batch batch_stride elements apart, one per
// blockIdx.z; outputs are contiguous cols x rows matrices, rows * cols elements apart. Window
// vectors are loaded whole only inside the view's span [first element, last element], which
// lies in the caller's allocation.
//
// Elements are moved as raw words of their size (bit-exact for every dtype); any rows x
// cols >= 1 (edge tiles are bounds-checked); STREAMING=1 uses evict-first cache hints.
#include "side_tile.cuh"

#ifndef STREAMING
#define STREAMING 0
#endif
#ifndef WIDE
#define WIDE 0
#endif
#ifndef SKEW
#define SKEW 1
#endif

#if COLUMNWISE || UNROLL != 1 || GROUP
#error "the realigning transpose reads rows, one tile per block: COLUMNWISE=0, UNROLL=1, GROUP=0"
#endif
#if STREAMING != 0 && STREAMING != 1
#error "STREAMING must be 0 or 1"
#endif
#if WIDE != 0 && WIDE != 1
#error "WIDE must be 0 or 1"
#endif
#if SKEW < 0 || SKEW > 4
#error "SKEW must be 0..4"
#endif

namespace {

template <int N> struct word_of;
template <> struct word_of<1> { typedef unsigned char type; };
template <> struct word_of<2> { typedef unsigned short type; };
template <> struct word_of<4> { typedef unsigned int type; };
template <> struct word_of<8> { typedef unsigned long long type; };
typedef word_of<sizeof(elem_t)>::type word_t;

constexpr int VEC_BYTES = 16;
constexpr int VEC = VEC_BYTES / (int)sizeof(word_t);
constexpr int SIDE = TILE_DIM * ((WIDE && sizeof(word_t) <= 2) ? 2 : 1);
constexpr int TX = SIDE / VEC;                    // threads along a tile row
constexpr int CHUNKS = TX + 1;                    // window vectors per tile row
constexpr int PER_THREAD = SIDE / BLOCK_ROWS;     // tile rows a thread loads
constexpr int GROUP_BYTES = VEC * CHUNKS * VEC_BYTES + SKEW * VEC_BYTES;  // VEC rows + skew
constexpr int SMEM_BYTES = (SIDE / VEC) * GROUP_BYTES;
static_assert(SIDE % VEC == 0, "TILE_DIM must be a multiple of 16 / sizeof(element)");
static_assert(SIDE % BLOCK_ROWS == 0, "BLOCK_ROWS must divide the tile side");
static_assert(SMEM_BYTES <= 49152, "the shared tile exceeds 48 KiB: lower TILE_DIM or WIDE");

union vec_t {
    uint4 raw;
    word_t e[VEC];
};

__device__ __forceinline__ unsigned misalign(const word_t *p)  // elements past a 16-byte boundary
{
    return (unsigned)(((size_t)p % VEC_BYTES) / sizeof(word_t));
}

__device__ __forceinline__ uint4 load_vec(const word_t *p)
{
#if STREAMING
    return __ldcs(reinterpret_cast<const uint4 *>(p));
#else
    return __ldg(reinterpret_cast<const uint4 *>(p));
#endif
}

__device__ __forceinline__ void store_vec(word_t *p, uint4 v)
{
#if STREAMING
    __stcs(reinterpret_cast<uint4 *>(p), v);
#else
    *reinterpret_cast<uint4 *>(p) = v;
#endif
}

__device__ __forceinline__ unsigned row_offset(unsigned i)  // byte offset of tile row i
{
    return (i / VEC) * GROUP_BYTES + (i % VEC) * (CHUNKS * VEC_BYTES);
}

// Window vector w of tile row i (input row r): elements [VEC * w - s, VEC * w - s + VEC) of
// the tile row; `first` is the address of the row's first tile element.
__device__ __forceinline__ uint4 load_window(const word_t *first, unsigned s, unsigned w, const word_t *in,
                                             const word_t *end, unsigned width)
{
    const word_t *p = first - s + VEC * w;  // 16-byte aligned
    vec_t v;
    v.raw = make_uint4(0, 0, 0, 0);
    if ((size_t)p >= (size_t)in && (size_t)(p + VEC) <= (size_t)end) {
        v.raw = load_vec(p);
    } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            const int col = (int)(VEC * w + e) - (int)s;
            if (col >= 0 && col < (int)width)
                v.e[e] = first[col];
        }
    }
    return v.raw;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(TX * BLOCK_ROWS) transpose_vec_realign(elem_t *__restrict__ out_,
                                                                                    const elem_t *__restrict__ in_,
                                                                                    int rows, int cols, long long ld_,
                                                                                    long long batch_stride)
{
    __align__(16) __shared__ unsigned char smem[SMEM_BYTES];
    const unsigned R = rows, C = cols;
    const size_t ld = ld_;
    word_t *__restrict__ out = reinterpret_cast<word_t *>(out_) + (size_t)blockIdx.z * R * C;
    const word_t *__restrict__ in = reinterpret_cast<const word_t *>(in_) + (size_t)blockIdx.z * batch_stride;
    unsigned row0, col0;
    side_tile_origin(blockIdx.x, R, C, SIDE, row0, col0);
    // the tile's extent inside the matrix
    const unsigned height = R - row0 < SIDE ? R - row0 : SIDE, width = C - col0 < SIDE ? C - col0 : SIDE;
    const word_t *end = in + (size_t)(R - 1) * ld + C;  // one past the view's last element
    const unsigned x = threadIdx.x;

    // Loads: every window vector of the tile rows this thread owns, all issued before use.
    uint4 v[PER_THREAD], extra[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const unsigned i = threadIdx.y + j * BLOCK_ROWS;
        if (i < height) {
            const word_t *first = in + (size_t)(row0 + i) * ld + col0;
            const unsigned s = misalign(first);
            if (VEC * x < s + width)  // the vector holds an element of the tile row
                v[j] = load_window(first, s, x, in, end, width);
            if (x == 0 && s > 0 && VEC * TX < s + width)
                extra[j] = load_window(first, s, TX, in, end, width);
        }
    }
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const unsigned i = threadIdx.y + j * BLOCK_ROWS;
        uint4 *row = reinterpret_cast<uint4 *>(smem + row_offset(i));
        row[x] = v[j];
        if (x == 0)
            row[TX] = extra[j];
    }
    __syncthreads();

    // Stores: output row k. Thread x gathers window vector x; thread 0's vector 0 (the
    // head, when s' > 0) and vector TX (the tail) together hold VEC elements, which it
    // gathers as one (tile row i < 0 wraps to i + SIDE), so no thread makes a second pass.
    const unsigned s0 = misalign(in + (size_t)row0 * ld + col0), step = ld % VEC;
    const bool whole = height == SIDE;  // the same for the whole block
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const unsigned k = threadIdx.y + j * BLOCK_ROWS;
        if (k >= width)
            continue;
        word_t *first = out + (size_t)(col0 + k) * R + row0;
        const int q0 = (int)(VEC * x) - (int)misalign(first);  // tile row of the vector's element 0
        vec_t out_v;
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            int i = q0 + e;
            i += i < 0 ? SIDE : 0;
            if (!whole)
                i = i < (int)height ? i : (int)height - 1;  // a valid read; not stored
            const unsigned m = (unsigned)i % VEC, s = (s0 + m * step) % VEC;  // row i's input shift
            out_v.e[e] = *reinterpret_cast<const word_t *>(smem + ((unsigned)i / VEC) * GROUP_BYTES +
                                                           m * (CHUNKS * VEC_BYTES) + (k + s) * sizeof(word_t));
        }
        if (q0 >= 0 && q0 + VEC <= (int)height) {
            store_vec(first + q0, out_v.raw);
        } else {
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                int i = q0 + e;
                i += i < 0 ? SIDE : 0;
                if (i < (int)height)
                    first[i] = out_v.e[e];
            }
        }
    }
}
