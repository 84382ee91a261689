#include <gtest/gtest.h>

#include "nefi/solve/stage_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <thread>
#include <utility>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/pointwise.h"
#include "nefi/solve/curriculum.h"
#include "nefi/solve/fused_optimizer.h"
#include "nefi/solve/metrics.h"
#include "nefi/solve/solver.h"

namespace {

TEST(NefiCurriculum, SchedulesAndMultiscale) {
  nefi::Stage s;
  s.steps = 100;
  s.lr = 1.0;
  EXPECT_DOUBLE_EQ(s.lr_at(0), 1.0);
  EXPECT_NEAR(s.lr_at(50), 0.01 + 0.99 * 0.5, 1e-12);
  EXPECT_NEAR(s.lr_at(100), 0.01, 1e-12);
  s.lr_schedule = "step";
  s.lr_step_size = 30;
  EXPECT_NEAR(s.lr_at(65), 0.01, 1e-12);
  s.anneal_fraction = 0.5;
  EXPECT_DOUBLE_EQ(s.progress_at(25), 0.5);
  EXPECT_DOUBLE_EQ(s.progress_at(80), 1.0);
  s.anneal = false;
  EXPECT_DOUBLE_EQ(s.progress_at(0), 1.0);
  auto c = nefi::Curriculum::multiscale({64, 20}, {10, 20, 30}, 1e-2, 0.5, 8);
  ASSERT_EQ(c.stages.size(), 3u);
  EXPECT_EQ(c.stages[0].shape, fk::Dims({16, 8}));
  EXPECT_EQ(c.stages[1].shape, fk::Dims({32, 10}));
  EXPECT_EQ(c.stages[2].shape, fk::Dims({64, 20}));
  EXPECT_NEAR(c.stages[2].lr, 2.5e-3, 1e-15);
  EXPECT_EQ(c.total_steps(), 60);
  // The reference's coarse_factor: stage i at n / factor^(stages - 1 - i).
  const auto c3 = nefi::Curriculum::multiscale({81, 40}, {1, 1, 1}, 1e-2, 0.5, 4, 3);
  EXPECT_EQ(c3.stages[0].shape, fk::Dims({9, 4}));
  EXPECT_EQ(c3.stages[1].shape, fk::Dims({27, 13}));
  EXPECT_EQ(c3.stages[2].shape, fk::Dims({81, 40}));
  EXPECT_THROW((void)nefi::Curriculum::multiscale({8}, {1, 1}, 1e-2, 0.5, 4, 1), fk::Error);
  c.stages[1].lr_schedule = "linear";
  try {
    c.validate();
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("linear"), std::string::npos);
  }
}

