// Losses against plain loops, their gradients (f64 gradcheck), and errors.
#include "minkowski/nn/loss.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/fk.h"
#include "fk/test_util.h"

namespace minkowski::nn {
namespace {

constexpr fk::DType kF64 = fk::DType::F64;

// -log softmax(x_i)[y] by hand.
double nll(const std::vector<double>& x, int64_t row, int64_t classes, int64_t y) {
  double mx = -1e300, s = 0;
  for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, x[row * classes + c]);
  for (int64_t c = 0; c < classes; ++c) s += std::exp(x[row * classes + c] - mx);
  return -(x[row * classes + y] - mx - std::log(s));
}

TEST(NnLoss, CrossEntropyIgnoresRowsAndWeightsClasses) {
  const fk::Tensor logits = fk::test::random_tensor({5, 3}, kF64, -2, 2);
  const std::vector<int64_t> y{2, -100, 0, 1, 2};
  const fk::Tensor labels = fk::from_vector(y);
  const auto x = logits.to_vector<double>();
  double plain = 0;
  for (int64_t i : {0, 2, 3, 4}) plain += nll(x, i, 3, y[i]);
  EXPECT_NEAR(cross_entropy(logits, labels).item(), plain / 4, 1e-12);
  const std::vector<double> w{0.5, 2.0, 1.5};
  double num = 0, den = 0;
  for (int64_t i : {0, 2, 3, 4}) {
    num += w[y[i]] * nll(x, i, 3, y[i]);
    den += w[y[i]];
  }
  EXPECT_NEAR(cross_entropy(logits, labels, kIgnoreIndex, fk::from_vector(w)).item(), num / den,
              1e-12);
  EXPECT_NEAR(cross_entropy(logits, fk::from_vector(std::vector<int64_t>{2, 7, 0, 1, 2}), 7).item(),
              plain / 4, 1e-12);
}

TEST(NnLoss, Gradients) {
  const fk::Tensor labels = fk::from_vector(std::vector<int64_t>{2, -100, 0, 1});
  const fk::Tensor w = fk::from_vector(std::vector<double>{0.5, 2.0, 1.5});
  auto ce = [&](const std::vector<fk::Tensor>& in) {
    return cross_entropy(in[0], labels, kIgnoreIndex, w);
  };
  const fk::Tensor logits = fk::test::random_tensor({4, 3}, kF64).set_requires_grad(true);
  EXPECT_EQ(fk::testing::gradcheck(ce, {logits}), "");
  const fk::Tensor targets = fk::test::random_tensor({4, 3}, kF64, 0, 1, 4);
  auto bce = [&](const std::vector<fk::Tensor>& in) {
    return binary_cross_entropy_with_logits(in[0], targets);
  };
  EXPECT_EQ(fk::testing::gradcheck(bce, {logits}), "");
  auto sq = [&](const std::vector<fk::Tensor>& in) { return mse(in[0], in[1]); };
  EXPECT_EQ(
      fk::testing::gradcheck(
          sq, {logits, fk::test::random_tensor({4, 3}, kF64, -1, 1, 9).set_requires_grad(true)}),
      "");
}

TEST(NnLoss, BinaryCrossEntropyIsStableForLargeLogits) {
  const fk::Tensor x = fk::from_vector(std::vector<double>{-800, -1, 0, 2, 800});
  const fk::Tensor t = fk::from_vector(std::vector<double>{0, 1, 0.5, 0, 1});
  double plain = 0;
  const auto xv = x.to_vector<double>(), tv = t.to_vector<double>();
  for (int i = 1; i < 4; ++i) {
    const double p = 1 / (1 + std::exp(-xv[i]));
    plain -= tv[i] * std::log(p) + (1 - tv[i]) * std::log(1 - p);
  }
  // The saturated ends are right (loss 0), not inf or nan.
  EXPECT_NEAR(binary_cross_entropy_with_logits(x, t).item(), plain / 5, 1e-12);
  EXPECT_NEAR(mse(x, t).item(), (800.0 * 800 + 4 + 0.25 + 4 + 799.0 * 799) / 5, 1e-9);
}

// The gradient is (sigmoid(x) - t) / N at every logit, x = 0 too (relu's and
// |x|'s slopes of 0 there lost the 1/2: a zero-initialised head read -t / N).
TEST(NnLoss, BinaryCrossEntropyGradientAtAZeroLogit) {
  fk::Tensor x = fk::from_vector(std::vector<double>{0, 0, 1.5, -2}).set_requires_grad(true);
  const fk::Tensor t = fk::from_vector(std::vector<double>{1, 0, 0.25, 1});
  binary_cross_entropy_with_logits(x, t).backward();
  const auto g = x.grad().to_vector<double>();
  const std::vector<double> xv{0, 0, 1.5, -2}, tv{1, 0, 0.25, 1};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(g[i], (1 / (1 + std::exp(-xv[i])) - tv[i]) / 4, 1e-15) << i;
}

TEST(NnLoss, AllIgnoredIsZeroAndBadLabelsThrow) {
  const fk::Tensor logits = fk::test::random_tensor({2, 3}, kF64).set_requires_grad(true);
  const fk::Tensor loss = cross_entropy(logits, fk::full({2}, -100, {fk::DType::I64}));
  EXPECT_EQ(loss.item(), 0.0);
  loss.backward();
  EXPECT_EQ(fk::sum(fk::abs(logits.grad())).item(), 0.0);
  EXPECT_THROW(cross_entropy(logits, fk::from_vector(std::vector<int64_t>{0, 3})), fk::Error);
  EXPECT_THROW(cross_entropy(logits, fk::from_vector(std::vector<int64_t>{0, -1})), fk::Error);
  EXPECT_THROW(cross_entropy(logits, fk::from_vector(std::vector<int64_t>{0})), fk::Error);
  EXPECT_THROW(cross_entropy(logits, fk::from_vector(std::vector<double>{0, 1})), fk::Error);
  EXPECT_THROW(mse(logits, fk::zeros({3, 2}, {kF64})), fk::Error);
}

}  // namespace
}  // namespace minkowski::nn
