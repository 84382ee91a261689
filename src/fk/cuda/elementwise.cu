// Elementwise CUDA kernels (launchers declared in fk/cuda/kernels.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "fk/cuda/kernels.h"

namespace fk::cuda {
namespace {

template <typename T>
__global__ void fill_kernel(T* out, T value, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (; i < n; i += stride) out[i] = value;
}

int blocks_for(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

}  // namespace

void fill_f32(float* out, float value, int64_t n, void* stream) {
  fill_kernel<<<blocks_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(out, value, n);
}

void fill_f64(double* out, double value, int64_t n, void* stream) {
  fill_kernel<<<blocks_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(out, value, n);
}

}  // namespace fk::cuda
