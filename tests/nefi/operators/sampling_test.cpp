// Sampling, FourierSampling and Downsample against loops written plainly
// (the DFT summed term by term), adjoint dot tests, gradchecks in f64, the
// k-space noise estimate on known noise, and each refusal.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/operators/operator_checks.h"
#include "nefi/operators/sampling.h"

namespace {

using nefi::test::dot;
using nefi::test::expect_adjoint;
using nefi::test::expect_gradcheck;
using nefi::test::rnd;

// A mask keeping every third cell, and cell 0.
fk::Tensor every_third(const fk::Dims& shape) {
  std::vector<double> m(shape.numel(), 0.0);
  for (size_t i = 0; i < m.size(); i += 3) m[i] = 1.0;
  return fk::from_vector(m, shape);
}

TEST(NefiSampling, KeepsTheMaskedCellsInOrderAndBatches) {
  const fk::Dims shape{5, 4};
  nefi::SamplingOperator op(every_third(shape));
  EXPECT_EQ(op.output_shape(shape), fk::Dims({7}));
  const fk::Tensor x = rnd({2, 5, 4}, 4);
  const auto xv = x.to_vector<double>(), yv = op.apply(x).to_vector<double>();
  ASSERT_EQ(yv.size(), 14u);
  for (int b = 0; b < 2; ++b)
    for (int k = 0; k < 7; ++k) EXPECT_EQ(yv[b * 7 + k], xv[b * 20 + 3 * k]);
  expect_adjoint(op, shape);
  expect_gradcheck(op, shape);
}

TEST(NefiFourierSampling, MatchesTheDFTSummedTermByTerm) {
  const fk::Dims shape{6, 5};
  nefi::FourierSamplingOperator op(every_third(shape));
  const int64_t m = op.samples();
  EXPECT_EQ(op.output_shape(shape), fk::Dims({2, m}));
  const fk::Tensor x = rnd(shape, 5);
  const auto xv = x.to_vector<double>(), yv = op.apply(x).to_vector<double>();
  for (int64_t k = 0; k < m; ++k) {
    const int64_t p = 3 * k, u = p / 5, v = p % 5;
    std::complex<double> s = 0;
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 5; ++j)
        s += xv[i * 5 + j] *
             std::exp(std::complex<double>(0, -2 * std::numbers::pi * (u * i / 6.0 + v * j / 5.0)));
    s /= std::sqrt(30.0);  // orthonormal
    EXPECT_NEAR(yv[k], s.real(), 1e-12);
    EXPECT_NEAR(yv[m + k], s.imag(), 1e-12);
  }
  expect_adjoint(op, shape);
  expect_gradcheck(op, shape);
  // A batch of two: each row its own transform, in f32 as in f64.
  const fk::Tensor xb = rnd({2, 6, 5}, 6).to(fk::DType::F32);
  const fk::Tensor yb = op.apply(xb);
  EXPECT_EQ(yb.shape(), fk::Dims({2, 2, m}));
  EXPECT_EQ(yb.dtype(), fk::DType::F32);
}

TEST(NefiFourierSampling, TheFullMaskIsUnitary) {
  // All of k-space: the adjoint inverts the forward exactly (Parseval).
  nefi::FourierSamplingOperator op(fk::full({8}, 1.0, {fk::DType::F64}));
  const fk::Tensor x = rnd({8}, 7);
  EXPECT_NEAR(dot(op.apply(x), op.apply(x)), dot(x, x), 1e-12);
  const auto back = op.vjp(x, op.apply(x)).to_vector<double>();
  const auto xv = x.to_vector<double>();
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(back[i], xv[i], 1e-12);
}

