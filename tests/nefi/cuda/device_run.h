#pragma once
// The solve of an eager-vs-graph comparison and its bitwise check, shared by
// the step-graph tests (step_graph_test.cpp: toy1d; heat_step_graph_test.cpp:
// thermal tomography): a problem solved on GPU 0 with its steps captured as a
// CUDA graph or not, recording each step's kernel launches and whether it
// was a graph replay, and two results that must agree to the bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nefi/cuda/device_test_util.h"
#include "nefi/solve/solver.h"

namespace nefi::cuda_test {

struct DeviceRun {
  nefi::Result result;
  std::vector<int64_t> launches;  // per step
  std::vector<bool> replayed;     // per step: StepInfo::graph_replay
};

// `problem` through `curriculum` on GPU 0 (seed 3), steps captured or eager.
inline DeviceRun solve_on_gpu(const nefi::InverseProblem& problem,
                              const nefi::Curriculum& curriculum, bool graph) {
  DeviceRun run;
  nefi::SolverOptions so;
  so.seed = 3;
  so.device = kGpu;
  so.cuda_graph = graph;
  so.callbacks.push_back([&run](const nefi::StepInfo& s) {
    run.launches.push_back(s.step_launches);
    run.replayed.push_back(s.graph_replay);
    return true;
  });
  run.result = nefi::Solver(problem, curriculum, so).run();
  return run;
}

// Every history value and every cell of `field` equal, bit for bit.
inline void expect_bitwise_equal(const nefi::Result& a, const nefi::Result& b,
                                 const std::string& field) {
  ASSERT_EQ(a.history.rows.size(), b.history.rows.size());
  for (size_t r = 0; r < a.history.rows.size(); ++r) {
    ASSERT_EQ(a.history.rows[r].size(), b.history.rows[r].size());
    for (size_t k = 0; k < a.history.rows[r].size(); ++k)
      EXPECT_EQ(a.history.rows[r][k], b.history.rows[r][k]) << "row " << r << " column " << k;
  }
  const std::vector<double> x = host(a.fields.at(field)), y = host(b.fields.at(field));
  ASSERT_EQ(x.size(), y.size()) << field;
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << field << " cell " << i;
}

}  // namespace nefi::cuda_test
