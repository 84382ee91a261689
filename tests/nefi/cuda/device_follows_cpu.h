#pragma once
// The solve of a device-vs-CPU comparison and its loss check, shared by the
// tests that train one setup on the CPU and on a CUDA device
// (solver_device_test.cpp: toy1d; pinn_soft_device_test.cpp:
// thermal_tomography's pinn_soft): the two runs differ by round-off from the
// first step (cuBLAS against the CPU's GEMM, device sums against host ones),
// so their losses are compared to a relative tolerance each test sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fk/device.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/heads.h"
#include "nefi/losses/data_losses.h"
#include "nefi/solve/solver.h"

namespace nefi::cuda_test {

// A grid field with one head fitted through `op` to `data` by MSE: the
// problem the device ports' own solves use (advection-diffusion, nuisance).
inline nefi::InverseProblem grid_mse_problem(std::string name, const nefi::Domain& domain,
                                             nefi::OperatorPtr op, fk::Tensor data,
                                             nefi::HeadPtr head) {
  nefi::InverseProblem p;
  p.name = std::move(name);
  p.domain = domain;
  p.op = std::move(op);
  p.measurement.data = std::move(data);
  p.field = std::make_shared<nefi::GridField>(domain.shape(),
                                              std::vector<nefi::HeadPtr>{std::move(head)});
  p.losses.add(nefi::mse_loss(), 1.0);
  return p;
}

// One Adam stage of `steps` at learning rate `lr`.
inline nefi::Curriculum one_adam_stage(int steps, double lr) {
  nefi::Curriculum cur;
  nefi::Stage stage;
  stage.name = "fit";
  stage.steps = steps;
  stage.lr = lr;
  cur.stages = {stage};
  cur.optim.optimizer = "adam";
  return cur;
}

// `problem` through `curriculum` on `device`, the field initialised from seed.
inline nefi::Result solve_on(const nefi::InverseProblem& problem,
                             const nefi::Curriculum& curriculum, fk::Device device, uint64_t seed) {
  nefi::SolverOptions so;
  so.seed = seed;
  so.device = device;
  return nefi::Solver(problem, curriculum, so).run();
}

// Every history row's losses (the columns after step, global_step, stage,
// lr and progress) within rel |want| + abs of want's, row by row (the first
// `rows` rows only, where given).
inline void expect_losses_follow(const nefi::Result& got, const nefi::Result& want, double rel,
                                 double abs, size_t rows = SIZE_MAX) {
  ASSERT_EQ(got.history.rows.size(), want.history.rows.size());
  for (size_t r = 0; r < std::min(rows, want.history.rows.size()); ++r) {
    const auto& a = want.history.rows[r];
    const auto& b = got.history.rows[r];
    ASSERT_EQ(a.size(), b.size()) << "row " << r;
    for (size_t k = 5; k < a.size(); ++k)
      EXPECT_NEAR(b[k], a[k], rel * std::abs(a[k]) + abs)
          << "row " << r << " column " << want.history.columns[k];
  }
}

}  // namespace nefi::cuda_test