// A linear ramp to lr over lr_warmup steps, then the schedule over the steps
// that are left (values written out by hand).
TEST(NefiCurriculum, WarmupRampsThenRunsTheScheduleOverTheRest) {
  nefi::Stage s;
  s.steps = 100;
  s.lr = 1.0;
  s.lr_warmup = 10;
  EXPECT_NEAR(s.lr_at(0), 0.1, 1e-15);
  EXPECT_NEAR(s.lr_at(4), 0.5, 1e-15);
  EXPECT_NEAR(s.lr_at(9), 1.0, 1e-15);
  EXPECT_NEAR(s.lr_at(10), 1.0, 1e-15);                // cosine at 0 of 90
  EXPECT_NEAR(s.lr_at(55), 0.01 + 0.99 * 0.5, 1e-12);  // cosine at 45 of 90
  EXPECT_NEAR(s.lr_at(100), 0.01, 1e-12);              // cosine at its end
  s.lr_schedule = "step";
  s.lr_step_size = 30;
  EXPECT_NEAR(s.lr_at(39), 1.0, 1e-15);  // 29 steps after the ramp
  EXPECT_NEAR(s.lr_at(40), 0.1, 1e-15);
  s.lr_schedule = "constant";
  EXPECT_NEAR(s.lr_at(1), 0.2, 1e-15);
  EXPECT_NEAR(s.lr_at(99), 1.0, 1e-15);
  // A capped curriculum scales the warm-up with the steps (90 + 10 of 100 -> 9 + 1 of 10).
  nefi::Curriculum c;
  c.stages = {s, s};
  c.stages[1].lr_warmup = 99;
  const nefi::Curriculum capped = c.capped(20);
  EXPECT_EQ(capped.stages[0].steps, 10);
  EXPECT_EQ(capped.stages[0].lr_warmup, 1);
  EXPECT_EQ(capped.stages[1].lr_warmup, 9);  // round(9.9) = 10, kept below the 10 steps
  for (int bad : {-1, 100}) {
    s.lr_warmup = bad;
    try {
      s.validate();
      FAIL() << "lr_warmup " << bad;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("lr_warmup"), std::string::npos) << e.what();
    }
  }
  // A floor, decay or period that would turn the lr negative (gradient
  // ascent) or divide by zero.
  s.lr_warmup = 0;
  s.validate();
  const std::pair<const char*, std::function<void(nefi::Stage&)>> bad_schedules[] = {
      {"lr_min_ratio", [](nefi::Stage& t) { t.lr_min_ratio = -3; }},
      {"lr_min_ratio", [](nefi::Stage& t) { t.lr_min_ratio = 2; }},
      {"lr_gamma", [](nefi::Stage& t) { t.lr_gamma = -2; }},
      {"lr_gamma", [](nefi::Stage& t) { t.lr_gamma = std::nan(""); }},
      {"lr_step_size", [](nefi::Stage& t) { t.lr_step_size = 0; }}};
  for (const auto& [field, spoil] : bad_schedules) {
    nefi::Stage t = s;
    spoil(t);
    try {
      t.validate();
      FAIL() << field;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

TEST(NefiAdam, FusedStepMatchesTheFormula) {
  fk::Tensor p = fk::from_vector(std::vector<double>{1.0, -2.0});
  p.set_requires_grad(true);
  p.set_grad(fk::from_vector(std::vector<double>{0.5, 3.0}));
  nefi::OptimizerOptions o;
  o.weight_decay = 0.1;
  nefi::FusedOptimizer adam({p}, o);
  adam.step(0.01);
  // Step 1: m = 0.1 g, v = 0.001 g^2; m_hat = g, v_hat = g^2 -> update lr * g/(|g| + eps).
  auto v = p.to_vector<double>();
  EXPECT_NEAR(v[0], 1.0 * (1 - 0.001) - 0.01 * 0.5 / (0.5 + 1e-8), 1e-12);
  EXPECT_NEAR(v[1], -2.0 * (1 - 0.001) - 0.01 * 3.0 / (3.0 + 1e-8), 1e-12);
  // Clipping scales the gradient before the moments (the direction is kept).
  fk::Tensor q = fk::from_vector(std::vector<double>{0.0, 0.0});
  q.set_requires_grad(true);
  q.set_grad(fk::from_vector(std::vector<double>{30.0, 40.0}));
  nefi::OptimizerOptions oc;
  oc.grad_clip = 1.0;
  nefi::FusedOptimizer a2({q}, oc);
  EXPECT_NEAR(a2.step(0.1), 50.0, 1e-12);
  EXPECT_NEAR(q.to_vector<double>()[0], -0.1, 1e-6);
  EXPECT_THROW(nefi::FusedOptimizer({fk::zeros({2}, {fk::DType::I32})}, {}), fk::Error);
  // A parameter without a gradient is not touched (no weight decay either),
  // the one with a gradient steps as usual.
  fk::Tensor r = fk::from_vector(std::vector<double>{1.0}),
             u = fk::from_vector(std::vector<double>{2.0});
  r.set_requires_grad(true);
  u.set_requires_grad(true);
  u.set_grad(fk::from_vector(std::vector<double>{-4.0}));
  nefi::OptimizerOptions ow;
  ow.weight_decay = 0.5;
  nefi::FusedOptimizer a3({r, u}, ow);
  a3.step(0.1);
  EXPECT_EQ(r.to_vector<double>()[0], 1.0);
  EXPECT_NEAR(u.to_vector<double>()[0], 2.0 * (1 - 0.05) + 0.1 * 4.0 / (4.0 + 1e-8), 1e-12);
  EXPECT_EQ(a3.first_moments()[0].to_vector<double>()[0], 0.0);
}

TEST(NefiMetrics, AgainstHandValues) {
  fk::Tensor gt = fk::from_vector(std::vector<double>{0, 1, 0, 1});
  fk::Tensor x = fk::from_vector(std::vector<double>{0.1, 1, 0, 0.9});
  EXPECT_NEAR(nefi::mse(x, gt), 0.02 / 4, 1e-15);
  EXPECT_NEAR(nefi::psnr(x, gt), 10 * std::log10(1 / 0.005), 1e-9);
  EXPECT_NEAR(nefi::relative_error(x, gt), std::sqrt(0.02 / 2), 1e-12);
  EXPECT_NEAR(nefi::ssim(gt, gt), 1.0, 1e-12);
  EXPECT_LT(nefi::ssim(x, gt), 1.0);
  EXPECT_THROW(nefi::mse(x, fk::zeros({3})), fk::Error);
  // A NaN field scores NaN: never the 99 dB cap of an exact match.
  const fk::Tensor nan = fk::from_vector(std::vector<double>{0, std::nan(""), 0, 1});
  EXPECT_TRUE(std::isnan(nefi::psnr(nan, gt)));
  EXPECT_EQ(nefi::psnr(gt, gt), 99.0);
  // A near match is capped too, never above the exact one (it scored 140 dB).
  const fk::Tensor near = fk::from_vector(std::vector<double>{1e-7, 1, 0, 1});
  EXPECT_EQ(nefi::psnr(near, gt), 99.0);
  const fk::Tensor off = fk::from_vector(std::vector<double>{1e-3, 1, 0, 1});
  EXPECT_NEAR(nefi::psnr(off, gt), 10 * std::log10(4 / 1e-6), 1e-9);
}

// Identity-operator problem on a grid field: easy to reason about.
nefi::InverseProblem identity_problem(std::vector<double> data, double noise) {
  nefi::InverseProblem p;
  p.domain = nefi::Domain({static_cast<int64_t>(data.size())});
  p.field = std::make_shared<nefi::GridField>(p.domain.shape(),
                                              std::vector<nefi::HeadPtr>{nefi::identity_head("x")});
  p.op = std::make_shared<nefi::IdentityOperator>();
  p.losses.add(nefi::mse_loss(), 1.0);
  p.measurement.data = fk::from_vector(data).to(fk::DType::F32);
  p.measurement.noise_std = noise;
  return p;
}

TEST(NefiSolver, FitsAndStopsByDiscrepancy) {
  auto p = identity_problem({1, 2, 3, 4, 5, 6, 7, 8}, 0.05);
  nefi::Curriculum c = nefi::Curriculum::single({8}, 2000, 0.1);
  c.stages[0].anneal = false;
  c.optim.weight_decay = 0;
  c.discrepancy_tau = 1.0;
  nefi::Result r = nefi::Solver(p, c).run();
  EXPECT_EQ(r.stages[0].stop, "discrepancy");
  EXPECT_LT(r.stages[0].steps, 2000);
  auto x = r.fields.at("x").to_vector<double>();
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(x[i], i + 1, 0.1);
  EXPECT_EQ(r.history.rows.size(), static_cast<size_t>(r.stages[0].steps));
  EXPECT_EQ(r.history.columns.back(), "mse");
  EXPECT_GT(r.ops_per_step(), 0);
}

// Non-finite on the calls listed in `bad` (counted across the run).
struct FlakyLoss : nefi::Loss {
  std::vector<int> bad;
  mutable int calls = 0;
  explicit FlakyLoss(std::vector<int> b) : nefi::Loss("flaky"), bad(std::move(b)) {}
  fk::Tensor forward(const nefi::LossContext& c) const override {
    const int k = calls++;
    bool nan = bad.empty();
    for (int b : bad) nan = nan || b == k;
    return fk::mul(fk::sum(c.field("x")), nan ? std::numeric_limits<double>::quiet_NaN() : 0.0);
  }
};

TEST(NefiSolver, NanGuardRollsBackAndHalvesLr) {
  auto p = identity_problem({1, 2, 3, 4}, -1);
  p.losses.add(std::make_shared<FlakyLoss>(std::vector<int>{5, 6}), 1.0);
  nefi::Curriculum c = nefi::Curriculum::single({4}, 600, 0.5);
  c.stages[0].anneal = false;
  c.stages[0].lr_schedule = "constant";
  c.optim.weight_decay = 0;
  nefi::Result r = nefi::Solver(p, c).run();
  EXPECT_DOUBLE_EQ(r.stages[0].lr_mult, 0.25);
  EXPECT_EQ(r.history.rows.size(), 598u);  // the two bad steps were skipped
  auto x = r.fields.at("x").to_vector<double>();
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(x[i], i + 1, 0.2);
  // Persistent non-finite losses: a clear error after max_bad_steps.
  auto q = identity_problem({1, 2}, -1);
  q.losses.add(std::make_shared<FlakyLoss>(std::vector<int>{}), 1.0);
  nefi::SolverOptions so;
  so.max_bad_steps = 3;
  try {
    nefi::Solver(q, nefi::Curriculum::single({2}, 50, 0.1), so).run();
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(nefi::detail::persistent_non_finite("stage", 3)),
              std::string::npos)
        << e.what();
  }
}

// An update that overflows on the last step is never evaluated by the NaN
// guard (it checks each step's loss before its update): the solve refuses
// to hand back the non-finite field, naming it, rather than return it.
TEST(NefiSolver, ALastUpdateThatDivergedIsRefusedByName) {
  auto p = identity_problem({1, 2, 3, 4}, -1);
  nefi::Curriculum c = nefi::Curriculum::single({4}, 1, 1e300);
  c.stages[0].anneal = false;
  try {
    nefi::Solver(p, c).run();
    FAIL() << "a field of non-finite values was returned";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a non-finite field 'x'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("after 1 steps"), std::string::npos) << e.what();
  }
  // A caller that judges the result itself (a refine refit) gets it back.
  nefi::SolverOptions so;
  so.refuse_non_finite = false;
  const nefi::Result r = nefi::Solver(identity_problem({1, 2, 3, 4}, -1), c, so).run();
  EXPECT_FALSE(std::isfinite(r.fields.at("x").to_vector<double>()[0]));
}

