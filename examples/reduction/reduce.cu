// Sum of n elements into out[0] in one launch: the "last block finishes" reduction.
//
// Every block sums a grid-strided share of the input (BLOCK_SIZE threads, each loading
// ITEMS_PER_THREAD coalesced elements per step), reduces it to one partial sum
// (warp shuffles, then one value per warp through shared memory), and writes it to
// partials[blockIdx.x]. Thread 0 then takes a ticket from a completion counter; the block
// that draws the last ticket sums the partials in a fixed order, writes out[0] and resets
// the counter to 0, so the next launch starts from a clean counter and nothing relies on
// out being zeroed beforehand. At most MAX_BLOCKS blocks run (the grid is
// min(cdiv(n, BLOCK_SIZE * ITEMS_PER_THREAD), MAX_BLOCKS)); larger inputs loop.
//
// Arguments (reduce.toml): out[1], in[n], partials[PARTIALS_CAPACITY] and counter[1]
// (scratch: device workspaces), n (int64, >= 1).
//
// Tunables (-D macros; these defaults are only for compiling the file by hand):
//   ELEM_T            element type, float or double; sums are accumulated in ELEM_T
//   BLOCK_SIZE        threads per block, a multiple of 32, at most 1024
//   ITEMS_PER_THREAD  elements each thread loads per grid-stride step, >= 1
//   MAX_BLOCKS        the grid cap, 1 .. PARTIALS_CAPACITY
//
// reduce_reference: the check's reference, an obviously correct sum in double by one block
// of 1024 threads (its own [check.launch]); the tuned kernel is compared to it with a tolerance.

#ifndef ELEM_T
#define ELEM_T float
#endif
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
#ifndef ITEMS_PER_THREAD
#define ITEMS_PER_THREAD 4
#endif
#ifndef MAX_BLOCKS
#define MAX_BLOCKS 1024
#endif

#define PARTIALS_CAPACITY 4096  // length of the partials workspace (reduce.toml says the same)
#define REFERENCE_THREADS 1024  // block of reduce_reference (reduce.toml's [check.launch])

#if BLOCK_SIZE % 32 != 0 || BLOCK_SIZE < 32 || BLOCK_SIZE > 1024
#error "BLOCK_SIZE must be a multiple of 32 in 32..1024"
#endif
#if ITEMS_PER_THREAD < 1
#error "ITEMS_PER_THREAD must be at least 1"
#endif
#if MAX_BLOCKS < 1 || MAX_BLOCKS > PARTIALS_CAPACITY
#error "MAX_BLOCKS must be in 1..PARTIALS_CAPACITY (the length of the partials workspace)"
#endif

typedef ELEM_T elem_t;

// Sum of v over the warp; every lane gets it.
template <typename T>
__device__ __forceinline__ T warp_sum(T v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Sum of v over the block of THREADS threads; the result is valid in thread 0.
// Call from every thread; uses `shared` (THREADS / 32 values) and synchronises the block.
template <int THREADS, typename T>
__device__ __forceinline__ T block_sum(T v, T *shared)
{
    constexpr int WARPS = THREADS / 32;
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (WARPS == 1)
        return v;
    __syncthreads();  // `shared` may still be read by an earlier call
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    v = lane < WARPS ? shared[lane] : T(0);
    return warp == 0 ? warp_sum(v) : v;
}

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
reduce_sum(elem_t *__restrict__ out, const elem_t *__restrict__ in, elem_t *__restrict__ partials,
           unsigned int *__restrict__ counter, long long n)
{
    __shared__ elem_t warp_sums[BLOCK_SIZE / 32];
    __shared__ bool is_last;

    // Each step of the grid-stride loop covers one tile of BLOCK_SIZE * ITEMS_PER_THREAD
    // elements per block; consecutive threads load consecutive elements (coalesced).
    constexpr long long TILE = (long long)BLOCK_SIZE * ITEMS_PER_THREAD;
    const long long stride = TILE * gridDim.x;
    elem_t sum = 0;
    for (long long base = blockIdx.x * TILE; base < n; base += stride) {
        if (base + TILE <= n) {  // a whole tile: no bounds checks
#pragma unroll
            for (int i = 0; i < ITEMS_PER_THREAD; ++i)
                sum += in[base + i * BLOCK_SIZE + threadIdx.x];
        } else {
#pragma unroll
            for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
                const long long j = base + i * BLOCK_SIZE + threadIdx.x;
                if (j < n)
                    sum += in[j];
            }
        }
    }
    sum = block_sum<BLOCK_SIZE>(sum, warp_sums);

    if (threadIdx.x == 0) {
        partials[blockIdx.x] = sum;
        __threadfence();  // the partial is visible device-wide before the ticket is taken
        const unsigned ticket = atomicAdd(counter, 1u);
        is_last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last)
        return;

    // The last block: every other block's partial is written and fenced. Read them from L2
    // (__ldcg: never a stale L1 line), in a fixed order, so the result is deterministic.
    elem_t total = 0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += BLOCK_SIZE)
        total += __ldcg(&partials[b]);
    total = block_sum<BLOCK_SIZE>(total, warp_sums);
    if (threadIdx.x == 0) {
        out[0] = total;
        *counter = 0;  // ready for the next launch
    }
}

// The reference: one block of REFERENCE_THREADS threads sums in double (strided shares,
// then a tree in shared memory) and writes out[0]. partials and counter are not used.
extern "C" __global__ void __launch_bounds__(REFERENCE_THREADS)
reduce_reference(elem_t *__restrict__ out, const elem_t *__restrict__ in, elem_t *__restrict__ partials,
                 unsigned int *__restrict__ counter, long long n)
{
    __shared__ double sums[REFERENCE_THREADS];
    double s = 0.0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x)
        s += (double)in[i];
    sums[threadIdx.x] = s;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            sums[threadIdx.x] += sums[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[0] = (elem_t)sums[0];
}
