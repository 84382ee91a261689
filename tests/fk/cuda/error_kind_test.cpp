// cuda_error_kind (fk/cuda/error_kind.h) against the CUDA header's own names,
// and check_cuda's two ways of reporting: a recoverable error is cleared from
// the thread's last error (reported once), a sticky one says the context is
// lost. The classification and the sticky message run on every machine of a
// CUDA build; the clearing needs a GPU (without a driver every runtime call,
// cudaPeekAtLastError included, returns the initialization error), so it
// skips elsewhere (scripts/gpu-check runs it on one). A CPU-only build has no
// CUDA runtime to link these against, so it compiles nothing here.
#ifdef FK_WITH_CUDA
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/error_kind.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"

namespace fk::cuda {
namespace {

TEST(CudaErrorKind, FaultsThatCorruptTheContextAreSticky) {
  for (cudaError_t e :
       {cudaErrorIllegalAddress, cudaErrorLaunchTimeout, cudaErrorAssert,
        cudaErrorHardwareStackError, cudaErrorIllegalInstruction, cudaErrorMisalignedAddress,
        cudaErrorInvalidAddressSpace, cudaErrorInvalidPc, cudaErrorLaunchFailure})
    EXPECT_EQ(cuda_error_kind(e), CudaErrorKind::kSticky) << cudaGetErrorName(e);
}

// Hardware faults found while work ran, and the driver's "unknown": nothing
// shows the context survived them, so they are not cleared and retried.
TEST(CudaErrorKind, UncorrectableHardwareAndUnknownErrorsAreSticky) {
  for (cudaError_t e : {cudaErrorECCUncorrectable, cudaErrorNvlinkUncorrectable, cudaErrorUnknown})
    EXPECT_EQ(cuda_error_kind(e), CudaErrorKind::kSticky) << cudaGetErrorName(e);
}

TEST(CudaErrorKind, FailedCallsAreRecoverable) {
  for (cudaError_t e :
       {cudaErrorInvalidValue, cudaErrorMemoryAllocation, cudaErrorInvalidDevice, cudaErrorNoDevice,
        cudaErrorInsufficientDriver, cudaErrorInvalidConfiguration, cudaErrorLaunchOutOfResources,
        cudaErrorCooperativeLaunchTooLarge, cudaErrorStreamCaptureInvalidated,
        cudaErrorStreamCaptureUnsupported, cudaErrorNotReady})
    EXPECT_EQ(cuda_error_kind(e), CudaErrorKind::kRecoverable) << cudaGetErrorName(e);
  EXPECT_EQ(cuda_error_kind(cudaSuccess), CudaErrorKind::kSuccess);
}

// A device index no machine has: the call fails and records its error as
// the thread's last error.
cudaError_t failing_call() {
  return cudaSetDevice(1 << 20);
}

TEST(CudaCheck, RecoverableErrorIsReportedOnceAndCleared) {
  if (device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << ::fk::cuda::no_device_reason();
  // Without check_cuda the failure stays behind for the next cudaGetLastError.
  ASSERT_NE(failing_call(), cudaSuccess);
  ASSERT_NE(cudaPeekAtLastError(), cudaSuccess);
  cudaGetLastError();

  const cudaError_t e = failing_call();
  try {
    detail::check_cuda(e, "test call");
    FAIL() << "check_cuda accepted " << cudaGetErrorName(e);
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("test call"), std::string::npos) << err.what();
    EXPECT_NE(err.given().find(cudaGetErrorName(e)), std::string::npos) << err.what();
    EXPECT_EQ(err.given().find("sticky"), std::string::npos) << err.what();
  }
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
}

TEST(CudaCheck, StickyErrorSaysTheContextIsLost) {
  try {
    detail::check_cuda(cudaErrorIllegalAddress, "a kernel");
    FAIL() << "check_cuda accepted cudaErrorIllegalAddress";
  } catch (const Error& err) {
    EXPECT_NE(err.given().find("cudaErrorIllegalAddress"), std::string::npos) << err.what();
    EXPECT_NE(err.given().find("sticky"), std::string::npos) << err.what();
    EXPECT_NE(err.given().find("restart the process"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace fk::cuda
#endif  // FK_WITH_CUDA
