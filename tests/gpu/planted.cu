// A transpose with planted bugs, for tests/gpu/test_gpu_planted.py (not part of the catalog).
//   BUG 0: correct; 1: flips the lowest bit of every value; 2: never writes the last output
//   row (less work, so it looks faster); 3: also writes one element past the end.
// planted_reference: a plain one-thread-per-element transpose, the reference kernel of the
// kernel file that checks against a kernel rather than NumPy.
#include "../../kernels/common.cuh"

extern "C" __global__ void planted(float *__restrict__ out, const float *__restrict__ in, int rows, int cols)
{
    const unsigned R = rows, C = cols;
    unsigned row0, col0;
    block_tile_origin(R, C, row0, col0);
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        const unsigned r = row0 + threadIdx.y + j, c = col0 + threadIdx.x;
        if (r >= R || c >= C)
            continue;
        float v = in[(size_t)r * C + c];
#if BUG == 1
        v = __uint_as_float(__float_as_uint(v) ^ 1u);
#endif
#if BUG == 2
        if (c == C - 1)
            continue;
#endif
        out[(size_t)c * R + r] = v;
#if BUG == 3
        if (r == R - 1 && c == C - 1)
            out[(size_t)C * R] = v;
#endif
    }
}

extern "C" __global__ void planted_reference(float *__restrict__ out, const float *__restrict__ in, int rows, int cols)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)rows * cols)
        out[(i % cols) * rows + i / cols] = in[i];
}
