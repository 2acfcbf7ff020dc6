// Vectorized shared-memory transpose. Every thread moves 16-byte vectors (VEC = 16 /
// sizeof(element): 4 floats, 2 doubles, 8 halves, 16 bytes; two complex128 in 32 bytes), so each warp-wide load or
// store is one 128-bit access per thread (LDG.E.128 / STG.E.128) where a scalar kernel
// needs VEC of them: a quarter of the memory instructions for float32, a sixteenth for
// 8-bit types, whose 1-byte scalar accesses cannot keep the memory system busy.
//
// A block is (TILE_DIM / VEC) x BLOCK_ROWS threads and moves TILES square tiles of
// TILE_DIM x TILE_DIM elements, one after another in tile order (common.cuh, DIAGONAL).
// Per tile: each thread loads TILE_DIM / BLOCK_ROWS row vectors into registers, writes
// them element by element into a shared-memory tile (rows padded by IPAD elements
// against bank conflicts), and after a barrier gathers VEC elements down a tile column
// into one vector and stores it as part of an output row: coalesced 16-byte accesses on
// both sides. With TILES > 1 the next tile's loads are issued before the current tile
// is stored, so a block keeps loads in flight while it writes (software pipelining).
// STREAMING=1 uses the evict-first cache hints (__ldcs / __stcs): the data is touched once.
//
// Elements are moved as raw words of their size (a transpose never looks at values);
// 16-byte ones pass through the shared tile as two 8-byte parts, one after the other
// (words.cuh: part_t, PARTS), so the tile is never larger than one of 8-byte elements.
// Any rows x cols: vectors are used when both row lengths, the input's row pitch and batch
// stride are multiples of VEC and both pointers are 16-byte aligned; otherwise the same
// tiles are moved element by element, bounds-checked, consecutive threads on consecutive
// elements (coalesced scalar accesses). Batches and row-pitched views: words.cuh.
#include "words.cuh"

#ifndef TILES
#define TILES 1
#endif
#ifndef STREAMING
#define STREAMING 0
#endif

#if COLUMNWISE || UNROLL != 1
#error "the vectorized transpose reads rows, one tile at a time: COLUMNWISE=0, UNROLL=1"
#endif
#if TILES < 1
#error "TILES must be at least 1"
#endif
#if STREAMING != 0 && STREAMING != 1
#error "STREAMING must be 0 or 1"
#endif

// A thread moves 16 bytes per row (16-byte elements: 32 bytes, two elements, so that a block
// row has TILE_DIM / 2 threads and every config's block fits for every element size), as
// NQ 128-bit accesses.
constexpr int VEC_BYTES = sizeof(word_t) > 8 ? 32 : 16;
constexpr int NQ = VEC_BYTES / 16;
constexpr int VEC = VEC_BYTES / (int)sizeof(word_t);
constexpr int TX = TILE_DIM / VEC;                 // threads along a tile row
constexpr int PER_THREAD = TILE_DIM / BLOCK_ROWS;  // vectors a thread moves per tile
static_assert(TILE_DIM % VEC == 0, "TILE_DIM must be a multiple of 16 / sizeof(element)");

union vec_t {
    uint4 raw[NQ];
    word_t e[VEC];
    part_t part[VEC * PARTS];  // element e's part p: part[e * PARTS + p]
};

__device__ __forceinline__ void load_vec(vec_t &v, const word_t *p)
{
#pragma unroll
    for (int q = 0; q < NQ; ++q)
#if STREAMING
        v.raw[q] = __ldcs(reinterpret_cast<const uint4 *>(p) + q);
#else
        v.raw[q] = __ldg(reinterpret_cast<const uint4 *>(p) + q);
#endif
}

__device__ __forceinline__ void store_vec(word_t *p, const vec_t &v)
{
#pragma unroll
    for (int q = 0; q < NQ; ++q)
#if STREAMING
        __stcs(reinterpret_cast<uint4 *>(p) + q, v.raw[q]);
#else
        reinterpret_cast<uint4 *>(p)[q] = v.raw[q];
#endif
}

