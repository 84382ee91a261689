// The depth-compensated operator on a CUDA device: its cell weights are
// built on the host (Hutchinson probes of the inner operator) and must meet
// a device field there (they stayed on the host, a mixed-device error in the
// gradient's rescaling). The inner operator is a pointwise map, which runs
// on a device. Without a usable device the test skips (scripts/gpu-check
// runs it on one).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/operators/depth_compensated.h"
#include "nefi/operators/pointwise.h"

namespace {

using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::expect_same_values;

TEST(NefiDepthCompensatedDevice, ValueAndRescaledGradientMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Dims shape{4, 3, 5};
  fk::Generator gen(9);
  auto inner = std::make_shared<nefi::PointwiseOperator>(
      fk::uniform(shape, 0.2, 1.0, {fk::DType::F64}, &gen));
  nefi::DepthCompensation o;
  o.gamma = 1.0;
  const nefi::DepthCompensatedOperator op(inner, shape, o);
  const fk::Tensor x = fk::randn(shape, {fk::DType::F64}, &gen);
  const fk::Tensor g = fk::randn(shape, {fk::DType::F64}, &gen);
  // Elementwise f64 products on both sides: bitwise.
  expect_device_matches_cpu(op, x, g, fk::DType::F64, expect_same_values);
}

}  // namespace
