// from_forward's built-in operators end to end: an undersampled MRI
// acquisition (FourierSampling) solved from its k-space data with the noise
// read off its conjugate pairs, beating the zero-filled inverse; an
// inpainting (Sampling) with the noise read off neighbouring samples; a
// transmission (BeerLambert) fitted to its noise floor.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "byop_test_models.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/thread_count.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/operators/intensity.h"
#include "nefi/operators/sampling.h"
#include "nefi/solve/metrics.h"

namespace {

using nefi::test::shapes_phantom;
using nefi::test::with_noise;

nefi::Measurement measured(const fk::Tensor& y) {
  nefi::Measurement m;
  m.data = y;
  return m;
}

double solved_psnr(const nefi::OperatorPtr& op, const fk::Tensor& y, const fk::Tensor& gt,
                   const std::string& prior, nefi::AutoProblem* out = nullptr) {
  nefi::AutoOptions o;
  o.prior = prior;
  o.budget = "quick";
  const nefi::AutoProblem ap = nefi::auto_problem(op, gt.shape(), measured(y), o);
  if (out) *out = ap;
  const nefi::Result r = ap.solve();
  return nefi::psnr(r.fields.at("x").to(fk::DType::F64), gt);
}

TEST(NefiOperatorZoo, UndersampledMriBeatsTheZeroFilledInverse) {
  const fk::test::ThreadCount one_thread(1);
  const int64_t n = 32;
  const fk::Tensor gt = shapes_phantom(n, 1.0);
  // Variable density: every frequency within 0.2 of DC, a third of the rest.
  auto op = std::make_shared<nefi::FourierSamplingOperator>(
      nefi::test::variable_density_mask(n, 0.2, 0.33, 1));
  const double sigma = 0.01;
  const fk::Tensor y = with_noise(op->apply(gt), sigma, 2);
  nefi::AutoProblem ap;
  const double fitted = solved_psnr(op, y, gt, "nonnegative + tv", &ap);
  EXPECT_TRUE(ap.noise_estimated);
  EXPECT_NEAR(ap.noise_std, sigma, 0.5 * sigma);
  const double zero_filled = nefi::psnr(op->vjp(gt, y), gt);
  EXPECT_GT(fitted, zero_filled + 3.0) << "zero-filled " << zero_filled;
}

TEST(NefiOperatorZoo, InpaintingAndTransmissionFit) {
  const fk::test::ThreadCount one_thread(1);
  const int64_t n = 24;
  const fk::Tensor gt = shapes_phantom(n);
  // Inpainting: 30 % of the pixels.
  std::vector<double> keep(n * n);
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> u(0, 1);
  for (double& k : keep) k = u(g) < 0.3 ? 1.0 : 0.0;
  auto sampling = std::make_shared<nefi::SamplingOperator>(fk::from_vector(keep, {n, n}));
  const fk::Tensor y = with_noise(sampling->apply(gt), 0.01, 4);
  const double inpainted = solved_psnr(sampling, y, gt, "nonnegative + tv");
  // Against the holes filled with the samples' mean. (Harmonic inpainting
  // reaches 16.0 dB on this case, nearest-sample 13.8 dB: the shapes are a
  // few cells across, so 30 % of the cells do not pin their edges.)
  const auto yv = y.to_vector<double>();
  double mean = 0;
  for (double e : yv) mean += e / static_cast<double>(yv.size());
  const fk::Tensor filled = fk::add(sampling->vjp(gt, fk::add(y, -mean)), mean);
  EXPECT_GT(inpainted, nefi::psnr(filled, gt) + 3.0) << "mean-filled " << nefi::psnr(filled, gt);
  // Transmission along rows: one view cannot place a feature along its
  // path, so the fit is checked on the intensities it predicts.
  auto path = std::make_shared<nefi::AxisIntegralOperator>(fk::Dims{n, n}, 1, 1.0 / n);
  auto transmission = std::make_shared<nefi::BeerLambertOperator>(path, 1.0);
  const fk::Tensor t = with_noise(transmission->apply(gt), 0.002, 5);
  nefi::AutoOptions o;
  o.prior = "nonnegative";
  o.budget = "quick";
  const nefi::AutoProblem ap = nefi::auto_problem(transmission, {n, n}, measured(t), o);
  const nefi::Result r = ap.solve();
  const auto fit = transmission->apply(r.fields.at("x").to(fk::DType::F64)).to_vector<double>();
  const auto want = transmission->apply(gt).to_vector<double>();
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += (fit[i] - want[i]) * (fit[i] - want[i]);
  EXPECT_LT(std::sqrt(sq / n), 2.5 * 0.002);  // the clean intensities, to the noise floor
}

}  // namespace
