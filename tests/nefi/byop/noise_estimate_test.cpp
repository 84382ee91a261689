// estimate_noise: white noise of known sigma on smooth signals in 1-, 2- and
// 3-D is recovered within a few per cent, also on data rough along one axis
// (a sinogram of few views); masked cells are never read.
#include "nefi/byop/noise_estimate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fk/factory.h"
#include "fk/test_util.h"

namespace {

fk::Tensor smooth_plus_noise(const fk::Dims& shape, double sigma, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd(0.0, sigma);
  std::vector<double> v(shape.numel());
  const int64_t last = shape[shape.size() - 1];
  for (int64_t i = 0; i < shape.numel(); ++i) {
    const double t = static_cast<double>(i % last) / last, r = static_cast<double>(i / last);
    v[i] = std::sin(2 * t) + 0.5 * std::cos(0.03 * r) + nd(gen);
  }
  return fk::from_vector(v, shape);
}

TEST(NefiNoiseEstimate, RecoversWhiteNoiseOnSmoothSignals) {
  for (const fk::Dims& shape : {fk::Dims{4000}, fk::Dims{64, 64}, fk::Dims{4, 32, 32}}) {
    const double sigma = 0.05;
    const auto e = nefi::estimate_noise(smooth_plus_noise(shape, sigma, 1));
    EXPECT_NEAR(e.sigma, sigma, 0.06 * sigma) << shape.str();
    EXPECT_GT(e.stencils, 100) << shape.str();
  }
  // Noise-free smooth data: (almost) nothing.
  EXPECT_LT(nefi::estimate_noise(smooth_plus_noise({64, 64}, 0.0, 1)).sigma, 1e-3);
}

// Data rough along one axis, smooth along the other (a sinogram of 24 views,
// each view a smooth profile along the detector, views far apart unlike):
// the 2-D stencil reads the views' differences as noise; the detector's
// fourth differences do not.
TEST(NefiNoiseEstimate, DataRoughAlongOneAxisReadTheSmoothOne) {
  const int64_t views = 24, det = 91;
  const double sigma = 0.0025, pi = 3.141592653589793;
  std::mt19937_64 gen(3);
  std::normal_distribution<double> nd(0.0, sigma);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> v(views * det);
  for (int64_t a = 0; a < views; ++a) {
    const double cycles = 0.5 + 1.5 * u(gen), phase = 2 * pi * u(gen);
    for (int64_t j = 0; j < det; ++j)
      v[a * det + j] = std::sin(2 * pi * cycles * j / det + phase) + nd(gen);
  }
  const auto e = nefi::estimate_noise(fk::from_vector(v, {views, det}));
  EXPECT_NEAR(e.sigma, sigma, 0.1 * sigma);
}

// On white noise the estimate reads its sigma on average: the axis stencils
// step in only when clearly lower (the least of three would read ~3 % low at
// 32 x 32, and push a fit below the noise).
TEST(NefiNoiseEstimate, WhiteNoiseReadsUnbiasedOnAverage) {
  double sum = 0;
  const int draws = 60;
  for (int k = 0; k < draws; ++k)
    sum += nefi::estimate_noise(smooth_plus_noise({32, 32}, 1.0, 100 + k)).sigma;
  EXPECT_NEAR(sum / draws, 1.0, 0.015);
}

TEST(NefiNoiseEstimate, SkipsMaskedCellsAndRefusesTooLittle) {
  fk::Tensor y = smooth_plus_noise({4000}, 0.02, 2);
  std::vector<double> v = y.to_vector<double>(), w(v.size(), 1.0);
  for (size_t i = 0; i < v.size(); i += 3) {
    v[i] = 1e6;  // unobserved garbage
    w[i] = 0;
  }
  // Every 3rd cell masked leaves no full 5-cell stencil: refused.
  std::string e = fk::test::error_of(
      [&] { (void)nefi::estimate_noise(fk::from_vector(v, {4000}), fk::from_vector(w, {4000})); });
  EXPECT_NE(e.find("at least one stencil"), std::string::npos) << e;
  // The first half masked (garbage there): the estimate reads the second.
  v = y.to_vector<double>();
  for (size_t i = 0; i < 2000; ++i) {
    v[i] = 1e6;
    w[i] = 0;
  }
  for (size_t i = 2000; i < 4000; ++i) w[i] = 1;
  EXPECT_NEAR(nefi::estimate_noise(fk::from_vector(v, {4000}), fk::from_vector(w, {4000})).sigma,
              0.02, 0.002);
  e = fk::test::error_of([&] { (void)nefi::estimate_noise(fk::zeros({4})); });
  EXPECT_NE(e.find("at least 5 cells"), std::string::npos) << e;
  e = fk::test::error_of([&] { (void)nefi::estimate_noise(fk::zeros({8}), fk::zeros({9})); });
  EXPECT_NE(e.find("a mask of the data's shape"), std::string::npos) << e;
}

}  // namespace