// Registers <- rows row0 + threadIdx.y + j * BLOCK_ROWS, columns col0 + VEC * threadIdx.x + e
// (input rows ld elements apart).
__device__ __forceinline__ void load_tile(vec_t (&v)[PER_THREAD], const word_t *__restrict__ in,
                                          unsigned R, unsigned C, size_t ld, unsigned row0, unsigned col0)
{
    const unsigned c = col0 + VEC * threadIdx.x;
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const unsigned r = row0 + threadIdx.y + j * BLOCK_ROWS;
        if (r < R && c < C)  // C % VEC == 0: a vector is wholly inside or outside
            load_vec(v[j], in + (size_t)r * ld + c);
    }
}

// Part p of every register element -> the shared tile, as loaded (row-major).
__device__ __forceinline__ void put_tile(part_t (*tile)[TILE_DIM + IPAD], const vec_t (&v)[PER_THREAD], int p)
{
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j)
#pragma unroll
        for (int e = 0; e < VEC; ++e)
            tile[threadIdx.y + j * BLOCK_ROWS][VEC * threadIdx.x + e] = v[j].part[e * PARTS + p];
}

// Output row orow = input column col0 + threadIdx.y + j * BLOCK_ROWS; its VEC elements
// from column ocol = row0 + VEC * threadIdx.x are input rows ocol .. ocol + VEC - 1:
// part p of each is gathered down a tile column into w[j].
__device__ __forceinline__ void gather_tile(vec_t (&w)[PER_THREAD], const part_t (*tile)[TILE_DIM + IPAD], int p)
{
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const unsigned k = threadIdx.y + j * BLOCK_ROWS;
#pragma unroll
        for (int e = 0; e < VEC; ++e)
            w[j].part[e * PARTS + p] = tile[VEC * threadIdx.x + e][k];
    }
}

__device__ __forceinline__ void store_tile(word_t *__restrict__ out, const vec_t (&w)[PER_THREAD],
                                           unsigned R, unsigned C, unsigned row0, unsigned col0)
{
    const unsigned ocol = row0 + VEC * threadIdx.x;
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const unsigned orow = col0 + threadIdx.y + j * BLOCK_ROWS;
        if (orow < C && ocol < R)  // R % VEC == 0
            store_vec(out + (size_t)orow * R + ocol, w[j]);
    }
}

// The element path: thread i of the block moves tile elements i, i + threads, ... in
// row-major order, so a warp reads and writes runs of consecutive elements (part by part).
// A thread issues all its loads of a tile (at most 32 at a time) before their shared stores:
// one element is a 1- to 8-byte access, so a tile's loads must all be in flight at once to
// keep as many bytes in flight as the vector path's 16-byte loads (on the H100, 12345x6789
// float32 read 68 % of memcpy with 4 loads in flight a thread).
constexpr unsigned ELEM_THREADS = TX * BLOCK_ROWS;
constexpr unsigned ELEM_PER_THREAD = TILE_DIM * TILE_DIM / ELEM_THREADS;  // TILE_DIM * VEC / BLOCK_ROWS
constexpr unsigned ELEM_BATCH = ELEM_PER_THREAD < 32 ? ELEM_PER_THREAD : 32;
static_assert(TILE_DIM * TILE_DIM % ELEM_THREADS == 0 && ELEM_PER_THREAD % ELEM_BATCH == 0,
              "a tile is a whole number of element batches per thread");

