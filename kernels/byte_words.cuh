// What the byte transposes share (bytes_realign.cu: smem_bytes; bytes_aligned_out.cu:
// smem_bytes_aligned_out): 1- and 2-byte elements moved as 4-byte words, each element's own word
// type for the elements at the edges, and the transpose of a K x K block of elements held in K
// words by byte permutes (__byte_perm, PRMT: 8 for 4 x 4 bytes, 2 for 2 x 2 halves).
#pragma once

#include "side_tile.cuh"

typedef unsigned int word32;
template <int N> struct elem_word;
template <> struct elem_word<1> { typedef unsigned char type; };
template <> struct elem_word<2> { typedef unsigned short type; };
static_assert(sizeof(elem_t) == 1 || sizeof(elem_t) == 2, "the byte transposes move 1- and 2-byte elements");
typedef elem_word<sizeof(elem_t)>::type word_t;  // one element, as raw bits

constexpr unsigned ES = sizeof(word_t);  // bytes per element
constexpr unsigned K = 4 / ES;           // elements per word

// a[m]: a word of row m (K elements, m = 0 .. K - 1) -> o[e]: element e of each row, in row order
// (the K x K block transposed).
__device__ __forceinline__ void transpose_block(const word32 (&a)[K], word32 (&o)[K])
{
    if constexpr (K == 4) {
        const word32 t0 = __byte_perm(a[0], a[1], 0x5140), t1 = __byte_perm(a[0], a[1], 0x7362);
        const word32 t2 = __byte_perm(a[2], a[3], 0x5140), t3 = __byte_perm(a[2], a[3], 0x7362);
        o[0] = __byte_perm(t0, t2, 0x5410);
        o[1] = __byte_perm(t0, t2, 0x7632);
        o[2] = __byte_perm(t1, t3, 0x5410);
        o[3] = __byte_perm(t1, t3, 0x7632);
    } else {
        o[0] = __byte_perm(a[0], a[1], 0x5410);
        o[1] = __byte_perm(a[0], a[1], 0x7632);
    }
}
