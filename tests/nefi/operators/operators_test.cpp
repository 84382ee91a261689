#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <memory>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/operator_checks.h"
#include "nefi/operators/pointwise.h"
#include "nefi/operators/sampling.h"

namespace {

using nefi::test::expect_adjoint;
using nefi::test::rnd;

TEST(NefiFFTConvolution, MatchesDirectLinearConvolution) {
  nefi::Domain d({12, 9}, {1.2, 0.9});  // h = 0.1 on both axes
  nefi::FFTConvolution op(nefi::gaussian_psf(0.15, 2.0), d);
  nefi::PsfSample k = op.kernel();
  ASSERT_EQ(k.shape, fk::Dims({7, 7}));  // radius ceil(2 * 0.15 / 0.1) = 3
  double ksum = 0;
  for (double v : k.values) ksum += v;
  EXPECT_NEAR(ksum, 1.0, 1e-12);
  fk::Tensor x = rnd({12, 9}, 3);
  auto xv = x.to_vector<double>();
  auto yv = op.apply(x).to_vector<double>();
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 9; ++j) {
      double s = 0;
      for (int a = -3; a <= 3; ++a)
        for (int b = -3; b <= 3; ++b) {
          const int ii = i - a, jj = j - b;
          if (ii < 0 || ii >= 12 || jj < 0 || jj >= 9) continue;
          s += k.values[(a + 3) * 7 + (b + 3)] * xv[ii * 9 + jj];
        }
      EXPECT_NEAR(yv[i * 9 + j], s, 1e-12);
    }
}

// An infinite sigma was taken (its ceil cast to an integer: undefined, in
// practice the identity); a sigma whose kernel cannot be held is refused by
// its size instead of failing to allocate.
TEST(NefiFFTConvolution, ANonFiniteOrHugeSigmaIsRefused) {
  EXPECT_THROW(nefi::gaussian_psf(INFINITY), fk::Error);
  EXPECT_THROW(nefi::gaussian_psf(NAN), fk::Error);
  const nefi::PsfFunction huge = nefi::gaussian_psf(1e6);
  EXPECT_THROW(huge({1.0, 1.0}), fk::Error);
  EXPECT_EQ(nefi::gaussian_psf(1.0)({1.0, 1.0}).shape, (fk::Dims{9, 9}));
}

TEST(NefiFFTConvolution, PeriodicWrapsAndBatches) {
  nefi::Domain d({10});
  nefi::FFTConvolution op(nefi::gaussian_psf(0.2, 2.0), d, /*periodic=*/true);
  nefi::PsfSample k = op.kernel();  // radius 4 -> 9 taps
  fk::Tensor x = rnd({3, 10}, 4);   // a batch of 3
  auto xv = x.to_vector<double>();
  auto yv = op.apply(x).to_vector<double>();
  for (int b = 0; b < 3; ++b)
    for (int i = 0; i < 10; ++i) {
      double s = 0;
      for (int a = -4; a <= 4; ++a) s += k.values[a + 4] * xv[b * 10 + ((i - a) % 10 + 10) % 10];
      EXPECT_NEAR(yv[b * 10 + i], s, 1e-12);
    }
}

TEST(NefiFFTConvolution, SamePhysicalBlurAtEveryResolution) {
  nefi::Domain d({64});
  nefi::FFTConvolution op(nefi::gaussian_psf(0.05), d);
  auto coarse = std::static_pointer_cast<nefi::FFTConvolution>(op.at_resolution({32}));
  // Second moment of the kernel in physical units equals sigma^2 at both grids.
  for (const nefi::FFTConvolution* o : {&op, coarse.get()}) {
    const nefi::PsfSample k = o->kernel();
    const double h = o->domain().spacing()[0];
    const int64_t r = (k.shape[0] - 1) / 2;
    double m2 = 0;
    for (int64_t i = 0; i < k.shape[0]; ++i) m2 += k.values[i] * std::pow((i - r) * h, 2);
    EXPECT_NEAR(std::sqrt(m2), 0.05, 0.05 * 0.05);
  }
  EXPECT_THROW(op.apply(fk::zeros({32}, {fk::DType::F64})), fk::Error);
}

