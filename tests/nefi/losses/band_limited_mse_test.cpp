// The band-limited relative MSE: its zero-phase low-pass against the gain it
// is built from (a slow cosine passes, a fast one is stopped; symmetric),
// the loss against a direct computation with a muted trace, and its
// gradient against finite differences (f64); the value and gradient bitwise
// the per-step form it replaces (the data filtered and their energy read
// back as a double every call), in f32 and f64, with and without a mask.
#include "nefi/losses/band_limited_mse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/linalg.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "fk/test_util.h"
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
  // A mask varying along time within a trace does not commute with the
  // filter: refused before a solve (it was weighed silently).
  loss->check_observations(m);
  mask[(0 * 3 + 1) * n_t + 5] = 0.5;
  m.mask = fk::from_vector(mask, {2, 3, n_t});
  try {
    loss->check_observations(m);
    ADD_FAILURE() << "a time-varying mask was taken";
  } catch (const fk::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "nefi::BandLimitedMSE: expected a mask constant along time in each trace (a muted "
              "pair), got trace 1 weighted 1 at time 0 and 0.5 at time 5");
  }
}

// The loss as it read the host before session 13.
fk::Tensor band_limited_before(const fk::Tensor& pred, const nefi::Measurement& obs, double dt,
                               double f_cut) {
  const fk::DType type = pred.dtype();
  const int64_t n_t = pred.shape().back(), rows = pred.numel() / n_t;
  const fk::Tensor m = fk::from_vector(nefi::lowpass_matrix(n_t, dt, f_cut), {n_t, n_t}).to(type);
  const fk::Tensor p = fk::matmul(pred.reshape({rows, n_t}), m);
  const fk::Tensor y = fk::matmul(obs.data.to(type).reshape({rows, n_t}), m);
  fk::Tensor y2 = fk::square(y), r = fk::square(fk::sub(p, y));
  if (obs.mask.defined()) {
    const fk::Tensor w = obs.mask.to(type).reshape({rows, n_t});
    y2 = fk::mul(y2, w), r = fk::mul(r, w);
  }
  const double denom = fk::sum(y2).item();
  return fk::div(fk::sum(r), denom);
}

TEST(NefiBandLimitedMse, BitwiseThePerStepHostScalarForm) {
  const int64_t n_t = 20;
  const double dt = 0.01, fc = 9.0;
  for (fk::DType type : {fk::DType::F64, fk::DType::F32})
    for (bool masked : {false, true}) {
      SCOPED_TRACE(std::string(fk::name(type)) + (masked ? " masked" : ""));
      fk::Generator gen(7);
      nefi::Measurement m;
      m.data = fk::randn({3, 2, n_t}, {fk::DType::F64}, &gen);
      fk::Tensor p = fk::randn({3, 2, n_t}, {fk::DType::F64}, &gen).to(type);
      p.set_requires_grad(true);
      if (masked) {
        std::vector<double> mask(3 * 2 * n_t, 1.0);
        for (int64_t j = 0; j < n_t; ++j) mask[(2 * 2 + 1) * n_t + j] = 0;
        m.mask = fk::from_vector(mask, {3, 2, n_t});
      }
      const nefi::Domain d({4, 4});
      const auto loss = nefi::band_limited_mse_loss(dt, fc);
      nefi::LossContext c{nullptr, p, &m, &d, nullptr, 0, 0, 1.0};
      auto value_and_grad = [&](const fk::Tensor& v) {
        p.set_grad(fk::Tensor());
        v.backward(fk::ones(v.shape(), {v.dtype()}));
        return std::make_pair(v.item(), p.grad().to_vector<double>());
      };
      const auto before = value_and_grad(band_limited_before(p, m, dt, fc));
      for (int call = 0; call < 2; ++call) {  // the second call uses the made constants
        const auto now = value_and_grad(loss->forward(c));
        EXPECT_EQ(now.first, before.first) << "call " << call;
        EXPECT_EQ(now.second, before.second) << "call " << call;
      }
    }
}

// No energy below f_cut is still an error on the CPU.
TEST(NefiBandLimitedMse, DataWithoutEnergyAreAnError) {
  nefi::Measurement m;
  m.data = fk::zeros({2, 16}, {fk::DType::F64});
  const fk::Tensor p = fk::ones({2, 16}, {fk::DType::F64});
  const nefi::Domain d({4, 4});
  nefi::LossContext c{nullptr, p, &m, &d, nullptr, 0, 0, 1.0};
  EXPECT_THROW(nefi::band_limited_mse_loss(0.01, 8.0)->forward(c), fk::Error);
}

// check_observations refuses on the host what the CPU forward refuses (a
// device forward would give NaN): data without energy below f_cut (zeros),
// and passes data with some (a constant: all of it at f = 0).
TEST(NefiBandLimitedMse, CheckObservationsRefusesWhatTheCpuForwardRefuses) {
  const int64_t n_t = 16;
  const double dt = 0.01, f_cut = 8.0;
  nefi::Measurement m;
  m.data = fk::zeros({2, n_t}, {fk::DType::F64});
  const fk::Tensor p = fk::ones({2, n_t}, {fk::DType::F64});
  nefi::LossContext c{nullptr, p, &m, nullptr, nullptr, 0, 0, 1.0};
  const nefi::LossPtr loss = nefi::band_limited_mse_loss(dt, f_cut);
  const std::string cpu = fk::test::error_of([&] { (void)loss->forward(c); });
  ASSERT_NE(cpu, "");
  EXPECT_EQ(fk::test::error_of([&] { loss->check_observations(m); }), cpu);
  nefi::Measurement some;
  some.data = fk::ones({2, n_t}, {fk::DType::F64});
  EXPECT_EQ(fk::test::error_of([&] { loss->check_observations(some); }), "");
}

}  // namespace
