// Shared definitions of the tiled kernels: element type, tunables and tile indexing.
//
// Tunables (compile-time macros, set with -D by autotune):
//   ELEM_T      element type (float, double, int, __half, ...)
//   TILE_DIM    a block moves a TILE_DIM x TILE_DIM tile
//   BLOCK_ROWS  the block is TILE_DIM x BLOCK_ROWS threads; each thread moves
//               TILE_DIM / BLOCK_ROWS elements of its column of the tile
//   IPAD        extra columns of the shared-memory tile (against bank conflicts)
//
// Matrices are row-major. The input is rows x cols; a transpose writes cols x rows.
// Tiles are numbered row-major over a 1-D grid, so any rows x cols >= 1 can be launched
// (a 2-D grid would cap rows / TILE_DIM at 65535); edge tiles are bounds-checked.
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
#ifndef IPAD
#define IPAD 0
#endif

#if TILE_DIM % BLOCK_ROWS != 0
#error "BLOCK_ROWS must divide TILE_DIM"
#endif

typedef ELEM_T elem_t;

// First input row and column of the tile this block moves.
__device__ __forceinline__ void tile_origin(int cols, int &row0, int &col0)
{
    const int tiles_x = (cols + TILE_DIM - 1) / TILE_DIM;
    row0 = (int)(blockIdx.x / tiles_x) * TILE_DIM;
    col0 = (int)(blockIdx.x % tiles_x) * TILE_DIM;
}
