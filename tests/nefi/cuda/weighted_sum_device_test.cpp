// A LossSet's weighted total on a CUDA device (losses/loss.cpp): computed
// there without a host read, its value is the host's f64 sum of w_i c_i over
// the device components, rounded to f32 once, and its backward hands each
// term w_i, so the prediction's gradient is sum_i w_i dc_i/dpred, written out
// here for c_0 = mean(pred), c_1 = sum(pred^2). Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/losses/loss.h"
#include "nefi/scalar.h"

namespace {

struct MeanLoss : nefi::Loss {
  MeanLoss() : Loss("mean") {}
  fk::Tensor forward(const nefi::LossContext& c) const override { return fk::mean(c.pred); }
};
struct SumSquaresLoss : nefi::Loss {
  SumSquaresLoss() : Loss("sum_squares") {}
  fk::Tensor forward(const nefi::LossContext& c) const override {
    return fk::sum(fk::square(c.pred));
  }
};

TEST(NefiWeightedSumDevice, ValueAndGradientWithoutAHostRead) {
  NEFI_SKIP_WITHOUT_GPU();
  const std::vector<float> host{0.5f, -1.25f, 2.f, 0.125f};
  const double w0 = 0.3, w1 = 1.7;
  fk::Tensor pred = fk::from_vector(host, fk::Dims{4}).to(fk::cuda_device(0));
  pred.set_requires_grad(true);
  nefi::LossSet losses;
  losses.add(std::make_shared<MeanLoss>(), w0);
  losses.add(std::make_shared<SumSquaresLoss>(), w1);
  nefi::LossContext ctx;
  ctx.pred = pred;
  const nefi::LossSet::Value v = losses.forward(ctx);
  ASSERT_TRUE(v.total.device().is_cuda());
  ASSERT_EQ(v.total.dtype(), fk::DType::F32);
  const double c0 = nefi::scalar_value(v.components[0]);
  const double c1 = nefi::scalar_value(v.components[1]);
  double want = 0;
  want += w0 * c0;
  want += w1 * c1;
  EXPECT_EQ(nefi::scalar_value(v.total), static_cast<double>(static_cast<float>(want)));
  v.total.backward(fk::ones(fk::Dims{}, {fk::DType::F32, fk::cuda_device(0)}));
  const std::vector<float> g = pred.grad().to_vector<float>();
  ASSERT_EQ(g.size(), host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    // d/dp_i: w0 / n + w1 * 2 p_i, with each term's seed w_i rounded to f32.
    const double expect = static_cast<float>(w0) / 4.0 + static_cast<float>(w1) * 2.0 * host[i];
    EXPECT_NEAR(g[i], expect, 1e-6 * (1 + std::abs(expect))) << i;
  }
}

}  // namespace
