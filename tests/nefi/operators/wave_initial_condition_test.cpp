// WaveInitialConditionOperator (photoacoustics): linearity, the adjoint dot
// test of the whole map (sampling, the time loop and the sensor filter), the
// autograd vjp against that adjoint, the Gaussian low-pass and where it acts
// (every leapfrog step, before sampling), time reversal of
// a blob seen by a closed ring of sensors, and the errors.
#include "nefi/operators/wave/wave_initial_condition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"

namespace {

namespace wave = nefi::wave;
using nefi::WaveInitialConditionConfig;
using nefi::WaveInitialConditionOperator;

WaveInitialConditionConfig pat_config(int ndim, wave::Absorbing a, int order, double fc) {
  WaveInitialConditionConfig cfg;
  cfg.wave.extent.assign(ndim, 2.0);
  cfg.wave.order = order;
  cfg.wave.absorbing = a;
  cfg.wave.absorb_width = 0.4;
  cfg.wave.c_max = 1.5;
  cfg.wave.dt_obs = 0.1;
  cfg.wave.n_t = 25;
  cfg.sensor_fc = fc;
  for (double x : {0.2, 0.9, 1.7})
    for (double y : {0.3, 1.5}) {
      std::vector<double> p(ndim, 0.0);  // on the face at depth 0 (the last axis)
      p[0] = x;
      if (ndim > 2) p[1] = y;
      cfg.receivers.push_back(p);
    }
  return cfg;
}

std::vector<double> random_vector(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

struct Case {
  int ndim, order;
  wave::Absorbing a;
  double fc;
  fk::Dims shape;
};
const std::vector<Case> kCases{{2, 4, wave::Absorbing::kPml, 0.0, {14, 12}},
                               {2, 2, wave::Absorbing::kCerjan, 1.5, {14, 12}},
                               {3, 2, wave::Absorbing::kSponge, 1.5, {9, 8, 7}},
                               {3, 4, wave::Absorbing::kNone, 0.0, {9, 8, 7}}};

TEST(NefiWaveInitialCondition, MapIsLinearAndPassesTheDotTest) {
  for (const Case& cs : kCases) {
    const WaveInitialConditionOperator op(pat_config(cs.ndim, cs.a, cs.order, cs.fc), cs.shape);
    const auto a = random_vector(cs.shape.numel(), 1), b = random_vector(cs.shape.numel(), 2);
    std::vector<double> ab(a.size());
    for (size_t i = 0; i < a.size(); ++i) ab[i] = 2 * a[i] + b[i];
    auto F = [&](const std::vector<double>& x) {
      return op.apply(fk::from_vector(x, cs.shape)).to_vector<double>();
    };
    const auto fa = F(a), fb = F(b), fab = F(ab);
    double scale = 0, worst = 0;
    for (size_t i = 0; i < fa.size(); ++i) {
      scale = std::max(scale, std::abs(fab[i]));
      worst = std::max(worst, std::abs(fab[i] - 2 * fa[i] - fb[i]));
    }
    EXPECT_GT(scale, 0);
    EXPECT_LT(worst, 1e-13 * scale) << cs.shape.str();
    const auto y = random_vector(fa.size(), 3);
    const double lhs = dot(fa, y), rhs = dot(a, op.adjoint(y));
    EXPECT_NEAR(lhs, rhs, 1e-12 * std::abs(lhs))
        << cs.shape.str() << " " << wave::absorbing_name(cs.a);
  }
}

TEST(NefiWaveInitialCondition, VjpIsTheAdjoint) {
  const Case& cs = kCases[2];
  const WaveInitialConditionOperator op(pat_config(cs.ndim, cs.a, cs.order, cs.fc), cs.shape);
  fk::Tensor p0 = fk::from_vector(random_vector(cs.shape.numel(), 4), cs.shape);
  p0.set_requires_grad(true);
  const fk::Tensor out = op.apply(p0);
  const auto y = random_vector(out.numel(), 5);
  fk::autograd::backward({out}, {fk::from_vector(y, out.shape())});
  const auto g = p0.grad().to_vector<double>(), ref = op.adjoint(y);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], ref[i]);
}

TEST(NefiWaveInitialCondition, GaussianLowPassIsSymmetricAndKeepsTheMean) {
  const int64_t n_t = 40;
  const auto x = random_vector(3 * n_t, 6), y = random_vector(3 * n_t, 7);
  const double dt = 0.25, fc = 1.0;
  EXPECT_NEAR(dot(nefi::gaussian_lowpass(x, n_t, dt, fc), y),
              dot(x, nefi::gaussian_lowpass(y, n_t, dt, fc)), 1e-12);
  const auto flat = nefi::gaussian_lowpass(std::vector<double>(n_t, 1.0), n_t, dt, fc);
  EXPECT_NEAR(flat[n_t / 2], 1.0, 1e-14);
  std::vector<double> nyquist(n_t);
  for (int64_t j = 0; j < n_t; ++j) nyquist[j] = j % 2 ? 1.0 : -1.0;
  // At the Nyquist rate the output is the alternating sum of the sampled,
  // normalised kernel exp(−t²/2σ²), σ = 1/(2π fc), |t| ≤ 4σ (3 samples here).
  const double sigma = 1 / (2 * std::numbers::pi * fc);
  double alt = 0, sum = 0;
  for (int j = -3; j <= 3; ++j) {
    const double w = std::exp(-std::pow(j * dt, 2) / (2 * sigma * sigma));
    sum += w, alt += (j % 2 ? -1 : 1) * w;
  }
  const auto low = nefi::gaussian_lowpass(nyquist, n_t, dt, fc);
  EXPECT_NEAR(low[n_t / 2], nyquist[n_t / 2] * alt / sum, 1e-14);
  EXPECT_LT(std::abs(low[n_t / 2]), 0.3);
}

