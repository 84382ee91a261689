// The errors of the CUDA launchers (unsupported op/dtype pairs, bad GEMM and
// FFT arguments) and of a missing device (on every machine, CPU-only builds
// included). The parity tables are in *_parity_test.cpp (see parity.h).
#include <gtest/gtest.h>

#include <string>

#include "fk/cuda/blas.h"
#include "fk/cuda/fft.h"
#include "fk/cuda/kernels.h"
#include "parity.h"

namespace fk::cuda_parity {
namespace {

TEST(CudaLaunchers, ErrorsNameTheProblem) {
  FK_SKIP_WITHOUT_GPU();
  Tensor t = device_empty({64}, DType::Bool);  // 64 bytes
  void* buf = t.data_ptr();
  try {
    cuda::launch_unary(cuda::kUnaryExp, cuda::kI32, buf, buf, 4, 0, 0, stream());
    FAIL() << "exp on i32 must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("integer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cuda::launch_binary(cuda::kBinaryLt, cuda::kC64, buf, buf, buf, 1, Dims{2}.data(),
                                   nullptr, nullptr, nullptr, 1, 0, stream()),
               Error);
  EXPECT_THROW(cuda::launch_reduce_lastdim(cuda::kReduceMax, cuda::kC128, buf, buf, 1, 2, stream()),
               Error);
  EXPECT_THROW(cuda::launch_prod_backward_lastdim(cuda::kI32, buf, buf, buf, 1, 2, stream()),
               Error);
  EXPECT_THROW(cuda::gemm(kDev, cuda::kI32, false, false, 2, 2, 2, 1, buf, 2, buf, 2, 0, buf, 2,
                          stream(), false),
               Error);
  EXPECT_THROW(cuda::gemm(kDev, cuda::kF32, false, false, 2, 3, 2, 1, buf, 2, buf, 2, 0, buf, 2,
                          stream(), false),  // ldb 2 < n 3
               Error);
  cuda::FftLayout l;
  l.rank = 4;
  EXPECT_THROW(cuda::fft_execute(kDev, cuda::kFftC2C, cuda::kC64, false, l, buf, buf, stream()),
               Error);
}

// A CUDA tensor on a device that does not exist (any device on a machine
// without a usable GPU, as in CPU-only builds) cannot be made, and says why;
// the CUDA launchers of a CPU-only build throw instead of doing nothing.
// Runs everywhere (gpu-check treats a skip as a failure).
TEST(CudaLaunchers, MissingDeviceErrors) {
  const Device missing = cuda_device(cuda::device_count());
  try {
    zeros({2, 3}, {DType::F32, missing});
    ADD_FAILURE() << "made a tensor on " << missing.str();
  } catch (const Error& e) {
    EXPECT_NE(e.expected().find("available device"), std::string::npos) << e.what();
  }
  Tensor x = ones({2, 3});
  EXPECT_THROW(x.to(missing), Error);
  EXPECT_THROW(arange(4, {DType::I64, missing}), Error);
  if (!cuda::built_with_cuda()) {
    try {
      cuda::launch_prod_backward_lastdim(cuda::kF32, nullptr, nullptr, nullptr, 1, 1, nullptr);
      ADD_FAILURE() << "a CPU-only build ran a CUDA launcher";
    } catch (const Error& e) {
      EXPECT_NE(e.given().find("CPU-only"), std::string::npos) << e.what();
    }
    EXPECT_THROW(
        cuda::launch_index_select(cuda::kF32, nullptr, nullptr, nullptr, 1, 1, 1, 1, {}, nullptr),
        Error);
  }
}

}  // namespace
}  // namespace fk::cuda_parity