TEST(NefiSolver, EarlyStopAndCallbacks) {
  auto p = identity_problem({1, 1, 1, 1}, -1);
  nefi::Curriculum c = nefi::Curriculum::single({4}, 500, 0.05);
  c.stages[0].anneal = false;
  c.early_stop_patience = 5;
  c.early_stop_min_delta = 1e-3;
  nefi::Result r = nefi::Solver(p, c).run();
  EXPECT_EQ(r.stages[0].stop, "early_stop");
  nefi::SolverOptions so;
  int seen = 0;
  so.callbacks.push_back([&](const nefi::StepInfo& s) { return ++seen, s.step < 9; });
  nefi::Curriculum c2 = nefi::Curriculum::single({4}, 500, 0.05);
  nefi::Result r2 = nefi::Solver(identity_problem({1, 1, 1, 1}, -1), c2, so).run();
  EXPECT_EQ(r2.stages[0].stop, "callback");
  EXPECT_EQ(seen, 10);
}

}  // namespace

#include "nefi/solve/postprocess.h"

namespace {

TEST(NefiSolver, RestartsKeepTheBestRun) {
  // A neural field with tiny budgets: restarts differ by seed; the kept run
  // has the lowest final data loss of all of them.
  nefi::InverseProblem p = identity_problem({0, 1, 4, 9, 16, 9, 4, 1}, -1);
  nefi::NeuralFieldConfig cfg;
  cfg.hidden = 8;
  cfg.depth = 2;
  cfg.n_octaves = 2;
  p.field = std::make_shared<nefi::NeuralField>(
      1, std::vector<nefi::HeadPtr>{nefi::identity_head("x")}, cfg);
  nefi::Curriculum c = nefi::Curriculum::single({8}, 20, 1e-2);
  std::vector<double> finals;
  for (uint64_t s = 0; s < 3; ++s) {
    nefi::SolverOptions so;
    so.seed = s;
    finals.push_back(nefi::Solver(p, c, so).run().stages.back().final_data_loss);
  }
  c.restarts = 3;
  nefi::Result r = nefi::Solver(p, c).run();
  const int want =
      static_cast<int>(std::min_element(finals.begin(), finals.end()) - finals.begin());
  EXPECT_EQ(r.restart, want);
  EXPECT_DOUBLE_EQ(r.stages.back().final_data_loss, finals[want]);
  EXPECT_EQ(r.history.rows.size(), 20u);
  // The returned field is the kept run's (its prediction reproduces that loss scale).
  double m = 0;
  auto pr = r.prediction.to_vector<double>();
  const std::vector<double> y{0, 1, 4, 9, 16, 9, 4, 1};
  for (int i = 0; i < 8; ++i) m += (pr[i] - y[i]) * (pr[i] - y[i]) / 8;
  EXPECT_NEAR(m, finals[want], 0.5 * finals[want]);
}

// A stage run to its end is evaluated at progress_at(steps) (all bands open,
// as the reference does); a stage stopped early keeps its last progress.
TEST(NefiSolver, FinalProgressIsTheScheduleEndUnlessStopped) {
  auto p = identity_problem({1, 2, 3, 4}, -1);
  nefi::Curriculum c = nefi::Curriculum::single({4}, 10, 0.05);
  nefi::Result r = nefi::Solver(p, c).run();
  EXPECT_EQ(r.stages.back().stop, "completed");
  EXPECT_DOUBLE_EQ(r.stages.back().final_progress, 1.0);
  c.stages[0].anneal_fraction = 0.5;
  EXPECT_DOUBLE_EQ(nefi::Solver(p, c).run().stages.back().final_progress, 1.0);
  c.stages[0].anneal_fraction = 1.0;
  nefi::SolverOptions o;
  o.callbacks.push_back([](const nefi::StepInfo& s) { return s.step < 4; });
  r = nefi::Solver(p, c, o).run();
  EXPECT_EQ(r.stages.back().stop, "callback");
  EXPECT_DOUBLE_EQ(r.stages.back().final_progress, 0.4);  // stopped after step 4 of 10
  nefi::SolverOptions bad;
  bad.checkpoint_every = 0;
  EXPECT_THROW(nefi::Solver(p, c, bad), fk::Error);
}

TEST(NefiSolver, LbfgsSolvesAQuadraticQuickly) {
  // Quadratic in the grid values: L-BFGS reaches the data in a few iterations.
  auto p = identity_problem({1, -2, 3, 0.5, 4, -1}, -1);
  nefi::Curriculum c = nefi::Curriculum::single({6}, 8, 1.0);
  c.optim.optimizer = "lbfgs";
  c.stages[0].lr_schedule = "constant";
  nefi::Result r = nefi::Solver(p, c).run();
  auto x = r.fields.at("x").to_vector<double>();
  const std::vector<double> y{1, -2, 3, 0.5, 4, -1};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(x[i], y[i], 1e-3);
  // Refused with an f16 trunk.
  nefi::NeuralFieldConfig cfg;
  cfg.hidden = 4;
  cfg.depth = 1;
  cfg.n_octaves = 1;
  cfg.autocast = fk::DType::F16;
  p.field = std::make_shared<nefi::NeuralField>(
      1, std::vector<nefi::HeadPtr>{nefi::identity_head("x")}, cfg);
  try {
    nefi::Solver(p, c);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("lbfgs"), std::string::npos);
  }
}

