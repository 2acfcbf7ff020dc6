// Verification on the GPU (autotune/measure/device_compare.py): a kernel's output compared with
// the reference on the device; only a 4-word result crosses PCIe.
//
// Every kernel takes `result`, four unsigned 64-bit words set by the caller to {0, ~0, 0, ~0}
// before the launch, and a grid-stride loop over `n` elements:
//   not_byte_*  : result[0] = bytes != value,          result[1] = first such byte
//   exact_u*    : result[0] = words that differ,       result[1] = first such element
//                 (raw words of the element size: NaN payloads and signed zeros count)
//   tolerance_* : result[0] = elements not finite,     result[1] = first such element,
//                 result[2] = |got - exp| > atol + rtol * |exp|, result[3] = first such element
//                 (float64 math; exp is float64; rounded operations: no contraction into FMA,
//                 so the test is the one NumPy makes on the host)
// Nothing is written in the common case (every element right): each thread counts in registers
// and adds its count with one atomic only if it is non-zero.
#include <cuda_fp16.h>

typedef unsigned long long u64;

__device__ __forceinline__ void report(u64* count, u64* first, u64 mine, u64 first_mine) {
    if (mine) {
        atomicAdd(count, mine);
        atomicMin(first, first_mine);
    }
}

extern "C" __global__ void not_byte(const unsigned char* p, u64 n, unsigned int value, u64* result) {
    u64 mine = 0, first = ~0ull;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        if (p[i] != (unsigned char)value) {
            if (!mine) first = i;
            ++mine;
        }
    }
    report(&result[0], &result[1], mine, first);
}

template <typename W>
__device__ void exact(const W* got, const W* expected, u64 n, u64* result) {
    u64 mine = 0, first = ~0ull;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        if (got[i] != expected[i]) {
            if (!mine) first = i;
            ++mine;
        }
    }
    report(&result[0], &result[1], mine, first);
}

#define EXACT(name, W) \
    extern "C" __global__ void name(const W* got, const W* expected, u64 n, u64* result) { \
        exact<W>(got, expected, n, result); }
EXACT(exact_u1, unsigned char)
EXACT(exact_u2, unsigned short)
EXACT(exact_u4, unsigned int)
EXACT(exact_u8, u64)

__device__ __forceinline__ double as_double(__half v) { return (double)__half2float(v); }
template <typename T> __device__ __forceinline__ double as_double(T v) { return (double)v; }

template <typename T>
__device__ void tolerance(const T* got, const double* expected, u64 n, double atol, double rtol, u64* result) {
    u64 bad = 0, first_bad = ~0ull, off = 0, first_off = ~0ull;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        double g = as_double(got[i]), e = expected[i];
        if (!isfinite(g)) {
            if (!bad) first_bad = i;
            ++bad;
        } else if (fabs(__dsub_rn(g, e)) > __dadd_rn(atol, __dmul_rn(rtol, fabs(e)))) {
            if (!off) first_off = i;
            ++off;
        }
    }
    report(&result[0], &result[1], bad, first_bad);
    report(&result[2], &result[3], off, first_off);
}

#define TOLERANCE(name, T) \
    extern "C" __global__ void name(const T* got, const double* expected, u64 n, double atol, double rtol, \
                                    u64* result) { tolerance<T>(got, expected, n, atol, rtol, result); }
TOLERANCE(tolerance_float16, __half)
TOLERANCE(tolerance_float32, float)
TOLERANCE(tolerance_float64, double)
TOLERANCE(tolerance_int8, signed char)
TOLERANCE(tolerance_uint8, unsigned char)
TOLERANCE(tolerance_int16, short)
TOLERANCE(tolerance_uint16, unsigned short)
TOLERANCE(tolerance_int32, int)
TOLERANCE(tolerance_uint32, unsigned int)
TOLERANCE(tolerance_int64, long long)
TOLERANCE(tolerance_uint64, unsigned long long)

// norm_* : result[0] = elements not finite,     result[1] = first such element,
//          result[2] = sum of (got - exp)^2 over the finite elements, result[3] = sum of exp^2
//          (both as float64 bits; the caller sets them to 0.0). The relative Frobenius error of
//          a matrix product (autotune.kernel.references:product_tolerance) is
//          sqrt(result[2] / result[3]); each warp adds its partial sums with one atomic each.
template <typename T>
__device__ void norm(const T* got, const double* expected, u64 n, u64* result) {
    u64 bad = 0, first_bad = ~0ull;
    double d2 = 0.0, e2 = 0.0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        double g = as_double(got[i]), e = expected[i];
        if (!isfinite(g)) {
            if (!bad) first_bad = i;
            ++bad;
        } else {
            double d = g - e;
            d2 += d * d;
        }
        e2 += e * e;
    }
    report(&result[0], &result[1], bad, first_bad);
    for (int offset = 16; offset; offset >>= 1) {
        d2 += __shfl_down_sync(0xffffffffu, d2, offset);
        e2 += __shfl_down_sync(0xffffffffu, e2, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(reinterpret_cast<double*>(&result[2]), d2);
        atomicAdd(reinterpret_cast<double*>(&result[3]), e2);
    }
}

#define NORM(name, T) \
    extern "C" __global__ void name(const T* got, const double* expected, u64 n, u64* result) { \
        norm<T>(got, expected, n, result); }
NORM(norm_float16, __half)
NORM(norm_float32, float)
NORM(norm_float64, double)
