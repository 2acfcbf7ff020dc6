// Shared definitions of the matrix products C[M,N] = A[M,K] @ B[K,N] (row-major, no
// transposes). Every entry point takes (C, A, B, M, N, K); grids are 2-D over tiles of C
// (blockIdx.x along N, blockIdx.y along M), so M and N are limited to 65535 block rows
// and 2^31-1 block columns (ample for any matrix that fits in GPU memory); K is any
// value >= 1. Every load and store is bounds-checked, so M, N and K need not be multiples
// of any tile. Accumulation is in ELEM_T (float or double), one fused multiply-add per
// term, in ascending k within each thread.
//
// Tunables (compile-time macros, set with -D by autotune; defaults only for compiling by hand):
//   ELEM_T     element type: float or double
#pragma once

#ifndef ELEM_T
#define ELEM_T float
#endif

typedef ELEM_T elem_t;
