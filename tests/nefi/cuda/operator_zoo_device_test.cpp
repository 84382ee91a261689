// The built-in operators from_forward and nefi fit offer (sampling.h,
// intensity.h, Stack) on a CUDA device against their CPU paths: output and
// input gradient, f64 and f32, a batch of two. Their index tables are kept
// per device (prepare_tables makes them before a capture). Without a usable
// device the test skips (scripts/gpu-check runs it on one).
#include <gtest/gtest.h>

#include <memory>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/intensity.h"
#include "nefi/operators/sampling.h"

namespace {

using nefi::cuda_test::close_within;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::kGpu;

TEST(NefiOperatorZooDevice, EachMatchesTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  fk::Generator gen(11);
  const fk::Dims shape{8, 6};
  std::vector<double> keep(48);
  const auto u = fk::rand({48}, {fk::DType::F64}, &gen).to_vector<double>();
  for (int i = 0; i < 48; ++i) keep[i] = u[i] < 0.4 ? 1.0 : 0.0;
  keep[0] = 1.0;
  const fk::Tensor mask = fk::from_vector(keep, shape);
  auto path = std::make_shared<nefi::AxisIntegralOperator>(shape, 1, 0.125);
  const std::vector<nefi::OperatorPtr> zoo{
      std::make_shared<nefi::SamplingOperator>(mask),
      std::make_shared<nefi::FourierSamplingOperator>(mask),
      std::make_shared<nefi::DownsampleOperator>(std::vector<int64_t>{2, 3}),
      std::make_shared<nefi::PhaseRetrievalOperator>(2, 1.5),
      path,
      std::make_shared<nefi::BeerLambertOperator>(path, 2.0),
      std::make_shared<nefi::StackOperator>(
          std::vector<nefi::OperatorPtr>{path, std::make_shared<nefi::SamplingOperator>(mask)},
          shape)};
  const fk::Tensor x = fk::uniform({2, 8, 6}, 0.0, 1.0, {fk::DType::F64}, &gen);
  for (const auto& op : zoo) {
    op->prepare_tables(kGpu, fk::DType::F64);
    fk::Dims out = op->output_shape(shape);
    out.insert(0, 2);
    const fk::Tensor g = fk::randn(out, {fk::DType::F64}, &gen);
    SCOPED_TRACE(op->kind());
    expect_device_matches_cpu(*op, x, g, fk::DType::F64, close_within(1e-12));
    expect_device_matches_cpu(*op, x, g, fk::DType::F32, close_within(1e-5));
  }
}

}  // namespace