// Two grids that pad to one FFT length (60 and 62 cells with an 11-tap
// kernel: both 72) sample the PSF at different spacings, so the shared
// spectrum cache must key on the spacing, not the length alone.
TEST(NefiFFTConvolution, SpectrumCacheKeysOnTheSpacing) {
  nefi::FFTConvolution op(nefi::gaussian_psf(0.02), nefi::Domain({60}));
  auto other = std::static_pointer_cast<nefi::FFTConvolution>(op.at_resolution({62}));
  ASSERT_EQ(op.fft_shape(), other->fft_shape());
  ASSERT_EQ(op.kernel().shape, other->kernel().shape);
  const fk::Tensor warm = op.spectrum(fk::DType::F64);  // cached first, at 60 cells
  const nefi::FFTConvolution fresh(nefi::gaussian_psf(0.02), nefi::Domain({62}));
  const auto a = other->spectrum(fk::DType::F64).to_vector<std::complex<double>>();
  const auto b = fresh.spectrum(fk::DType::F64).to_vector<std::complex<double>>();
  EXPECT_EQ(a, b);
  // ... which is not the 60-cell one (a length-only key would return that).
  EXPECT_NE(warm.to_vector<std::complex<double>>(), a);
  const fk::Tensor x = rnd({62}, 5);
  const auto ya = other->apply(x).to_vector<double>(), yb = fresh.apply(x).to_vector<double>();
  EXPECT_EQ(ya, yb);
  // The same key again is the same tensor.
  EXPECT_EQ(op.spectrum(fk::DType::F64).data_ptr(), warm.data_ptr());
}

TEST(NefiOperators, AdjointDotTests) {
  nefi::Domain d2({8, 6});
  expect_adjoint(nefi::FFTConvolution(nefi::gaussian_psf(0.2), d2), {8, 6});
  expect_adjoint(nefi::FFTConvolution(nefi::motion_psf(0.4, 30), d2), {8, 6});
  expect_adjoint(nefi::FFTConvolution(nefi::disk_psf(0.25), d2, true), {8, 6});
  expect_adjoint(nefi::IdentityOperator(), {8, 6});
  nefi::PointwiseOperator pw(rnd({8, 6}, 9));
  expect_adjoint(pw, {8, 6});
  auto conv = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(0.2), d2);
  nefi::SequentialOperator seq({std::make_shared<nefi::PointwiseOperator>(rnd({8, 6}, 5)), conv});
  expect_adjoint(seq, {8, 6});
  EXPECT_EQ(*seq.homogeneity(), 1.0);
  nefi::SumOperator sum({conv, std::make_shared<nefi::IdentityOperator>()});
  expect_adjoint(sum, {8, 6});
  nefi::NuisanceOperator gain(conv, 3.0);
  expect_adjoint(gain, {8, 6});
  EXPECT_TRUE(gain.linear());
}

TEST(NefiOperators, NuisanceSaturationAndFlags) {
  auto id = std::make_shared<nefi::IdentityOperator>();
  nefi::NuisanceOperator n(id, 2.0, 1.0, /*train_gain=*/true, /*train_offset=*/false);
  auto y = n.apply(fk::from_vector(std::vector<float>{1, 2})).to_vector<double>();
  EXPECT_NEAR(y[0], 3.0, 1e-6);
  EXPECT_NEAR(y[1], 5.0, 1e-6);
  EXPECT_FALSE(n.homogeneity().has_value());  // an offset breaks homogeneity
  EXPECT_EQ(n.parameters().size(), 1u);
  EXPECT_FALSE(n.batchable());
  auto n2 = std::static_pointer_cast<nefi::NuisanceOperator>(n.at_resolution({4}));
  EXPECT_TRUE(n2->parameters()[0].is_same(n.parameters()[0]));  // shared across resolutions
  nefi::SaturationOperator s(2.0);
  EXPECT_NEAR(s.apply(fk::from_vector(std::vector<double>{1.0})).item(), 2 * std::tanh(0.5), 1e-12);
  EXPECT_THROW(nefi::SaturationOperator(0.0), fk::Error);
  EXPECT_THROW(nefi::NuisanceOperator(id, -1.0), fk::Error);
  nefi::FieldMap wrong{{"y", fk::zeros({2})}};
  EXPECT_THROW(id->forward(wrong), fk::Error);
}

TEST(NefiStack, ConcatenatesFlattenedViewsOfOneField) {
  auto id = std::make_shared<nefi::IdentityOperator>();
  auto down = std::make_shared<nefi::DownsampleOperator>(std::vector<int64_t>{2, 3});
  nefi::StackOperator op({id, down}, {4, 6});
  EXPECT_EQ(op.output_shape({4, 6}), fk::Dims({28}));
  EXPECT_EQ(*op.homogeneity(), 1.0);
  const fk::Tensor x = rnd({2, 4, 6}, 5);  // a batch of two
  const auto xv = x.to_vector<double>(), yv = op.apply(x).to_vector<double>();
  ASSERT_EQ(yv.size(), 56u);
  const auto dv = down->apply(x).to_vector<double>();
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 24; ++i) EXPECT_EQ(yv[b * 28 + i], xv[b * 24 + i]);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(yv[b * 28 + 24 + i], dv[b * 4 + i]);
  }
  expect_adjoint(op, {4, 6});
  EXPECT_EQ(op.at_resolution({8, 12})->output_shape({8, 12}), fk::Dims({96 + 16}));
  EXPECT_THROW(nefi::StackOperator({id, down}, {4, 5}), fk::Error);  // 5 is no multiple of 3
}

}  // namespace