TEST(NefiFourierSampling, EstimatesTheNoiseOfKSpaceData) {
  // A smooth image (its spectrum gone by the outer frequencies) plus
  // complex white noise of sigma 0.02 per part.
  const int n = 48;
  std::vector<double> img(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double a = (i - 20.0) / 6.0, b = (j - 26.0) / 8.0;
      img[i * n + j] = std::exp(-0.5 * (a * a + b * b));
    }
  fk::Generator g(8);
  std::vector<double> mask(n * n);
  const auto u = fk::rand({n * n}, {fk::DType::F64}, &g).to_vector<double>();
  for (int i = 0; i < n * n; ++i) mask[i] = u[i] < 0.4 ? 1.0 : 0.0;
  nefi::FourierSamplingOperator op(fk::from_vector(mask, {n, n}));
  const fk::Tensor clean = op.apply(fk::from_vector(img, {n, n}));
  const fk::Tensor noisy =
      fk::add(clean, fk::mul(fk::randn(clean.shape(), {fk::DType::F64}, &g), 0.02));
  EXPECT_NEAR(op.estimate_noise(noisy).sigma, 0.02, 0.002);
  EXPECT_NE(op.estimate_noise(noisy).why.find("conjugate pairs"), std::string::npos);
  // Noise-free: the pairs cancel, and the outer frequencies of the smooth
  // image read next to nothing.
  EXPECT_LT(op.estimate_noise(clean).sigma, 1e-5);
  EXPECT_THROW(op.estimate_noise(fk::zeros({op.samples()}, {fk::DType::F64})), fk::Error);
  // Noise added to the image before its transform (the usual simulation) is
  // Hermitian too: the pairs cancel to round-off, so the estimate falls back
  // to the outer frequencies instead of reading sigma 0.
  const fk::Tensor noise = fk::mul(fk::randn({n, n}, {fk::DType::F64}, &g), 0.02);
  const fk::Tensor in_image = op.apply(fk::add(fk::from_vector(img, {n, n}), noise));
  const double per_part = std::sqrt(fk::mean(fk::mul(op.apply(noise), op.apply(noise))).item());
  const nefi::SampledNoise e = op.estimate_noise(in_image);
  EXPECT_NEAR(e.sigma, per_part, 0.2 * per_part) << e.why;
  EXPECT_NE(e.why.find("round-off"), std::string::npos) << e.why;
}

// A sharp image leaves signal at every frequency, so the outer quarter reads
// far above sigma; the conjugate pairs read sigma; a mask without pairs
// (one half-plane) falls back to the outer quarter and says so.
TEST(NefiFourierSampling, ConjugatePairsReadTheNoiseOfASharpImage) {
  const int n = 32;
  std::vector<double> img(n * n), mask(n * n), half(n * n, 0.0);
  fk::Generator g(12);
  const auto u = fk::rand({n * n}, {fk::DType::F64}, &g).to_vector<double>();
  for (int i = 0; i < n * n; ++i) {
    img[i] = (i / n) > 9 && (i / n) < 20 && (i % n) > 5 && (i % n) < 27 ? 1.0 : 0.0;
    mask[i] = u[i] < 0.4 ? 1.0 : 0.0;
  }
  for (int i = 0; i < n; ++i)
    for (int j = 1; j < n / 2; ++j) half[i * n + j] = 1.0;  // 0 < kx < n/2: no k with its -k
  for (const auto& [m, pairs] : {std::pair{mask, true}, std::pair{half, false}}) {
    nefi::FourierSamplingOperator op(fk::from_vector(m, {n, n}));
    const fk::Tensor clean = op.apply(fk::from_vector(img, {n, n}));
    const fk::Tensor noisy =
        fk::add(clean, fk::mul(fk::randn(clean.shape(), {fk::DType::F64}, &g), 0.01));
    const nefi::SampledNoise e = op.estimate_noise(noisy);
    if (pairs) {
      EXPECT_NEAR(e.sigma, 0.01, 0.0015) << e.why;
    } else {
      EXPECT_GT(e.sigma, 0.015) << e.why;  // the edges' spectrum
      EXPECT_NE(e.why.find("too few conjugate pairs"), std::string::npos) << e.why;
    }
  }
}

