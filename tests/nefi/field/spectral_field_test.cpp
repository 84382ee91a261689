// SpectralField: its forward is the cosine series written out (1-, 2- and
// 3-D), the gains weigh the modes as the header says, a refinement keeps a
// band-limited field exactly and a coarsening drops what the grid cannot
// hold, and the smoothness makes the coarse modes move first under L-BFGS.
#include "nefi/field/spectral_field.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "nefi/field/grid_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/pointwise.h"
#include "nefi/solve/solver.h"

namespace {

std::vector<nefi::HeadPtr> one_head(double init = 0.0) {
  return {nefi::identity_head("x", init)};
}

std::vector<int64_t> unravel(int64_t flat, const fk::Dims& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int a = shape.size() - 1; a >= 0; --a) {
    idx[a] = flat % shape[a];
    flat /= shape[a];
  }
  return idx;
}

// The series with amplitudes amp (C order over modes) at the cell centres of
// shape, written out.
std::vector<double> series(const std::vector<double>& amp, const fk::Dims& modes,
                           const fk::Dims& shape) {
  std::vector<double> x(shape.numel(), 0.0);
  for (int64_t cell = 0; cell < shape.numel(); ++cell) {
    const std::vector<int64_t> i = unravel(cell, shape);
    for (int64_t f = 0; f < modes.numel(); ++f) {
      const std::vector<int64_t> k = unravel(f, modes);
      double term = amp[f];
      for (int a = 0; a < shape.size(); ++a)
        term *= std::cos(std::numbers::pi * k[a] * (i[a] + 0.5) / shape[a]);
      x[cell] += term;
    }
  }
  return x;
}

void set_theta(nefi::SpectralField& f, const std::vector<double>& theta) {
  fk::autograd::NoGradGuard ng;
  f.params().raw(0).copy_(fk::from_vector(theta, f.params().shape(0)).to(fk::DType::F32));
  f.params().flat().bump_version();
}

TEST(NefiSpectralField, ForwardIsTheCosineSeries) {
  for (const fk::Dims& shape : {fk::Dims{7}, fk::Dims{6, 5}, fk::Dims{4, 3, 5}}) {
    nefi::SpectralConfig cfg;
    cfg.modes = 3;
    cfg.smoothness = 1.5;
    const nefi::Domain dom(shape);
    nefi::SpectralField f(dom, one_head(), cfg);
    fk::Dims modes = shape;
    for (int a = 0; a < shape.size(); ++a) modes[a] = std::min<int64_t>(3, shape[a]);
    ASSERT_EQ(f.modes(), modes);
    EXPECT_EQ(f.n_parameters(), modes.numel());
    const std::vector<double> theta = fk::test::random_values(modes.numel(), -1, 1, 7);
    set_theta(f, theta);
    const std::vector<double> g = nefi::spectral_gains(modes, dom.extent(), 1.5);
    std::vector<double> amp(theta.size());
    for (size_t k = 0; k < amp.size(); ++k) amp[k] = g[k] * theta[k];
    const std::vector<double> want = series(amp, modes, shape);
    const auto got = f.forward(dom, 1.0).at("x").to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t c = 0; c < got.size(); ++c) EXPECT_NEAR(got[c], want[c], 1e-5) << shape.str();
  }
}

TEST(NefiSpectralField, GainsFallWithTheWavenumberAndAUnitStepIsOneRmsPerCell) {
  // s = 0: every mode alike; the normalisation makes sum g^2 nu = 1.
  const std::vector<double> flat = nefi::spectral_gains({4, 4}, {1.0, 1.0}, 0.0);
  for (double v : flat) EXPECT_NEAR(v, flat[0], 1e-15);
  for (double s : {0.0, 1.0, 2.5}) {
    const fk::Dims modes{6, 3};
    const std::vector<double> g = nefi::spectral_gains(modes, {2.0, 0.5}, s);
    double energy = 0;
    for (int64_t f = 0; f < modes.numel(); ++f) {
      const std::vector<int64_t> k = unravel(f, modes);
      // kappa: half periods across the longest axis (2.0): axis 1 is 4 x shorter.
      const double kappa2 = k[0] * k[0] + 16.0 * k[1] * k[1];
      EXPECT_NEAR(g[f] / g[0], std::pow(1 + kappa2, -s / 2), 1e-12) << s << " mode " << f;
      energy += g[f] * g[f] * (k[0] ? 0.5 : 1) * (k[1] ? 0.5 : 1);
    }
    EXPECT_NEAR(energy, 1.0, 1e-12) << s;
  }
  // The claim the normalisation stands for: random unit steps of every
  // coefficient change the field by about 1 RMS per cell.
  const nefi::Domain dom({32, 32});
  for (double s : {0.0, 2.0}) {
    nefi::SpectralConfig cfg;
    cfg.smoothness = s;
    nefi::SpectralField f(dom, one_head(), cfg);
    fk::Generator gen(3);
    const auto signs =
        fk::uniform({f.n_parameters()}, -1, 1, {fk::DType::F64}, &gen).to_vector<double>();
    std::vector<double> theta(signs.size());
    for (size_t k = 0; k < theta.size(); ++k) theta[k] = signs[k] < 0 ? -1.0 : 1.0;
    set_theta(f, theta);
    double ms = 0;
    for (double v : f.forward(dom, 1.0).at("x").to_vector<double>()) ms += v * v;
    EXPECT_NEAR(std::sqrt(ms / dom.numel()), 1.0, 0.25) << s;
  }
}

