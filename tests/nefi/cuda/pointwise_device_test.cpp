// The pointwise operator on a CUDA device: its weight map is built on the
// host and must meet a device field on that device (it stayed on the host, a
// mixed-device error in the product). Without a usable device the test skips
// (scripts/gpu-check runs it on one).
#include <gtest/gtest.h>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/operators/pointwise.h"

namespace {

using nefi::cuda_test::kGpu;

TEST(NefiPointwiseDevice, WeightedFieldMatchesTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  fk::Generator gen(7);
  const nefi::PointwiseOperator op(fk::uniform({6, 5}, 0.5, 2.0, {fk::DType::F64}, &gen));
  const fk::Tensor x = fk::randn({6, 5}, {fk::DType::F64}, &gen);
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    const fk::Tensor y = op.apply(x.to(dt).to(kGpu));
    ASSERT_EQ(y.device(), kGpu);
    // One rounded product per cell on either side: bitwise.
    EXPECT_EQ(y.to(fk::kCPU).to_vector<double>(), op.apply(x.to(dt)).to_vector<double>());
  }
}

}  // namespace
