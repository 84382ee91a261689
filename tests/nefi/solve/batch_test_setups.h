#pragma once
// What the batch tests (solve/batch_test.cpp, solve/batch_device_loop_test.cpp,
// cuda/batch_device_test.cpp, byop/auto_batch_test.cpp) set up alike: small toy1d / deconvolution
// configurations, N problems of one instance (one per seed), the independent
// reference (each problem solved alone by the sequential Solver) and the
// per-step comparison of a batched run against it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "fk/test_util.h"
#include "nefi/instances/instance.h"
#include "nefi/solve/solver.h"
#include "nefi/solve/toy1d_smoke.h"

namespace nefi::batch_test {

using fk::test::max_abs_diff;

// A small configuration of toy1d (else deconvolution) with these stage steps.
inline Params smoke_params(const std::string& instance, std::vector<double> steps) {
  Params p = instance == "toy1d" ? toy1d_test::toy1d_smoke_params()
                                 : find_instance(instance)->default_config();
  if (instance != "toy1d") {
    p.set("n", "32");
    p.set("psf_sigma", "0.04");
    p.set("hidden", "64");
    p.set("depth", "3");
    p.set("n_octaves", "5");
    p.set("lr_decay", "1.0");
  }
  p.set_value("steps", steps);
  return p;
}

struct Setups {
  std::vector<InverseProblem> problems;
  Curriculum curriculum;
  std::vector<uint64_t> seeds;
};

// One problem of `instance` per seed (its measurement's seed).
inline Setups setups(const std::string& instance, const Params& p, std::vector<uint64_t> seeds,
                     const std::string& method = "neural") {
  Setups s;
  s.seeds = seeds;
  for (uint64_t seed : seeds) {
    auto su = find_instance(instance)->setup(p, method, seed);
    s.problems.push_back(su->problem);
    s.curriculum = su->curriculum;
  }
  return s;
}

// The reference: the problem solved alone, its field initialised from seed.
inline Result sequential(const InverseProblem& p, const Curriculum& c, uint64_t seed) {
  SolverOptions so;
  so.seed = seed;
  return Solver(p, c, so).run();
}

// Each stage's stop, steps and final progress, and every history row: the
// step, stage and schedule columns exactly, the losses within tol (relative,
// absolute below 1).
inline void expect_same_history(const Result& seq, const Result& got, double tol) {
  ASSERT_EQ(seq.stages.size(), got.stages.size());
  for (size_t s = 0; s < seq.stages.size(); ++s) {
    EXPECT_EQ(seq.stages[s].stop, got.stages[s].stop);
    EXPECT_EQ(seq.stages[s].steps, got.stages[s].steps);
    EXPECT_DOUBLE_EQ(seq.stages[s].final_progress, got.stages[s].final_progress);
  }
  ASSERT_EQ(seq.history.rows.size(), got.history.rows.size());
  for (size_t r = 0; r < seq.history.rows.size(); ++r) {
    const auto& a = seq.history.rows[r];
    const auto& b = got.history.rows[r];
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < 5; ++k) EXPECT_EQ(a[k], b[k]) << "row " << r << " column " << k;
    for (size_t k = 5; k < a.size(); ++k)
      EXPECT_NEAR(a[k], b[k], tol * std::max(1.0, std::abs(a[k]))) << "row " << r << " col " << k;
  }
}

}  // namespace nefi::batch_test
