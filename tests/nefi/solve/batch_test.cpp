// batch_invert against the sequential Solver (the independent reference: N
// separate solves), per-problem freezing, and every refusal.
#include "nefi/solve/batch.h"

#include <gtest/gtest.h>

#include "nefi/solve/stage_run.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "nefi/field/grid_field.h"
#include "nefi/instances/instance.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/operators/pointwise.h"
#include "nefi/solve/batch_test_setups.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::batch_test::max_abs_diff;
using nefi::batch_test::sequential;
using nefi::batch_test::Setups;
using nefi::batch_test::setups;
using nefi::batch_test::smoke_params;

// Every history row (losses per step) and the final fields within tol.
void expect_same_run(const nefi::Result& seq, const nefi::Result& bat, double tol) {
  ASSERT_NO_FATAL_FAILURE(nefi::batch_test::expect_same_history(seq, bat, tol));
  EXPECT_LE(max_abs_diff(seq.fields.at("x"), bat.fields.at("x")), tol);
  EXPECT_LE(max_abs_diff(seq.prediction, bat.prediction), tol);
  EXPECT_EQ(bat.error, "");
}

void expect_batched_equals_sequential(const std::string& instance, std::vector<double> steps,
                                      int chunk = 0, const std::string& loss_mode = "shared",
                                      const std::string& method = "neural",
                                      const std::string& activation = "") {
  nefi::Params p = smoke_params(instance, steps);
  if (!activation.empty()) p.set("activation", activation);
  Setups s = setups(instance, p, {0, 1, 2}, method);
  std::vector<nefi::Result> seq;
  for (size_t b = 0; b < s.problems.size(); ++b)
    seq.push_back(sequential(s.problems[b], s.curriculum, s.seeds[b]));
  nefi::BatchOptions bo;
  bo.seeds = s.seeds;
  bo.chunk_size = chunk;
  bo.loss_mode = loss_mode;
  Setups fresh = setups(instance, p, {0, 1, 2}, method);
  const auto bat = nefi::batch_invert(fresh.problems, s.curriculum, bo);
  ASSERT_EQ(bat.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    SCOPED_TRACE("problem " + std::to_string(b));
    EXPECT_EQ(bat[b].batch_size, 3);
    expect_same_run(seq[b], bat[b], 1e-5);
    // One share of the whole run each (read inside the finish loop, a later
    // index's share once held the earlier finishes too).
    EXPECT_GT(bat[b].total_s, 0.0);
    EXPECT_EQ(bat[b].total_s, bat[0].total_s);
  }
}

// One shared loss set on the whole batch (toy1d's and deconvolution's sets
// match term by term), and each problem's own set on its rows.
TEST(NefiBatch, Toy1dEqualsSequentialPerStep) {
  expect_batched_equals_sequential("toy1d", {20, 40});
  expect_batched_equals_sequential("toy1d", {20, 40}, 0, "loop");
}

TEST(NefiBatch, DeconvolutionEqualsSequentialPerStep) {
  expect_batched_equals_sequential("deconvolution", {8, 16});
  expect_batched_equals_sequential("deconvolution", {8}, 0, "loop");
}

// Trunks the batched MLP activates after its products, through fk's own
// element code (gelu; sine, SIREN's sin(30 z)), as fused ones.
TEST(NefiBatch, GeluAndSineTrunksEqualSequentialPerStep) {
  for (const char* act : {"gelu", "sine"}) {
    SCOPED_TRACE(act);
    expect_batched_equals_sequential("toy1d", {10, 20}, 0, "shared", "neural", act);
  }
}

// Grid (pixel) fields: the values are the rows, made anew at each stage
// start on the stage grid (deconvolution's grid baseline runs coarse to fine).
TEST(NefiBatch, GridFieldsEqualSequentialPerStep) {
  expect_batched_equals_sequential("deconvolution", {6, 6}, 0, "shared", "grid");
  expect_batched_equals_sequential("deconvolution", {6, 6}, 2, "loop", "grid");
}

TEST(NefiBatch, ChunkedStepsEqualSequentialPerStep) {
  expect_batched_equals_sequential("toy1d", {20, 40}, 2);  // blocks of 2 and 1
  nefi::BatchOptions bad;
  bad.chunk_size = -1;
  const nefi::Params p = smoke_params("toy1d", {5});
  Setups s = setups("toy1d", p, {0});
  EXPECT_THROW(nefi::batch_invert(s.problems, s.curriculum, bad), fk::Error);
}