TEST(NefiSolver, TimeBudgetAndEma) {
  auto p = identity_problem({1, 2, 3, 4}, -1);
  nefi::Curriculum c = nefi::Curriculum::multiscale({4}, {100000, 100000}, 0.05, 0.5, 4);
  c.time_budget_s = 0.05;
  nefi::Result r = nefi::Solver(p, c).run();
  ASSERT_EQ(r.stages.size(), 1u);  // the budget ends the whole run
  EXPECT_EQ(r.stages[0].stop, "time_budget");
  EXPECT_LT(r.stages[0].steps, 100000);
  // A budget spent in the coarse stage (4 cells of 8): the field and its
  // prediction still come back on the final grid, where the data are.
  nefi::Curriculum coarse = nefi::Curriculum::multiscale({8}, {100000, 100000}, 0.05, 0.5, 4);
  ASSERT_EQ(coarse.stages[0].shape, (fk::Dims{4}));
  coarse.time_budget_s = 0.05;
  const nefi::Result rc =
      nefi::Solver(identity_problem({1, 2, 3, 4, 5, 6, 7, 8}, -1), coarse).run();
  ASSERT_EQ(rc.stages.size(), 1u);
  EXPECT_EQ(rc.stages[0].stop, "time_budget");
  EXPECT_EQ(rc.fields.at("x").shape(), (fk::Dims{8}));
  EXPECT_EQ(rc.prediction.shape(), (fk::Dims{8}));
  // EMA: the stage ends with the shadow average, which lags the raw iterate
  // on a monotone path (the fit from 0 towards the data).
  nefi::Curriculum e = nefi::Curriculum::single({4}, 30, 0.05);
  e.stages[0].anneal = false;
  e.stages[0].lr_schedule = "constant";
  e.optim.weight_decay = 0;
  const double raw = nefi::Solver(identity_problem({1, 2, 3, 4}, -1), e)
                         .run()
                         .fields.at("x")
                         .to_vector<double>()[3];
  e.optim.ema = 0.9;
  const nefi::Result er = nefi::Solver(identity_problem({1, 2, 3, 4}, -1), e).run();
  const std::vector<double> xs = er.fields.at("x").to_vector<double>();
  const double avg = xs[3];
  EXPECT_GT(raw, 1.0);
  EXPECT_LT(avg, raw - 0.05);
  EXPECT_GT(avg, 0.0);
  // The stage's losses are the average's, the field it returns (they were
  // the raw weights' last step: restarts chose by a field not returned).
  double mse = 0;
  for (int i = 0; i < 4; ++i) mse += (xs[i] - (i + 1)) * (xs[i] - (i + 1)) / 4;
  EXPECT_NEAR(er.stages[0].final_data_loss, mse, 1e-6 * mse);
  EXPECT_NEAR(er.stages[0].final_total, mse, 1e-6 * mse);
}

