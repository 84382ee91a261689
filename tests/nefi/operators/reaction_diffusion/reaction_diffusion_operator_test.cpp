#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "fk/testing.h"

namespace {

namespace gs = nefi::gray_scott;

std::vector<double> uniform_values(int64_t n, double lo, double hi, uint64_t seed) {
  fk::Generator gen(seed);
  auto v = fk::rand({n}, {fk::DType::F64}, &gen).to_vector<double>();
  for (double& x : v) x = lo + (hi - lo) * x;
  return v;
}

fk::Tensor feed_field(int64_t n0, int64_t n1, uint64_t seed) {
  return fk::from_vector(uniform_values(n0 * n1, 0.02, 0.07, seed), {n0, n1});
}

double sum(const std::vector<double>& a) {
  double s = 0;
  for (double x : a) s += x;
  return s;
}

// With F = k = 0 the reaction only turns u into v and the flux-form
// diffusion only moves mass between cells: sum(u + v) holds to round-off
// for both boundary kinds.
TEST(NefiGrayScott, PureExchangeConservesMass) {
  for (gs::Boundary b : {gs::Boundary::kNeumann, gs::Boundary::kPeriodic}) {
    const gs::Grid g{17, 12, 0.02, 0.03, b};
    const gs::Rates r{0.0, 2e-5, 1e-5};
    auto u = uniform_values(g.size(), 0, 1, 1), v = uniform_values(g.size(), 0, 1, 2);
    const std::vector<double> F(g.size(), 0.0);
    const double before = sum(u) + sum(v);
    gs::Workspace w(g.size());
    const int64_t m = gs::stable_substeps(g, r, 1.0, 0.0);
    for (int s = 0; s < 500 * m; ++s) gs::step(g, r, F.data(), 1.0 / m, u.data(), v.data(), w);
    EXPECT_NEAR(sum(u) + sum(v), before, 1e-13 * before);
    // ... while the reaction did turn u into v.
    EXPECT_GT(std::abs(sum(u) - sum(uniform_values(g.size(), 0, 1, 1))), 1e-3);
  }
}

// Uniform states solve the ODE: (1, 0) always, and for F^2 > 4 F (F + k)^2
// the two roots of (F + k) v^2 - F v + F (F + k) = 0 with u = (F + k) / v.
TEST(NefiGrayScott, HomogeneousSteadyStatesStay) {
  const gs::Grid g{8, 8, 0.02, 0.02, gs::Boundary::kNeumann};
  const double F0 = 0.05, k = 0.05;
  const gs::Rates r{k, 2e-5, 1e-5};
  const double disc = std::sqrt(F0 * F0 - 4 * F0 * (F0 + k) * (F0 + k));
  const std::vector<double> F(g.size(), F0);
  for (double v0 : {0.0, (F0 + disc) / (2 * (F0 + k)), (F0 - disc) / (2 * (F0 + k))}) {
    const double u0 = v0 == 0 ? 1.0 : (F0 + k) / v0;
    std::vector<double> u(g.size(), u0), v(g.size(), v0);
    gs::Workspace w(g.size());
    for (int s = 0; s < 200; ++s) gs::step(g, r, F.data(), 0.5, u.data(), v.data(), w);
    for (int64_t i = 0; i < g.size(); ++i) {
      EXPECT_NEAR(u[i], u0, 1e-11) << v0;
      EXPECT_NEAR(v[i], v0, 1e-11) << v0;
    }
  }
}

// At the stability-derived substep u and v stay in [0, 1] over 2000 time
// units, from the analytic initial condition with a random F field.
TEST(NefiGrayScott, StatesStayInTheUnitInterval) {
  const gs::Grid g{32, 32, 0.02, 0.02, gs::Boundary::kNeumann};
  const gs::Rates r;
  const auto F = uniform_values(g.size(), 0.02, 0.07, 3);
  const int64_t m = gs::stable_substeps(g, r, 1.0, 0.07);
  const double rate = 2e-5 * (4 / (0.02 * 0.02)) + 0.07 + r.k + 1;
  EXPECT_LE(rate / m, 1.0);
  EXPECT_GT(rate / (m - 1), 1.0);
  std::vector<double> u, v;
  gs::initial_condition(g, 2, 3, u, v);
  gs::Workspace w(g.size());
  double lo = 1, hi = 0;
  for (int64_t s = 0; s < 2000 * m; ++s) {
    gs::step(g, r, F.data(), 1.0 / m, u.data(), v.data(), w);
    for (int64_t i = 0; i < g.size(); ++i) {
      lo = std::min({lo, u[i], v[i]});
      hi = std::max({hi, u[i], v[i]});
    }
  }
  EXPECT_GE(lo, 0.0);
  EXPECT_LE(hi, 1.0);
}

nefi::ReactionDiffusionOptions small_options(nefi::RDGradMode mode, int64_t every) {
  nefi::ReactionDiffusionOptions o;
  o.obs_times = {3, 5};
  o.rates = {0.06, 2e-3, 1e-3};  // strong diffusion: the gradient reaches neighbours
  o.grad_mode = mode;
  o.checkpoint_every = every;
  return o;
}

// The adjoint with checkpoints (every 1, 3, sqrt, all) against the unrolled
// fk-op graph on the tape: same forward to round-off, same vector-Jacobian
// product to round-off, and bit-identical across checkpoint intervals.
TEST(NefiReactionDiffusion, CheckpointedAdjointEqualsUnrolledAutograd) {
  for (gs::Boundary b : {gs::Boundary::kNeumann, gs::Boundary::kPeriodic}) {
    const nefi::Domain dom({9, 7}, {0.18, 0.14});
    const fk::Tensor F = feed_field(9, 7, 4);
    fk::Generator gen(5);
    auto unrolled = small_options(nefi::RDGradMode::kAutograd, 0);
    unrolled.boundary = b;
    nefi::ReactionDiffusionOperator ref(dom, unrolled);
    const fk::Tensor g = fk::randn(ref.output_shape(dom.shape()), {fk::DType::F64}, &gen);
    const auto y_ref = ref.apply(F).to_vector<double>();
    const auto vjp_ref = ref.vjp(F, g).to_vector<double>();
    std::vector<double> first;
    for (int64_t every : {1, 3, 0, 1000}) {
      auto o = small_options(nefi::RDGradMode::kCheckpoint, every);
      o.boundary = b;
      nefi::ReactionDiffusionOperator op(dom, o);
      const auto y = op.apply(F).to_vector<double>();
      const auto vjp = op.vjp(F, g).to_vector<double>();
      double scale = 0;
      for (double x : vjp_ref) scale = std::max(scale, std::abs(x));
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], y_ref[i], 1e-14);
      for (size_t i = 0; i < vjp.size(); ++i) EXPECT_NEAR(vjp[i], vjp_ref[i], 1e-12 * scale);
      if (first.empty()) first = vjp;
      EXPECT_EQ(vjp, first) << "checkpoint_every " << every;
    }
  }
}