// NaN on every call: the problem owning it diverges.
struct AlwaysNanLoss : nefi::Loss {
  AlwaysNanLoss() : nefi::Loss("nan") {}
  fk::Tensor forward(const nefi::LossContext& c) const override {
    return fk::mul(fk::sum(c.field("x")), std::numeric_limits<double>::quiet_NaN());
  }
};

// A last update that diverged (never evaluated by the NaN guard) fails its
// problem with the solve's reason, as a sequential solve refuses it.
TEST(NefiBatch, ALastUpdateThatDivergedFailsItsProblem) {
  const nefi::Params p = smoke_params("toy1d", {1});
  Setups s = setups("toy1d", p, {0, 1});
  nefi::Curriculum c = s.curriculum;
  for (auto& st : c.stages) st.lr = 1e300;
  nefi::BatchOptions bo;
  bo.seeds = {0, 1};
  bo.raise_on_error = false;
  const auto bat = nefi::batch_invert(s.problems, c, bo);
  for (const nefi::Result& r : bat) {
    EXPECT_NE(r.error.find("a non-finite field"), std::string::npos) << r.error;
    EXPECT_EQ(r.stages.back().stop, "failed");
  }
  bo.raise_on_error = true;
  EXPECT_THROW(nefi::batch_invert(setups("toy1d", p, {0, 1}).problems, c, bo), fk::Error);
}

// A stage whose every step is non-finite (fewer than max_bad_steps, so the
// guard skips them all) trained nothing: the problem fails as its sequential
// solve does (it came back "completed" with its untrained start), and the
// other problem is its sequential solve.
TEST(NefiBatch, AStageOfOnlyNonFiniteStepsFailsItsProblem) {
  const nefi::Params p = smoke_params("toy1d", {4, 4});
  Setups s = setups("toy1d", p, {0, 1});
  s.problems[1].measurement.data = (s.problems[1].measurement.data * 1e25).contiguous();
  std::string alone;
  try {
    sequential(s.problems[1], s.curriculum, s.seeds[1]);
  } catch (const fk::Error& e) {
    alone = e.what();
  }
  ASSERT_NE(alone.find("a finite loss on some step"), std::string::npos) << alone;
  const nefi::Result ok = sequential(s.problems[0], s.curriculum, s.seeds[0]);
  Setups fresh = setups("toy1d", p, {0, 1});
  fresh.problems[1].measurement.data = (fresh.problems[1].measurement.data * 1e25).contiguous();
  nefi::BatchOptions bo;
  bo.seeds = s.seeds;
  bo.raise_on_error = false;
  const auto bat = nefi::batch_invert(fresh.problems, s.curriculum, bo);
  EXPECT_NE(bat[1].error.find("a finite loss on some step of stage"), std::string::npos)
      << bat[1].error;
  EXPECT_EQ(bat[1].stages.back().stop, "failed");
  expect_same_run(ok, bat[0], 1e-5);
}

TEST(NefiBatch, ADivergedProblemIsFrozenAndTheOthersGoOn) {
  const nefi::Params p = smoke_params("toy1d", {10, 20});
  Setups s = setups("toy1d", p, {0, 1, 2});
  std::vector<nefi::Result> seq;
  for (size_t b = 0; b < 3; ++b) seq.push_back(sequential(s.problems[b], s.curriculum, b));
  Setups fresh = setups("toy1d", p, {0, 1, 2});
  fresh.problems[1].losses.add(std::make_shared<AlwaysNanLoss>(), 1.0);
  nefi::BatchOptions bo;
  bo.seeds = {0, 1, 2};
  bo.max_bad_steps = 3;
  bo.raise_on_error = false;
  bo.chunk_size = 2;        // the failed problem shares a block with a healthy one
  bo.loss_mode = "shared";  // refused: problem 1's loss set has an extra term
  EXPECT_THROW(nefi::batch_invert(fresh.problems, s.curriculum, bo), fk::Error);
  bo.loss_mode = "auto";
  fresh = setups("toy1d", p, {0, 1, 2});
  fresh.problems[1].losses.add(std::make_shared<AlwaysNanLoss>(), 1.0);
  const auto bat = nefi::batch_invert(fresh.problems, s.curriculum, bo);
  EXPECT_EQ(bat[1].stages[0].stop, "failed");
  EXPECT_EQ(bat[1].stages[1].stop, "failed");  // frozen for the rest of the run
  // in the sequential solver's words, with what commonly causes it
  EXPECT_NE(bat[1].error.find(nefi::detail::persistent_non_finite("stage0", 3)), std::string::npos)
      << bat[1].error;
  EXPECT_TRUE(bat[1].history.rows.empty());
  expect_same_run(seq[0], bat[0], 1e-5);
  expect_same_run(seq[2], bat[2], 1e-5);
  // raise_on_error names the failed problem.
  bo.raise_on_error = true;
  Setups again = setups("toy1d", p, {0, 1, 2});
  again.problems[1].losses.add(std::make_shared<AlwaysNanLoss>(), 1.0);
  try {
    nefi::batch_invert(again.problems, s.curriculum, bo);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[1] failed"), std::string::npos) << e.what();
  }
}

