// The tile order of the realigning transposes (vec_realign.cu, bytes_realign.cu), whose tile is
// square, SIDE x SIDE elements: common.cuh's tile_origin for such a tile, row-major or, with
// DIAGONAL=1, in diagonal order.
#pragma once

#include "common.cuh"

// First input row and column of tile b of a rows x cols matrix cut into side x side tiles.
__device__ __forceinline__ void side_tile_origin(unsigned b, unsigned rows, unsigned cols, unsigned side,
                                                 unsigned &row0, unsigned &col0)
{
    const unsigned tiles_x = (cols + side - 1) / side;
#if DIAGONAL
    const unsigned tiles_y = (rows + side - 1) / side;
    const unsigned y = b % tiles_y;
    const unsigned x = (b / tiles_y + y) % tiles_x;
#else
    const unsigned y = b / tiles_x;
    const unsigned x = b % tiles_x;
#endif
    row0 = y * side;
    col0 = x * side;
}