TEST(NefiSpectralField, StartsAtTheHeadsValueAndKeepsItsModesAcrossStages) {
  nefi::SpectralConfig cfg;
  cfg.smoothness = 2;
  nefi::SpectralField f(nefi::Domain({8, 6}), one_head(-0.7), cfg);
  for (double v : f.forward(nefi::Domain({8, 6}), 0.0).at("x").to_vector<double>())
    EXPECT_NEAR(v, -0.7, 1e-6);
  // A band-limited field on 8 x 6, refined to 16 x 12: the same continuous
  // series at the new centres, the new modes 0.
  const std::vector<double> theta = fk::test::random_values(48, -1, 1, 5);
  set_theta(f, theta);
  const std::vector<double> g = nefi::spectral_gains({8, 6}, {1.0, 1.0}, 2.0);
  std::vector<double> amp(48);
  for (int k = 0; k < 48; ++k) amp[k] = g[k] * theta[k];
  f.on_stage_start(nefi::Domain({16, 12}));
  EXPECT_EQ(f.modes(), fk::Dims({16, 12}));
  const std::vector<double> fine = series(amp, {8, 6}, {16, 12});
  const auto got = f.forward(nefi::Domain({16, 12}), 1.0).at("x").to_vector<double>();
  for (int c = 0; c < 16 * 12; ++c) EXPECT_NEAR(got[c], fine[c], 1e-5) << c;
  // Coarsening to 4 x 3 keeps modes below (4, 3) and drops the rest; back on
  // 8 x 6 the kept ones have their amplitudes and the dropped ones are 0.
  f.on_stage_start(nefi::Domain({4, 3}));
  f.on_stage_start(nefi::Domain({8, 6}));
  std::vector<double> kept = amp;
  for (int k = 0; k < 48; ++k)
    if (k / 6 >= 4 || k % 6 >= 3) kept[k] = 0;
  const std::vector<double> back = series(kept, {8, 6}, {8, 6});
  const auto round = f.forward(nefi::Domain({8, 6}), 1.0).at("x").to_vector<double>();
  for (int c = 0; c < 48; ++c) EXPECT_NEAR(round[c], back[c], 1e-5) << c;
}

TEST(NefiSpectralField, RefusesBadConfigs) {
  nefi::SpectralConfig neg;
  neg.modes = -1;
  EXPECT_NE(fk::test::error_of([&] {
              nefi::SpectralField(nefi::Domain({4}), one_head(), neg);
            }).find("modes >= 0"),
            std::string::npos);
  nefi::SpectralConfig rough;
  rough.smoothness = -0.5;
  EXPECT_NE(fk::test::error_of([&] {
              nefi::SpectralField(nefi::Domain({4}), one_head(), rough);
            }).find("smoothness in [0, 8]"),
            std::string::npos);
  nefi::SpectralField f(nefi::Domain({4, 4}), one_head());
  EXPECT_NE(fk::test::error_of([&] {
              f.forward(nefi::Domain({4, 5}), 1.0);
            }).find("[4, 4]"),
            std::string::npos);
}

// Denoising a smooth scene by 20 unregularised L-BFGS iterations: in the
// spectral field's coefficients the coarse modes move first, so the fit is
// nearer the truth than a grid's, which takes up the noise with the scene
// (through the identity, L-BFGS's first step lands on the data).
double denoise_error(const std::shared_ptr<nefi::Field>& field, const std::vector<double>& noisy,
                     const std::vector<double>& truth, int64_t n) {
  nefi::InverseProblem p;
  p.domain = nefi::Domain({n, n});
  p.op = std::make_shared<nefi::IdentityOperator>();
  p.field = field;
  p.losses.add(nefi::mse_loss(), 1.0);
  p.measurement.data = fk::from_vector(noisy, {n, n}).to(fk::DType::F32);
  nefi::Curriculum c = nefi::Curriculum::single({n, n}, 20, 1.0);
  c.optim.optimizer = "lbfgs";
  c.optim.lbfgs.max_iter = 1;
  c.stages[0].lr_schedule = "constant";
  const auto x = nefi::Solver(p, c).run().fields.at("x").to_vector<double>();
  double e = 0, t = 0;
  for (int64_t i = 0; i < n * n; ++i) {
    e += (x[i] - truth[i]) * (x[i] - truth[i]);
    t += truth[i] * truth[i];
  }
  return std::sqrt(e / t);
}

TEST(NefiSpectralField, SmoothnessFitsTheSceneBeforeTheNoise) {
  const fk::test::ThreadCount one(1);
  const int64_t n = 32;
  std::vector<double> truth(n * n), noisy(n * n);
  const std::vector<double> noise = fk::test::random_values(n * n, -0.5, 0.5, 11);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double u = (i + 0.5) / n, v = (j + 0.5) / n;
      truth[i * n + j] = 1 + std::exp(-((u - 0.4) * (u - 0.4) + (v - 0.6) * (v - 0.6)) / 0.05);
      noisy[i * n + j] = truth[i * n + j] + noise[i * n + j];
    }
  nefi::SpectralConfig smooth;
  smooth.smoothness = 2;
  const nefi::Domain dom({n, n});
  const double spectral = denoise_error(
      std::make_shared<nefi::SpectralField>(dom, one_head(1.0), smooth), noisy, truth, n);
  const double grid = denoise_error(
      std::make_shared<nefi::GridField>(fk::Dims{n, n}, one_head(1.0)), noisy, truth, n);
  EXPECT_LT(spectral, 0.5 * grid) << spectral << " vs " << grid;
}

}  // namespace