TEST(NefiBatch, AStoppedProblemStopsAloneAtItsSequentialStep) {
  // Problem 0 has a generous noise level: the discrepancy rule stops it
  // early; problem 1 (unknown noise) runs to the end.
  const nefi::Params p = smoke_params("toy1d", {30});
  Setups s = setups("toy1d", p, {0, 1});
  s.problems[0].measurement.noise_std = 0.2;
  s.problems[1].measurement.noise_std = -1;
  s.curriculum.discrepancy_tau = 1.0;
  const nefi::Result seq0 = sequential(s.problems[0], s.curriculum, 0);
  const nefi::Result seq1 = sequential(s.problems[1], s.curriculum, 1);
  ASSERT_EQ(seq0.stages[0].stop, "discrepancy");
  ASSERT_LT(seq0.stages[0].steps, 30);
  Setups fresh = setups("toy1d", p, {0, 1});
  fresh.problems[0].measurement.noise_std = 0.2;
  fresh.problems[1].measurement.noise_std = -1;
  nefi::BatchOptions bo;
  bo.seeds = {0, 1};
  const auto bat = nefi::batch_invert(fresh.problems, s.curriculum, bo);
  expect_same_run(seq0, bat[0], 1e-5);
  expect_same_run(seq1, bat[1], 1e-5);
}

void expect_refused(const std::vector<nefi::InverseProblem>& ps, const nefi::Curriculum& c,
                    const std::string& word) {
  const auto why = nefi::batchable_reason(ps, c);
  ASSERT_TRUE(why.has_value()) << word;
  EXPECT_NE(why->find(word), std::string::npos) << *why;
  try {
    nefi::batch_invert(ps, c);
    FAIL() << word;
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
}

TEST(NefiBatch, RefusalsNameTheReason) {
  const nefi::Params p = smoke_params("toy1d", {5});
  Setups s = setups("toy1d", p, {0, 1});
  EXPECT_FALSE(nefi::batchable_reason(s.problems, s.curriculum).has_value());
  expect_refused({}, s.curriculum, "no problems");
  // Optimizers other than Adam/AdamW.
  nefi::Curriculum lbfgs = s.curriculum;
  lbfgs.optim.optimizer = "lbfgs";
  expect_refused(s.problems, lbfgs, "lbfgs");
  nefi::Curriculum restarts = s.curriculum;
  restarts.restarts = 2;
  expect_refused(s.problems, restarts, "restarts");
  // One problem twice: its field would end holding the second seed's start.
  expect_refused({s.problems[0], s.problems[1], s.problems[0]}, s.curriculum,
                 "problem 2 shares its field with problem 0");
  // Trainable nuisance parameters.
  auto nuis = s.problems;
  nuis[1].op = std::make_shared<nefi::NuisanceOperator>(nuis[1].op, 1.0, 0.0, true);
  expect_refused(nuis, s.curriculum, "trainable");
  // A frozen nuisance around a batchable operator is fine; a different map is not.
  auto frozen = s.problems;
  for (auto& q : frozen) q.op = std::make_shared<nefi::NuisanceOperator>(q.op, 2.0, 0.1);
  EXPECT_FALSE(nefi::batchable_reason(frozen, s.curriculum).has_value());
  auto other = s.problems;
  other[1].op = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(0.05), other[1].domain);
  expect_refused(other, s.curriculum, "maps fields otherwise than problem 0's");
  // Time-stepping operators (heat) are not batchable, alone or inside a sequence.
  nefi::HeatOperator heat(nefi::HeatConfig{}, {4, 4, 3});
  EXPECT_FALSE(heat.batchable());
  auto seq = s.problems;
  for (auto& q : seq)
    q.op = std::make_shared<nefi::SequentialOperator>(std::vector<nefi::OperatorPtr>{
        q.op, std::make_shared<nefi::HeatOperator>(nefi::HeatConfig{}, fk::Dims{4, 4, 3})});
  expect_refused(seq, s.curriculum, "not batchable");
  // Grid baselines (not a neural field), other domains, other architectures.
  auto grid = s.problems;
  grid[0].field = std::make_shared<nefi::GridField>(
      grid[0].domain.shape(), std::vector<nefi::HeadPtr>{nefi::softplus_head("x")});
  expect_refused(grid, s.curriculum, "differs from problem 0's");
  // Grid fields whose heads differ only in a constant (the same initial bias).
  auto bounds = s.problems;
  bounds[0].field = std::make_shared<nefi::GridField>(
      bounds[0].domain.shape(), std::vector<nefi::HeadPtr>{nefi::bounded_head("x", 0.0, 2.0, 1.0)});
  bounds[1].field = std::make_shared<nefi::GridField>(
      bounds[1].domain.shape(),
      std::vector<nefi::HeadPtr>{nefi::bounded_head("x", -1.0, 3.0, 1.0)});
  expect_refused(bounds, s.curriculum, "differs from problem 0's field");
  nefi::Params wide = p;
  wide.set("hidden", "16");
  auto mixed = s.problems;
  mixed[1] = nefi::find_instance("toy1d")->setup(wide, "neural", 1)->problem;
  expect_refused(mixed, s.curriculum, "differs from problem 0's");
  nefi::Params gelu = p;
  gelu.set("activation", "gelu");
  auto act = s.problems;
  act[1] = nefi::find_instance("toy1d")->setup(gelu, "neural", 1)->problem;
  expect_refused(act, s.curriculum, "differs from problem 0's");
  // fp16 autocast trunks do not batch (bf16 ones do).
  nefi::Params half = smoke_params("deconvolution", {3});
  half.set("autocast", "fp16");
  const Setups f16 = setups("deconvolution", half, {0, 1});
  expect_refused(f16.problems, f16.curriculum, "f16 autocast");
  auto dom = s.problems;
  dom[1].domain = nefi::Domain({64}, {2.0});
  expect_refused(dom, s.curriculum, "domain");
  // Batchable declarations of the operators themselves.
  EXPECT_TRUE(nefi::IdentityOperator().batchable());
  EXPECT_TRUE(nefi::SaturationOperator(1.0).batchable());
  EXPECT_TRUE(nefi::PointwiseOperator(fk::ones({4})).batchable());
  // A non-gradient baseline has no problem to batch.
  EXPECT_FALSE(nefi::find_instance("deconvolution")->setup(p, "wiener", 0).has_value());
}

TEST(NefiBatch, BatchableOperatorsTreatRowsIndependently) {
  // Each row of a batched call equals the operator on that row alone.
  const nefi::Domain d({6, 5}, {1.0, 1.0});
  const fk::Tensor x = fk::uniform({3, 6, 5}, 0.0, 1.0, {fk::DType::F64});
  std::vector<nefi::OperatorPtr> ops{
      std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(0.1), d),
      std::make_shared<nefi::IdentityOperator>(),
      std::make_shared<nefi::PointwiseOperator>(fk::uniform({6, 5}, 0.5, 1.0, {fk::DType::F64})),
      std::make_shared<nefi::SaturationOperator>(0.7)};
  ops.push_back(
      std::make_shared<nefi::SequentialOperator>(std::vector<nefi::OperatorPtr>{ops[0], ops[3]}));
  ops.push_back(
      std::make_shared<nefi::SumOperator>(std::vector<nefi::OperatorPtr>{ops[0], ops[2]}));
  ops.push_back(std::make_shared<nefi::NuisanceOperator>(ops[0], 1.5, 0.2));
  for (const auto& op : ops) {
    ASSERT_TRUE(op->batchable()) << op->kind();
    const fk::Tensor y = op->apply(x);
    for (int64_t b = 0; b < 3; ++b)
      EXPECT_LE(max_abs_diff(y.select(0, b), op->apply(x.select(0, b).contiguous())), 1e-12)
          << op->kind();
  }
}

}  // namespace
