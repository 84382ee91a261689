// Bring-your-own problems solved together: three k-space measurements of
// one MRI sampling pattern start from one shared constant (the median of
// their own), and each batched result is the sequential solve of its
// rebuilt problem; problems that differ beyond their data, and models that
// cannot run N fields at once, are refused by name.
#include "nefi/byop/auto_batch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "byop_test_models.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/thread_count.h"
#include "nefi/operators/sampling.h"
#include "nefi/solve/batch_device.h"
#include "nefi/solve/batch_test_setups.h"

namespace nefi {
namespace {

struct Scans {
  int64_t n = 24;
  OperatorPtr op;
  std::vector<Measurement> ys;
  Scans() {
    op = std::make_shared<FourierSamplingOperator>(test::variable_density_mask(n, 0.2, 0.3, 5));
    for (int k = 0; k < 3; ++k) {  // the phantom at three contrasts
      const fk::Tensor gt = fk::from_vector(
          [&] {
            auto v = test::shapes_phantom(n).to_vector<double>();
            for (double& e : v) e *= 1.0 + 0.3 * k;
            return v;
          }(),
          {n, n});
      Measurement m;
      m.data = test::with_noise(op->apply(gt), 0.01, 10 + k);
      ys.push_back(m);
    }
  }
  std::vector<AutoInput> inputs(const AutoOptions& o) const {
    std::vector<AutoInput> in;
    for (const Measurement& y : ys) in.push_back({op, {n, n}, y, o});
    return in;
  }
};

double max_diff(const fk::Tensor& a, const fk::Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

// A nonnegative TV fit of `rep` (a small network for neural) within `budget`.
AutoOptions tv_options(const std::string& rep, const std::string& budget) {
  AutoOptions o;
  o.prior = "nonnegative + tv";
  o.representation = rep;
  o.budget = budget;
  if (rep == "neural") {
    o.hidden = 16;
    o.depth = 2;
  }
  return o;
}

TEST(NefiAutoBatch, ASharedStartAndEachResultIsItsSequentialSolve) {
  const fk::test::ThreadCount one(1);
  const Scans s;
  for (const std::string rep : {"grid", "neural"}) {
    const AutoOptions o = tv_options(rep, "60");
    std::vector<double> own;
    for (const AutoInput& a : s.inputs(o))
      own.push_back(auto_problem(a.op, a.shape, a.measurement, o).constant_fits[0]);
    std::vector<double> sorted = own;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_LT(sorted.front(), sorted.back());  // the contrasts differ
    const std::vector<AutoProblem> aps = shared_start_problems(s.inputs(o));
    ASSERT_EQ(aps.size(), 3u);
    for (const AutoProblem& ap : aps) {
      EXPECT_DOUBLE_EQ(ap.constant_fits[0], sorted[1]) << rep;
      EXPECT_DOUBLE_EQ(ap.head_scales[0], aps[0].head_scales[0]) << rep;  // one head
    }
    // Their data and penalty weights differ, yet one shared loss set runs
    // (each problem's weights weigh its row), as each problem's own set on
    // its rows does.
    EXPECT_NE(aps[0].problem.losses.terms()[0].weight, aps[2].problem.losses.terms()[0].weight);
    for (const std::string mode : {"shared", "loop"}) {
      BatchOptions bo;
      bo.loss_mode = mode;
      const std::vector<Result> together = solve_together(aps, bo);
      for (size_t b = 0; b < aps.size(); ++b) {
        SCOPED_TRACE(rep + " " + mode + " problem " + std::to_string(b));
        EXPECT_EQ(together[b].batch_size, 3);
        EXPECT_TRUE(together[b].error.empty()) << together[b].error;
        const Result alone = aps[b].solve();
        EXPECT_EQ(together[b].total_steps(), alone.total_steps());
        EXPECT_LT(max_diff(together[b].fields.at("x"), alone.fields.at("x")), 1e-4);
      }
    }
  }
}

// An even count of one-field problems has two median constants at one L1
// distance: the shared start is one of them whatever the problems' order (the
// first listed won, so a reversed batch started elsewhere).
TEST(NefiAutoBatch, TheSharedStartDoesNotDependOnTheProblemsOrder) {
  const fk::test::ThreadCount one(1);
  const Scans s;
  const AutoOptions o = tv_options("grid", "60");
  std::vector<AutoInput> in = s.inputs(o);
  in.push_back(in[1]);
  const std::vector<FittedStart> fits{
      {{0.2}, {1.0}}, {{0.4}, {1.0}}, {{0.1}, {1.0}}, {{0.3}, {1.0}}};
  const double start = shared_start_problems(in, fits)[0].constant_fits[0];
  EXPECT_TRUE(start == 0.2 || start == 0.3) << start;
  const std::vector<size_t> perms[] = {{3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}};
  for (const auto& perm : perms) {
    std::vector<AutoInput> pin;
    std::vector<FittedStart> pfits;
    for (size_t i : perm) {
      pin.push_back(in[i]);
      pfits.push_back(fits[i]);
    }
    EXPECT_EQ(shared_start_problems(pin, pfits)[0].constant_fits[0], start);
  }
}

// The device batch's loop (solve/batch_device.cpp) run on the CPU: the
// problems' own weights as (N) row weights; each result is its sequential
// solve. On a GPU: tests/nefi/cuda/auto_problem_device_test.cpp.
TEST(NefiAutoBatch, TheDeviceLoopOnTheCpuEqualsEachSequentialSolve) {
  const fk::test::ThreadCount one(1);
  const Scans s;
  for (const std::string rep : {"grid", "neural"}) {
    const AutoOptions o = tv_options(rep, "40");
    const std::vector<AutoProblem> aps = shared_start_problems(s.inputs(o));
    std::vector<InverseProblem> problems;
    BatchOptions bo;
    for (const AutoProblem& ap : aps) {
      problems.push_back(ap.problem);
      bo.seeds.push_back(ap.seed);
    }
    BatchOptions gpu = bo;
    gpu.device = fk::cuda_device(0);
    const auto why = batch_device_reason(problems, aps[0].curriculum, gpu);
    EXPECT_FALSE(why.has_value()) << *why;
    const std::vector<Result> got = detail::batch_invert_device(problems, aps[0].curriculum, bo);
    for (size_t b = 0; b < aps.size(); ++b) {
      SCOPED_TRACE(rep + " problem " + std::to_string(b));
      const Result alone = aps[b].solve();
      ASSERT_NO_FATAL_FAILURE(batch_test::expect_same_history(alone, got[b], 1e-4));
      EXPECT_LT(max_diff(got[b].fields.at("x"), alone.fields.at("x")), 1e-4);
    }
  }
}

// What a device batch refuses is named before the rebuild, from the
// problems as built (a pure check: a CPU-only build names it too).
TEST(NefiAutoBatch, ADeviceBatchRefusalIsNamedBeforeTheRebuild) {
  const Scans s;
  AutoOptions o;
  o.prior = "nonnegative";
  o.representation = "grid";
  o.budget = "10";
  std::vector<AutoProblem> built;
  for (const AutoInput& a : s.inputs(o))
    built.push_back(auto_problem(a.op, a.shape, a.measurement, o));
  const std::vector<const AutoProblem*> ptrs{&built[0], &built[1], &built[2]};
  BatchOptions bo;
  bo.chunk_size = 1;
  EXPECT_NO_THROW(check_device_batch(ptrs, bo));  // the CPU refuses nothing
  bo.device = fk::cuda_device(0);
  try {
    check_device_batch(ptrs, bo);
    FAIL() << "chunk_size 1 on a device";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch of from_forward problems"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("chunk_size 1"), std::string::npos) << e.what();
  }
  bo.chunk_size = 0;
  EXPECT_NO_THROW(check_device_batch(ptrs, bo));
}

TEST(NefiAutoBatch, ProblemsThatDifferBeyondTheirDataAreRefused) {
  const Scans s;
  AutoOptions o;
  o.prior = "nonnegative";
  o.representation = "grid";
  o.budget = "10";
  auto refusal = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const fk::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<AutoInput> in = s.inputs(o);
  in[2].options.prior = "nonnegative + tv";
  std::string e = refusal([&] { shared_start_problems(in); });
  EXPECT_NE(e.find("prior 'nonnegative' (problem 0's)"), std::string::npos) << e;
  EXPECT_NE(e.find("problem 2's 'nonnegative + tv'"), std::string::npos) << e;
  // A stop for one problem only: their curricula differ.
  in = s.inputs(o);
  in[1].options.noise_std = 0.0;
  e = refusal([&] { solve_together(shared_start_problems(in)); });
  EXPECT_NE(e.find("problem 1's differs"), std::string::npos) << e;
  // A model of host functions runs one field per call: refused before any build.
  const int64_t n = 16;
  auto f = std::make_shared<FunctionOperator>(
      fk::Dims{n}, fk::Dims{n}, test::matrix_model(test::blur_matrix(n, 1.5), n, n), 1.0, "blur");
  Measurement y;
  y.data = test::with_noise(fk::full({n}, 0.5, {fk::DType::F64}), 0.01, 3);
  AutoOptions g;
  g.representation = "grid";
  g.budget = "10";
  g.noise_std = 0.01;  // the data are a constant: no estimate from them
  e = refusal([&] { shared_start_problems({{f, {n}, y, g}, {f, {n}, y, g}}); });
  EXPECT_NE(e.find("problem 0's model 'function' (a model of host or Python functions runs one"),
            std::string::npos)
      << e;
  // A field batch_invert does not batch: refused before any build.
  in = s.inputs(o);
  for (AutoInput& a : in) a.options.representation = "spectral";
  e = refusal([&] { shared_start_problems(in); });
  EXPECT_NE(e.find("representation neural or grid"), std::string::npos) << e;
  EXPECT_NE(e.find("got 'spectral'"), std::string::npos) << e;
  e = refusal([&] { shared_start_problems({}); });
  EXPECT_NE(e.find("at least one problem"), std::string::npos) << e;
  // Fits given for the wrong number of problems.
  e = refusal([&] { shared_start_problems(s.inputs(o), {FittedStart{{0.5}, {1.0}}}); });
  EXPECT_NE(e.find("3 sets of fitted constants"), std::string::npos) << e;
}

}  // namespace
}  // namespace nefi
