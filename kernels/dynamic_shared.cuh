// Dynamic shared memory of a block (the kernel file's [launch] shared, bytes): a kernel declares
// its byte array with DYNAMIC_SHARED(name) and views it as its tiles. Unlike a static __shared__
// array, it may exceed 48 KiB (the launch then opts in: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
// The CPU emulation of the tests (tests/cuda_on_cpu.py) defines its own DYNAMIC_SHARED.
#pragma once

#ifndef DYNAMIC_SHARED
#define DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif
