// batch_invert's device loop (solve/batch_device.cpp) run on the CPU: its
// bookkeeping (stacked fields, the zero seed of frozen rows, the one gathered
// read through the step block, per-problem clip and gated Adam, history rows, the discrepancy stop)
// against the independent reference, each problem solved alone by the
// sequential Solver. On a GPU the same loop runs with device sums and the
// device Adam (tests/nefi/cuda/batch_device_test.cpp).
//
// Tolerance 1e-5 relative on every loss and absolute on the final fields, as
// the CPU batch's own tests allow: the loop's fields are one grouped MLP
// (grouped_mlp.h: fk::linear's products and fk's tanh, where a sequential
// NeuralField runs nefi::dense's fused kernels and fast tanh) and its losses
// the batched forms, whose row reductions may round differently in the last
// bits from the single forms; Adam carries that over the steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "nefi/losses/data_losses.h"

#include "nefi/field/grid_field.h"
#include "nefi/field/heads.h"
#include "nefi/instances/instance.h"
#include "nefi/solve/batch.h"
#include "nefi/solve/batch_device.h"
#include "nefi/solve/batch_test_setups.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::batch_test::max_abs_diff;
using nefi::batch_test::sequential;
using nefi::batch_test::Setups;
using nefi::batch_test::smoke_params;

// Three problems of `instance`'s `method`, seeds 0, 1, 2.
Setups setups(const std::string& instance, const nefi::Params& p,
              const std::string& method = "neural") {
  return nefi::batch_test::setups(instance, p, {0, 1, 2}, method);
}

std::vector<nefi::Result> loop(Setups s) {
  nefi::BatchOptions bo;
  for (size_t b = 0; b < s.problems.size(); ++b) bo.seeds.push_back(b);
  EXPECT_FALSE(nefi::batch_device_reason(s.problems, s.curriculum, bo).has_value());
  return nefi::detail::batch_invert_device(s.problems, s.curriculum, bo);
}

void expect_same_run(const nefi::Result& seq, const nefi::Result& got, double tol) {
  ASSERT_NO_FATAL_FAILURE(nefi::batch_test::expect_same_history(seq, got, tol));
  EXPECT_LE(max_abs_diff(seq.fields.at("x"), got.fields.at("x")), tol);
  EXPECT_EQ(got.error, "");
  EXPECT_EQ(got.batch_size, 3);
}

void expect_loop_equals_sequential(const std::string& instance, std::vector<double> steps,
                                   const std::string& method = "neural",
                                   const std::string& activation = "") {
  nefi::Params p = smoke_params(instance, steps);
  if (!activation.empty()) p.set("activation", activation);
  const Setups s = setups(instance, p, method);
  const auto got = loop(setups(instance, p, method));
  ASSERT_EQ(got.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    SCOPED_TRACE(instance + " " + method + " problem " + std::to_string(b));
    expect_same_run(sequential(s.problems[b], s.curriculum, b), got[b], 1e-5);
  }
}

TEST(NefiBatchDeviceLoop, Toy1dOnTheCpuEqualsSequentialPerStep) {
  expect_loop_equals_sequential("toy1d", {20, 40});
}

// A gelu trunk: the grouped MLP's unary after the product, its derivative
// from the saved input. (A sine trunk multiplies each layer's round-off by
// 30: fk::linear's sums against nefi::dense's part 1e-3 within 5 steps, so
// its grouped rows are checked per op, in grouped_mlp_test.cpp.)
TEST(NefiBatchDeviceLoop, Toy1dGeluOnTheCpuEqualsSequentialPerStep) {
  expect_loop_equals_sequential("toy1d", {10, 20}, "neural", "gelu");
}

// Grid fields: the block's values, resampled on the host at the second
// stage's start (a finer grid), as each GridField is alone.
TEST(NefiBatchDeviceLoop, Toy1dGridOnTheCpuEqualsSequentialPerStepAcrossStages) {
  expect_loop_equals_sequential("toy1d", {20, 40}, "grid");
}

// Two channels: an extra head first, so the operator's "x" is channel 1 of
// each row's (C, cells) values; the loop's channel-last reading must give
// each problem's own x, as its GridField does alone.
TEST(NefiBatchDeviceLoop, Toy1dGridOfTwoChannelsOnTheCpuEqualsSequential) {
  const nefi::Params p = smoke_params("toy1d", {20, 40});
  auto two_channels = [&] {
    Setups s = setups("toy1d", p, "grid");
    for (nefi::InverseProblem& q : s.problems) {
      const auto& g = dynamic_cast<const nefi::GridField&>(*q.field);
      q.field = std::make_shared<nefi::GridField>(
          g.shape(),
          std::vector<nefi::HeadPtr>{nefi::make_head("identity", "aux", 0.3), g.heads().front()});
    }
    return s;
  };
  const Setups s = two_channels();
  const auto got = loop(two_channels());
  ASSERT_EQ(got.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    SCOPED_TRACE("problem " + std::to_string(b));
    expect_same_run(sequential(s.problems[b], s.curriculum, b), got[b], 1e-5);
  }
}

