// FusedOptimizer's arithmetic beyond Adam (Adam's own: solve_test.cpp):
// per-segment learning rates (a frozen run untouched and out of the clipping
// norm, a scaled run equal to a plain step at the scaled lr) and heavy-ball
// SGD against torch.optim.SGD's formula; f32 Adam's 1 - beta2 taken in f64;
// no weight decay keeping an infinite parameter.
#include "nefi/solve/fused_optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/factory.h"
#include "fk/test_util.h"

namespace {

fk::Tensor leaf(const std::vector<double>& v) {
  fk::Tensor t = fk::from_vector(v, {static_cast<int64_t>(v.size())});
  t.set_requires_grad(true);
  return t;
}

TEST(NefiFusedOptimizer, SegmentsScaleFreezeAndLeaveTheNormOfFrozenRuns) {
  const std::vector<double> x0{1, -2, 3, 0.5, -0.25, 4}, g{0.3, -0.1, 0.2, 5, -7, 0.4};
  nefi::OptimizerOptions o;
  o.weight_decay = 0.1;
  o.grad_clip = 1.0;
  fk::Tensor a = leaf(x0);
  nefi::FusedOptimizer seg({a}, o);
  seg.set_lr_segments(0, {{0, 3, 2.0}, {3, 3, 0.0}});
  a.set_grad(fk::from_vector(g, {6}));
  const double norm = seg.step(0.01);
  // The norm counts the trained run only.
  EXPECT_NEAR(norm, std::sqrt(0.09 + 0.01 + 0.04), 1e-12);
  // The trained run equals a plain step of those 3 elements at lr x 2 with
  // that norm; the frozen run is untouched.
  fk::Tensor b = leaf({1, -2, 3});
  nefi::FusedOptimizer plain({b}, o);
  b.set_grad(fk::from_vector(std::vector<double>{0.3, -0.1, 0.2}, {3}));
  plain.step(0.02);
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(av[i], bv[i]) << i;
  for (int i = 3; i < 6; ++i) EXPECT_EQ(av[i], x0[i]) << i;
  auto err = [&](std::vector<nefi::LrSegment> s) {
    return fk::test::error_of([&] { seg.set_lr_segments(0, s); });
  };
  EXPECT_NE(err({{0, 3, 1.0}}).find("covering all 6"), std::string::npos);
  EXPECT_NE(err({{0, 3, 1.0}, {2, 4, 1.0}}).find("consecutive"), std::string::npos);
  EXPECT_NE(err({{0, 6, -1.0}}).find(">= 0"), std::string::npos);
}

TEST(NefiFusedOptimizer, SgdIsHeavyBallMomentum) {
  nefi::OptimizerOptions o;
  o.sgd = true;
  o.momentum = 0.9;
  o.weight_decay = 0.01;
  fk::Tensor x = leaf({1.0, -2.0});
  nefi::FusedOptimizer sgd({x}, o);
  const std::vector<std::vector<double>> grads{{0.5, 0.25}, {-1.0, 2.0}};
  std::vector<double> ref{1.0, -2.0}, buf{0, 0};
  for (int t = 0; t < 2; ++t) {
    x.set_grad(fk::from_vector(grads[t], {2}));
    sgd.step(0.1);
    for (int i = 0; i < 2; ++i) {
      const double gi = grads[t][i] + 0.01 * ref[i];
      buf[i] = t == 0 ? gi : 0.9 * buf[i] + gi;  // torch: the first buffer is the gradient
      ref[i] -= 0.1 * buf[i];
    }
  }
  const auto v = x.to_vector<double>();
  EXPECT_NEAR(v[0], ref[0], 1e-15);
  EXPECT_NEAR(v[1], ref[1], 1e-15);
}

// f32 Adam forms 1 - beta2 in f64 before rounding: at beta2 = 0.99999 the f32
// difference is 7e-4 off, and the first step came out that much longer than
// lr (torch: 0.90000 from 1 at lr 0.1; it was 0.90007).
TEST(NefiFusedOptimizer, SinglePrecisionAdamTakesOneMinusBetaInDouble) {
  nefi::OptimizerOptions o;
  o.beta2 = 0.99999;
  o.eps = 1e-12;
  fk::Tensor x = fk::ones({4}, {fk::DType::F32}).set_requires_grad(true);
  nefi::FusedOptimizer adam({x}, o);
  x.set_grad(fk::full({4}, 0.5, {fk::DType::F32}));
  adam.step(0.1);
  for (double v : x.to_vector<double>()) EXPECT_NEAR(v, 0.9, 2e-7);
}

// Weight decay 0 adds nothing (0 * inf is NaN): an infinite parameter stays
// infinite under Adam (L2 form) and SGD, as torch skips a zero decay.
TEST(NefiFusedOptimizer, NoWeightDecayKeepsAnInfiniteParameter) {
  for (bool sgd : {false, true}) {
    nefi::OptimizerOptions o;
    o.sgd = sgd;
    o.decoupled = false;
    fk::Tensor x = leaf({-INFINITY, 1.0});
    nefi::FusedOptimizer opt({x}, o);
    x.set_grad(fk::from_vector(std::vector<double>{0.5, 0.5}, {2}));
    opt.step(0.1);
    EXPECT_EQ(x.to_vector<double>()[0], -INFINITY) << sgd;
  }
}

// Settings no Adam or SGD means are refused when the optimizer is made, a
// negative or non-finite rate at the step (a step of -1 ascended).
TEST(NefiFusedOptimizer, MeaninglessSettingsAreRefused) {
  for (auto bad : {+[](nefi::OptimizerOptions& o) { o.eps = -1; },
                   +[](nefi::OptimizerOptions& o) { o.beta1 = 2; },
                   +[](nefi::OptimizerOptions& o) { o.beta2 = 1; },
                   +[](nefi::OptimizerOptions& o) { o.weight_decay = -1; },
                   +[](nefi::OptimizerOptions& o) { o.momentum = NAN; }}) {
    nefi::OptimizerOptions o;
    bad(o);
    EXPECT_THROW(nefi::FusedOptimizer({leaf({1.0})}, o), fk::Error);
  }
  fk::Tensor x = leaf({0.0});
  nefi::FusedOptimizer adam({x}, {});
  x.set_grad(fk::from_vector(std::vector<double>{1.0}, {1}));
  EXPECT_THROW(adam.step(-1), fk::Error);
  EXPECT_THROW(adam.step(INFINITY), fk::Error);
  EXPECT_EQ(x.to_vector<double>()[0], 0.0);
}

}  // namespace
