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
