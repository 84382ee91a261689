#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/autograd.h"
#include "fk/device.h"
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
  bad([](auto& o) { o.device_fused_cells = -1; });
  bad([](auto& o) { o.device_fused_cells = nefi::kMaxDeviceFusedCells + 1; });
  nefi::ReactionDiffusionOptions widest;
  widest.device_fused_cells = nefi::kMaxDeviceFusedCells;
  EXPECT_NO_THROW(nefi::ReactionDiffusionOperator(dom, widest));
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

// Both gradient modes run on a device (nothing host-only); only the
// checkpointed one is graph-capturable (the unrolled one reads the field's
// maximum back and uploads the initial state every apply).
TEST(NefiReactionDiffusion, DeviceDeclarations) {
  const nefi::Domain dom({8, 8}, {0.16, 0.16});
  for (auto mode : {nefi::RDGradMode::kCheckpoint, nefi::RDGradMode::kAutograd}) {
    nefi::ReactionDiffusionOptions o;
    o.grad_mode = mode;
    const nefi::ReactionDiffusionOperator op(dom, o);
    EXPECT_EQ(op.host_only_reason(), "");
    EXPECT_EQ(op.graph_capturable(), mode == nefi::RDGradMode::kCheckpoint);
    EXPECT_EQ(nefi::device_solve_refusal(op, fk::cuda_device(0)), "");
    // A refused capture says what the unrolled apply does on the host.
    if (mode == nefi::RDGradMode::kCheckpoint) {
      EXPECT_EQ(op.not_capturable_reason(), "");
    } else {
      EXPECT_EQ(op.not_capturable_reason(),
                "grad_mode autograd copies the field to the host at every apply (its range "
                "checks it and sets the substep count, so the number of steps depends on the "
                "values) and uploads the initial state each time (a captured step needs "
                "grad_mode checkpoint, which steps with field_max's schedule)");
    }
  }
}

// The schedule: m from max(field_max, peak), the observed substep counts,
// checkpoints every ceil(sqrt(S)) for 0 and at most S.
TEST(NefiReactionDiffusion, ScheduleFollowsTheFieldsBound) {
  const nefi::Domain dom({8, 8}, {0.16, 0.16});
  nefi::ReactionDiffusionOptions o;
  o.obs_times = {2, 5};
  const nefi::ReactionDiffusionOperator op(dom, o);
  const nefi::RDSchedule at_bound = op.schedule(0);
  EXPECT_EQ(at_bound.m, op.substeps(o.field_max));
  EXPECT_EQ(at_bound.obs, (std::vector<int64_t>{2 * at_bound.m, 5 * at_bound.m}));
  EXPECT_EQ(at_bound.total, 5 * at_bound.m);
  EXPECT_DOUBLE_EQ(at_bound.tau, o.dt / at_bound.m);
  EXPECT_EQ(at_bound.every,
            static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(at_bound.total)))));
  EXPECT_EQ(op.schedule(-INFINITY).m, at_bound.m);
  EXPECT_GT(op.schedule(50.0).m, at_bound.m);  // a feed rate past the bound needs more substeps
  // The captured solve's limit: the last peak with the field_max schedule
  // (an f32 field rounded just above field_max keeps it).
  const double limit = op.schedule_limit();
  EXPECT_GE(limit, o.field_max);
  EXPECT_EQ(op.schedule(limit).m, at_bound.m);
  EXPECT_EQ(op.schedule(static_cast<float>(o.field_max)).m, at_bound.m);
  EXPECT_GT(op.schedule(std::nextafter(limit, INFINITY)).m, at_bound.m);
  o.checkpoint_every = 1000;
  EXPECT_EQ(nefi::ReactionDiffusionOperator(dom, o).schedule(0).every, at_bound.total);
}

// The initial state is built once per device: the same buffer from a copy
// of the operator, a new one at another resolution; its values are
// initial_condition's.
TEST(NefiReactionDiffusion, InitialStateIsKeptPerDevice) {
  const nefi::Domain dom({8, 6}, {0.16, 0.12});
  const nefi::ReactionDiffusionOperator op(dom, {});
  const fk::Tensor a = op.initial_state_on(fk::kCPU);
  EXPECT_EQ(a.data_ptr(), op.initial_state_on(fk::kCPU).data_ptr());
  const nefi::ReactionDiffusionOperator copy = op;
  EXPECT_EQ(copy.initial_state_on(fk::kCPU).data_ptr(), a.data_ptr());
  std::vector<double> u, v;
  nefi::gray_scott::initial_condition(op.grid(), 2, 3, u, v);
  u.insert(u.end(), v.begin(), v.end());
  EXPECT_EQ(a.shape(), fk::Dims({2, 8, 6}));
  EXPECT_EQ(a.to_vector<double>(), u);
  const auto coarse = op.at_resolution({4, 3});
  const auto& rd = static_cast<const nefi::ReactionDiffusionOperator&>(*coarse);
  EXPECT_EQ(rd.initial_state_on(fk::kCPU).shape(), fk::Dims({2, 4, 3}));
}

}  // namespace
