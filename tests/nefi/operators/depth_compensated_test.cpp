#include "nefi/operators/depth_compensated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"

namespace {

// y = a(z) x cellwise, a(z) = exp(-3 z) at the layer centres z = (k + 1/2)/n
// of the last axis: J = diag(a), so diag(J^T J) = a^2 exactly and every
// Rademacher probe gives it exactly.
class LayerScale : public nefi::Operator {
 public:
  explicit LayerScale(fk::Dims shape) : shape_(std::move(shape)) {}
  static double a(int64_t k, int64_t n) { return std::exp(-3.0 * (k + 0.5) / n); }
  fk::Tensor scale() const {
    const int64_t n = shape_.back();
    std::vector<double> v(shape_.numel());
    for (size_t i = 0; i < v.size(); ++i) v[i] = a(static_cast<int64_t>(i) % n, n);
    return fk::from_vector(v, shape_);
  }
  fk::Tensor apply(const fk::Tensor& x) const override { return fk::mul(x, scale().to(x.dtype())); }
  std::shared_ptr<nefi::Operator> at_resolution(const fk::Dims& shape) const override {
    return std::make_shared<LayerScale>(shape);
  }
  std::string kind() const override { return "layer_scale"; }

 private:
  fk::Dims shape_;
};

fk::Tensor rnd(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn(s, {fk::DType::F64}, &g);
}

nefi::DepthCompensation options(double gamma, double x0 = 0.5, int axis = 2) {
  nefi::DepthCompensation o;
  o.gamma = gamma;
  o.x0 = x0;
  o.axis = axis;
  return o;
}

double dot(const fk::Tensor& a, const fk::Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

TEST(NefiDepthCompensated, LayerWeightsFromTheColumnNorms) {
  const fk::Dims shape{3, 4, 5};
  // Half of layer 1's rows are masked: its mean sensitivity halves.
  std::vector<double> keep(shape.numel(), 1.0);
  for (int64_t i = 0; i < shape.numel(); ++i)
    if (i % 5 == 1 && (i / 5) % 2 == 0) keep[i] = 0;
  for (double gamma : {0.0, 0.5, 1.0}) {
    nefi::DepthCompensation o = options(gamma, 0.3, -1);
    o.mask = fk::from_vector(keep, shape);
    nefi::DepthCompensatedOperator op(std::make_shared<LayerScale>(shape), shape, o);
    const auto& s = op.layer_sensitivity();
    const auto& w = op.layer_weights();
    ASSERT_EQ(s.size(), 5u);
    double total = 0, weighted = 0;
    for (int64_t k = 0; k < 5; ++k) {
      const double expect = LayerScale::a(k, 5) * LayerScale::a(k, 5) * (k == 1 ? 0.5 : 1.0);
      EXPECT_NEAR(s[k], expect, 1e-6 * expect) << k;
      total += s[k];
      weighted += s[k] * w[k] * w[k];
      if (k > 0) {  // w_k / w_0 = (s_k / s_0)^(-gamma / 2)
        EXPECT_NEAR(w[k] / w[0], std::pow(s[k] / s[0], -0.5 * gamma), 1e-9) << gamma << " " << k;
      }
    }
    EXPECT_NEAR(weighted, total, 1e-9 * total) << gamma;
  }
}

// The value is the inner operator's bit for bit; the gradient through
// apply() is the inner operator's times w (so a gradcheck of apply fails by
// design); vjp() is the inner operator's true adjoint.
TEST(NefiDepthCompensated, ValueUnchangedGradientScaledVjpTrue) {
  const fk::Dims shape{2, 3, 4};
  auto inner = std::make_shared<LayerScale>(shape);
  nefi::DepthCompensatedOperator op(inner, shape, options(1.0, 1.0));
  fk::Tensor x = rnd(shape, 1);
  const fk::Tensor g = rnd(shape, 2);
  EXPECT_EQ(op.apply(x).to_vector<double>(), inner->apply(x).to_vector<double>());
  x.set_requires_grad(true);
  fk::Tensor y;
  {
    fk::autograd::EnableGradGuard eg;
    y = op.apply(x);
  }
  EXPECT_EQ(y.to_vector<double>(), inner->apply(x.detach()).to_vector<double>());
  const auto dx = fk::autograd::grad({y}, {g}, {x})[0].to_vector<double>();
  const auto true_dx = inner->vjp(x.detach(), g).to_vector<double>();
  const auto& w = op.layer_weights();
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], w[i % 4] * true_dx[i], 1e-12) << i;
  // <J x, y> = <x, J^T y> with vjp()'s J^T.
  const fk::Tensor u = rnd(shape, 3), v = rnd(shape, 4);
  EXPECT_NEAR(dot(op.apply(u), v), dot(u, op.vjp(u, v)), 1e-12);
}

TEST(NefiDepthCompensated, WeightsAreRecomputedAtEachResolution) {
  const fk::Dims shape{2, 2, 6};
  nefi::DepthCompensatedOperator op(std::make_shared<LayerScale>(shape), shape, options(1.0));
  auto coarse =
      std::dynamic_pointer_cast<nefi::DepthCompensatedOperator>(op.at_resolution({2, 2, 3}));
  ASSERT_NE(coarse, nullptr);
  ASSERT_EQ(coarse->layer_weights().size(), 3u);
  EXPECT_NEAR(coarse->layer_sensitivity()[2], LayerScale::a(2, 3) * LayerScale::a(2, 3), 1e-8);
  // gamma 1 equalises the layers: w_k s_k^(1/2) is one constant.
  const auto& w = coarse->layer_weights();
  const auto& s = coarse->layer_sensitivity();
  for (int k = 1; k < 3; ++k) EXPECT_NEAR(w[k] * std::sqrt(s[k]), w[0] * std::sqrt(s[0]), 1e-9);
}

TEST(NefiDepthCompensated, BadOptionsAreErrorsNamingThem) {
  const fk::Dims shape{2, 2, 3};
  auto inner = std::make_shared<LayerScale>(shape);
  auto expect_error = [&](nefi::DepthCompensation o, const std::string& needle) {
    try {
      nefi::DepthCompensatedOperator op(inner, shape, std::move(o));
      ADD_FAILURE() << needle;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(options(-0.5), "gamma >= 0");
  nefi::DepthCompensation o = options(0.5);
  o.probes = 0;
  expect_error(o, "at least one probe");
  expect_error(options(0.5, 0.5, 3), "an axis of the grid");
  o = options(0.5);
  o.mask = fk::ones({2, 2, 4});
  expect_error(o, "a mask of the output's shape");
  o.mask = fk::zeros({2, 2, 3});  // a layer the data never see: its weight would be infinite
  expect_error(o, "a layer the data see");
}

}  // namespace
