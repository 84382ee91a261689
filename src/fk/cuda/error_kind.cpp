// cuda_error_kind (see error_kind.h). The codes are cudaError_t values of the
// CUDA 12/13 headers; device_guard.cpp checks them against the header where
// it is compiled with one.
#include "fk/cuda/error_kind.h"

namespace fk::cuda {

CudaErrorKind cuda_error_kind(int code) {
  switch (code) {
    case 0:
      return CudaErrorKind::kSuccess;
    // The header says only "detected during execution" for these two, but
    // the work that ran is lost and the driver tears down the contexts that
    // touched the faulty memory or link: nothing later in this process can be
    // trusted, as after a kernel fault.
    case 214:  // cudaErrorECCUncorrectable
    case 220:  // cudaErrorNvlinkUncorrectable
    case 226:  // cudaErrorContained
    case 700:  // cudaErrorIllegalAddress
    case 702:  // cudaErrorLaunchTimeout
    case 710:  // cudaErrorAssert
    case 714:  // cudaErrorHardwareStackError
    case 715:  // cudaErrorIllegalInstruction
    case 716:  // cudaErrorMisalignedAddress
    case 717:  // cudaErrorInvalidAddressSpace
    case 718:  // cudaErrorInvalidPc
    case 719:  // cudaErrorLaunchFailure
    case 721:  // cudaErrorTensorMemoryLeak
    case 810:  // cudaErrorMpsClientTerminated
    case 911:  // cudaErrorExternalDevice
    // "An unknown internal error": nothing says the context survived it, and
    // clearing it and going on would hide a fault behind the next call's
    // result; reported as lost (a false alarm costs a restart, not results).
    case 999:  // cudaErrorUnknown
      return CudaErrorKind::kSticky;
    default:
      return CudaErrorKind::kRecoverable;
  }
}

std::string sticky_error_note() {
  return "a sticky error: a kernel faulted (or the GPU reported an uncorrectable or unknown "
         "error) and the CUDA context is corrupted; every later CUDA call of this process fails "
         "with it, so restart the process (run with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer "
         "to find the faulting kernel; nvidia-smi -q shows ECC and NVLink errors)";
}

}  // namespace fk::cuda
