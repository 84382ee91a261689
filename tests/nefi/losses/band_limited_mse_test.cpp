// The band-limited relative MSE: its zero-phase low-pass against the gain it
// is built from (a slow cosine passes, a fast one is stopped; symmetric),
// the loss against a direct computation with a muted trace, and its
// gradient against finite differences (f64).
#include "nefi/losses/band_limited_mse.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "fk/testing.h"

namespace {

TEST(NefiBandLimitedMse, LowPassKeepsLowFrequencies) {
  const int64_t n = 200;
  const double dt = 0.004, fc = 5.0;
  const auto M = nefi::lowpass_matrix(n, dt, fc);
  auto filtered_peak = [&](double f) {
    double peak = 0;
    for (int64_t j = 60; j < 140; ++j) {  // away from the ends
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += M[j * n + i] * std::cos(2 * M_PI * f * i * dt);
      peak = std::max(peak, std::abs(s));
    }
    return peak;
  };
  EXPECT_NEAR(filtered_peak(2.0), 1.0, 0.05);
  EXPECT_LT(filtered_peak(15.0), 0.02);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(M[j * n + i], M[i * n + j]);
}

TEST(NefiBandLimitedMse, ValueAndGradient) {
  const int64_t n_t = 24;
  fk::Generator gen(3);
  const fk::Tensor y = fk::randn({2, 3, n_t}, {fk::DType::F64}, &gen);
  fk::Tensor p = fk::randn({2, 3, n_t}, {fk::DType::F64}, &gen);
  std::vector<double> mask(2 * 3 * n_t, 1.0);
  for (int64_t j = 0; j < n_t; ++j) mask[(1 * 3 + 2) * n_t + j] = 0;  // one muted trace
  nefi::Measurement m;
  m.data = y;
  m.mask = fk::from_vector(mask, {2, 3, n_t});
  const nefi::Domain d({4, 4});
  const auto loss = nefi::band_limited_mse_loss(0.01, 8.0);
  nefi::LossContext c{nullptr, p, &m, &d, nullptr, 0, 0, 1.0};
  // Direct: filter each trace with M, then the masked relative misfit.
  const auto M = nefi::lowpass_matrix(n_t, 0.01, 8.0);
  const auto pv = p.to_vector<double>(), yv = y.to_vector<double>();
  double num = 0, den = 0;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j = 0; j < n_t; ++j) {
      double a = 0, b = 0;
      for (int64_t i = 0; i < n_t; ++i)
        a += M[j * n_t + i] * pv[r * n_t + i], b += M[j * n_t + i] * yv[r * n_t + i];
      num += mask[r * n_t + j] * (a - b) * (a - b), den += mask[r * n_t + j] * b * b;
    }
  EXPECT_NEAR(loss->forward(c).item(), num / den, 1e-12 * num / den);
  p.set_requires_grad(true);
  EXPECT_EQ(fk::testing::gradcheck(
                [&](const std::vector<fk::Tensor>& in) {
                  nefi::LossContext cc{nullptr, in[0], &m, &d, nullptr, 0, 0, 1.0};
                  return loss->forward(cc);
                },
                {p}),
            "");
  EXPECT_TRUE(loss->is_data());
  EXPECT_THROW(nefi::band_limited_mse_loss(0.01, 0.0), fk::Error);
}

}  // namespace
