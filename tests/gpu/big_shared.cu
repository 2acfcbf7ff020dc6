#define TILE (TILE_K * 1024)

// Reverses each tile of TILE elements of `in` through TILE elements of dynamic shared memory
// (TILE * sizeof(ELEM_T) bytes per block: 100 KiB for TILE_K = 25, float32, above the 48 KiB a
// block gets without the opt-in). The last tile may be short: it is reversed over its own length.
extern "C" __global__ void reverse_tiles(ELEM_T *out, const ELEM_T *in, long long n)
{
    extern __shared__ unsigned char raw[];
    ELEM_T *tile = reinterpret_cast<ELEM_T *>(raw);
    const long long base = (long long)blockIdx.x * TILE;
    const int count = (int)min((long long)TILE, n - base);
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        tile[i] = in[base + i];
    __syncthreads();
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        out[base + i] = tile[count - 1 - i];
}
