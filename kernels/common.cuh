// Shared definitions of every kernel: element type, tunables, and the block -> tile mapping.
//
// Tunables (compile-time macros, set with -D by autotune; the defaults here are only for
// compiling a file by hand):
//   ELEM_T      element type (float, double, int, __half, ...)
//   TILE_DIM    a block is TILE_DIM x BLOCK_ROWS threads and moves TILE_DIM x TILE_DIM tiles
//   BLOCK_ROWS  each thread moves TILE_DIM / BLOCK_ROWS elements of each tile
//   UNROLL      tiles per block, side by side along the direction threadIdx.x runs
//   DIAGONAL    0: blocks take tiles in row-major order; 1: in diagonal order
//   GROUP       0: as DIAGONAL says; G > 0 (with DIAGONAL 0): grouped order, column by
//               column within bands of G tile rows
//   COLUMNWISE  0: threadIdx.x runs along an input row; 1: down an input column
//   IPAD        extra columns of a shared-memory tile (against bank conflicts)
//
// Matrices are row-major. The input is rows x cols; a transpose writes cols x rows.
// A block moves one "block tile" of BLOCK_TILE_ROWS x BLOCK_TILE_COLS input elements
// (UNROLL tiles). Block tiles are numbered over a 1-D grid, so any rows x cols >= 1 can be
// launched (a 2-D grid would cap one of the tile counts at 65535); edge tiles are
// bounds-checked element by element. Indices are unsigned: a tile origin plus an offset
// stays below 2^32 for any rows, cols < 2^31.
#pragma once

#include <cuda_fp16.h>

#ifndef ELEM_T
#define ELEM_T float
#endif
#ifndef TILE_DIM
#define TILE_DIM 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef DIAGONAL
#define DIAGONAL 0
#endif
#ifndef COLUMNWISE
#define COLUMNWISE 0
#endif
#ifndef IPAD
#define IPAD 0
#endif
#ifndef GROUP
#define GROUP 0
#endif

#if TILE_DIM % BLOCK_ROWS != 0
#error "BLOCK_ROWS must divide TILE_DIM"
#endif
#if UNROLL < 1
#error "UNROLL must be at least 1"
#endif
#if DIAGONAL != 0 && DIAGONAL != 1
#error "DIAGONAL must be 0 or 1"
#endif
#if GROUP < 0 || (GROUP > 0 && DIAGONAL)
#error "GROUP must be 0, or > 0 with DIAGONAL 0"
#endif
#if COLUMNWISE != 0 && COLUMNWISE != 1
#error "COLUMNWISE must be 0 or 1"
#endif

typedef ELEM_T elem_t;

#if COLUMNWISE
#define BLOCK_TILE_ROWS (TILE_DIM * UNROLL)
#define BLOCK_TILE_COLS TILE_DIM
#else
#define BLOCK_TILE_ROWS TILE_DIM
#define BLOCK_TILE_COLS (TILE_DIM * UNROLL)
#endif

// First input row and column of block tile number b.
//
// The grid is tiles_y x tiles_x block tiles; tile number b takes
//   row-major order (DIAGONAL 0): tile row b / tiles_x,  tile column b % tiles_x
//   diagonal order  (DIAGONAL 1): tile row y = b % tiles_y, tile column (b / tiles_y + y) % tiles_x
// The diagonal order is the classic diagonal block reordering generalised to rectangular
// grids: consecutive blocks step one tile down and one tile right (wrapping), so blocks
// running together touch different tile rows and columns of both input and output. It is
// a bijection for any tiles_y, tiles_x (the inverse is b = ((x - y) mod tiles_x) * tiles_y + y)
// and, on a square grid, equals the classic mapping of a 2-D grid launched in row-major order.
// The grouped order (GROUP = G > 0; the tile swizzle of tiled matrix products) walks bands
// of G tile rows column by column: the blocks running at one time cover a block of about
// G tile rows by (blocks / G) tile columns, so both the rows they read and the rows they
// write are long runs of consecutive bytes, rather than whole input rows and short pieces
// of many output rows.
__device__ __forceinline__ void tile_origin(unsigned b, unsigned rows, unsigned cols, unsigned &row0, unsigned &col0)
{
    const unsigned tiles_x = (cols + BLOCK_TILE_COLS - 1) / BLOCK_TILE_COLS;
#if DIAGONAL
    const unsigned tiles_y = (rows + BLOCK_TILE_ROWS - 1) / BLOCK_TILE_ROWS;
    const unsigned y = b % tiles_y;
    const unsigned x = (b / tiles_y + y) % tiles_x;
#elif GROUP
    const unsigned tiles_y = (rows + BLOCK_TILE_ROWS - 1) / BLOCK_TILE_ROWS;
    const unsigned band = b / (GROUP * tiles_x), first = band * GROUP, i = b - first * tiles_x;
    const unsigned height = tiles_y - first < GROUP ? tiles_y - first : GROUP;
    const unsigned y = first + i % height;
    const unsigned x = i / height;
#else
    const unsigned y = b / tiles_x;
    const unsigned x = b % tiles_x;
#endif
    row0 = y * BLOCK_TILE_ROWS;
    col0 = x * BLOCK_TILE_COLS;
}

// First input row and column of the block tile this block moves (block tile blockIdx.x).
__device__ __forceinline__ void block_tile_origin(unsigned rows, unsigned cols, unsigned &row0, unsigned &col0)
{
    tile_origin(blockIdx.x, rows, cols, row0, col0);
}
