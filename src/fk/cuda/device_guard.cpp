// check_cuda and DeviceGuard (see device_guard.h).
#include "fk/cuda/device_guard.h"

#include <string>

#include "fk/error.h"

namespace fk::cuda::detail {

void check_cuda(cudaError_t e, const char* where) {
  if (e != cudaSuccess) {
    throw Error(where, "cudaSuccess",
                std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")");
  }
}

DeviceGuard::DeviceGuard(int device) {
  cudaGetDevice(&prev_);
  if (prev_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
}

// Not checked: a destructor must not throw, and the previous device was valid.
DeviceGuard::~DeviceGuard() {
  cudaSetDevice(prev_);
}

}  // namespace fk::cuda::detail