TEST(NefiReactionDiffusion, GradcheckBothModes) {
  const nefi::Domain dom({5, 4}, {0.1, 0.08});
  for (auto mode : {nefi::RDGradMode::kCheckpoint, nefi::RDGradMode::kAutograd}) {
    auto o = small_options(mode, 2);
    o.observe_u = false;  // v only
    nefi::ReactionDiffusionOperator op(dom, o);
    fk::Tensor F = feed_field(5, 4, 6);
    F.set_requires_grad(true);
    auto fn = [&](const std::vector<fk::Tensor>& v) { return op.apply(v[0]); };
    EXPECT_EQ(fk::testing::gradcheck(fn, {F}), "");
  }
}

// The data generator's 4x substeps differ from the inversion's Euler step by
// an O(dt) gap of about a per cent, not by nothing.
TEST(NefiReactionDiffusion, FinerSubstepsGap) {
  const nefi::Domain dom({32, 32}, {0.64, 0.64});
  nefi::ReactionDiffusionOptions o;
  nefi::ReactionDiffusionOperator coarse(dom, o);
  o.substep_factor = 4;
  nefi::ReactionDiffusionOperator fine(dom, o);
  EXPECT_EQ(fine.substeps(0.07), 4 * coarse.substeps(0.07));
  EXPECT_NE(fine.fidelity_tag(), coarse.fidelity_tag());
  const fk::Tensor F = feed_field(32, 32, 7);
  const auto a = coarse.apply(F).to_vector<double>(), b = fine.apply(F).to_vector<double>();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  EXPECT_GT(std::sqrt(num / den), 1e-4);
  EXPECT_LT(std::sqrt(num / den), 0.03);
}

TEST(NefiReactionDiffusion, BadInputsAreClearErrors) {
  const nefi::Domain dom({8, 8}, {0.16, 0.16});
  auto bad = [&](auto edit) {
    nefi::ReactionDiffusionOptions o;
    edit(o);
    EXPECT_THROW(nefi::ReactionDiffusionOperator(dom, o), fk::Error);
  };
  bad([](auto& o) { o.dt = 0; });
  bad([](auto& o) { o.obs_times = {}; });
  bad([](auto& o) { o.obs_times = {50, 25}; });
  bad([](auto& o) { o.obs_times = {2.5}; });
  bad([](auto& o) { o.rates.Du = -1; });
  bad([](auto& o) { o.observe_u = o.observe_v = false; });
  bad([](auto& o) { o.substep_factor = 0; });
  bad([](auto& o) { o.checkpoint_every = -1; });
  EXPECT_THROW(nefi::ReactionDiffusionOperator(nefi::Domain({8}), {}), fk::Error);
  nefi::ReactionDiffusionOperator op(dom, {});
  EXPECT_THROW(op.apply(fk::zeros({8, 7}, {fk::DType::F64})), fk::Error);
  EXPECT_THROW(op.apply(fk::zeros({8, 8}, {fk::DType::I32})), fk::Error);
}

}  // namespace
