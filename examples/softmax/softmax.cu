// Row-wise softmax of a rows x cols row-major matrix: y[r, c] = exp(x[r, c] - m_r) / s_r,
// with m_r the row's maximum and s_r = sum over c of exp(x[r, c] - m_r) (numerically stable).
//
// A block of BLOCK_SIZE threads takes ROWS_PER_BLOCK consecutive rows; each row gets
// THREADS_PER_ROW = BLOCK_SIZE / ROWS_PER_BLOCK threads (a power of two), so the grid is
// cdiv(rows, ROWS_PER_BLOCK) blocks. Two passes over the row:
//   1. each thread keeps a running maximum m and a sum s of exp(x - m) over its elements
//      (an "online" softmax: when m grows, s is rescaled by exp(m_old - m_new)); the row's
//      threads then combine their (m, s) pairs: warp shuffles, and shared memory when a row
//      spans several warps;
//   2. each thread writes exp(x - m) / s for its elements.
// Threads move VEC elements at a time (aligned VEC-wide loads and stores) when cols is a
// multiple of VEC and both matrices are aligned to VEC elements; otherwise one at a time.
// Any rows, cols >= 1 work; rows past the end of the matrix in the last block only take part
// in the shuffles.
//
// Arguments (softmax.toml): y[rows, cols] (out), x[rows, cols] (in), rows, cols (int32).
//
// Tunables (-D macros; these defaults are only for compiling the file by hand):
//   ELEM_T          element type, float or double (exp and sums in ELEM_T)
//   BLOCK_SIZE      threads per block, a power of two in 32..1024
//   ROWS_PER_BLOCK  rows per block, a power of two, at most BLOCK_SIZE
//   VEC             elements per load and store: 1, 2 or 4
//
// softmax_reference: the check's reference, one thread per row in double (its own
// [check.launch]); the tuned kernel is compared to it with a tolerance.

#ifndef ELEM_T
#define ELEM_T float
#endif
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 4
#endif

#define THREADS_PER_ROW (BLOCK_SIZE / ROWS_PER_BLOCK)
#define WARPS_PER_ROW ((THREADS_PER_ROW + 31) / 32)

#if BLOCK_SIZE < 32 || BLOCK_SIZE > 1024 || (BLOCK_SIZE & (BLOCK_SIZE - 1)) != 0
#error "BLOCK_SIZE must be a power of two in 32..1024"
#endif
#if ROWS_PER_BLOCK < 1 || ROWS_PER_BLOCK > BLOCK_SIZE || (ROWS_PER_BLOCK & (ROWS_PER_BLOCK - 1)) != 0
#error "ROWS_PER_BLOCK must be a power of two, at most BLOCK_SIZE"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4
#error "VEC must be 1, 2 or 4"
#endif

typedef ELEM_T elem_t;

// VEC elements moved by one load or store.
struct __align__(VEC * sizeof(elem_t)) vec_t {
    elem_t v[VEC];
};

// The running maximum and sum of exp(x - m) of some elements; m = -inf, s = 0 for none.
struct max_sum {
    elem_t m, s;
};

__device__ __forceinline__ max_sum combine(max_sum a, max_sum b)
{
    const elem_t m = max(a.m, b.m);
    if (m == -INFINITY)  // neither saw an element (or only -inf): avoid exp(-inf - -inf) = NaN
        return {m, a.s + b.s};
    return {m, a.s * exp(a.m - m) + b.s * exp(b.m - m)};
}

__device__ __forceinline__ void add(max_sum &acc, elem_t x)
{
    if (x > acc.m) {
        acc.s = acc.s * exp(acc.m - x) + elem_t(1);
        acc.m = x;
    } else {
        acc.s += exp(x - acc.m);
    }
}