// Restarts under a time budget: a later attempt the budget cut short in the
// coarse stage was scored there, on averaged data, where its loss was lower
// than a finished attempt's; it no longer wins over one that got further.
TEST(NefiSolver, RestartsPreferTheAttemptThatGotFurther) {
  // Data whose 2-cell average is fitted exactly by the coarse stage (loss 0
  // there) while the fine stage cannot reach them in its few steps.
  auto p = identity_problem({0, 10, 0, 10, 0, 10, 0, 10}, -1);
  nefi::Curriculum c = nefi::Curriculum::multiscale({8}, {2000, 3}, 0.5, 0.5, 2);
  ASSERT_EQ(c.stages[0].shape, (fk::Dims{4}));
  c.restarts = 2;
  // The second attempt outlasts the budget inside its coarse stage: a
  // callback sleeps there until the budget has passed (it is checked after
  // the callbacks). The first attempt takes well under the budget.
  c.time_budget_s = 5.0;
  nefi::SolverOptions so;
  int attempts_started = 0;
  const auto t0 = std::chrono::steady_clock::now();
  so.callbacks.push_back([&](const nefi::StepInfo& s) {
    if (s.stage == 0 && s.step == 0) ++attempts_started;
    if (attempts_started == 2 && s.stage == 0 && s.step == 200)
      std::this_thread::sleep_until(t0 + std::chrono::milliseconds(5300));
    return true;
  });
  const nefi::Result r = nefi::Solver(p, c, so).run();
  ASSERT_EQ(attempts_started, 2);
  EXPECT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.restart, 0);
}

