#pragma once
// NEFI_HOST_DEVICE marks the per-element arithmetic shared by nefi's CUDA
// kernels and their CPU checks (the *_cells.h headers): __host__ __device__
// under nvcc, empty otherwise, so a CPU build compiles the same functions
// without any CUDA header.
#ifdef __CUDACC__
#define NEFI_HOST_DEVICE __host__ __device__
#else
#define NEFI_HOST_DEVICE
#endif

// NEFI_UNROLL: `#pragma unroll` for the loop after it in device code, nothing
// on the host (where GCC would warn of an unknown pragma). For loops over a
// struct's array whose body is too large for nvcc to unroll on its own: a
// rolled loop indexes the array at run time, which puts the struct in local
// memory.
#ifdef __CUDA_ARCH__
#define NEFI_UNROLL _Pragma("unroll")
#else
#define NEFI_UNROLL
#endif
