// PhaseRetrieval, AxisIntegral and BeerLambert against loops written plainly,
// gradchecks in f64, an adjoint dot test for the linear projection, and each
// refusal.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/operators/intensity.h"
#include "nefi/operators/operator_checks.h"
#include "nefi/operators/pointwise.h"

namespace {

using nefi::test::expect_gradcheck;
using nefi::test::rnd;

TEST(NefiPhaseRetrieval, IsTheSquaredModulusOfTheOversampledDFT) {
  nefi::PhaseRetrievalOperator op(2, 1.5);
  EXPECT_EQ(op.output_shape({4, 3}), fk::Dims({6, 5}));  // ceil(1.5 n)
  const fk::Tensor x = rnd({4, 3}, 4);
  const auto xv = x.to_vector<double>(), yv = op.apply(x).to_vector<double>();
  ASSERT_EQ(yv.size(), 30u);
  for (int u = 0; u < 6; ++u)
    for (int v = 0; v < 5; ++v) {
      std::complex<double> s = 0;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j)
          s += xv[i * 3 + j] * std::exp(std::complex<double>(
                                   0, -2 * std::numbers::pi * (u * i / 6.0 + v * j / 5.0)));
      EXPECT_NEAR(yv[u * 5 + v], std::norm(s) / 30.0, 1e-12);
    }
  EXPECT_EQ(*op.homogeneity(), 2.0);
  expect_gradcheck(op, {4, 3});
  EXPECT_EQ(op.apply(rnd({3, 4, 3}, 5)).shape(), fk::Dims({3, 6, 5}));  // a batch
}

TEST(NefiAxisIntegral, SumsAlongTheAxisAndKeepsThePhysicalPath) {
  nefi::AxisIntegralOperator op({4, 3}, 0, 0.25);
  EXPECT_EQ(op.output_shape({4, 3}), fk::Dims({3}));
  const fk::Tensor x = rnd({4, 3}, 6);
  const auto xv = x.to_vector<double>(), yv = op.apply(x).to_vector<double>();
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(yv[j], 0.25 * (xv[j] + xv[3 + j] + xv[6 + j] + xv[9 + j]), 1e-14);
  // Twice the cells along the axis: each half as long, so a constant
  // attenuation integrates to the same path.
  const auto fine = op.at_resolution({8, 3});
  const auto c = fine->apply(fk::full({8, 3}, 2.0, {fk::DType::F64})).to_vector<double>();
  for (double v : c) EXPECT_NEAR(v, 2.0, 1e-14);
  const fk::Tensor g = rnd({3}, 7);
  double lhs = 0, rhs = 0;
  const auto gv = g.to_vector<double>(), back = op.vjp(x, g).to_vector<double>();
  for (int j = 0; j < 3; ++j) lhs += yv[j] * gv[j];
  for (int i = 0; i < 12; ++i) rhs += xv[i] * back[i];
  EXPECT_NEAR(lhs, rhs, 1e-12);
  nefi::AxisIntegralOperator line({5}, 0);
  EXPECT_EQ(line.apply(rnd({5}, 8)).shape(), fk::Dims({1}));
}

TEST(NefiBeerLambert, AttenuatesAlongThePath) {
  auto path = std::make_shared<nefi::AxisIntegralOperator>(fk::Dims{3, 4}, 1, 0.5);
  nefi::BeerLambertOperator op(path, 2.0);
  const fk::Tensor x = fk::abs(rnd({3, 4}, 9));
  const auto xv = x.to_vector<double>(), yv = op.apply(x).to_vector<double>();
  ASSERT_EQ(yv.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 4; ++j) s += 0.5 * xv[i * 4 + j];
    EXPECT_NEAR(yv[i], 2.0 * std::exp(-s), 1e-14);
  }
  EXPECT_FALSE(op.homogeneity().has_value());
  expect_gradcheck(op, {3, 4});
  EXPECT_EQ(op.at_resolution({6, 8})->output_shape({6, 8}), fk::Dims({6}));
}

TEST(NefiIntensity, RefusesWhatDoesNotFit) {
  EXPECT_THROW(nefi::PhaseRetrievalOperator(2, 0.5), fk::Error);
  EXPECT_THROW(nefi::PhaseRetrievalOperator(4, 2), fk::Error);
  EXPECT_THROW(nefi::PhaseRetrievalOperator(2, 2).output_shape({4}), fk::Error);
  EXPECT_THROW(nefi::AxisIntegralOperator({4, 3}, 2), fk::Error);
  EXPECT_THROW(nefi::AxisIntegralOperator({4, 3}, 0, 0.0), fk::Error);
  EXPECT_THROW(nefi::BeerLambertOperator(nullptr), fk::Error);
  auto nonlinear = std::make_shared<nefi::SaturationOperator>(1.0);
  EXPECT_THROW(nefi::BeerLambertOperator(nonlinear, 1.0), fk::Error);
  auto path = std::make_shared<nefi::AxisIntegralOperator>(fk::Dims{3, 4}, 1);
  EXPECT_THROW(nefi::BeerLambertOperator(path, -1.0), fk::Error);
}

}  // namespace
