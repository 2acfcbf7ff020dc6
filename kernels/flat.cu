// Transpose as a copy over the flattened output (naive_flat): thread i of a matrix writes output
// element i = c * rows + r, which is input element (r, c), for ELEMS elements THREADS apart. Writes
// are coalesced and 16 bytes or less a thread; reads are gathered down input columns, one element
// each, as PyTorch's elementwise copy of x.mT does.
//
// For small matrices and short output rows (a batch of 33 x 65 float16 matrices, 9 x 200003
// float64), whose tiles would be mostly empty: a block here is THREADS * ELEMS consecutive output
// elements whatever the shape, so no thread idles but in the last block of a matrix. Such matrices
// stay in L2 between the column reads of neighbouring threads, which is where this kernel is for.
//
// Batches (blockIdx.z) and row-pitched input views (ld) as words.cuh says; any rows x cols >= 1;
// every element size (moved as a word of its size, 16-byte ones as uint4).
#include "words.cuh"

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ELEMS
#define ELEMS 4
#endif
#if THREADS < 32 || THREADS % 32 != 0 || THREADS > 1024
#error "THREADS must be a multiple of 32, at most 1024"
#endif
#if ELEMS < 1 || ELEMS > 16
#error "ELEMS must be 1..16"
#endif

// Output element i of one matrix -> input offset: (r, c) with i = c * R + r. Index types: T is
// unsigned for a matrix of fewer than 2^32 elements (a 32-bit division), else size_t.
template <typename T>
__device__ __forceinline__ void move_flat(word_t *__restrict__ out, const word_t *__restrict__ in, T n, T R,
                                          size_t ld)
{
    const T first = (T)blockIdx.x * (THREADS * ELEMS) + threadIdx.x;
    word_t v[ELEMS];
#pragma unroll
    for (int e = 0; e < ELEMS; ++e) {  // every load issued before the first store
        const T i = first + (T)e * THREADS;
        if (i < n) {
            const T c = i / R, r = i - c * R;
            v[e] = in[(size_t)r * ld + c];
        }
    }
#pragma unroll
    for (int e = 0; e < ELEMS; ++e) {
        const T i = first + (T)e * THREADS;
        if (i < n)
            out[i] = v[e];
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) transpose_flat(elem_t *__restrict__ out_,
                                                                      const elem_t *__restrict__ in_, int rows,
                                                                      int cols, long long ld_, long long batch_stride)
{
    const size_t n = (size_t)(unsigned)rows * (unsigned)cols;
    word_t *out = reinterpret_cast<word_t *>(out_) + (size_t)blockIdx.z * n;
    const word_t *in = reinterpret_cast<const word_t *>(in_) + (size_t)blockIdx.z * batch_stride;
    if (n <= 0xffffffffull)
        move_flat<unsigned>(out, in, (unsigned)n, (unsigned)rows, (size_t)ld_);
    else
        move_flat<size_t>(out, in, n, (size_t)(unsigned)rows, (size_t)ld_);
}