TEST(NefiSampling, EstimatesTheNoiseFromGridNeighbours) {
  // A piecewise-constant field, 40 % of its cells kept, noise 0.03.
  const int n = 40;
  std::vector<double> img(n * n), mask(n * n);
  fk::Generator g(10);
  const auto u = fk::rand({n * n}, {fk::DType::F64}, &g).to_vector<double>();
  for (int i = 0; i < n * n; ++i) {
    img[i] = (i / n) > 15 && (i % n) < 25 ? 1.0 : 0.2;
    mask[i] = u[i] < 0.4 ? 1.0 : 0.0;
  }
  nefi::SamplingOperator op(fk::from_vector(mask, {n, n}));
  const fk::Tensor clean = op.apply(fk::from_vector(img, {n, n}));
  const fk::Tensor noisy =
      fk::add(clean, fk::mul(fk::randn(clean.shape(), {fk::DType::F64}, &g), 0.03));
  EXPECT_NEAR(op.estimate_noise(noisy).sigma, 0.03, 0.004);
  EXPECT_EQ(nefi::sampled_noise(op, noisy)->sigma, op.estimate_noise(noisy).sigma);
  // Unobserved samples (weight 0) are left out: wild values there change nothing.
  std::vector<double> w(op.samples(), 1.0), wild = noisy.to_vector<double>();
  for (size_t k = 0; k < w.size(); k += 3) {
    w[k] = 0;
    wild[k] = 1e6;
  }
  const fk::Tensor weights = fk::from_vector(w, {op.samples()});
  EXPECT_NEAR(op.estimate_noise(fk::from_vector(wild, {op.samples()}), weights).sigma, 0.03, 0.006);
  EXPECT_FALSE(nefi::sampled_noise(nefi::DownsampleOperator({2, 2}), noisy).has_value());
  // No two kept cells side by side: nothing to difference.
  std::vector<double> sparse(n * n, 0.0);
  for (int i = 0; i < n * n; i += 2 * n + 2) sparse[i] = 1.0;
  nefi::SamplingOperator apart(fk::from_vector(sparse, {n, n}));
  EXPECT_THROW(apart.estimate_noise(fk::zeros({apart.samples()}, {fk::DType::F64})), fk::Error);
}

TEST(NefiDownsample, AveragesBlocksAndSpreadsTheGradient) {
  nefi::DownsampleOperator op({2, 3});
  EXPECT_EQ(op.output_shape({4, 6}), fk::Dims({2, 2}));
  const fk::Tensor x = rnd({3, 4, 6}, 9);
  const auto xv = x.to_vector<double>(), yv = op.apply(x).to_vector<double>();
  for (int b = 0; b < 3; ++b)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        double s = 0;
        for (int a = 0; a < 2; ++a)
          for (int c = 0; c < 3; ++c) s += xv[b * 24 + (2 * i + a) * 6 + 3 * j + c];
        EXPECT_NEAR(yv[b * 4 + i * 2 + j], s / 6, 1e-14);
      }
  expect_adjoint(op, {4, 6});
  expect_gradcheck(op, {4, 6});
}

TEST(NefiSampling, RefusesWhatDoesNotFit) {
  const fk::Tensor mask = every_third({5, 4});
  EXPECT_THROW(nefi::SamplingOperator(fk::zeros({5, 4}, {fk::DType::F64})), fk::Error);
  EXPECT_THROW(nefi::SamplingOperator(fk::Tensor{}), fk::Error);
  nefi::SamplingOperator s(mask);
  nefi::FourierSamplingOperator f(mask);
  for (const nefi::Operator* op : std::initializer_list<const nefi::Operator*>{&s, &f}) {
    EXPECT_THROW(op->apply(rnd({4, 5}, 1)), fk::Error) << op->kind();
    EXPECT_THROW(op->output_shape({4, 5}), fk::Error) << op->kind();
    EXPECT_THROW(op->at_resolution({3, 2}), fk::Error) << op->kind();
    EXPECT_EQ(op->at_resolution({5, 4})->output_shape({5, 4}), op->output_shape({5, 4}));
  }
  try {
    (void)s.at_resolution({3, 2});
    ADD_FAILURE() << "at_resolution to another grid was accepted";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to one grid"), std::string::npos) << e.what();
  }
  EXPECT_THROW(nefi::DownsampleOperator({2, 0}), fk::Error);
  EXPECT_THROW(nefi::DownsampleOperator({2, 2}).output_shape({5, 4}), fk::Error);
  EXPECT_THROW(nefi::DownsampleOperator({2, 2}).output_shape({4}), fk::Error);
}

}  // namespace