__device__ __forceinline__ void move_tile_elements(part_t *__restrict__ out, const part_t *__restrict__ in,
                                                   part_t (*tile)[TILE_DIM + IPAD], unsigned R, unsigned C,
                                                   size_t ld, unsigned row0, unsigned col0)
{
    const unsigned id = threadIdx.y * TX + threadIdx.x;
    for (int p = 0; p < PARTS; ++p) {
#pragma unroll
        for (unsigned b = 0; b < ELEM_PER_THREAD; b += ELEM_BATCH) {
            part_t x[ELEM_BATCH];
#pragma unroll
            for (unsigned j = 0; j < ELEM_BATCH; ++j) {
                const unsigned i = id + (b + j) * ELEM_THREADS;
                const unsigned r = row0 + i / TILE_DIM, c = col0 + i % TILE_DIM;
                x[j] = r < R && c < C ? in[((size_t)r * ld + c) * PARTS + p] : part_t(0);
            }
#pragma unroll
            for (unsigned j = 0; j < ELEM_BATCH; ++j) {
                const unsigned i = id + (b + j) * ELEM_THREADS;
                tile[i / TILE_DIM][i % TILE_DIM] = x[j];
            }
        }
        __syncthreads();
#pragma unroll
        for (unsigned b = 0; b < ELEM_PER_THREAD; b += ELEM_BATCH) {
            part_t x[ELEM_BATCH];
#pragma unroll
            for (unsigned j = 0; j < ELEM_BATCH; ++j) {
                const unsigned i = id + (b + j) * ELEM_THREADS;
                x[j] = tile[i % TILE_DIM][i / TILE_DIM];
            }
#pragma unroll
            for (unsigned j = 0; j < ELEM_BATCH; ++j) {
                const unsigned i = id + (b + j) * ELEM_THREADS;
                const unsigned orow = col0 + i / TILE_DIM, ocol = row0 + i % TILE_DIM;
                if (orow < C && ocol < R)
                    out[((size_t)orow * R + ocol) * PARTS + p] = x[j];
            }
        }
        __syncthreads();  // the tile is free for the next part or tile
    }
}

extern "C" __global__ void __launch_bounds__(TX * BLOCK_ROWS) transpose_vec(elem_t *__restrict__ out_,
                                                                            const elem_t *__restrict__ in_,
                                                                            int rows, int cols, long long ld_,
                                                                            long long batch_stride)
{
    __align__(16) __shared__ part_t tile[TILE_DIM][TILE_DIM + IPAD];
    const unsigned R = rows, C = cols;
    const size_t ld = ld_;
    word_t *__restrict__ out = reinterpret_cast<word_t *>(out_) + (size_t)blockIdx.z * R * C;
    const word_t *__restrict__ in = reinterpret_cast<const word_t *>(in_) + (size_t)blockIdx.z * batch_stride;
    const unsigned tiles = ((R + TILE_DIM - 1) / TILE_DIM) * ((C + TILE_DIM - 1) / TILE_DIM);
    const bool vectors = C % VEC == 0 && R % VEC == 0 && ld % VEC == 0 && batch_stride % VEC == 0 &&
                         ((size_t)in_ | (size_t)out_) % 16 == 0;

    unsigned t = blockIdx.x * TILES;
    if (t >= tiles)
        return;
    unsigned row0, col0;
    tile_origin(t, R, C, row0, col0);
    if (!vectors) {
        for (int i = 0; i < TILES && t < tiles; ++i, ++t) {
            tile_origin(t, R, C, row0, col0);
            move_tile_elements(reinterpret_cast<part_t *>(out), reinterpret_cast<const part_t *>(in), tile, R, C,
                               ld, row0, col0);
        }
        return;
    }
    vec_t v[PER_THREAD];
    load_tile(v, in, R, C, ld, row0, col0);

#pragma unroll
    for (int i = 0; i < TILES; ++i, ++t) {
        if (i > 0) {
            if (t >= tiles)  // the same for the whole block
                break;
            __syncthreads();  // every thread has read the previous tile
        }
        const unsigned r0 = row0, c0 = col0;
        vec_t w[PER_THREAD];
#pragma unroll
        for (int p = 0; p < PARTS; ++p) {
            if (p > 0)
                __syncthreads();  // every thread has gathered the previous part
            put_tile(tile, v, p);
            __syncthreads();
            if (p == PARTS - 1 && i + 1 < TILES && t + 1 < tiles) {  // next tile's loads in flight during the stores
                tile_origin(t + 1, R, C, row0, col0);
                load_tile(v, in, R, C, ld, row0, col0);
            }
            gather_tile(w, tile, p);
        }
        store_tile(out, w, R, C, r0, c0);
    }
}
