// A 256-bin histogram of n bytes: bins[v] += the number of i with in[i] == v.
//
// Each block counts into COPIES private copies of the 256 bins in dynamic shared memory
// (thread t adds into copy t % COPIES: fewer threads collide on one shared-memory atomic),
// reading the input as 32-bit words (4 bytes a load, coalesced) in a grid-stride loop over at
// most MAX_BLOCKS blocks; then adds its copies into the global bins with one atomicAdd per bin.
// The bins are only ever added to: they must start at zero, which the kernel file's
// `reset = "zeros"` on `bins` asks for before every launch (of the check, of the timing, and of
// autotune.launcher(..., reset=True)).
//
// Tunables: BLOCK_SIZE (threads), COPIES (private copies of the bins), MAX_BLOCKS (grid cap).

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
#ifndef COPIES
#define COPIES 4
#endif
#define BINS 256

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
histogram256(unsigned int *bins, const unsigned char *in, long long n)
{
    extern __shared__ unsigned int copies[];  // COPIES x BINS
    for (int i = threadIdx.x; i < COPIES * BINS; i += BLOCK_SIZE)
        copies[i] = 0;
    __syncthreads();

    unsigned int *mine = copies + (threadIdx.x % COPIES) * BINS;
    const long long words = n / 4;
    const unsigned int *in4 = reinterpret_cast<const unsigned int *>(in);  // cudaMalloc'd: 256-byte aligned
    const long long stride = (long long)gridDim.x * BLOCK_SIZE;
    for (long long w = (long long)blockIdx.x * BLOCK_SIZE + threadIdx.x; w < words; w += stride) {
        const unsigned int v = __ldg(in4 + w);
        atomicAdd(&mine[v & 0xFFu], 1u);
        atomicAdd(&mine[(v >> 8) & 0xFFu], 1u);
        atomicAdd(&mine[(v >> 16) & 0xFFu], 1u);
        atomicAdd(&mine[v >> 24], 1u);
    }
    if (blockIdx.x == 0 && threadIdx.x < n - 4 * words)  // the last n % 4 bytes
        atomicAdd(&mine[in[4 * words + threadIdx.x]], 1u);
    __syncthreads();

    for (int b = threadIdx.x; b < BINS; b += BLOCK_SIZE) {
        unsigned int sum = 0;
        for (int c = 0; c < COPIES; ++c)
            sum += copies[c * BINS + b];
        if (sum)
            atomicAdd(&bins[b], sum);
    }
}

// The check's reference: one global atomicAdd per byte (slow, obviously right).
extern "C" __global__ void histogram_reference(unsigned int *bins, const unsigned char *in, long long n)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[in[i]], 1u);
}