TEST(NefiPostprocess, EnergyScaleClipThreshold) {
  nefi::Measurement obs;
  obs.data = fk::from_vector(std::vector<double>{2, 4});
  nefi::FieldMap f{{"x", fk::from_vector(std::vector<double>{1, 3})}};
  fk::Tensor pred = fk::from_vector(std::vector<double>{1, 2});
  // p = 2: E_obs / E_pred = 10 / 2.5 = 4 -> alpha = 4^(1/4) = sqrt 2; the
  // prediction scales by alpha^2 = 2 and then equals the data.
  auto info = nefi::energy_scale_correction("x", 2.0)->apply(f, pred, obs);
  EXPECT_NEAR(info.at("scale_factor"), std::sqrt(2.0), 1e-12);
  const auto fx = f.at("x").to_vector<double>(), pv = pred.to_vector<double>();
  EXPECT_NEAR(fx[0], std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(fx[1], 3 * std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(pv[0], 2.0, 1e-12);
  EXPECT_NEAR(pv[1], 4.0, 1e-12);
  // p = 1: the linear case scales x by the amplitude ratio 2.
  nefi::FieldMap g{{"x", fk::from_vector(std::vector<double>{1, 3})}};
  fk::Tensor pred1 = fk::from_vector(std::vector<double>{1, 2});
  EXPECT_NEAR(nefi::energy_scale_correction("x", 1.0)->apply(g, pred1, obs).at("scale_factor"), 2.0,
              1e-12);
  f.at("x") = fk::from_vector(std::vector<double>{2, 6});
  nefi::clip("x", 0, 5)->apply(f, pred, obs);
  EXPECT_EQ(f.at("x").to_vector<double>(), (std::vector<double>{2, 5}));
  nefi::threshold_mask("x", 0.5)->apply(f, pred, obs);
  EXPECT_EQ(f.at("mask").to_vector<double>(), (std::vector<double>{0, 1}));
  EXPECT_THROW(nefi::clip("rho", 0, 1)->apply(f, pred, obs), fk::Error);
  EXPECT_THROW(nefi::clip("x", 1, 0), fk::Error);
}

}  // namespace
