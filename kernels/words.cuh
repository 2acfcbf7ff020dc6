// Raw words of each element size for the transposes that move words (vec.cu, smem.cu): a
// transpose never looks at values, so elements are moved as words of their size. 16-byte
// elements (complex128) go through shared memory as two 8-byte parts (part_t, PARTS = 2),
// so a tile of them needs no more shared memory than one of 8-byte elements and every
// config of a space fits for every dtype.
//
// Batches and views (the kernels' ld and batch_stride arguments): the input of matrix
// blockIdx.z starts batch_stride elements after the previous one and its rows are ld
// elements apart; the output is contiguous, matrix z at z * rows * cols. The kernel files'
// values (ld = cols, batch_stride = rows * cols, one matrix) are the contiguous 2-D problem
// a search tunes; autotune.transpose passes a view's pitch and a batch's stride.
#pragma once

#include "common.cuh"

template <int N> struct word_of;
template <> struct word_of<1> { typedef unsigned char type; };
template <> struct word_of<2> { typedef unsigned short type; };
template <> struct word_of<4> { typedef unsigned int type; };
template <> struct word_of<8> { typedef unsigned long long type; };
template <> struct word_of<16> { typedef uint4 type; };
typedef word_of<sizeof(elem_t)>::type word_t;
typedef word_of<(sizeof(elem_t) > 8 ? 8 : sizeof(elem_t))>::type part_t;
constexpr int PARTS = (int)(sizeof(elem_t) / sizeof(part_t));
static_assert(sizeof(elem_t) == 1 || sizeof(elem_t) == 2 || sizeof(elem_t) == 4 || sizeof(elem_t) == 8 ||
              sizeof(elem_t) == 16, "ELEM_T must be of 1, 2, 4, 8 or 16 bytes");
