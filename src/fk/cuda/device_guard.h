#pragma once
// The CUDA runtime's errors as fk::Error, and a scope that makes a device
// current: the one copy used by the runtime, cuBLAS, cuFFT and the kernel
// launchers (host code; compiled by the host compiler and by nvcc alike).
#include <cuda_runtime.h>

namespace fk::cuda::detail {

// Throws fk::Error naming `where`, expecting cudaSuccess, given e's name and
// text. A recoverable error (error_kind.h) is also cleared from the thread's
// last error, so that it is reported once; a sticky one cannot be cleared,
// and its message says the context is lost and the process must restart.
void check_cuda(cudaError_t e, const char* where);

// Makes `device` current for the scope and restores the previous device after
// (fk's calls leave the caller's current device as they found it).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
};

}  // namespace fk::cuda::detail
