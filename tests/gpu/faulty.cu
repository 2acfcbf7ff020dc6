// A copy with planted faults that break the CUDA context or never return, for
// tests/gpu/test_gpu_isolation.py (not part of the catalog).
//   BUG 0: correct; 1: one thread writes far out of bounds (an illegal address);
//   2: one thread executes a trap; 3: one thread loops forever.
extern "C" __global__ void faulty(float *__restrict__ out, const float *__restrict__ in, int n)
{
    const size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x;
    if (i >= (size_t)n)
        return;
#if BUG == 1
    if (i == 0)
        ((volatile float *)out)[(size_t)1 << 40] = 1.0f;  // 4 TiB past the array: unmapped
#elif BUG == 2
    if (i == 0)
        asm volatile("trap;");
#elif BUG == 3
    if (i == 0)
        for (;;)
            __nanosleep(1000);  // an instruction with a side effect: the loop is never removed
#endif
    out[i] = in[i];
}