// Combine the (m, s) of the THREADS_PER_ROW threads of each row; every thread of the row
// gets the row's pair. Called by every thread of the block (it synchronises the block when
// a row spans several warps).
__device__ __forceinline__ max_sum row_combine(max_sum acc, max_sum (*shared)[WARPS_PER_ROW])
{
    constexpr int WIDTH = THREADS_PER_ROW < 32 ? THREADS_PER_ROW : 32;
#pragma unroll
    for (int offset = WIDTH / 2; offset > 0; offset /= 2) {
        max_sum other;
        other.m = __shfl_xor_sync(0xffffffffu, acc.m, offset);
        other.s = __shfl_xor_sync(0xffffffffu, acc.s, offset);
        acc = combine(acc, other);
    }
#if WARPS_PER_ROW > 1
    const unsigned row = threadIdx.x / THREADS_PER_ROW, t = threadIdx.x % THREADS_PER_ROW;
    if (t % 32 == 0)
        shared[row][t / 32] = acc;
    __syncthreads();
    acc = shared[row][0];
#pragma unroll
    for (int w = 1; w < WARPS_PER_ROW; ++w)
        acc = combine(acc, shared[row][w]);
#endif
    return acc;
}

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
softmax_rows(elem_t *__restrict__ y, const elem_t *__restrict__ x, int rows, int cols)
{
#if WARPS_PER_ROW > 1
    __shared__ max_sum shared[ROWS_PER_BLOCK][WARPS_PER_ROW];
#else
    max_sum (*shared)[WARPS_PER_ROW] = nullptr;
#endif
    const long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / THREADS_PER_ROW;
    const unsigned t = threadIdx.x % THREADS_PER_ROW;
    const bool in_range = row < rows;  // rows past the end only take part in the shuffles
    const elem_t *xr = x + (in_range ? row : 0) * (long long)cols;
    elem_t *yr = y + (in_range ? row : 0) * (long long)cols;
    const bool vec = VEC > 1 && cols % VEC == 0 && (unsigned long long)x % sizeof(vec_t) == 0 &&
                     (unsigned long long)y % sizeof(vec_t) == 0;

    max_sum acc = {-INFINITY, elem_t(0)};
    if (in_range) {
        if (vec) {
            const vec_t *xv = reinterpret_cast<const vec_t *>(xr);
            for (int c = t; c < cols / VEC; c += THREADS_PER_ROW) {
                const vec_t v = xv[c];
#pragma unroll
                for (int i = 0; i < VEC; ++i)
                    add(acc, v.v[i]);
            }
        } else {
            for (int c = t; c < cols; c += THREADS_PER_ROW)
                add(acc, xr[c]);
        }
    }
    acc = row_combine(acc, shared);
    if (!in_range)
        return;

    const elem_t inv = elem_t(1) / acc.s;
    if (vec) {
        const vec_t *xv = reinterpret_cast<const vec_t *>(xr);
        vec_t *yv = reinterpret_cast<vec_t *>(yr);
        for (int c = t; c < cols / VEC; c += THREADS_PER_ROW) {
            vec_t v = xv[c];
#pragma unroll
            for (int i = 0; i < VEC; ++i)
                v.v[i] = exp(v.v[i] - acc.m) * inv;
            yv[c] = v;
        }
    } else {
        for (int c = t; c < cols; c += THREADS_PER_ROW)
            yr[c] = exp(xr[c] - acc.m) * inv;
    }
}

// The reference: one thread per row, three plain passes in double (max, sum, write).
extern "C" __global__ void softmax_reference(elem_t *__restrict__ y, const elem_t *__restrict__ x,
                                             int rows, int cols)
{
    const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;
    const elem_t *xr = x + row * cols;
    elem_t *yr = y + row * cols;
    double m = -INFINITY;
    for (int c = 0; c < cols; ++c)
        m = fmax(m, (double)xr[c]);
    double s = 0.0;
    for (int c = 0; c < cols; ++c)
        s += exp((double)xr[c] - m);
    for (int c = 0; c < cols; ++c)
        yr[c] = (elem_t)(exp((double)xr[c] - m) / s);
}
