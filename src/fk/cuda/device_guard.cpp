// check_cuda and DeviceGuard (see device_guard.h).
#include "fk/cuda/device_guard.h"

#include <string>

#include "fk/cuda/error_kind.h"
#include "fk/error.h"

namespace fk::cuda::detail {

// error_kind.cpp classifies by number, without the header: the numbers are
// the header's (the codes added after CUDA 12.0 are left out of this check).
static_assert(cudaErrorECCUncorrectable == 214 && cudaErrorNvlinkUncorrectable == 220 &&
              cudaErrorUnknown == 999 && cudaErrorIllegalAddress == 700 &&
              cudaErrorLaunchTimeout == 702 && cudaErrorAssert == 710 &&
              cudaErrorHardwareStackError == 714 && cudaErrorIllegalInstruction == 715 &&
              cudaErrorMisalignedAddress == 716 && cudaErrorInvalidAddressSpace == 717 &&
              cudaErrorInvalidPc == 718 && cudaErrorLaunchFailure == 719 &&
              cudaErrorMpsClientTerminated == 810 && cudaErrorExternalDevice == 911);

void check_cuda(cudaError_t e, const char* where) {
  if (e == cudaSuccess) return;
  std::string given = std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
  if (cuda_error_kind(e) == CudaErrorKind::kSticky) {
    throw Error(where, "cudaSuccess", given + ": " + sticky_error_note());
  }
  // A failed call also records its error as the thread's last error; left
  // there, the next check_launch (cudaGetLastError) would blame an unrelated
  // launch for it. It is reported once, by this throw.
  cudaGetLastError();
  throw Error(where, "cudaSuccess", given);
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