// Only the first (coarse) stage trained: the fields end on the last stage's
// grid, resampled, as a Solver's only_stage run ends.
TEST(NefiBatchDeviceLoop, Toy1dGridOfTheFirstStageAloneEqualsSequential) {
  const nefi::Params p = smoke_params("toy1d", {20, 40});
  const Setups s = setups("toy1d", p, "grid");
  Setups d = setups("toy1d", p, "grid");
  nefi::BatchOptions bo;
  bo.seeds = {0, 1, 2};
  bo.only_stage = 0;
  const auto got = nefi::detail::batch_invert_device(d.problems, d.curriculum, bo);
  ASSERT_EQ(got.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    SCOPED_TRACE("problem " + std::to_string(b));
    nefi::SolverOptions so;
    so.seed = b;
    so.only_stage = 0;
    const nefi::Result seq = nefi::Solver(s.problems[b], s.curriculum, so).run();
    ASSERT_EQ(seq.stages.size(), 1u);
    EXPECT_LT(seq.stages[0].shape[0], seq.fields.at("x").size(0));  // resampled to the last grid
    expect_same_run(seq, got[b], 1e-5);
  }
}

TEST(NefiBatchDeviceLoop, DeconvolutionOnTheCpuEqualsSequentialPerStep) {
  expect_loop_equals_sequential("deconvolution", {8, 16});
}

// Problem 0's generous noise level stops it by the discrepancy rule; the
// others (unknown noise) run on, their rows unaffected by its frozen one.
TEST(NefiBatchDeviceLoop, AStoppedProblemStopsAloneAtItsSequentialStep) {
  const nefi::Params p = smoke_params("toy1d", {30});
  auto noisy = [&] {
    Setups s = setups("toy1d", p);
    s.problems[0].measurement.noise_std = 0.2;
    for (size_t b = 1; b < 3; ++b) s.problems[b].measurement.noise_std = -1;
    s.curriculum.discrepancy_tau = 1.0;
    return s;
  };
  const Setups s = noisy();
  const nefi::Result seq0 = sequential(s.problems[0], s.curriculum, 0);
  ASSERT_EQ(seq0.stages[0].stop, "discrepancy");
  ASSERT_LT(seq0.stages[0].steps, 30);
  const auto got = loop(noisy());
  expect_same_run(seq0, got[0], 1e-5);
  for (size_t b = 1; b < 3; ++b)
    expect_same_run(sequential(s.problems[b], s.curriculum, b), got[b], 1e-5);
}

// A batched term that is NaN for problem 1 and exactly 0 (value and
// gradient) for the others: problem 1 diverges, the rest train as without it.
struct NanRowLoss : nefi::Loss {
  NanRowLoss() : nefi::Loss("nan_row") {}
  fk::Tensor forward(const nefi::LossContext&) const override {
    ADD_FAILURE() << "the batch uses the batched form";
    return {};
  }
  fk::Tensor forward_rows(const nefi::BatchLossContext& c) const override {
    const int64_t n = c.pred.size(0);
    std::vector<double> w(static_cast<size_t>(n), 0.0);
    w[1] = std::numeric_limits<double>::quiet_NaN();
    const fk::Tensor mse =
        nefi::masked_mse_rows(c.pred, c.obs, c.mask, std::vector<double>(w.size(), 1.0));
    return fk::mul(mse, fk::from_vector(w, fk::Dims{n}).to(mse.dtype()));
  }
  std::string signature() const override { return "nan_row"; }
};

// The NaN guard: problem 1 restores and halves its lr max_bad_steps times,
// then fails and stays frozen; the others match the CPU batch (itself tested
// against sequential solves) step by step.
TEST(NefiBatchDeviceLoop, ADivergedProblemIsFrozenAndTheOthersGoOn) {
  const nefi::Params p = smoke_params("toy1d", {10, 20});
  auto diverging = [&] {
    Setups s = setups("toy1d", p);
    for (auto& q : s.problems) q.losses.add(std::make_shared<NanRowLoss>(), 1.0);
    return s;
  };
  nefi::BatchOptions bo;
  bo.seeds = {0, 1, 2};
  bo.max_bad_steps = 3;
  bo.raise_on_error = false;
  bo.loss_mode = "shared";
  Setups s = diverging();
  const auto cpu = nefi::batch_invert(s.problems, s.curriculum, bo);
  Setups d = diverging();
  const auto got = nefi::detail::batch_invert_device(d.problems, d.curriculum, bo);
  EXPECT_EQ(got[1].stages[0].stop, "failed");
  EXPECT_EQ(got[1].stages[1].stop, "failed");
  EXPECT_NE(got[1].error.find("non-finite"), std::string::npos);
  EXPECT_TRUE(got[1].history.rows.empty());
  EXPECT_EQ(got[0].history.rows.size(), 30u);  // the others ran every step
  expect_same_run(cpu[0], got[0], 1e-5);
  expect_same_run(cpu[2], got[2], 1e-5);
  EXPECT_EQ(cpu[1].error, got[1].error);
  bo.raise_on_error = true;
  Setups again = diverging();
  try {
    nefi::detail::batch_invert_device(again.problems, again.curriculum, bo);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[1] failed"), std::string::npos) << e.what();
  }
}

}  // namespace
