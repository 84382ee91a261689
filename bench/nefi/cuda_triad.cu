// The bandwidth reference of nefi_cuda_bench: a[i] = b[i] + s · c[i] (STREAM
// triad), one thread per element, on a given stream.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void nefi_bench_triad_kernel(float* __restrict__ a, const float* __restrict__ b,
                                        const float* __restrict__ c, float s, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}

cudaError_t nefi_bench_triad(float* a, const float* b, const float* c, float s, int64_t n,
                             cudaStream_t stream) {
  const int threads = 256;
  nefi_bench_triad_kernel<<<static_cast<unsigned>((n + threads - 1) / threads), threads, 0,
                            stream>>>(a, b, c, s, n);
  return cudaGetLastError();
}
