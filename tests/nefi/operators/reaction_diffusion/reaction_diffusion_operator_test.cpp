#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "fk/testing.h"

namespace {

std::vector<double> uniform_values(int64_t n, double lo, double hi, uint64_t seed) {
  fk::Generator gen(seed);
  auto v = fk::rand({n}, {fk::DType::F64}, &gen).to_vector<double>();
  for (double& x : v) x = lo + (hi - lo) * x;
  return v;
}

fk::Tensor feed_field(int64_t n0, int64_t n1, uint64_t seed) {
  return fk::from_vector(uniform_values(n0 * n1, 0.02, 0.07, seed), {n0, n1});
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
  using nefi::gray_scott::Boundary;
  for (Boundary b : {Boundary::kNeumann, Boundary::kPeriodic}) {
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

// The other unknowns: a kill-rate field and a Du field (harmonic faces),
// checkpointed adjoint against the unrolled graph for both boundary kinds.
fk::Tensor unknown_field(nefi::RDUnknown unknown, int64_t n0, int64_t n1, uint64_t seed) {
  const double lo = unknown == nefi::RDUnknown::kK ? 0.04 : 1e-3;
  const double hi = unknown == nefi::RDUnknown::kK ? 0.08 : 4e-3;
  return fk::from_vector(uniform_values(n0 * n1, lo, hi, seed), {n0, n1});
}
nefi::ReactionDiffusionOptions unknown_options(nefi::RDUnknown unknown, nefi::RDGradMode mode,
                                               int64_t every) {
  auto o = small_options(mode, every);
  o.unknown = unknown;
  o.F = 0.04;
  o.field_max = unknown == nefi::RDUnknown::kK ? 0.08 : 4e-3;
  return o;
}

TEST(NefiReactionDiffusion, KillRateAndDiffusivityAdjointsEqualUnrolledAutograd) {
  using nefi::gray_scott::Boundary;
  for (auto unknown : {nefi::RDUnknown::kK, nefi::RDUnknown::kDu})
    for (Boundary b : {Boundary::kNeumann, Boundary::kPeriodic}) {
      const nefi::Domain dom({9, 7}, {0.18, 0.14});
      const fk::Tensor x = unknown_field(unknown, 9, 7, 8);
      auto ro = unknown_options(unknown, nefi::RDGradMode::kAutograd, 0);
      ro.boundary = b;
      nefi::ReactionDiffusionOperator ref(dom, ro);
      fk::Generator gen(9);
      const fk::Tensor g = fk::randn(ref.output_shape(dom.shape()), {fk::DType::F64}, &gen);
      const auto y_ref = ref.apply(x).to_vector<double>();
      const auto vjp_ref = ref.vjp(x, g).to_vector<double>();
      double scale = 0;
      for (double v : vjp_ref) scale = std::max(scale, std::abs(v));
      ASSERT_GT(scale, 0.0);
      for (int64_t every : {1, 0}) {
        auto o = unknown_options(unknown, nefi::RDGradMode::kCheckpoint, every);
        o.boundary = b;
        nefi::ReactionDiffusionOperator op(dom, o);
        const auto y = op.apply(x).to_vector<double>();
        const auto vjp = op.vjp(x, g).to_vector<double>();
        for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], y_ref[i], 1e-14);
        for (size_t i = 0; i < vjp.size(); ++i)
          EXPECT_NEAR(vjp[i], vjp_ref[i], 1e-12 * scale) << static_cast<int>(unknown);
      }
    }
}

TEST(NefiReactionDiffusion, GradcheckKillRateAndDiffusivity) {
  const nefi::Domain dom({5, 4}, {0.1, 0.08});
  for (auto unknown : {nefi::RDUnknown::kK, nefi::RDUnknown::kDu})
    for (auto mode : {nefi::RDGradMode::kCheckpoint, nefi::RDGradMode::kAutograd}) {
      nefi::ReactionDiffusionOperator op(dom, unknown_options(unknown, mode, 2));
      fk::Tensor x = unknown_field(unknown, 5, 4, 10);
      x.set_requires_grad(true);
      auto fn = [&](const std::vector<fk::Tensor>& v) { return op.apply(v[0]); };
      EXPECT_EQ(fk::testing::gradcheck(fn, {x}), "") << static_cast<int>(unknown);
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
  bad([](auto& o) { o.F = -0.1; });
  bad([](auto& o) { o.unknown = nefi::RDUnknown::kDu, o.field_max = 0; });
  nefi::ReactionDiffusionOptions du;
  du.unknown = nefi::RDUnknown::kDu;
  du.field_max = 4e-5;
  nefi::ReactionDiffusionOperator d_op(dom, du);
  EXPECT_THROW(d_op.apply(fk::zeros({8, 8}, {fk::DType::F64})), fk::Error);
  EXPECT_THROW(nefi::ReactionDiffusionOperator(nefi::Domain({8}), {}), fk::Error);
  nefi::ReactionDiffusionOperator op(dom, {});
  EXPECT_THROW(op.apply(fk::zeros({8, 7}, {fk::DType::F64})), fk::Error);
  EXPECT_THROW(op.apply(fk::zeros({8, 8}, {fk::DType::I32})), fk::Error);
}

}  // namespace