// The sensor response acts on the pressure at every leapfrog step, before
// the samples are taken: an ideal-sensor operator recording every step,
// low-passed there and decimated, gives the same traces.
TEST(NefiWaveInitialCondition, SensorFiltersEveryStepBeforeSampling) {
  const Case& cs = kCases[2];
  const WaveInitialConditionConfig cfg = pat_config(cs.ndim, cs.a, cs.order, 1.5);
  const int64_t m = wave::make_wave_grid(cfg.wave, cs.shape).substeps;
  ASSERT_GT(m, 1);
  WaveInitialConditionConfig ideal = cfg;
  ideal.sensor_fc = 0;
  ideal.wave.dt_obs = cfg.wave.dt_obs / static_cast<double>(m);
  ideal.wave.n_t = (cfg.wave.n_t - 1) * m + 1;
  const fk::Tensor p0 = fk::from_vector(random_vector(cs.shape.numel(), 8), cs.shape);
  const auto every = WaveInitialConditionOperator(ideal, cs.shape).apply(p0).to_vector<double>();
  const auto low = nefi::gaussian_lowpass(every, ideal.wave.n_t, ideal.wave.dt_obs, 1.5);
  const auto got = WaveInitialConditionOperator(cfg, cs.shape).apply(p0).to_vector<double>();
  ASSERT_EQ(got.size(), cfg.receivers.size() * cfg.wave.n_t);
  double scale = 0;
  for (double v : got) scale = std::max(scale, std::abs(v));
  for (size_t r = 0; r < cfg.receivers.size(); ++r)
    for (int64_t j = 0; j < cfg.wave.n_t; ++j)
      EXPECT_NEAR(got[r * cfg.wave.n_t + j], low[r * ideal.wave.n_t + j * m], 1e-13 * scale);
}

// A blob in the middle of a square seen by a closed ring of sensors: time
// reversal brings it back (the reference: correlation 0.97 for a point).
TEST(NefiWaveInitialCondition, TimeReversalRefocusesABlob) {
  WaveInitialConditionConfig cfg = pat_config(2, wave::Absorbing::kPml, 4, 0.0);
  cfg.wave.n_t = 60;
  cfg.receivers.clear();
  for (int k = 0; k < 64; ++k) {
    const double t = 2 * std::numbers::pi * k / 64;
    cfg.receivers.push_back({1.0 + 0.9 * std::cos(t), 1.0 + 0.9 * std::sin(t)});
  }
  const fk::Dims shape{40, 40};
  const WaveInitialConditionOperator op(cfg, shape);
  std::vector<double> p0(40 * 40);
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 40; ++j)
      p0[i * 40 + j] = std::exp(-(std::pow(i - 21.5, 2) + std::pow(j - 18.5, 2)) / 6.0);
  const auto traces = op.apply(fk::from_vector(p0, shape)).to_vector<double>();
  const auto img = op.time_reversal(traces);
  double pg = 0, gg = 0, ii = 0, mp = 0, mi = 0;
  for (size_t i = 0; i < p0.size(); ++i) mp += p0[i] / p0.size(), mi += img[i] / p0.size();
  for (size_t i = 0; i < p0.size(); ++i) {
    pg += (p0[i] - mp) * (img[i] - mi), gg += (p0[i] - mp) * (p0[i] - mp);
    ii += (img[i] - mi) * (img[i] - mi);
  }
  const double corr = pg / std::sqrt(gg * ii);
  EXPECT_GT(corr, 0.9) << corr;
}

TEST(NefiWaveInitialCondition, BadInputIsAClearError) {
  const Case& cs = kCases[2];
  const WaveInitialConditionOperator op(pat_config(cs.ndim, cs.a, cs.order, cs.fc), cs.shape);
  EXPECT_THROW(op.apply(fk::zeros({9, 8})), fk::Error);
  EXPECT_THROW(op.apply(fk::zeros({9, 8, 7}, {fk::DType::I64})), fk::Error);
  EXPECT_THROW(op.adjoint(std::vector<double>(5)), fk::Error);
  EXPECT_THROW(op.time_reversal(std::vector<double>(5)), fk::Error);
  auto bad = pat_config(3, wave::Absorbing::kSponge, 2, -1.0);
  EXPECT_THROW(WaveInitialConditionOperator(bad, {9, 8, 7}), fk::Error);
  bad = pat_config(3, wave::Absorbing::kSponge, 2, 1.0);
  bad.receivers.push_back({0.5, 0.5, -0.1});
  EXPECT_THROW(WaveInitialConditionOperator(bad, {9, 8, 7}), fk::Error);
}

}  // namespace
